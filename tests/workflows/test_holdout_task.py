"""A dataset's ``holdout:`` in a task: a file read as the original is, or a seeded split of the
original before synthesis; the runner's baseline and summary rows, the first screen's excess
verdicts, gates on interval bounds, and the refusals of ``validate`` (exit 2, naming the line)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from pipeline.cli import main
from pipeline.datasets import load_demo
from pipeline.errors import TaskError
from pipeline.nightly import check_gates
from pipeline.report.baselines import ADDS_RISK, NO_EXCESS, excess_summary
from pipeline.report.html import render
from pipeline.report.summary import release_summary
from pipeline.row_params import of_kind
from pipeline.run.split import HoldoutSplit
from pipeline.runner import run_task, validate_task
from pipeline.tasks import GateSpec, load_task

COLS = ["dataset", "source", "repetition", "family", "measure_name", "params", "synthetic", "measure", "role",
        "summary", "method", "value"]  # fmt: skip
KEYS = "[Urban, Tenure, Educ, Marital]"

SPLIT_TASK = f"""
name: split
seed: 3
baseline: {{permutations: 4}}
datasets:
  - name: ce
    original: {{demo: cedata}}
    holdout: {{fraction: 0.25}}
    synthetic:
      - name: partial
        synthesise: {{kind: partial, method: {{Income: cart}}, m: 2}}
measures:
  - type: disclosure
    params: {{keys: {KEYS}, targets: [Income], ngroups_targets: {{Income: 5}}}}
"""


@pytest.fixture(scope="module")
def cedata() -> pd.DataFrame:
    return load_demo("cedata").to_pandas().reset_index(drop=True)


@pytest.fixture(scope="module")
def parts(cedata, tmp_path_factory) -> Path:
    """CEdata in three random parts of one population: training, holdout and an independent draw."""
    folder = tmp_path_factory.mktemp("parts")
    order = np.random.default_rng(11).permutation(len(cedata))
    thirds = np.array_split(order, 3)
    for name, rows in zip(("training", "holdout", "independent"), thirds, strict=True):
        cedata.iloc[np.sort(rows)].to_parquet(folder / f"{name}.parquet", index=False)
    # the schema travels with the data: the original's
    (folder / "ce.schema.json").write_text(json.dumps(load_demo("cedata").schema.to_dict()))
    return folder


def _local(tmp_path: Path, workers: int = 1) -> str:
    path = tmp_path / f"local{workers}.yaml"
    path.write_text(f"type: local\nn_workers: {workers}\nthreads_per_worker: 1\nprocesses: false\n")
    return str(path)


def _file_task(folder: Path, holdout: str = "holdout.parquet", extra: str = "") -> str:
    return f"""
name: files
seed: 4
baseline: {{permutations: 10}}
datasets:
  - name: ce
    original: {{path: {folder}/training.parquet, schema: {folder}/ce.schema.json}}
    holdout: {folder}/{holdout}
    synthetic:
      # a deliberate leak: the training records themselves (control: the copy check lets it through)
      - {{name: leak, paths: [{folder}/training.parquet], control: true}}
      - {{name: independent, paths: [{folder}/independent.parquet]}}
