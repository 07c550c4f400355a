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


def _validate_in_process(task: Path, *args: str):
    from click.testing import CliRunner

    from pipeline.cli import main

    return CliRunner().invoke(main, ["validate", str(task), *args])


def _one_error_line(res) -> str:
    assert res.exit_code == 2, res.output
    lines = [ln for ln in res.output.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1, res.output
    return lines[0]


def _partial_task(synthesised: str, measure: str) -> str:
    """A task on ``d.csv`` (with its schema) synthesising ``synthesised`` after every kept variable."""
    return f"""
name: t
output: out
datasets:
  - name: d
    original: {{path: d.csv, schema: d.schema.json}}
    synthetic:
      - name: partial
        synthesise: {{kind: partial, method: {{{synthesised}: cart}}, visit_sequence: kept_first}}
measures:
  - {measure}
"""


def test_validate_refuses_a_character_predictor_of_a_partial_synthesis(tmp_path):
    from pipeline.data.schema import Schema, Variable

    frame = pd.DataFrame({"income": [1.0, 2.0, 3.0] * 20, "age": [20.0, 30.0, 40.0] * 20, "note": ["a", "b", "c"] * 20})
    frame.to_csv(tmp_path / "d.csv", index=False)
    Schema((Variable("income", "numeric"), Variable("age", "numeric"), Variable("note", "character"))).to_json(
        tmp_path / "d.schema.json"
    )
    (tmp_path / "task.yaml").write_text(_partial_task("income", "type: profile"), encoding="utf-8")
    line = _one_error_line(_validate_in_process(tmp_path / "task.yaml"))
    assert "'note' (character) cannot be used as a predictor of 'income'" in line and "kind 'factor'" in line


def test_validate_refuses_a_logit_model_over_max_params_before_any_synthesis(tmp_path):
    import numpy as np

    from pipeline.data.schema import Schema, Variable

    rng = np.random.default_rng(36)
    levels = [f"l{i}" for i in range(30)]
    frame = pd.DataFrame({f"f{j}": rng.choice(levels, 600) for j in range(4)} | {"x": rng.normal(size=600)})
    frame.to_csv(tmp_path / "d.csv", index=False)
    factors = [Variable(f"f{j}", "factor", tuple(levels)) for j in range(4)]
    Schema((*factors, Variable("x", "numeric"))).to_json(tmp_path / "d.schema.json")
    (tmp_path / "task.yaml").write_text(
        _partial_task("x", "{type: utility_gen, params: {method: logit}}"), encoding="utf-8"
    )
    line = _one_error_line(_validate_in_process(tmp_path / "task.yaml"))
    # 4 factors of 30 levels and x, maxorder 1: 1 + 4 * 29 + 1 + 6 * 29 * 29 + 4 * 29 = 5280 parameters
    assert "the logit model would have at least 5280 parameters, more than max_params = 400" in line


BASELINE_GATE = """
name: gated
output: out
datasets:
  - name: sd
    original: {demo: sd2011_subset}
    synthetic:
      - {name: cart, demo: sd2011_cart}
measures:
  - type: profile
gates:
  - {measure: repU, baseline: excess, above: 1}
"""


def test_validate_refuses_a_baseline_gate_on_a_task_without_a_holdout(tmp_path):
    (tmp_path / "task.yaml").write_text(BASELINE_GATE, encoding="utf-8")
    line = _one_error_line(_validate_in_process(tmp_path / "task.yaml"))
    assert "gate on 'repU' with baseline: excess: no dataset of the task has a holdout" in line


def test_validate_of_a_nightly_task_after_a_night_has_run(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from pipeline.cli import main

    monkeypatch.chdir(tmp_path)
    task = tmp_path / "nightly.yaml"
    task.write_text(
        BASELINE_GATE.replace("output: out", "output: runs\nhistory: history")
        .replace("{measure: repU, baseline: excess, above: 1}", "{measure: unique_records_pct, above: 100}")
        .replace("type: profile", "type: key_blocks\n    params: {keys: [sex, age]}"),
        encoding="utf-8",
    )
    (tmp_path / "local.yaml").write_text("type: local\nn_workers: 1\nprocesses: false\n", encoding="utf-8")
    night = CliRunner().invoke(main, ["nightly", str(task), "--cluster", "local.yaml", "--date", "2026-11-01"])
    assert night.exit_code == 0, night.output
    res = _validate_in_process(task)
    assert res.exit_code == 0, res.output


ALIGN = """
name: aligned
output: out
datasets:
  - name: sd
    original: {demo: sd2011_subset}
    synthetic:
      - {name: s, paths: [syn.csv], compatibility: align}
measures:
  - type: profile
"""


def test_align_takes_a_new_level_without_the_source_s_own_schema_and_names_no_value(tmp_path):
    syn = pd.read_csv(demo_path("sd2011_cart_syn1.csv"))
    syn.loc[:4, "sex"] = "PLANTED_LEVEL"
    syn.to_csv(tmp_path / "syn.csv", index=False)
    (tmp_path / "task.yaml").write_text(ALIGN, encoding="utf-8")
    res = _validate_in_process(tmp_path / "task.yaml")
    assert res.exit_code == 0, res.output
    assert "variable 'sex': 1 level(s) only in the synthetic data" in res.output
    assert "PLANTED_LEVEL" not in res.output
    # strict: the error counts the unknown levels and says how to align them
    (tmp_path / "task.yaml").write_text(ALIGN.replace(", compatibility: align", ""), encoding="utf-8")
    line = _one_error_line(_validate_in_process(tmp_path / "task.yaml"))
    assert "variable 'sex' has 5 record(s)" in line and "(1 unknown level(s))" in line
    assert "compatibility: align" in line and "PLANTED_LEVEL" not in line


FAILING = BASELINE_GATE.replace("name: gated", "name: failing").replace(
    "  - type: profile\ngates:\n  - {measure: repU, baseline: excess, above: 1}\n",
    "  - {type: utility_gen, params: {cont_na: {income: -77777}}}\n",
)


@pytest.mark.slow
def test_a_run_failing_before_any_unit_finished_leaves_no_folder(tmp_path):
    from click.testing import CliRunner

    from pipeline.cli import main

    (tmp_path / "task.yaml").write_text(FAILING, encoding="utf-8")
    (tmp_path / "local.yaml").write_text("type: local\nn_workers: 1\nprocesses: false\n", encoding="utf-8")
    res = CliRunner().invoke(
        main,
        ["run", str(tmp_path / "task.yaml"), "--cluster", str(tmp_path / "local.yaml"), "--out", str(tmp_path / "out")],
    )
    assert res.exit_code == 2 and "-77777 given in cont_na for 'income' does not occur" in res.output
    assert not (tmp_path / "out").exists()  # no .units/lock, task.json or inputs-checked.json


def test_output_and_history_are_relative_to_the_task_file_like_data_paths(tmp_path, monkeypatch):
    from pipeline.runner import default_out_dir
    from pipeline.tasks import load_task

    (tmp_path / "tasks").mkdir()
    task_file = tmp_path / "tasks" / "task.yaml"
    task_file.write_text(BASELINE_GATE.replace("gates:\n  - {measure: repU, baseline: excess, above: 1}\n", ""))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # the working directory does not matter
    task = load_task(task_file)
    assert default_out_dir(task) == tmp_path / "tasks" / "out" and task.history is None
    task_file.write_text(task_file.read_text().replace("output: out", "history: ../hist"))
    task = load_task(task_file)
    assert default_out_dir(task) == tmp_path / "tasks" / "results" / "gated"
    assert task.history == tmp_path / "tasks" / ".." / "hist"
