"""Run a task: read inputs once, expand units, evaluate them on the Dask client, write results.

Outputs in the run folder (each file written atomically, the manifest last):

``results.parquet`` / ``results.csv``  the tidy table (:data:`pipeline.results.RESULT_COLUMNS`)
``summary.json``                      every unit's JSON summary, keyed by unit label
``manifest.json``                     task, cluster config, versions, seeds, timings, fingerprints
``report.html``                       the self-contained report (plots embedded)

Every unit's result is also cached under ``<out>/.units/<fingerprint>.*``; a re-run (e.g.
after an interruption) reuses them, so it skips finished work and produces the same table.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import platform
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from pipeline.data.compare import align_synthetic
from pipeline.data.dataset import Dataset, read_dataset
from pipeline.errors import PipelineError, TaskError
from pipeline.evaluation.base import Measure, canonical_json, setting_text
from pipeline.evaluation.data import EvalData, as_eval_data
from pipeline.evaluation.execution import Executor
from pipeline.measures import REGISTRY
from pipeline.results import RESULT_COLUMNS, atomic_write_parquet, atomic_write_text, check_tidy, jsonable
from pipeline.tasks import LoadedTask, MeasureSpec, Unit, code_version, content_hash, expand

log = logging.getLogger("pipeline")


@dataclass
class Inputs:
    """The data of a task, read once: originals, and synthetic sets per (dataset, source, repetition)."""

    originals: dict[str, Dataset] = field(default_factory=dict)
    #: (dataset, source, repetition) -> (original aligned to the source, synthetic sets)
    synthetic: dict[tuple[str, str, int], tuple[Dataset, list[Dataset]]] = field(default_factory=dict)
    hashes: dict[tuple[str, str | None, int], str] = field(default_factory=dict)
    synthesis: dict[tuple[str, str, int], Any] = field(default_factory=dict)


def _fingerprint(datasets: list[Dataset]) -> str:
    """Content hash of the data files plus the schemas they are read with (levels, missing codes)."""
    schemas = json.dumps([d.schema.to_dict() for d in datasets], sort_keys=True)
    return content_hash([Path(d.source) for d in datasets]) + schemas


def _read_original(task: LoadedTask, spec: Any) -> Dataset:
    from pipeline.datasets import load_demo

    o = spec.original
    if o.demo is not None:
        ds = load_demo(o.demo)
    else:
        schema = task.resolve(o.schema_file) if o.schema_file else None
        ds = read_dataset(task.resolve(o.path), schema=schema, name=spec.name)
    if o.columns:
        ds = ds.select(o.columns)
    if o.missing_codes:
        ds = replace(ds, schema=ds.schema.with_missing_codes(o.missing_codes))
    return ds


def _read_source(task: LoadedTask, original: Dataset, src: Any) -> tuple[Dataset, list[Dataset]]:
    from pipeline.datasets import load_demo_synthetic

    if src.demo is not None:
        sets = load_demo_synthetic(src.demo)
    else:
        # a source's own schema gets the original's special missing codes; by default it is the original's
        schema = task.resolve(src.schema_file) if src.schema_file else original.schema
        codes = original.schema.cont_na if src.schema_file else None
        sets = [
            read_dataset(p, schema=schema, name=f"{src.name}_{i + 1}", missing_codes=codes)
            for i, p in enumerate(task.source_paths(src))
        ]
    original, sets, changes = align_synthetic(original, sets, src.compatibility)
    for c in changes:
        log.warning("aligned: %s", c)
    return original, sets


def synthesis_seed(task: LoadedTask, src: Any, repetition: int) -> int:
    """Seed of repetition r of a synthesiser: its own ``seed`` (else the task's) plus r."""
    base = src.synthesise.get("seed")
    return (task.spec.seed if base is None else int(base)) + repetition


def synthesise_source(
    task: LoadedTask, dataset: str, original: Dataset, src: Any, repetition: int
) -> tuple[Any, Dataset, list[Dataset]]:
    """Run repetition r of a source's coarsened-margins synthesiser; return its result, the original
    restricted to the synthesised variables (levels aligned with the synthetic output) and the sets."""
    from pipeline.synth.task import SynthesiseParams, synthesise

    params = SynthesiseParams.model_validate({**src.synthesise, "seed": synthesis_seed(task, src, repetition)})
    try:
        result = synthesise(original, params)
    except PipelineError as e:
        raise type(e)(f"{task.path}: dataset {dataset!r} source {src.name!r}: synthesise: {e}") from None
    sets = result.datasets(prefix=f"{src.name}_")
    # the synthetic sets hold the synthesised variables after SDC (merged levels, coded tails):
    # evaluate them against the original's same variables, levels aligned explicitly
    aligned, sets, _ = align_synthetic(original.select(result.schema.names), sets, "align")
    return result, aligned, sets


def _cluster_config(task: LoadedTask, cluster: str | Path | dict[str, Any] | None) -> Any:
    """The cluster to use: the command line's, else the task's (relative to the task file), else local."""
    from pipeline.cluster import load_cluster_config

    if cluster is None and task.spec.cluster:
        cluster = task.resolve(task.spec.cluster)
    return load_cluster_config(cluster)


def read_inputs(task: LoadedTask) -> Inputs:
    """Read every original and synthetic source of a task (synthesising where asked)."""
    inputs = Inputs()
    for d in task.spec.datasets:
        original = _read_original(task, d)
        h = _fingerprint([original])
        inputs.originals[d.name] = original
        inputs.hashes[(d.name, None, 0)] = h
        for src in d.synthetic:
            if src.synthesise is not None:
                for rep in range(task.spec.repetitions):
                    result, aligned, sets = synthesise_source(task, d.name, original, src, rep)
                    inputs.synthesis[(d.name, src.name, rep)] = result
                    inputs.synthetic[(d.name, src.name, rep)] = (aligned, sets)
                    inputs.hashes[(d.name, src.name, rep)] = h + json.dumps(
                        {"synthesise": src.synthesise, "seed": synthesis_seed(task, src, rep)}, sort_keys=True
                    )
            else:
                aligned, sets = _read_source(task, original, src)
                inputs.synthetic[(d.name, src.name, 0)] = (aligned, sets)
                inputs.hashes[(d.name, src.name, 0)] = h + _fingerprint(sets)
    return inputs


def persist_inputs(inputs: Inputs) -> None:
    """Read every input once into cluster memory, so that units share it instead of re-reading files."""
    import dask

    datasets = list(inputs.originals.values())
    for original, sets in inputs.synthetic.values():
        datasets += [original, *sets]
    unique = list({id(d.frame): d for d in datasets}.values())
    persisted = dask.persist(*[d.frame for d in unique])
    by_id = {id(d.frame): replace(d, frame=f) for d, f in zip(unique, persisted, strict=True)}
    inputs.originals = {k: by_id[id(v.frame)] for k, v in inputs.originals.items()}
    inputs.synthetic = {
        k: (by_id[id(o.frame)], [by_id[id(s.frame)] for s in sets]) for k, (o, sets) in inputs.synthetic.items()
    }


def _unit_data(unit: Unit, inputs: Inputs) -> tuple[Dataset, list[Dataset]]:
    if unit.source is None:
        return inputs.originals[unit.dataset], []
    return inputs.synthetic[(unit.dataset, unit.source, unit.repetition)]


def _unit_measure(unit: Unit) -> Measure:
    return REGISTRY[unit.measure.type].measure(unit.params)


def _unit_eval_data(unit: Unit, inputs: Inputs) -> EvalData:
    original, sets = _unit_data(unit, inputs)
    return as_eval_data(original, sets, require_synthetic=False)


def validate_units(task: LoadedTask, units: list[Unit], inputs: Inputs) -> None:
    """Run every unit's checks (the same :meth:`Measure.check` as a run) before any work starts."""
    for u in units:
        try:
            _unit_measure(u).check(_unit_eval_data(u, inputs))
        except PipelineError as e:
            raise TaskError(f"{task.path}: measure {u.measure.label!r} on {u.dataset!r}: {e}") from None


def unit_table(rows: list[Any], unit: Unit) -> pd.DataFrame:
    """A unit's rows as a tidy frame: the display setting and the structured params of each row
    (the unit's own parameters updated with the row's inner setting)."""
    frame = pd.DataFrame(
        {
            "setting": [";".join(x for x in (unit.setting, setting_text(r.params)) if x) for r in rows],
            "params": [canonical_json({**unit.params, **r.params}) for r in rows],
            "synthetic": [str(r.synthetic) for r in rows],
            "measure": [str(r.measure) for r in rows],
            "value": [float(r.value) for r in rows],
        }
    )
    return check_tidy(frame, unit.label)


def _evaluate_unit(
    unit: Unit, inputs: Inputs, cache: Path, executor: Executor
) -> tuple[pd.DataFrame, dict[str, Any], float, bool]:
    table_path = cache / f"{unit.fingerprint}.parquet"
    summary_path = cache / f"{unit.fingerprint}.json"
    if table_path.exists() and summary_path.exists():
        cached = json.loads(summary_path.read_text(encoding="utf-8"))
        return pd.read_parquet(table_path), cached["summary"], cached["seconds"], True
    measure = _unit_measure(unit)
    data = _unit_eval_data(unit, inputs)
    t0 = time.perf_counter()
    result = measure.evaluate(data, executor)
    seconds = time.perf_counter() - t0
    table = unit_table(result.rows(), unit)
    summary = jsonable(result.to_dict())
    atomic_write_parquet(table, table_path)
    atomic_write_text(json.dumps({"summary": summary, "seconds": seconds}), summary_path)
    return table, summary, seconds, False


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
    """What a run produced."""

    run_id: str
    out_dir: Path
    results: pd.DataFrame
    summaries: dict[str, Any]
    manifest: dict[str, Any]
    inputs: Inputs


def default_out_dir(task: LoadedTask) -> Path:
    return Path(task.spec.output) if task.spec.output else Path("results") / task.spec.name


def run_task(
    task: LoadedTask,
    cluster: str | Path | dict[str, Any] | None = None,
    out_dir: str | Path | None = None,
    progress: bool = True,
    report: bool = True,
) -> RunOutcome:
    """Run every unit of ``task`` on the configured cluster and write the run folder.

    Raises
    ------
    PipelineError
        For invalid inputs (before any result is written) or a failed unit (finished units
        stay cached for the next run; no results file is written for a failed run).
    """
    from pipeline.cluster import connect, describe

    cluster_cfg = _cluster_config(task, cluster)
    out = Path(out_dir) if out_dir is not None else default_out_dir(task)
    started = dt.datetime.now(dt.UTC)
    run_id = started.strftime("%Y%m%dT%H%M%S%fZ")
    t_start = time.perf_counter()
    with connect(cluster_cfg.model_dump()) as client:
        executor = Executor(client)
        inputs = read_inputs(task)
        units = list(expand(task, inputs.hashes))
        if not units:
            raise TaskError(f"{task.path}: the task expands to no unit of work (check 'datasets'/'sources' filters)")
        validate_units(task, units, inputs)
        persist_inputs(inputs)
        cache = out / ".units"
        cache.mkdir(parents=True, exist_ok=True)
        tables: dict[int, pd.DataFrame] = {}
        summaries: dict[str, Any] = {}
        timings: dict[str, dict[str, Any]] = {}
        with ThreadPoolExecutor(max_workers=task.spec.concurrency) as pool:
            futures = {pool.submit(_evaluate_unit, u, inputs, cache, executor): u for u in units}
            try:
                for done_count, f in enumerate(as_completed(futures), start=1):
                    u = futures[f]
                    try:
                        table, summary, seconds, cached = f.result()
                    except PipelineError as e:
                        raise type(e)(f"{task.path}: measure {u.label}: {e}") from e
                    except Exception as e:
                        raise PipelineError(f"{task.path}: measure {u.label} failed: {type(e).__name__}: {e}") from e
                    tables[u.index] = _with_unit_columns(table, task, run_id, u)
                    summaries[u.label] = summary
                    timings[u.label] = {"seconds": round(seconds, 4), "cached": cached, "fingerprint": u.fingerprint}
                    if progress:
                        state = "cached" if cached else f"{seconds:.2f} s"
                        print(f"[{done_count}/{len(units)}] {u.label}: {state}", file=sys.stderr, flush=True)
            except BaseException:
                for f in futures:
                    f.cancel()
                raise
    ordered = [tables[i] for i in sorted(tables)]
    for (dataset, source, rep), result in inputs.synthesis.items():
        label = f"synthesise {dataset}/{source}#{rep}"
        pseudo = Unit(-1, dataset, source, rep, SYNTHESIS_MEASURE, {}, "", "")
        ordered.append(_with_unit_columns(check_tidy(result.tidy(), label), task, run_id, pseudo))
        summaries[label] = jsonable(result.to_dict())
        result.write(out / "synthesis" / dataset / source / f"rep{rep}", overwrite=True)
    results = pd.concat(ordered, ignore_index=True)[RESULT_COLUMNS]
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
        "rows": len(results),
    }
    outcome = RunOutcome(run_id, out, results, summaries, manifest, inputs)
    write_run(outcome, report=report)
    return outcome


