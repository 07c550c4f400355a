"""The report and the nightly gates read the rows' structured params and the rows a measure emits.

Every table here is built by hand in the results-table layout, with display settings that say
nothing parseable (``"for people"``), so a passing test shows that nothing reads the setting.
"""

from __future__ import annotations

import re
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from pipeline.evaluation.base import canonical_json
from pipeline.nightly import check_gates, gates_html
from pipeline.profile_section import profile_section
from pipeline.report import html as report_html
from pipeline.report.markup import blocks_html
from pipeline.results import RESULT_COLUMNS, ROLE_COLUMNS, with_role_columns
from pipeline.risk.disclosure.section import disclosure_section
from pipeline.risk.idrisk.plots import plot_risk_by_radius, risk_by_radius, risk_points
from pipeline.risk.idrisk.section import identification_risk_figures
from pipeline.row_params import param_columns, unit_labels
from pipeline.store import ResultsStore
from pipeline.synth.section import synthesis_section
from pipeline.tasks import GateSpec
from pipeline.utility.plots import heatmap_matrix
from pipeline.utility.section import utility_section

OPAQUE = "for people"


def rows(
    family: str,
    name: str,
    params: dict[str, Any],
    values: dict[str, Any],
    *,
    dataset: str = "d",
    source: str = "s",
    repetition: int = 0,
    kind: str | None = None,
) -> list[dict[str, Any]]:
    """Result rows of one measure entry at one params: ``values`` maps measure -> {synthetic: value}.
    The entry's measure type is ``kind``, else its name; a row's part in a holdout comparison is written as
    results were before the role columns (params keys ``baseline``/``summary``/``ci``, summaries
    under synthetic "mean") and read by :func:`table` as the results store reads old runs."""
    return [
        {
            "task": "t",
            "run_id": "run",
            "dataset": dataset,
            "source": source,
            "repetition": repetition,
            "family": family,
            "type": kind or name,
            "measure_name": name,
            "setting": OPAQUE,
            "params": canonical_json(params),
            "synthetic": synthetic,
            "measure": measure,
            "value": float(value),
        }
        for measure, by_set in values.items()
        for synthetic, value in by_set.items()
    ]


def table(*groups: list[dict[str, Any]]) -> pd.DataFrame:
    old = pd.DataFrame([r for g in groups for r in g], columns=[c for c in RESULT_COLUMNS if c not in ROLE_COLUMNS])
    return with_role_columns(old)[RESULT_COLUMNS]


def sets(*values: float) -> dict[str, float]:
    return {str(k + 1): v for k, v in enumerate(values)}


def outcome(results: pd.DataFrame, measures: list[dict[str, str]], summaries: dict | None = None) -> Any:
    manifest = {
        "task": "t",
        "run_id": "run",
        "started_utc": "2026-12-01T00:00:00",
        "seconds": 1.0,
        "cluster": {"type": "local"},
        "seed": 0,
        "units": {},
        "rows": len(results),
        "versions": {"sdc-pipeline": "0", "dask": "0"},
        "task_spec": {"measures": measures},
    }
    return SimpleNamespace(manifest=manifest, results=results, summaries=summaries or {})


# ---- identification risk: the measure's r*, not a recomputed one ----------------------------

UNIT = {
    "scenarios": {"income": {"known": ["Urban"], "synthesised": ["Income"]}},
    "radius_grid": [0.1, 0.2],
    "criterion": "median",
}


