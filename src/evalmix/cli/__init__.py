"""Command-line interface: ``evalmix <command> DATA [options]``.

Each command reads a runs table with :func:`evalmix.read_runs`, runs one job and prints a table
(``--json`` prints a strict JSON document instead, for scripts).  A command lives in its own module
with an ``add_parser(subparsers)`` function that sets ``handler``; :data:`COMMANDS` lists them.

The parser is built without importing the commands: ``evalmix --help`` and a mistyped command
answer before pandas, NumPy or SciPy load.  Only the command named on the line is imported, to
add its arguments and run it (a new command is added to ``_COMMANDS`` with its one-line help); a
command module builds its parser from ``_args`` and imports its engines in its handler, so that an
argument error is reported before they load too.

Exit codes: 0 success; 2 a user error (bad file, column, value, option or formula), reported as
one line on stderr, never a traceback; ``evalmix gate`` alone adds 1 (FAIL) and 3 (INCONCLUSIVE).  Warnings are printed one per line on stderr (and listed
under ``"warnings"`` in ``--json`` output).
"""

from __future__ import annotations

import argparse
import importlib
import sys
import warnings
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from ..core.errors import DataError, FormulaError

__all__ = ["COMMANDS", "add_data_arguments", "build_parser", "emit", "load_data", "main"]

# command -> (module of evalmix.cli, its parser function, the one-line help `evalmix --help` lists);
# the help repeats the module's own so that listing the commands imports none of them (a test
# checks the two agree)
_COMMANDS: dict[str, tuple[str, str, str]] = {
    "describe": ("describe", "add_parser", "accuracy with confidence intervals per model and slice"),
    "fit": ("inference", "add_fit_parser", "fit a GLMM; optionally marginal means, contrasts and type-III tests"),
    "select": ("inference", "add_select_parser", "compare GLMM formulas by BIC, AIC and likelihood-ratio tests"),
    "reliability": ("reliability", "add_reliability", "flip rate, outcome entropy and run-to-run ICC per slice"),
    "ranks": ("reliability", "add_ranks", "how often leaderboards from single runs differ from the all-runs one"),
    "se-runs": ("reliability", "add_se_runs", "standard error of slice accuracies against the number of runs"),
    "plan": ("reliability", "add_plan", "how many items, runs and judges, at what cost, and when to stop"),
    "sequential": ("sequential", "add_parser", "anytime-valid confidence sequence over items and where to stop"),
    "compare": ("comparisons", "add_compare", "compare two models on the same items (paired tests)"),
    "calibrate": ("comparisons", "add_calibrate", "false-positive rate, power and coverage of comparison methods"),
    "leaderboard": ("leaderboard", "add_parser", "leaderboard with simultaneous rank sets and tie groups"),
    "arena": ("arena", "add_parser", "Bradley-Terry (Elo) ratings of pairwise battles, with rank sets"),
    "irt": ("irt", "add_parser", "2PL/1PL item response model with run-to-run noise; item subsets"),
    "report": ("report", "add_parser", "every table and figure of the study: an HTML page, LaTeX/Markdown "
                                       "tables, PNG/PDF figures"),
    "judges": ("judges", "add_judges", "several LLM judges in one model: bias, interaction, agreement, variance"),
    "ppi": ("judges", "add_ppi", "prediction-powered means of judge scores corrected by a few human labels"),
    "drift": ("drift", "add_drift", "per-model change between two waves on anchor items, with a TOST verdict"),
    "contamination": ("drift", "add_contamination", "per-model advantage on pre-cutoff items beyond item difficulty"),
    "gate": ("gate", "add_parser", "pre-registered release gate: PASS, FAIL or INCONCLUSIVE over several metrics"),
    "health": ("health", "add_parser", "dead items, effective items, signal-to-noise and run noise per model; "
                                       "version shifts"),
}

#: Errors that user input causes: reported in one line with exit code 2.
USER_ERRORS = (DataError, FormulaError, ValueError, OSError)


def _parser_function(command: str) -> Callable[[argparse._SubParsersAction], object]:
    module, function, _ = _COMMANDS[command]
    func: Callable[[argparse._SubParsersAction], object] = getattr(
        importlib.import_module(f".{module}", __name__), function)
    return func


