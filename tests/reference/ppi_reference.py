"""Reference numbers of ``ppi-python`` (``ppi_py``) for tests/studies/test_ppi.py.

Run from the repository root with an environment that has ``ppi-python`` (kept out of evalmix's
own environment)::

    python3 -m venv /work/venv-ppi && /work/venv-ppi/bin/pip install ppi-python numpy
    /work/venv-ppi/bin/python tests/reference/ppi_reference.py

It draws seeded data sets (one row per item: a gold label ``Y``, the prediction ``Yhat`` on the
same item, predictions ``Yhat_unlabeled`` on other items), stores them with the seed and a
description, and records ``ppi_mean_pointestimate``, ``ppi_mean_ci`` (tuned lambda, lambda = 1 and
a fixed lambda), ``classical_mean_ci`` and the tuned lambda (``_calc_lam_glm`` with the mean's
gradients, as ``ppi_mean_ci`` computes it).  ppi-python's own example data sets are downloaded
from the network, so they are not used here.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import ppi_py
from ppi_py.ppi import _calc_lam_glm

OUT = Path(__file__).resolve().parent / "ppi_reference.json"


def scenarios() -> list[dict]:
    out = []
    # a lenient binary judge: passes 25% of wrong answers, fails 5% of right ones
    rng = np.random.default_rng(20231101)
    y = (rng.random(1200) < 0.7).astype(float)
    flip = rng.random(1200)
    yhat = np.where(y == 1, flip >= 0.05, flip < 0.25).astype(float)
    out.append({"name": "binary_lenient_judge", "seed": 20231101,
                "description": "1200 items, 0/1 truth with p = 0.7, judge false-pass 0.25 and false-fail "
                               "0.05; the first 150 items labelled",
                "Y": y[:150], "Yhat": yhat[:150], "Yhat_unlabeled": yhat[150:]})
    # 1-10 ratings: a judge that tracks the human score with a slope, an offset and noise
    rng = np.random.default_rng(7)
    y = np.clip(np.round(rng.normal(6.0, 2.0, 900)), 1, 10)
    yhat = 0.8 * y + 2.0 + rng.normal(0, 1.2, 900)
    out.append({"name": "ratings_offset_judge", "seed": 7,
                "description": "900 items, human ratings round(N(6, 2)) clipped to 1..10, judge "
                               "0.8 y + 2 + N(0, 1.2); the first 80 items labelled",
                "Y": y[:80], "Yhat": yhat[:80], "Yhat_unlabeled": yhat[80:]})
    # a weak judge: lambda is clipped at 0 when the judge is anti-correlated with the truth
    rng = np.random.default_rng(99)
    y = rng.normal(0.5, 0.2, 400)
    yhat = -0.3 * y + rng.normal(0.6, 0.2, 400)
    out.append({"name": "anticorrelated_judge", "seed": 99,
                "description": "400 items, y ~ N(0.5, 0.2), judge -0.3 y + N(0.6, 0.2) (tuned lambda "
                               "clipped to 0); the first 60 items labelled",
                "Y": y[:60], "Yhat": yhat[:60], "Yhat_unlabeled": yhat[60:]})
    return out


def reference(s: dict) -> dict:
    y, yhat, yu = (np.asarray(s[k], float) for k in ("Y", "Yhat", "Yhat_unlabeled"))
    est1 = ppi_py.ppi_mean_pointestimate(y, yhat, yu, lam=1)
    grads = (y - est1).reshape(-1, 1)
    grads_hat = (yhat - est1).reshape(-1, 1)
    grads_u = (yu - est1).reshape(-1, 1)
    lam = float(_calc_lam_glm(grads, grads_hat, grads_u, np.eye(1), clip=True))
    res: dict = {"lambda_tuned": lam}
    for alpha in (0.05, 0.1):
        for label, lam_arg in (("tuned", None), ("ppi", 1.0), ("fixed_0.5", 0.5)):
            lo, hi = ppi_py.ppi_mean_ci(y, yhat, yu, alpha=alpha, lam=lam_arg)
            res[f"ci_{label}_{alpha}"] = [float(np.squeeze(lo)), float(np.squeeze(hi))]
        lo, hi = ppi_py.classical_mean_ci(y, alpha=alpha)
        res[f"ci_classical_{alpha}"] = [float(np.squeeze(lo)), float(np.squeeze(hi))]
    res["point_tuned"] = float(np.squeeze(ppi_py.ppi_mean_pointestimate(y, yhat, yu)))
    res["point_ppi"] = float(np.squeeze(est1))
    res["point_fixed_0.5"] = float(np.squeeze(ppi_py.ppi_mean_pointestimate(y, yhat, yu, lam=0.5)))
    return res


def main() -> None:
    from importlib.metadata import version

    cases = []
    for s in scenarios():
        case = {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in s.items()}
        case["ppi_py"] = reference(s)
        cases.append(case)
    OUT.write_text(json.dumps({"ppi_python_version": version("ppi-python"), "cases": cases}, indent=1) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
