"""Issue 35, items 4 and 8: the privacy budget belongs to the data, not to a name — the same file
under another dataset name, or a ``columns:`` subset of it, spends from the same budget — and a
malformed ledger is a one-line refusal (a blank line in it is no entry)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from pipeline.cli import main
from pipeline.datasets import demo_path
from pipeline.errors import DataError
from pipeline.privacy_ledger import LEDGER_FILE, history_entries

TASK = """
name: {name}
seed: {seed}
privacy_budget: {{epsilon: 5}}
history: {history}
datasets:
  - name: {dataset}
    original: {{path: {file}{columns}}}
    synthetic:
      - name: dp
        synthesise: {{variables: [sex, agegr, smoke], variant: none, tol: 1.0e-6, dp: {{epsilon: 4}}}}
measures:
  - type: profile
"""


def _task(tmp_path: Path, name: str, dataset: str, file: str = "orig.csv", columns: str = "") -> Path:
    records = pd.read_csv(demo_path("sd2011_subset.csv"))
    records.head(2000).to_csv(tmp_path / "orig.csv", index=False)
    records.tail(2000).to_csv(tmp_path / "other.csv", index=False)
    (tmp_path / "threads.yaml").write_text("type: local\nn_workers: 1\nprocesses: false\n")
    task = tmp_path / f"{name}.yaml"
    cols = f", columns: [{columns}]" if columns else ""
    task.write_text(
        TASK.format(name=name, dataset=dataset, file=file, columns=cols, seed=len(name), history=tmp_path / "hist")
    )
    return task


def _refused(out) -> str:
    assert out.exit_code == 2, out.output
    assert "Traceback" not in out.output
    (line,) = [ln for ln in out.output.splitlines() if ln.startswith("error:")]
    return line


@pytest.fixture
def spent(tmp_path: Path) -> Path:
    """A history in which dataset 'sd2011' (orig.csv) has spent epsilon 4 of its cap of 5."""
    task = _task(tmp_path, "first", "sd2011")
    args = ["run", str(task), "--cluster", str(tmp_path / "threads.yaml"), "--out", str(tmp_path / "out1")]
    out = CliRunner().invoke(main, [*args, "--no-report"])
    assert out.exit_code == 0, out.output
    return tmp_path


def test_the_same_file_under_another_name_spends_from_the_same_budget(spent: Path) -> None:
    # another seed: another release (the same release published again spends nothing new)
    line = _refused(CliRunner().invoke(main, ["validate", str(_task(spent, "second", "renamed"))]))
    assert "privacy budget of dataset 'renamed' would be exceeded: epsilon 8 > cap 5" in line
    assert "already spent epsilon 4" in line and "recorded under the name(s) 'sd2011'" in line
    args = ["run", str(_task(spent, "second", "renamed")), "--cluster", str(spent / "threads.yaml")]
    line = _refused(CliRunner().invoke(main, [*args, "--out", str(spent / "out2"), "--no-report"]))
    assert "would be exceeded" in line
    assert not (spent / "out2").exists()


def test_a_subset_of_its_columns_spends_from_the_same_budget(spent: Path) -> None:
    task = _task(spent, "third", "subset", columns="sex, agegr, smoke, age")
    line = _refused(CliRunner().invoke(main, ["validate", str(task)]))
    assert "privacy budget of dataset 'subset' would be exceeded: epsilon 8 > cap 5" in line


def test_other_records_have_their_own_budget(spent: Path) -> None:
    out = CliRunner().invoke(main, ["validate", str(_task(spent, "fourth", "sd2011", file="other.csv"))])
    assert out.exit_code == 0, out.output


def test_a_blank_line_in_the_ledger_is_no_entry_and_a_malformed_entry_is_one_line(tmp_path: Path) -> None:
    (tmp_path / LEDGER_FILE).write_text('{"dataset": "d", "data": "h", "release": "r", "epsilon": 1, "delta": 0}\n\n')
    assert [e["release"] for e in history_entries(tmp_path)] == ["r"]
    for bad in ("{}", "[1, 2]", '{"dataset": "d", "data": "h", "release": "r", "epsilon": "x", "delta": 0}'):
        (tmp_path / LEDGER_FILE).write_text(bad + "\n")
        with pytest.raises(DataError, match=r"line 1 is not a ledger entry .*corrupted privacy ledger"):
            history_entries(tmp_path)


def test_validate_with_a_malformed_ledger_is_exit_2(tmp_path: Path) -> None:
    task = _task(tmp_path, "first", "sd2011")
    (tmp_path / "hist").mkdir()
    (tmp_path / "hist" / LEDGER_FILE).write_text("{}\n")
    line = _refused(CliRunner().invoke(main, ["validate", str(task)]))
    assert "is not a ledger entry" in line


def test_the_ledger_records_the_data_in_the_form_earlier_ledgers_hold(spent: Path) -> None:
    # entries recorded before the column fingerprints are matched by name and data only: the
    # data identity must keep its form (the files' content hash, then the schema's JSON) across
    # changes of the run's own fingerprints (issue 33: those are hashes of canonical JSON now)
    import hashlib
    import json

    from pipeline.data.dataset import read_dataset
    from pipeline.tasks import content_hash

    entries = history_entries(spent / "hist")  # the ledger's line and the run manifest's entry
    original = read_dataset(spent / "orig.csv", name="sd2011")
    recorded = content_hash([spent / "orig.csv"]) + json.dumps([original.schema.to_dict()], sort_keys=True)
    assert entries and {e["data"] for e in entries} == {hashlib.sha256(recorded.encode()).hexdigest()[:16]}