def median_criterion_rows(source: str = "s") -> list[dict[str, Any]]:
    """Per-set file risks {r=0.1: 0, 0, 0.9; r=0.2: 0.2, 0.2, 0.2}: the mean would pick 0.1
    (0.3 > 0.2), the measure's criterion (median) picks 0.2, and its rows say so."""
    at = {0.1: (0.0, 0.0, 0.9), 0.2: (0.2, 0.2, 0.2)}
    out = []
    for r, risks in at.items():
        params = {**UNIT, "scenario": "income", "radius": {"Income": r}}
        out += rows(
            "identification_risk",
            "identification_risk",
            params,
            {"file_risk": {**sets(*risks), "mean": np.mean(risks)}},
            source=source,
        )
    out += rows(
        "identification_risk",
        "identification_risk",
        {**UNIT, "scenario": "income", "variable": "Income"},
        {"r_star": {"mean": 0.2}},
        source=source,
    )
    out += rows(
        "identification_risk",
        "identification_risk",
        {**UNIT, "scenario": "income"},
        {"r_star_at_boundary": {"mean": 1.0}},
        source=source,
    )
    out += rows(
        "identification_risk",
        "identification_risk",
        {**UNIT, "scenario": "income", "radius": {"Income": 0.2}},
        {"file_risk_at_max": sets(0.2, 0.2, 0.2)},
        source=source,
    )
    return out


def test_report_points_are_at_the_measures_r_star_with_criterion_median():
    results = table(median_criterion_rows())
    points = risk_points(results)
    assert len(points) == 3
    assert set(points["radius"]) == {"Income=0.2"} and np.allclose(points["risk"], 0.2)
    by_radius = risk_by_radius(results)
    assert set(by_radius.loc[by_radius["r_star"], "radius"]) == {"Income=0.2"}
    assert by_radius["at_boundary"].all()
    # Fig. 6 shades the measure's r* (the second radius), whatever the mean says
    fig = plot_risk_by_radius(by_radius)
    (span,) = [p for p in fig.axes[0].patches]
    assert span.get_x() == pytest.approx(1.5) and span.get_width() == pytest.approx(1.0)
    assert "grid boundary" in fig.axes[0].get_legend().get_texts()[0].get_text()


def test_gates_see_the_same_r_star():
    results = table(median_criterion_rows())
    gates = [
        GateSpec(measure="r_star", above=1.0),
        GateSpec(measure="file_risk_at_max", above=0.5),
    ]
    checks = {c.measure: c for c in check_gates(results, None, gates)}
    assert checks["r_star"].value == pytest.approx(0.2)
    assert checks["file_risk_at_max"].value == pytest.approx(0.2)  # max over sets at r*, not 0.9 at r=0.1
    assert not any(c.failed for c in checks.values())
    assert checks["r_star"].setting == OPAQUE
    assert checks["r_star"].params == results.loc[results["measure"] == "r_star", "params"].item()


def test_identification_risk_figures_with_utility_axis():
    utility = rows("utility", "utility_gen", {"method": "logit"}, {"S_pMSE": sets(1.1, 0.9, 1.3)})
    results = table(median_criterion_rows(), utility)
    html = blocks_html(identification_risk_figures(results, ["utility_gen"]))
    for fig in ("Fig. 6", "Fig. 7", "Figs. 8–9", "Fig. 10"):
        assert f"Hornby &amp; Hu {fig}" in html
    no_utility = blocks_html(identification_risk_figures(results, []))
    assert "Fig. 7" in no_utility and "need a utility_gen measure" in no_utility


def test_fig6_is_drawn_once_per_source_of_a_repeated_study():
    one = table(median_criterion_rows("m10"), median_criterion_rows("m20"))
    single = blocks_html(identification_risk_figures(one, []))
    repeated = pd.concat([one.assign(repetition=rep) for rep in (1, 2, 3)], ignore_index=True)
    html = blocks_html(identification_risk_figures(repeated, []))
    fig6 = "Hornby &amp; Hu Fig. 6"
    assert single.count(fig6) > 0 and html.count(fig6) == single.count(fig6)  # m10 and m20 once each
    assert "d / m10 (repetition 1)" in html and "d / m20 (repetition 1)" in html
    assert "(repetition 2)" not in html and "(repetition 3)" not in html
    assert "radius sweeps of 4 further repetitions" in html and "further repetitions" not in single


# ---- gates: keyed by measure entry and params -------------------------------------------------


