"""Faults lose nothing: every file evalmix writes at a path the user named (the report's page, tables and
figures, a figure's savefig, the command line's -o/--output and --plot, the Inspect hook's JSON) is written to a
temporary file beside it and moved over it only when complete.  Each test interrupts a write midway (the
writer is monkeypatched to write part of its output and then raise) and checks that the previous file is
byte-for-byte intact and that no temporary file is left behind."""

from __future__ import annotations

import inspect
import io
import json
import os
import stat
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.backends.backend_pdf import FigureCanvasPdf  # noqa: E402

import evalmix.core.files as files  # noqa: E402
from evalmix.cli import main  # noqa: E402
from evalmix.plots import accuracy_intervals  # noqa: E402
from evalmix.reporting import Report, ReportSection  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[2] / "data" / "example_runs.csv"


class Interrupted(KeyboardInterrupt):
    """What the patched writers raise: a Ctrl-C in the middle of a write."""


def _half_open(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Make evalmix._files' open() write only the first half of what it is given, then raise."""
    real_open = open
    opened: list[str] = []

    class HalfFile(io.IOBase):
        def __init__(self, path: str, mode: str, **kwargs: object) -> None:
            self.fh = real_open(path, mode, **kwargs)  # noqa: SIM115
            opened.append(str(path))

        def write(self, data):  # type: ignore[no-untyped-def]
            self.fh.write(data[: len(data) // 2])
            self.fh.flush()
            raise Interrupted

        def fileno(self) -> int:
            return self.fh.fileno()

        def close(self) -> None:
            self.fh.close()

        def __exit__(self, *exc):  # type: ignore[no-untyped-def]
            self.close()

    monkeypatch.setattr(files, "open", HalfFile, raising=False)
    return opened


def _half_writer(real, part: bytes):  # type: ignore[no-untyped-def]
    """A matplotlib print method that writes ``part`` of a file it is asked to write by name, then raises
    (drawing passes into a buffer go through as usual)."""

    accepted = inspect.signature(real).parameters

    def write(self, filename, *args, **kwargs):  # type: ignore[no-untyped-def]
        if not isinstance(filename, (str, os.PathLike)):  # matplotlib passes what the method accepts
            return real(self, filename, *args, **{k: v for k, v in kwargs.items() if k in accepted})
        Path(filename).write_bytes(part)
        raise Interrupted

    return write


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*") if ".tmp" in p.name)


def test_write_text_interrupted_midway_keeps_the_old_file(tmp_path, monkeypatch):
    target = tmp_path / "table.md"
    target.write_text("| old | table |\n")
    opened = _half_open(monkeypatch)
    with pytest.raises(Interrupted):
        files.write_text(target, "| new | table |\n" * 100)
    assert opened and Path(opened[0]).parent == tmp_path  # the temporary file is beside the target
    assert target.read_text() == "| old | table |\n"
    assert _leftovers(tmp_path) == []


def test_interrupted_before_the_replace_keeps_the_old_file(tmp_path, monkeypatch):
    target = tmp_path / "out.json"
    target.write_bytes(b'{"old": 1}')

    def no_replace(src, dst):  # type: ignore[no-untyped-def]
        raise Interrupted

    monkeypatch.setattr(files.os, "replace", no_replace)
    with pytest.raises(Interrupted):
        files.write_bytes(target, b'{"new": 2}')
    assert target.read_bytes() == b'{"old": 1}'
    assert _leftovers(tmp_path) == []


def test_a_completed_write_replaces_the_file_and_keeps_its_permissions(tmp_path):
    target = tmp_path / "t.tex"
    target.write_text("old")
    os.chmod(target, 0o640)
    files.write_text(target, "new")
    assert target.read_text() == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    fresh = files.write_text(tmp_path / "fresh.md", "x")  # a new file gets open()'s mode, not mkstemp's 0600
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o666 & ~umask
    assert _leftovers(tmp_path) == []


def _report() -> Report:
    table = pd.DataFrame({"model": ["a", "b"], "accuracy": [0.5, 0.75]})
    fig, ax = plt.subplots(figsize=(2, 2))
    ax.plot([0, 1], [0, 1])
    return Report(sections=(ReportSection("acc", "Accuracy", tables=(("acc", "Accuracy", table),),
                                          figures=(("fig", "A line", fig),)),), title="t")


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def saved_report(tmp_path):
    rep = _report()
    out = tmp_path / "report"
    paths = rep.save(out)
    assert set(paths) == {"acc.tex", "acc.md", "acc.csv", "fig.png", "fig.pdf", "html"}
    return rep, out, _snapshot(out)


def test_report_interrupted_in_a_table_keeps_every_old_file(saved_report, monkeypatch):
    rep, out, before = saved_report
    _half_open(monkeypatch)  # the .tex, the first file written, is cut halfway
    with pytest.raises(Interrupted):
        rep.save(out)
    assert _snapshot(out) == before
    assert _leftovers(out) == []


def test_report_interrupted_in_the_csv_keeps_every_old_file(saved_report, monkeypatch):
    rep, out, before = saved_report

    def half_csv(self, path, *args, **kwargs):  # type: ignore[no-untyped-def]
        Path(path).write_text("model,acc")  # part of the table, then the interruption
        raise Interrupted

    monkeypatch.setattr(pd.DataFrame, "to_csv", half_csv)
    with pytest.raises(Interrupted):
        rep.save(out)
    assert _snapshot(out) == before
    assert _leftovers(out) == []


def test_report_interrupted_in_a_pdf_figure_keeps_every_old_file(saved_report, monkeypatch):
    rep, out, before = saved_report

    monkeypatch.setattr(FigureCanvasPdf, "print_pdf", _half_writer(FigureCanvasPdf.print_pdf, b"%PDF-1.4 half"))
    with pytest.raises(Interrupted):
        rep.save(out)
    assert _snapshot(out) == before
    assert _leftovers(out) == []


def test_report_interrupted_in_the_page_keeps_the_old_page(saved_report, monkeypatch):
    rep, out, before = saved_report
    real = files.write_text

    def half_page(path, text, encoding="utf-8"):  # type: ignore[no-untyped-def]
        if Path(path).name == "index.html":
            _half_open(monkeypatch)
        return real(path, text, encoding)

    monkeypatch.setattr("evalmix.reporting.write_text", half_page)
    with pytest.raises(Interrupted):
        rep.save(out)
    assert (out / "index.html").read_bytes() == before["index.html"]
    assert _leftovers(out) == []


def _figure():  # type: ignore[no-untyped-def]
    table = pd.DataFrame({"model": ["a", "b"], "estimate": [0.5, 0.7], "conf_low": [0.4, 0.6],
                          "conf_high": [0.6, 0.8]})
    return accuracy_intervals(table)


def test_savefig_of_an_evalmix_figure_is_atomic(tmp_path, monkeypatch):
    fig = _figure()
    target = tmp_path / "fig.png"
    fig.savefig(target)
    before = target.read_bytes()
    assert before.startswith(b"\x89PNG")

    monkeypatch.setattr(FigureCanvasAgg, "print_png", _half_writer(FigureCanvasAgg.print_png, before[:100]))
    with pytest.raises(Interrupted):
        fig.savefig(target)
    assert target.read_bytes() == before
    assert _leftovers(tmp_path) == []


def test_savefig_names_files_as_matplotlib_does(tmp_path):
    fig = _figure()
    fig.savefig(tmp_path / "plain")  # no suffix: the default format is appended, as matplotlib does
    fig.savefig(str(tmp_path / "vector.pdf"))
    fig.savefig(tmp_path / "named", format="svg")  # a format given: the name is kept as it is
    buf = io.BytesIO()
    fig.savefig(buf, format="png")  # an open buffer is written directly
    assert sorted(p.name for p in tmp_path.iterdir()) == ["named", "plain.png", "vector.pdf"]
    assert (tmp_path / "vector.pdf").read_bytes().startswith(b"%PDF")
    assert b"<svg" in (tmp_path / "named").read_bytes()
    assert buf.getvalue().startswith(b"\x89PNG")


def test_cli_output_file_is_replaced_only_on_success(tmp_path, capsys, monkeypatch):
    target = tmp_path / "describe.json"
    assert main(["describe", str(EXAMPLE), "--by", "model", "--json", "-o", str(target)]) == 0
    assert capsys.readouterr().out == ""  # -o takes what would be printed
    doc = json.loads(target.read_text())
    assert doc["command"] == "describe" and len(doc["table"]) == 8
    before = target.read_bytes()
    # a user error: exit 2, the old file untouched
    assert main(["describe", str(EXAMPLE), "--by", "nope", "--json", "-o", str(target)]) == 2
    assert target.read_bytes() == before
    # an interruption while the file is written: the old file untouched
    _half_open(monkeypatch)
    with pytest.raises(Interrupted):
        main(["describe", str(EXAMPLE), "--by", "model,language", "--json", "-o", str(target)])
    assert target.read_bytes() == before
    assert _leftovers(tmp_path) == []


def test_cli_text_output_file(tmp_path, capsys):
    target = tmp_path / "describe.txt"
    assert main(["describe", str(EXAMPLE), "--by", "model", "-o", str(target)]) == 0
    assert capsys.readouterr().out == ""
    text = target.read_text()
    assert "model-A" in text and "conf_level: 0.95" in text


def test_leaderboard_plot_interrupted_keeps_the_old_figure(tmp_path, monkeypatch, capsys):
    target = tmp_path / "leaderboard.png"
    argv = ["leaderboard", str(EXAMPLE), "--n-boot", "50", "--plot", str(target)]
    assert main(argv) == 0
    before = target.read_bytes()
    assert before.startswith(b"\x89PNG")

    monkeypatch.setattr(FigureCanvasAgg, "print_png", _half_writer(FigureCanvasAgg.print_png, b"\x89PNG half"))
    with pytest.raises(Interrupted):
        main(argv)
    assert target.read_bytes() == before
    assert _leftovers(tmp_path) == []


def test_cli_report_interrupted_keeps_the_previous_report(tmp_path, monkeypatch, capsys):
    """``evalmix report -o OUT`` twice, the second interrupted while it writes OUT/index.html."""
    import evalmix.reporting as reporting

    small = tmp_path / "small.csv"
    runs = pd.read_csv(EXAMPLE)
    runs = runs[runs["model"].isin(["model-A", "model-B", "model-C"]) & (runs["language"] == "EN")]
    runs.to_csv(small, index=False)
    out = tmp_path / "rep"
    fake = _report()
    monkeypatch.setattr(reporting, "report", lambda data, out, **kw: (fake.save(out), fake)[1])
    assert main(["report", str(small), "-o", str(out)]) == 0
    before = _snapshot(out)
    _half_open(monkeypatch)
    with pytest.raises(Interrupted):
        main(["report", str(small), "-o", str(out)])
    assert _snapshot(out) == before
    assert _leftovers(out) == []


def test_a_missing_folder_is_one_line_naming_the_file(tmp_path, capsys):
    target = tmp_path / "absent" / "out.json"
    assert main(["describe", str(EXAMPLE), "--by", "model", "--json", "-o", str(target)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"evalmix describe: error: [Errno 2] No such file or directory: '{target}'"
    assert not target.parent.exists()
