"""Loaders for the per-sample logs of evaluation harnesses.

Inspect AI, lm-evaluation-harness, HELM, OpenAI evals, FastChat MT-bench, lighteval, OpenCompass,
tau-bench / tau2-bench, SWE-bench run reports and MTEB results folders (whose continuous scores are
passed through as a ``score`` outcome, not thresholded); arena battle files (FastChat's
``clean_battle`` JSON, lmarena's tables) as battle rows for :func:`evalmix.bradley_terry`, and
Inspect's ``evals_df`` frames as per-evaluation scores (:func:`read_inspect_evals`).

Each loader returns the validated runs table of :func:`evalmix.read_runs`, with the columns
``model``, ``item``, ``run``, ``correct`` and, when several tasks are read together, ``task`` (a
slice; items are then labelled ``"<task>:<id>"``, because ids restart in every task and a crossed
``(1 | item)`` term needs items nested in their task).  :func:`read_logs` recognises the format.
Samples without a score (errors, cancellations) are left out with a warning by default;
``errors="keep"`` returns them with a ``status`` column (``ok``/``error``/``cancelled``/``unscored``).

Every log file is read inside one guard (:func:`evalmix.io._common.reading`) and the fields the
loaders use are checked for their JSON kind: a file that cannot be read or breaks its harness's
layout is a :class:`~evalmix.DataError` naming the file and the field's path; found in a folder,
it is left out with a :class:`~evalmix.DataWarning` naming it, and the other files are read.
"""

from __future__ import annotations

from ._common import STATUSES
from .battles import read_arena_battles
from .detect import detect_format, is_log_source, read_logs
from .helm import read_helm
from .inspect_logs import read_inspect, read_inspect_evals
from .lighteval import read_lighteval
from .lm_eval import read_lm_eval
from .mt_bench import read_mt_bench
from .mteb import read_mteb
from .openai_evals import read_openai_evals
from .opencompass import read_opencompass
from .swebench import read_swebench
from .tau_bench import read_tau_bench

__all__ = ["STATUSES", "detect_format", "is_log_source", "read_arena_battles", "read_helm", "read_inspect",
           "read_inspect_evals", "read_lighteval", "read_lm_eval", "read_logs", "read_mt_bench", "read_mteb", "read_openai_evals", "read_opencompass", "read_swebench",
           "read_tau_bench"]
