"""The run folder: who owns it, what a run may write and remove there, its lock, and writing it.

``results.parquet`` / ``results.csv``  the tidy table (:data:`pipeline.results.RESULT_COLUMNS`)
``summary.json``                      every unit's JSON summary, keyed by unit label
``synthesis/<dataset>/<source>/rep<r>/``  each synthesis's release (copied from the cache; 0700/0600)
``report.html``                       the self-contained report (plots embedded)
extra files (``gates.json`` of a nightly run)
``manifest.json``                     task, cluster config, versions, seeds, timings, fingerprints and
                                      ``written``: every file and release folder the run wrote
``.units/``                           the units' caches (0700), the report's figures, the owner file, the lock

A run writes into a missing or empty folder, into its task's own run folder, or — with
``force`` — beside other files in a non-empty folder. It never removes or overwrites a path it
did not write: only what an earlier manifest of the same task lists (``written``) is replaced
or, when this run no longer writes it, removed; any other file with a name the run would write
is a refusal, ``force`` or not. Every path written or removed must resolve inside the folder.
The files are written to temporary names and published together, the manifest last, only
when all were written: a failure (a full disk) removes the temporaries and leaves the previous
run as it was. Once everything is staged, ``.units/publishing.json`` lists the temporaries and
their destinations; a run killed while it renames them (kill -9) is finished by the next run
that takes the folder's lock (:func:`recover_publishing`), before anything else, and the
temporaries a killed run left (``.<name>.sdc-tmp-<hex>`` beside the files and releases it was
writing) are removed then. A release folder is the run's as a whole, but a file of the user's
put inside one is never removed with it: the manifest records the files of each release
(``release_files``) and a folder holding anything else is a refusal, before any work.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from pipeline.errors import TaskError
from pipeline.lock import TAKEOVER_SUFFIX, exclusive
from pipeline.results import atomic_write_text, json_text, make_private
from pipeline.run.inputs import TaskInputs
from pipeline.tasks import LoadedTask, code_version

#: the units' caches, the owner file and the lock of a run folder
CACHE = ".units"
#: in ``<out>/.units``: the task the run folder belongs to
OWNER_FILE = "task.json"
#: in ``<out>/.units``: the lock a run holds on its folder (:mod:`pipeline.lock`)
LOCK_FILE = "lock"
#: the lock's files: the lock, and the guard of a takeover from a dead holder (:mod:`pipeline.lock`)
LOCK_FILES = (LOCK_FILE, LOCK_FILE + TAKEOVER_SUFFIX)
#: in ``<out>/.units``: what a run is publishing (ours, should it stop before its manifest)
PUBLISHING_FILE = "publishing.json"
#: in ``<out>/.units``: the report's figures as PNGs by a digest of what they draw (a rerun redraws none)
FIGURES = "figures"
MANIFEST = "manifest.json"
#: the files every run writes at the top of its folder (besides its releases)
TABLE_FILES = ("results.parquet", "results.csv", "summary.json", MANIFEST)
#: and those a run may write: the report, a nightly run's gates
RUN_FILES = (*TABLE_FILES, "report.html", "gates.json")
#: how many of the entries in the way a refusal names
_NAMED = 5


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
    return task.output


def folder_owner(out: Path) -> str | None:
    """The name of the task whose run folder ``out`` is (its owner file, else its manifest)."""
    for f in (out / CACHE / OWNER_FILE, out / MANIFEST):
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
    """Mark ``cache`` (``<out>/.units``, created 0700: its caches hold record-level data) as the task's."""
    cache.mkdir(mode=0o700, parents=True, exist_ok=True)
    cache.chmod(0o700)  # also a folder of a run from before caches were owner-only
    atomic_write_text(json_text({"task": task.spec.name, "task_file": str(task.path)}), cache / OWNER_FILE)


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


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None


def _relative(out: Path, path: Path) -> str:
    return Path(os.path.relpath(path.absolute(), out.absolute())).as_posix()


