"""Issue 35, item 8: bad input that used to end in a traceback or run unbounded is refused before
any work, by ``validate`` too, with one line naming the setting (exit 2)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.cli import main
from pipeline.cluster import connect, load_cluster_config
from pipeline.errors import PipelineError, TaskError, brief
from pipeline.run.schedule import run_all

BASE = """name: t
datasets:
  - name: {name}
    original: {{demo: sd2011_subset}}
{extra}
measures:
  - type: {measure}
    params: {params}
"""


def _validate(tmp_path: Path, name: str = "sd", extra: str = "", measure: str = "profile", params: str = "{}", top=""):
    task = tmp_path / "t.yaml"
    task.write_text(top + BASE.format(name=name, extra=extra, measure=measure, params=params))
    return CliRunner().invoke(main, ["validate", str(task)])


def _one_line(out) -> str:
    assert out.exit_code == 2, out.output
    assert "Traceback" not in out.output
    (line,) = [ln for ln in out.output.splitlines() if ln.startswith("error:")]
    return line


SOURCE = "    synthetic:\n      - {name: cart, demo: sd2011_cart}"


@pytest.mark.parametrize(
    ("extra", "top", "expected"),
    [
        ("    holdout: {fraction: 0.2, seed: -1}", "", "holdout.seed: Input should be greater than or equal to 0"),
        ("    holdout: {fraction: 0.2}", "baseline: {seed: -3}\n", "baseline.seed: Input should be greater than or"),
        ("    holdout: {fraction: 0.2}", "baseline: {permutations: 100000000000}\n", "baseline.permutations: Input"),
    ],
    ids=["holdout-seed", "baseline-seed", "permutations"],
)
def test_negative_seeds_and_absurd_permutations(tmp_path: Path, extra: str, top: str, expected: str) -> None:
    assert expected in _one_line(_validate(tmp_path, extra=extra, top=top))


def test_a_300_character_name_is_refused_at_load(tmp_path: Path) -> None:
    line = _one_line(_validate(tmp_path, name="d" * 300))
    assert "a name of 300 characters: at most 100" in line


@pytest.mark.parametrize(
    ("measure", "params", "expected"),
    [
        ("singling_out", "{n_attacks: 1000000000000}", "n_attacks: Input should be less than or equal to 10000000"),
        ("singling_out", "{max_attempts: null}", "max_attempts: give a number"),
        ("linkability", "{aux_cols: [[sex], [age]], n_neighbors: 6000}", "n_neighbors = 6000 exceeds the records"),
    ],
    ids=["n_attacks", "max_attempts", "n_neighbors"],
)
def test_unbounded_attack_settings_are_refused_by_validate(tmp_path: Path, measure: str, params: str, expected):
    assert expected in _one_line(_validate(tmp_path, extra=SOURCE, measure=measure, params=params))


def test_a_ucx_scheduler_is_refused_by_validate(tmp_path: Path) -> None:
    (tmp_path / "ucx.yaml").write_text("type: scheduler\naddress: ucx://10.0.0.1:8786\n")
    line = _one_line(_validate(tmp_path, top="cluster: ucx.yaml\n"))
    assert "ucx.yaml: invalid cluster config: line 2: address" in line and "expected tcp://host:port or tls://" in line
    with pytest.raises(TaskError):
        load_cluster_config({"type": "scheduler", "address": "inproc://x:1"})


def test_a_planted_worker_log_symlink_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    (tmp_path / "state" / "sdc-pipeline").mkdir(parents=True)
    (tmp_path / "theirs").write_text("x")
    os.symlink(tmp_path / "theirs", tmp_path / "state" / "sdc-pipeline" / "workers.log")
    refused = pytest.raises(TaskError, match=r"worker log .*workers.log: cannot open it \(Too many levels of symbolic")
    with refused, connect({"type": "local", "n_workers": 1, "processes": False}):
        pass
    assert (tmp_path / "theirs").read_text() == "x"


def test_a_long_library_message_is_cut_to_one_short_line() -> None:
    full = OSError(28, "No space left on device: " + "/scratch/spill/part-000123.parquet, " * 80)
    assert brief(full) == "No space left on device (ENOSPC)"
    long = RuntimeError("first line " + "x" * 2900 + "\nsecond line")
    assert len(brief(long)) < 330 and brief(long).startswith("RuntimeError: first line") and "second" not in brief(long)

    def fail(_: int) -> None:
        raise long

    with pytest.raises(PipelineError) as raised:
        run_all([1], fail, lambda i: f"unit {i}", 1, lambda *_: None)
    assert len(str(raised.value)) < 360 and str(raised.value).startswith("unit 1 failed: RuntimeError")


@pytest.mark.parametrize(
    ("gates", "expected"),
    [
        ("gates: [{measure: repU, above: 5}]\n", "gate on 'repU': the task runs no measure of family 'disclosure'"),
        ("gates: [{measure: ipf_tvd_n, family: synthesis, above: 1}]\n", "no measure of family 'synthesis'"),
    ],
    ids=["headline", "family"],
)
def test_a_gate_the_results_cannot_hold_is_refused_before_any_work(tmp_path: Path, gates: str, expected: str) -> None:
    assert expected in _one_line(_validate(tmp_path, top=gates))


def test_a_gate_on_the_overlap_passes_validate(tmp_path: Path) -> None:
    out = _validate(tmp_path, extra=SOURCE, top="gates: [{measure: overlap_share, above: 0.5}]\n")
    assert out.exit_code == 0, out.output
