"""A run's work once its inputs are read: on the cluster (:func:`compute`) or, when every unit
is cached, from the cache without one (:func:`reuse`).

Both check the data as a whole (unless the run folder records that these inputs passed), check
the task's privacy-budget cap and record the run's spend, claim the folder, and tell the
checks' warnings before the work starts.  On the cluster the data units still to run read are
kept in cluster memory, every unit is checked first, the syntheses outside repetition groups
run, then the measure units on their sets, while the repetition groups
(:mod:`pipeline.run.groups`) run as worker tasks beside them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline import notices
from pipeline.evaluation.execution import Executor
from pipeline.run.cache import UnitOutput, is_cached, synthesis_paths, synthesised_sets, unit_paths
from pipeline.run.folder import claim_folder
from pipeline.run.groups import RepetitionGroup, repetition_groups, run_repetition
from pipeline.run.inputs import (
    SourceKey,
    TaskInputs,
    against_synthesised,
    persist_inputs,
    planned_spend,
    stand_in_syntheses,
)
from pipeline.run.integrity import OriginalHashes, Overlap, check_inputs, inputs_checked, record_checked
from pipeline.run.layout import lay_out_inputs
from pipeline.run.notices import run_warnings, tell_warnings
from pipeline.run.schedule import Batch, Progress, run_all
from pipeline.run.units import evaluate_unit, run_synthesis, validate_units
from pipeline.tasks import LoadedTask, SynthesisUnit, Unit


@dataclass(frozen=True)
class Work:
    """What a run's work gives the run folder."""

    #: each synthesis unit's output, by its key
    synthesised: dict[SourceKey, UnitOutput]
    #: each measure unit's output, by its index
    evaluated: dict[int, UnitOutput]
    #: the privacy-budget ledger entries of the run's DP releases
    budget: list[dict[str, Any]]
    #: the overlap of each holdout and file source with its original
    overlaps: list[Overlap]
    #: False when every unit came from the cache: no cluster was started
    cluster_started: bool
    #: the key-block layouts made (the task's, and any a measure needed besides)
    layouts: list[dict[str, Any]] = field(default_factory=list)


def _checked(task: LoadedTask, inputs: TaskInputs, cache: Path, executor: Executor) -> tuple[list[Overlap], bool]:
    """The overlap figures of the inputs (computed unless the folder records them), and whether
    the folder recorded them."""
    overlaps = inputs_checked(cache, task, inputs)
    if overlaps is not None:
        return overlaps, True
    return check_inputs(task, inputs, executor), False


def _plan_and_claim(
    task: LoadedTask,
    inputs: TaskInputs,
    cache: Path,
    executor: Executor,
    history: str | Path | None,
    checked: tuple[list[Overlap], bool],
    told: list[str],
) -> list[dict[str, Any]]:
    """Once every check has passed, before any release: the cap checked and this run's DP spend
    recorded, the folder claimed, the inputs' checks recorded, the checks' warnings told (and
    added to ``told``). Returns the ledger entries."""
    budget = planned_spend(task, inputs, history if history is not None else task.history, executor, record=True)
    claim_folder(cache, task)
    overlaps, recorded = checked
    if not recorded:
        record_checked(cache, task, inputs, overlaps)
    told.extend(notices.so_far())
    tell_warnings(run_warnings({}, told))
    return budget


@dataclass(frozen=True)
class Run:
    """What a run's work is about: the task, its inputs and measure units, the units' cache,
    whether progress is printed, the results history whose privacy ledger counts (None: the
    task's), and the warnings told so far (the work adds its checks')."""

    task: LoadedTask
    inputs: TaskInputs
    units: list[Unit]
    cache: Path
    progress: bool
    history: str | Path | None
    told: list[str]


def reuse(run: Run, reused: tuple[dict[SourceKey, UnitOutput], dict[int, UnitOutput]], executor: Executor) -> Work:
    """A run whose every unit is cached (``reused``), without a cluster: the checks of the data
    as a whole (unless the folder records that these inputs passed them; a source's ``control``
    counts) on ``executor``'s local threads, the privacy-budget record, the cached outputs.

    The units' own checks are not repeated: they passed, with this code, on these data and
    params (all in the fingerprints), when the cached units ran."""
    task, inputs, units, cache, progress, history, told = (
        run.task, run.inputs, run.units, run.cache, run.progress, run.history, run.told,
    )  # fmt: skip
    checked = _checked(task, inputs, cache, executor)
    budget = _plan_and_claim(task, inputs, cache, executor, history, checked, told)
    synthesised, evaluated = reused
    count = Progress(len(synthesised) + len(evaluated), progress)
    for s in inputs.syntheses:
        count.report(s.label, synthesised[s.key].seconds, cached=True)
    for u in units:
        count.report(u.label, evaluated[u.index].seconds, cached=True)
    return Work(synthesised, evaluated, budget, checked[0], cluster_started=False)


