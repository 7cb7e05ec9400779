"""The compiled kernel's on-disk cache from a read-only install, and two processes compiling it at once.

numba caches the kernel beside its source (``__pycache__``) and, where the installed package
cannot be written, in the user's cache directory (``$XDG_CACHE_HOME/numba``, by default
``~/.cache/numba``); each entry is written to a temporary file and renamed into place, so two
processes that compile the kernel at once both succeed and leave one valid entry.  Both checks
run the cold compile in fresh processes (several CPU seconds each): marked slow.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(
    any(importlib.util.find_spec(n) is None for n in ("numba", "nutpie", "pymc")),
    reason="needs the bayes extra (numba, nutpie)")

SRC = Path(__file__).resolve().parents[2] / "src"

# A process that imports (compiles or loads) the kernel's callbacks with the package's own folder
# unwritable, as in a read-only install (numba's probe of the source tree fails, as it does there),
# evaluates the kernel once, and prints how many callbacks came from the cache.
_CHILD = textwrap.dedent("""
    import sys
    import numba.core.caching as caching

    def read_only(self):
        raise PermissionError("read-only install")

    if sys.argv[1] == "read-only":
        caching.InTreeCacheLocator.ensure_cache_path = read_only
    from evalmix.bayes import _fused_cabi

    print(_fused_cabi.logp_cfunc.cache_hits + _fused_cabi.expand_cfunc.cache_hits)
""")


def _run(env: dict[str, str], mode: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", _CHILD, mode], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _env(cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["XDG_CACHE_HOME"] = str(cache)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")])
    return env


@pytest.mark.slow
def test_read_only_install_caches_in_the_user_cache_dir_and_two_processes_compile_at_once(tmp_path):
    env = _env(tmp_path)
    # two cold compiles at once into the same (empty) user cache directory
    procs = [_run(env, "read-only") for _ in range(2)]
    outs = [p.communicate(timeout=900) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err[-3000:]
    entries = list((tmp_path / "numba").rglob("*_fused_cabi*.nbi"))
    assert entries, sorted(str(p) for p in tmp_path.rglob("*"))
    # a third process loads both callbacks from the user cache
    p = _run(env, "read-only")
    out, err = p.communicate(timeout=900)
    assert p.returncode == 0, err[-3000:]
    assert out.split()[-1] == "2"
