"""Issue 23 (items 3 and 5): the report's first screen says why a figure is high when it is so by
construction, shows one unit per kind of measure, gives a partial synthesis its own section with
plain names, and keeps its radius plots readable with fixed radii.

Every table is built by hand in the results-table layout (display settings say nothing
parseable), so the explanations can only come from the measures' flag rows.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from test_report_rows import OPAQUE, outcome, rows, sets, table

from pipeline.report import html as report_html
from pipeline.report.baselines import excess_summary
from pipeline.report.summary import release_summary
from pipeline.risk.idrisk.plots import plot_risk_at_max_radius, plot_risk_by_radius, risk_by_radius, risk_points

KEYS = {"keys": ["Urban", "Tenure"], "target": "Income"}
MANIFEST = {"task_spec": {"measures": [{"type": "disclosure"}, {"type": "identification_risk"}], "gates": []}}


def _headlines(results: pd.DataFrame) -> pd.DataFrame:
    return release_summary(results, MANIFEST).set_index("headline")


def test_repu_equal_to_uio_by_construction_says_so_on_its_row():
    # a partial release: keys kept, so every set has the original's key counts and repU = UiO
    kept = rows(
        "disclosure",
        "disclosure",
        KEYS,
        {
            "UiO": {"original": 12.0},
            "repU": sets(12.0, 12.0),
            "DiSCO": sets(1.0, 1.5),
            "same_key_counts": sets(1, 1),
            "same_key_target_counts": sets(0, 0),
        },
    )
    row = _headlines(table(kept)).loc["repU (%)"]
    assert row["status"] == "attention" and row["value"] == 12.0
    assert row["explanation"] == (
        "keys released unchanged (the original's count in every key combination, every synthetic set): "
        "repU = UiO by construction"
    )
    assert _headlines(table(kept)).loc["DiSCO (%)", "explanation"] == ""  # the target was synthesised
    # only some sets: said with their number; no flag rows (an older run): no explanation
    some = table(kept)
    some.loc[(some["measure"] == "same_key_counts") & (some["synthetic"] == "2"), "value"] = 0.0
    assert (
        "(the original's count in every key combination, 1 of 2 synthetic sets)"
        in (_headlines(some).loc["repU (%)", "explanation"])
    )
    bare = table(kept)
    assert _headlines(bare[~bare["measure"].str.startswith("same_")]).loc["repU (%)", "explanation"] == ""


def test_disco_equal_to_dorig_when_keys_and_target_are_released_unchanged():
    unchanged = rows(
        "disclosure",
        "disclosure",
        KEYS,
        {"DiSCO": sets(40.0, 40.0), "same_key_target_counts": sets(1, 1), "check_2way": sets(0, 0)},
    )
    explanation = _headlines(table(unchanged)).loc["DiSCO (%)", "explanation"]
    assert (
        explanation.startswith("keys and target released unchanged") and "DiSCO = Dorig by construction" in explanation
    )


def test_disco_of_a_recoded_key_is_explained_by_synthpops_prior_knowledge_flag():
    # the demo's DiSCO ≈ 92 % from target agegr, a recode of the key age: check_2way flags the pairs
    recode = rows(
        "disclosure",
        "disclosure",
        {"keys": ["sex", "age"], "target": "agegr"},
        {"DiSCO": sets(91.7, 90.0), "check_2way": sets(72, 25), "check_1way": sets(0, 0)},
    )
    other = rows(
        "disclosure",
        "disclosure",
        {"keys": ["sex", "age"], "target": "smoke"},
        {"DiSCO": sets(18.0, 19.0), "check_2way": sets(0, 0), "check_1way": sets(1, 1)},
    )
    row = _headlines(table(recode, other)).loc["DiSCO (%)"]
    assert row["value"] == 91.7 and row["status"] == "attention" and row["note"] == f"worst: disclosure [{OPAQUE}]"
    assert row["explanation"] == (
        "prior knowledge (synthpop's check_2way, every synthetic set): up to 72 key/target level pairs in which "
        "the key's level nearly fixes the target's, as when the target recodes a key: much of DiSCO is known "
        "without the release"
    )  # the worst setting's flags only: not smoke's check_1way
    # a passing figure carries no prior-knowledge warning
    low = table(recode)
    low.loc[low["measure"] == "DiSCO", "value"] = 2.0
    assert _headlines(low).loc["DiSCO (%)", "explanation"] == ""


def _idrisk_rows(risks: tuple[float, ...]) -> list[dict]:
    params = {"scenarios": {"s": {"known": ["Age"], "synthesised": ["Income"]}}, "scenario": "s"}
    return rows(
        "identification_risk",
        "identification_risk",
        {**params, "radius": {"Age": 2.0, "Income": 1000.0}, "percentage": False},
        {"file_risk_at_max": sets(*risks), "file_risk": sets(*risks)},
    )


def test_one_unit_per_kind_of_measure_on_the_first_screen():
    disclosure = rows(
        "disclosure",
        "disclosure",
        KEYS,
        {"UiO": {"original": 9.0}, "Dorig": {"original": 9.0}, "repU": sets(3.0, 4.0), "DiSCO": sets(1.0, 1.0)},
    )
    results = table(disclosure, _idrisk_rows((0.08, 0.06)))
    headlines = _headlines(results)
    # identification risk is a share of records in its rows, shown as a percentage like repU
    risk = headlines.loc["identification risk at r* (%)"]
    assert risk["value"] == pytest.approx(8.0) and risk["threshold"] == pytest.approx(5.0)
    assert risk["basis"] == "rule of thumb: max ≤ 5 %" and risk["status"] == "attention"
    assert headlines.loc["repU (%)", "basis"] == "rule of thumb: max ≤ 5 %"
    gated = {"task_spec": {**MANIFEST["task_spec"], "gates": [{"measure": "file_risk_at_max", "above": 0.1}]}}
    basis = release_summary(results, gated).set_index("headline").loc["identification risk at r* (%)", "basis"]
    assert basis == "gate: max above 10 % (the task's 0.1 as a share)"
    page = report_html.render(outcome(results, [{"type": "disclosure"}, {"type": "identification_risk"}]))
    first = page[page.index('<section id="summary">') : page.index('<section id="metadata">')]
    assert "<td>identification risk at r* (%)</td><td>8</td><td>5</td>" in first
    assert "S_pMSE is a ratio" in first and "risks are percentages of records" in first


def test_the_excess_table_shows_every_risk_as_a_percentage():
    def baseline(measure: str, family: str, train: float, hold: float, params: dict) -> list[dict]:
        out = []
        for kind, value in (("training", train), ("holdout", hold), ("excess", train - hold)):
            out += rows(family, family, {**params, "baseline": kind}, {measure: sets(value, value)})
        out += rows(family, family, {**params, "baseline": "excess", "summary": "mean"}, {measure: {"mean": 0.1}})
        for bound, value in (("lower95", 0.05), ("upper95", 0.15)):
            p = {**params, "baseline": "excess", "summary": bound, "ci": "permutation"}
            out += rows(family, family, p, {measure: {"mean": value}})
        return out

    idrisk = baseline("file_risk", "identification_risk", 0.3, 0.2, {"scenario": "s", "radius": {"Income": 0.1}})
    repu = baseline("repU", "disclosure", 30.0, 20.0, KEYS)
    shown = excess_summary(table(idrisk, repu)).set_index("figure")
    risk = shown.loc["identification risk (file_risk, %)"]
    assert (risk["training"], risk["holdout"]) == pytest.approx((30.0, 20.0))
    difference = risk[["difference", "difference_lower95", "difference_upper95"]].to_list()
    assert difference == pytest.approx([10.0, 5.0, 15.0])
    assert shown.loc["repU (%)", "training"] == pytest.approx(30.0)  # already a percentage


def test_partial_synthesis_has_its_own_section_with_plain_names():
    margins = [
        {**r, "type": "margins"}
        for r in rows("synthesis", "synthesise", {"limit": 10}, {"ipf_compatible": {"original": 0}})
        + rows(
            "synthesis",
            "synthesise",
            {"limit": 10, "margin": ["sex", "agegr"]},
            {"ipf_tvd_n": {"original": 3}},
            source="L10",
        )
    ]
    partial = [
        {**r, "type": "partial"}
        for r in rows("synthesis", "synthesise", {"kind": "partial"}, {"n": {"original": 1000}}, source="p")
        + rows(
            "synthesis",
            "synthesise",
            {"kind": "partial", "variable": "Income"},
            {"cart_leaves": {"original": 12}},
            source="p",
        )
    ]
    results = table(margins, partial)
    page = report_html.render(outcome(results, [{"type": "profile"}]))
    sections = dict(re.findall(r'<section id="(synthesis-\w+)"><h2>([^<]+)</h2>', page))
    assert sections == {
        "synthesis-margins": "Synthesis from coarsened margins",
        "synthesis-partial": "Partial synthesis (synthpop syn(): the variables not synthesised are released unchanged)",
    }
    partial_html = page[page.index('id="synthesis-partial"') :]
    margins_html = page[page.index('id="synthesis-margins"') : page.index('id="synthesis-partial"')]
    assert "<h3>synthesise: d / p: fit</h3>" in partial_html and "d / s" not in partial_html
    assert "<h3>synthesise: d / p: synthesised variables</h3>" in partial_html
    assert "<th>CART tree leaves (leaves)</th>" in partial_html and "<td>Income</td><td>12</td>" in partial_html
    # internal names: a plain name, a unit and a meaning, with the results.csv name beside them
    assert (
        "<td>margins compatible</td><td>0</td><td>1 = yes, 0 = no</td><td>whether one table can match" in margins_html
    )
    assert "<td>ipf_compatible</td>" in margins_html
    assert "<th>total-variation distance to the margin (records)</th>" in margins_html
    assert "<td>total-variation distance to the margin</td><td>records</td><td>half the sum of" in margins_html


# ---- the radius plots with fixed radii (CPS: radius {education: 0.5, experience: 0.5, wage: 25}) ----


FAMILY = "identification_risk"


def _fixed_radii_rows() -> pd.DataFrame:
    """A swept wage radius beside fixed education and experience radii, and a scenario at fixed radii."""
    out = []
    scenarios = {"swept": {"known": ["education", "experience"], "synthesised": ["wage"]}, "fixed": {}}
    unit = {"scenarios": scenarios, "percentage": False}
    for wage, risks in ((10.0, (0.1, 0.12)), (25.0, (0.2, 0.22)), (50.0, (0.15, 0.16))):
        radius = {"education": 0.5, "experience": 0.5, "wage": wage}
        out += rows(
            "identification_risk",
            "idrisk",
            {**unit, "scenario": "swept", "radius": radius},
            {"file_risk": sets(*risks)},
            kind="identification_risk",
        )
    out += rows(
        "identification_risk",
        "idrisk",
        {**unit, "scenario": "swept", "variable": "wage"},
        {"r_star": {"mean": 25}},
        kind="identification_risk",
    )
    boundary = {"r_star_at_boundary": {"mean": 0}}
    out += rows("identification_risk", "idrisk", {**unit, "scenario": "swept"}, boundary, kind="identification_risk")
    for scenario, wage in (("swept", 25.0), ("fixed", 25.0)):
        radius = {"education": 0.5, "experience": 0.5, "wage": wage}
        out += rows(
            FAMILY,
            "idrisk",
            {**unit, "scenario": scenario, "radius": radius},
            {"file_risk_at_max": sets(0.2, 0.22)},
            kind="identification_risk",
        )
    return table(out)


def _axes_pixels(fig) -> tuple[float, float]:
    """Width and height of each panel's plotting area in pixels at the report's 90 dpi."""
    fig.set_dpi(90)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    box = fig.axes[0].get_window_extent()
    return box.width, box.height


def test_fig6_with_fixed_radii_names_only_the_swept_radius_and_the_unit():
    by_radius = risk_by_radius(_fixed_radii_rows())
    assert list(dict.fromkeys(by_radius["radius"])) == ["wage=10", "wage=25", "wage=50"]
    assert set(by_radius["fixed"]) == {"education=0.5, experience=0.5"}
    assert set(by_radius.loc[by_radius["r_star"], "radius"]) == {"wage=25"}
    fig = plot_risk_by_radius(by_radius, title="idrisk: d / s")
    ax = fig.axes[0]
    assert ax.get_xlabel() == "radius of wage (in its own units)\nfixed: education=0.5, experience=0.5"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["10", "25", "50"]  # the axis names the variable
    assert "share of records" in ax.get_ylabel()
    width, height = _axes_pixels(fig)
    assert width > 250 and height > 200  # was ≈ 280 × 40 px with the full radii as tick labels


def test_fig7_with_fixed_radii_keeps_its_axes_and_wraps_its_labels():
    points = risk_points(_fixed_radii_rows())
    labelled = points.assign(scenario=[f"cps/cart_wage_first: {s}" for s in points["scenario"]])
    fig = plot_risk_at_max_radius(labelled)
    labels = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert all(max(len(line) for line in label.split("\n")) <= 30 for label in labels)
    assert "wage=25" in labels[0] and "education=0.5" in labels[0]
    width, height = _axes_pixels(fig)
    assert width > 250 and height > 200
    assert np.isclose(fig.get_size_inches()[1] / fig.get_size_inches()[0], 0.8, atol=0.3)  # not a strip


def test_a_fixed_radius_scenario_names_its_radius_on_the_first_screen():
    # the swept scenario gets its r*, the scenario at fixed radii its radius (issue 23 item 5)
    note = _headlines(_fixed_radii_rows()).loc["identification risk at r* (%)", "note"]
    assert note == "swept: r* wage=25; fixed: fixed radius education=0.5, experience=0.5, wage=25"
