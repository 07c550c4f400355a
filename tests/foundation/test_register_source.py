"""The generated register as a task source: `demo: register` with `rows:`, its twin, validation, reuse."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from pipeline.cli import main
from pipeline.errors import TaskError
from pipeline.tasks import load_task

TASK = """
name: reg
datasets:
  - name: people  # not the demo's name: the twin takes the rows of its own dataset entry
    original: {{demo: register, rows: {rows}}}
    synthetic:
      - {{name: twin, demo: register_twin}}
measures:
  - type: disclosure
    params: {{keys: [sex, age, municipality, edu], targets: [marital, income], ngroups_targets: {{income: 5}}}}
  - type: identification_risk
    params:
      radius: 0.1
      scenarios:
        money: {{known: [sex, municipality, age], synthesised: [income, expenditure]}}
"""


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("SDC_PIPELINE_CACHE", str(folder))
    return folder


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "task.yaml"
    p.write_text(text)
    return p


@pytest.mark.parametrize(
    "rows, message",
    [
        ("10", "datasets[1].original.rows: Input should be greater than or equal to 1000"),
        ("60000000", "datasets[1].original.rows: Input should be less than or equal to 50000000"),
        ("many", "datasets[1].original.rows: Input should be a valid integer"),
        ("2500.5", "datasets[1].original.rows: Input should be a valid integer"),
    ],
)
def test_bad_rows_are_task_errors(tmp_path: Path, rows: str, message: str) -> None:
    with pytest.raises(TaskError) as e:
        load_task(_write(tmp_path, TASK.format(rows=rows)))
    assert message in str(e.value) and "task.yaml" in str(e.value)


def test_rows_only_for_a_generated_demo_and_twin_only_with_its_register(tmp_path: Path) -> None:
    text = TASK.format(rows=2000).replace("demo: register, rows: 2000", "demo: sd2011_subset, rows: 2000")
    with pytest.raises(TaskError, match="'rows' is only for a generated demo \\(register\\)"):
        load_task(_write(tmp_path, text))
    text = TASK.format(rows=2000).replace("demo: register, rows: 2000", "demo: cedata")
    with pytest.raises(TaskError, match=r"demo 'register_twin' is generated with its original: .*'demo: register'"):
        load_task(_write(tmp_path, text))


def test_cli_bad_rows_exit_2_without_output(tmp_path: Path) -> None:
    out = tmp_path / "out"
    r = CliRunner().invoke(main, ["run", str(_write(tmp_path, TASK.format(rows=5))), "--out", str(out)])
    assert r.exit_code == 2 and "rows: Input should be greater than or equal to 1000" in r.output
    assert not out.exists()


def test_demo_data_lists_the_register() -> None:
    r = CliRunner().invoke(main, ["demo-data"])
    assert r.exit_code == 0
    assert "original   register " in r.output and "synthetic  register_twin " in r.output


def test_run_generates_once_and_reuses(tmp_path: Path, cache: Path) -> None:
    cfg = tmp_path / "local.yaml"
    cfg.write_text("type: local\nn_workers: 2\nprocesses: false\n")
    task = _write(tmp_path, TASK.format(rows=3000))
    out = tmp_path / "out"
    r = CliRunner().invoke(main, ["run", str(task), "--out", str(out), "--cluster", str(cfg)])
    assert r.exit_code == 0, r.output
    (folder,) = (cache / "demo").iterdir()
    assert folder.name == "register_3000_s1919"
    stamp = (folder / "manifest.json").stat().st_mtime_ns
    results = pd.read_parquet(out / "results.parquet")
    # integrity: every run's overlap of each set with the original (issue 35)
    assert set(results["family"]) == {"disclosure", "identification_risk", "integrity"}
    repu = results[(results["measure"] == "repU") & (results["synthetic"] == "1")]["value"]
    assert len(repu) == 2 and (repu > 0).all()  # 3,000 records over ~40,000 cells: many uniques replicated
    r = CliRunner().invoke(main, ["run", str(task), "--out", str(tmp_path / "again"), "--cluster", str(cfg)])
    assert r.exit_code == 0, r.output
    assert (folder / "manifest.json").stat().st_mtime_ns == stamp  # the data were reused
    again = pd.read_parquet(tmp_path / "again" / "results.parquet")
    pd.testing.assert_series_equal(results["value"], again["value"])
