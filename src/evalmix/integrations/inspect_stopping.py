"""An Inspect AI early-stopping manager that applies evalmix's anytime-valid stopping rule.

Inspect (0.3.285 and later) asks a task's ``early_stopping`` manager, before each sample is run,
whether to skip it, and tells it each sample's scores when they are in.  :class:`SequentialStopping`
follows the confidence sequence of the task's accuracy over items (an item counts once all its
epochs are scored: its observation is the mean of its epochs) and, once the stopping rule of
:func:`evalmix.studies.sequential.stopping_time` holds (the interval is narrower than ``target_width``,
excludes ``null``, or ``max_items`` items are scored), skips every sample not yet started::

    from inspect_ai import Task, eval
    from evalmix.integrations.inspect_stopping import SequentialStopping

    eval(Task(dataset=..., solver=..., scorer=..., epochs=3,
              early_stopping=SequentialStopping(target_width=0.05)), model="openai/gpt-4o")

The interval at the stop keeps its coverage because the sequence is valid at every item at once;
it is written to the log (``results.early_stopping.metadata``).  Items must reach the manager in a
random order (shuffle the dataset), and one manager follows one model: give each model its own
task when several run in one ``eval()``.  Scores are read from ``scorer`` (default the first):
``"C"``/``"I"`` (Inspect's CORRECT/INCORRECT), booleans or numbers in [0, 1].

:class:`GateStopping` applies a release gate (:func:`evalmix.gate`) instead: it compares the
candidate's scores, item by item, with a baseline log on the same items, and stops the candidate's
run as soon as the gate's verdict is PASS or FAIL (``shadow=True`` records what it would have
decided at each look and stops nothing)::

    eval(Task(dataset=..., solver=..., scorer=..., epochs=3,
              early_stopping=GateStopping("logs/baseline/", rule="gate.toml")), model="openai/gpt-5")
"""

from __future__ import annotations

from collections.abc import Hashable

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..core.errors import DataError
from ..studies.sequential import METHODS, Method, confidence_sequence

if TYPE_CHECKING:
    from ..studies.gate import GateRule

__all__ = ["GateStopping", "SequentialStopping", "score_value"]

_LETTERS = {"C": 1.0, "I": 0.0, "P": 0.5}  # Inspect's CORRECT, INCORRECT, PARTIAL


def score_value(value: object) -> float:
    """A sample's score as a number in [0, 1]: ``"C"`` 1, ``"I"`` 0, ``"P"`` 0.5, booleans, numbers.

    Examples
    --------
    >>> score_value("C"), score_value(False), score_value(0.25)
    (1.0, 0.0, 0.25)
    """
    if isinstance(value, str):
        if value.upper() in _LETTERS:
            return _LETTERS[value.upper()]
        raise DataError(f"score {value!r} is neither C, I, P nor a number in [0, 1]")
    if isinstance(value, (bool, np.bool_)):
        return float(value)
    if isinstance(value, (int, float, np.integer, np.floating)) and 0 <= float(value) <= 1:
        return float(value)
    raise DataError(f"score {value!r} is neither C, I, P nor a number in [0, 1]")


