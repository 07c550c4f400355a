"""Issue 36: a user's first quarter — the plan shown before the work, warnings that reach the
user wherever they were raised, and ``validate`` refusing what ``run`` would fail on later."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from pipeline.datasets.bundled import demo_path

NO_PREDICTORS = (
    "'Income' is synthesised with no predictors (drawn independently of the kept variables); visit the kept "
    "ones first (visit_sequence: kept_first) or name its predictors"
)


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "pipeline.cli", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=cwd)


def _income_first(folder: Path) -> None:
    """CEdata with Income as its first column (synthpop's default then gives it no predictors)."""
    ce = pd.read_csv(demo_path("cedata.csv"))
    ce[["Income", *[c for c in ce.columns if c != "Income"]]].to_csv(folder / "ce.csv", index=False)


INCOME_FIRST = """
name: ce_first
output: out
seed: 3
datasets:
  - name: ce
    original: {path: ce.csv}
    synthetic:
      - name: partial
        synthesise: {kind: partial, method: {Income: cart, Tenure: cart}, m: 2}
measures:
  - type: profile
"""


def test_validate_prints_the_predictor_matrix_of_each_partial_synthesis(tmp_path):
    _income_first(tmp_path)
    (tmp_path / "task.yaml").write_text(INCOME_FIRST, encoding="utf-8")
    res = _cli("validate", "task.yaml", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    at = lines.index("plan of ce/partial (variable (method) <- predictors):")
    assert lines[at + 1 : at + 3] == ["  Income (cart) <- no predictors", "  Tenure (cart) <- Income, Age, Urban"]
    # one line each, once, without the source line that raised it
    assert res.stderr.splitlines().count(f"warning: {NO_PREDICTORS}") == 1
    assert "warn_plan" not in res.stderr and ".py:" not in res.stderr


@pytest.mark.slow
def test_a_warning_raised_on_a_worker_reaches_the_terminal_summary_and_manifest(tmp_path):
    _income_first(tmp_path)
    (tmp_path / "task.yaml").write_text(INCOME_FIRST, encoding="utf-8")
    res = _cli("synthesise", "task.yaml", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    # the partial synthesis of in-memory data runs as one task on a worker (pipeline.run.groups)
    assert f"WARNING pipeline: {NO_PREDICTORS} [synthesise ce/partial]" in res.stderr.splitlines()
    folder = tmp_path / "out" / "synthesis"
    summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    assert NO_PREDICTORS in summary["synthesise ce/partial"]["warnings"]
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    assert {"warning": NO_PREDICTORS, "units": ["synthesise ce/partial"]} in manifest["warnings"]
    report = json.loads((folder / "ce" / "partial" / "rep0" / "synthesis_report.json").read_text(encoding="utf-8"))
    assert report["predictor_matrix"]["Income"] == [] and NO_PREDICTORS in report["warnings"]
