"""The run folder: who owns it, what a rerun removes, and writing it (the manifest last).

``results.parquet`` / ``results.csv``  the tidy table (:data:`pipeline.results.RESULT_COLUMNS`)
``summary.json``                      every unit's JSON summary, keyed by unit label
``synthesis/<dataset>/<source>/rep<r>/``  each synthesis's release (copied from the cache)
``report.html``                       the self-contained report (plots embedded)
extra files (``gates.json`` of a nightly run)
``manifest.json``                     task, cluster config, versions, seeds, timings, fingerprints
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from pipeline.errors import TaskError
from pipeline.results import atomic_folder, atomic_write_parquet, atomic_write_text, jsonable
from pipeline.run.inputs import TaskInputs
from pipeline.tasks import LoadedTask

#: in ``<out>/.units``: the task the run folder belongs to
OWNER_FILE = "task.json"
#: files of a run folder that a run writes only on request: removed when a rerun does not
STALE_FILES = ("report.html", "gates.json")


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


def default_out_dir(task: LoadedTask) -> Path:
    return Path(task.spec.output) if task.spec.output else Path("results") / task.spec.name


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


def claim_folder(cache: Path, task: LoadedTask) -> None:
    """Mark ``cache`` (``<out>/.units``) as the task's."""
    cache.mkdir(parents=True, exist_ok=True)
    atomic_write_text(json.dumps({"task": task.spec.name, "task_file": str(task.path)}), cache / OWNER_FILE)


def check_writable_folder(path: str | Path, what: str) -> None:
    """Fail before any work when ``path`` cannot be a folder this process writes (nothing is created).

    Raises
    ------
    TaskError
        ``path`` (or the first existing folder above it) is a file or not writable.
    """
    p = Path(path).absolute()
    existing = next(q for q in [p, *p.parents] if q.exists())
    if not existing.is_dir():
        raise TaskError(f"{what} {path}: {existing} is a file, not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise TaskError(f"{what} {path}: {existing} is not writable")


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
