"""Issue 36 item 6: the report's first screen and the figures a user reads first.

One verdict line per release (with a holdout: the holdout verdict; without: attention or pass on
the headlines), the profile's per-variable table, Fig. 6's tick labels that never overlap and the
disclosure plot's legend inside its figure. Figures are drawn at the report's 90 dpi.
"""

from __future__ import annotations

import itertools
import re

import numpy as np
import pandas as pd
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.transforms import Bbox
from test_report_rows import rows, sets, table

from pipeline.evaluation.comparison import ADDS_RISK, NO_EXCESS, NO_INTERVAL
from pipeline.evaluation.reporting import Table
from pipeline.profile_section import profile_section
from pipeline.report.markup import DPI, table_html
from pipeline.report.summary import SUMMARY_COLUMNS
from pipeline.report.verdicts import ATTENTION, NOT_JUDGED, PASS, release_lines
from pipeline.risk.disclosure.plots import plot_disclosure_rows
from pipeline.risk.idrisk.plots import MAX_WIDTH, plot_risk_by_radius
from pipeline.risk.idrisk.section import IDRISK_EXCESS


def _summary(lines: list[tuple[str, str, str, float, float]]) -> pd.DataFrame:
    """A release summary: (dataset, source, headline, value, threshold), status from the two; the
    identification-risk excess judged otherwise (against the holdout), as its family declares."""
    return pd.DataFrame(
        [
            [d, s, 0, h, v, t, "rule of thumb", ATTENTION if v > t else PASS, "", "", h != IDRISK_EXCESS]
            for d, s, h, v, t in lines
        ],
        columns=SUMMARY_COLUMNS,
    )


def _excess(lines: list[tuple[str, str, str, str, float, float]]) -> pd.DataFrame:
    """An excess table: (dataset, source, figure, verdict, difference, detectable)."""
    return pd.DataFrame(
        [
            {"dataset": d, "source": s, "repetition": 0, "figure": f, "verdict": v, "difference": x, "detectable": e}
            for d, s, f, v, x, e in lines
        ]
    )


def test_every_release_gets_one_verdict_line_that_matches_its_tables():
    summary = _summary(
        [
            ("sd", "cart", "repU (%)", 2.5, 5.0),
            ("sd", "cart", "DiSCO (%)", 91.7, 5.0),
            ("sd", "margins", "repU (%)", 0.3, 5.0),
            ("ce", "partial", "repU (%)", 0.9, 5.0),
            ("ce", "partial", IDRISK_EXCESS, 7.6, 0.0),
            ("ce", "calm", "DiSCO (%)", 12.0, 5.0),
        ]
    )
    excess = _excess(
        [
            ("ce", "partial", "identification risk (file_risk, %)", ADDS_RISK, 7.6, 0.7),
            ("ce", "partial", "repU (%)", NO_EXCESS, 0.4, 0.9),
            ("ce", "calm", "repU (%)", NO_EXCESS, 0.1, 0.9),
            ("ce", "nothing", "dcr: share closer to training (%)", NO_INTERVAL, 1.0, np.nan),
            ("ce", "only_dcr", "dcr: share closer to training (%)", NO_EXCESS, 1.0, 2.4),
        ]
    )
    got = release_lines(summary, excess).set_index("source")
    assert list(got.index) == ["calm", "nothing", "only_dcr", "partial", "cart", "margins"]  # release order
    assert got.loc["cart", "verdict"] == ATTENTION
    assert got.loc["cart", "text"] == "DiSCO (%) 91.7 above 5; within the threshold: repU (%)"
    assert (got.loc["margins", "verdict"], got.loc["margins", "text"]) == (PASS, "within the threshold: repU (%)")
    # a holdout verdict leads; the identification-risk excess is judged by it, not again as a headline
    assert got.loc["partial", "verdict"] == ADDS_RISK
    assert got.loc["partial", "text"] == "identification risk (file_risk, %) (+7.6); within the threshold: repU (%)"
    # no excess against the holdout, but a headline above its rule of thumb: both said
    assert got.loc["calm", "verdict"] == NO_EXCESS
    assert got.loc["calm", "text"] == "repU (%) (detectable ≥ 0.9); attention: DiSCO (%) 12 above 5"
    # a holdout without interval (permutations: 0) and no headline: pass, saying why there is no verdict
    assert got.loc["nothing", "verdict"] == PASS and "no interval against the holdout" in got.loc["nothing", "text"]
    assert got.loc["only_dcr", "verdict"] == NO_EXCESS  # a release with excess figures only
    assert release_lines(summary.iloc[:0], excess.iloc[:0]).empty
    # a release of the run that no headline judges (say compare_fit only) still gets its line
    releases = pd.DataFrame({"dataset": ["sd", "sd"], "source": ["cart", "fit_only"], "repetition": [0, 0]})
    both = release_lines(summary, excess, releases).set_index("source")
    assert len(both) == len(got) + 1 and both.loc["fit_only", "verdict"] == NOT_JUDGED
    assert both.loc["fit_only", "text"].startswith("the task runs no headline measure")
    assert both.drop(index="fit_only").equals(got)


