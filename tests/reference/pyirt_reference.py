"""Reference values of py-irt's variational 1PL and 2PL fits, read by tests/studies/test_irt.py.

Run with a Python that has py-irt (it needs torch and pyro, kept out of evalmix's environment):

    python -m venv /tmp/venv-pyirt
    /tmp/venv-pyirt/bin/pip install torch py-irt   # a CPU build of torch is enough
    /tmp/venv-pyirt/bin/python tests/reference/pyirt_reference.py

(a few minutes on one core: 2,000 SVI steps per fit; the JSON records the versions used).

Two data sets, simulated here with fixed seeds (one run, so that both packages fit the same
likelihood: py-irt has no run noise) and stored in the JSON with py-irt's estimates:

- ``onepl``: 100 items x 60 models, ``P = logistic(theta_m - b_i)``;
- ``twopl``: 40 items x 300 models, ``P = logistic(a_i (theta_m - b_i))``, ``a_i ~ LogNormal(0, 0.3)``.

py-irt is fitted with its ``hierarchical`` priors (abilities and items both random with fitted
means and scales; the ``vague`` 2PL prior puts ``b ~ N(0, 0.1)``, an informative prior, not the
model evalmix fits) by stochastic variational inference (mean-field normal guide, Adam, the
package's default learning rate and decay); the JSON keeps the guide's means.
"""

from __future__ import annotations

import json
import platform
from importlib.metadata import version
from pathlib import Path

import numpy as np
import pandas as pd
import pyro
import torch
from py_irt.config import IrtConfig
from py_irt.dataset import Dataset
from py_irt.training import IrtModelTrainer

EPOCHS = 2000
torch.set_num_threads(1)   # small problems: threads only contend


def simulate(n_items: int, n_models: int, seed: int, disc_sd: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = np.exp(rng.normal(0.0, disc_sd, n_items))
    b = rng.normal(0.0, 1.0, n_items)
    theta = rng.normal(0.0, 1.0, n_models)
    p = 1.0 / (1.0 + np.exp(-a[:, None] * (theta[None, :] - b[:, None])))
    y = (rng.random(p.shape) < p).astype(int)   # items x models
    return y, a, b, theta


def rows(y: np.ndarray) -> list[str]:
    """A 0/1 matrix as one string per item (row)."""
    return ["".join(str(int(v)) for v in row) for row in y]


def fit(y: np.ndarray, model_type: str, seed: int) -> dict[str, list[float]]:
    """py-irt's fit of an items x models 0/1 matrix (py-irt's subjects are the models)."""
    wide = pd.DataFrame(y.T, columns=[f"i{i:03d}" for i in range(y.shape[0])])
    wide.insert(0, "model", [f"m{m:03d}" for m in range(y.shape[1])])
    data = Dataset.from_pandas(wide, subject_column="model", item_columns=list(wide.columns[1:]))
    pyro.set_rng_seed(seed)
    torch.manual_seed(seed)
    trainer = IrtModelTrainer(data_path=None, dataset=data, verbose=False,
                              config=IrtConfig(model_type=model_type, priors="hierarchical", epochs=EPOCHS))
    trainer.train(device="cpu")
    par = trainer.last_params
    # back to the order of the simulated rows and columns
    item_ix = {name: ix for ix, name in par["item_ids"].items()}
    subj_ix = {name: ix for ix, name in par["subject_ids"].items()}
    items = [item_ix[f"i{i:03d}"] for i in range(y.shape[0])]
    subjects = [subj_ix[f"m{m:03d}"] for m in range(y.shape[1])]
    out = {"difficulty": [par["diff"][i] for i in items], "ability": [par["ability"][s] for s in subjects]}
    if "disc" in par:
        out["discrimination"] = [par["disc"][i] for i in items]
    return out


def main() -> None:
    out: dict[str, object] = {"tools": {"py-irt": version("py-irt"), "pyro-ppl": version("pyro-ppl"),
                                        "torch": torch.__version__, "numpy": np.__version__,
                                        "python": platform.python_version()},
                              "fit": {"priors": "hierarchical", "epochs": EPOCHS, "inference": "SVI, mean-field"}}
    y1, a1, b1, t1 = simulate(100, 60, seed=21, disc_sd=0.0)
    out["onepl"] = {"correct": rows(y1), "true_difficulty": b1.tolist(), "true_ability": t1.tolist()} | {
        f"pyirt_{k}": v for k, v in fit(y1, "1pl", seed=1).items()}
    y2, a2, b2, t2 = simulate(40, 300, seed=22, disc_sd=0.3)
    out["twopl"] = {"correct": rows(y2), "true_discrimination": a2.tolist(), "true_difficulty": b2.tolist(),
                    "true_ability": t2.tolist()} | {f"pyirt_{k}": v for k, v in fit(y2, "2pl", seed=2).items()}
    path = Path(__file__).with_name("pyirt_reference.json")
    path.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
