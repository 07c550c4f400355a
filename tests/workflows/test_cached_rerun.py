"""Issue 23 item 2: a rerun whose every unit is cached starts no cluster and draws no figure,
a rerun with new work sends to the cluster only the data that work reads, and the checks of
the data as a whole are repeated when what they depend on (a source's ``control``) changes."""

from __future__ import annotations

import json
import re

import pandas as pd
from click.testing import CliRunner
from workflow_task_files import COPY_TASK, THREADS_CLUSTER, small_task

import pipeline.cluster
import pipeline.report.markup
import pipeline.run.inputs
from pipeline.cli import main
from pipeline.datasets import demo_path
from pipeline.run.integrity import CHECKED_FILE
from pipeline.runner import run_task
from pipeline.tasks import load_task

IMAGES = re.compile(r'<img alt="([^"]+)" src="data:image/png;base64,([^"]+)"')


def _no_cluster(*args, **kwargs):
    raise AssertionError("a rerun from cached units started a cluster")


def _no_drawing(*args, **kwargs):
    raise AssertionError("a rerun from cached units drew a figure")


def test_a_fully_cached_rerun_starts_no_cluster_and_draws_no_figure(tmp_path, monkeypatch):
    task, cluster = small_task(tmp_path, "rerun", synth=True)
    # its figure is drawn from rows with every column of the results table (run_id aside)
    disclosure = "  - type: disclosure\n    params: {keys: [sex, edu], targets: [agegr]}\n"
    task.write_text(task.read_text() + disclosure, encoding="utf-8")
    out = tmp_path / "out"
    first = run_task(load_task(task), cluster=cluster, out_dir=out, progress=False)
    assert first.manifest["cluster_started"] is True
    report = (out / "report.html").read_text()
    figures = IMAGES.findall(report)
    assert figures and len(list((out / ".units" / "figures").glob("*.png"))) == len(figures)

    monkeypatch.setattr(pipeline.cluster, "connect", _no_cluster)
    monkeypatch.setattr(pipeline.report.markup, "figure_png", _no_drawing)
    again = run_task(load_task(task), cluster=cluster, out_dir=out, progress=False)
    assert again.manifest["cluster_started"] is False
    assert all(u["cached"] for u in again.manifest["units"].values())
    pd.testing.assert_frame_equal(
        again.results.drop(columns="run_id"), first.results.drop(columns="run_id"), check_exact=True
    )
    assert again.manifest["holdouts"] == first.manifest["holdouts"]
    # the same figures, byte for byte, from the folder's figure cache
    assert IMAGES.findall((out / "report.html").read_text()) == figures


def test_a_rerun_with_new_work_persists_only_what_that_work_reads(tmp_path, monkeypatch):
    task, cluster = small_task(tmp_path, "rerun", synth=False)
    out = tmp_path / "out"
    run_task(load_task(task), cluster=cluster, out_dir=out, progress=False, report=False)
    # a new measure on the original alone: the CART sets, whose unit is cached, stay on disk
    task.write_text(task.read_text() + "  - type: profile\n", encoding="utf-8")
    persisted: list[str] = []
    persist = pipeline.run.inputs._persisted

    def recording(datasets, executor):
        datasets = list(datasets)
        persisted.extend(d.name for d in datasets)
        return persist(datasets, executor)

    monkeypatch.setattr(pipeline.run.inputs, "_persisted", recording)
    outcome = run_task(load_task(task), cluster=cluster, out_dir=out, progress=False, report=False)
    assert outcome.manifest["cluster_started"] is True
    assert [u["cached"] for u in outcome.manifest["units"].values()] == [True, False]
    assert persisted == ["sd2011_subset"]


def test_a_cached_rerun_checks_the_inputs_again_when_a_source_is_no_longer_a_control(tmp_path):
    original = pd.read_csv(demo_path("sd2011_subset.csv")).head(300)
    original.to_csv(tmp_path / "orig.csv", index=False)
    original.to_csv(tmp_path / "syn.csv", index=False)  # the original as its own (control) set
    task = tmp_path / "t.yaml"
    task.write_text(COPY_TASK.format(file="syn.csv", control=", control: true"))
    (tmp_path / "threads.yaml").write_text(THREADS_CLUSTER)
    args = ["run", str(task), "--out", str(tmp_path / "out"), "--cluster", str(tmp_path / "threads.yaml")]
    assert CliRunner().invoke(main, [*args, "--no-report"]).exit_code == 0
    checked = json.loads((tmp_path / "out" / ".units" / CHECKED_FILE).read_text())
    assert CliRunner().invoke(main, [*args, "--no-report"]).exit_code == 0  # cached, checks recorded
    assert json.loads((tmp_path / "out" / ".units" / CHECKED_FILE).read_text()) == checked

    task.write_text(COPY_TASK.format(file="syn.csv", control=""))  # the units' fingerprints do not change
    refused = CliRunner().invoke(main, [*args, "--no-report"])
    assert refused.exit_code == 2, refused.output
    assert "is a copy of the original (the same records)" in refused.output