def written_by_task(out: Path, task_name: str) -> set[str]:
    """The paths (relative to ``out``, POSIX) that earlier runs of the task wrote there.

    Its manifest's ``written`` list and, when a run stopped while publishing (before its
    manifest), what that run and the runs before it wrote (``.units/publishing.json``). A
    manifest from before runs listed what they wrote counts the run files present and its
    release folders. Nothing, when ``out`` is not the task's folder; never a path that does not
    resolve inside ``out`` (an edited manifest cannot make a run remove anything outside).
    """
    if folder_owner(out) != task_name:
        return set()
    ours: set[str] = set()
    manifest = _read_json(out / MANIFEST)
    if manifest is not None and manifest.get("task") == task_name:
        if "written" in manifest:
            ours.update(map(str, manifest["written"]))
        else:
            ours.update(n for n in RUN_FILES if (out / n).exists())
            ours.update(_relative(out, Path(d)) for d in manifest.get("releases", {}).values())
            ours.update(_relative(out, d) for d in out.glob("synthesis/*/*/rep*"))
    publishing = _read_json(out / CACHE / PUBLISHING_FILE)
    finished = manifest is not None and publishing is not None and publishing.get("run_id") == manifest.get("run_id")
    if publishing is not None and publishing.get("task") == task_name and not finished:
        ours.update(map(str, publishing.get("written", [])))
    return {rel for rel in ours if _resolves_inside(out, out / rel)}


def _few(names: Sequence[str]) -> str:
    shown = ", ".join(names[:_NAMED])
    return shown if len(names) <= _NAMED else f"{shown} and {len(names) - _NAMED} more"


def _only_lock(cache: Path) -> bool:
    """Whether ``<out>/.units`` holds nothing but a lock (a run that stopped before claiming the folder)."""
    return cache.is_dir() and {p.name for p in cache.iterdir()} <= set(LOCK_FILES)


def run_names(out: Path, release_dir: Path, datasets: Iterable[str], optional: Iterable[str] = ()) -> list[str]:
    """The names a run writes at the top of ``out``: the table files, the ``optional`` ones it
    writes (``report.html``, ``gates.json``) and the first folder of its releases
    (``synthesis``; the datasets' folders when the releases are ``out`` itself).

    Raises
    ------
    TaskError
        ``release_dir`` is not inside ``out``.
    """
    top = Path(_relative(out, release_dir)).parts[:1]
    if top == ("..",):
        raise TaskError(f"release folder {release_dir} is outside the run folder {out}")
    return [*TABLE_FILES, *optional, *(top if top and top != (".",) else datasets)]


def check_run_folder(out: Path, task: LoadedTask, force: bool, names: Iterable[str]) -> None:
    """Refuse, before any work, a folder this run may not write into (nothing is created).

    A missing or empty folder and the task's own run folder are fine; another task's run folder
    is refused; any other non-empty folder only with ``force``. Whatever the folder, one of
    ``names`` (:func:`run_names`) that is there and was not written by a run of the task is in
    the way: a run never overwrites a file it did not write.

    Raises
    ------
    TaskError
        Naming what is in the way and how to proceed.
    """
    check_writable_folder(out, "output folder")
    check_folder_owner(out, task)
    if not out.is_dir():
        return
    name = task.spec.name
    owned = folder_owner(out) == name
    present = sorted(p.name for p in out.iterdir() if not (p.name == CACHE and _only_lock(p)))
    if present and not owned and not force:
        raise TaskError(
            f"{out} is not empty and is not a run folder of task {name!r} (it holds {_few(present)}): give --out "
            "a new or empty folder, or --force to write beside these files (a run never removes or overwrites "
            "a file it did not write)"
        )
    ours = {Path(p).parts[0] for p in written_by_task(out, name) if Path(p).parts} | ({MANIFEST} if owned else set())
    clash = [n for n in dict.fromkeys(names) if n not in ours and ((out / n).exists() or (out / n).is_symlink())]
    if clash:
        raise TaskError(
            f"{out}: {_few(clash)} {'is' if len(clash) == 1 else 'are'} not from a run of task {name!r} and "
            f"{'has a name' if len(clash) == 1 else 'have names'} this run writes; a run never overwrites a file it "
            "did not write: move them away or give --out another folder"
        )


