"""The disclosure measures' data checks: the value counts of every data set, one pass.

Apart from the counting (:mod:`pipeline.risk.disclosure.compute`, numba kernels): ``validate``
builds the coders from these counts
(:meth:`~pipeline.risk.disclosure.measure.DisclosureMeasure.check_aggregates`) without loading
numba, and :func:`~pipeline.risk.disclosure.compute.gather_stats` starts from them when it needs
no joint counts.
"""

from __future__ import annotations

from collections.abc import Sequence

from pipeline.evaluation.data import EvalData
from pipeline.evaluation.execution import Executor
from pipeline.risk.disclosure.coding import ColumnStats, column_stats, merge_value_counts, value_counts


def value_stats(data: EvalData, executor: Executor, variables: Sequence[str]) -> tuple[dict[str, ColumnStats], ...]:
    """Per data set, the :class:`~pipeline.risk.disclosure.coding.ColumnStats` of every variable
    from its value counts (one computation over all data sets)."""
    variables = list(variables)
    factors = [v for v in variables if data.schema[v].is_factor]
    counts = executor.compute(
        *[executor.map_reduce(f, value_counts, merge_value_counts, variables, factors) for f in data.frames]
    )
    return tuple({v: column_stats(c[v], data.schema[v]) for v in variables} for c in counts)