SYNTHESIS_MEASURE = MeasureSpec(type="synthesise")


def _family(u: Unit) -> str:
    return "synthesis" if u.measure is SYNTHESIS_MEASURE else REGISTRY[u.measure.type].family


def _with_unit_columns(table: pd.DataFrame, task: LoadedTask, run_id: str, u: Unit) -> pd.DataFrame:
    out = table.copy()
    if u.setting:
        out["setting"] = [f"{u.setting};{s}" if s else u.setting for s in out["setting"].tolist()]
    out.insert(0, "task", task.spec.name)
    out.insert(1, "run_id", run_id)
    out.insert(2, "dataset", u.dataset)
    out.insert(3, "source", u.source or "")
    out.insert(4, "repetition", u.repetition)
    out.insert(5, "family", _family(u))
    out.insert(6, "measure_name", u.measure.label)
    return out


def write_run(outcome: RunOutcome, report: bool = True) -> None:
    """Write results, summary, report and (last) the manifest of a finished run."""
    out = outcome.out_dir
    atomic_write_parquet(outcome.results, out / "results.parquet")
    atomic_write_text(outcome.results.to_csv(index=False), out / "results.csv")
    atomic_write_text(json.dumps(jsonable(outcome.summaries), indent=1), out / "summary.json")
    if report:
        from pipeline.report.html import write_report

        write_report(outcome, out / "report.html")
    atomic_write_text(json.dumps(jsonable(outcome.manifest), indent=1), out / "manifest.json")


def synthesise_task(
    task: LoadedTask, cluster: str | Path | dict[str, Any] | None = None, out_dir: str | Path | None = None
) -> list[Path]:
    """Only synthesise: write every ``synthesise`` source of ``task`` (each repetition) to
    ``<out>/<dataset>/<source>/rep<r>/`` — synthetic sets, released margins and the fit report."""
    from pipeline.cluster import connect

    sources = [(d, s) for d in task.spec.datasets for s in d.synthetic if s.synthesise is not None]
    if not sources:
        raise TaskError(f"{task.path}: no synthetic source has a 'synthesise' section")
    out = Path(out_dir) if out_dir is not None else default_out_dir(task) / "synthesis"
    written = []
    with connect(_cluster_config(task, cluster).model_dump()):
        originals = {d.name: _read_original(task, d) for d, _ in sources}
        for d, src in sources:
            for rep in range(task.spec.repetitions):
                result, _, _ = synthesise_source(task, d.name, originals[d.name], src, rep)
                written.append(result.write(out / d.name / src.name / f"rep{rep}", overwrite=True))
    return written