def disclosure_entries(low: tuple[float, ...], high: tuple[float, ...]) -> pd.DataFrame:
    """Two disclosure entries that differ only in denom_lim (same name, same display setting)."""
    base = {"keys": ["sex", "age"], "target": "ls"}
    return table(
        rows("disclosure", "disclosure", {**base, "denom_lim": 5}, {"repU": sets(*low)}),
        rows("disclosure", "disclosure", {**base, "denom_lim": 10}, {"repU": sets(*high)}),
    )


def test_gates_do_not_pool_entries_differing_in_one_parameter():
    current = disclosure_entries((1.0, 2.0), (8.0, 9.0))
    checks = check_gates(current, None, [GateSpec(measure="repU", above=5.0)])
    assert len(checks) == 2
    by_denom = {'"denom_lim":5' in c.params: c for c in checks}
    assert by_denom[True].value == 2.0 and not by_denom[True].failed
    assert by_denom[False].value == 9.0 and by_denom[False].failed
    assert {c.setting for c in checks} == {OPAQUE} and {c.measure_name for c in checks} == {"disclosure"}
    # each entry is compared with its own previous value
    previous = disclosure_entries((1.5, 1.5), (9.0, 9.0))
    checks = check_gates(current, previous, [GateSpec(measure="repU", rise_above=0.4)])
    by_denom = {'"denom_lim":5' in c.params: c for c in checks}
    assert by_denom[True].previous == 1.5 and by_denom[True].failed  # 2 - 1.5 > 0.4
    assert by_denom[False].previous == 9.0 and not by_denom[False].failed
    section = gates_html(checks, "yesterday")
    assert section.count("FAILED") == 1 and "<th>entry</th>" in section


def test_gate_mean_uses_the_measures_mean_rows_over_repetitions():
    reps = [rows("p", "m", {}, {"x": {**sets(1.0, 5.0), "mean": 3.0}}, repetition=r) for r in (0, 1)]
    reps[1][2]["value"] = 5.0  # the second repetition's own mean row
    (check,) = check_gates(table(*reps), None, [GateSpec(measure="x", above=10, statistic="mean")])
    assert check.value == pytest.approx(4.0)


def test_history_without_params_has_no_previous_value(tmp_path):
    store = ResultsStore(tmp_path / "history")
    old = disclosure_entries((1.0, 1.0), (1.0, 1.0)).drop(columns="params")  # a run from before params
    store.append(old, {"task": "t", "run_id": "old", "started_utc": "2026-11-01T00:00:00"})
    (run,) = store.runs("t").itertuples()
    previous = store.read_run(run.path)
    assert list(previous.columns) == RESULT_COLUMNS and previous["params"].isna().all()
    current = disclosure_entries((8.0, 9.0), (8.0, 9.0))
    checks = check_gates(current, previous, [GateSpec(measure="repU", rise_above=0.5)])
    assert len(checks) == 2 and all(c.previous is None and not c.failed for c in checks)
    assert len(store.query("t")) == len(old)


# ---- sections read params, never the setting --------------------------------------------------


def test_param_columns_parse_each_params_text_and_keep_the_unit():
    results = disclosure_entries((1.0,), (2.0,))
    cols = param_columns(results, "keys", "target")
    assert cols["keys"].tolist() == [("sex", "age")] * 2 and cols["target"].tolist() == ["ls", "ls"]
    labels = unit_labels(cols["unit"])
    assert sorted(labels.values()) == ["denom_lim=10", "denom_lim=5"]
    old = param_columns(results.assign(params=None), "target")  # history before params: unknown
    assert old["target"].isna().all()


def test_disclosure_section_by_key_set_and_target():
    groups = []
    for keys in (["sex", "age"], ["sex", "edu"]):
        for target, level in (("ls", 10.0), ("depress", 20.0)):
            params = {"keys": keys, "target": target, "targets": ["ls", "depress"]}
            groups.append(
                rows(
                    "disclosure",
                    "disclosure",
                    params,
                    {
                        "UiO": {"original": level},
                        "Dorig": {"original": level + 1},
                        "repU": sets(level / 2, level / 4),
                        "DiSCO": sets(level / 3, level / 5),
                        "check_1way": sets(0, 1),
                    },
                )
            )
    results = table(*groups)
    html = blocks_html(disclosure_section(results, outcome(results, [{"type": "disclosure"}])))
    assert "keys: sex, age): original vs synthetic" in html and "keys: sex, edu): original vs synthetic" in html
    assert html.count("<h3>") == 2 and "<td>depress</td>" in html and "<td>7.5</td>" in html  # repU mean for ls


