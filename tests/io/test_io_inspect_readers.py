"""Inspect logs read two ways: through ``inspect_ai.log.read_eval_log`` (where inspect_ai is
installed; Inspect's own reader of its versioned layout) and by evalmix's reader (the fallback,
with no inspect_ai).  Both give the same table on every log fixture: each file alone, every
scorer, every status (finished, failed, interrupted, killed), and each folder read at once (a
log merged with its retry)."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import pandas as pd
import pytest

from evalmix.core.errors import DataError
from evalmix.io import read_inspect
from evalmix.io.inspect_logs import _read_log, _read_log_inspect_ai

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
FOLDERS = ["inspect/v0.3.170", "inspect/v0.3.285", "inspect/v0.3.285-json", "inspect-hook",
           "inspect-stopping", "inspect_judges"]
LOGS = sorted(p for folder in FOLDERS for p in (FIXTURES / folder).iterdir()
              if p.suffix == ".eval" or (p.suffix == ".json" and p.parent.name.endswith("-json")))


def _read(path: Path, reader: str, **options) -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the same DataWarnings either way (unfinished logs, retries)
        # unscored and errored samples kept, partial credit as it is
        return read_inspect(path, errors="keep", allow_partial=True, reader=reader, **options)


def _choices(path: Path) -> list[dict[str, str]]:
    """Every scorer (and every key of a dict-valued score) of the samples under ``path``."""
    files = [path] if path.is_file() else [p for p in LOGS if p.parent == path]
    found: dict[tuple[str, str | None], None] = {}
    for file in files:
        for sample in _read_log(file)[1]:
            for name, value in sample["values"].items():
                for key in (sorted(value) if isinstance(value, dict) else [None]):
                    found[name, key] = None
    return [{"scorer": name, **({"score_key": key} if key else {})} for name, key in found]


@pytest.mark.slow  # needs inspect_ai: the second test step installs the inspect extra
@pytest.mark.parametrize("path", [*LOGS, *(FIXTURES / f for f in FOLDERS)],
                         ids=lambda p: str(p.relative_to(FIXTURES)))
def test_inspect_ai_and_evalmix_readers_agree(path):
    import inspect_ai.log  # noqa: F401 - the comparison needs Inspect's reader

    # what each reader takes from a file: the header fields evalmix uses and every sample
    for file in ([path] if path.is_file() else [p for p in LOGS if p.parent == path]):
        (h1, s1), (h2, s2) = _read_log_inspect_ai(file), _read_log(file)
        for field in ("model", "task", "task_id", "eval_id", "created"):
            assert h1["eval"].get(field) == h2["eval"].get(field), (file, field)
        assert h1.get("status", "success") == h2.get("status", "success"), file
        key = lambda s: (str(s["id"]), s["epoch"])  # noqa: E731
        assert [(s["id"], s["epoch"], s["values"], s["error"]) for s in sorted(s1, key=key)] \
            == [(s["id"], s["epoch"], s["values"], s["error"]) for s in sorted(s2, key=key)], file
    # the tables: every scorer, and the several judges of one sample
    compared = 0
    for options in [*_choices(path), {"judges": True}]:
        try:
            expected = _read(path, "evalmix", **options)
        except DataError:  # e.g. a scorer no sample of a failed log has: inspect_ai's reads fail too
            with pytest.raises(DataError):
                _read(path, "inspect_ai", **options)
            continue
        pd.testing.assert_frame_equal(_read(path, "inspect_ai", **options), expected)
        compared += 1
    assert compared >= 1


def test_without_inspect_ai_auto_reads_with_evalmix(monkeypatch):
    path = FIXTURES / "inspect" / "v0.3.285"
    expected = _read(path, "evalmix", scorer="match")
    monkeypatch.setitem(sys.modules, "inspect_ai", None)  # as if inspect_ai were not installed
    monkeypatch.setitem(sys.modules, "inspect_ai.log", None)
    pd.testing.assert_frame_equal(_read(path, "auto", scorer="match"), expected)
    assert expected.groupby("model").size().to_dict() == {"mockllm/alpha": 22, "mockllm/beta": 23}
    with pytest.raises(DataError, match=r"reader='inspect_ai' needs inspect_ai: pip install inspect_ai"):
        _read(path, "inspect_ai", scorer="match")


def test_unknown_reader():
    with pytest.raises(DataError, match=r"reader must be one of 'auto', 'inspect_ai', 'evalmix', not 'zip'"):
        read_inspect(LOGS[0], reader="zip", allow_partial=True)