def _missing_parents(folder: Path) -> list[Path]:
    """``folder`` and the folders above it that do not exist yet, outermost first."""
    return [p for p in reversed([folder, *folder.parents]) if not p.exists()]


@contextmanager
def hold_run_folder(out: Path) -> Iterator[None]:
    """Hold the run folder's lock (``<out>/.units/lock``; :func:`pipeline.lock.exclusive`).

    Folders created for the lock are removed on release when the run left nothing else in them
    (a run refused on its inputs leaves no folder behind).

    Raises
    ------
    TaskError
        Another run holds the folder (its PID and start time are named).
    """
    cache = out / CACHE
    made = _missing_parents(cache)
    cache.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        with exclusive(cache / LOCK_FILE, f"run folder {out}") as outermost:
            try:
                yield
            finally:
                if outermost and made and _only_lock(cache):
                    for name in LOCK_FILES:
                        (cache / name).unlink(missing_ok=True)
    finally:
        for d in reversed(made):
            if d.is_dir() and not any(d.iterdir()):
                d.rmdir()


@contextmanager
def run_folder_for(
    task: LoadedTask, out: Path, force: bool, release_dir: Path | None = None, optional: Iterable[str] = ()
) -> Iterator[None]:
    """Check ``out`` for a run of ``task`` (:func:`check_run_folder`; releases in ``release_dir``,
    default ``<out>/synthesis``; the ``optional`` files it writes), hold its lock
    (:func:`hold_run_folder`) and check it again under the lock.

    Raises
    ------
    TaskError
        The folder is not one the run may write into, or another run holds it.
    """
    releases = release_dir if release_dir is not None else out / "synthesis"
    names = run_names(out, releases, [d.name for d in task.spec.datasets], optional)
    check_run_folder(out, task, force, names)
    with hold_run_folder(out):
        if out.is_dir() and folder_owner(out) == task.spec.name:
            recover_publishing(out)  # a run of the task killed while publishing: finished first
        check_run_folder(out, task, force, names)
        check_release_folders(out, task.spec.name)
        yield


def _resolves_inside(out: Path, path: Path) -> bool:
    root, resolved = out.resolve(), path.resolve()
    return resolved != root and resolved.is_relative_to(root)


def _inside(out: Path, path: Path) -> Path:
    """``path``, which must resolve inside the run folder ``out`` (symbolic links followed).

    Raises
    ------
    TaskError
        It does not: a run writes and removes nothing outside its folder.
    """
    if not _resolves_inside(out, path):
        raise TaskError(f"{path} is outside the run folder {out}; a run writes and removes only inside its folder")
    return path


def _temporary(dest: Path) -> Path:
    return dest.with_name(f".{dest.name}.sdc-tmp-{uuid.uuid4().hex[:12]}")


#: the name of a temporary of :func:`_temporary` (its destination's name, then 12 hex digits)
_TEMPORARY = re.compile(r"\.(?P<name>.+)\.sdc-tmp-[0-9a-f]{12}")


def _sweep_temporaries(out: Path, dests: Iterable[Path]) -> None:
    """Remove the temporaries a killed run left beside ``dests`` (files and release folders it
    writes): only entries named exactly as :func:`_temporary` names them, inside ``out``."""
    for folder, names in _by_folder(dests).items():
        if not folder.is_dir() or not _resolves_inside(out, folder / "x"):
            continue
        for entry in folder.iterdir():
            m = _TEMPORARY.fullmatch(entry.name)
            if m is not None and m["name"] in names and not entry.is_symlink():
                _discard(entry)


def _by_folder(paths: Iterable[Path]) -> dict[Path, set[str]]:
    out: dict[Path, set[str]] = {}
    for p in paths:
        out.setdefault(p.parent, set()).add(p.name)
    return out


def _files_in(folder: Path) -> set[str]:
    """The files (and links) under ``folder``, relative to it (POSIX)."""
    return {_relative(folder, p) for p in folder.rglob("*") if p.is_symlink() or not p.is_dir()}


