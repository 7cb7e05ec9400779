"""The import contract of docs/architecture.md: layers, no cycles, no private names across modules.

The layers are the folders of ``src/evalmix``, lowest first; a module may import its own layer and the
layers below it, never above:

0. ``core/`` (errors, argument checks, seeds, results and their rendering, parallel execution),
   ``data/`` (the runs table, slicing, Parquet, the status of samples), ``model/`` (formula and design),
   ``simulate/``
1. ``mixed/``: the shared mixed-model base (what inference reads from a fit, the reference grid,
   links, the linear algebra of the random-effects system)
2. the engines ``glmm/``, ``lmm/``, ``ordinal/``, ``tmb/``, ``bayes/``, and ``stats/`` beside them
3. ``inference/``: marginal means, contrasts, type-III tests, model selection, multiplicity
4. ``studies/``: reliability, ranking, planning, judges, arena, IRT, sequential...
5. adapters: ``cli/``, ``plots/``, ``io/``, ``reporting``, ``integrations/``, the package's lazy namespace
"""

from __future__ import annotations

import ast
import functools
import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
PACKAGE = SRC / "evalmix"

LAYERS: dict[str, int] = {
    "evalmix.core": 0, "evalmix.data": 0, "evalmix.model": 0, "evalmix.simulate": 0,
    "evalmix.mixed": 1,
    "evalmix.glmm": 2, "evalmix.lmm": 2, "evalmix.ordinal": 2, "evalmix.tmb": 2, "evalmix.bayes": 2,
    "evalmix.stats": 2,
    "evalmix.inference": 3,
    "evalmix.studies": 4,
    "evalmix.cli": 5, "evalmix.plots": 5, "evalmix.io": 5, "evalmix.reporting": 5, "evalmix.integrations": 5,
    "evalmix.__main__": 5, "evalmix": 5,
}
#: at most this many entries at the top of src/evalmix: the layer folders, not a flat list of modules
MAX_TOP_LEVEL = 25
HEAVY = ("numpy", "pandas", "scipy", "matplotlib", "joblib", "statsmodels", "pymc", "pytensor", "numba",
         "formulaic", "tqdm")


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _type_only(ifs: list[ast.If]) -> set[int]:
    """Nodes under ``if TYPE_CHECKING:`` (imports for annotations only, never executed), of the
    ``if`` statements of a module."""
    out: set[int] = set()
    for node in ifs:
        if getattr(node.test, "id", None) == "TYPE_CHECKING" or getattr(node.test, "attr", None) == "TYPE_CHECKING":
            out |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return out


class _Nodes:
    """The nodes of one module that the checks read, gathered in one walk of its tree (a walk of
    every module costs about as much as parsing them: the checks share this one)."""

    def __init__(self, tree: ast.Module) -> None:
        self.imports: list[ast.Import | ast.ImportFrom] = []
        self.calls: list[ast.Call] = []
        self.joined: list[ast.JoinedStr] = []
        self.adds: list[ast.BinOp] = []
        self.docstrings: set[int] = set()
        type_checking: list[ast.If] = []
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                self.imports.append(node)
            elif isinstance(node, ast.Call):
                self.calls.append(node)
            elif isinstance(node, ast.JoinedStr):
                self.joined.append(node)
            elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
                self.adds.append(node)
            elif isinstance(node, ast.If):
                type_checking.append(node)
            if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
                first = node.body[0]
                if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                        and isinstance(first.value.value, str):
                    self.docstrings.add(id(first.value))
        self.type_only = _type_only(type_checking)


@functools.cache  # parsed and walked once for the several tests that read the import graph
def _nodes(path: Path) -> _Nodes:
    return _Nodes(ast.parse(path.read_text()))


@functools.cache
def _imports(name: str, type_only: bool = True) -> tuple[tuple[str, str], ...]:
    """(imported module, imported name) pairs of one module, function-level imports included;
    ``type_only=False`` leaves out the imports made for type annotations only."""
    path = MODULES[name]
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    pairs = []
    nodes = _nodes(path)
    skip = set() if type_only else nodes.type_only
    for node in nodes.imports:
        if id(node) in skip:
            continue
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "evalmix":
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                pairs.append((sub, "") if sub in MODULES else (target, alias.name))
        elif isinstance(node, ast.Import):
            pairs += [(a.name, "") for a in node.names if a.name.split(".")[0] == "evalmix"]
    return tuple(pairs)


def _layer(name: str) -> int | None:
    parts = name.split(".")
    for k in range(len(parts), 0, -1):
        if ".".join(parts[:k]) in LAYERS:
            return LAYERS[".".join(parts[:k])]
    return None