def compute(run: Run, executor: Executor) -> Work:
    """Run the units not cached yet on ``executor``'s cluster (reusing the others): the data they
    read kept in cluster memory, every check (its warnings told before the work), the
    syntheses, groups and measure units."""
    task, inputs, units, cache, progress, history, told = (
        run.task, run.inputs, run.units, run.cache, run.progress, run.history, run.told,
    )  # fmt: skip
    todo = [u for u in units if not is_cached(unit_paths(cache, u))]
    to_synthesise = [s for s in inputs.syntheses if not is_cached(synthesis_paths(cache, s))]
    # only what a unit still to run reads goes to the cluster (synthesised sources: after their synthesis)
    sources = [k for k in dict.fromkeys(u.source_key for u in todo if u.source is not None) if k in inputs.synthetic]
    persist_inputs(inputs, executor, sources, {s.dataset for s in to_synthesise} | {u.dataset for u in todo})
    checked = _checked(task, inputs, cache, executor)
    if todo:
        stand_in_syntheses(task, inputs, executor)
        validate_units(task, todo, inputs, executor, {s.key for s in inputs.syntheses})
        lay_out_inputs(todo, inputs, executor)
    budget = _plan_and_claim(task, inputs, cache, executor, history, checked, told)
    count = Progress(len(inputs.syntheses) + len(units), progress)

    def report(u: Unit | SynthesisUnit, out: UnitOutput) -> None:
        count.report(u.label, out.seconds, out.cached)

    def report_group(g: RepetitionGroup, outs: list[UnitOutput]) -> None:
        for u, out in zip((g.synthesis, *g.units), outs, strict=True):
            report(u, out)

    # repetition groups are worker tasks: their threads only wait, so they run while the
    # driver synthesises and evaluates the other units
    groups = repetition_groups(inputs, units, executor)
    with Batch(
        groups,
        lambda g: run_repetition(task, g, inputs, cache, executor),
        lambda _: str(task.path),
        task.spec.concurrency,
        report_group,
    ) as grouped:
        synthesised, evaluated = _run_ungrouped(task, inputs, units, todo, groups, cache, executor, report)
        group_outputs = grouped.results()
    for g, outs in zip(groups, group_outputs, strict=True):
        synthesised[g.synthesis.key] = outs[0]
        evaluated.update(zip([u.index for u in g.units], outs[1:], strict=True))
    return Work(synthesised, evaluated, budget, checked[0], cluster_started=True, layouts=executor.layouts())


def _run_ungrouped(
    task: LoadedTask,
    inputs: TaskInputs,
    units: list[Unit],
    todo: list[Unit],
    groups: list[RepetitionGroup],
    cache: Path,
    executor: Executor,
    report: Callable[[Unit | SynthesisUnit, UnitOutput], None],
) -> tuple[dict[SourceKey, UnitOutput], dict[int, UnitOutput]]:
    """The syntheses outside repetition groups, then the measure units outside them (``todo``:
    those not cached yet): their outputs by synthesis key and by unit index."""
    in_groups = {g.synthesis.key for g in groups}
    alone = [s for s in inputs.syntheses if s.key not in in_groups]
    original_hashes = OriginalHashes(inputs.originals, executor)
    synthesised: dict[SourceKey, UnitOutput] = dict(
        zip(
            [s.key for s in alone],
            run_all(
                alone,
                lambda u: run_synthesis(u, inputs.originals[u.dataset], cache, executor, original_hashes),
                lambda u: f"{task.path}: {u.where}: synthesise",
                task.spec.concurrency,
                report,
            ),
            strict=True,
        )
    )
    read = {u.source_key for u in todo}
    alone = [s for s in alone if s.key in read]  # the sets a unit still to run reads
    if alone:
        for s in alone:
            inputs.put_synthetic(s.key, *against_synthesised(inputs.originals[s.dataset], synthesised_sets(s, cache)))
        persist_inputs(inputs, executor, [s.key for s in alone])
        keys = {s.key for s in alone}
        validate_units(task, [u for u in todo if u.source_key in keys], inputs, executor)
    grouped = {u.index for g in groups for u in g.units}
    rest = [u for u in units if u.index not in grouped]
    evaluated = dict(
        zip(
            [u.index for u in rest],
            run_all(
                rest,
                lambda u: evaluate_unit(u, inputs, cache, executor),
                lambda u: f"{task.path}: measure {u.label}",
                task.spec.concurrency,
                report,
            ),
            strict=True,
        )
    )
    return synthesised, evaluated