def release_files(releases: Mapping[Path, Path], out: Path) -> dict[str, list[str]]:
    """For the manifest: each release folder (relative to ``out``) and the files the run puts in it
    (those of the cached release it copies)."""
    return {_relative(out, dest): sorted(_files_in(release)) for dest, release in releases.items()}


def _users_files_in_releases(out: Path, task_name: str) -> list[str]:
    """Files inside the task's earlier release folders that no run wrote (paths relative to ``out``)."""
    manifest = _read_json(out / MANIFEST)
    if folder_owner(out) != task_name or manifest is None or manifest.get("task") != task_name:
        return []
    recorded = manifest.get("release_files")
    if not isinstance(recorded, dict):
        return []  # a manifest from before runs recorded their releases' files
    found = []
    for rel, files in recorded.items():
        folder = out / str(rel)
        if isinstance(files, list) and folder.is_dir() and not folder.is_symlink() and _resolves_inside(out, folder):
            found += [f"{rel}/{f}" for f in sorted(_files_in(folder) - set(map(str, files)))]
    return found


def check_release_folders(out: Path, task_name: str) -> None:
    """Refuse to replace or remove a release folder of the task that holds a file of the user's.

    Raises
    ------
    TaskError
        Naming the files and what to do.
    """
    users = _users_files_in_releases(out, task_name)
    if users:
        raise TaskError(
            f"{out}: {_few(users)} {'is' if len(users) == 1 else 'are'} inside a release folder of task {task_name!r} "
            "but not from a run; a rerun replaces its release folders and never removes a file it did not write: "
            "move them out of the folder"
        )


def _finish_publishing(out: Path, claim: Mapping[str, Any]) -> None:
    """Put every staged temporary the claim lists in its place (the manifest last, after the
    removal of what the task's runs wrote and this one does not), as a run or its successor does."""
    staged = [(out / str(t), out / str(d)) for t, d in claim["staged"]]
    for tmp, dest in staged[:-1]:
        if tmp.exists() or tmp.is_symlink():
            _publish(_inside(out, tmp), _inside(out, dest))
    _remove_stale(out, claim["stale"])
    tmp, dest = staged[-1]
    if tmp.exists():
        _publish(_inside(out, tmp), _inside(out, dest))


def recover_publishing(out: Path) -> bool:
    """Finish the publishing of a run that was killed while it renamed its staged files into
    place (its claim in ``.units/publishing.json`` names a run the manifest does not); the
    caller holds the folder's lock. Returns whether there was one to finish."""
    claim = _read_json(out / CACHE / PUBLISHING_FILE)
    manifest = _read_json(out / MANIFEST)
    if claim is None or not isinstance(claim.get("staged"), list) or not claim["staged"]:
        return False
    if manifest is not None and manifest.get("run_id") == claim.get("run_id"):
        return False
    _finish_publishing(out, claim)
    return True


