"""The bad-input catalogue: every case ends in an evalmix error or warning naming the culprit.

No case may give a number the validated table would refuse, or a foreign traceback (pandas,
numpy, KeyError...).  Cases run on a small balanced runs table, on files written to a temporary
folder, and on the command line (in-process through ``evalmix.cli.main`` and as a subprocess).
"""

from __future__ import annotations


import numpy as np
import pandas as pd
import pytest

from evalmix import DataError
from evalmix.data import ensure_runs, load_table, read_runs


def runs(n_models: int = 2, n_items: int = 6, n_runs: int = 3, seed: int = 0) -> pd.DataFrame:
    """A balanced raw runs table: models m0.., items q0.., runs 1..; outcome ``correct``."""
    rng = np.random.default_rng(seed)
    rows = [(f"m{m}", f"q{i}", r, int(rng.random() < 0.3 + 0.4 * (i % 2)))
            for m in range(n_models) for i in range(n_items) for r in range(1, n_runs + 1)]
    return pd.DataFrame(rows, columns=["model", "item", "run", "correct"])


def with_value(df: pd.DataFrame, row: int, col: str, value) -> pd.DataFrame:
    out = df.astype({col: object}) if not isinstance(value, (int, float)) or value is None else df.copy()
    if isinstance(value, float) and np.isnan(value):
        out = out.astype({col: float})
    out.loc[row, col] = value
    return out


# ------------------------------------------------------------------------------------------ files

def test_zero_byte_file(tmp_path):
    path = tmp_path / "runs.csv"
    path.write_bytes(b"")
    with pytest.raises(DataError, match=r"runs\.csv: is empty \(0 bytes\)"):
        read_runs(path)


def test_blank_file(tmp_path):
    path = tmp_path / "runs.csv"
    path.write_text("\n\n")
    with pytest.raises(DataError, match=r"runs\.csv: holds no data"):
        load_table(path)


def test_header_only_file_is_an_empty_table(tmp_path):
    path = tmp_path / "runs.csv"
    path.write_text("model,item,run,correct\n")
    with pytest.raises(DataError, match=r"runs\.csv: the runs table is empty"):
        read_runs(path)


def test_latin1_file_names_the_encoding_fix(tmp_path):
    path = tmp_path / "runs.csv"
    text = runs().assign(language=lambda d: np.where(d["item"] == "q0", "Español", "English")).to_csv(index=False)
    path.write_bytes(text.encode("latin-1"))
    with pytest.raises(DataError, match=r"runs\.csv: is not UTF-8 text \(byte 0xf1 on line 2\); "
                                        r"pass encoding='latin-1'"):
        read_runs(path)
    out = read_runs(path, encoding="latin-1")
    assert set(out["language"]) == {"Español", "English"}


def test_utf8_with_bom_is_read(tmp_path):
    path = tmp_path / "runs.csv"
    path.write_bytes(runs().to_csv(index=False).encode("utf-8-sig"))
    assert list(read_runs(path).columns) == ["model", "item", "run", "correct"]


@pytest.mark.parametrize("sep", [";", "\t", "|"])
def test_other_delimiters_are_sniffed(tmp_path, sep):
    path = tmp_path / "runs.csv"
    runs().to_csv(path, sep=sep, index=False)
    out = read_runs(path)
    assert out["correct"].tolist() == runs()["correct"].tolist()


def test_single_column_with_delimiter_inside_says_so(tmp_path):
    path = tmp_path / "runs.csv"
    path.write_text("model item run correct\na 1 1 1\n")
    with pytest.raises(DataError, match=r"runs\.csv: has a single column 'model item run correct': "
                                        r"another delimiter\? pass sep="):
        read_runs(path)
    assert read_runs(path, sep=" ")["correct"].tolist() == [1]


def test_ragged_csv_names_the_file(tmp_path):
    path = tmp_path / "runs.csv"
    path.write_text("model,item,run,correct\na,1,1,1\na,2,1,1,7,8\n")
    with pytest.raises(DataError, match=r"runs\.csv: cannot be parsed as CSV"):
        read_runs(path)


def test_missing_file(tmp_path):
    with pytest.raises(DataError, match=r"absent\.csv: no such file"):
        read_runs(tmp_path / "absent.csv")


def test_directory(tmp_path):
    with pytest.raises(DataError, match="is a directory, not a table file"):
        read_runs(tmp_path)


def test_unsupported_suffix(tmp_path):
    path = tmp_path / "runs.xlsx"
    path.write_bytes(b"PK")
    with pytest.raises(DataError, match=r"runs\.xlsx: unsupported file type '\.xlsx'"):
        read_runs(path)


def test_parquet_without_pyarrow(tmp_path, monkeypatch):
    import builtins

    path = tmp_path / "runs.parquet"
    path.write_bytes(b"PAR1")
    real_import = builtins.__import__

    def no_pyarrow(name, *args, **kwargs):
        if name == "pyarrow" or name.startswith("pyarrow."):
            raise ImportError("No module named 'pyarrow'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pyarrow)
    with pytest.raises(DataError, match=r"runs\.parquet: reading \.parquet needs pyarrow"):
        read_runs(path)


def test_corrupt_jsonl_names_the_file(tmp_path):
    path = tmp_path / "runs.jsonl"
    path.write_text('{"model": "a", "item": 1}\n{not json\n')
    with pytest.raises(DataError, match=r"runs\.jsonl: cannot be parsed"):
        read_runs(path)


def test_not_a_table_argument():
    with pytest.raises(DataError, match="got list"):
        ensure_runs([1, 2, 3])