measures:
  - type: disclosure
    params: {{keys: {KEYS}, targets: [Income], ngroups_targets: {{Income: 5}}}}
  - type: dcr
{extra}"""


def _write(tmp_path: Path, text: str, name: str = "task.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_fraction_holdout_is_split_off_before_synthesis_and_recorded(tmp_path, cedata):
    task = load_task(_write(tmp_path, SPLIT_TASK))
    outcome = run_task(task, cluster=_local(tmp_path), out_dir=tmp_path / "out", progress=False, report=False)
    record = outcome.manifest["holdouts"]["ce"]
    n_hold = round(0.25 * len(cedata))
    assert record["kind"] == "fraction" and record["fraction"] == 0.25 and record["seed"] == 3
    assert (record["training_records"], record["holdout_records"]) == (len(cedata) - n_hold, n_hold)
    assert len(record["fingerprint"]) == 20
    # the synthesiser saw the training part only: the row-aligned sets have its records, whose known
    # values are the training records' (not the holdout's)
    positions = HoldoutSplit(0.25, 3).holdout_positions(len(cedata))
    training = cedata.drop(index=positions).reset_index(drop=True)
    sets = [pd.read_parquet(p) for p in sorted((tmp_path / "out" / "synthesis").rglob("syn*.parquet"))]
    assert len(sets) == 2
    for s in sets:
        assert len(s) == len(training)
        pd.testing.assert_series_equal(s["Tenure"].astype(str), training["Tenure"].astype(str), check_names=False)
    # the manifest records settings and counts, never a value
    assert set(record) == {"kind", "fraction", "seed", "training_records", "holdout_records", "fingerprint"}
    results = outcome.results
    assert set(results["role"]) >= {"observed", "training", "holdout", "excess", "residual"}
    upper = of_kind(results[results["measure"] == "repU"], "excess", "upper95")
    assert len(upper) == 1 and np.isfinite(upper["value"].iloc[0])


def test_the_split_is_seeded_and_a_changed_fraction_changes_the_fingerprints(tmp_path):
    a = validate_task(load_task(_write(tmp_path, SPLIT_TASK, "a.yaml")))
    b = validate_task(load_task(_write(tmp_path, SPLIT_TASK, "b.yaml")))
    c = validate_task(load_task(_write(tmp_path, SPLIT_TASK.replace("0.25", "0.3"), "c.yaml")))
    assert [u.fingerprint for u in a] == [u.fingerprint for u in b]
    assert not {u.fingerprint for u in a} & {u.fingerprint for u in c}
    np.testing.assert_array_equal(
        HoldoutSplit(0.25, 3).holdout_positions(1000), HoldoutSplit(0.25, 3).holdout_positions(1000)
    )
    assert not np.array_equal(
        HoldoutSplit(0.25, 3).holdout_positions(1000), HoldoutSplit(0.25, 4).holdout_positions(1000)
    )


def test_a_copy_of_the_training_records_adds_risk_an_independent_draw_does_not(tmp_path, parts):
    task = load_task(_write(tmp_path, _file_task(parts)))
    outcome = run_task(task, cluster=_local(tmp_path), out_dir=tmp_path / "out", progress=False)
    assert outcome.manifest["holdouts"]["ce"]["kind"] == "file"
    table = excess_summary(outcome.results).set_index(["source", "figure"])
    leak, independent = table.loc["leak"], table.loc["independent"]
    assert leak.loc["repU (%)", "verdict"] == ADDS_RISK
    assert leak.loc["repU (%)", "difference"] > leak.loc["repU (%)", "holdout"]
    assert leak.loc["dcr: share closer to training (%)", "training"] > 99
    assert leak.loc["dcr: share closer to training (%)", "verdict"] == ADDS_RISK
    for figure in ("repU (%)", "DiSCO (%)"):
        assert independent.loc[figure, "verdict"] == NO_EXCESS
        assert independent.loc[figure, "difference_lower95"] <= 0 <= independent.loc[figure, "difference_upper95"]
    assert abs(independent.loc["dcr: share closer to training (%)", "difference"]) < 5  # percentage points
    # the report's first screens: the headlines are the measures' own rows, the excess beside them
    own = of_kind(outcome.results)
    headline = release_summary(outcome.results, outcome.manifest).set_index(["source", "headline"])
    repu = own[(own["measure"] == "repU") & (own["source"] == "leak") & own["synthetic"].str.isdigit()]
    assert headline.loc[("leak", "repU (%)"), "value"] == pytest.approx(repu["value"].max())
    page = render(outcome)
    assert page.index('id="summary"') < page.index('id="excess"') < page.index('id="metadata"')
    assert ADDS_RISK in page and NO_EXCESS in page and "training vs holdout" in page


def test_gates_judge_own_rows_or_the_named_summary_and_baseline(tmp_path, parts):
    task = load_task(_write(tmp_path, _file_task(parts)))
    results = run_task(task, cluster=_local(tmp_path), out_dir=tmp_path / "out", progress=False, report=False).results
    leak = results[results["source"] == "leak"]
    own = check_gates(leak, None, [GateSpec(measure="repU", above=1e9)])
    assert len(own) == 1 and not own[0].failed
    # "the excess interval is above 0": fails for the copy, passes for the independent draw
    gate = GateSpec(measure="repU", baseline="excess", summary="lower95", above=0.0)
    checks = {c.source: c for c in check_gates(results, None, [gate])}
    expected = of_kind(leak[leak["measure"] == "repU"], "excess", "lower95")["value"].iloc[0]
    assert checks["leak"].value == expected > 0 and checks["leak"].failed
    assert checks["leak"].measure == "repU excess lower95" and "repU excess lower95 =" in checks["leak"].reason
    assert checks["independent"].value < 0 and not checks["independent"].failed
    with pytest.raises(TaskError, match="no such rows of 'repU'"):
        check_gates(leak, None, [GateSpec(measure="repU", summary="upper95", above=1.0)])  # m = 1: no t interval


def test_results_with_a_holdout_do_not_depend_on_partitions_or_workers(tmp_path, cedata):
    """1 vs 3 partitions of the original and the holdout, 1 vs 2 workers, blocks policy."""
    order = np.random.default_rng(2).permutation(len(cedata))
    train, hold, syn = (cedata.iloc[np.sort(r)].reset_index(drop=True) for r in np.array_split(order, 3))
    schema = json.dumps(load_demo("cedata").schema.to_dict())
    tables = []
    for n_parts, workers in ((1, 1), (3, 2)):
        folder = tmp_path / f"p{n_parts}"
        for name, frame in (("training", train), ("holdout", hold), ("syn", syn)):
            (folder / name).mkdir(parents=True)
            for i, rows in enumerate(np.array_split(np.arange(len(frame)), n_parts)):
                frame.iloc[rows].to_parquet(folder / name / f"part{i}.parquet", index=False)
        (folder / "ce.schema.json").write_text(schema)
        text = f"""
