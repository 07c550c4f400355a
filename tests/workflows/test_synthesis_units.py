"""Synthesis as a unit of work: validate runs no synthesis, resume reuses finished syntheses,
synthesis rows are the unit's own rows, and every run folder writes its manifest last."""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from pipeline.cli import main
from pipeline.errors import PipelineError
from pipeline.run.cache import synthesis_folder
from pipeline.runner import run_task
from pipeline.synth import coarsened as synth_task
from pipeline.tasks import load_task

TASK = """
name: synth_units
seed: 11
repetitions: 2
concurrency: 1
datasets:
  - name: sd2011
    original: {{demo: sd2011_subset}}
    synthetic:
      - {{name: cart, demo: sd2011_cart}}
      - name: margins
        synthesise:
          variables: [sex, agegr, edu, marital, income]
          sdc:
            - {{step: top_bottom_coding, variable: income, bottom: 0, top: 6000}}
            - {{step: categorise, variable: income, {income_bins}}}
            - {{step: merge_levels, variable: marital, min_count: 100}}
          m: 2
measures:
  - type: profile
  - type: key_blocks
    grid: {{keys: [{keys}]}}
"""

COLS = ["dataset", "source", "repetition", "family", "measure_name", "setting", "params", "synthetic", "measure"]


def _task(tmp_path: Path, keys: str = "[sex, agegr], [edu, marital]", income_bins: str = "groups: 4") -> Path:
    (tmp_path / "local.yaml").write_text("type: local\nn_workers: 2\nprocesses: false\n")
    p = tmp_path / "synth_units.yaml"
    p.write_text(TASK.format(keys=keys, income_bins=income_bins))
    return p


def _cluster(task: Path) -> str:
    return str(task.parent / "local.yaml")


def _forbid_synthesis(monkeypatch) -> None:
    def forbidden(*args, **kwargs):
        raise AssertionError("validate must not synthesise")

    for name in ("synthesise", "synthesise_frame", "fit_ipf", "draw_synthetic"):
        monkeypatch.setattr(synth_task, name, forbidden)


def _count_syntheses(monkeypatch) -> list[int]:
    calls: list[int] = []
    real = synth_task.MarginsSynthesiser.synthesise

    def counting(self, original, executor=None):
        calls.append(self.params.seed)
        return real(self, original, executor)

    monkeypatch.setattr(synth_task.MarginsSynthesiser, "synthesise", counting)
    return calls


def _record_replaced(monkeypatch) -> list[str]:
    """Names of the files every atomic write renames into place, in order."""
    names: list[str] = []
    real = os.replace

    def recording(src, dst, *args, **kwargs):
        real(src, dst, *args, **kwargs)
        names.append(Path(dst).name)

    monkeypatch.setattr(os, "replace", recording)
    return names


def test_validate_checks_synthesised_sources_without_synthesising(tmp_path, monkeypatch):
    _forbid_synthesis(monkeypatch)
    task = _task(tmp_path)
    r = CliRunner().invoke(main, ["validate", str(task)])
    assert r.exit_code == 0, r.output
    *units, last = r.output.splitlines()
    labels = [x.split("  ", 1)[1] for x in units]
    assert labels[:2] == ["synthesise sd2011/margins", "synthesise sd2011/margins#1"]
    assert "key_blocks sd2011/margins#1 [keys=edu+marital]" in labels
    assert last.endswith("valid, 9 unit(s)")  # 2 syntheses + profile + 2 keys x (cart + 2 repetitions)
    assert not (tmp_path / "results").exists()

    # a key the synthesis does not produce: the measure's check fails against the synthesised schema
    r = CliRunner().invoke(main, ["validate", str(_task(tmp_path, keys="[sex, region]"))])
    assert r.exit_code == 2
    assert "measure 'key_blocks' on 'sd2011' source 'margins'" in r.output and "'region'" in r.output
    # an SDC step that does not fit the data is found without synthesising too
    r = CliRunner().invoke(main, ["validate", str(_task(tmp_path, income_bins="breaks: [0, 100]"))])
    assert r.exit_code == 2
    assert "dataset 'sd2011' source 'margins': synthesise: categorise 'income'" in r.output
    assert "outside the breaks" in r.output


def test_run_killed_after_its_syntheses_resumes_without_resynthesising(tmp_path, monkeypatch):
    task = load_task(_task(tmp_path))
    out = tmp_path / "run"
    calls = _count_syntheses(monkeypatch)

    def crash(*args, **kwargs):
        raise RuntimeError("killed")

    with monkeypatch.context() as m:
        m.setattr("pipeline.run.work.evaluate_unit", crash)
        with pytest.raises(PipelineError, match="killed"):
            run_task(task, cluster=_cluster(task.path), out_dir=out, progress=False)
    assert sorted(calls) == [11, 12]  # one synthesis per repetition, seeds 11 and 12
    assert not (out / "manifest.json").exists() and not (out / "results.parquet").exists()

    resumed = run_task(task, cluster=_cluster(task.path), out_dir=out, progress=False)
    assert sorted(calls) == [11, 12]  # nothing synthesised again
    syntheses = {k: v for k, v in resumed.manifest["units"].items() if k.startswith("synthesise ")}
    assert len(syntheses) == 2 and all(v["cached"] for v in syntheses.values())

    fresh = run_task(task, cluster=_cluster(task.path), out_dir=tmp_path / "fresh", progress=False)
    assert sorted(calls) == [11, 11, 12, 12]
    a, b = resumed.results, fresh.results
    pd.testing.assert_frame_equal(a[COLS], b[COLS])
    # no timing in the table (issue 16): two runs give equal values; the time is in the manifest
    pd.testing.assert_series_equal(a["value"], b["value"])
    assert all(isinstance(v["ipf_elapsed_s"], float) for k, v in fresh.manifest["units"].items() if k in syntheses)