def test_utility_section_scatter_and_heat_map_from_vars():
    tables = []
    for pair, value in ((["sex", "age"], 1.0), (["sex", "edu"], 2.0), (["age", "edu"], 3.0)):
        tables.append(
            rows("utility", "utility_tables", {"tables": "twoway", "vars": pair}, {"S_pMSE": sets(value, value)})
        )
    gen = rows("utility", "utility_gen", {"method": "logit"}, {"S_pMSE": sets(1.0, 1.2)})
    results = table(gen, *tables)
    out = outcome(results, [{"type": "utility_gen"}, {"type": "utility_tables"}])
    html = blocks_html(utility_section(results, out))
    assert "utility_gen: d: S_pMSE of each synthetic set" in html
    assert "utility_tables: d / s: table utility heat map (S_pMSE" in html
    frame = pd.DataFrame({"vars": [("sex", "age"), ("sex", "edu"), ("age", "edu")], "value": [1.0, 2.0, 3.0]})
    axis, _, mat = heatmap_matrix(frame)
    assert axis == ["sex", "age", "edu"] and mat[0, 1] == mat[1, 0] == 1.0 and mat[1, 2] == 3.0
    assert np.isnan(np.diag(mat)).all()
    three = table(rows("utility", "utility_tables", {"vars": ["sex", "age", "edu"]}, {"S_pMSE": sets(1.0)}))
    note = blocks_html(utility_section(three, outcome(three, [{"type": "utility_tables"}])))
    assert "needs the task to name its <code>third_var</code>" in note


def test_profile_and_synthesis_sections_read_buckets_and_margins():
    buckets = []
    for lo, hi, n in ((1, 1, 40), (2, 2, 10), (101, None, 1)):
        buckets += rows(
            "profile",
            "key_blocks",
            {"keys": ["sex", "age"], "size_from": lo, "size_to": hi},
            {"combinations": {"original": n, "1": n + 1}},
        )
    results = table(buckets, rows("profile", "key_blocks", {"keys": ["sex", "age"]}, {"combinations": {"1": 51}}))
    html = blocks_html(profile_section(results, None))
    assert html.count("<figure>") == 1 and "key_blocks: d / s: key-combination sizes" in html
    settings = {"variables": ["sex", "agegr"], "limit": 10}
    synthesis = table(
        rows("synthesis", "synthesise", settings, {"ipf_iterations": {"original": 12}}),
        rows(
            "synthesis", "synthesise", {**settings, "margin": ["sex", "agegr"]}, {"margin_total_moved": {"original": 3}}
        ),
    )
    html = blocks_html(synthesis_section(synthesis, None))
    assert "synthesise: d / s: fit" in html and "<td>ipf_iterations</td>" in html
    assert "<td>sex, agegr</td>" in html and "margin_total_moved" in html


def test_report_shows_no_record_values_from_summaries():
    # a utility_tab summary holds bin labels built from the data's extremes: the report shows rows only
    extreme = "987654.321"
    tab = rows("utility", "utility_tab", {"vars": ["sex", "income"]}, {"S_pMSE": sets(1.0, 2.0)})
    results = table(tab)
    summaries = {"utility_tab d/s": {"levels": [["1", "2"], [f"(-8,{extreme}]"]]}}
    page = report_html.render(outcome(results, [{"type": "utility_tab"}], summaries))
    assert extreme not in page
    assert re.search(r"<section id=\"utility\">", page)


def test_family_figures_are_figures():
    results = table(median_criterion_rows())
    assert isinstance(plot_risk_by_radius(risk_by_radius(results), title="t"), Figure)