name: invariance
seed: 8
baseline: {{permutations: 3}}
execution: {{policy: blocks}}
datasets:
  - name: ce
    original: {{path: {folder}/training, schema: {folder}/ce.schema.json}}
    holdout: {folder}/holdout
    synthetic:
      - {{name: s, paths: [{folder}/syn]}}
measures:
  - type: disclosure
    params: {{keys: {KEYS}, targets: [Income], ngroups_targets: {{Income: 5}}}}
  - type: dcr
"""
        task = load_task(_write(tmp_path, text, f"t{n_parts}.yaml"))
        out = run_task(
            task, cluster=_local(tmp_path, workers), out_dir=tmp_path / f"out{n_parts}", progress=False, report=False
        )
        tables.append(out.results[COLS].reset_index(drop=True))
    pd.testing.assert_frame_equal(tables[0], tables[1])
    assert len(of_kind(tables[0][tables[0]["measure"] == "repU"], "excess", "upper95")) == 1


@pytest.mark.parametrize(
    "holdout, message",
    [
        ("{fraction: 1.5}", "line 8: datasets[1].holdout.fraction: Input should be less than 1"),
        ("{fraction: 0}", "line 8: datasets[1].holdout.fraction: Input should be greater than 0"),
        ("{path: a.csv, fraction: 0.2}", "give exactly one of 'path' (a holdout file), 'fraction' (split"),
        ("{demo: register_holdout}", "holdout: demo 'register_holdout' is not a holdout of this original"),
        ("{path: a.csv, seed: 3}", "'seed' is for a 'fraction' split"),
        ("{fraction: 0.2}", "source(s) 'leak', 'independent' were not made here"),
        ("{fraction: 0.2, colour: red}", "datasets[1].holdout.colour: unknown setting"),
    ],
)
def test_validate_refuses_bad_holdout_settings(tmp_path, parts, holdout, message):
    text = _file_task(parts).replace(f"holdout: {parts}/holdout.parquet", f"holdout: {holdout}")
    result = CliRunner().invoke(main, ["validate", str(_write(tmp_path, text))])
    assert result.exit_code == 2, result.output
    assert message in result.output


def _bad_file(parts: Path, name: str, frame: pd.DataFrame) -> str:
    frame.to_parquet(parts / name, index=False)
    return name


@pytest.mark.parametrize(
    "change, message",
    [
        (
            lambda f: f.drop(columns=["Income"]),
            r"a holdout must hold the original's variables \(.*\): missing 'Income'",
        ),
        (lambda f: f.assign(extra=1.0), "extra 'extra'"),
        (lambda f: f.head(5), "has 5 records; a holdout needs at least 20"),
    ],
)
def test_validate_refuses_a_holdout_file_that_does_not_fit(tmp_path, parts, cedata, change, message):
    name = _bad_file(parts, f"bad_{len(list(parts.iterdir()))}.parquet", change(cedata.head(100)))
    result = CliRunner().invoke(main, ["validate", str(_write(tmp_path, _file_task(parts, name)))])
    assert result.exit_code == 2, result.output
    assert "line 8: dataset 'ce': holdout" in result.output and name in result.output
    assert re.search(message, result.output), result.output


def test_a_fraction_leaving_too_few_records_is_refused(tmp_path):
    text = SPLIT_TASK.replace("0.25", "0.001")
    with pytest.raises(TaskError, match=r"line 8: dataset 'ce': holdout: .*leaves 6 holdout .* at least 20"):
        validate_task(load_task(_write(tmp_path, text)))


def test_without_a_holdout_m_sets_get_t_intervals_and_no_baseline(tmp_path):
    text = """
name: sets
datasets:
  - name: sd
    original: {demo: sd2011_subset}
    synthetic:
      - {name: cart, demo: sd2011_cart}
measures:
  - type: disclosure
    params: {keys: [sex, agegr], targets: [ls]}
"""
    outcome = run_task(
        load_task(_write(tmp_path, text)),
        cluster=_local(tmp_path),
        out_dir=tmp_path / "o",
        progress=False,
        report=False,
    )
    results = outcome.results
    assert outcome.manifest["holdouts"] == {}
    assert of_kind(results, role="excess").empty
    own = of_kind(results[results["measure"] == "repU"])
    values = own.loc[own["synthetic"].str.isdigit(), "value"].to_numpy()
    assert len(values) == 5
    (mean,) = of_kind(results[results["measure"] == "repU"], summary="mean")["value"]
    (upper,) = of_kind(results[results["measure"] == "repU"], summary="upper95")["value"]
    half = 2.7764451051977987 * values.std(ddof=1) / np.sqrt(5)  # t(0.975, 4)
    assert mean == pytest.approx(values.mean()) and upper == pytest.approx(values.mean() + half)
