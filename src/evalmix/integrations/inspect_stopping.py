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
"""

from __future__ import annotations

from collections.abc import Hashable

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..core.errors import DataError
from ..studies.sequential import METHODS, Method, confidence_sequence

__all__ = ["SequentialStopping", "score_value"]

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
