"""Every ``evalmix`` command line and option that README.md and docs/*.md name exists in the CLI.

Command lines are read from the code blocks (``bash``, ``console``, ``shell`` or plain: lines that
start with ``evalmix`` or ``python -m evalmix``, continuation lines joined, comments cut) and from
inline code spans (```evalmix arena FILE --latex```, and the command table of docs/cli.md, whose
spans start with the command's name).  Each subcommand must be one of the CLI's and each option one
of that subcommand's, as its argparse parser (``evalmix.cli.build_parser``) defines them, written
out in full (argparse would accept an abbreviation, but a page should not teach one).  An option
named on its own in the prose (```--no-rank-sets```) must be an option of some command, or one of
another program's that the page names (``OTHER_PROGRAMS``).  Lines that show the CLI's own error
output (``evalmix fit: error: ...``) are not command lines.
"""

from __future__ import annotations

import argparse
import re
from functools import cache
from pathlib import Path

import pytest

from evalmix.cli import _COMMANDS, build_parser

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL = {"bash", "console", "shell", "sh", ""}
# an option: --name, or a one-letter -x (not a negative number such as `--jobs -1`)
OPTION = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*|-[a-zA-Z])(?![\w-])")
# an inline code span (one or two backticks), outside code blocks
SPAN = re.compile(r"(`{1,2})(?!`)(.+?)(?<!`)\1(?!`)")
# options of other programs that pages name in their prose, by page
OTHER_PROGRAMS = {
    "README.md": {"--pdb", "--assert"},  # pytest
    "irt.md": {"--plot-only"},  # docs/img/make_irt_figure.py
    "loaders.md": {"--output-dir", "--dump-eval-details",  # lm_eval
                   "--epochs",  # inspect eval
                   "--mode"},  # FastChat's clean_battle_data.py
    "performance.md": {"--models", "--no-r", "--cold-cache", "--rounds", "--reps", "--evals", "--trials", "--empty",
                       "--sizes",  # the scripts of bench/
                       "--durations", "--assert"},  # pytest
    "scale.md": {"--nthreads"},  # dask worker
}
# command lines that a page writes wrong on purpose (to show what a mistake costs)
WRONG_ON_PURPOSE = {("performance.md", "fitt x.csv"), ("performance.md", "fit --nope")}


@cache
def options(command: str) -> frozenset[str]:
    """The option strings of one subcommand, from its argparse parser."""
    parser = build_parser(command)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return frozenset(sub.choices[command]._option_string_actions)


def _blocks_and_prose(text: str) -> tuple[list[tuple[str, str, int]], list[tuple[str, int]]]:
    """The code blocks (info string, body, first line) and the prose lines (text, line number)."""
    blocks, prose, lines, i = [], [], text.split("\n"), 0
    while i < len(lines):
        opening = re.match(r"^(`{3,})(.*)$", lines[i])
        if opening:
            end = next((j for j in range(i + 1, len(lines)) if lines[j].rstrip() == opening.group(1)),
                       len(lines))
            blocks.append((opening.group(2).strip(), "\n".join(lines[i + 1:end]), i + 2))
            i = end + 1
        else:
            prose.append((lines[i], i + 1))
            i += 1
    return blocks, prose


def command_lines(text: str) -> list[tuple[str, int]]:
    """``(command line without "evalmix", line number)`` for every command the page writes out."""
    found: list[tuple[str, int]] = []
    blocks, prose = _blocks_and_prose(text)
    for info, body, first in blocks:
        if info.split(" ")[0] not in SHELL:
            continue
        joined = re.sub(r"\\\n\s*", " ", body).split("\n")
        number = first
        for line, raw in zip(joined, re.sub(r"\\\n", "\\\x00", body).split("\n")):
            line = re.sub(r"^\s*[$>]\s+", "", line)  # a console prompt
            for part in re.split(r"\s*(?:&&|\|\||;|\|)\s*", line.split(" #")[0].split("  #")[0]):
                m = re.match(r"^(?:python3? -m )?evalmix\s+(.*)$", part.strip())
                if m:
                    found.append((m.group(1), number))
            number += raw.count("\x00") + 1
    for line, number in prose:
        for _, span in SPAN.findall(line):
            m = re.match(r"^(?:python3? -m )?evalmix\s+(.*)$", span.strip())
            if m:
                found.append((m.group(1), number))
            elif span.split(" ")[0] in _COMMANDS and OPTION.search(span):  # docs/cli.md's table
                found.append((span, number))
    return found


