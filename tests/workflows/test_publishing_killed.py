"""Issue 35, item 7: publishing survives kill -9. A run killed while it renames its staged files
into place is finished by the next run (the manifest and the table agree again), the temporaries
of killed runs are removed, and a file of the user's inside a release folder is never removed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
from click.testing import CliRunner
from workflow_task_files import small_task

from pipeline.cli import main

REPO = Path(__file__).resolve().parents[2]

#: run the task, killing the process (SIGKILL) at the second rename of its publishing
KILLED_WHILE_PUBLISHING = """
import os, signal, sys
import pipeline.run.folder as folder
from pipeline.runner import run_task
from pipeline.tasks import load_task

real, calls = folder._publish, []

def publish(tmp, dest):
    calls.append(dest)
    if len(calls) == 2:
        os.kill(os.getpid(), signal.SIGKILL)
    real(tmp, dest)

folder._publish = publish
run_task(load_task(sys.argv[1]), cluster=sys.argv[2], out_dir=sys.argv[3], progress=False, report=False)
"""


def _run(task: Path, cluster: Path, out: Path):
    return CliRunner().invoke(main, ["run", str(task), "--cluster", str(cluster), "--out", str(out), "--no-report"])


def _temporaries(out: Path) -> list[str]:
    return [p.name for p in out.rglob("*") if "sdc-tmp" in p.name]


def _run_ids(out: Path) -> tuple[str, set[str]]:
    manifest = json.loads((out / "manifest.json").read_text())
    return manifest["run_id"], set(pd.read_parquet(out / "results.parquet")["run_id"])


def test_a_run_killed_while_publishing_is_finished_by_the_next(tmp_path: Path) -> None:
    task, cluster = small_task(tmp_path, "killed", synth=True)
    out = tmp_path / "out"
    assert _run(task, cluster, out).exit_code == 0
    first, _ = _run_ids(out)
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_WHILE_PUBLISHING, str(task), str(cluster), str(out)],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
    )
    assert killed.returncode == -9
    # killed between two renames: a new table beside the old manifest
    manifest_id, table_ids = _run_ids(out)
    assert manifest_id == first and table_ids != {first}
    assert _temporaries(out)
    res = _run(task, cluster, out)  # takes the folder over, no manual clean-up
    assert res.exit_code == 0, res.output
    manifest_id, table_ids = _run_ids(out)
    assert table_ids == {manifest_id} and manifest_id != first
    assert not _temporaries(out)


def test_a_file_of_the_users_inside_a_release_folder_is_not_removed(tmp_path: Path) -> None:
    task, cluster = small_task(tmp_path, "mine", synth=True)
    out = tmp_path / "out"
    assert _run(task, cluster, out).exit_code == 0
    (release,) = (out / "synthesis").glob("*/*/rep*")
    notes = release / "notes.txt"
    notes.write_text("the user's")
    before = (out / "manifest.json").read_bytes()
    res = _run(task, cluster, out)
    assert res.exit_code == 2 and "Traceback" not in res.output
    (line,) = [ln for ln in res.output.splitlines() if ln.startswith("error:")]
    assert "notes.txt is inside a release folder of task 'mine' but not from a run" in line
    assert notes.read_text() == "the user's" and (out / "manifest.json").read_bytes() == before
    notes.unlink()
    assert _run(task, cluster, out).exit_code == 0
