"""Issue 35 item 8 / issue 33 item 3: a gate naming a row measure that no measure type or
synthesiser kind of the task produces is refused when the task is read — by ``validate`` and by
``run`` before any work (exit 2, one line with the closest names) — from the row names each
measure and synthesiser declares (``row_measures``, checked against their rows by the contract tests)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.cli import main
from pipeline.measures import REGISTRY, row_measures

TASK = """name: t
output: {out}
datasets:
  - name: sd
    original: {{demo: sd2011_subset}}
    synthetic:
      - {{name: cart, demo: sd2011_cart}}
{synthesised}
measures:
  - type: {measure}
    params: {params}
gates: [{gate}]
"""
MARGINS = "      - {name: margins, synthesise: {variables: [sex, agegr, edu], limit: 5, m: 1}}"
DISCLOSURE = "{keys: [sex, agegr, edu], targets: [marital]}"


def _task(
    tmp_path: Path, gate: str, measure: str = "disclosure", params: str = DISCLOSURE, synthesised: str = ""
) -> Path:
    task = tmp_path / "t.yaml"
    text = TASK.format(out=tmp_path / "out", synthesised=synthesised, measure=measure, params=params, gate=gate)
    task.write_text(text)
    return task


def _refusal(out) -> str:
    assert out.exit_code == 2, out.output
    assert "Traceback" not in out.output
    (line,) = [ln for ln in out.output.splitlines() if ln.startswith("error:")]
    return line


@pytest.mark.parametrize("command", ["validate", "run"])
def test_a_misspelt_row_name_is_refused_with_the_closest_names(tmp_path: Path, command: str) -> None:
    out = CliRunner().invoke(main, [command, str(_task(tmp_path, "{measure: DiSC0, above: 5}"))])
    line = _refusal(out)
    assert "gate names measure 'DiSC0', which no measure of the task produces; did you mean 'DiSCO'" in line
    assert not (tmp_path / "out").exists()  # refused before any work: nothing written


def test_a_name_of_a_measure_the_task_does_not_run_is_refused_naming_its_family(tmp_path: Path) -> None:
    # main_rate is an attack's row: the task runs no attack
    line = _refusal(CliRunner().invoke(main, ["validate", str(_task(tmp_path, "{measure: main_rate, above: 0.5}"))]))
    assert "gate on 'main_rate': the task runs no measure of family 'attacks'" in line
    # a name two families produce names both
    line = _refusal(CliRunner().invoke(main, ["validate", str(_task(tmp_path, "{measure: records, above: 1}"))]))
    assert "the task runs no measure of family 'profile' or 'sdcrisk'" in line


@pytest.mark.parametrize(
    ("gate", "measure", "params", "synthesised"),
    [
        ("{measure: check_2way, above: 0}", "disclosure", DISCLOSURE, ""),
        ("{measure: DiSCO, summary: upper95, above: 5}", "disclosure", DISCLOSURE, ""),
        ("{measure: overlap_share, above: 0.5}", "profile", "{}", ""),
        ("{measure: ipf_tvd_n, family: synthesis, above: 100}", "profile", "{}", MARGINS),
        ("{measure: main_rate, above: 0.9}", "singling_out", "{cols: [sex, agegr, edu], n_attacks: 10}", ""),
    ],
    ids=["flag", "summary", "overlap", "synthesis", "attack"],
)
def test_names_the_task_produces_pass_validate(tmp_path: Path, gate, measure, params, synthesised) -> None:
    out = CliRunner().invoke(main, ["validate", str(_task(tmp_path, gate, measure, params, synthesised))])
    assert out.exit_code == 0, out.output


def test_every_measure_declares_its_row_names() -> None:
    assert all(REGISTRY[t].measure.row_measures for t in REGISTRY)
    names = row_measures(["disclosure"], ["margins"])
    assert {"repU", "DiSCO", "ipf_tvd_n", "overlap_share", "holdout_overlap_share"} <= names
    assert "main_rate" not in names
