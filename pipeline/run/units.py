"""One unit of work: its checks before any work, its evaluation, its table of rows."""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from pipeline import notices
from pipeline.data.dataset import Dataset
from pipeline.errors import PipelineError, TaskError
from pipeline.evaluation import baseline
from pipeline.evaluation.base import Measure, Row, canonical_json, role_columns, setting_text
from pipeline.evaluation.data import EvalData, as_eval_data
from pipeline.evaluation.execution import Executor
from pipeline.results import check_tidy, jsonable
from pipeline.run.cache import (
    UnitOutput,
    cached_output,
    store_output,
    store_synthesis,
    synthesis_paths,
    unit_paths,
)
from pipeline.run.inputs import SourceKey, TaskInputs
from pipeline.run.integrity import OriginalHashes, overlap_share, set_hashes
from pipeline.synth.base import SynthesisOutput
from pipeline.tasks import LoadedTask, SynthesisUnit, Unit


def unit_eval_data(unit: Unit, inputs: TaskInputs) -> EvalData:
    """A unit's data: the original (aligned to its source), the sets and the dataset's holdout
    (cast to the original's schema, restricted to its variables), and the variables the synthesis
    made when the task made the sets."""
    original, sets = inputs.data(*unit.source_key)
    holdout = inputs.holdout(unit.dataset)
    made_by = next((s.synthesiser for s in inputs.syntheses if s.key == unit.source_key), None)
    return as_eval_data(original, sets, require_synthetic=False, holdout=None if holdout is None else holdout.frame,
                        synthesised=None if made_by is None else made_by.synthesised_variables())  # fmt: skip


def unit_context(task: LoadedTask, unit: Unit, inputs: TaskInputs) -> str:
    """How check errors name a measure unit: the task file, the measure and the data."""
    source = f" source {unit.source!r}" if unit.source else ""
    data = f"{unit.dataset!r}{source} ({inputs.originals[unit.dataset].source})"
    return f"{task.path}: measure {unit.measure_name!r} on {data}"


def check_unit(measure: Measure, data: EvalData, executor: Executor | None, context: str) -> None:
    """:meth:`Measure.check` and, with an ``executor``, :meth:`Measure.check_aggregates`.

    Raises
    ------
    TaskError
        A failed check, after ``context``.
    """
    try:
        measure.check(data)
        if executor is not None:
            measure.check_aggregates(data, executor.for_measure(measure.type))
    except PipelineError as e:
        raise TaskError(f"{context}: {e}") from None


def validate_units(
    task: LoadedTask,
    units: Sequence[Unit],
    inputs: TaskInputs,
    executor: Executor,
    stand_ins: Collection[SourceKey] = (),
) -> None:
    """Run every unit's checks before any work starts — the same for a run and ``validate``:
    :meth:`Measure.check` and, except on the ``stand_ins`` (synthesised sources not synthesised
    yet), :meth:`Measure.check_aggregates` with ``executor``.

    A check depends only on the measure's params and the data, so units with equal params on
    the same data (the repetitions of a synthesised source share one stand-in) are checked once.
    """
    checked: set[tuple[str, str, int]] = set()
    made_by = {s.key: s.synthesiser for s in inputs.syntheses}
    for u in units:
        data_id = id(inputs.originals[u.dataset]) if u.source is None else id(inputs.synthetic[u.source_key])
        memo = (u.type, canonical_json(u.canonical_params), data_id)
        if memo in checked:
            continue
        context = unit_context(task, u, inputs)
        try:
            data = unit_eval_data(u, inputs)
        except PipelineError as e:
            raise TaskError(f"{context}: {e}") from None
        synthesiser = made_by.get(u.source_key)
        if u.measure.needs_row_aligned and synthesiser is not None and not synthesiser.row_aligned:
            raise TaskError(
                f"{context}: {u.type} needs row i of every synthetic set to be the synthetic version of original "
                f"record i, but the {synthesiser.kind!r} synthesiser makes new records (draws), so its value would "
                "mean nothing; evaluate it on a partial synthesis (kind: partial) or leave this source out (sources:)"
            )
        stand_in = u.source_key in stand_ins
        check_unit(u.measure, data, None if stand_in else executor, context)
        if stand_in:
            # the sets are not made yet: the aggregates of the original (missing values a measure
            # refuses) are checked now, so that a run does not stop after its syntheses
            try:
                u.measure.check_aggregates(data.with_frames(data.frames[:1]), executor.for_measure(u.type))
            except PipelineError as e:
                raise TaskError(f"{context}: {e}") from None
        checked.add(memo)


