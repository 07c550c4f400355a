"""Issues 24 and 25 (1, 6, 8): a run never costs a user a file, one run at a time writes a folder
or a history, record-level outputs are owner-only, names cannot leave the run folder, and a
full disk leaves the previous run as it was."""

from __future__ import annotations

import errno
import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from workflow_task_files import SMALL_TASK, SYNTH_SOURCE, small_task

from pipeline.cli import main
from pipeline.errors import TaskError

COLS = [
    "task",
    "dataset",
    "source",
    "repetition",
    "family",
    "measure_name",
    "setting",
    "params",
    "synthetic",
    "measure",
]
USER_FILES = {"report.html": "<p>my report</p>", "results.csv": "mine,1\n", "notes.txt": "my notes"}


def _task(folder: Path, name: str = "folders", synth: bool = False) -> Path:
    return small_task(folder, name, synth)[0]


def _cli(command: str, task: Path, out: Path, *extra: str):
    args = [command, str(task), "--out", str(out), *extra]
    if command != "validate":
        args += ["--cluster", str(task.parent / "threads.yaml")]
    return CliRunner().invoke(main, args)


def _refused(res, *words: str) -> str:
    assert res.exit_code == 2, res.output
    lines = [x for x in res.output.strip().splitlines() if not x.startswith("[")]  # not the progress lines
    assert len(lines) == 1 and lines[0].startswith("error: "), res.output
    for w in words:
        assert w in lines[0], lines[0]
    return lines[0]


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _user_folder(folder: Path) -> Path:
    folder.mkdir()
    for name, text in USER_FILES.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


# ---- issue 24: the user's files ------------------------------------------------------------------


def test_a_folder_of_the_users_is_refused_before_any_work_and_kept(tmp_path):
    task = _task(tmp_path)
    out = _user_folder(tmp_path / "mine")
    msg = _refused(_cli("run", task, out, "--no-report"), "is not empty and is not a run folder", "--force")
    assert "notes.txt, report.html, results.csv" in msg and "--out" in msg
    _refused(_cli("validate", task, out), "is not empty and is not a run folder")
    assert _snapshot(out) == {k: v.encode() for k, v in USER_FILES.items()}
    assert sorted(p.name for p in out.iterdir()) == sorted(USER_FILES)  # no .units, no lock


def test_force_writes_beside_the_users_files_and_never_over_them(tmp_path):
    task = _task(tmp_path)
    out = _user_folder(tmp_path / "mine")
    # --force: the user's results.csv (and report.html, when the run writes a report) have names
    # a run writes: refused, untouched
    msg = _refused(_cli("run", task, out, "--force"), "a run never overwrites a file it did not write")
    assert f"{out}: results.csv, report.html are not from a run of task 'folders'" in msg
    msg = _refused(_cli("run", task, out, "--no-report", "--force"), "a run never overwrites a file it did not write")
    assert f"{out}: results.csv is not from a run of task 'folders'" in msg
    assert _snapshot(out) == {k: v.encode() for k, v in USER_FILES.items()}
    assert sorted(p.name for p in out.iterdir()) == sorted(USER_FILES)
    (out / "results.csv").rename(tmp_path / "moved.csv")
    res = _cli("run", task, out, "--no-report", "--force")
    assert res.exit_code == 0, res.output
    assert (out / "notes.txt").read_text() == "my notes" and (out / "report.html").read_text() == "<p>my report</p>"
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["written"] == ["results.csv", "results.parquet", "summary.json"]
    # the folder is the task's now: a rerun needs no --force and still leaves the user's files alone
    again = _cli("run", task, out, "--no-report")
    assert again.exit_code == 0, again.output
    assert (out / "notes.txt").read_text() == "my notes" and (out / "report.html").read_text() == "<p>my report</p>"
    # a report would overwrite the user's report.html
    _refused(_cli("run", task, out), "report.html is not from a run of task 'folders'")
    assert (out / "report.html").read_text() == "<p>my report</p>"


