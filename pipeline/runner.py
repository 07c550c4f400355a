"""Run a task: read its inputs, run its units of work on the Dask cluster, write the run folder.

Units of work (fingerprints: :mod:`pipeline.tasks`):

* a :class:`~pipeline.tasks.SynthesisUnit` per synthesised source and repetition. Its output is
  cached under ``<out>/.units/synthesis/<fingerprint>/``: ``release/`` (the m synthetic sets
  as Parquet, the released margins and the fit report, :meth:`SynthesisResult.write`),
  ``rows.parquet`` (its rows of the results table) and ``summary.json`` (written last: the
  unit is complete). The measure units on that source read the cached Parquet sets back.
* a measure :class:`~pipeline.tasks.Unit` per measure setting, dataset, source and
  repetition, cached as ``<out>/.units/<fingerprint>.parquet`` + ``.json``.

A partial synthesis of an original the executor keeps in memory (CEdata, the Hornby & Hu
studies) runs together with the measure units on its sets as one task on a worker
(:class:`RepetitionGroup`): synthesis, checks and measures on pandas frames with an in-memory
executor, no data set through the driver; the driver only submits the tasks (``concurrency`` in
flight) and caches each unit's output as above.  Other syntheses run first, then the measure
units on their sets, each unit one Dask computation.

A re-run (e.g. after an interruption) reuses every finished unit — syntheses included — so it
skips finished work and produces the same table.  Before any work, every measure unit is
checked (:meth:`Measure.check`): on the data of file and demo sources, and for synthesised
sources against the schema the synthesis will have (:func:`~pipeline.synth.task.synthesised_schema`),
which needs no synthesis; ``validate`` runs exactly these checks.

The run folder (each file written atomically, the manifest last, so a folder with a manifest
is complete):

``results.parquet`` / ``results.csv``  the tidy table (:data:`pipeline.results.RESULT_COLUMNS`)
``summary.json``                      every unit's JSON summary, keyed by unit label
``synthesis/<dataset>/<source>/rep<r>/``  each synthesis's release (copied from the cache)
``report.html``                       the self-contained report (plots embedded)
extra files (``gates.json`` of a nightly run)
``manifest.json``                     task, cluster config, versions, seeds, timings, fingerprints
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import platform
import shutil
import sys
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

import pandas as pd

from pipeline.data.compare import align_synthetic
from pipeline.data.dataset import Dataset, read_dataset
from pipeline.data.schema import Schema
from pipeline.errors import PipelineError, TaskError
from pipeline.evaluation.base import Measure, canonical_json, setting_text
from pipeline.evaluation.data import EvalData, as_eval_data
from pipeline.evaluation.execution import Executor
from pipeline.measures import REGISTRY
from pipeline.results import (
    RESULT_COLUMNS,
    atomic_folder,
    atomic_write_parquet,
    atomic_write_text,
    check_tidy,
    jsonable,
)
from pipeline.tasks import LoadedTask, SynthesisUnit, Unit, code_version, content_hash, expand, synthesis_units

log = logging.getLogger("pipeline")

#: (dataset, source, repetition)
SourceKey = tuple[str, str, int]
Item = TypeVar("Item")
Out = TypeVar("Out")
#: what running a unit gives: its table, its summary, seconds, whether it came from the cache
UnitOutput = tuple[pd.DataFrame, dict[str, Any], float, bool]


@dataclass
class TaskInputs:
    """The data of a task: originals, the synthetic sets per source, and the syntheses to run."""

    originals: dict[str, Dataset] = field(default_factory=dict)
    #: (dataset, source, repetition) -> (original aligned to the source, synthetic sets); a
    #: synthesised source is a schema-only stand-in until its synthesis unit has run
    synthetic: dict[SourceKey, tuple[Dataset, list[Dataset]]] = field(default_factory=dict)
    hashes: dict[tuple[str, str | None, int], str] = field(default_factory=dict)
    syntheses: list[SynthesisUnit] = field(default_factory=list)


def _fingerprint(datasets: list[Dataset]) -> str:
    """Content hash of the data files plus the schemas they are read with (levels, missing codes)."""
    schemas = json.dumps([d.schema.to_dict() for d in datasets], sort_keys=True)
    return content_hash([Path(d.source) for d in datasets]) + schemas


def _read_original(task: LoadedTask, spec: Any) -> Dataset:
    from pipeline.datasets import load_demo

    o = spec.original
    if o.demo is not None:
        ds = load_demo(o.demo, o.rows)
    else:
        schema = task.resolve(o.schema_file) if o.schema_file else None
        ds = read_dataset(task.resolve(o.path), schema=schema, name=spec.name, encoding=o.encoding)
    if o.columns:
        ds = ds.select(o.columns)
    if o.missing_codes:
        ds = replace(ds, schema=ds.schema.with_missing_codes(o.missing_codes))
    return ds


def _read_source(task: LoadedTask, spec: Any, original: Dataset, src: Any) -> tuple[Dataset, list[Dataset]]:
    from pipeline.datasets import load_demo_synthetic

    if src.demo is not None:
        # a generated twin has its original's size
        sets = load_demo_synthetic(src.demo, spec.original.rows)
    else:
        # a source's own schema gets the original's special missing codes; by default it is the original's
        schema = task.resolve(src.schema_file) if src.schema_file else original.schema
        codes = original.schema.cont_na if src.schema_file else None
        encoding = src.encoding or (None if src.schema_file else _original_encoding(task, original))
        sets = [
            read_dataset(p, schema=schema, name=f"{src.name}_{i + 1}", missing_codes=codes, encoding=encoding)
            for i, p in enumerate(task.source_paths(src))
        ]
    original, sets, changes = align_synthetic(original, sets, src.compatibility)
    for c in changes:
        log.warning("aligned: %s", c)
    return original, sets


def _original_encoding(task: LoadedTask, original: Dataset) -> str | None:
    """The encoding the original was read with (its dataset entry's), for its sources' files."""
    for d in task.spec.datasets:
        if d.name == original.name and d.original.path is not None:
            return d.original.encoding
    return None


def _against_synthesised(original: Dataset, sets: list[Dataset]) -> tuple[Dataset, list[Dataset]]:
    """The original restricted to the synthesised variables, levels aligned with the sets (which
    hold the variables after SDC: merged levels, coded tails), and the sets."""
    aligned, sets, _ = align_synthetic(original.select(sets[0].schema.names), sets, "align")
    return aligned, sets


def _cluster_config(task: LoadedTask, cluster: str | Path | dict[str, Any] | None) -> Any:
    """The cluster to use: the command line's, else the task's (relative to the task file), else local."""
    from pipeline.cluster import load_cluster_config

    if cluster is None and task.spec.cluster:
        cluster = task.resolve(task.spec.cluster)
    return load_cluster_config(cluster)


def task_executor(task: LoadedTask, client: Any = None) -> Executor:
    """The run's one executor: the task's ``execution`` settings on ``client``."""
    return Executor(client, **task.spec.execution.model_dump())


def read_inputs(task: LoadedTask, with_sources: bool = True) -> TaskInputs:
    """Read every original and (``with_sources``) every file or demo source; list the syntheses.

    Nothing is synthesised: a synthesised source enters as its :class:`SynthesisUnit`, whose
    fingerprint is the input hash of the measure units on it.
    """
    inputs = TaskInputs()
    for d in task.spec.datasets:
        original = _read_original(task, d)
        h = _fingerprint([original])
        inputs.originals[d.name] = original
        inputs.hashes[(d.name, None, 0)] = h
        for src in d.synthetic:
            if src.synthesise is None and with_sources:
                aligned, sets = _read_source(task, d, original, src)
                inputs.synthetic[(d.name, src.name, 0)] = (aligned, sets)
                inputs.hashes[(d.name, src.name, 0)] = h + _fingerprint(sets)
    inputs.syntheses = synthesis_units(task, {d: inputs.hashes[(d, None, 0)] for d in inputs.originals})
    for s in inputs.syntheses:
        inputs.hashes[s.key] = s.fingerprint
    return inputs


def _synthesise_params(unit: SynthesisUnit) -> Any:
    from pipeline.synth.task import synthesis_params

    return synthesis_params(unit.params)


def _in_context(task: LoadedTask, unit: SynthesisUnit, e: PipelineError) -> PipelineError:
    return type(e)(f"{task.path}: {unit.where}: synthesise: {e}")


def planned_spend(task: LoadedTask, inputs: TaskInputs, history: str | Path | None) -> list[dict[str, Any]]:
    """The privacy-budget ledger entries of the run's DP releases, after checking the task's cap
    against them and the spend already in ``history`` (see :mod:`pipeline.synth.dp_ledger`).

    Raises
    ------
    TaskError
        The run would take a dataset over its cap (nothing has been written yet).
    """
    from pipeline.synth.dp_ledger import check_cap, history_entries, ledger_entries, release_spend

    spends = []
    for u in inputs.syntheses:
        try:
            s = release_spend(
                u.dataset, inputs.hashes[(u.dataset, None, 0)], u.source, u.repetition, u.fingerprint,
                _synthesise_params(u),
            )  # fmt: skip
        except PipelineError as e:
            raise _in_context(task, u, e) from None
        if s is not None:
            spends.append(s)
    check_cap(task.spec.privacy_budget, spends, history_entries(history), str(task.path))
    return ledger_entries(spends)


def stand_in_syntheses(task: LoadedTask, inputs: TaskInputs, executor: Executor) -> None:
    """Give every synthesised source its schema without synthesising: the original aligned to
    the synthesised schema and m empty sets of it, for the checks that precede any work."""
    from pipeline.synth.task import synthesised_schema

    # the repetitions of a source share one stand-in (same schema and m)
    stand_ins: dict[tuple[str, str, str, int], tuple[Dataset, list[Dataset]]] = {}
    for u in inputs.syntheses:
        params = _synthesise_params(u)
        original = inputs.originals[u.dataset]
        try:
            schema = synthesised_schema(original, params, executor)
        except PipelineError as e:
            raise _in_context(task, u, e) from None
        key = (u.dataset, u.source, json.dumps(schema.to_dict(), sort_keys=True), params.m)
        if key not in stand_ins:
            empty = pd.DataFrame({v.name: pd.Series(dtype=v.dtype) for v in schema})
            sets = [Dataset.from_pandas(empty, schema, name=f"{u.source}_{i + 1}") for i in range(params.m)]
            stand_ins[key] = _against_synthesised(original, sets)
        inputs.synthetic[u.key] = stand_ins[key]


def _persisted(datasets: Iterable[Dataset], executor: Executor) -> dict[int, Dataset]:
    """Each distinct data set (by frame) kept in cluster memory, keyed by the id of its old frame."""
    unique = list({id(d.frame): d for d in datasets}.values())
    frames = executor.persist(*[d.frame for d in unique])
    return {id(d.frame): replace(d, frame=f) for d, f in zip(unique, frames, strict=True)}


def persist_inputs(inputs: TaskInputs, executor: Executor, keys: Sequence[SourceKey] | None = None) -> None:
    """Read inputs once into cluster memory, so that units share them instead of re-reading files:
    the originals and every source, or only the sources ``keys`` (e.g. finished syntheses)."""
    chosen = list(inputs.synthetic) if keys is None else list(keys)
    datasets = list(inputs.originals.values()) if keys is None else []
    for k in chosen:
        original, sets = inputs.synthetic[k]
        datasets += [original, *sets]
    by_id = _persisted(datasets, executor)
    if keys is None:
        inputs.originals = {k: by_id[id(v.frame)] for k, v in inputs.originals.items()}
    for k in chosen:
        original, sets = inputs.synthetic[k]
        inputs.synthetic[k] = (by_id[id(original.frame)], [by_id[id(s.frame)] for s in sets])


def _unit_data(unit: Unit, inputs: TaskInputs) -> tuple[Dataset, list[Dataset]]:
    if unit.source is None:
        return inputs.originals[unit.dataset], []
    return inputs.synthetic[(unit.dataset, unit.source, unit.repetition)]


def _unit_measure(unit: Unit) -> Measure:
    return REGISTRY[unit.measure.type].measure(unit.params)


def _unit_eval_data(unit: Unit, inputs: TaskInputs) -> EvalData:
    original, sets = _unit_data(unit, inputs)
    return as_eval_data(original, sets, require_synthetic=False)


def _unit_context(task: LoadedTask, unit: Unit, inputs: TaskInputs) -> str:
    """How check errors name a measure unit: the task file, the measure and the data."""
    source = f" source {unit.source!r}" if unit.source else ""
    data = f"{unit.dataset!r}{source} ({inputs.originals[unit.dataset].source})"
    return f"{task.path}: measure {unit.measure.label!r} on {data}"


def _check_unit(measure: Measure, data: EvalData, executor: Executor | None, context: str) -> None:
    """:meth:`Measure.check` and, with an ``executor``, :meth:`Measure.check_aggregates`.

    Raises
    ------
    TaskError
        A failed check, after ``context``.
    """
    try:
        measure.check(data)
        if executor is not None:
            measure.check_aggregates(data, executor)
    except PipelineError as e:
        raise TaskError(f"{context}: {e}") from None


def validate_units(
    task: LoadedTask, units: list[Unit], inputs: TaskInputs, executor: Executor, stand_ins: Collection[SourceKey] = ()
) -> None:
    """Run every unit's checks before any work starts — the same for a run and ``validate``:
    :meth:`Measure.check` and, except on the ``stand_ins`` (synthesised sources not synthesised
    yet), :meth:`Measure.check_aggregates` with ``executor``.

    A check depends only on the measure's params and the data, so units with equal params on
    the same data (the repetitions of a synthesised source share one stand-in) are checked once.
    """
    checked: set[tuple[str, str, int]] = set()
    for u in units:
        key = (u.dataset, u.source, u.repetition)
        data_id = id(inputs.originals[u.dataset]) if u.source is None else id(inputs.synthetic[key])
        memo = (u.measure.type, canonical_json(u.params), data_id)
        if memo in checked:
            continue
        try:
            measure, data = _unit_measure(u), _unit_eval_data(u, inputs)
        except PipelineError as e:
            raise TaskError(f"{_unit_context(task, u, inputs)}: {e}") from None
        _check_unit(measure, data, None if key in stand_ins else executor, _unit_context(task, u, inputs))
        checked.add(memo)


def unit_table(rows: list[Any], unit: Unit | SynthesisUnit) -> pd.DataFrame:
    """A unit's rows as a tidy frame: the display setting and the structured params of each row
    (the unit's own parameters updated with the row's inner setting)."""
    frame = pd.DataFrame(
        {
            # the row's inner setting refines the grid point's (e.g. one table of a grid over vars)
            "setting": [setting_text({**unit.grid_params, **r.params}) for r in rows],
            "params": [canonical_json({**unit.params, **r.params}) for r in rows],
            "synthetic": [str(r.synthetic) for r in rows],
            "measure": [str(r.measure) for r in rows],
            "value": [float(r.value) for r in rows],
        }
    )
    return check_tidy(frame, unit.label)


def _unit_paths(cache: Path, unit: Unit) -> tuple[Path, Path]:
    return cache / f"{unit.fingerprint}.parquet", cache / f"{unit.fingerprint}.json"


def _cached_output(table_path: Path, summary_path: Path) -> UnitOutput | None:
    """A finished unit's output from the cache (its summary is written last), else None."""
    if table_path.exists() and summary_path.exists():
        cached = json.loads(summary_path.read_text(encoding="utf-8"))
        return pd.read_parquet(table_path), cached["summary"], cached["seconds"], True
    return None


def _store_output(
    table: pd.DataFrame, summary: dict[str, Any], seconds: float, table_path: Path, summary_path: Path
) -> UnitOutput:
    """Cache a unit's table and summary (the summary last: the unit is complete)."""
    atomic_write_parquet(table, table_path)
    atomic_write_text(json.dumps({"summary": summary, "seconds": seconds}), summary_path)
    return table, summary, seconds, False


def _evaluated(unit: Unit, data: EvalData, executor: Executor) -> tuple[pd.DataFrame, dict[str, Any], float]:
    """Evaluate a measure unit on ``data``: its table, public summary and seconds."""
    measure = _unit_measure(unit)
    t0 = time.perf_counter()
    result = measure.evaluate(data, executor)
    seconds = time.perf_counter() - t0
    return unit_table(result.rows(), unit), jsonable(result.public_dict()), seconds


def _evaluate_unit(unit: Unit, inputs: TaskInputs, cache: Path, executor: Executor) -> UnitOutput:
    paths = _unit_paths(cache, unit)
    cached = _cached_output(*paths)
    if cached is not None:
        return cached
    return _store_output(*_evaluated(unit, _unit_eval_data(unit, inputs), executor), *paths)


def synthesis_folder(cache: Path, unit: SynthesisUnit) -> Path:
    """Where a synthesis unit's output is cached."""
    return cache / "synthesis" / unit.fingerprint


def _synthesis_paths(cache: Path, unit: SynthesisUnit) -> tuple[Path, Path]:
    folder = synthesis_folder(cache, unit)
    return folder / "rows.parquet", folder / "summary.json"


def _synthesis_output(unit: SynthesisUnit, result: Any, seconds: float) -> tuple[pd.DataFrame, dict[str, Any], float]:
    return unit_table(result.rows(), unit), jsonable(result.public_dict()), seconds


def _store_synthesis(
    unit: SynthesisUnit, result: Any, output: tuple[pd.DataFrame, dict[str, Any], float], cache: Path
) -> UnitOutput:
    """Cache a synthesis: its release (always with Parquet sets: the measure units read them
    back), then its rows and, last, its summary."""
    params = _synthesise_params(unit)
    result.write(synthesis_folder(cache, unit) / "release", overwrite=True, formats=["parquet", *params.output_format])
    return _store_output(*output, *_synthesis_paths(cache, unit))


def _run_synthesis(unit: SynthesisUnit, original: Dataset, cache: Path, executor: Executor) -> UnitOutput:
    """Synthesise (or reuse the cached synthesis): the release, the unit's rows and summary."""
    from pipeline.synth.task import synthesise

    cached = _cached_output(*_synthesis_paths(cache, unit))
    if cached is not None:
        return cached
    t0 = time.perf_counter()
    result = synthesise(original, _synthesise_params(unit), executor)
    output = _synthesis_output(unit, result, time.perf_counter() - t0)
    return _store_synthesis(unit, result, output, cache)


def synthesised_sets(unit: SynthesisUnit, cache: Path) -> list[Dataset]:
    """The m synthetic sets of a finished synthesis unit, read back from its cached Parquet files
    (with the synthesised schema written beside them)."""
    synthetic = synthesis_folder(cache, unit) / "release" / "synthetic"
    return [
        read_dataset(synthetic / f"syn{i + 1}.parquet", name=f"{unit.source}_{i + 1}")
        for i in range(_synthesise_params(unit).m)
    ]


@dataclass(frozen=True)
class RepetitionGroup:
    """A partial synthesis of data the executor keeps in memory and the measure units on its
    sets (in unit order): one task on a worker that synthesises, checks and evaluates with an
    in-memory executor — no data set goes through the driver between the steps — and whose
    outputs are cached unit by unit as if each had run alone."""

    synthesis: SynthesisUnit
    units: tuple[Unit, ...]


def repetition_groups(inputs: TaskInputs, units: Sequence[Unit], executor: Executor) -> list[RepetitionGroup]:
    """The syntheses that run with their measure units as one task: partial syntheses of an
    original the executor evaluates in memory (the synthesiser collects the original anyway;
    its sets have the same records)."""
    from pipeline.synth.partial.params import PartialParams

    in_memory: dict[str, bool] = {}
    by_source: dict[SourceKey, list[Unit]] = {}
    for u in units:
        if u.source is not None:
            by_source.setdefault((u.dataset, u.source, u.repetition), []).append(u)
    groups = []
    for s in inputs.syntheses:
        if not isinstance(_synthesise_params(s), PartialParams):
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
        raise type(e)(f"{what}: {e}") from e
    except Exception as e:
        raise PipelineError(f"{what} failed: {type(e).__name__}: {e}") from e


#: what a repetition task gives: the synthesis result and output (None when its sets came from
#: the cache), each finished measure unit's table, summary and seconds, and the error that
#: stopped the rest (None when every unit finished)
RepetitionOutput = tuple[
    Any,
    tuple[pd.DataFrame, dict[str, Any], float] | None,
    list[tuple[pd.DataFrame, dict[str, Any], float]],
    PipelineError | None,
]


def _repetition_task(
    schema: Schema,
    execution: dict[str, Any],
    frames: list[pd.DataFrame],
    synthesis: SynthesisUnit,
    sets: list[pd.DataFrame] | None,
    units: list[tuple[Unit, str]],
    against: Schema | None,
) -> RepetitionOutput:
    """A :class:`RepetitionGroup` on a worker: the synthesis (unless its ``sets`` are given, from
    the cache), then each measure unit's checks (with its error ``context``) and evaluation on
    the original restricted to ``against`` (the synthesised schema) and the sets, until one fails.

    Raises
    ------
    PipelineError
        The synthesis failed (naming it).
    """
    from pipeline.synth.partial.syn import synthesise_partial_frame

    executor = Executor(None, **execution)
    original = frames[0]
    result, synthesised = None, None
    if sets is None:
        with _named(f"{synthesis.where}: synthesise"):
            t0 = time.perf_counter()
            result = synthesise_partial_frame(original, schema, _synthesise_params(synthesis), executor)
            synthesised = _synthesis_output(synthesis, result, time.perf_counter() - t0)
        sets = list(result.synthetic)
    outputs = []
    try:
        if units:
            assert against is not None
            data = as_eval_data(original[list(against.names)], sets, against, require_synthetic=False)
        for u, context in units:
            _check_unit(_unit_measure(u), data, executor, context)
            with _named(f"measure {u.label}"):
                outputs.append(_evaluated(u, data, executor))
    except PipelineError as e:
        return result, synthesised, outputs, e  # what finished is cached before the error is raised
    return result, synthesised, outputs, None


def _run_repetition(
    task: LoadedTask, group: RepetitionGroup, inputs: TaskInputs, cache: Path, executor: Executor
) -> list[UnitOutput]:
    """Run (or reuse from the cache) a :class:`RepetitionGroup` as one task on the cluster; cache
    its synthesis and then each finished measure unit. Returns the outputs, the synthesis's first.

    Raises
    ------
    PipelineError
        The synthesis or a measure unit failed (the units finished before it are cached).
    """
    syn = group.synthesis
    done = _cached_output(*_synthesis_paths(cache, syn))
    outputs = [_cached_output(*_unit_paths(cache, u)) for u in group.units]
    todo = [u for u, out in zip(group.units, outputs, strict=True) if out is None]
    if done is not None and not todo:
        return [done, *outputs]  # type: ignore[list-item]
    # a resumed run evaluates the sets it synthesised before
    sets = None if done is None else [d.to_pandas() for d in synthesised_sets(syn, cache)]
    against = inputs.synthetic[syn.key][0].schema if todo else None
    original = inputs.originals[syn.dataset]
    job = ((0,), syn, sets, [(u, _unit_context(task, u, inputs)) for u in todo], against)
    shared = (original.schema, task.spec.execution.model_dump())
    ((result, synthesised, evaluated, error),) = executor.map_frame_tasks(
        _repetition_task, [job], [original.frame], shared
    )
    if done is None:
        done = _store_synthesis(syn, result, synthesised, cache)
    finished = {u.index: out for u, out in zip(todo, evaluated, strict=False)}
    outputs = [
        _store_output(*finished[u.index], *_unit_paths(cache, u)) if u.index in finished else out
        for u, out in zip(group.units, outputs, strict=True)
    ]
    if error is not None:
        raise error
    return [done, *outputs]  # type: ignore[list-item]


class _Progress:
    """``[i/N] label: state`` lines on stderr, numbered over every unit of the run; a computed
    unit's state is its seconds and the run's estimated time left (at the rate of the units
    computed so far), a reused one's ``cached``."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.total, self.enabled, self.done, self.cached = total, enabled, 0, 0
        self.start = time.perf_counter()

    def report(self, label: str, seconds: float, cached: bool) -> None:
        self.done += 1
        self.cached += cached
        if not self.enabled:
            return
        if cached:
            state = "cached"
        else:
            left = (time.perf_counter() - self.start) / (self.done - self.cached) * (self.total - self.done)
            state = f"{seconds:.2f} s, {dt.timedelta(seconds=round(left))} left"
        print(f"[{self.done}/{self.total}] {label}: {state}", file=sys.stderr, flush=True)


def _run_all(
    items: Sequence[Item],
    work: Callable[[Item], Out],
    where: Callable[[Item], str],
    concurrency: int,
    report: Callable[[Item, Out], None],
) -> list[Out]:
    """Run ``work`` on every item, ``concurrency`` at a time; the outputs in item order, each
    passed to ``report`` when it arrives. Errors name the item (``where``)."""
    done: dict[int, Out] = {}
    pool = ThreadPoolExecutor(max_workers=concurrency)
    futures = {pool.submit(work, u): i for i, u in enumerate(items)}
    try:
        for f in as_completed(futures):
            i = futures[f]
            try:
                done[i] = f.result()
            except PipelineError as e:
                raise type(e)(f"{where(items[i])}: {e}") from e
            except Exception as e:
                raise PipelineError(f"{where(items[i])} failed: {type(e).__name__}: {e}") from e
            report(items[i], done[i])
    except KeyboardInterrupt:
        # Ctrl-C or SIGTERM: start nothing more and do not wait for the running units (they stop
        # with the cluster); finished units stay cached for the next run
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    except BaseException:
        pool.shutdown(cancel_futures=True)  # after an error the running units finish (and are cached)
        raise
    pool.shutdown()
    return [done[i] for i in range(len(items))]


def _versions() -> dict[str, str]:
    import dask
    import distributed
    import numpy
    import pyarrow
    import scipy
    import sklearn

    return {
        "sdc-pipeline": code_version(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "dask": dask.__version__,
        "distributed": distributed.__version__,
        "pandas": pd.__version__,
        "numpy": numpy.__version__,
        "pyarrow": pyarrow.__version__,
        "scipy": scipy.__version__,
        "scikit-learn": sklearn.__version__,
    }


@dataclass
class RunOutcome:
    """What a run produced (before or after :func:`write_run` wrote its folder)."""

    run_id: str
    out_dir: Path
    results: pd.DataFrame
    summaries: dict[str, Any]
    manifest: dict[str, Any]
    inputs: TaskInputs
    #: release folder in the run folder -> the synthesis unit's cached release it copies
    releases: dict[Path, Path] = field(default_factory=dict)


#: in ``<out>/.units``: the task the run folder belongs to
OWNER_FILE = "task.json"
#: files of a run folder that a run writes only on request: removed when a rerun does not
STALE_FILES = ("report.html", "gates.json")


def folder_owner(out: Path) -> str | None:
    """The name of the task whose run folder ``out`` is (its owner file, else its manifest)."""
    for f in (out / ".units" / OWNER_FILE, out / "manifest.json"):
        if f.is_file():
            try:
                return str(json.loads(f.read_text(encoding="utf-8"))["task"])
            except (OSError, ValueError, KeyError):
                continue
    return None


def check_folder_owner(out: Path, task: LoadedTask) -> None:
    """A run folder belongs to one task: refuse to run another task into it.

    Raises
    ------
    TaskError
        ``out`` is the run folder of another task (named).
    """
    owner = folder_owner(out)
    if owner is not None and owner != task.spec.name:
        raise TaskError(
            f"{out} is the run folder of task {owner!r}; task {task.spec.name!r} ({task.path}) needs another "
            "folder (--out or 'output:')"
        )


def _remove_stale(out: Path, written: set[str], releases: Iterable[Path]) -> None:
    """Remove what an earlier run of the task left and this one did not write: the optional files
    and release folders (``<root>/<dataset>/<source>/rep<r>``) of syntheses no longer in the task."""
    for name in STALE_FILES:
        if name not in written:
            (out / name).unlink(missing_ok=True)
    keep = {Path(r) for r in releases}
    for root in {out / "synthesis", *(r.parent.parent.parent for r in keep)}:
        for rep in root.glob("*/*/rep*") if root.is_dir() else []:
            if rep.is_dir() and rep not in keep:
                shutil.rmtree(rep)
        for d in [*sorted(root.glob("*/*")), *sorted(root.glob("*")), root]:
            if d.is_dir() and d.name != ".units" and not any(d.iterdir()):
                d.rmdir()


def check_writable_folder(path: str | Path, what: str) -> None:
    """Fail before any work when ``path`` cannot be a folder this process writes (nothing is created).

    Raises
    ------
    TaskError
        ``path`` (or the first existing folder above it) is a file or not writable.
    """
    import os

    p = Path(path).absolute()
    existing = next(q for q in [p, *p.parents] if q.exists())
    if not existing.is_dir():
        raise TaskError(f"{what} {path}: {existing} is a file, not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise TaskError(f"{what} {path}: {existing} is not writable")


def default_out_dir(task: LoadedTask) -> Path:
    return Path(task.spec.output) if task.spec.output else Path("results") / task.spec.name


def _with_unit_columns(table: pd.DataFrame, task: LoadedTask, run_id: str, u: Unit | SynthesisUnit) -> pd.DataFrame:
    out = table.copy()
    out.insert(0, "task", task.spec.name)
    out.insert(1, "run_id", run_id)
    out.insert(2, "dataset", u.dataset)
    out.insert(3, "source", u.source or "")
    out.insert(4, "repetition", u.repetition)
    out.insert(5, "family", u.family)
    out.insert(6, "measure_name", u.measure_name)
    return out


def execute_task(
    task: LoadedTask,
    cluster: str | Path | dict[str, Any] | None = None,
    out_dir: str | Path | None = None,
    progress: bool = True,
    measures: bool = True,
    release_dir: str | Path | None = None,
    history: str | Path | None = None,
) -> RunOutcome:
    """Run every unit of ``task`` (its syntheses, then, if ``measures``, its measure units) on
    the configured cluster; cache each unit under ``<out>/.units``; write nothing else.

    :func:`write_run` writes the run folder.  ``release_dir`` (default ``<out>/synthesis``) is
    where the folder will hold each synthesis's release, as ``<dataset>/<source>/rep<r>``.
    ``history`` (default: the task's) is the results history whose privacy-budget spend counts
    against the task's ``privacy_budget`` cap.

    Raises
    ------
    PipelineError
        For invalid inputs (before any work starts) or a failed unit (finished units stay
        cached for the next run).
    """
    from pipeline.cluster import connect, describe

    cluster_cfg = _cluster_config(task, cluster)
    out = Path(out_dir) if out_dir is not None else default_out_dir(task)
    check_writable_folder(out, "output folder")
    check_folder_owner(out, task)
    releases_to = Path(release_dir) if release_dir is not None else out / "synthesis"
    started = dt.datetime.now(dt.UTC)
    run_id = started.strftime("%Y%m%dT%H%M%S%fZ")
    t_start = time.perf_counter()
    with connect(cluster_cfg.model_dump()) as client:
        executor = task_executor(task, client)
        inputs = read_inputs(task, with_sources=measures)
        units = list(expand(task, inputs.hashes)) if measures else []
        if measures and not units:
            raise TaskError(f"{task.path}: the task expands to no unit of work (check 'datasets'/'sources' filters)")
        budget = planned_spend(task, inputs, history if history is not None else task.spec.history)
        persist_inputs(inputs, executor)
        if units:
            stand_in_syntheses(task, inputs, executor)
            validate_units(task, units, inputs, executor, {s.key for s in inputs.syntheses})
        cache = out / ".units"
        cache.mkdir(parents=True, exist_ok=True)
        atomic_write_text(json.dumps({"task": task.spec.name, "task_file": str(task.path)}), cache / OWNER_FILE)
        count = _Progress(len(inputs.syntheses) + len(units), progress)

        def report(u: Unit | SynthesisUnit, out: UnitOutput) -> None:
            count.report(u.label, out[2], out[3])

        groups = repetition_groups(inputs, units, executor)
        in_groups = {g.synthesis.key for g in groups}
        alone = [s for s in inputs.syntheses if s.key not in in_groups]
        synthesised: dict[SourceKey, UnitOutput] = dict(
            zip(
                [s.key for s in alone],
                _run_all(
                    alone,
                    lambda u: _run_synthesis(u, inputs.originals[u.dataset], cache, executor),
                    lambda u: f"{task.path}: {u.where}: synthesise",
                    task.spec.concurrency,
                    report,
                ),
                strict=True,
            )
        )
        if units and alone:
            for s in alone:
                inputs.synthetic[s.key] = _against_synthesised(inputs.originals[s.dataset], synthesised_sets(s, cache))
            persist_inputs(inputs, executor, [s.key for s in alone])
            keys = {s.key for s in alone}
            validate_units(task, [u for u in units if (u.dataset, u.source, u.repetition) in keys], inputs, executor)

        def report_group(g: RepetitionGroup, outs: list[UnitOutput]) -> None:
            for u, out in zip((g.synthesis, *g.units), outs, strict=True):
                report(u, out)

        evaluated: dict[int, UnitOutput] = {}
        for g, outs in zip(
            groups,
            _run_all(
                groups,
                lambda g: _run_repetition(task, g, inputs, cache, executor),
                lambda _: str(task.path),
                task.spec.concurrency,
                report_group,
            ),
            strict=True,
        ):
            synthesised[g.synthesis.key] = outs[0]
            evaluated.update(zip([u.index for u in g.units], outs[1:], strict=True))
        rest = [u for u in units if u.index not in evaluated]
        evaluated.update(
            zip(
                [u.index for u in rest],
                _run_all(
                    rest,
                    lambda u: _evaluate_unit(u, inputs, cache, executor),
                    lambda u: f"{task.path}: measure {u.label}",
                    task.spec.concurrency,
                    report,
                ),
                strict=True,
            )
        )
    tables = []
    summaries: dict[str, Any] = {}
    timings: dict[str, dict[str, Any]] = {}
    # measure rows in unit order, then the syntheses' rows
    done: list[tuple[Unit | SynthesisUnit, UnitOutput]] = [
        *((u, evaluated[u.index]) for u in units),
        *((s, synthesised[s.key]) for s in inputs.syntheses),
    ]
    for u, (table, summary, seconds, cached) in done:
        tables.append(_with_unit_columns(table, task, run_id, u))
        summaries[u.label] = summary
        timings[u.label] = {"seconds": round(seconds, 4), "cached": cached, "fingerprint": u.fingerprint}
        # the IPF fit's own time (not a row: tables of two runs compare equal); a partial synthesis has no fit
        if isinstance(u, SynthesisUnit) and "fit" in summary:
            timings[u.label]["ipf_elapsed_s"] = round(float(summary["fit"]["elapsed_s"]), 4)
    releases = {
        releases_to / s.dataset / s.source / f"rep{s.repetition}": synthesis_folder(cache, s) / "release"
        for s in inputs.syntheses
    }
    results = pd.concat(tables, ignore_index=True)[RESULT_COLUMNS]
    manifest = {
        "run_id": run_id,
        "task": task.spec.name,
        "task_file": str(task.path),
        "task_spec": task.spec.model_dump(mode="json", by_alias=True),
        "started_utc": started.isoformat(),
        "seconds": round(time.perf_counter() - t_start, 3),
        "cluster": describe(cluster_cfg),
        "versions": _versions(),
        "seed": task.spec.seed,
        "units": timings,
        "releases": {s.label: str(dest) for s, dest in zip(inputs.syntheses, releases, strict=True)},
        "privacy_budget": budget,
        "rows": len(results),
    }
    return RunOutcome(run_id, out, results, summaries, manifest, inputs, releases)


def _publish(release: Path, dest: Path) -> None:
    """Copy a cached release into the run folder, replacing an older copy (a half-copied folder
    never takes its place)."""
    with atomic_folder(dest) as tmp:
        shutil.copytree(release, tmp, dirs_exist_ok=True)


def write_run(
    outcome: RunOutcome,
    report: bool = True,
    extra_sections: Sequence[str] = (),
    extra_files: Mapping[str, str] | None = None,
) -> None:
    """Write the run folder: results, summary, the syntheses' releases, ``extra_files`` (name ->
    text, e.g. ``gates.json``), the report (with ``extra_sections``) and, last, the manifest."""
    out = outcome.out_dir
    atomic_write_parquet(outcome.results, out / "results.parquet")
    atomic_write_text(outcome.results.to_csv(index=False), out / "results.csv")
    atomic_write_text(json.dumps(jsonable(outcome.summaries), indent=1), out / "summary.json")
    for dest, release in outcome.releases.items():
        _publish(release, dest)
    for name, text in (extra_files or {}).items():
        atomic_write_text(text, out / name)
    if report:
        from pipeline.report.html import write_report

        write_report(outcome, out / "report.html", extra_sections=list(extra_sections))
    _remove_stale(out, {*(extra_files or {}), *(["report.html"] if report else [])}, outcome.releases)
    atomic_write_text(json.dumps(jsonable(outcome.manifest), indent=1), out / "manifest.json")


def run_task(
    task: LoadedTask,
    cluster: str | Path | dict[str, Any] | None = None,
    out_dir: str | Path | None = None,
    progress: bool = True,
    report: bool = True,
    history: str | Path | None = None,
) -> RunOutcome:
    """Run every unit of ``task`` on the configured cluster and write the run folder.

    ``history``: the results history the privacy-budget cap is checked against (default: the task's).

    Raises
    ------
    PipelineError
        For invalid inputs (before any result is written) or a failed unit (finished units
        stay cached for the next run; no results file is written for a failed run).
    """
    outcome = execute_task(task, cluster, out_dir, progress, history=history)
    write_run(outcome, report=report)
    return outcome


def validate_task(task: LoadedTask) -> list[Unit | SynthesisUnit]:
    """Check a task without running it; return its units (syntheses first).

    Reads the data of file and demo sources and runs every measure unit's checks — the same as
    a run — on them; a synthesised source is checked against the schema its synthesis will
    have (:func:`~pipeline.synth.task.synthesised_schema`), so nothing is synthesised. The
    task's privacy-budget cap is checked against its history, as a run would.

    Raises
    ------
    PipelineError
        The first problem found, naming the task file, the measure and the data.
    """
    executor = task_executor(task)
    inputs = read_inputs(task)
    persist_inputs(inputs, executor)  # read once for all checks, as a run does
    units = list(expand(task, inputs.hashes))
    if not units:
        raise TaskError(f"{task.path}: the task expands to no unit of work (check 'datasets'/'sources' filters)")
    planned_spend(task, inputs, task.spec.history)
    stand_in_syntheses(task, inputs, executor)
    validate_units(task, units, inputs, executor, {s.key for s in inputs.syntheses})
    return [*inputs.syntheses, *units]


def synthesise_task(
    task: LoadedTask,
    cluster: str | Path | dict[str, Any] | None = None,
    out_dir: str | Path | None = None,
    progress: bool = True,
) -> RunOutcome:
    """Only synthesise: run (or reuse) every synthesis unit of ``task`` and write the folder —
    each release in ``<out>/<dataset>/<source>/rep<r>/`` (synthetic sets, released margins, fit
    report), the syntheses' rows in ``results.parquet``/``.csv``, ``summary.json`` and, last,
    ``manifest.json``."""
    if not any(s.synthesise is not None for d in task.spec.datasets for s in d.synthetic):
        raise TaskError(f"{task.path}: no synthetic source has a 'synthesise' section")
    out = Path(out_dir) if out_dir is not None else default_out_dir(task) / "synthesis"
    outcome = execute_task(task, cluster, out, progress, measures=False, release_dir=out)
    write_run(outcome, report=False)
    return outcome