def prose_options(text: str) -> list[tuple[str, int]]:
    """Options named on their own in inline code (```--ties```, ```--cluster COLUMN```)."""
    _, prose = _blocks_and_prose(text)
    return [(m.group(1), number) for line, number in prose for _, span in SPAN.findall(line)
            if (m := re.match(r"^(--[a-z][a-z0-9-]*)\b", span.strip()))]


def _check_page(page: Path) -> tuple[list[str], set[str]]:
    problems, named = [], set()
    for line, number in command_lines(page.read_text(encoding="utf-8")):
        words = line.split()
        command = words[0] if words else ""
        where = f"{page.name}:{number}: evalmix {' '.join(line.split())[:80]}"
        if (page.name, line.strip()) in WRONG_ON_PURPOSE or command.endswith(":"):
            continue  # a deliberate mistake, or the CLI's error output (evalmix fit: error: ...)
        if command.startswith("-"):  # evalmix --version, evalmix --help
            if command not in {"--version", "--help", "-h"}:
                problems.append(f"{where}: evalmix has no option {command}")
            continue
        if command not in _COMMANDS:
            if command.isupper() or command in {"COMMAND", "...", "<command>"}:
                continue  # the generic form: evalmix COMMAND DATA [options]
            problems.append(f"{where}: no command {command!r}")
            continue
        named.add(command)
        # drop quoted arguments (formulas), so that a '-' inside them is not read as an option
        unquoted = re.sub(r"\"[^\"]*\"|'[^']*'", " ", line)
        for option in OPTION.findall(unquoted):
            if option not in options(command):
                problems.append(f"{where}: {command} has no option {option}")
    return problems, named


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_command_and_option_the_page_names_exists(page: Path) -> None:
    problems, _ = _check_page(page)
    allowed = frozenset({"--help", "--version"}).union(*(options(c) for c in _COMMANDS),
                                                       OTHER_PROGRAMS.get(page.name, ()))
    for option, number in prose_options(page.read_text(encoding="utf-8")):
        if option not in allowed:
            problems.append(f"{page.name}:{number}: {option} is no option of any command")
    assert not problems, "\n".join(problems)


def test_the_pages_name_commands():
    """The reader above finds the command lines (a change of layout must not make it vacuous)."""
    lines = [c for page in PAGES for c in command_lines(page.read_text(encoding="utf-8"))]
    assert len(lines) > 100
    commands = {line.split()[0] for line, _ in lines if line.split()}
    assert commands >= set(_COMMANDS) - {"se-runs"}, set(_COMMANDS) - commands


def test_the_reader_catches_a_wrong_option(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("Run\n\n```bash\nevalmix arena b.csv --cluster prompt \\\n    --no-such-flag\n```\n\n"
                    "then `evalmix fit d.csv --formula \"y ~ x - 1\" --famly beta`, `evalmix tally x`"
                    " and `--nope`.\n", encoding="utf-8")
    problems, named = _check_page(page)
    assert named == {"arena", "fit"}
    assert problems == ["page.md:4: evalmix arena b.csv --cluster prompt --no-such-flag: "
                        "arena has no option --no-such-flag",
                        "page.md:8: evalmix fit d.csv --formula \"y ~ x - 1\" --famly beta: "
                        "fit has no option --famly",
                        "page.md:8: evalmix tally x: no command 'tally'"]
    assert prose_options(page.read_text(encoding="utf-8")) == [("--nope", 8)]
