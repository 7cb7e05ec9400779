"""Regenerate the bundled example_runs.csv (src/evalmix/data/examples/, which data/example_runs.csv
links to): `python data/make_example.py` from the repository root."""

from pathlib import Path

from evalmix.simulate import glmm_runs

MODEL_EFFECTS = {
    "model-A": 1.6, "model-B": 1.4, "model-C": 0.6, "model-D": 0.5,
    "model-E": 0.1, "model-F": -0.3, "model-G": -0.6, "model-H": -0.7,
}
SLICES = {"language": {"EN": 0.0, "ES": -0.1}, "prompt": {"COT": 0.0, "ZS": 0.1}}


def make():
    """The example table: the AI4Math design (8 models, 105 items, 3 runs, 2 languages, 2 prompts)."""
    return glmm_runs(8, 105, 3, slices=SLICES, model_effects=MODEL_EFFECTS,
                     sd_item=1.8, sd_item_run=0.6, rng=2025)


if __name__ == "__main__":
    out = Path(__file__).parents[1] / "src" / "evalmix" / "data" / "examples" / "example_runs.csv"
    make().to_csv(out, index=False)
    print(f"wrote {out}")
