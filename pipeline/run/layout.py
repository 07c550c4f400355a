"""The task's key-block layout: each unit's data laid out once, by the key its block-wise measures share."""

from __future__ import annotations

from collections.abc import Sequence

from pipeline.evaluation.base import common_key
from pipeline.evaluation.execution import Executor
from pipeline.run.inputs import SourceKey, TaskInputs
from pipeline.run.units import unit_eval_data
from pipeline.tasks import Unit


def lay_out_inputs(units: Sequence[Unit], inputs: TaskInputs, executor: Executor) -> None:
    """Lay out the data read by the ``units`` (given sources: the original, its synthetic sets and
    the holdout) by the coarsest key common to the block-wise measures on them, once per data
    (:meth:`~pipeline.evaluation.execution.Executor.lay_out`), with only the variables those
    measures read.  Nothing happens in memory, for data without a block-wise measure, or when
    their keys share no variable (each measure then makes its own blocks)."""
    synthesised = {s.key for s in inputs.syntheses}
    by_data: dict[tuple[str, SourceKey | None], list[Unit]] = {}
    for u in units:
        if u.source is None or u.source_key not in synthesised:
            by_data.setdefault((u.dataset, u.source_key if u.source is not None else None), []).append(u)
    for chosen in by_data.values():
        data = unit_eval_data(chosen[0], inputs)
        blockwise = [u for u in chosen if u.measure.block_keys(data)]
        key = common_key([u.measure.block_keys(data) for u in blockwise])
        if not key:
            continue
        variables = list(dict.fromkeys(v for u in blockwise for v in u.measure.params.variables()))
        selected = data.select([v for v in data.columns if v in variables])
        # laid out when a block-wise measure runs on the cluster (``policy: auto`` decides per measure)
        on_cluster = [e for e in (executor.for_measure(u.type) for u in blockwise) if not e.in_memory(selected)]
        if on_cluster:
            on_cluster[0].lay_out(selected, key)
