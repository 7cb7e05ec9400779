"""The public API says what it takes and returns: no bare ``Any`` where a type is known.

Every public function of every public module of ``evalmix`` (the names in ``__all__``, or the
public names a module defines), and every public method, property and constructor of its public
classes, is read with :func:`inspect.signature`.  A parameter or return annotation that is ``Any``
(alone or as a member of a union: ``Any | None``, ``Optional[Any]``, or a module-level alias of
``Any``), or an unparameterised generic such as ``dict`` or ``tuple`` (``Any`` inside), fails the
test unless it is listed in ``ALLOWED`` with the reason no narrower type fits.
``Any`` inside a container (``dict[str, Any]`` for heterogeneous records) is not a bare ``Any``.
mypy (``pyproject.toml``) checks that the annotations are right; this test checks that they say
something.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import types
import typing
from collections.abc import Callable, Iterator

import pytest

import evalmix

# "module.qualname(parameter)" or "module.qualname -> return": why Any is the honest type there
ALLOWED: dict[str, str] = {
    "evalmix.studies.calibration.calibrate(design)":
        "scenario arguments, forwarded to the scenario function (each registered scenario has its own)",
    "evalmix.studies.power.simulated_power(design)": "scenario arguments, forwarded as in calibrate",
    "evalmix.stats.comparisons.compare_pair(options)":
        "options of the chosen method (mcnemar_run, n_boot, seed...), forwarded to it",
    "evalmix.io.detect.read_logs(options)": "loader options, forwarded to the reader of the detected format",
    "evalmix.bayes.priors.Prior.dist(kwargs)": "PyMC distribution arguments (dims, shape...), forwarded to PyMC",
    "evalmix.studies.fit_many.fit_many(glmer_kwargs)": "options of evalmix.glmer, forwarded to it for every fit",
    "evalmix.bayes.result.BayesGlmerResult.posterior -> return":
        "ArviZ 0.x's InferenceData or ArviZ 1's xarray DataTree, by the installed stack",
    "evalmix.bayes.sampling.combine_chains -> return":
        "ArviZ 0.x's InferenceData or ArviZ 1's xarray DataTree, by the installed stack",
    "evalmix.glmm.control.GlmerControl.replace(changes)":
        "a value for each named field (int, float or bool by field), checked by GlmerControl itself",
    "evalmix.glmm.prior.PenalizedDeviance.__init__(args)":
        "the arguments of LaplaceDeviance, forwarded to it unchanged",
    "evalmix.glmm.prior.PenalizedDeviance.__init__(kwargs)":
        "the keyword arguments of LaplaceDeviance, forwarded to it unchanged",
}

# deprecated alias (importing it warns), the `python -m evalmix` entry point (runs the CLI),
# and modules that only hand code to an optional accelerator
SKIP_MODULES = {"evalmix.__main__"}


def _public_modules() -> Iterator[types.ModuleType]:
    yield evalmix
    for info in pkgutil.walk_packages(evalmix.__path__, "evalmix."):
        if info.name in SKIP_MODULES or any(p.startswith("_") for p in info.name.split(".")):
            continue
        yield importlib.import_module(info.name)


def _public_names(module: types.ModuleType) -> list[str]:
    names = getattr(module, "__all__", None)
    if names is not None:
        return list(names)
    return [n for n, obj in vars(module).items()
            if not n.startswith("_") and getattr(obj, "__module__", None) == module.__name__]


def _callables() -> dict[str, Callable[..., object]]:
    """Qualified name -> public function, method or property getter, each once."""
    out: dict[str, Callable[..., object]] = {}
    for module in _public_modules():
        for name in _public_names(module):
            obj = getattr(module, name, None)
            if inspect.isfunction(obj) and obj.__module__.startswith("evalmix"):
                out.setdefault(f"{obj.__module__}.{obj.__qualname__}", obj)
            elif inspect.isclass(obj) and obj.__module__.startswith("evalmix"):
                for attr, value in vars(obj).items():
                    if attr.startswith("_") and attr != "__init__":
                        continue
                    if isinstance(value, (staticmethod, classmethod)):
                        value = value.__func__
                    elif isinstance(value, property):
                        value = value.fget
                    if inspect.isfunction(value):
                        out.setdefault(f"{obj.__module__}.{obj.__qualname__}.{attr}", value)
    return out


# a generic without parameters is a container of Any (``dict`` is ``dict[Any, Any]``)
GENERICS = {"dict", "list", "tuple", "set", "frozenset", "Callable", "Sequence", "Mapping", "Iterable",
            "Iterator", "Dict", "List", "Tuple", "Set"}


def _is_any(node: ast.expr, namespace: dict[str, object]) -> bool:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):  # a quoted annotation
        return any(_is_any(m, namespace) for m in _members(ast.parse(node.value, mode="eval").body))
    if isinstance(node, ast.Name):
        return node.id == "Any" or node.id in GENERICS or namespace.get(node.id, None) is typing.Any
    return isinstance(node, ast.Attribute) and (node.attr == "Any" or node.attr in GENERICS)


def _members(node: ast.expr) -> list[ast.expr]:
    """The top-level members of a union: ``A | B``, ``Optional[A]``, ``Union[A, B]``."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _members(node.left) + _members(node.right)
    if isinstance(node, ast.Subscript):
        head = node.value.id if isinstance(node.value, ast.Name) else getattr(node.value, "attr", "")
        if head == "Optional":
            return _members(node.slice)
        if head == "Union":
            elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            return [m for e in elts for m in _members(e)]
    return [node]


