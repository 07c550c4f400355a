"""Plain-function wrapper of the ``dcr`` measure."""

from __future__ import annotations

from typing import Any

from pipeline.evaluation.data import Frame, as_eval_data
from pipeline.evaluation.execution import Executor
from pipeline.risk.distance.measure import DCRMeasure
from pipeline.risk.distance.result import DCRResult


def dcr(
    original: Any,
    synthetic: Any,
    holdout: Frame | None = None,
    *,
    schema: Any = None,
    executor: Executor | None = None,
    **params: Any,
) -> DCRResult:
    """DCR, NNDR and SDMetrics' DCR protections of ``synthetic`` against the training records
    ``original`` (and ``holdout``); ``params`` as the task's (docs/distance.md)."""
    return DCRMeasure(params).run(as_eval_data(original, synthetic, schema=schema, holdout=holdout), executor)
