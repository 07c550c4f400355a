"""A multi-dataset sweep that is killed half-way and resumed gives the same table."""

import json
import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd

SWEEP = """
name: sweep_t
concurrency: 1
datasets:
  - name: sd2011
    original: {demo: sd2011_subset}
    synthetic:
      - {name: cart, demo: sd2011_cart}
  - name: cedata
    original: {demo: cedata}
    synthetic:
      - {name: income, demo: cedata_syn_income}
measures:
  - type: key_blocks
    datasets: [sd2011]
    grid:
      keys: [[sex, age], [sex, edu], [agegr, marital], [sex, age, edu, marital]]
  - type: key_blocks
    datasets: [cedata]
    grid:
      keys: [[Urban, Tenure], [Urban, Educ, Marital]]
"""

COLS = ["dataset", "source", "measure_name", "setting", "synthetic", "measure", "value"]


def _cmd(task: Path, out: Path) -> list[str]:
    cfg = task.parent / "local.yaml"
    return [
        sys.executable,
        "-m",
        "pipeline.cli",
        "run",
        str(task),
        "--out",
        str(out),
        "--cluster",
        str(cfg),
        "--no-report",
    ]


def test_interrupted_sweep_resumes_to_the_same_table(tmp_path):
    task = tmp_path / "sweep.yaml"
    task.write_text(SWEEP)
    (tmp_path / "local.yaml").write_text("type: local\nn_workers: 2\nprocesses: false\n")
    out = tmp_path / "run"
    proc = subprocess.Popen(_cmd(task, out), stderr=subprocess.PIPE, text=True)
    for line in proc.stderr:
        if line.startswith("[2/"):
            proc.send_signal(signal.SIGKILL)  # a crash, not a clean shutdown
            break
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    assert not (out / "results.parquet").exists() and not (out / "manifest.json").exists()
    cached = list((out / ".units").glob("*.parquet"))
    assert 2 <= len(cached) < 6
    assert not list((out / ".units").glob(".*.tmp"))  # no half-written unit files

    resumed = subprocess.run(_cmd(task, out), capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stderr.count(": cached") == len(cached)
    manifest = json.loads((out / "manifest.json").read_text())
    assert sum(u["cached"] for u in manifest["units"].values()) == len(cached) and len(manifest["units"]) == 6

    fresh = subprocess.run(_cmd(task, tmp_path / "fresh"), capture_output=True, text=True)
    assert fresh.returncode == 0, fresh.stderr
    a = pd.read_parquet(out / "results.parquet")[COLS]
    b = pd.read_parquet(tmp_path / "fresh" / "results.parquet")[COLS]
    pd.testing.assert_frame_equal(a, b)
    assert set(a["dataset"]) == {"sd2011", "cedata"}