def bare_any(annotation: object, namespace: dict[str, object]) -> bool:
    """Whether an annotation (a string under ``from __future__ import annotations``) is Any or
    an unparameterised generic (``dict``, ``tuple``, ``Callable``...: Any inside)."""
    if annotation is inspect.Parameter.empty:
        return False
    if not isinstance(annotation, str):
        return annotation is typing.Any
    return any(_is_any(m, namespace) for m in _members(ast.parse(annotation, mode="eval").body))


def _offenders() -> dict[str, str]:
    out = {}
    for qual, func in _callables().items():
        sig = inspect.signature(func)
        namespace = func.__globals__
        for p in sig.parameters.values():
            # a dataclass's private fields (``_model``) are not arguments a user passes
            if p.name in ("self", "cls") or p.name.startswith("_"):
                continue
            if bare_any(p.annotation, namespace):
                out[f"{qual}({p.name})"] = str(p.annotation)
        if bare_any(sig.return_annotation, namespace):
            out[f"{qual} -> return"] = str(sig.return_annotation)
    return out


def test_no_bare_any_in_public_signatures():
    offenders = {k: v for k, v in _offenders().items() if k not in ALLOWED}
    assert not offenders, ("public annotations that are Any: give the type (a protocol, a result "
                           "class, ArrayLike...) or list them in ALLOWED with the reason:\n"
                           + "\n".join(f"  {k}: {v}" for k, v in sorted(offenders.items())))


def test_allow_list_is_current():
    """Every allowed Any still exists: an entry outlives its function only by mistake."""
    stale = sorted(set(ALLOWED) - set(_offenders()))
    assert not stale, f"remove from ALLOWED (no longer Any or gone): {stale}"


def test_the_walk_covers_the_api():
    names = _callables()
    for expected in ("evalmix.glmm.glmer", "evalmix.inference.emmeans.emmeans", "evalmix.bayes.glmer",
                     "evalmix.plots.reliability.icc_dots", "evalmix.io.detect.read_logs",
                     "evalmix.studies.reliability.latent_icc", "evalmix.stats.resampling.bootstrap_ci"):
        assert expected in names, expected
    assert len(names) > 300


@pytest.mark.parametrize("annotation, expected", [
    ("Any", True), ("Any | None", True), ("None | Any", True), ("Optional[Any]", True),
    ("typing.Any", True), ("Union[int, Any]", True), ("'Any | None'", True), ("Alias", True),
    ("dict[str, Any]", False), ("Mapping[str, Any] | None", False), ("pd.DataFrame", False),
    ("ArrayLike", False), ("Callable[..., Any]", False), ("Anything", False), ("dict", True),
    ("tuple | None", True), ("str | Callable", True), ("tuple[float, float] | None", False),
    ("Sequence[str]", False), ("list[RandomTerm]", False),
])
def test_bare_any_reads_annotations(annotation, expected):
    assert bare_any(annotation, {"Alias": typing.Any}) is expected
