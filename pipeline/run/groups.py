"""Repetition groups: a synthesis that collects its original (the partial synthesiser) of data
the executor keeps in memory, and the measure units on its sets, run on the workers.

The synthesis runs as one task on a worker; its sets are cached (the release) and, read back,
sent once with the original and the holdout to every measure unit's task, so that the units of a
group spread over the workers instead of running one after another. Synthesis, checks and
measures run on pandas frames with an in-memory executor, and the outputs are cached unit by
unit as if each had run alone.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd

from pipeline import notices
from pipeline.data.schema import Schema
from pipeline.errors import PipelineError, located
from pipeline.evaluation.data import EvalData, as_eval_data
from pipeline.evaluation.execution import Executor
from pipeline.run.cache import (
    UnitOutput,
    cached_output,
    store_output,
    store_synthesis,
    synthesis_paths,
    synthesised_frames,
    unit_paths,
)
from pipeline.run.inputs import SourceKey, TaskInputs
from pipeline.run.integrity import set_hashes
from pipeline.run.units import check_unit, evaluated, synthesis_output, unit_context
from pipeline.synth.base import SynthesisOutput
from pipeline.tasks import LoadedTask, SynthesisUnit, Unit


@dataclass(frozen=True)
class RepetitionGroup:
    """A synthesis that collects its in-memory original and the measure units on its sets (in
    unit order): one task on a worker, then one task per unit."""

    synthesis: SynthesisUnit
    units: tuple[Unit, ...]


def repetition_groups(inputs: TaskInputs, units: Sequence[Unit], executor: Executor) -> list[RepetitionGroup]:
    """The syntheses that run with their measure units as one task: those whose synthesiser
    collects the original (:attr:`~pipeline.synth.base.Synthesiser.collects_original`) when the
    executor evaluates that original in memory (its sets have the same records)."""
    in_memory: dict[str, bool] = {}
    by_source: dict[SourceKey, list[Unit]] = {}
    for u in units:
        if u.source is not None:
            by_source.setdefault((u.dataset, u.source, u.repetition), []).append(u)
    groups = []
    for s in inputs.syntheses:
        if not s.synthesiser.collects_original:
            continue
        if s.dataset not in in_memory:
            original = inputs.originals[s.dataset]
            in_memory[s.dataset] = executor.in_memory(EvalData((original.frame,), original.schema))
        if in_memory[s.dataset]:
            groups.append(RepetitionGroup(s, tuple(by_source.get(s.key, ()))))
    return groups


@contextmanager
def _named(what: str) -> Iterator[None]:
    """Errors inside the block name ``what`` (a unit), as the runner's errors do."""
    try:
        yield
    except PipelineError as e:
        raise located(what, e) from e
    except Exception as e:
        raise PipelineError(f"{what} failed: {type(e).__name__}: {e}") from e


@dataclass(frozen=True)
class RepetitionOutput:
    """What a repetition task gives back to the driver."""

    #: the synthesis result (None when its sets came from the cache)
    result: SynthesisOutput | None
    #: the synthesis unit's output (None when its sets came from the cache)
    synthesis: UnitOutput | None
    #: each finished measure unit's output, in unit order
    evaluated: tuple[UnitOutput, ...]
    #: the error that stopped the rest (None when every unit finished)
    error: PipelineError | None


@dataclass(frozen=True)
class RepetitionJob:
    """What one repetition task does with the frames it reads, in this order: the original, the
    holdout (``with_holdout``), then the ``given`` synthetic sets read from the cache (none: the
    task synthesises them).  Then each measure unit of ``units`` (with its error context) is
    checked and evaluated on the original restricted to ``against`` (the synthesised schema)."""

    synthesis: SynthesisUnit
    units: tuple[tuple[Unit, str], ...] = ()
    against: Schema | None = None
    with_holdout: bool = False
    given: int = 0

    def frames(self, frames: Sequence[pd.DataFrame]) -> tuple[pd.DataFrame, pd.DataFrame | None, list[pd.DataFrame]]:
        """(original, holdout or None, given sets) of the frames the task read."""
        assert len(frames) == 1 + self.with_holdout + self.given, "a repetition job reads its frames in order"
        return frames[0], frames[1] if self.with_holdout else None, list(frames[1 + self.with_holdout :])