def test_a_rerun_removes_only_what_a_run_of_the_task_wrote(tmp_path):
    task = _task(tmp_path)
    out = tmp_path / "run"
    assert _cli("run", task, out).exit_code == 0
    assert "report.html" in json.loads((out / "manifest.json").read_text())["written"]
    res = _cli("run", task, out, "--no-report")
    assert res.exit_code == 0, res.output
    assert not (out / "report.html").exists()  # written by the first run, no longer: removed
    (out / "report.html").write_text("the user's own")
    (out / "gates.json").write_text("[]")
    # a hand-edited manifest cannot make a run remove a path outside its folder
    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["written"] += ["../victim.txt", str(victim)]
    (out / "manifest.json").write_text(json.dumps(manifest))
    res = _cli("run", task, out, "--no-report")
    assert res.exit_code == 0, res.output
    assert (out / "report.html").read_text() == "the user's own" and (out / "gates.json").exists()
    assert victim.read_text() == "keep"


# ---- issue 24: one run at a time -----------------------------------------------------------------


def _start(task: Path, out: Path, *extra: str, command: str = "run") -> subprocess.Popen:
    cmd = [sys.executable, "-m", "pipeline.cli", command, str(task), "--out", str(out)]
    cmd += ["--cluster", str(task.parent / "threads.yaml"), *extra]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def _wait_for_lock(lock: Path, proc: subprocess.Popen) -> None:
    """Until ``proc`` has written itself into the lock file."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if lock.exists() and f'"pid": {proc.pid},' in lock.read_text():
            return
        time.sleep(0.05)
    raise AssertionError(f"no lock by PID {proc.pid}: {proc.communicate()}")


def test_a_second_run_into_the_folder_is_refused_at_once_and_the_first_is_unchanged(tmp_path):
    task = _task(tmp_path)
    out = tmp_path / "run"
    first = _start(task, out, "--no-report")
    _wait_for_lock(out / ".units" / "lock", first)
    os.killpg(first.pid, signal.SIGSTOP)  # the first run holds the folder for as long as the second takes
    try:
        started = time.monotonic()
        second = subprocess.run(
            [sys.executable, "-m", "pipeline.cli", "run", str(task), "--out", str(out), "--no-report"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert time.monotonic() - started < 60
    finally:
        os.killpg(first.pid, signal.SIGCONT)
    assert second.returncode == 2, second.stderr
    [line] = second.stderr.strip().splitlines()
    assert line.startswith(f"error: run folder {out} is in use by another run (PID {first.pid} on ")
    assert ", started 20" in line
    _, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    from pipeline.runner import run_task
    from pipeline.tasks import load_task

    alone = run_task(load_task(task), cluster=tmp_path / "threads.yaml", out_dir=tmp_path / "alone", progress=False)
    together = pd.read_parquet(out / "results.parquet")
    pd.testing.assert_frame_equal(together[[*COLS, "value"]], alone.results[[*COLS, "value"]])


def test_the_lock_of_a_killed_run_is_taken_over_with_a_warning(tmp_path, caplog):
    from pipeline.runner import run_task
    from pipeline.tasks import load_task

    task = _task(tmp_path)
    out = tmp_path / "run"
    killed = _start(task, out, "--no-report")
    _wait_for_lock(out / ".units" / "lock", killed)
    os.killpg(killed.pid, signal.SIGKILL)
    killed.wait()
    assert f'"pid": {killed.pid},' in (out / ".units" / "lock").read_text()
    with caplog.at_level("WARNING", logger="pipeline.lock"):
        outcome = run_task(load_task(task), cluster=tmp_path / "threads.yaml", out_dir=out, progress=False)
    assert len(outcome.results) and (out / "manifest.json").exists()
    [warning] = [r.getMessage() for r in caplog.records if r.name == "pipeline.lock"]
    assert f"taking over the lock left by a run that ended without releasing it (PID {killed.pid} on " in warning
    assert (out / ".units" / "lock").read_text() == ""  # released cleanly


def test_a_thread_of_the_same_process_is_refused_too(tmp_path):
    from pipeline.run.folder import hold_run_folder

    out = tmp_path / "run"
    errors: list[Exception] = []
    with hold_run_folder(out):
        with hold_run_folder(out):  # re-entrant in the holding thread
            pass

        def other() -> None:
            try:
                with hold_run_folder(out):
                    pass
            except TaskError as e:
                errors.append(e)

        t = threading.Thread(target=other)
        t.start()
        t.join()
    assert len(errors) == 1 and f"(PID {os.getpid()};" in str(errors[0])
    assert not out.exists()  # the folders made for the lock held nothing else: removed


# ---- issue 24: permissions -----------------------------------------------------------------------


def _modes(folder: Path) -> set[int]:
    return {stat.S_IMODE(p.stat().st_mode) for p in [folder, *folder.rglob("*")]}


def test_synthetic_sets_and_caches_are_owner_only_aggregates_follow_the_umask(tmp_path):
    task = _task(tmp_path, synth=True)
    previous = os.umask(0o022)
    try:
        assert _cli("run", task, tmp_path / "run").exit_code == 0
        assert _cli("synthesise", task, tmp_path / "synth").exit_code == 0
    finally:
        os.umask(previous)
    run = tmp_path / "run"
    assert stat.S_IMODE((run / ".units").stat().st_mode) == 0o700
    [cached] = (run / ".units" / "synthesis").iterdir()
    for release in (cached / "release", run / "synthesis" / "sd2011" / "margins" / "rep0"):
        folders = [p for p in [release, *release.rglob("*")] if p.is_dir()]
        files = [p for p in release.rglob("*") if p.is_file()]
        assert any(p.suffix == ".parquet" for p in files)
        assert _modes(release) == {0o700, 0o600}
        assert {stat.S_IMODE(p.stat().st_mode) for p in folders} == {0o700}
    release = tmp_path / "synth" / "sd2011" / "margins" / "rep0"
    assert _modes(release) == {0o700, 0o600}
    for name in ("results.parquet", "results.csv", "summary.json", "report.html", "manifest.json"):
        assert stat.S_IMODE((run / name).stat().st_mode) == 0o644, name


# ---- issue 25 (1): names cannot leave the run folder ---------------------------------------------


@pytest.mark.parametrize("name", ["../x", "/tmp/abs", "a/b", "..", ".hidden"])
@pytest.mark.parametrize("where", ["dataset", "source"])
def test_a_name_that_is_not_plain_is_refused_at_load(tmp_path, name, where):
    text = SMALL_TASK.format(name="hostile", synth=SYNTH_SOURCE)
    text = text.replace("name: sd2011", f"name: {json.dumps(name)}") if where == "dataset" else text
    text = text.replace("name: margins", f"name: {json.dumps(name)}") if where == "source" else text
    task = tmp_path / "hostile.yaml"
    task.write_text(text, encoding="utf-8")
    line = 1 + text.splitlines().index(
        f"  - name: {json.dumps(name)}" if where == "dataset" else "      - name: " + json.dumps(name)
    )
    msg = _refused(CliRunner().invoke(main, ["validate", str(task)]), f"line {line}: datasets[1].")
    assert f"{name!r} is not a plain name: use letters, digits, '_', '.' and '-'" in msg
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hostile.yaml"]


def test_write_run_writes_and_removes_nothing_outside_the_folder(tmp_path):
    """The one place that writes checks every path, whatever the caller passes."""
    from pipeline.runner import execute_task, write_run
    from pipeline.tasks import load_task

    task = load_task(_task(tmp_path, synth=True))
    out = tmp_path / "run"
    outcome = execute_task(task, cluster=tmp_path / "threads.yaml", out_dir=out, progress=False)
    [release] = outcome.releases.values()
    outside = tmp_path / "outside"
    outside.mkdir()
    for escape in (out / "synthesis" / ".." / ".." / "escaped" / "rep0", outside / "rep0"):
        outcome.releases = {escape: release}
        with pytest.raises(TaskError, match="is outside the run folder"):
            write_run(outcome, report=False)
    (out / "synthesis").symlink_to(outside)  # a link in the folder leads outside: refused too
    outcome.releases = {out / "synthesis" / "sd2011" / "margins" / "rep0": release}
    with pytest.raises(TaskError, match="is outside the run folder"):
        write_run(outcome, report=False)
    assert not (tmp_path / "escaped").exists() and list(outside.iterdir()) == []
    assert sorted(p.name for p in out.iterdir()) == [".units", "synthesis"]


# ---- issue 25 (8): nightly runs and the history --------------------------------------------------

NIGHTLY = """
name: nightly_f
history: {history}
datasets:
  - name: sd2011
    original: {{demo: sd2011_subset}}
    synthetic:
      - {{name: cart, demo: sd2011_cart}}
