"""Run the Examples of every public docstring, so the documented outputs stay true."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import numpy as np
import pytest

import evalmix

# modules that exist only to hand code to an optional accelerator (nutpie, in the bayes extra)
OPTIONAL = {"evalmix.bayes._nutpie_model": "nutpie"}
# deprecated alias: importing it warns by design
ALIASES = {"evalmix.tests"}
# the `python -m evalmix` entry point runs the CLI on import
SCRIPTS = {"evalmix.__main__"}

# importing it compiles nutpie's C callbacks with numba (about 15 s where numba's on-disk cache is
# empty, as in a fresh checkout); it has no examples, so the slow step checks that it imports
SLOW = {"evalmix.bayes._fused_cabi"}

MODULES = sorted(m.name for m in pkgutil.walk_packages(evalmix.__path__, "evalmix.")
                 if m.name not in ALIASES | SCRIPTS)


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n
                                  for n in MODULES])
def test_docstring_examples(name: str) -> None:
    if name in OPTIONAL:
        pytest.importorskip(OPTIONAL[name], reason=f"{name} needs the optional {OPTIONAL[name]}")
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    # the finder keeps only objects defined in this module: re-exports are checked where they live
    for test in finder.find(module, name, globs={"np": np, **vars(module)}):
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} doctest example(s) failed in {name} (output above)"
