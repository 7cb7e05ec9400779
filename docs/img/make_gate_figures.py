"""The figures and numbers of docs/gate.md: a gate's sequences over its looks (gate_path.png), and
its operating characteristic for the accuracy design of tests/studies/test_gate_simulation.py
(gate_efficiency.png, gate_study.json).  Seeded.

    PYTHONPATH=src python docs/img/make_gate_figures.py

Design of the efficiency study: item difficulty p ~ Beta(2, 1), three runs per item and model, the
candidate's item probability p + delta; non-inferiority at margin 0.02, alpha 0.05; budget
2 n_fix = 3434 items, 25 looks; n_fix = 1717 is the one-look z test's size at 80% power.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from evalmix import gate  # noqa: E402
from evalmix.plots import gate_plot  # noqa: E402
from evalmix.studies.gate import gate_streams  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "tests" / "studies"))
import test_gate_simulation as design  # noqa: E402

STREAMS = 1000


def path_figure() -> None:
    rng = np.random.default_rng(3)
    n = 1500
    p = rng.beta(3, 1.5, n)
    size = rng.gamma(2, 1, n)
    rows = [pd.DataFrame({"model": m, "item": np.arange(n), "correct": rng.binomial(1, np.clip(p + dp, 0, 1)),
                          "cost": c * size * rng.gamma(4, 0.25, n), "latency": rng.lognormal(0, 0.5, n) + lat})
            for m, dp, c, lat in (("baseline", 0.0, 1.0, 0.0), ("candidate", 0.01, 0.7, -0.1))]
    rule = {"alpha": 0.05, "looks": 100, "metrics": [
        {"name": "accuracy", "column": "correct", "margin": 0.05},
        {"name": "cost", "column": "cost", "direction": "lower", "margin": "10%"},
        {"name": "p95 latency", "column": "latency", "statistic": "p95", "direction": "lower", "margin": 0.5}]}
    res = gate(pd.concat(rows), "baseline", "candidate", rule, shadow=True)
    fig = gate_plot(res)
    fig.savefig(HERE / "gate_path.png", dpi=150, bbox_inches="tight")
    plt.close(fig)


def efficiency() -> dict:
    deltas = [-0.06, -0.04, -0.03, -0.02, -0.01, 0.0, 0.01, 0.02, 0.04]
    rows = []
    for i, d in enumerate(deltas):
        rng = np.random.default_rng(100 + i)
        cand, base = design.accuracy_streams(rng, STREAMS, design.BUDGET, d)
        out = gate_streams(design.RULE, {"accuracy": cand}, {"accuracy": base})
        rows.append({"delta": d, "pass": float((out["verdict"] == "PASS").mean()),
                     "fail": float((out["verdict"] == "FAIL").mean()),
                     "items_over_nfix": float(out["stopped_at"].mean() / design.N_FIX)})
    fig, (a, b) = plt.subplots(1, 2, figsize=(7.0, 2.6))
    x = [r["delta"] for r in rows]
    a.plot(x, [r["pass"] for r in rows], marker="o", label="PASS")
    a.plot(x, [r["fail"] for r in rows], marker="s", label="FAIL")
    a.axvline(-design.MARGIN, color="grey", ls="--", lw=0.8, label="margin")
    a.axhline(0.05, color="grey", ls=":", lw=0.8, label="alpha")
    a.set_xlabel("true difference (candidate - baseline)")
    a.set_ylabel("probability within budget")
    a.legend(fontsize=6)
    b.plot(x, [r["items_over_nfix"] for r in rows], marker="o")
    b.axhline(1.0, color="grey", ls=":", lw=0.8, label="one-look test at 80% power")
    b.axvline(-design.MARGIN, color="grey", ls="--", lw=0.8)
    b.set_xlabel("true difference (candidate - baseline)")
    b.set_ylabel("mean items / n_fix")
    b.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(HERE / "gate_efficiency.png", dpi=150, bbox_inches="tight")
    plt.close(fig)
    return {"streams": STREAMS, "n_fix": design.N_FIX, "budget": design.BUDGET, "looks": 25, "rows": rows}


if __name__ == "__main__":
    path_figure()
    study = efficiency()
    (HERE / "gate_study.json").write_text(json.dumps(study, indent=1) + "\n")
    print(json.dumps(study, indent=1))