def test_the_profile_section_shows_each_variables_missing_share_and_levels():
    profile = rows(
        "profile",
        "profile",
        {},
        {"records": {"original": 4000}},
        source="",
    )
    per_variable = {
        "income": {"missing_pct": 38.6, "special_missing": 400, "distinct": 1200},
        "sex": {"missing_pct": 0.025, "levels": 3, "levels_observed": 2},
    }
    for variable, values in per_variable.items():
        profile += rows(
            "profile", "profile", {"variable": variable}, {m: {"original": v} for m, v in values.items()}, source=""
        )
    (block,) = [b for b in profile_section(table(profile), None) if isinstance(b, Table)]
    assert block.heading == "profile: d, 4000 records"
    html_table = table_html(block.frame)
    head = re.findall(r"<th>([^<]*)</th>", html_table)
    body = {cells[0]: dict(zip(head, cells, strict=True)) for cells in _cells(html_table)}
    assert body["income"]["missing (%)"] == "38.6" and body["sex"]["missing (%)"] == "0.025"
    assert body["income"]["missing codes (records)"] == "400" and body["income"]["missing codes (%)"] == "10"
    assert body["sex"]["levels (schema)"] == "3" and body["sex"]["levels observed"] == "2"
    assert body["income"]["distinct values"] == "1200" and body["income"]["levels (schema)"] == "–"


def _cells(html_table: str) -> list[list[str]]:
    return [re.findall(r"<td[^>]*>([^<]*)</td>", row) for row in re.findall(r"<tr>(.*?)</tr>", html_table)[1:]]


def _drawn(fig):
    fig.set_dpi(DPI)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return canvas.get_renderer()


def _inside(box: Bbox, fig) -> bool:
    whole = fig.bbox
    return box.x0 >= whole.x0 - 1 and box.x1 <= whole.x1 + 1 and box.y0 >= whole.y0 - 1 and box.y1 <= whole.y1 + 1


def _radius_frame(labels: list[str]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "scenario": "income",
                "radius": label,
                "risk": 0.05 + 0.01 * k + 0.001 * s,
                "r_star": k == 0,
                "at_boundary": k == 0,
                "percentage": True,
            }
            for k, label in enumerate(labels)
            for s in range(3)
        ]
    )


@pytest.mark.parametrize(
    "labels",
    [
        # one variable with a long name: the axis names it, the ticks are the radii
        [f"Expenditure_per_household={r}" for r in (0.01, 0.025, 0.05, 0.1, 0.2, 0.3)],
        # two varying variables: each label names both
        [f"Expenditure_per_household={r}, Income_of_household={r}" for r in (0.01, 0.025, 0.05, 0.1, 0.2, 0.3)],
        # many radii of two variables: wider than the page, so turned
        [f"Expenditure={r:g}, Income={r:g}" for r in np.linspace(0.01, 0.3, 14)],
    ],
)
def test_fig6_tick_labels_do_not_overlap_and_stay_in_the_figure(labels):
    fig = plot_risk_by_radius(_radius_frame(labels), title="identification_risk: d / s")
    renderer = _drawn(fig)
    ax = fig.axes[0]
    ticks = [t for t in ax.get_xticklabels() if t.get_text()]
    assert len(ticks) == len(labels)
    boxes = [t.get_window_extent(renderer) for t in ticks]
    assert all(_inside(b, fig) for b in boxes), [(b.x0, b.x1) for b in boxes]
    assert fig.get_size_inches()[0] <= MAX_WIDTH + 1e-9
    if ticks[0].get_rotation() == 0:
        for a, b in itertools.pairwise(boxes):
            assert a.x1 <= b.x0, (a.x1, b.x0)  # left to right, no overlap
    else:  # turned 45°: neighbours are parallel; their distance across the text must hold its lines
        spacing = boxes[1].x1 - boxes[0].x1
        lines = max(t.get_text().count("\n") + 1 for t in ticks)
        assert spacing * np.sin(np.pi / 4) >= lines * ticks[0].get_fontsize() * DPI / 72, spacing
    if "," not in labels[0]:
        assert [t.get_text() for t in ticks][:2] == ["0.01", "0.025"]
        assert ax.get_xlabel() == "radius of Expenditure_per_household (share of each value: r × x)"


@pytest.mark.parametrize("targets", [1, 2, 8])
def test_the_disclosure_plot_has_a_legend_for_its_two_markers_inside_the_figure(targets):
    tidy = []
    for k in range(targets):
        tidy += rows(
            "disclosure",
            "disclosure",
            {"keys": ["sex", "age"], "target": f"target_{k}"},
            {
                "UiO": {"original": 8.6},
                "Dorig": {"original": 12.0 + k},
                "repU": sets(2.4, 2.5),
                "DiSCO": sets(3.0 + k, 3.5),
            },
        )
    fig = plot_disclosure_rows(table(tidy), "disclosure: d / s (keys: sex, age)")
    renderer = _drawn(fig)
    (legend,) = fig.legends
    texts = [t.get_text() for t in legend.get_texts()]
    assert texts == ["original: UiO (left), Dorig (right)", "synthetic: repU (left), DiSCO (right)"]
    markers = [h.get_marker() for h in legend.legend_handles]
    assert markers == ["o", "^"]  # the markers the panels draw
    assert _inside(legend.get_window_extent(renderer), fig)
    lowest_axis = min(ax.get_window_extent(renderer).y0 for ax in fig.axes)
    assert legend.get_window_extent(renderer).y1 <= lowest_axis  # under the panels, not over a point


def test_sentence_columns_break_at_settings_and_keep_their_text():
    frame = pd.DataFrame({"headline": ["repU (%)"], "note": ["worst: d [keys=A+B;target=C] it's <x>"]})
    got = table_html(frame, text_columns=("note",))
    assert '<td class="text">worst: d [keys=<wbr>A+<wbr>B;<wbr>target=<wbr>C] it&#x27;s &lt;x&gt;</td>' in got
    assert '<th class="text">note</th>' in got and "<td>repU (%)</td>" in got
