"""A partial synthesis of in-memory data runs as one task and the measure units on its sets as
one task each (groups.RepetitionGroup): the same table and sets as synthesising first and evaluating unit by
unit, a resumed run evaluates the cached sets without synthesising again, and errors name the
task file and the unit."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from pipeline import runner
from pipeline.errors import PipelineError
from pipeline.run import groups, work
from pipeline.run.cache import synthesised_frames, synthesised_sets
from pipeline.synth.partial import syn
from pipeline.tasks import load_task

TASK = """
name: groups
seed: 5
repetitions: 2
concurrency: 2
datasets:
  - name: cedata
    original: {demo: cedata}
    synthetic:
      - name: s1
        synthesise: {kind: partial, method: {Income: cart}, m: 2}
measures:
  - type: identification_risk
    params:
      scenarios:
        s1: {known: [Urban, Tenure, Educ, Marital], synthesised: [Income]}
      radius_grid: [0.05, 0.1]
  - type: utility_gen
    params: {method: logit, maxorder: 1, vars: [Urban, Tenure, Income]}
"""

COLS = ["dataset", "source", "repetition", "family", "measure_name", "params", "synthetic", "measure", "value"]


@pytest.fixture
def task(tmp_path: Path):
    (tmp_path / "local.yaml").write_text("type: local\nn_workers: 2\nprocesses: false\n")
    (tmp_path / "task.yaml").write_text(TASK)
    return load_task(tmp_path / "task.yaml")


def _run(task, out: Path):
    return runner.run_task(
        task, cluster=str(task.path.parent / "local.yaml"), out_dir=out, progress=False, report=False
    )


def _sets(out: Path) -> list[pd.DataFrame]:
    return [pd.read_parquet(p) for p in sorted((out / "synthesis").rglob("syn*.parquet"))]


def test_groups_give_the_table_and_sets_of_units_run_one_by_one(task, tmp_path, monkeypatch):
    log = tmp_path / "tasks.txt"  # written by the task (which a worker may run on a copy of this function)
    real = groups.repetition_task

    def logging(schema, execution, frames, job):
        with log.open("a") as f:
            f.write(f"{job.synthesis.label} sets given: {job.given}, units: {len(job.units)}\n")
        return real(schema, execution, frames, job)

    with monkeypatch.context() as m:
        m.setattr(groups, "repetition_task", logging)
        grouped = _run(task, tmp_path / "grouped")
    # per repetition the synthesis as one task, then each unit on its 2 sets as one task
    assert sorted(log.read_text().splitlines()) == [
        *(["synthesise cedata/s1 sets given: 0, units: 0"] + ["synthesise cedata/s1 sets given: 2, units: 1"] * 2),
        *(["synthesise cedata/s1#1 sets given: 0, units: 0"] + ["synthesise cedata/s1#1 sets given: 2, units: 1"] * 2),
    ]
    with monkeypatch.context() as m:
        m.setattr(work, "repetition_groups", lambda *a: [])
        alone = _run(task, tmp_path / "alone")
    pd.testing.assert_frame_equal(grouped.results[COLS], alone.results[COLS])
    assert set(grouped.results["measure"]) >= {"file_risk_at_max", "S_pMSE"}
    a, b = _sets(tmp_path / "grouped"), _sets(tmp_path / "alone")
    assert len(a) == 4
    for x, y in zip(a, b, strict=True):
        pd.testing.assert_frame_equal(x, y)
    # the groups' direct read of the cached sets gives the frames a Dask read computes
    inputs = runner.read_inputs(task, runner.task_executor(task), with_sources=True)
    for s in inputs.syntheses:
        direct = synthesised_frames(s, tmp_path / "grouped" / ".units")
        through_dask = [d.to_pandas() for d in synthesised_sets(s, tmp_path / "grouped" / ".units")]
        assert len(direct) == 2
        for x, y in zip(direct, through_dask, strict=True):
            pd.testing.assert_frame_equal(x, y)


def test_resumed_group_evaluates_the_cached_sets(task, tmp_path, monkeypatch):
    out = tmp_path / "run"
    first = _run(task, out)
    # the measure units of repetition 1 were lost; its synthesis is cached
    lost = [k for k, u in first.manifest["units"].items() if "#1" in k and not k.startswith("synthesise")]
    assert len(lost) == 2
    for k in lost:
        fp = first.manifest["units"][k]["fingerprint"]
        for suffix in (".parquet", ".json"):
            (out / ".units" / f"{fp}{suffix}").unlink()

    def forbidden(*args, **kwargs):
        raise AssertionError("a cached synthesis must not run again")

    monkeypatch.setattr(syn, "synthesise_partial_frame", forbidden)
    resumed = _run(task, out)
    cached = {k: u["cached"] for k, u in resumed.manifest["units"].items()}
    assert [k for k, c in cached.items() if not c] == lost
    pd.testing.assert_frame_equal(first.results[COLS], resumed.results[COLS])


def test_a_failing_unit_in_a_group_names_the_task_and_the_unit(task, tmp_path, monkeypatch):
    def failing(unit, data, executor):
        raise ValueError("boom")

    monkeypatch.setattr(groups, "evaluated", failing)
    with pytest.raises(PipelineError) as info:
        _run(task, tmp_path / "run")
    message = str(info.value)
    assert message.startswith(f"{task.path}: measure ") and "cedata/s1" in message
    assert message.endswith("failed: ValueError: boom")
    # the synthesis before the failing unit is cached; no results were written
    assert len(list((tmp_path / "run" / ".units" / "synthesis").glob("*/summary.json"))) >= 1
    assert not (tmp_path / "run" / "results.parquet").exists()
