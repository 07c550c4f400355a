"""Issue 35, items 1 and 2: a holdout that is (much of) the training data and a near-copy of the
original given as a release are refused before any work (exit 2, one line, nothing written);
every run reports the share of each set's and each holdout's records equal to an original
record as rows that gates can judge."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from workflow_task_files import THREADS_CLUSTER

from pipeline.cli import main
from pipeline.datasets import demo_path
from pipeline.nightly import check_gates
from pipeline.tasks import GateSpec

HOLDOUT_TASK = """
name: holdouts
datasets:
  - name: sd
    original: {{path: train.csv}}
    holdout: {{path: {holdout}}}
    synthetic:
      - {{name: s, paths: [syn.csv]{control}}}
measures:
  - type: profile
"""


def _records() -> pd.DataFrame:
    return pd.read_csv(demo_path("sd2011_subset.csv")).head(1200)


def _write(tmp_path: Path, train: pd.DataFrame, holdout: pd.DataFrame, syn: pd.DataFrame, control: bool = False):
    train.to_csv(tmp_path / "train.csv", index=False)
    holdout.to_csv(tmp_path / "hold.csv", index=False)
    syn.to_csv(tmp_path / "syn.csv", index=False)
    (tmp_path / "threads.yaml").write_text(THREADS_CLUSTER)
    task = tmp_path / "t.yaml"
    task.write_text(HOLDOUT_TASK.format(holdout="hold.csv", control=", control: true" if control else ""))
    return task


def _threads(tmp_path: Path) -> list[str]:
    return ["--cluster", str(tmp_path / "threads.yaml")]


def _synthetic(train: pd.DataFrame) -> pd.DataFrame:
    """Each column shuffled on its own: hardly any record of the original survives."""
    return pd.DataFrame({c: train[c].sample(frac=1.0, random_state=i).to_numpy() for i, c in enumerate(train.columns)})


def _one_line_refusal(out, *needles: str) -> None:
    assert out.exit_code == 2, out.output
    assert "Traceback" not in out.output
    lines = [ln for ln in out.output.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1, out.output
    for n in needles:
        assert n in lines[0], lines[0]


@pytest.mark.parametrize(
    "holdout",
    [
        lambda train: train,  # the training file itself
        lambda train: train.sample(frac=1.0, random_state=1),  # a shuffled copy
        lambda train: train.head(300),  # some of its records
    ],
    ids=["same", "shuffled", "subset"],
)
def test_the_training_data_as_the_holdout_is_refused(tmp_path: Path, holdout) -> None:
    records = _records()
    train = records.head(800)
    task = _write(tmp_path, train, holdout(train), _synthetic(train))
    out = CliRunner().invoke(main, ["validate", str(task)])
    _one_line_refusal(out, "dataset 'sd': holdout", "hold.csv", "100.00% of its records are records of the original")
    out = CliRunner().invoke(
        main, ["run", str(task), "--out", str(tmp_path / "out"), "--cluster", str(tmp_path / "threads.yaml")]
    )
    _one_line_refusal(out, "hold.csv")
    assert not (tmp_path / "out").exists()


def test_a_holdout_of_other_records_passes_and_its_overlap_is_a_row(tmp_path: Path) -> None:
    records = _records()
    train, holdout = records.head(800), records.tail(400)
    task = _write(tmp_path, train, holdout, _synthetic(train))
    out = CliRunner().invoke(
        main,
        ["run", str(task), "--out", str(tmp_path / "out"), *_threads(tmp_path), "--no-report"],
    )
    assert out.exit_code == 0, out.output
    # the parquet table: its empty role columns are missing values, as the gates read them
    results = pd.read_parquet(tmp_path / "out" / "results.parquet")
    rows = results[results["family"] == "integrity"]
    hold = rows[rows["measure"] == "holdout_overlap_share"]
    assert list(hold["synthetic"]) == ["holdout"] and list(hold["dataset"]) == ["sd"]
    expected = holdout.merge(train.drop_duplicates(), how="inner").shape[0] / len(holdout)
    assert hold["value"].iloc[0] == pytest.approx(expected)
    sets = rows[rows["measure"] == "overlap_share"]
    assert list(sets["source"]) == ["s"] and list(sets["synthetic"].astype(str)) == ["1"]
    syn = _synthetic(train)
    assert sets["value"].iloc[0] == pytest.approx(syn.merge(train.drop_duplicates(), how="inner").shape[0] / 800)
    # gateable like any measure: a gate on the overlap share fails above its threshold
    (check,) = check_gates(results, None, [GateSpec(measure="overlap_share", above=-1.0)])
    assert check.failed and check.source == "s"
    (check,) = check_gates(results, None, [GateSpec(measure="holdout_overlap_share", above=0.5)])
    assert not check.failed and check.value == pytest.approx(expected)


@pytest.mark.parametrize(
    ("near_copy", "share"),
    [
        (lambda o: pd.concat([o, _synthetic(o).head(10)]), "98.77%"),  # the original plus 10 records
        (lambda o: o.sample(frac=0.8, random_state=2), "100.00%"),  # an 80 % subset
        (
            lambda o: o.assign(income=o["income"].where(o.index % 50 != 0, o["income"] + 1)),
            "98.25%",
        ),  # 2 % changed
    ],
    ids=["plus10", "subset80", "changed2pc"],
)
def test_near_copies_are_refused_unless_a_control(tmp_path: Path, near_copy, share: str) -> None:
    records = _records()
    train = records.head(800)
    task = _write(tmp_path, train, records.tail(400), near_copy(train))
    out = CliRunner().invoke(main, ["validate", str(task)])
    _one_line_refusal(
        out, "source 's': synthetic set 1", f"({share} of its records are records of the original", "control: true"
    )
    task = _write(tmp_path, train, records.tail(400), near_copy(train), control=True)
    out = CliRunner().invoke(main, ["validate", str(task)])
    assert out.exit_code == 0, out.output


PARTIAL_TASK = """
name: partial_overlap
execution: {{policy: {policy}}}
datasets:
  - name: cedata
    original: {{demo: cedata}}
    synthetic:
      - name: s1
        synthesise: {{kind: partial, method: {{Income: cart}}, m: 2}}