class SequentialStopping:
    """Inspect ``EarlyStopping`` manager: stop a task when evalmix's stopping rule holds.

    Parameters
    ----------
    target_width : float, optional
        Stop once the anytime-valid interval of the accuracy is at most this wide.
    null : float, optional
        Stop once the interval excludes this accuracy.
    max_items : int, optional
        Stop after this many scored items (the budget).
    method, conf_level
        As in :func:`evalmix.confidence_sequence`.
    scorer : str, optional
        The scorer whose value is followed (default: the first of each sample's scores).

    Examples
    --------
    >>> stop = SequentialStopping(target_width=0.2)
    >>> stop.stopped_at is None
    True
    """

    name = "evalmix_sequential"

    def __init__(self, *, target_width: float | None = None, null: float | None = None,
                 max_items: int | None = None, method: Method = "betting", conf_level: float = 0.95,
                 scorer: str | None = None):
        if target_width is None and null is None and max_items is None:
            raise DataError("give a stopping rule: target_width=, null= or max_items=")
        if method not in METHODS:
            raise DataError(f"method must be one of {METHODS}, got {method!r}")
        # checks the numbers now, not in the middle of an evaluation
        confidence_sequence([0.5], method=method, conf_level=conf_level, target_width=target_width,
                            null=null, max_n=max_items)
        self.target_width, self.null, self.max_items = target_width, null, max_items
        self.method, self.conf_level, self.scorer = method, conf_level, scorer
        self._reset(1)

    def _reset(self, epochs: int) -> None:
        self.epochs = epochs
        self._pending: dict[Any, list[float]] = {}
        self.items: list[Any] = []  # items in the order they were completed
        self.means: list[float] = []
        self.stopped_at: int | None = None
        self.decision = "continue"
        self.interval: dict[str, float] = {}
        self.skipped = 0

    async def start_task(self, task: object, samples: list[Any], epochs: int) -> str:
        """A new task: forget the previous one."""
        self._reset(int(epochs))
        return self.name

    async def schedule_sample(self, id: str | int, epoch: int) -> object | None:
        # Inspect's EarlyStop when the rule has stopped the task (inspect_ai is imported only here)
        """Skip the sample when the rule has stopped the task."""
        if self.stopped_at is None:
            return None
        from inspect_ai.util import EarlyStop  # only ever called by Inspect

        self.skipped += 1
        return EarlyStop(id=id, epoch=epoch, reason=f"evalmix: {self.decision} after {self.stopped_at} items",
                         metadata={"stopped_at": self.stopped_at, "decision": self.decision})

    async def complete_sample(self, id: str | int, epoch: int, scores: Mapping[str, Any]) -> None:
        """Record a sample's score; when its item has all its epochs, advance the sequence."""
        self.record(id, self._value(scores))

    def _value(self, scores: Mapping[str, Any]) -> float:
        if not scores:
            raise DataError("a sample came back without scores")
        key = self.scorer if self.scorer is not None else next(iter(scores))
        if key not in scores:
            raise DataError(f"scorer {key!r} is not among the sample's scores {sorted(scores)}")
        score = scores[key]
        value = getattr(getattr(score, "score", score), "value", score)
        return score_value(value)

    def record(self, item: Hashable, value: float) -> None:
        """Add one scored epoch of ``item`` (what :meth:`complete_sample` does with Inspect's scores)."""
        runs = self._pending.setdefault(item, [])
        runs.append(float(value))
        if len(runs) < self.epochs:
            return
        self.items.append(item)
        self.means.append(float(np.mean(self._pending.pop(item))))
        if self.stopped_at is not None:
            return
        cs = confidence_sequence(self.means, method=self.method, conf_level=self.conf_level,
                                 target_width=self.target_width, null=self.null)
        last = cs.to_frame().iloc[-1]
        self.interval = {"estimate": float(last["estimate"]), "conf_low": float(last["conf_low"]),
                         "conf_high": float(last["conf_high"])}
        n = len(self.means)
        if cs.stopped_at == n:
            self.stopped_at, self.decision = n, cs.decision
        elif self.max_items is not None and n >= self.max_items:
            self.stopped_at, self.decision = n, "budget"

    async def complete_task(self) -> dict[str, Any]:
        """What the log keeps: the rule, where it stopped, the interval there."""
        return {"method": self.method, "conf_level": self.conf_level, "target_width": self.target_width,
                "null": self.null, "max_items": self.max_items, "epochs": self.epochs,
                "stopped_at": self.stopped_at, "decision": self.decision, "n_items": len(self.means),
                "items": [str(i) for i in self.items], "skipped": self.skipped, **self.interval}