def _graph(type_only: bool = True, own_submodules: bool = False) -> dict[str, set[str]]:
    """Module -> the modules it imports; a package's imports of its own submodules (re-exports) are
    left out unless ``own_submodules``."""
    graph: dict[str, set[str]] = {}
    for name in MODULES:
        graph[name] = {t for t, _ in _imports(name, type_only)
                       if t != name and (own_submodules or not t.startswith(name + "."))}
    return graph


def test_top_level_shows_the_layers():
    entries = sorted(p.name for p in PACKAGE.iterdir() if p.name != "__pycache__")
    assert len(entries) <= MAX_TOP_LEVEL, f"{len(entries)} entries at the top of src/evalmix: {entries}"
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert {"core", "data", "model", "mixed", "inference", "stats", "studies"} <= folders


def test_every_module_has_a_layer():
    assert len(MODULES) > 100, f"no modules found under {PACKAGE}"
    missing = sorted(n for n in MODULES if _layer(n) is None)
    assert not missing, f"assign a layer in tests/project/test_architecture.py and docs/architecture.md: {missing}"


def test_no_module_imports_a_higher_layer():
    bad = [f"{src} (layer {_layer(src)}) imports {dst} (layer {_layer(dst)})"
           for src, dsts in _graph().items() for dst in dsts
           if _layer(src) is not None and _layer(dst) is not None and _layer(dst) > _layer(src)]
    assert not bad, "\n".join(bad)


def test_no_import_cycles():
    # an import for annotations only (under ``if TYPE_CHECKING:``) never runs, so it cannot close
    # a cycle (a result's method that calls a function annotated with the result's class); it
    # still counts for the layers above
    # a package's __init__ that imports its submodules counts: a submodule importing its own package
    # (at module level or inside a function) closes a cycle through it
    graph = _graph(type_only=False, own_submodules=True)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    sys.setrecursionlimit(10_000)
    for v in graph:
        if v not in index:
            visit(v)
    assert not cycles, f"import cycles: {cycles}"


def test_no_private_names_across_modules():
    bad = [f"{name} imports {target}.{attr}" for name in MODULES for target, attr in _imports(name)
           if attr.startswith("_") and not attr.startswith("__") and target != name]
    assert not bad, "promote these to public names:\n" + "\n".join(bad)


def test_import_evalmix_is_light():
    code = ("import sys, evalmix; heavy = %r; "
            "print(','.join(m for m in heavy if m in sys.modules))" % (HEAVY,))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == "", f"`import evalmix` loads {out.stdout.strip()}: import them lazily"


def test_lazy_names_resolve():
    import evalmix

    for name in evalmix.__all__:
        assert getattr(evalmix, name) is not None, name
    assert callable(evalmix.emmeans)  # the function, not the submodule of the same name


@pytest.mark.parametrize("name", ["glmer", "accuracy", "read_runs"])
def test_lazy_name_is_the_owner_object(name):
    import importlib

    import evalmix

    owner = importlib.import_module(f"evalmix.{evalmix._EXPORTS[name]}")
    assert getattr(evalmix, name) is getattr(owner, name)


def test_engines_satisfy_the_fitted_model_protocol():
    import evalmix
    from evalmix.mixed.fitted import FittedModel, coefficients

    runs = evalmix.simulate.glmm_runs(3, 30, 2, rng=3)
    fit = evalmix.glmer("correct ~ model + (1|item)", runs)
    assert isinstance(fit, FittedModel)
    coefs = coefficients(fit)
    assert coefs.names == tuple(fit.fixef.index) and not coefs.is_posterior


# --- the model floor: evalmix.model alone reads and writes formulas; engines stand side by side ---

ENGINES = ("evalmix.glmm", "evalmix.lmm", "evalmix.ordinal", "evalmix.tmb", "evalmix.bayes")
#: (importing module, engine imported) -> why the edge is needed
ENGINE_EDGES = {
    ("evalmix.bayes.model", "evalmix.glmm"): "the maximum-likelihood fit chooses the Bayesian "
                                             "parameterisation of each random term (bayes.model._ml_fit)",
}


def _engine(name: str) -> str | None:
    return next((e for e in ENGINES if name == e or name.startswith(e + ".")), None)


def _in_model(name: str) -> bool:
    return name == "evalmix.model" or name.startswith("evalmix.model.")


def test_no_engine_imports_another_engine():
    bad = []
    for name in MODULES:
        own = _engine(name)
        if own is None:
            continue
        for target, _ in _imports(name):
            other = _engine(target)
            if other is not None and other != own and (name, other) not in ENGINE_EDGES:
                bad.append(f"{name} imports {target}")
    assert not bad, "engines build on evalmix.model, never on each other:\n" + "\n".join(bad)


