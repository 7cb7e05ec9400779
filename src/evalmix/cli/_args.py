"""The light half of what the subcommands share: argument types, the DATA and output options, and
choice lists read from the modules that own them only when they are needed.

Nothing here imports pandas, NumPy or SciPy at import time, so that building a command's parser
(and so ``evalmix CMD --help`` or an unknown option) answers before they load; the printing and
loading helpers are in :mod:`evalmix.cli._common`.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable, Collection, Iterator
from typing import Any

from ..core.errors import ArgumentError

__all__ = ["CONTRAST_FAMILIES", "DeprecatedOption", "MAX_ROWS", "MISSING_CHOICES", "WHERE_HELP", "WIDTH", "OwnedChoices", "add_choice_argument", "add_data_arguments", "add_example_option", "resolve_example",
           "add_output_arguments", "add_text_arguments", "choice_list", "conf_level", "finite_number", "n_jobs", "positive_int",
           "positive_int_list", "positive_number", "run_role", "seed", "split_list"]

#: Widest line of a printed table (wider tables are split into blocks of columns).
WIDTH = 100
#: Rows printed before a table is cut with a count of the rest (``--all`` prints every row).
MAX_ROWS = 20


class OwnedChoices(Collection[str]):
    """The allowed values of an option, read from the constant ``name`` of ``module`` (the module
    that owns the list) the first time argparse checks a value or prints the help.  When ``name`` is
    a function (a registry such as ``evalmix.emmeans.contrast_families``) it is called each time,
    so that what was registered since is listed too.

    Examples
    --------
    >>> policies = OwnedChoices("evalmix.core.methods", "MISSING_POLICIES")
    >>> "drop" in policies, str(policies)
    (True, 'raise, drop')
    """

    def __init__(self, module: str, name: str) -> None:
        self.module, self.name = module, name
        self._values: tuple[str, ...] | None = None

    def _load(self) -> tuple[str, ...]:
        if self._values is None:
            owner = getattr(importlib.import_module(self.module), self.name)
            if callable(owner):  # a registry: read afresh
                return tuple(owner())
            self._values = tuple(owner)
        return self._values

    def __contains__(self, value: object) -> bool:
        return value in self._load()

    def __iter__(self) -> Iterator[str]:
        return iter(self._load())

    def __len__(self) -> int:
        return len(self._load())

    def __repr__(self) -> str:
        return f"OwnedChoices({self.module}.{self.name})"

    def __str__(self) -> str:  # as a help text names them: "a, b, c"
        return ", ".join(self._load())


def add_choice_argument(parser: argparse.ArgumentParser, *flags: str, choices: OwnedChoices,
                        **kwargs: Any) -> argparse.Action:
    """``parser.add_argument(*flags, choices=choices, **kwargs)`` without reading ``choices`` now.

    argparse formats an option's usage when it is added (to check its metavar), which would read
    the list and import its heavy module; a placeholder metavar passes that check and is then
    cleared, so ``--help`` and the usage still show ``{a,b,c}`` from the owner.

    Examples
    --------
    >>> p = argparse.ArgumentParser()
    >>> _ = add_choice_argument(p, "--missing", choices=OwnedChoices("evalmix.core.methods", "MISSING_POLICIES"))
    >>> p.parse_args(["--missing", "drop"]).missing
    'drop'
    """
    action = parser.add_argument(*flags, choices=choices, metavar="VALUE", **kwargs)
    action.metavar = None
    return action


def _parsed(text: str, convert: Callable[[str], Any], check: Callable[[Any, str], Any], what: str,
            own: bool = False) -> Any:
    """``text`` converted, then checked by the :mod:`evalmix.core.arguments` validator of the same
    argument in the library, so that the command line and the functions accept the same values."""
    try:
        value = convert(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
    try:
        return check(value, "value")
    except ArgumentError as exc:  # argparse names the option: "argument --seed: must be ..."
        message = f"must be {what}, got {text}" if own else str(exc).removeprefix("value ")
        raise argparse.ArgumentTypeError(message) from None


def finite_number(text: str) -> float:
    """An argparse type for a finite number (no NumPy needed to check it).

    Examples
    --------
    >>> finite_number("0.5")
    0.5
    """
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def positive_number(text: str) -> float:
    """An argparse type for a finite number above 0.

    Examples
    --------
    >>> positive_number("2")
    2.0
    """
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


# the validators live in evalmix.arguments, which imports NumPy: loaded when a value is parsed,
# not when the parser is built
def conf_level(text: str) -> float:
    """argparse type of ``--conf-level``: a number strictly between 0 and 1."""
    from ..core.arguments import check_level

    return float(_parsed(text, float, check_level, "a number strictly between 0 and 1 (e.g. 0.95)"))


def positive_int(text: str) -> int:
    """argparse type of counts (runs, simulations): a whole number >= 1."""
    from ..core.arguments import check_count

    return int(_parsed(text, int, check_count, "a whole number >= 1"))


def seed(text: str) -> int:
    """argparse type of ``--seed``: a whole number >= 0."""
    from ..core.arguments import check_seed

    return int(_parsed(text, int, check_seed, "a whole number >= 0", own=True))


def n_jobs(text: str) -> int:
    """argparse type of ``--jobs``: a nonzero whole number (-1: every core)."""
    from ..core.arguments import check_n_jobs

    return int(_parsed(text, int, check_n_jobs, "a nonzero whole number (-1: every core)", own=True))


WHERE_HELP = ("row filter COLUMN=VALUE; repeat it to filter on several columns (rows must match each "
              "column) or on one column with several values (rows matching any of them)")

#: ``--missing``'s values, owned by evalmix.arguments.
MISSING_CHOICES = OwnedChoices("evalmix.core.methods", "MISSING_POLICIES")

#: ``--contrast``'s values: the contrast families registered with ``evalmix.register_contrast``.
CONTRAST_FAMILIES = OwnedChoices("evalmix.inference.emmeans", "contrast_families")


def add_data_arguments(parser: argparse.ArgumentParser, output_file: bool = True) -> None:
    """The DATA argument and the column-role options every command shares (``output_file``: see
    :func:`add_output_arguments`)."""
    parser.add_argument("data", metavar="DATA", help="runs table (.csv, .tsv, .parquet or .jsonl), or harness "
                        "logs (a folder or log file of Inspect, lm-evaluation-harness, HELM or OpenAI evals)")
    parser.add_argument("--item", default=None, help="item column (default: item, or problem_id if present)")
    parser.add_argument("--model", default="model", help="model column (default: model)")
    parser.add_argument("--run", default=None,
                        help="run column (default: run, if the table has one; 'none' for a single run)")
    parser.add_argument("--outcome", default="correct", help="0/1 outcome column (default: correct)")
    parser.add_argument("--successes", default=None, help="k-of-n successes column (with --trials)")
    parser.add_argument("--trials", default=None, help="k-of-n trials column (with --successes)")
    add_choice_argument(parser, "--missing", default="raise", choices=MISSING_CHOICES,
                        help="rows with missing values: raise an error (default) or drop them with a warning")
    add_text_arguments(parser)
    parser.add_argument("--score", default=None,
                        help="when DATA is logs: the Inspect scorer, the lm-eval/HELM metric or the "
                             "OpenAI evals event field to use")
    add_output_arguments(parser, output_file)


#: ``--example``'s values: the tables of :data:`evalmix.data.examples.EXAMPLES` (a test checks they agree;
#: listed here so that building a parser imports nothing).
EXAMPLE_NAMES = ("runs", "ratings", "battles")


def add_example_option(parser: argparse.ArgumentParser) -> None:
    """``--example NAME`` in place of a command's DATA (the bundled tables of
    :func:`evalmix.example_path`), so that an installed evalmix runs every command without a file at
    hand.  DATA becomes optional in the parser; :func:`resolve_example` requires one of the two.

    Examples
    --------
    >>> p = argparse.ArgumentParser()
    >>> _ = p.add_argument("data", metavar="DATA")
    >>> add_example_option(p)
    >>> args = resolve_example(p.parse_args(["--example", "runs"]))
    >>> args.data.endswith("example_runs.csv")
    True
    """
    data = next((a for a in parser._actions if a.dest == "data" and not a.option_strings), None)
    if data is None:  # a command that reads no table (calibrate)
        return
    data.nargs, data.required, data.default = "?", False, None
    parser.add_argument("--example", choices=EXAMPLE_NAMES, default=None,
                        help="read a table that ships with evalmix instead of DATA: runs (binary outcomes), "
                             "ratings (1-5 judge ratings) or battles (arena battles)")


def resolve_example(args: argparse.Namespace) -> argparse.Namespace:
    """``args.data`` set to the bundled table that ``--example`` names; a usage error
    (``SystemExit`` with a message) when both or neither of DATA and ``--example`` are given."""
    if not hasattr(args, "example"):
        return args
    prefix = f"evalmix {getattr(args, 'command', '')}".rstrip()
    if args.example is not None and args.data is not None:
        raise SystemExit(f"{prefix}: give DATA or --example, not both (got {args.data!r} and "
                         f"--example {args.example})")
    if args.example is None and args.data is None:
        raise SystemExit(f"{prefix}: DATA is required (a table or a folder of logs), or --example "
                         f"{'|'.join(EXAMPLE_NAMES)} for a table that ships with evalmix")
    if args.example is not None:
        from ..data.examples import example_path

        args.data = str(example_path(args.example))
    return args


def add_text_arguments(parser: argparse.ArgumentParser) -> None:
    """``--encoding`` and ``--sep``: how a CSV or JSON table is read (:func:`evalmix.load_table`).

    Examples
    --------
    >>> p = argparse.ArgumentParser()
    >>> add_text_arguments(p)
    >>> p.parse_args(["--sep", ";"]).sep
    ';'
    """
    parser.add_argument("--encoding", default=None,
                        help="text encoding of a CSV/JSON file (default: UTF-8), e.g. latin-1")
    parser.add_argument("--sep", default=None,
                        help="CSV delimiter (default: ',' or, when the header has no comma, ';', tab or '|')")


def add_output_arguments(parser: argparse.ArgumentParser, output_file: bool = True) -> None:
    """``--json``, ``--all`` and ``-o/--output FILE``, the options of how a command prints its tables.

    ``output_file=False`` leaves out ``-o/--output`` (``evalmix report``, whose ``-o`` is a folder).

    Examples
    --------
    >>> p = argparse.ArgumentParser()
    >>> add_output_arguments(p)
    >>> p.parse_args(["--json", "-o", "out.json"]).output
    'out.json'
    """
    parser.add_argument("--json", action="store_true", help="print strict JSON (no NaN or Infinity) instead of a table")
    parser.add_argument("--all", dest="all_rows", action="store_true",
                        help=f"print every row of long tables (default: the first {MAX_ROWS} and a count "
                             "of the rest)")
    if output_file:
        parser.add_argument("-o", "--output", default=None, metavar="FILE",
                            help="write what would be printed (text, or JSON with --json) to FILE; FILE is "
                                 "replaced only once the command has succeeded")


class DeprecatedOption(argparse.Action):
    """An old spelling of an option, kept working: it sets what its replacement sets (``convert``
    maps the value given to the new option's value) and notes the replacement in
    ``namespace.deprecations``, which :func:`evalmix.cli.main` reports as a warning.

    Examples
    --------
    >>> p = argparse.ArgumentParser()
    >>> _ = p.add_argument("--outcome", default="correct")
    >>> _ = p.add_argument("--correct", dest="outcome", action=DeprecatedOption, replacement="--outcome COLUMN")
    >>> args = p.parse_args(["--correct", "y"])
    >>> args.outcome, args.deprecations
    ('y', ['--correct is deprecated; use --outcome COLUMN'])
    """

    def __init__(self, option_strings: list[str], dest: str, replacement: str,
                 convert: Callable[[Any], Any] | None = None, append: bool = False, **kwargs: Any) -> None:
        kwargs.setdefault("help", argparse.SUPPRESS)  # --help lists the new spelling only
        super().__init__(option_strings, dest, **kwargs)
        # append: the old spelling of a repeatable option adds to the same list as the new one
        self.replacement, self.convert, self.append = replacement, convert, append

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        value = self.convert(values) if self.convert else values
        if self.append:
            value = [*(getattr(namespace, self.dest, None) or []), value]
        setattr(namespace, self.dest, value)
        notes = list(getattr(namespace, "deprecations", None) or [])
        notes.append(f"{option_string} is deprecated; use {self.replacement}")
        namespace.deprecations = notes


def run_role(given: str | None, columns: Collection[str]) -> str | None:
    """The run column that ``--run`` names: ``none`` (any case) for a table of one run, the column
    ``run`` when the option is left out and the table has one, else none.

    Examples
    --------
    >>> run_role(None, ["model", "item", "run"]), run_role(None, ["model", "item"]), run_role("None", ["run"])
    ('run', None, None)
    """
    if given is None:
        return "run" if "run" in columns else None
    return None if given.strip().lower() == "none" else given


def split_list(value: str | None) -> list[str]:
    """``"a,b"`` -> ``["a", "b"]``; None -> ``[]``."""
    return [v.strip() for v in value.split(",") if v.strip()] if value else []


def positive_int_list(text: str) -> list[int]:
    """An argparse type for a comma-separated list of whole numbers >= 1 (``--runs 1,2,4``): a bad
    value is answered as the option's own error, not as Python's ``int()`` message.

    Examples
    --------
    >>> positive_int_list("1, 2")
    [1, 2]
    >>> positive_int_list("a,b")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: expected whole numbers >= 1 separated by commas (e.g. 1,2,4), got 'a,b'
    """
    values = split_list(text)
    out = []
    for v in values:
        try:
            number = int(v)
        except ValueError:
            number = 0
        if number < 1:
            raise argparse.ArgumentTypeError(
                f"expected whole numbers >= 1 separated by commas (e.g. 1,2,4), got {text!r}")
        out.append(number)
    if not out:
        raise argparse.ArgumentTypeError("expected at least one whole number >= 1 (e.g. 1,2,4)")
    return out


def choice_list(choices: OwnedChoices) -> Callable[[str], list[str]]:
    """An argparse type for a comma-separated list of values among ``choices``, checked while the
    arguments are parsed (so a wrong value is answered before the numeric code loads).

    Examples
    --------
    >>> methods = choice_list(OwnedChoices("evalmix.core.methods", "MISSING_POLICIES"))
    >>> methods("drop, raise")
    ['drop', 'raise']
    >>> methods("dorp")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: unknown value 'dorp' (choose from raise, drop)
    """
    def parse(text: str) -> list[str]:
        values = split_list(text)
        if not values:
            raise argparse.ArgumentTypeError("expected at least one value")
        bad = [v for v in values if v not in choices]
        if bad:
            raise argparse.ArgumentTypeError(
                f"unknown value{'s' if len(bad) > 1 else ''} {', '.join(map(repr, bad))} (choose from {choices})")
        return values
    return parse
