"""One way to run evalmix's embarrassingly parallel jobs: locally or on a cluster.

Every parallel job in evalmix (calibration and power simulations, the rank bootstrap, sign-flip
refits, :func:`evalmix.studies.fit_many`) goes through :func:`parallel_map`.  It runs on joblib and honours
``joblib.parallel_config``, so a Dask or Ray cluster takes the work over without any change to the
call::

    from dask.distributed import Client
    import joblib, evalmix

    client = Client("tcp://scheduler:8786")
    with joblib.parallel_config(backend="dask"):
        res = evalmix.calibrate("glmm", n_sims=2000, rng=1)

Each task receives its own random stream, a child of ``np.random.SeedSequence(seed)``, so results
depend on the seed only: not on ``n_jobs``, the backend, the number of workers or the order in
which tasks finish.  Progress is counted in the calling process as results arrive, which works the
same for local processes and for remote workers.  See ``docs/scale.md``.
"""

from __future__ import annotations

import contextlib
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager
from typing import Any, TypeVar

import numpy as np

from .arguments import check_arguments
from ..data.slicing import rng_of

__all__ = ["parallel_map", "record_warnings", "single_thread_blas", "task_seeds"]

_CONTROLLER: list[Any] = []  # threadpoolctl's scan of the loaded libraries, done once


def single_thread_blas() -> AbstractContextManager[Any]:
    """BLAS limited to one thread, for the many small dense factorisations of a model fit: they run
    far faster so, and a threaded BLAS on a busy machine spins for hundreds of times the work.

    Examples
    --------
    >>> with single_thread_blas():
    ...     pass
    """
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:  # pragma: no cover - threadpoolctl is a dependency
        return contextlib.nullcontext()
    if not _CONTROLLER:
        _CONTROLLER.append(ThreadpoolController())
    return _CONTROLLER[0].limit(limits=1, user_api="blas")

T = TypeVar("T")
R = TypeVar("R")


def task_seeds(seed: int | np.random.Generator | np.random.SeedSequence | None,
               n: int) -> list[np.random.SeedSequence]:
    """Independent seed streams for ``n`` tasks: ``np.random.SeedSequence(seed).spawn(n)``.

    A SeedSequence passed as ``seed`` is spawned from directly (its spawn counter advances, as in
    numpy); a Generator is first reduced to a SeedSequence by drawing from it.

    Examples
    --------
    >>> s = task_seeds(1, 3)
    >>> [int(x.generate_state(1)[0]) for x in s] == [
    ...     int(x.generate_state(1)[0]) for x in np.random.SeedSequence(1).spawn(3)]
    True
    """
    return rng_of(seed).spawn(int(n))


class _Indexed:
    """Calls ``func`` on one task and returns ``(index, result)``, so results can arrive in any order."""

    def __init__(self, func: Callable[..., Any], seeded: bool) -> None:
        self.func = func
        self.seeded = seeded

    def __call__(self, i: int, task: Any, seq: np.random.SeedSequence | None) -> tuple[int, Any]:
        return i, (self.func(task, seq) if self.seeded else self.func(task))