class GateStopping:
    """Inspect ``EarlyStopping`` manager: stop a candidate's task once the release gate decides.

    Every completed item of the candidate (all its epochs scored) is paired with the same item of
    the baseline; at each look of the rule the gate (:func:`evalmix.gate`) is computed on the items
    paired so far, in the order they completed, and a PASS or FAIL verdict skips every sample not
    yet started.  The verdict keeps the gate's guarantee (family-wise error at most the rule's
    ``alpha`` over metrics and looks) because every metric's sequence is valid at every look.  A
    rule without ``looks`` looks once, at ``max_items`` paired items; none after ``max_items``.

    Parameters
    ----------
    baseline : DataFrame or path
        The baseline's runs on the same items: a runs table, or Inspect logs (read with
        :func:`evalmix.read_logs`; with ``scorer`` when they carry several scores).
    rule : dict or path
        The gate rule (:func:`evalmix.read_rule`).  A metric's ``column`` is the baseline's column
        and, on the candidate's side, the scorer of that name (the outcome column, ``correct``,
        is the followed ``scorer``, default the first).
    by_task : bool
        Compare each task with the baseline rows of the task of the same name (a ``task`` column;
        items written ``task:id`` or ``id``).  Otherwise every baseline row is used.
    shadow : bool
        Never stop: record the verdict at each look (``looks`` in the log) and the one the gate
        would have stopped at.
    scorer : str, optional
        The candidate's scorer followed for the outcome, and the scorer read from baseline logs.

    Examples
    --------
    >>> import pandas as pd
    >>> base = pd.DataFrame({"model": "base", "item": range(100), "correct": [1, 0] * 50})
    >>> stop = GateStopping(base, {"looks": 10, "metrics": [{"name": "acc", "column": "correct",
    ...                                                     "margin": 0.2}]})
    >>> for i in range(100):
    ...     stop.record(i, 1.0 if i % 2 == 0 else 0.0)
    >>> stop.verdict, stop.stopped_at
    ('PASS', 40)
    """

    name = "evalmix_gate"

    def __init__(self, baseline: pd.DataFrame | str | Path, rule: GateRule | Mapping[str, Any] | str | Path, *,
                 by_task: bool = True, shadow: bool = False, scorer: str | None = None):
        from ..studies.gate import read_rule

        self.rule = read_rule(rule)
        if isinstance(baseline, (str, Path)):
            from ..io import read_logs

            baseline = read_logs(baseline, **({"scorer": scorer} if scorer else {}))
        if not isinstance(baseline, pd.DataFrame):
            raise DataError(f"baseline must be a runs table or a path of logs, got {type(baseline).__name__}")
        schema = baseline.attrs.get("evalmix") or {}
        self.item_col = schema.get("item") or "item"
        self.outcome = schema.get("outcome") or "correct"
        for col in [self.item_col] + [m.column for m in self.rule.metrics]:
            if col not in baseline.columns:
                raise DataError(f"baseline has no column {col!r} (columns: {', '.join(map(str, baseline.columns))})")
        self.baseline = baseline
        self.by_task, self.shadow, self.scorer = by_task, shadow, scorer
        self._reset(None, 1)

    def _reset(self, task: str | None, epochs: int) -> None:
        self.task, self.epochs = task, epochs
        base = self.baseline
        if self.by_task and task is not None and "task" in base.columns:
            base = base[base["task"].astype(str) == str(task)]
            if base.empty:
                raise DataError(f"the baseline has no rows of task {task!r}")
        self._base = base
        self._base_items = {str(i) for i in pd.unique(base[self.item_col])}
        self._pending: dict[Any, list[dict[str, float]]] = {}
        self.items: list[Any] = []  # paired items, in the order they completed
        self._rows: list[dict[str, Any]] = []
        self.unpaired: list[Any] = []
        self.verdict = "INCONCLUSIVE"
        self.stopped_at: int | None = None
        self.looks: list[dict[str, Any]] = []
        self.result: Any = None
        self.skipped = 0

    def _base_key(self, item: Hashable) -> str | None:
        for key in (str(item), f"{self.task}:{item}"):
            if key in self._base_items:
                return key
        return None

    async def start_task(self, task: object, samples: list[Any], epochs: int) -> str:
        """A new task: pair it with the baseline rows of the same task (``by_task``)."""
        self._reset(getattr(task, "name", task if isinstance(task, str) else None), int(epochs))
        return self.name

    async def schedule_sample(self, id: str | int, epoch: int) -> object | None:
        """Skip the sample once the gate has decided (never in shadow mode)."""
        if self.stopped_at is None or self.shadow:
            return None
        from inspect_ai.util import EarlyStop  # only ever called by Inspect

        self.skipped += 1
        return EarlyStop(id=id, epoch=epoch, reason=f"evalmix gate: {self.verdict} after {self.stopped_at} items",
                         metadata={"stopped_at": self.stopped_at, "verdict": self.verdict})

    async def complete_sample(self, id: str | int, epoch: int, scores: Mapping[str, Any]) -> None:
        """Record a sample's scores; when its item has all its epochs, look if the rule says so."""
        if not scores:
            raise DataError("a sample came back without scores")
        main = self.scorer if self.scorer is not None else next(iter(scores))
        values = {}
        for m in self.rule.metrics:
            key = main if m.column == self.outcome else m.column
            if key not in scores:
                raise DataError(f"metric {m.name!r}: scorer {key!r} is not among the sample's scores {sorted(scores)}")
            score = scores[key]
            value = getattr(getattr(score, "score", score), "value", score)
            values[m.column] = score_value(value) if m.column == self.outcome else float(value)
        self.record(id, values)

    def record(self, item: Hashable, values: float | Mapping[str, float]) -> None:
        """Add one scored epoch of ``item`` (a number for the outcome, or values by metric column)."""
        row = {self.outcome: float(values)} if isinstance(values, (int, float, np.number)) else dict(values)
        runs = self._pending.setdefault(item, [])
        runs.append(row)
        if len(runs) < self.epochs:
            return
        self._pending.pop(item)
        key = self._base_key(item)
        if key is None:
            self.unpaired.append(item)
            return
        self.items.append(key)
        for run, r in enumerate(runs, start=1):
            self._rows.append({"model": "candidate", "item": key, "run": run, **r})
        n = len(self.items)
        if self._is_look(n) and (self.stopped_at is None or self.shadow):
            self._look(n)

    def _is_look(self, n: int) -> bool:
        looks = self.rule.looks
        if looks is None:
            return self.rule.max_items is not None and n == self.rule.max_items
        if isinstance(looks, int):
            return n % looks == 0 or n == self.rule.max_items
        return n in looks

    def _look(self, n: int) -> None:
        from ..studies.gate import gate

        if self.rule.max_items is not None and n > self.rule.max_items:
            return
        cols = [m.column for m in self.rule.metrics]
        base = self._base[[self.item_col, *dict.fromkeys(cols)]].copy()
        base[self.item_col] = base[self.item_col].astype(str)
        base = base[base[self.item_col].isin(self.items)].rename(columns={self.item_col: "item"})
        cand = pd.DataFrame(self._rows)
        data = pd.concat([cand, base.assign(model="baseline")], ignore_index=True)
        data.attrs["evalmix"] = {"model": "model", "item": "item", "run": None, "outcome": self.outcome}
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a look sees a part of the baseline's items on purpose
            result = gate(data, "baseline", "candidate", self.rule)
        verdict = result.verdict
        self.looks.append({"n_items": n, "verdict": verdict})
        if verdict != "INCONCLUSIVE" and self.stopped_at is None:
            self.verdict, self.stopped_at, self.result = verdict, n, result
        elif self.stopped_at is None:
            self.result = result

    async def complete_task(self) -> dict[str, Any]:
        """What the log keeps: the rule and its hash, the verdict, where it stopped, the metrics."""
        metrics = [] if self.result is None else self.result.to_frame().to_dict(orient="records")
        return {"rule_hash": self.rule.hash, "rule": self.rule.canonical(), "verdict": self.verdict,
                "stopped_at": self.stopped_at, "shadow": self.shadow, "task": self.task, "epochs": self.epochs,
                "n_items": len(self.items), "unpaired": [str(i) for i in self.unpaired], "looks": self.looks,
                "metrics": metrics, "skipped": self.skipped}