def __getattr__(name: str) -> Any:
    # the full command list and the shared helpers import every command: only on request
    if name == "COMMANDS":
        return [_parser_function(c) for c in _COMMANDS]
    if name == "add_data_arguments":
        return getattr(importlib.import_module("._args", __name__), name)
    if name in {"emit", "load_data"}:
        return getattr(importlib.import_module("._common", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _one_line(text: object) -> str:
    return " ".join(" ".join(str(text).split("\n")).split())


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line error (usage is one ``--help`` away) and exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {_one_line(message)} (see {self.prog} --help)\n")


def _unknown_command(argv: Sequence[str]) -> str | None:
    """A one-line error for a first word that is no command, naming the closest one."""
    import difflib

    first = next((a for a in argv if not a.startswith("-")), None)
    if first is None or first in _COMMANDS:
        return None
    close = difflib.get_close_matches(first, list(_COMMANDS), n=2, cutoff=0.6)
    if not close:  # a prefix, or the start of a hyphenated command ("se" for se-runs)
        close = [c for c in _COMMANDS if c.startswith(first[:3].lower())][:2]
    hint = (f"did you mean {' or '.join(repr(c) for c in close)}?" if close
            else f"the commands are {', '.join(_COMMANDS)}")
    return f"evalmix: error: unknown command {first!r}; {hint} (see evalmix --help)"


def _command_of(argv: Sequence[str]) -> str | None:
    """The command named on the line: the first word that is not an option (the top level has
    only ``--help`` and ``--version``, which take no value)."""
    first = next((a for a in argv if not a.startswith("-")), None)
    return first if first in _COMMANDS else None


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``evalmix`` argument parser: every command listed, ``command``'s arguments added.

    Only ``command``'s module is imported; the others are listed with their one-line help, enough
    for ``evalmix --help`` and for naming a mistyped command.

    Examples
    --------
    >>> build_parser("describe").parse_args(["describe", "runs.csv", "--by", "model"]).by
    'model'
    """
    from .. import __version__

    parser = _Parser(prog="evalmix", description="Statistics for repeated LLM evaluation runs.")
    parser.add_argument("--version", action="version", version=f"evalmix {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (_, _, help_) in _COMMANDS.items():
        if name == command:
            _parser_function(name)(sub)
            from ._args import add_example_option

            add_example_option(sub.choices[name])
        else:
            sub.add_parser(name, help=help_)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``evalmix`` command; returns the exit code (0 ok, 2 user error).

    Examples
    --------
    >>> main(["--version"])  # doctest: +ELLIPSIS
    evalmix ...
    0
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    unknown = _unknown_command(argv)
    if unknown is not None:
        print(unknown, file=sys.stderr)
        return 2
    parser = build_parser(_command_of(argv))
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a usage error argparse already printed
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    from . import _common

    prefix = f"evalmix {args.command}"
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            warnings.simplefilter("ignore", DeprecationWarning)
            warnings.simplefilter("ignore", PendingDeprecationWarning)
            warnings.simplefilter("ignore", RuntimeWarning)  # numpy overflow noise; evalmix warns in words
            _common.RECORDED_WARNINGS = caught  # the JSON writer lists the warnings raised so far
            for note in getattr(args, "deprecations", None) or []:
                warnings.warn(note, FutureWarning, stacklevel=1)
            try:
                from ._args import resolve_example

                return _common.run_handler(resolve_example(args))
            finally:
                for line in dict.fromkeys(_common.warning_lines()):
                    print(f"{prefix}: warning: {line}", file=sys.stderr)
    except SystemExit as exc:  # a handler's own usage check: raise SystemExit("message")
        if isinstance(exc.code, str):
            print(f"{prefix}: error: {_one_line(exc.code.removeprefix(prefix + ': '))}", file=sys.stderr)
            return 2
        return int(exc.code or 0)
    except USER_ERRORS as exc:
        print(f"{prefix}: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    finally:
        _common.RECORDED_WARNINGS = []