measures:
  - type: profile
"""


@pytest.mark.parametrize("policy", ["auto", "blocks"])  # the synthesis in one task with its units, or alone
def test_a_synthesised_sets_overlap_is_a_row(tmp_path: Path, policy: str) -> None:
    from pipeline.datasets import load_demo

    (tmp_path / "threads.yaml").write_text(THREADS_CLUSTER)
    task = tmp_path / "t.yaml"
    task.write_text(PARTIAL_TASK.format(policy=policy))
    out = tmp_path / "out"
    res = CliRunner().invoke(main, ["run", str(task), "--out", str(out), *_threads(tmp_path), "--no-report"])
    assert res.exit_code == 0, res.output
    results = pd.read_csv(out / "results.csv", keep_default_na=False)
    rows = results[results["measure"] == "overlap_share"].sort_values("synthetic")
    assert list(rows["source"]) == ["s1", "s1"] and list(rows["synthetic"].astype(str)) == ["1", "2"]
    original = load_demo("cedata").to_pandas().astype(object)
    for value, path in zip(rows["value"], sorted((out / "synthesis").rglob("syn*.parquet")), strict=True):
        synthetic = pd.read_parquet(path).astype(object)
        expected = synthetic.merge(original.drop_duplicates(), how="inner").shape[0] / len(synthetic)
        assert 0 < expected < 1 and value == pytest.approx(expected)


def test_each_original_is_hashed_once_per_variable_set_for_every_synthesis(monkeypatch) -> None:
    # every synthesis of a dataset (repetitions, sources) compares its sets with the original's
    # record hashes: they are computed once per run and variable set, not once per synthesis
    import numpy as np

    from pipeline.datasets import load_demo
    from pipeline.evaluation.execution import Executor
    from pipeline.run import integrity

    calls = []
    real = integrity.record_hashes
    monkeypatch.setattr(integrity, "record_hashes", lambda ds, ex: calls.append(ds) or real(ds, ex))
    sd = load_demo("sd2011_subset")
    executor = Executor(policy="memory")
    hashes = integrity.OriginalHashes({"sd": sd}, executor)
    first = hashes("sd", ["sex", "age"])
    assert hashes("sd", ["sex", "age"]) is first and len(calls) == 1
    other = hashes("sd", ["sex", "age", "edu"])
    assert len(calls) == 2 and len(other) == len(first) == len(sd.to_pandas())
    (expected,) = real([sd.select(["sex", "age"])], executor)
    np.testing.assert_array_equal(first, expected)
