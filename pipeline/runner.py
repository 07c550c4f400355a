"""Run a task: read its inputs, run its units of work on the Dask cluster, write the run folder.

The entry points (:func:`execute_task`, :func:`run_task`, :func:`validate_task`,
:func:`synthesise_task`); the work is in :mod:`pipeline.run`.

Units of work (fingerprints: :mod:`pipeline.tasks`):

* a :class:`~pipeline.tasks.SynthesisUnit` per synthesised source and repetition, carrying its
  :class:`~pipeline.synth.base.Synthesiser`; cached under ``<out>/.units/synthesis/<fingerprint>/``
  (:mod:`pipeline.run.cache`). The measure units on that source read the cached Parquet sets back.
* a measure :class:`~pipeline.tasks.Unit` per measure setting, dataset, source and
  repetition, carrying its :class:`~pipeline.evaluation.base.Measure`, cached as
  ``<out>/.units/<fingerprint>.parquet`` + ``.json``.

A synthesis that collects an original the executor keeps in memory runs together with the
measure units on its sets as one task on a worker (:mod:`pipeline.run.groups`). Other
syntheses run first, then the measure units on their sets, each unit one Dask computation.

A re-run (e.g. after an interruption) reuses every finished unit — syntheses included — so it
skips finished work and produces the same table.  Before any work, every measure unit is
checked (:meth:`Measure.check`): on the data of file and demo sources, and for synthesised
sources against the schema the synthesis will have (:meth:`Synthesiser.schema`), which needs no
synthesis; ``validate`` runs exactly these checks. The run folder: :mod:`pipeline.run.folder`.
"""

from __future__ import annotations

import datetime as dt
import platform
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd

from pipeline import notices
from pipeline.errors import TaskError
from pipeline.evaluation.execution import Executor
from pipeline.results import RESULT_COLUMNS
from pipeline.run.cache import (
    UnitOutput,
    cached_outputs,
    synthesis_folder,
)
from pipeline.run.folder import (
    CACHE,
    LOCK_FILE,
    OWNER_FILE,
    RunOutcome,
    check_run_folder,
    check_writable_folder,
    default_out_dir,
    folder_owner,
    run_folder_for,
    run_names,
    write_run,
)
from pipeline.run.inputs import (
    persist_inputs,
    planned_spend,
    read_inputs,
    stand_in_syntheses,
)
from pipeline.run.integrity import (
    CHECKED_FILE,
    check_inputs,
    overlap_rows,
)
from pipeline.run.notices import run_warnings, tell_warnings
from pipeline.run.units import validate_units
from pipeline.run.work import Run, compute, reuse
from pipeline.tasks import LoadedTask, SynthesisUnit, Unit, code_version, expand

__all__ = [
    "RunOutcome",
    "check_writable_folder",
    "default_out_dir",
    "execute_task",
    "run_task",
    "synthesise_task",
    "task_executor",
    "validate_task",
    "write_run",
]


def _cluster_config(task: LoadedTask, cluster: str | Path | dict[str, Any] | None) -> Any:
    """The cluster to use: the command line's, else the task's (relative to the task file), else local."""
    from pipeline.cluster import load_cluster_config

    if cluster is None and task.spec.cluster:
        cluster = task.resolve(task.spec.cluster)
    return load_cluster_config(cluster)


def task_executor(task: LoadedTask, client: Any = None) -> Executor:
    """The run's one executor: the task's ``execution`` settings on ``client``."""
    return Executor(client, **task.spec.execution.model_dump())


#: the distributions whose versions a manifest records
LIBRARIES = ("dask", "distributed", "pandas", "numpy", "pyarrow", "scipy")


