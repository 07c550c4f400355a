"""The first screen's excess-risk table speaks the comparison module's language: every figure's
training and holdout values, the difference with its interval, the residual, one verdict of three
on the mean over the synthetic sets, the smallest detectable difference and a verdict line per
release; the release summary's headlines ignore the comparison rows."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from pipeline.evaluation.base import canonical_json
from pipeline.evaluation.comparison import (
    BELOW,
    Comparison,
    Interval,
    Rate,
    residual,
    residual_rate,
    verdict,
    wilson,
)
from pipeline.report.baselines import (
    ADDS_RISK,
    EXCESS_COLUMNS,
    NO_EXCESS,
    NO_INTERVAL,
    excess_summary,
    release_verdicts,
)
from pipeline.report.summary import release_summary
from pipeline.results import RESULT_COLUMNS

RELEASE = {"dataset": "d", "source": "s", "repetition": 0}


def _row(synthetic: str, measure: str, value: float, role="observed", summary=None, method=None, *, kind="disclosure",
         family="disclosure", **params) -> dict:  # fmt: skip
    return {**RELEASE, "task": "t", "run_id": "r", "family": family, "type": kind, "measure_name": kind,
            "setting": "", "params": canonical_json(params), "synthetic": synthetic, "measure": measure,
            "role": role, "summary": summary, "method": method, "value": value}  # fmt: skip


def _frame(rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=RESULT_COLUMNS)


def _target(target: str, train: list[float], hold: list[float], low: float, high: float) -> list[dict]:
    p = {"keys": ["a", "b"], "target": target}
    rows = [_row(str(i), "repU", t + 100, **p) for i, t in enumerate(train, start=1)]  # own rows: not shown
    for i, (t, h) in enumerate(zip(train, hold, strict=True), start=1):
        rows += [_row(str(i), "repU", t, "training", **p), _row(str(i), "repU", h, "holdout", **p)]
        rows += [_row(str(i), "repU", t - h, "excess", **p)]
    mean = sum(t - h for t, h in zip(train, hold, strict=True)) / len(train)
    rows += [_row("all", "repU", mean, "excess", "mean", **p)]
    rows += [_row("all", "repU", mean - low, "excess", "lower95", "permutation", **p)]
    rows += [_row("all", "repU", mean + high, "excess", "upper95", "permutation", **p)]
    rows += [_row("all", "repU", 999.0, "observed", "upper95", "t", **p)]  # a t bound of the own rows
    return rows


def test_one_residual_for_every_comparison():
    assert residual(0.9, 0.5) == pytest.approx(0.8)  # anonymeter's (main − control) / (1 − control)
    assert residual(30.0, 20.0, scale=100.0) == pytest.approx(100 * 10 / 80)  # a percentage
    assert math.isnan(residual(0.3, 1.0))
    main, control = wilson(90, 100, 0.95), wilson(50, 100, 0.95)
    assert residual_rate(main, control).value == residual(main.value, control.value)
    difference = Interval.of_rates(main, control)
    assert difference.value == pytest.approx(main.value - control.value)
    assert difference.upper - difference.value == pytest.approx(math.hypot(main.error, control.error))


def test_three_verdicts_and_the_smallest_detectable_excess():
    assert verdict(0.01, 0.2) == ADDS_RISK
    assert verdict(-0.01, 0.2) == NO_EXCESS
    assert verdict(-0.3, -0.1) == BELOW
    assert verdict(math.nan, math.nan) == NO_INTERVAL
    # (1.96 + 0.84) / 1.96 of the half-width: an excess that size is above 0 four times in five
    assert Interval(0.0, -1.0, 1.0, "t").detectable == pytest.approx((1.959964 + 0.841621) / 1.959964, rel=1e-6)


def test_the_table_shows_the_worst_setting_with_its_interval_and_verdict():
    rows = _target("x", [2.0, 4.0], [1.0, 1.0], 1.0, 1.0) + _target("y", [1.0, 1.0], [1.0, 1.0], 0.5, 4.0)
    table = excess_summary(_frame(rows))
    assert list(table.columns) == EXCESS_COLUMNS
    assert len(table) == 1
    got = table.iloc[0]
    # y has the larger upper bound (0 + 4 against 2 + 1)
    assert (got["figure"], got["training"], got["holdout"], got["difference"]) == ("repU (%)", 1.0, 1.0, 0.0)
    assert (got["difference_lower95"], got["difference_upper95"], got["verdict"]) == (-0.5, 4.0, NO_EXCESS)
    assert (got["method"], got["sets"]) == ("permutation", 2) and math.isnan(got["residual"])
    assert got["note"] == "1 of 2 settings with an interval above 0; shown: target=y"


def _attack(rates: list[tuple[float, float, float]], error: float = 0.02) -> list[dict]:
    """Rows of a linkability entry: per set (main, control, risk), Wilson-like bounds ± ``error``."""
    out = []
    for i, (main, control, risk) in enumerate(rates, start=1):
        for name, value in (("main_rate", main), ("control_rate", control), ("baseline_rate", 0.01)):
            out += [_row(str(i), name, value, kind="linkability", family="attacks", n_neighbors=1)]
            out += [_row(str(i), f"{name}_lower", value - error, kind="linkability", family="attacks", n_neighbors=1)]
            out += [_row(str(i), f"{name}_upper", value + error, kind="linkability", family="attacks", n_neighbors=1)]
        for name, value in (("risk", risk), ("risk_lower", risk - 0.05), ("risk_upper", risk + 0.05)):
            out += [_row(str(i), name, value, kind="linkability", family="attacks", n_neighbors=1)]
    return out


def test_m_sets_are_judged_by_their_mean_not_the_worst_set():
    # set 1 alone would be "adds risk" (0.05 > hypot(0.02, 0.02) = 0.028); the mean over 3 sets is not
    rows = _attack([(0.55, 0.50, 0.1), (0.49, 0.50, 0.0), (0.50, 0.50, 0.0)])
    alone = Comparison(0.55, 0.50, Interval.of_rates(Rate(0.55, 0.02), Rate(0.50, 0.02)))
    assert alone.verdict == ADDS_RISK
    (line,) = excess_summary(_frame(rows)).to_dict(orient="records")
    assert line["figure"] == "linkability: success rate (%)" and line["sets"] == 3
    assert line["training"] == pytest.approx(100 * (0.55 + 0.49 + 0.50) / 3)
    assert line["difference"] == pytest.approx(100 * 0.04 / 3)
    assert line["difference_upper95"] - line["difference"] == pytest.approx(100 * math.hypot(0.02, 0.02))
    assert line["residual"] == pytest.approx(100 * 0.1 / 3) and line["method"] == "wilson"
    assert line["verdict"] == NO_EXCESS and "random-guess baseline 1 % [-1 %, 3 %]" in line["note"]
    leak = excess_summary(_frame(_attack([(0.9, 0.5, 0.8)] * 3))).iloc[0]
    assert leak["verdict"] == ADDS_RISK


def _dcr(shares: list[float], half: float = 0.01) -> list[dict]:
    out = []
    for i, share in enumerate(shares, start=1):
        for name, value in (("closer_to_training", share), ("closer_to_training_lower", share - half),
                            ("closer_to_training_upper", share + half)):  # fmt: skip
            out += [_row(str(i), name, value, kind="dcr", family="distance", vars=["a"])]
    return out


def test_the_share_is_compared_with_the_half_of_no_memorisation_and_can_be_below_it():
    below = excess_summary(_frame(_dcr([0.40, 0.42]))).iloc[0]
    assert (below["training"], below["holdout"]) == pytest.approx((41.0, 50.0))
    assert (below["difference"], below["difference_upper95"]) == pytest.approx((-9.0, -8.0))
    assert below["verdict"] == BELOW  # not labelled like an interval that covers 0


def test_a_verdict_line_per_release_names_what_drives_it():
    rows = _attack([(0.9, 0.5, 0.8)]) + _dcr([0.5, 0.5]) + _target("x", [1.0], [1.0], 1.0, 1.0)
    table = excess_summary(_frame(rows))
    (line,) = release_verdicts(table).to_dict(orient="records")
    assert line["verdict"] == ADDS_RISK and line["driven_by"] == "linkability: success rate (%) (+40)"
    calm = release_verdicts(excess_summary(_frame(_dcr([0.5, 0.5]))))
    assert calm["verdict"].iloc[0] == NO_EXCESS and "detectable ≥" in calm["driven_by"].iloc[0]


def test_no_holdout_no_table_and_headlines_read_own_rows():
    rows = _frame(_target("x", [2.0, 4.0], [1.0, 1.0], 1.0, 1.0))
    assert excess_summary(rows[rows["role"] == "observed"]).empty
    manifest = {"task_spec": {"measures": [{"type": "disclosure"}], "gates": []}}
    headline = release_summary(rows, manifest).set_index("headline")
    assert headline.loc["repU (%)", "value"] == 104.0  # the own rows' max over sets, not a baseline or t bound


def test_identification_risk_headline_is_its_excess_with_r_star_beside_it_and_the_records_left_out():
    unit = {"scenarios": {"s": {"known": ["Age"], "synthesised": ["Income"]}}, "percentage": False, "scenario": "s"}
    kind = {"kind": "identification_risk", "family": "identification_risk"}
    rows = []
    # radius 0.01: the excess (6 pp); radius 0.05: the largest file risk (r*), no excess
    for radius, train, hold, low, high in ((0.01, 0.08, 0.02, 0.05, 0.07), (0.05, 0.10, 0.09, -0.01, 0.03)):
        p = {**unit, "radius": {"Income": radius}}
        rows += [_row("1", "file_risk", train, **kind, **p), _row("1", "file_risk_at_max", 0.10, **kind, **p)]
        rows += [_row("1", "file_risk", train, "training", **kind, **p)]
        rows += [_row("1", "file_risk", hold, "holdout", **kind, **p)]
        rows += [_row("1", "file_risk", train - hold, "excess", **kind, **p)]
        rows += [_row("all", "file_risk", train - hold, "excess", "mean", **kind, **p)]
        rows += [_row("all", "file_risk", low, "excess", "lower95", "permutation", **kind, **p)]
        rows += [_row("all", "file_risk", high, "excess", "upper95", "permutation", **kind, **p)]
    rows += [_row("mean", "r_star", 0.05, **kind, **unit, variable="Income")]
    rows += [_row("mean", "r_star_at_boundary", 0.0, **kind, **unit)]
    rows += [_row("original", "excluded_share", 0.385, **kind, **unit)]
    manifest = {"task_spec": {"measures": [{"type": "identification_risk"}], "gates": []}}
    (line,) = release_summary(_frame(rows), manifest).to_dict(orient="records")
    assert line["headline"] == "identification risk, excess over holdout (pp)"
    assert line["value"] == pytest.approx(6.0) and line["status"] == "attention"
    assert line["note"] == (
        "largest excess at radius=Income=0.01: training 8 %, holdout 2 %, difference 6 pp [5, 7], "
        "the synthesis adds risk; file risk largest at r* (radius=Income=0.05): training 10 %, holdout 9 %, "
        "difference 1 pp [-1, 3]; records left out of the matching (a missing value in a matched variable): "
        "38.5 % in s"
    )


def test_the_distance_table_shows_the_measures_own_share_ceiling():
    # the ceiling is the dcr measure's row (closer_to_training_ceiling), never recomputed from the
    # manifest: a holdout read from a file has it too
    from pipeline.risk.distance.section import dcr_table

    figures = {"closer_to_training": 0.61, "closer_to_training_lower": 0.58, "closer_to_training_upper": 0.64,
               "closer_to_training_ceiling": 0.625, "dcr_zero_pct": 12.5}  # fmt: skip
    rows = pd.DataFrame(
        [
            {"synthetic": s, "measure": m, "value": v + (0.01 if s == "2" and m == "closer_to_training" else 0)}
            for s in ("1", "2")
            for m, v in figures.items()
        ]
    )
    table = dcr_table(rows).set_index("synthetic")
    assert list(table["ceiling for this split (%)"]) == ["62.5", "62.5"]
    assert table.loc["2", "closer to training (%) [95 %]"] == "62 [58, 64]"
    assert table.loc["1", "exact copies (zero DCR, %)"] == "12.5"
    assert dcr_table(rows[rows["measure"] != "closer_to_training_ceiling"])["ceiling for this split (%)"].eq("–").all()
