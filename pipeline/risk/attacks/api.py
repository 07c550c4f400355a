"""Plain-function wrappers of the attack measures (anonymeter-like names and parameters)."""

from __future__ import annotations

from typing import Any

from pipeline.evaluation.data import Frame, as_eval_data
from pipeline.evaluation.execution import Executor
from pipeline.risk.attacks.measure import InferenceMeasure, LinkabilityMeasure, SinglingOutMeasure
from pipeline.risk.attacks.result import AttackResult


def linkability(
    original: Any,
    synthetic: Any,
    holdout: Frame | None = None,
    *,
    schema: Any = None,
    executor: Executor | None = None,
    **params: Any,
) -> AttackResult:
    """The linkability attack on ``original`` (training records) with ``holdout`` as control
    (``aux_cols``, ``n_neighbors``, ``n_attacks``, ``seed``, ``confidence_level``)."""
    data = as_eval_data(original, synthetic, schema=schema, holdout=holdout)
    return LinkabilityMeasure(params).run(data, executor)


def inference(
    original: Any,
    synthetic: Any,
    holdout: Frame | None = None,
    *,
    schema: Any = None,
    executor: Executor | None = None,
    **params: Any,
) -> AttackResult:
    """The inference attack on ``original`` with ``holdout`` as control (``aux_cols``,
    ``secret``, ``tolerance``, ``n_attacks``, ``seed``, ``confidence_level``)."""
    data = as_eval_data(original, synthetic, schema=schema, holdout=holdout)
    return InferenceMeasure(params).run(data, executor)


def singling_out(
    original: Any,
    synthetic: Any,
    holdout: Frame | None = None,
    *,
    schema: Any = None,
    executor: Executor | None = None,
    **params: Any,
) -> AttackResult:
    """The singling-out attack: predicates from ``synthetic`` checked on ``original`` with
    ``holdout`` as control (``mode``, ``cols``, ``n_attacks``, ``n_cols``, ``max_attempts``,
    ``seed``, ``confidence_level``)."""
    data = as_eval_data(original, synthetic, schema=schema, holdout=holdout)
    return SinglingOutMeasure(params).run(data, executor)