def _discard(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def _remove_stale(out: Path, stale: Iterable[str]) -> None:
    """Remove what an earlier run of the task wrote and this one did not (each path inside
    ``out``), then the folders above them that this leaves empty."""
    for rel in sorted(stale):
        path = _inside(out, out / rel)
        if path.parts[len(out.parts)] == CACHE:
            continue
        _discard(path)
        for parent in path.parents:
            if parent == out or not parent.is_dir() or any(parent.iterdir()):
                break
            parent.rmdir()


def _publish(tmp: Path, dest: Path) -> None:
    """Put a staged file or folder in ``dest``'s place (an older folder there is removed after)."""
    if not tmp.is_dir():
        os.replace(tmp, dest)
        return
    old = None
    if dest.exists():
        old = _temporary(dest)
        dest.rename(old)
    tmp.rename(dest)
    if old is not None:
        shutil.rmtree(old)


def write_run(
    outcome: RunOutcome,
    report: bool = True,
    extra_sections: Sequence[str] = (),
    extra_files: Mapping[str, str] | None = None,
) -> None:
    """Write the run folder: results, summary, the syntheses' releases, ``extra_files`` (name ->
    text, e.g. ``gates.json``), the report (with ``extra_sections``) and, last, the manifest,
    whose ``written`` lists them.

    Everything is written to temporary names first and published only when all of it was
    written; then what an earlier run of the task wrote and this one did not is removed; the
    manifest comes last. A failure while writing (a full disk) removes the temporaries and
    leaves the folder as it was.

    Raises
    ------
    TaskError
        A path the run writes is outside the folder or is a file no run of the task wrote, or
        writing failed (the system's reason named; nothing was published).
    """
    out = outcome.out_dir
    task_name = str(outcome.manifest["task"])
    files: dict[str, Callable[[Path], Any]] = {
        "results.parquet": lambda p: outcome.results.to_parquet(p, index=False),
        "results.csv": lambda p: p.write_text(outcome.results.to_csv(index=False), encoding="utf-8"),
        "summary.json": lambda p: p.write_text(json_text(outcome.summaries, indent=1), encoding="utf-8"),
    }
    for name, text in (extra_files or {}).items():
        files[name] = lambda p, text=text: p.write_text(text, encoding="utf-8")
    figures = None
    if report:
        from pipeline.report.html import render
        from pipeline.report.markup import FigureCache

        figures = FigureCache(out / CACHE / FIGURES, code_version())

        def write_report(p: Path) -> None:
            p.write_text(render(outcome, list(extra_sections), figures), encoding="utf-8")

        files["report.html"] = write_report
    releases = {_inside(out, dest): release for dest, release in outcome.releases.items()}
    targets = {_relative(out, t): t for t in [*(_inside(out, out / name) for name in files), *releases]}
    written = sorted(targets)
    with hold_run_folder(out):
        if folder_owner(out) == task_name:
            recover_publishing(out)
        ours = written_by_task(out, task_name)
        check_release_folders(out, task_name)
        _sweep_temporaries(out, [*targets.values(), *(out / rel for rel in ours)])
        foreign = [w for w, t in targets.items() if (t.exists() or t.is_symlink()) and w not in ours]
        if foreign:
            raise TaskError(
                f"{out}: {_few(foreign)} {'is' if len(foreign) == 1 else 'are'} not from a run of task {task_name!r}; "
                "a run never overwrites a file it did not write: move them away or give --out another folder"
            )
        staged: list[tuple[Path, Path]] = []
        made: list[Path] = []
        publishing, claimed = out / CACHE / PUBLISHING_FILE, False
        try:
            for name, write in files.items():
                staged.append((_temporary(out / name), out / name))
                write(staged[-1][0])
            for dest, release in releases.items():
                made += _missing_parents(dest.parent)
                dest.parent.mkdir(parents=True, exist_ok=True)
                staged.append((_temporary(dest), dest))
                staged[-1][0].mkdir(mode=0o700)
                shutil.copytree(release, staged[-1][0], dirs_exist_ok=True)
                make_private(staged[-1][0])
            manifest = _temporary(out / MANIFEST)
            staged.append((manifest, out / MANIFEST))
            recorded = {**outcome.manifest, "written": written, "release_files": release_files(releases, out)}
            manifest.write_text(json_text(recorded, indent=1), "utf-8")
            # everything is staged: from here a killed run is finished by the next (recover_publishing)
            claim = {
                "task": task_name,
                "run_id": outcome.run_id,
                "written": sorted(ours | set(written)),
                "staged": [[_relative(out, t), _relative(out, d)] for t, d in staged],
                "stale": sorted(ours - set(written) - {MANIFEST}),
            }
            atomic_write_text(json_text(claim), publishing)
            claimed = True
            os.utime(manifest)  # the manifest stays the newest of the run's files
        except BaseException as e:
            for tmp, _ in staged:
                _discard(tmp)
            if claimed:
                publishing.unlink(missing_ok=True)
            for d in reversed(made):
                if d.is_dir() and not any(d.iterdir()):
                    d.rmdir()
            if isinstance(e, OSError):
                reason = os.strerror(e.errno) if e.errno else str(e)
                code = f" ({errno.errorcode[e.errno]})" if e.errno in errno.errorcode else ""
                raise TaskError(
                    f"cannot write the run folder {out}: {reason}{code}; nothing was published, the folder is as it was"
                ) from None
            raise
        _finish_publishing(out, claim)
        if figures is not None:
            figures.prune()