def parallel_map(func: Callable[..., R], tasks: Iterable[T], *, n_jobs: int | None = None,
                 seed: int | np.random.Generator | np.random.SeedSequence | None = None,
                 desc: str | None = None, progress: bool = False,
                 batch_size: int | str = "auto", prefer: str | None = None) -> list[R]:
    """Apply ``func`` to every task, in parallel, and return the results in task order.

    Parameters
    ----------
    func : callable
        ``func(task)``, or ``func(task, seed_sequence)`` when ``seed`` is given.  It must be
        picklable (a module-level function or a :func:`functools.partial` of one) to run in other
        processes or on other machines.
    tasks : iterable
        One element per call.
    n_jobs : int, optional
        Workers for joblib's local backend (``-1``: all cores; ``1``: run in this process).
        ``None`` takes the value of an enclosing ``joblib.parallel_config`` (1 when there is none).
        Inside ``joblib.parallel_config(backend="dask")`` (or ``"ray"``) the tasks run on that
        cluster whatever ``n_jobs`` is.
    seed : int, Generator or SeedSequence, optional
        When given, task ``i`` receives ``np.random.SeedSequence(seed).spawn(n)[i]`` as its second
        argument (see :func:`task_seeds`), so results are identical for every ``n_jobs`` and
        backend.  For a fresh, unreproducible stream pass ``np.random.SeedSequence()``.
    desc : str, optional
        Label of the progress bar.
    progress : bool
        Show a tqdm progress bar, advanced in this process each time a task finishes (wherever it
        ran).  With a backend that returns results only all together (Ray's), it fills at the end.
    batch_size : int or "auto"
        Tasks sent to a worker at once (joblib's ``batch_size``).
    prefer : {"threads", "processes"}, optional
        joblib's soft hint for the local backend when no ``parallel_config`` chooses one (threads
        suit tasks that release the GIL, such as compiled samplers); a backend chosen by
        ``joblib.parallel_config`` always wins.

    Returns
    -------
    list
        ``[func(t) for t in tasks]`` (with seeds), in the order of ``tasks``.

    Examples
    --------
    >>> import numpy as np
    >>> from evalmix.core.parallel import parallel_map
    >>> def draw(scale, seq):
    ...     return scale * np.random.default_rng(seq).random()
    >>> a = parallel_map(draw, [1, 10, 100], seed=7)
    >>> b = parallel_map(draw, [1, 10, 100], seed=7, n_jobs=2)
    >>> a == b
    True
    """
    check_arguments(n_jobs=n_jobs, seed=seed)
    from joblib import Parallel, delayed

    items = list(tasks)
    n = len(items)
    seeded = seed is not None
    seqs: list[np.random.SeedSequence | None] = [s for s in task_seeds(seed, n)] if seeded else [None] * n
    if n == 0:
        return []
    call = _Indexed(func, seeded)
    # Results come back as they finish, so the bar advances in this process; they are put back in
    # task order below.  Backends that cannot stream results (Ray's joblib backend) return them
    # all at once, and the bar jumps to the end.
    for mode in ("generator_unordered", "generator", "list"):
        try:
            par = Parallel(n_jobs=n_jobs, return_as=mode, batch_size=batch_size, prefer=prefer)
            break
        except ValueError:
            if mode == "list":
                raise
    gen = par(delayed(call)(i, t, s) for i, (t, s) in enumerate(zip(items, seqs)))
    bar = None
    if progress:
        import sys

        from tqdm.auto import tqdm

        bar = tqdm(total=n, desc=desc, file=sys.stderr)  # stdout keeps the results
    out: list[Any] = [None] * n
    try:
        for i, res in gen:
            out[i] = res
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    return out


# ---------------------------------------------------------------- warnings of parallel tasks
# ``warnings.catch_warnings`` swaps process-wide state, so entered from several threads at once
# it can leave the filters of one thread in place for all.  ``record_warnings`` instead installs
# one dispatcher while any task records, and each thread collects what it raises.
_REC_LOCK = threading.Lock()
_REC_DEPTH = 0
_REC_SAVED: tuple[Any, Any] | None = None
_REC_LOCAL = threading.local()


def _dispatch(message: Any, category: Any, filename: str, lineno: int, file: Any = None,
              line: str | None = None) -> None:
    stack = getattr(_REC_LOCAL, "stack", None)
    if stack:
        stack[-1].append(warnings.WarningMessage(message, category, filename, lineno, file, line))
    elif _REC_SAVED is not None:  # a thread that records nothing: the warning's usual course
        show = _REC_SAVED[1]
        if show is getattr(warnings, "_showwarning_orig", None):
            # as warnings._showwarnmsg does, so catch_warnings(record=True) elsewhere still records
            warnings._showwarnmsg_impl(  # type: ignore[attr-defined]
                warnings.WarningMessage(message, category, filename, lineno, file, line))
        else:
            show(message, category, filename, lineno, file, line)


@contextlib.contextmanager
def record_warnings() -> Iterator[list[warnings.WarningMessage]]:
    """Record the warnings raised in this thread, safely from several threads at once.

    The thread-safe counterpart of ``warnings.catch_warnings(record=True)`` for tasks run by
    :func:`parallel_map` in threads (joblib's threading backend, Dask workers in threads) as well
    as in processes: each thread gets the warnings it raised, every one of them (the action is
    ``"always"`` while any thread records); other threads' warnings take their usual course.

    Examples
    --------
    >>> import warnings
    >>> from evalmix.core.parallel import record_warnings
    >>> def task(i):
    ...     with record_warnings() as caught:
    ...         warnings.warn(f"task {i}")
    ...     return [str(w.message) for w in caught]
    >>> parallel_map(task, range(3), n_jobs=3, prefer="threads")
    [['task 0'], ['task 1'], ['task 2']]
    """
    global _REC_DEPTH, _REC_SAVED
    with _REC_LOCK:
        if _REC_DEPTH == 0:
            _REC_SAVED = (list(warnings.filters), warnings.showwarning)
            warnings.simplefilter("always")
            warnings.showwarning = _dispatch
        _REC_DEPTH += 1
    stack = _REC_LOCAL.__dict__.setdefault("stack", [])
    caught: list[warnings.WarningMessage] = []
    stack.append(caught)
    try:
        yield caught
    finally:
        stack.pop()
        with _REC_LOCK:
            _REC_DEPTH -= 1
            if _REC_DEPTH == 0 and _REC_SAVED is not None:
                warnings.filters[:] = _REC_SAVED[0]  # type: ignore[index]
                warnings.showwarning = _REC_SAVED[1]
                warnings._filters_mutated()  # type: ignore[attr-defined]  # as catch_warnings does
                _REC_SAVED = None