def _versions() -> dict[str, str]:
    """The versions of the package, Python, the platform and the libraries the results depend on
    (from the installed distributions' metadata: no import only to read a version)."""
    from importlib.metadata import version

    return {
        "sdc-pipeline": code_version(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        **{name: version(name) for name in LIBRARIES},
    }


def _with_unit_columns(table: pd.DataFrame, task: LoadedTask, run_id: str, u: Unit | SynthesisUnit) -> pd.DataFrame:
    out = table.copy()
    for i, (column, value) in enumerate(
        [
            ("task", task.spec.name),
            ("run_id", run_id),
            ("dataset", u.dataset),
            ("source", u.source or ""),
            ("repetition", u.repetition),
            ("family", u.family),
            ("type", u.type),
            ("measure_name", u.measure_name),
        ]
    ):
        out.insert(i, column, value)
    return out


def execute_task(
    task: LoadedTask,
    cluster: str | Path | dict[str, Any] | None = None,
    out_dir: str | Path | None = None,
    progress: bool = True,
    measures: bool = True,
    release_dir: str | Path | None = None,
    history: str | Path | None = None,
    force: bool = False,
) -> RunOutcome:
    """Run every unit of ``task`` (its syntheses, then, if ``measures``, its measure units) on
    the configured cluster; cache each unit under ``<out>/.units``; write nothing else.

    :func:`write_run` writes the run folder.  ``release_dir`` (default ``<out>/synthesis``) is
    where the folder will hold each synthesis's release, as ``<dataset>/<source>/rep<r>``.
    ``history`` (default: the task's) is the results history whose privacy-budget spend counts
    against the task's ``privacy_budget`` cap. ``force``: run into a non-empty folder that is
    not the task's run folder (nothing in it that a run of the task did not write is removed or
    overwritten; :func:`~pipeline.run.folder.check_run_folder`). The run holds the folder's lock.

    Raises
    ------
    PipelineError
        For invalid inputs or a folder the run may not write into or another run holds (before
        any work starts) or a failed unit (finished units stay cached for the next run).
    """
    out = Path(out_dir) if out_dir is not None else default_out_dir(task)
    releases_to = Path(release_dir) if release_dir is not None else out / "synthesis"
    with run_folder_for(task, out, force, releases_to):
        claimed = (out / CACHE / OWNER_FILE).exists()
        try:
            return _execute(task, cluster, out, progress, measures, releases_to, history)
        except BaseException:
            if not claimed:
                _unclaim_unused(out / CACHE)
            raise


def _unclaim_unused(cache: Path) -> None:
    """After a failed run that claimed the folder: its claim and its record of checked inputs
    removed when no unit finished (nothing to resume), so that the folder it made goes with its
    lock (no partial output); finished units stay with the claim that lets a rerun reuse them."""
    marks = (cache / OWNER_FILE, cache / CHECKED_FILE)
    if cache.is_dir() and all(p.name in {LOCK_FILE, *(m.name for m in marks)} for p in cache.iterdir()):
        for mark in marks:
            mark.unlink(missing_ok=True)


def _execute(
    task: LoadedTask,
    cluster: str | Path | dict[str, Any] | None,
    out: Path,
    progress: bool,
    measures: bool,
    releases_to: Path,
    history: str | Path | None,
) -> RunOutcome:
    from pipeline.cluster import connect, describe

    cluster_cfg = _cluster_config(task, cluster)
    started = dt.datetime.now(dt.UTC)
    run_id = started.strftime("%Y%m%dT%H%M%S%fZ")
    t_start = time.perf_counter()
    # the inputs are read (lazily; a holdout split counts its records) on Dask's local threads
    # before any cluster starts: their fingerprints say whether there is work for one
    local = task_executor(task)
    inputs = read_inputs(task, local, with_sources=measures)
    units = list(expand(task, inputs.hashes)) if measures else []
    if measures and not units:
        raise TaskError(f"{task.path}: the task expands to no unit of work (check 'datasets'/'sources' filters)")
    cache = out / ".units"
    reused = cached_outputs(inputs.syntheses, units, cache)
    # warnings outside the units (each keeps its own: pipeline.notices); those of the checks are
    # told before the work starts
    told: list[str] = []
    with notices.collected() as at_checks:
        run = Run(task, inputs, units, cache, progress, history, told)
        if reused is not None:
            work = reuse(run, reused, local)
        else:
            with connect(cluster_cfg.model_dump()) as client:
                work = compute(run, task_executor(task, client))
    tables = []
    summaries: dict[str, Any] = {}
    timings: dict[str, dict[str, Any]] = {}
    # measure rows in unit order, then the syntheses' rows
    done: list[tuple[Unit | SynthesisUnit, UnitOutput]] = [
        *((u, work.evaluated[u.index]) for u in units),
        *((s, work.synthesised[s.key]) for s in inputs.syntheses),
    ]
    for u, output in done:
        tables.append(_with_unit_columns(output.table, task, run_id, u))
        summaries[u.label] = (
            {**output.summary, "warnings": list(output.warnings)} if output.warnings else output.summary
        )
        timings[u.label] = {"seconds": round(output.seconds, 4), "cached": output.cached, "fingerprint": u.fingerprint}
        # the IPF fit's own time (not a row: tables of two runs compare equal); a partial synthesis has no fit
        if isinstance(u, SynthesisUnit) and "fit" in output.summary:
            timings[u.label]["ipf_elapsed_s"] = round(float(output.summary["fit"]["elapsed_s"]), 4)
    warned = run_warnings({u.label: out.warnings for u, out in done}, at_checks)
    tell_warnings([w for w in warned if w["warning"] not in told])
    releases = {
        releases_to / s.dataset / s.source / f"rep{s.repetition}": synthesis_folder(cache, s) / "release"
        for s in inputs.syntheses
    }
    # the overlap of each holdout and file source with the original (pipeline.run.integrity), last
    tables.append(overlap_rows(work.overlaps, task.spec.name, run_id))
    results = pd.concat(tables, ignore_index=True)[RESULT_COLUMNS]
    manifest = {
        "run_id": run_id,
        "task": task.spec.name,
        "task_file": str(task.path),
        "task_spec": task.spec.model_dump(mode="json", by_alias=True),
        "started_utc": started.isoformat(),
        "seconds": round(time.perf_counter() - t_start, 3),
        "cluster": describe(cluster_cfg),
        # False when every unit came from the cache: no cluster was started
        "cluster_started": work.cluster_started,
        "versions": _versions(),
        "seed": task.spec.seed,
        "units": timings,
        "releases": {s.label: str(dest) for s, dest in zip(inputs.syntheses, releases, strict=True)},
        "privacy_budget": work.budget,
        # per dataset with a holdout: file or split settings, record counts, fingerprint (no values)
        "holdouts": inputs.holdout_records,
        # the key-block layouts made (the task's, and any a measure needed besides)
        "layouts": work.layouts,
        "rows": len(results),
        # every warning of the run with the units that raised it (pipeline.notices; no values)
        "warnings": warned,
    }
    return RunOutcome(run_id, out, results, summaries, manifest, inputs, releases)


def run_task(
    task: LoadedTask,
    cluster: str | Path | dict[str, Any] | None = None,
    out_dir: str | Path | None = None,
    progress: bool = True,
    report: bool = True,
    history: str | Path | None = None,
    force: bool = False,
) -> RunOutcome:
    """Run every unit of ``task`` on the configured cluster and write the run folder.

    ``history``: the results history the privacy-budget cap is checked against (default: the task's);
    ``force``: run into a non-empty folder that is not the task's (see :func:`execute_task`).

    Raises
    ------
    PipelineError
        For invalid inputs (before any result is written) or a failed unit (finished units
        stay cached for the next run; no results file is written for a failed run).
    """
    out = Path(out_dir) if out_dir is not None else default_out_dir(task)
    with run_folder_for(task, out, force, optional=["report.html"] if report else []):
        outcome = execute_task(task, cluster, out, progress, history=history, force=force)
        write_run(outcome, report=report)
    return outcome


class ValidatedUnits(list[Unit | SynthesisUnit]):
    """The units of a valid task (syntheses first) and the plan of each synthesised source for
    people (``"<dataset>/<source>"`` -> lines; :meth:`~pipeline.synth.base.Synthesiser.plan_lines`)."""

    def __init__(self, units: list[Unit | SynthesisUnit], plans: dict[str, list[str]]) -> None:
        super().__init__(units)
        self.plans = plans


def validate_task(task: LoadedTask, out_dir: str | Path | None = None, force: bool = False) -> ValidatedUnits:
    """Check a task without running it; return its units (syntheses first).

    Reads the data of file and demo sources and runs every measure unit's checks — the same as
    a run — on them; a synthesised source is checked against the schema its synthesis will
    have (:meth:`~pipeline.synth.base.Synthesiser.schema`), so nothing is synthesised. The
    task's privacy-budget cap is checked against its history, and its run folder (``out_dir``,
    default the task's) as a run with ``force`` would check it.

    The units carry the plan of each synthesised source (:class:`ValidatedUnits`).

    Raises
    ------
    PipelineError
        The first problem found, naming the task file, the measure and the data.
    """
    if "distributed" not in sys.modules:
        # no client can be active: Dask's local threads, named so that Dask does not load distributed
        # (about a second) to look for one
        import dask
        import dask.threaded

        with dask.config.set(scheduler=dask.threaded.get):
            return _validate(task, out_dir, force)
    return _validate(task, out_dir, force)


def _folder_to_validate(task: LoadedTask) -> Path:
    """The task's run folder (``output``), or tonight's, ``<output>/<date>/``, when it holds the
    nightly run folders of the task (a nightly task writes one per date, not ``<output>`` itself)."""
    out = default_out_dir(task)
    nights = out.is_dir() and any(
        _is_date(p.name) and folder_owner(p) == task.spec.name for p in out.iterdir() if p.is_dir()
    )
    return out / dt.datetime.now(dt.UTC).date().isoformat() if nights else out


def _is_date(name: str) -> bool:
    try:
        return dt.date.fromisoformat(name).isoformat() == name
    except ValueError:
        return False


def _validate(task: LoadedTask, out_dir: str | Path | None, force: bool) -> ValidatedUnits:
    out = Path(out_dir) if out_dir is not None else _folder_to_validate(task)
    _cluster_config(task, None)  # the task's cluster config, read as a run reads it
    check_run_folder(out, task, force, run_names(out, out / "synthesis", [], ["report.html"]))
    executor = task_executor(task)
    inputs = read_inputs(task, executor)
    persist_inputs(inputs, executor)  # read once for all checks, as a run does
    check_inputs(task, inputs, executor)
    units = list(expand(task, inputs.hashes))
    if not units:
        raise TaskError(f"{task.path}: the task expands to no unit of work (check 'datasets'/'sources' filters)")
    planned_spend(task, inputs, task.history, executor)
    stand_in_syntheses(task, inputs, executor)
    validate_units(task, units, inputs, executor, {s.key for s in inputs.syntheses})
    plans = {
        f"{s.dataset}/{s.source}": s.synthesiser.plan_lines(inputs.originals[s.dataset].schema)
        for s in inputs.syntheses
    }
    return ValidatedUnits([*inputs.syntheses, *units], {where: lines for where, lines in plans.items() if lines})


def synthesise_task(
    task: LoadedTask,
    cluster: str | Path | dict[str, Any] | None = None,
    out_dir: str | Path | None = None,
    progress: bool = True,
    force: bool = False,
    history: str | Path | None = None,
) -> RunOutcome:
    """Only synthesise: run (or reuse) every synthesis unit of ``task`` and write the folder —
    each release in ``<out>/<dataset>/<source>/rep<r>/`` (synthetic sets, released margins, fit
    report; owner-only), the syntheses' rows in ``results.parquet``/``.csv``, ``summary.json``
    and, last, ``manifest.json``. ``force``: as for :func:`execute_task`. ``history`` (default:
    the task's) keeps the privacy ledger that records the DP releases' spend and caps it."""
    if not any(s.synthesise is not None for d in task.spec.datasets for s in d.synthetic):
        raise TaskError(f"{task.path}: no synthetic source has a 'synthesise' section")
    out = Path(out_dir) if out_dir is not None else default_out_dir(task) / "synthesis"
    with run_folder_for(task, out, force, out):
        outcome = execute_task(
            task, cluster, out, progress, measures=False, release_dir=out, history=history, force=force
        )
        write_run(outcome, report=False)
    return outcome
