"""The privacy-budget ledger: run folders and the history record each DP release's spend,
`history --budget` sums it per dataset over releases, and the task's cap refuses an
over-budget run before anything is written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.cli import main
from pipeline.errors import TaskError
from pipeline.privacy_ledger import (
    LEDGER_FILE,
    BudgetCap,
    Spend,
    budget_table,
    check_cap,
    ledger_entries,
    reserve,
)
from pipeline.store import ResultsStore

TASK = """
name: dp_budget
seed: {seed}
repetitions: {reps}
concurrency: 1
{cap}
datasets:
  - name: sd2011
    original: {{demo: sd2011_subset}}
    synthetic:
      - name: laplace
        synthesise: {{variables: [sex, agegr, smoke], variant: none, tol: 1.0e-6, dp: {{epsilon: 0.5}}}}
      - name: gaussian
        synthesise:
          variables: [sex, agegr, smoke]
          variant: V2
          tol: 1.0e-6
          dp: {{epsilon: 0.9, noise: gaussian, delta: 0.001, order: noise_then_coarsen}}
measures:
  - type: profile
"""


def _task(tmp_path: Path, seed: int, reps: int = 1, cap: str = "") -> Path:
    (tmp_path / "local.yaml").write_text("type: local\nn_workers: 1\nprocesses: false\n")
    p = tmp_path / f"dp_{seed}.yaml"
    p.write_text(TASK.format(seed=seed, reps=reps, cap=cap))
    return p


def _run(tmp_path: Path, task: Path, out: str) -> object:
    args = ["run", str(task), "--cluster", str(tmp_path / "local.yaml"), "--out", str(tmp_path / out)]
    return CliRunner().invoke(main, [*args, "--history", str(tmp_path / "hist"), "--no-report"])


def _spend(release: str, eps: float, delta: float = 0.0, dataset: str = "d", data: str = "h") -> Spend:
    return Spend(dataset, data, "s", 0, release, eps, delta, "laplace")


def test_budget_table_sums_per_dataset_and_counts_a_release_once() -> None:
    entries = ledger_entries(
        [_spend("r1", 0.5), _spend("r2", 0.25, 0.01), _spend("r1", 0.5), _spend("r3", 1.0, data="other")]
    )
    table = budget_table(entries)
    assert table.to_dict("records") == [
        {"dataset": "d", "data": "h", "releases": 2, "epsilon": 0.75, "delta": 0.01},
        {"dataset": "d", "data": "other", "releases": 1, "epsilon": 1.0, "delta": 0.0},
    ]


def test_cap_counts_history_and_new_releases_only() -> None:
    previous = ledger_entries([_spend("r1", 0.6)])
    check_cap(BudgetCap(epsilon=1.0), [_spend("r1", 0.6), _spend("r2", 0.4)], previous, "t.yaml")  # exactly 1.0
    with pytest.raises(TaskError, match=r"epsilon 1.1 > cap 1 \(already spent epsilon 0.6, delta 0 .* epsilon 0.5"):
        check_cap(BudgetCap(epsilon=1.0), [_spend("r3", 0.5)], previous, "t.yaml")
    with pytest.raises(TaskError, match=r"delta 0.02 > cap 0.01"):
        check_cap(BudgetCap(epsilon=5.0, delta=0.01), [_spend("r3", 0.5, 0.02)], [], "t.yaml")


def test_ledger_in_run_folder_history_budget_sums_and_cap_refuses(tmp_path: Path) -> None:
    first = _run(tmp_path, _task(tmp_path, seed=1), "run1")
    assert first.exit_code == 0, first.output
    ledger = json.loads((tmp_path / "run1" / "manifest.json").read_text())["privacy_budget"]
    by_source = {e["source"]: e for e in ledger}
    assert by_source["laplace"]["epsilon"] == pytest.approx(0.5)
    assert by_source["laplace"]["delta"] == 0.0
    # Gaussian: three two-way margins, each (0.3, 0.001)-DP -> (0.9, 0.003) under basic composition
    assert by_source["gaussian"]["epsilon"] == pytest.approx(0.9)
    assert by_source["gaussian"]["delta"] == pytest.approx(0.003)

    second = _run(tmp_path, _task(tmp_path, seed=2, reps=2), "run2")  # 4 new releases
    assert second.exit_code == 0, second.output
    out = CliRunner().invoke(main, ["history", str(tmp_path / "hist"), "--budget", "--csv"])
    assert out.exit_code == 0, out.output
    lines = out.output.strip().splitlines()
    assert lines[0] == "dataset,data,releases,epsilon,delta"
    dataset, _, releases, eps, delta = lines[1].split(",")
    assert (dataset, int(releases)) == ("sd2011", 6)
    assert float(eps) == pytest.approx(3 * (0.5 + 0.9))
    assert float(delta) == pytest.approx(3 * 0.003)

    # a cap the history already nearly uses: the next release is refused before anything is written
    before = sorted(p.name for p in (tmp_path / "hist").rglob("*"))
    capped = _task(tmp_path, seed=10, cap="privacy_budget: {epsilon: 5.0}")
    refused = _run(tmp_path, capped, "run3")
    assert refused.exit_code == 2
    assert "privacy budget of dataset 'sd2011' would be exceeded: epsilon 5.6 > cap 5" in refused.output
    assert "already spent epsilon 4.2" in refused.output and "this run's new releases epsilon 1.4" in refused.output
    assert not (tmp_path / "run3").exists()
    assert sorted(p.name for p in (tmp_path / "hist").rglob("*")) == before

    # re-running an already recorded release (same seed: cached, same noisy margins) spends nothing new
    again = _run(tmp_path, _task(tmp_path, seed=1, cap="privacy_budget: {epsilon: 5.0}"), "run1")
    assert again.exit_code == 0, again.output
    out = CliRunner().invoke(main, ["history", str(tmp_path / "hist"), "--budget"])
    assert "sd2011" in out.output and " 6 " in out.output


@pytest.mark.slow
def test_example_task_dp_vs_coarsened_report_shows_the_tradeoff(tmp_path: Path) -> None:
    """tasks/dp_vs_coarsened.yaml end to end: ledger in the manifest, utility worsens and
    repU falls as epsilon falls, and the report carries the trade-off plot."""
    from pipeline.runner import run_task
    from pipeline.tasks import load_task

    (tmp_path / "local.yaml").write_text("type: local\nn_workers: 2\nprocesses: false\n")
    task = load_task(Path(__file__).resolve().parents[2] / "tasks" / "dp_vs_coarsened.yaml")
    outcome = run_task(task, cluster=tmp_path / "local.yaml", out_dir=tmp_path / "run", progress=False)
    eps = {e["source"]: e["epsilon"] for e in outcome.manifest["privacy_budget"]}
    assert eps == {"dp_eps0.5": 0.5, "dp_eps2": 2.0, "dp_eps8": 8.0, "dp_eps32": 32.0}
    r = outcome.results
    per = r[~r["synthetic"].isin(["original", "mean"])]
    tab = per[(per["measure_name"] == "utility_tables") & (per["measure"] == "S_pMSE")].groupby("source")["value"]
    rep_u = per[per["measure"] == "repU"].groupby("source")["value"].mean()
    assert tab.mean()["dp_eps0.5"] > tab.mean()["dp_eps32"]
    assert rep_u["dp_eps0.5"] < rep_u["dp_eps32"]
    html = (tmp_path / "run" / "report.html").read_text(encoding="utf-8")
    assert "utility and risk of DP margins against epsilon, beside the other syntheses" in html


def test_validate_checks_the_cap_against_the_tasks_history(tmp_path: Path) -> None:
    task = _task(tmp_path, seed=1, cap=f"history: {tmp_path / 'hist'}\nprivacy_budget: {{epsilon: 1.0}}")
    refused = CliRunner().invoke(main, ["validate", str(task)])
    assert refused.exit_code == 2
    assert "epsilon 1.4 > cap 1 (already spent epsilon 0, delta 0 on the same data in the history" in refused.output
    assert not (tmp_path / "hist").exists()


def _synthesise(tmp_path: Path, task: Path, out: str) -> object:
    args = ["synthesise", str(task), "--cluster", str(tmp_path / "local.yaml"), "--out", str(tmp_path / out)]
    return CliRunner().invoke(main, [*args, "--history", str(tmp_path / "hist")])


def test_synthesise_records_its_spend_and_the_cap_holds_for_it(tmp_path: Path) -> None:
    """Issue 25 (3): `synthesise` wrote DP releases without recording them (3 releases over a cap)."""
    cap = "privacy_budget: {epsilon: 3.0}"
    first = _synthesise(tmp_path, _task(tmp_path, seed=1, cap=cap), "syn1")  # epsilon 0.5 + 0.9
    assert first.exit_code == 0, first.output
    ledger = [json.loads(line) for line in (tmp_path / "hist" / LEDGER_FILE).read_text().splitlines()]
    assert sorted((e["task"], e["source"], e["epsilon"]) for e in ledger) == [
        ("dp_budget", "gaussian", pytest.approx(0.9)),
        ("dp_budget", "laplace", 0.5),
    ]
    assert (tmp_path / "hist" / LEDGER_FILE).stat().st_mode & 0o777 == 0o600
    assert _synthesise(tmp_path, _task(tmp_path, seed=2, cap=cap), "syn2").exit_code == 0  # 2.8 of 3
    refused = _synthesise(tmp_path, _task(tmp_path, seed=3, cap=cap), "syn3")
    assert refused.exit_code == 2
    assert "epsilon 4.2 > cap 3 (already spent epsilon 2.8" in refused.output
    assert not (tmp_path / "syn3").exists()
    out = CliRunner().invoke(main, ["history", str(tmp_path / "hist"), "--budget", "--csv"])
    assert out.output.strip().splitlines()[1].split(",")[2:4] == ["4", "2.8"]


def test_a_cap_without_a_history_is_refused(tmp_path: Path) -> None:
    task = _task(tmp_path, seed=1, cap="privacy_budget: {epsilon: 3.0}")
    out = CliRunner().invoke(main, ["validate", str(task)])
    assert out.exit_code == 2
    assert "'privacy_budget' caps the spend recorded in a results history, and the task has none" in out.output


CHILD = """
import sys
from pipeline.errors import TaskError
from pipeline.store import ResultsStore
from pipeline.privacy_ledger import BudgetCap, Spend, reserve
from pipeline.store import ResultsStore
spend = Spend("d", "h", "s", 0, "child", 4.0, 0.0, "laplace")
try:
    with ResultsStore(sys.argv[1]).locked():
        reserve(BudgetCap(epsilon=5.0), [spend], sys.argv[1], "t", "t.yaml")
    print("recorded")
except TaskError as e:
    print(e)
"""


def test_the_cap_check_and_the_record_happen_under_one_lock(tmp_path: Path) -> None:
    """Two runs started together cannot both pass a cap only one fits: while one holds the
    history (checking and recording), the other waits, then sees its spend."""
    store = ResultsStore(tmp_path / "hist")
    with store.locked():
        child = subprocess.Popen([sys.executable, "-c", CHILD, str(store.root)], stdout=subprocess.PIPE, text=True)
        with pytest.raises(subprocess.TimeoutExpired):
            child.wait(timeout=2.0)  # waiting for the lock
        reserve(BudgetCap(epsilon=5.0), [_spend("parent", 4.0)], store.root, "t", "t.yaml")
    out, _ = child.communicate(timeout=60)
    assert "epsilon 8 > cap 5 (already spent epsilon 4" in out
    assert [json.loads(x)["release"] for x in (store.root / LEDGER_FILE).read_text().splitlines()] == ["parent"]
