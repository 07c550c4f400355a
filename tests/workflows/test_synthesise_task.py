"""Coarsened-margins synthesis inside tasks: the synthesise command, evaluation of the result, errors."""

import json

import pandas as pd
import pytest
from click.testing import CliRunner

from pipeline.cli import main
from pipeline.row_params import of_kind

TASK = """
name: synth_t
seed: 7
repetitions: 2
datasets:
  - name: sd2011
    original: {{demo: sd2011_subset}}
    synthetic:
      - name: margins_L10
        synthesise: {{variables: [sex, agegr, edu, marital, smoke], limit: {limit}, variant: {variant}, m: 2}}
measures:
  - type: utility_tab
    params: {{vars: [sex, edu]}}
  - type: disclosure
    params: {{keys: [sex, agegr, edu], target: smoke}}
"""


@pytest.fixture
def task(tmp_path):
    (tmp_path / "local.yaml").write_text("type: local\nn_workers: 2\nprocesses: false\n")

    def make(limit: int = 10, variant: str = "V3"):
        p = tmp_path / "synth.yaml"
        p.write_text(TASK.format(limit=limit, variant=variant))
        return p

    return make


def test_synthesise_command_writes_sets_margins_and_fit_report(task, tmp_path):
    out = tmp_path / "synth"
    r = CliRunner().invoke(
        main, ["synthesise", str(task(variant="V2")), "--out", str(out), "--cluster", str(tmp_path / "local.yaml")]
    )
    assert r.exit_code == 0, r.output
    for rep in (0, 1):
        folder = out / "sd2011" / "margins_L10" / f"rep{rep}"
        report = json.loads((folder / "fit_report.json").read_text())
        assert report["seed"] == 7 + rep and report["m"] == 2 and report["n"] == 5000
        syn = pd.read_parquet(folder / "synthetic" / "syn1.parquet")
        assert len(syn) == 5000 and list(syn.columns) == ["sex", "agegr", "edu", "marital", "smoke"]
        margins = list((folder / "margins").glob("*.parquet"))
        assert len(margins) == 10  # all two-way margins of 5 variables
        for m in margins:
            counts = pd.read_parquet(m).filter(like="count").iloc[:, 0]
            assert (counts % 10 == 0).all()  # V2: every released count is a multiple of L = 10
    a = pd.read_parquet(out / "sd2011" / "margins_L10" / "rep0" / "synthetic" / "syn1.parquet")
    b = pd.read_parquet(out / "sd2011" / "margins_L10" / "rep1" / "synthetic" / "syn1.parquet")
    assert not a.equals(b)  # repetitions use different seeds


def test_run_evaluates_each_repetition_and_reports_the_fit(task, tmp_path):
    out = tmp_path / "run"
    r = CliRunner().invoke(main, ["run", str(task()), "--out", str(out), "--cluster", str(tmp_path / "local.yaml")])
    assert r.exit_code == 0, r.output
    res = pd.read_parquet(out / "results.parquet")
    assert set(res["family"]) == {"utility", "disclosure", "synthesis"}
    assert sorted(res["repetition"].unique()) == [0, 1]
    repu = of_kind(res[(res.measure == "repU") & (res.synthetic != "original")])  # own rows, not summaries
    assert len(repu) == 2 * 2 and repu["value"].between(0, 100).all()
    fit = res[(res.family == "synthesis") & (res.synthetic == "original")]
    assert not fit.empty
    assert (out / "synthesis" / "sd2011" / "margins_L10" / "rep1" / "fit_report.json").exists()
    assert "synthesis" in (out / "report.html").read_text()


def test_invalid_synthesise_settings_are_named(task, tmp_path):
    r = CliRunner().invoke(main, ["validate", str(task(limit=0))])
    assert r.exit_code == 2
    assert "dataset 'sd2011' source 'margins_L10'" in r.output


@pytest.mark.parametrize(("setting", "named"), [("m: 0", "m: Input should be greater than or equal to 1")])
def test_m_zero_is_refused_when_the_task_is_loaded(tmp_path, setting, named):
    p = tmp_path / "m0.yaml"
    p.write_text(TASK.format(limit=10, variant="V3").replace("m: 2", setting))
    r = CliRunner().invoke(main, ["validate", str(p)])
    assert r.exit_code == 2
    assert f"dataset 'sd2011' source 'margins_L10': synthesise: {named}" in r.output
