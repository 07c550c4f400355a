"""Task validation errors, the CLI's exit codes, and a real run of a small task."""

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from pipeline.cli import main
from pipeline.errors import TaskError
from pipeline.runner import run_task, task_executor
from pipeline.tasks import load_task

ROOT = Path(__file__).resolve().parents[2]

BASE = """
name: t
datasets:
  - name: sd
    original: {demo: sd2011_subset}
    synthetic:
      - {name: cart, demo: sd2011_cart}
measures:
"""
PROFILE = BASE + "  - {type: profile}\n"


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "task.yaml"
    p.write_text(text)
    return p


@pytest.mark.parametrize(
    "text, message",
    [
        ("name: [unclosed", "not valid YAML"),
        ("- a\n- b\n", "a task file must be a YAML mapping"),
        (
            BASE + "  - {type: profile, colour: red}\n",
            "line 9: measures[1].colour: unknown setting; expected one of: type,",
        ),
        (
            BASE + "  - {type: profile}\n  - {type: profile, parmas: {}}\n",
            "line 10: measures[2].parmas: unknown setting; did you mean 'params'?",
        ),
        (
            BASE + "  - {type: disclosure, params: {keys: [sex], tragets: [ls]}}\n",
            "measure 'disclosure': invalid parameters: tragets: unknown setting; did you mean 'targets'?",
        ),
        (BASE + "  - {type: nosuch}\n", "unknown measure type 'nosuch'"),
        (BASE + "  - {type: key_blocks, params: {keys: [sex], n_blocks: 0}}\n", "n_blocks: Input should be greater"),
        (BASE + "  - {type: key_blocks, grid: {keys: []}}\n", "grid 'keys' is empty"),
        (BASE + "  - {type: profile, datasets: [other]}\n", "unknown dataset(s) ['other']"),
        (
            BASE + "  - {type: disclosure, params: {keys: [sex, ls], target: ls}}\n",
            "target(s) ['ls'] cannot also be keys",
        ),
        (
            BASE + "  - {type: identification_risk, params: {scenarios: {}}}\n",
            "measure 'identification_risk': invalid parameters: scenarios: Dictionary should have at least 1 item",
        ),
        ("name: t\ndatasets: []\nmeasures: [{type: profile}]\n", "datasets: List should have at least 1 item"),
        (PROFILE.replace("measures:", "execution: {policy: gpu}\nmeasures:"), "execution.policy: Input should be"),
        (PROFILE.replace("measures:", "execution: {block_rows: 0}\nmeasures:"), "execution.block_rows: Input should"),
    ],
)
def test_invalid_tasks(tmp_path, text, message):
    with pytest.raises(TaskError) as e:
        load_task(_write(tmp_path, text))
    assert message in str(e.value)
    assert "task.yaml" in str(e.value)


def test_missing_task_file(tmp_path):
    with pytest.raises(TaskError, match="task file not found"):
        load_task(tmp_path / "none.yaml")


def test_cli_unknown_variable_fails_before_any_output(tmp_path):
    task = _write(tmp_path, BASE + "  - {type: key_blocks, params: {keys: [sex, shoe_size]}}\n")
    out = tmp_path / "out"
    r = CliRunner().invoke(main, ["run", str(task), "--out", str(out)])
    assert r.exit_code == 2
    assert "variable(s) 'shoe_size' not found in" in r.output and "sd2011_subset.csv" in r.output
    assert not (out / "results.parquet").exists() and not (out / "manifest.json").exists()


def test_cli_unknown_cluster_type(tmp_path):
    task = _write(tmp_path, BASE + "  - {type: profile}\n")
    cfg = tmp_path / "c.yaml"
    cfg.write_text("type: yarn\n")
    r = CliRunner().invoke(main, ["run", str(task), "--cluster", str(cfg)])
    assert r.exit_code == 2 and "unknown cluster type 'yarn'" in r.output


def test_cli_missing_data_file(tmp_path):
    task = _write(
        tmp_path, "name: t\ndatasets:\n  - name: x\n    original: {path: nothere.csv}\nmeasures: [{type: profile}]\n"
    )
    r = CliRunner().invoke(main, ["run", str(task), "--out", str(tmp_path / "o")])
    assert r.exit_code == 2 and "data file not found" in r.output and "nothere.csv" in r.output


def test_run_writes_tidy_results_manifest_and_resumes(tmp_path):
    cfg = tmp_path / "local.yaml"
    cfg.write_text("type: local\nn_workers: 2\nprocesses: false\n")
    task = _write(tmp_path, BASE + "  - {type: profile}\n  - {type: key_blocks, grid: {keys: [[sex, edu], [agegr]]}}\n")
    out = tmp_path / "out"
    r = CliRunner().invoke(main, ["run", str(task), "--out", str(out), "--cluster", str(cfg)])
    assert r.exit_code == 0, r.output
    res = pd.read_parquet(out / "results.parquet")
    params = res["params"].map(json.loads)
    assert {tuple(p["keys"]) for p in params if "keys" in p} == {("sex", "edu"), ("agegr",)}
    assert {"keys=sex+edu", "keys=agegr"} <= set(res["setting"])  # the display text of the grid point
    agegr_total = params.map(lambda p: p.get("keys") == ["agegr"] and "size_from" not in p)
    uniq = res[(res.measure == "combinations") & agegr_total & (res.synthetic == "original")]
    assert uniq["value"].tolist() == [7.0]  # six age groups and the missing group (4 records)
    recs = res[(res.measure == "records") & (res.synthetic == "original")]["value"]
    assert recs.tolist() == [5000.0]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["rows"] == len(res) and manifest["versions"]["dask"]
    assert all(not u["cached"] for u in manifest["units"].values())
    # the re-run reuses every unit and produces the same table
    r2 = CliRunner().invoke(main, ["run", str(task), "--out", str(out), "--cluster", str(cfg)])
    assert r2.exit_code == 0, r2.output
    manifest2 = json.loads((out / "manifest.json").read_text())
    assert all(u["cached"] for u in manifest2["units"].values())
    res2 = pd.read_parquet(out / "results.parquet")
    cols = ["dataset", "source", "setting", "synthetic", "measure", "value"]
    pd.testing.assert_frame_equal(res[cols], res2[cols])


def test_execution_settings_reach_the_executor_and_do_not_change_the_table(tmp_path):
    cfg = tmp_path / "local.yaml"
    cfg.write_text("type: local\nn_workers: 2\nprocesses: false\n")
    measures = "  - {type: key_blocks, grid: {keys: [[sex, edu], [agegr, marital]]}}\n"
    tables = {}
    for policy in ("memory", "blocks"):
        text = BASE.replace("measures:", f"execution: {{policy: {policy}, block_rows: 700}}\nmeasures:") + measures
        task = load_task(_write(tmp_path, text))
        executor = task_executor(task)
        assert (executor.policy, executor.block_rows, executor.in_memory_rows) == (policy, 700, 1_000_000)
        tables[policy] = run_task(task, cluster=cfg, out_dir=tmp_path / policy, progress=False, report=False).results
    assert load_task(_write(tmp_path, BASE + measures)).spec.execution.policy == "auto"
    cols = ["dataset", "source", "setting", "params", "synthetic", "measure", "value"]
    pd.testing.assert_frame_equal(tables["memory"][cols], tables["blocks"][cols])


def test_console_script_reports_errors_with_nonzero_exit(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("::: not yaml")
    r = subprocess.run([sys.executable, "-m", "pipeline.cli", "validate", str(p)], capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.startswith("error: ") and "bad.yaml" in r.stderr
