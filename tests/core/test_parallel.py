"""evalmix.parallel: one execution helper, seed streams per task, any joblib backend."""

from __future__ import annotations

import threading

import joblib
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalmix.core.parallel import parallel_map, task_seeds


def _draw(task: int, seq: np.random.SeedSequence) -> tuple[int, float]:
    return task, float(np.random.default_rng(seq).random())


def _square(task: int) -> int:
    return task * task


def _thread_name(task: int) -> str:
    return threading.current_thread().name


def _fail_on_three(task: int) -> int:
    if task == 3:
        raise ValueError("task 3 is bad")
    return task


def test_task_seeds_are_spawned_children() -> None:
    want = [s.generate_state(2).tolist() for s in np.random.SeedSequence(11).spawn(4)]
    got = [s.generate_state(2).tolist() for s in task_seeds(11, 4)]
    assert got == want
    # a SeedSequence is spawned from directly, as numpy does
    root = np.random.SeedSequence(11)
    assert [s.generate_state(2).tolist() for s in task_seeds(root, 4)] == want


def test_each_task_gets_its_own_stream_in_task_order() -> None:
    out = parallel_map(_draw, range(6), seed=5)
    want = [float(np.random.default_rng(s).random()) for s in np.random.SeedSequence(5).spawn(6)]
    assert [t for t, _ in out] == list(range(6))
    assert [v for _, v in out] == want
    assert len(set(want)) == 6


@pytest.mark.parametrize("backend,n_jobs", [("loky", 2), ("threading", 2), ("threading", 1),
                                            ("sequential", None)])
def test_results_do_not_depend_on_backend_or_n_jobs(backend: str, n_jobs: int | None) -> None:
    local = parallel_map(_draw, range(9), seed=3)
    with joblib.parallel_config(backend=backend):
        other = parallel_map(_draw, range(9), seed=3, n_jobs=n_jobs, batch_size=2)
    assert other == local


def test_unseeded_tasks_get_one_argument() -> None:
    assert parallel_map(_square, [3, 1, 2], n_jobs=2) == [9, 1, 4]
    assert parallel_map(_square, []) == []


def test_parallel_config_is_honoured() -> None:
    # n_jobs=None defers to the enclosing configuration: threads here, not this thread
    with joblib.parallel_config(backend="threading", n_jobs=2):
        names = parallel_map(_thread_name, range(4))
    assert threading.current_thread().name not in names
    # and without one it runs in this process
    assert set(parallel_map(_thread_name, range(3))) == {threading.current_thread().name}


def test_progress_counts_every_task(capsys: pytest.CaptureFixture[str]) -> None:
    parallel_map(_square, range(7), n_jobs=2, progress=True, desc="squares")
    err = capsys.readouterr().err
    assert "squares" in err and "7/7" in err


@settings(max_examples=25, deadline=None)
@given(n=st.integers(0, 40), seed=st.integers(0, 2**32 - 1), batch=st.integers(1, 5))
def test_seeded_map_is_the_sequential_loop(n: int, seed: int, batch: int) -> None:
    got = parallel_map(_draw, range(n), seed=seed, batch_size=batch)
    assert got == [_draw(i, s) for i, s in enumerate(np.random.SeedSequence(seed).spawn(n))]


class _NoStreamBackend(joblib._parallel_backends.ThreadingBackend):
    """A backend that cannot stream results (as Ray's joblib backend)."""

    supports_retrieve_callback = False


def test_backends_that_cannot_stream_still_give_every_result(capsys: pytest.CaptureFixture[str]) -> None:
    joblib.register_parallel_backend("evalmix-nostream", _NoStreamBackend)
    with joblib.parallel_config(backend="evalmix-nostream", n_jobs=2):
        got = parallel_map(_draw, range(7), seed=5, progress=True, desc="nostream")
    assert got == parallel_map(_draw, range(7), seed=5)
    assert "7/7" in capsys.readouterr().err


def _warn_and_record(task: int) -> list[str]:
    import time
    import warnings

    from evalmix.core.parallel import record_warnings

    with record_warnings() as caught:
        for k in range(3):
            warnings.warn(f"task {task} step {k}", UserWarning)
            time.sleep(0.01)  # interleave with the other threads
    return [str(w.message) for w in caught]


@pytest.mark.parametrize("backend", ["threading", "loky"])
def test_record_warnings_gives_each_task_its_own(backend: str) -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a recorded warning never reaches the caller
        before = list(warnings.filters)
        with joblib.parallel_config(backend=backend, n_jobs=3):
            got = parallel_map(_warn_and_record, range(6))
        assert warnings.filters == before  # the caller's filters are back
    assert got == [[f"task {t} step {k}" for k in range(3)] for t in range(6)]


def test_record_warnings_leaves_other_threads_alone() -> None:
    import warnings

    from evalmix.core.parallel import record_warnings

    inside, done = threading.Event(), threading.Event()
    theirs: list[str] = []

    def recorder() -> None:
        with record_warnings() as caught:
            inside.set()
            done.wait(5)
            warnings.warn("recorded", UserWarning)
        theirs.extend(str(w.message) for w in caught)

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        t = threading.Thread(target=recorder)
        t.start()
        inside.wait(5)
        warnings.warn("not recorded", UserWarning)  # this thread records nothing
        done.set()
        t.join()
    assert [str(w.message) for w in seen] == ["not recorded"]
    assert theirs == ["recorded"]


# Last in the file: an error in a worker process makes joblib end the pool of worker processes
# (started by the tests above, ~1 s of CPU each), so a later test would have to start another
def test_errors_propagate_with_their_type() -> None:
    with pytest.raises(ValueError, match="task 3 is bad"):
        parallel_map(_fail_on_three, range(5))
    with pytest.raises(ValueError, match="task 3 is bad"):
        parallel_map(_fail_on_three, range(5), n_jobs=2)