def test_synthesis_rows_are_the_units_own_rows(tmp_path):
    task = load_task(_task(tmp_path))
    outcome = run_task(task, cluster=_cluster(task.path), out_dir=tmp_path / "run", progress=False, report=False)
    res = outcome.results
    syn = res[res.family == "synthesis"]
    assert set(syn["measure_name"]) == {"synthesise"} and sorted(syn["repetition"].unique()) == [0, 1]
    params = syn["params"].map(json.loads)
    assert set(params.map(lambda p: p["seed"])) == {11, 12}
    assert all(p["variables"] == ["sex", "agegr", "edu", "marital", "income"] and p["m"] == 2 for p in params)
    per_margin = syn[syn.measure == "ipf_tvd_n"]
    assert set(per_margin["setting"]) == {f"margin={p['margin']}" for p in params[per_margin.index]}
    assert {"n", "k", "ipf_converged", "margin_total_moved", "syn_margin_tvd"} <= set(syn["measure"])
    for s in outcome.inputs.syntheses:
        folder = synthesis_folder(tmp_path / "run" / ".units", s)
        assert json.loads((folder / "release" / "fit_report.json").read_text())["seed"] == s.params.seed
        published = tmp_path / "run" / "synthesis" / "sd2011" / "margins" / f"rep{s.repetition}"
        assert sorted(p.name for p in (published / "synthetic").iterdir()) == sorted(
            p.name for p in (folder / "release" / "synthetic").iterdir()
        )
    # the measure units on the source evaluate the synthesis's sets
    release = tmp_path / "run" / "synthesis" / "sd2011" / "margins" / "rep1"
    syn1 = pd.read_parquet(release / "synthetic" / "syn1.parquet")
    combos = res[
        (res.source == "margins") & (res.repetition == 1) & (res.setting == "keys=sex+agegr")
        & (res.synthetic == "1") & (res.measure == "combinations")
    ]  # fmt: skip
    assert combos["value"].tolist() == [float(len(syn1.groupby(["sex", "agegr"], observed=True, dropna=False)))]
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert len(manifest["units"]) == 9 and manifest["rows"] == len(res)


def test_killed_process_resumes_with_cached_syntheses(tmp_path):
    task = _task(tmp_path)
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "pipeline.cli", "run", str(task), "--out", str(out)]
    cmd += ["--cluster", _cluster(task), "--no-report"]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    for line in proc.stderr:
        if line.startswith("[2/"):  # concurrency 1: the two syntheses come first
            proc.send_signal(signal.SIGKILL)
            break
    proc.wait()
    assert proc.returncode == -signal.SIGKILL and not (out / "manifest.json").exists()
    folders = sorted((out / ".units" / "synthesis").iterdir())
    assert len(folders) == 2 and all((f / "summary.json").exists() for f in folders)
    before = {p: p.stat().st_mtime_ns for f in folders for p in f.rglob("*") if p.is_file()}

    resumed = subprocess.run(cmd, capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stderr.count("synthesise sd2011/margins") == 2
    assert all(x.endswith(": cached") for x in resumed.stderr.splitlines() if "synthesise sd2011/margins" in x)
    assert {p: p.stat().st_mtime_ns for f in folders for p in f.rglob("*") if p.is_file()} == before


def _assert_manifest_last(names: list[str], before: set[str]) -> None:
    assert names[-1] == "manifest.json", names[-5:]
    assert before <= set(names[:-1])


def test_run_and_synthesise_write_the_manifest_last(tmp_path, monkeypatch):
    task = _task(tmp_path)
    names = _record_replaced(monkeypatch)
    r = CliRunner().invoke(main, ["run", str(task), "--out", str(tmp_path / "run"), "--cluster", _cluster(task)])
    assert r.exit_code == 0, r.output
    _assert_manifest_last(names, {"results.parquet", "results.csv", "summary.json", "report.html"})

    names.clear()
    out = tmp_path / "synth"
    r = CliRunner().invoke(main, ["synthesise", str(task), "--out", str(out), "--cluster", _cluster(task)])
    assert r.exit_code == 0, r.output
    _assert_manifest_last(names, {"results.parquet", "results.csv", "summary.json"})
    assert f"wrote {out / 'sd2011' / 'margins' / 'rep1'}" in r.output
    res = pd.read_parquet(out / "results.parquet")
    assert set(res["family"]) == {"synthesis"} and res["params"].map(json.loads).map(lambda p: "seed" in p).all()
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["units"].keys() == {"synthesise sd2011/margins", "synthesise sd2011/margins#1"}
    assert (out / "sd2011" / "margins" / "rep0" / "fit_report.json").exists()
