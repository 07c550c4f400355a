"""Issue 16: a user's first week — interrupts, one-line errors, run folders, messy CSV files."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

SWEEP = """
name: interrupt_t
concurrency: 1
datasets:
  - name: sd2011
    original: {demo: sd2011_subset}
    synthetic:
      - {name: cart, demo: sd2011_cart}
measures:
  - type: key_blocks
    grid:
      keys: [[sex, age], [sex, edu], [agegr, marital], [sex, age, edu, marital], [sex, agegr], [edu, marital]]
"""


def _run_cmd(task: Path, out: Path, cluster: Path) -> list[str]:
    return [sys.executable, "-m", "pipeline.cli", "run", str(task), "--out", str(out), "--cluster", str(cluster),
            "--no-report"]  # fmt: skip


@pytest.mark.parametrize(
    ("signum", "group", "status"),
    [(signal.SIGINT, True, 130), pytest.param(signal.SIGTERM, False, 143, marks=pytest.mark.slow)],
)
def test_interrupt_stops_the_cluster_keeps_units_and_says_how_to_resume(tmp_path, signum, group, status):
    """Ctrl-C in a terminal reaches the whole process group (worker processes included)."""
    from pipeline.tasks import code_version

    version = code_version()
    task = tmp_path / "sweep.yaml"
    task.write_text(SWEEP, encoding="utf-8")
    cluster = tmp_path / "local.yaml"
    cluster.write_text("type: local\nn_workers: 1\nprocesses: true\n", encoding="utf-8")
    out = tmp_path / "run"
    proc = subprocess.Popen(_run_cmd(task, out, cluster), stderr=subprocess.PIPE, text=True, start_new_session=True)
    lines = []
    for line in proc.stderr:
        lines.append(line)
        if line.startswith("[2/"):
            if group:
                os.killpg(proc.pid, signum)
            else:
                proc.send_signal(signum)
            break
    try:
        rest = proc.communicate(timeout=60)[1]
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        pytest.fail("the run did not stop after the signal")
    assert proc.returncode == status
    assert "Traceback" not in rest
    last = [ln for ln in rest.splitlines() if not ln.startswith("[")]
    assert last == [f"interrupted ({signal.Signals(signum).name}): finished units are kept; run the same command "
                    "again to resume"]  # fmt: skip
    assert not (out / "results.parquet").exists() and not (out / "manifest.json").exists()
    kept = list((out / ".units").glob("*.parquet"))
    assert len(kept) >= 2
    # the same command resumes: the finished units come from the cache
    again = subprocess.run(_run_cmd(task, out, cluster), capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    if code_version() == version:  # (unit fingerprints include the code: an edit in between re-runs all)
        assert again.stderr.count(": cached") >= len(kept)
    assert pd.read_parquet(out / "results.parquet")["measure_name"].eq("key_blocks").all()
