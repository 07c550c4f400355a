"""Nightly runs: one per date, gates against thresholds and against the previous night."""

import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from pipeline.cli import main
from pipeline.datasets import demo_path
from pipeline.store import MARKER, ResultsStore

TASK = """
name: nightly_t
history: history
output: runs
datasets:
  - name: sd
    original: {{path: {orig}, schema: {schema}}}
    synthetic:
      - {{name: release, paths: [release.csv]}}
measures:
  - type: key_blocks
    params: {{keys: [sex, age, edu, marital]}}
gates:
  - {{measure: unique_records_pct, rise_above: 2}}
  - {{measure: max_combination_size, above: 1000}}
  - {{measure: mean_combination_size, above: {above}}}
"""


def _setup(tmp_path: Path, above: float = 50.0) -> Path:
    shutil.copy(demo_path("sd2011_cart_syn1.csv"), tmp_path / "release.csv")
    task = tmp_path / "nightly.yaml"
    task.write_text(
        TASK.format(orig=demo_path("sd2011_subset.csv"), schema=demo_path("sd2011_subset.schema.json"), above=above)
    )
    cfg = tmp_path / "local.yaml"
    cfg.write_text("type: local\nn_workers: 1\nprocesses: false\n")
    return task


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # output and history folders are relative to the working directory


def _nightly(task: Path, *args: str):
    cfg = task.parent / "local.yaml"
    return CliRunner().invoke(main, ["nightly", str(task), "--cluster", str(cfg), *args])


def test_nightly_passes_then_flags_a_riskier_release(tmp_path):
    task = _setup(tmp_path)
    r1 = _nightly(task, "--date", "2026-11-01")
    assert r1.exit_code == 0, r1.output
    # same date again: a no-op unless forced
    r_again = _nightly(task, "--date", "2026-11-01")
    assert r_again.exit_code == 0 and "already in" in r_again.output
    # tonight's release breaks the joint distribution of the keys (age and marital status shuffled
    # independently), so many more of its records are unique on the keys: the rise gate must fire
    syn = pd.read_csv(tmp_path / "release.csv")
    syn["age"] = syn["age"].sample(frac=1, random_state=1).to_numpy()
    syn["marital"] = syn["marital"].sample(frac=1, random_state=2).to_numpy()
    syn.to_csv(tmp_path / "release.csv", index=False)
    r2 = _nightly(task, "--date", "2026-11-02")
    assert r2.exit_code == 3, r2.output
    assert "GATE FAILED unique_records_pct" in r2.output and "rose by" in r2.output
    gates = json.loads((tmp_path / "runs" / "2026-11-02" / "gates.json").read_text())
    failed = [g for g in gates if g["failed"]]
    assert failed and all(g["measure"] == "unique_records_pct" and g["previous"] is not None for g in failed)
    report = (tmp_path / "runs" / "2026-11-02" / "report.html").read_text()
    assert "Nightly comparison" in report and "FAILED" in report
    runs = ResultsStore(tmp_path / "history").runs("nightly_t")
    assert runs["run_date"].tolist() == ["2026-11-01", "2026-11-02"]


def test_nightly_run_folder_writes_its_manifest_last(tmp_path, monkeypatch):
    task = _setup(tmp_path)
    written: list[str] = []
    real = os.replace

    def recording(src, dst, *args, **kwargs):
        real(src, dst, *args, **kwargs)
        written.append(Path(os.path.abspath(dst)).relative_to(tmp_path).as_posix())

    monkeypatch.setattr(os, "replace", recording)
    assert _nightly(task, "--date", "2026-11-01").exit_code == 0
    run = [Path(w).name for w in written if w.startswith("runs/2026-11-01/") and "/.units/" not in w]
    assert run[-1] == "manifest.json" and {"results.parquet", "gates.json", "report.html"} <= set(run[:-1])
    assert written[-1] == "runs/2026-11-01/manifest.json"  # after the history, too
    folder = tmp_path / "runs" / "2026-11-01"
    assert max(folder.iterdir(), key=lambda p: p.stat().st_mtime_ns).name == "manifest.json"


def test_absolute_threshold_and_unknown_measure(tmp_path):
    task = _setup(tmp_path, above=1.0)
    r = _nightly(task, "--date", "2026-11-01")
    assert r.exit_code == 3 and "GATE FAILED mean_combination_size" in r.output and "> 1" in r.output
    bad = task.read_text().replace("measure: mean_combination_size", "measure: repu_typo")
    task.write_text(bad)
    r2 = _nightly(task, "--date", "2026-11-05")
    assert r2.exit_code == 2 and "gate names measure 'repu_typo'" in r2.output
    assert not (tmp_path / "history" / "run_date=2026-11-05").exists()


def test_history_folder_that_is_not_a_store_and_corrupted_previous(tmp_path):
    task = _setup(tmp_path)
    (tmp_path / "history").mkdir()
    (tmp_path / "history" / "notes.txt").write_text("mine")
    r = _nightly(task, "--date", "2026-11-01")
    assert r.exit_code == 2 and "is not a results store" in r.output
    assert (tmp_path / "history" / "notes.txt").read_text() == "mine"
    (tmp_path / "history" / "notes.txt").unlink()
    assert _nightly(task, "--date", "2026-11-01").exit_code == 0
    stored = next((tmp_path / "history").glob("run_date=2026-11-01/task=nightly_t/*.parquet"))
    stored.write_bytes(b"garbage")
    r3 = _nightly(task, "--date", "2026-11-02")
    assert r3.exit_code == 2 and "corrupted result file in the history" in r3.output
    assert stored.read_bytes() == b"garbage"  # nothing overwritten
    assert not (tmp_path / "history" / "run_date=2026-11-02").exists()
    assert (tmp_path / "history" / MARKER).exists()