measures:
  - type: key_blocks
    params: {{keys: [sex, edu]}}
gates:
  - {{measure: unique_records_pct, above: 100}}
"""


def test_two_nightly_runs_for_one_date_store_once(tmp_path):
    from pipeline.store import ResultsStore

    _task(tmp_path)
    task = tmp_path / "nightly.yaml"
    task.write_text(NIGHTLY.format(history=tmp_path / "history"), encoding="utf-8")
    first = _start(task, tmp_path / "first", "--date", "2026-11-01", command="nightly")
    _wait_for_lock(tmp_path / "first" / ".units" / "lock", first)
    os.killpg(first.pid, signal.SIGSTOP)
    try:
        # into the same folder: refused at once; into another: runs and stores the date
        same = _start(task, tmp_path / "first", "--date", "2026-11-01", command="nightly")
        _, err = same.communicate(timeout=120)
        assert same.returncode == 2 and f"is in use by another run (PID {first.pid} on " in err, err
        other = _start(task, tmp_path / "second", "--date", "2026-11-01", command="nightly")
        _, err = other.communicate(timeout=300)
        assert other.returncode == 0, err
    finally:
        os.killpg(first.pid, signal.SIGCONT)
    _, err = first.communicate(timeout=300)
    assert first.returncode == 2, err
    assert (
        err.strip().splitlines()[-1].startswith("error: nightly_f: results for 2026-11-01 were stored in")
        and "by another run while this one ran" in err
    )
    runs = ResultsStore(tmp_path / "history").runs("nightly_f")
    assert runs["run_date"].tolist() == ["2026-11-01"]
    assert not (tmp_path / "first" / "manifest.json").exists() and (tmp_path / "second" / "manifest.json").exists()


def test_appends_wait_for_each_other_and_lose_no_row(tmp_path):
    from pipeline.store import ResultsStore

    store = ResultsStore(tmp_path / "history")
    rows = pd.DataFrame({"task": ["t"] * 3, "value": [1.0, 2.0, 3.0]})
    appended: list[Path] = []

    def append(run_id: str) -> None:
        manifest = {"task": "t", "run_id": run_id, "started_utc": "2026-11-01T00:00:00"}
        appended.append(store.append(rows, manifest))

    with store.locked():
        threads = [threading.Thread(target=append, args=(f"run{i}",)) for i in range(3)]
        for t in threads:
            t.start()
        time.sleep(0.5)
        assert appended == []  # waiting for the lock
    for t in threads:
        t.join()
    assert len(appended) == 3
    assert sum(len(pd.read_parquet(p)) for p in appended) == 9


# ---- issue 25 (6): a full disk -------------------------------------------------------------------


def test_a_full_disk_while_writing_leaves_the_previous_run_byte_identical(tmp_path, monkeypatch):
    task = _task(tmp_path, synth=True)
    out = tmp_path / "run"
    assert _cli("run", task, out).exit_code == 0
    before = _snapshot(out)
    real = Path.write_text

    def full_disk(self, data, *args, **kwargs):
        if self.name.startswith(".summary.json."):
            real(self, data[: len(data) // 2], *args, **kwargs)
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(self, data, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", full_disk)
    _refused(_cli("run", task, out), f"cannot write the run folder {out}: No space left on device (ENOSPC)")
    assert _snapshot(out) == before
    monkeypatch.undo()
    res = _cli("run", task, out)  # with space again the run goes through, from its cached units
    assert res.exit_code == 0, res.output
    assert _snapshot(out)["results.parquet"] != before["results.parquet"]  # a new run id


@pytest.fixture
def tiny_tmpfs(tmp_path):
    """A 4 MiB tmpfs (skipped where this process cannot mount one)."""
    mount = tmp_path / "tmpfs"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


@pytest.mark.slow
def test_a_full_tmpfs_leaves_the_previous_run_byte_identical(tmp_path, tiny_tmpfs):
    task = _task(tmp_path)
    out = tiny_tmpfs / "run"
    assert _cli("run", task, out, "--no-report").exit_code == 0
    before = _snapshot(out)
    free = os.statvfs(tiny_tmpfs)
    (tiny_tmpfs / "filler").write_bytes(b"\0" * (free.f_bavail * free.f_frsize - 16 * 1024))
    res = _cli("run", task, out)  # the report (some 100 kB) does not fit
    msg = _refused(res, f"cannot write the run folder {out}: No space left on device (ENOSPC)")
    assert "the folder is as it was" in msg
    assert _snapshot(out) == before
    assert not [p for p in out.rglob("*") if ".tmp" in p.name or "sdc-tmp" in p.name]