def repetition_task(
    schema: Schema, execution: dict[str, Any], frames: list[pd.DataFrame], job: RepetitionJob
) -> RepetitionOutput:
    """(Part of) a :class:`RepetitionGroup` on a worker (:class:`RepetitionJob`): the synthesis of
    the original unless its sets are given, then each measure unit's checks and evaluation,
    until one fails.

    Raises
    ------
    PipelineError
        The synthesis failed (naming it).
    """
    executor = Executor(None, **execution)
    original, holdout, sets = job.frames(frames)
    result, synthesised = None, None
    if not job.given:
        synthesis = job.synthesis
        with _named(f"{synthesis.where}: synthesise"):
            result, synthesised = synthesis_output(
                synthesis,
                lambda: synthesis.synthesiser.synthesise_frame(original, schema, executor),
                lambda result: set_hashes(original[list(result.schema.names)]),
            )
        sets = list(result.synthetic)
    outputs: list[UnitOutput] = []
    try:
        if job.units:
            assert job.against is not None
            against = job.against
            data = as_eval_data(original[list(against.names)], sets, against, require_synthetic=False, holdout=holdout,
                                synthesised=job.synthesis.synthesiser.synthesised_variables())  # fmt: skip
        for u, context in job.units:
            with notices.collected() as at_check:
                check_unit(u.measure, data, executor, context)
            with _named(f"measure {u.label}"):
                out = evaluated(u, data, executor)
            outputs.append(replace(out, warnings=tuple(dict.fromkeys([*at_check, *out.warnings]))))
    except PipelineError as e:
        return RepetitionOutput(result, synthesised, tuple(outputs), e)  # what finished is cached first
    return RepetitionOutput(result, synthesised, tuple(outputs), None)


def run_repetition(
    task: LoadedTask, group: RepetitionGroup, inputs: TaskInputs, cache: Path, executor: Executor
) -> list[UnitOutput]:
    """Run (or reuse from the cache) a :class:`RepetitionGroup` on the cluster: its synthesis as
    one task, then its measure units as one task each, so that they spread over the workers (the
    records and sets are sent once for all of them); cache the synthesis and then each finished
    measure unit. Returns the outputs, the synthesis's first.

    Raises
    ------
    PipelineError
        The synthesis or a measure unit failed (the units finished before it are cached).
    """
    syn = group.synthesis
    done = cached_output(*synthesis_paths(cache, syn))
    outputs = [cached_output(*unit_paths(cache, u)) for u in group.units]
    todo = [u for u, out in zip(group.units, outputs, strict=True) if out is None]
    if done is not None and not todo:
        return [done, *(o for o in outputs if o is not None)]
    original, holdout = inputs.originals[syn.dataset], inputs.holdout(syn.dataset)
    shared = (original.schema, task.spec.execution.model_dump())
    if done is None:
        (out,) = executor.map_frame_tasks(repetition_task, [((0,), RepetitionJob(syn))], [original.frame], shared)
        assert out.result is not None and out.synthesis is not None
        done = store_synthesis(syn, out.result, out.synthesis, cache)
    if not todo:
        return [done, *(o for o in outputs if o is not None)]
    # the sets as the cache holds them (a resumed run evaluates the sets it synthesised before)
    sets = synthesised_frames(syn, cache)
    against = inputs.synthetic[syn.key][0].schema
    frames = [original.frame, *([] if holdout is None else [holdout.frame]), *sets]
    read = tuple(range(len(frames)))
    jobs = [
        (read, RepetitionJob(syn, ((u, unit_context(task, u, inputs)),), against, holdout is not None, len(sets)))
        for u in todo
    ]
    outs = executor.map_frame_tasks(repetition_task, jobs, frames, shared)
    finished = {u.index: out.evaluated[0] for u, out in zip(todo, outs, strict=True) if out.evaluated}
    stored = [
        store_output(finished[u.index], *unit_paths(cache, u)) if u.index in finished else o
        for u, o in zip(group.units, outputs, strict=True)
    ]
    for out in outs:
        if out.error is not None:
            raise out.error
    return [done, *(o for o in stored if o is not None)]