def test_only_the_model_package_parses_formulas():
    bad = []
    for name, path in MODULES.items():
        if _in_model(name):
            continue
        nodes = _nodes(path)
        for node in nodes.imports:
            if isinstance(node, ast.Import):
                mods = [a.name for a in node.names]
            elif not node.level:
                mods = [node.module or ""]
            else:
                mods = []
            bad += [f"{name}:{node.lineno} imports {m}" for m in mods if m.split(".")[0] == "formulaic"]
        for node in nodes.calls:
            # splitting formula text on '~' is parsing it
            if isinstance(node.func, ast.Attribute) and node.args \
                    and node.func.attr in ("split", "partition", "rpartition", "rsplit", "index", "find") \
                    and isinstance(node.args[0], ast.Constant) and node.args[0].value == "~":
                bad.append(f"{name}:{node.lineno} splits formula text on '~'")
    assert not bad, "formulas are read by evalmix.model (parse_formula, parse_specs):\n" + "\n".join(bad)


def _formula_like(text: str) -> bool:
    """Text reading as a formula or a random term once its interpolations are filled in."""
    import re

    text = text.replace("{}", "x")
    return bool(re.search(r"\w\s*~|~\s*[\w(]|(?<![\w.])\([^()|]*\|\|?[^()|]*\)(?!\[)", text))


def formula_assembly(source: str | _Nodes) -> list[tuple[int, str]]:
    """(line, text) of every formula built from pieces in ``source`` (text, or the nodes of a
    parsed module): an f-string whose text around an interpolation is a ``~`` or a bar, or ``+``
    on a string that reads as a formula (docstrings left out)."""
    import re

    nodes = _Nodes(ast.parse(source)) if isinstance(source, str) else source
    skip = nodes.docstrings
    edge_end = re.compile(r"(~|\|)\s*$|\(\s*1\s*\|\s*$")
    edge_start = re.compile(r"^\s*(~|\|)")
    out = []
    for node in [*nodes.joined, *nodes.adds]:
        if isinstance(node, ast.JoinedStr):
            parts = node.values
            text = "".join(p.value if isinstance(p, ast.Constant) else "{}" for p in parts)
            if not _formula_like(text):
                continue
            for i, p in enumerate(parts):
                if not isinstance(p, ast.FormattedValue):
                    continue
                before = parts[i - 1].value if i and isinstance(parts[i - 1], ast.Constant) else ""
                after = parts[i + 1].value if i + 1 < len(parts) and isinstance(parts[i + 1], ast.Constant) \
                    else ""
                if edge_end.search(str(before)) or edge_start.search(str(after)):
                    out.append((node.lineno, text))
                    break
        else:
            for side in (node.left, node.right):
                if isinstance(side, ast.Constant) and isinstance(side.value, str) and id(side) not in skip \
                        and _formula_like(side.value):
                    out.append((node.lineno, side.value))
    return out


def test_formula_assembly_is_detected():
    # the patterns the check exists for, and what it leaves alone
    assert formula_assembly('f = f"{lhs} ~ {rhs}"')
    assert formula_assembly('rand = f" + (1|{item})"')
    assert formula_assembly('f = "y ~ model + " + rest')
    assert formula_assembly('msg = f"random term ({expr} | {group}) is refused"')
    assert not formula_assembly('msg = f"{n} of {k} rows ({(~ok).sum()} bad)"')
    assert not formula_assembly('fit = glmer("correct ~ model + (1|item)", runs)')
    assert not formula_assembly('def f():\n    """Fit y ~ x + (1|g)."""\n')


def test_no_module_outside_the_model_package_builds_formula_text():
    bad = [f"{name}:{line}: {text}" for name, path in MODULES.items() if not _in_model(name)
           for line, text in formula_assembly(_nodes(path))]  # the trees walked for the import graph
    assert not bad, ("build formulas with evalmix.model (make_formula, ParsedFormula.with_fixed, "
                     "without_random, with_random, text), not from pieces of text:\n" + "\n".join(bad))


def test_old_module_paths_import_with_a_deprecation_warning():
    # every module that moved into a layer folder keeps its old path for one release: the same
    # module object, and a warning that names the new path; run in a fresh interpreter, where
    # none of the old names is loaded yet
    code = ("import importlib, sys, warnings, evalmix\n"
            "bad = []\n"
            "for old, new in evalmix._MOVED.items():\n"
            "    with warnings.catch_warnings(record=True) as seen:\n"
            "        warnings.simplefilter('always')\n"
            "        mod = importlib.import_module('evalmix.' + old)\n"
            "    if mod is not importlib.import_module('evalmix.' + new):\n"
            "        bad.append(old + ' is not ' + new)\n"
            "    if not any(w.category is DeprecationWarning and 'evalmix.' + new in str(w.message) for w in seen):\n"
            "        bad.append(old + ' did not warn')\n"
            "print(len(evalmix._MOVED), bad)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == f"{len(__import__('evalmix')._MOVED)} []", out.stdout + out.stderr