@pytest.mark.parametrize("date", ["yesterday", "2026-13-01"])
def test_bad_date(tmp_path, date):
    task = _setup(tmp_path)
    r = _nightly(task, "--date", date)
    assert r.exit_code == 2 and "is not a date" in r.output


def test_history_query_command(tmp_path):
    task = _setup(tmp_path)
    assert _nightly(task, "--date", "2026-11-01").exit_code == 0
    r = CliRunner().invoke(main, ["history", str(tmp_path / "history"), "--measure", "unique_records_pct", "--csv"])
    assert r.exit_code == 0
    lines = r.output.strip().splitlines()
    assert lines[0] == "run_date,task,dataset,source,setting,synthetic,measure,role,summary,method,value"
    assert len(lines) == 1 + 2 and all(",unique_records_pct," in x for x in lines[1:])


RISK_TASK = """
name: nightly_risk
history: history
output: runs
datasets:
  - name: sd
    original: {{path: {orig}, schema: {schema}, missing_codes: {{income: -8}}}}
    synthetic:
      - {{name: release, paths: [release.csv]}}
measures:
  - type: disclosure
    params: {{keys: [sex, age, edu, marital], target: ls}}
gates:
  - {{measure: repU, above: 5}}
  - {{measure: DiSCO, rise_above: 1}}
"""


def test_riskier_release_fails_the_repu_gate(tmp_path):
    shutil.copy(demo_path("sd2011_cart_syn1.csv"), tmp_path / "release.csv")
    task = tmp_path / "nightly.yaml"
    task.write_text(
        RISK_TASK.format(orig=demo_path("sd2011_subset.csv"), schema=demo_path("sd2011_subset.schema.json"))
    )
    (tmp_path / "local.yaml").write_text("type: local\nn_workers: 1\nprocesses: false\n")
    r1 = _nightly(task, "--date", "2026-11-01")
    assert r1.exit_code == 0, r1.output
    # an exact copy of the original is refused before any work (issue 25, item 4)
    shutil.copy(demo_path("sd2011_subset.csv"), tmp_path / "release.csv")
    copy = _nightly(task, "--date", "2026-11-02")
    assert copy.exit_code == 2 and "is a copy of the original (the same records)" in copy.output
    # tonight's release copies the original's keys and target (80 % of incomes moved, so not refused
    # as a copy or a near-copy, issue 35): every unique in the original is replicated
    release = pd.read_csv(demo_path("sd2011_subset.csv"))
    release.loc[release.index % 5 != 0, "income"] += 1
    release.to_csv(tmp_path / "release.csv", index=False)
    r2 = _nightly(task, "--date", "2026-11-02")
    assert r2.exit_code == 3, r2.output
    assert "GATE FAILED repU [sd/release keys=sex+age+edu+marital;target=ls]: max repU = 8.6 > 5" in r2.output
    assert "GATE FAILED DiSCO [sd/release keys=sex+age+edu+marital;target=ls]: DiSCO rose by" in r2.output
    gates = json.loads((tmp_path / "runs" / "2026-11-02" / "gates.json").read_text())
    by_measure = {g["measure"]: g for g in gates}
    assert by_measure["repU"]["value"] == pytest.approx(8.6)  # a copy replicates all 8.6 % uniques (UiO)
    assert by_measure["repU"]["previous"] == pytest.approx(2.44)  # CART synthesis 1 (the demo's reference value)
    assert by_measure["DiSCO"]["failed"] and by_measure["DiSCO"]["value"] == pytest.approx(12.5)  # = Dorig


def test_gates_keep_entries_differing_only_in_denom_lim_apart(tmp_path):
    shutil.copy(demo_path("sd2011_cart_syn1.csv"), tmp_path / "release.csv")
    task = tmp_path / "nightly.yaml"
    two_entries = RISK_TASK.replace(
        "    params: {{keys: [sex, age, edu, marital], target: ls}}\n",
        "    params: {{keys: [sex, age, edu, marital], target: ls, denom_lim: 5}}\n"
        "  - type: disclosure\n"
        "    params: {{keys: [sex, age, edu, marital], target: ls, denom_lim: 50}}\n",
    )
    task.write_text(
        two_entries.format(orig=demo_path("sd2011_subset.csv"), schema=demo_path("sd2011_subset.schema.json"))
    )
    (tmp_path / "local.yaml").write_text("type: local\nn_workers: 1\nprocesses: false\n")
    assert _nightly(task, "--date", "2026-11-01").exit_code == 0
    r2 = _nightly(task, "--date", "2026-11-02")
    assert r2.exit_code == 0, r2.output
    gates = json.loads((tmp_path / "runs" / "2026-11-02" / "gates.json").read_text())
    repu = [g for g in gates if g["measure"] == "repU"]
    assert len(repu) == 2  # one per entry: not pooled into one value
    # canonical params: the default denom_lim (5) is left out
    assert {json.loads(g["params"]).get("denom_lim", 5) for g in repu} == {5, 50}
    assert all(g["previous"] == pytest.approx(g["value"]) for g in repu)  # each compared with its own


def test_history_run_without_params_compares_as_unknown(tmp_path):
    task = _setup(tmp_path)
    assert _nightly(task, "--date", "2026-11-01").exit_code == 0
    stored = next((tmp_path / "history").glob("run_date=2026-11-01/task=nightly_t/*.parquet"))
    pd.read_parquet(stored).drop(columns="params").to_parquet(stored, index=False)  # as written before params
    r = _nightly(task, "--date", "2026-11-02")
    assert r.exit_code == 0, r.output
    gates = json.loads((tmp_path / "runs" / "2026-11-02" / "gates.json").read_text())
    assert gates and all(g["previous"] is None for g in gates)