def unit_table(rows: Sequence[Row], unit: Unit | SynthesisUnit) -> pd.DataFrame:
    """A unit's rows as a tidy frame: the display setting and the structured params of each row
    (the unit's canonical params updated with the row's inner setting)."""
    frame = pd.DataFrame(
        {
            # the row's inner setting refines the grid point's (e.g. one table of a grid over vars)
            "setting": [setting_text({**unit.grid_point, **r.params}) for r in rows],
            "params": [canonical_json({**unit.canonical_params, **r.params}) for r in rows],
            "synthetic": [str(r.synthetic) for r in rows],
            "measure": [str(r.measure) for r in rows],
            **role_columns(rows),
            "value": [float(r.value) for r in rows],
        }
    )
    return check_tidy(frame, unit.label)


def evaluated(unit: Unit, data: EvalData, executor: Executor) -> UnitOutput:
    """Evaluate a measure unit on ``data``: its table, public summary and seconds.

    The measure's rows come with its holdout baselines (when ``data`` has a holdout) and the
    summary rows over its synthetic sets (:func:`pipeline.evaluation.baseline.evaluate`).
    """
    t0 = time.perf_counter()
    with notices.collected() as raised:
        result = baseline.evaluate(unit.measure, data, executor.for_measure(unit.type), unit.baseline)
    seconds = time.perf_counter() - t0
    return UnitOutput(unit_table(result.rows(), unit), jsonable(result.public_dict()), seconds, warnings=tuple(raised))


def evaluate_unit(unit: Unit, inputs: TaskInputs, cache: Path, executor: Executor) -> UnitOutput:
    """Evaluate a measure unit (or reuse its cached output) and cache it."""
    paths = unit_paths(cache, unit)
    cached = cached_output(*paths)
    if cached is not None:
        return cached
    return store_output(evaluated(unit, unit_eval_data(unit, inputs), executor), *paths)


def synthesis_output(
    unit: SynthesisUnit,
    synthesise: Callable[[], SynthesisOutput],
    original_hashes: Callable[[SynthesisOutput], np.ndarray],
) -> tuple[SynthesisOutput, UnitOutput]:
    """Run a synthesis (``synthesise``): its result and the unit's output — its rows and, per set,
    ``overlap_share`` (the share of the set's records equal to an original record;
    ``original_hashes(result)``: :func:`record_hashes` of the original over the sets' variables),
    its summary, seconds and the warnings it raised."""
    t0 = time.perf_counter()
    with notices.collected() as raised:
        result = synthesise()
    seconds = time.perf_counter() - t0
    hashes = original_hashes(result)
    overlaps = [Row(str(i), "overlap_share", overlap_share(hashes, set_hashes(s)), {})
                for i, s in enumerate(result.synthetic, start=1)]  # fmt: skip
    summary = jsonable(result.public_dict())
    output = UnitOutput(unit_table([*result.rows(), *overlaps], unit), summary, seconds, warnings=tuple(raised))
    return result, output


def run_synthesis(
    unit: SynthesisUnit, original: Dataset, cache: Path, executor: Executor, original_hashes: OriginalHashes
) -> UnitOutput:
    """Synthesise (or reuse the cached synthesis): the release, the unit's rows and summary
    (``original_hashes``: the run's record hashes of the originals, for the sets' overlap)."""
    cached = cached_output(*synthesis_paths(cache, unit))
    if cached is not None:
        return cached
    result, output = synthesis_output(
        unit,
        lambda: unit.synthesiser.synthesise(original, executor),
        lambda result: original_hashes(unit.dataset, result.schema.names),
    )
    return store_synthesis(unit, result, output, cache)
