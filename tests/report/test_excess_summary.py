"""The first screen's excess-risk table reads the baseline rows by their params: training and
holdout figures, the mean excess with its permutation interval, the worst setting, the verdict;
and the release summary's headlines ignore those rows."""

from __future__ import annotations

import math

import pandas as pd

from pipeline.evaluation.base import canonical_json
from pipeline.report.baselines import ADDS_RISK, NO_EXCESS, NO_INTERVAL, excess_summary, verdict
from pipeline.report.summary import release_summary

RELEASE = {"dataset": "d", "source": "s", "repetition": 0, "family": "disclosure", "type": "disclosure"}


def _row(synthetic: str, measure: str, value: float, **params) -> dict:
    return {**RELEASE, "measure_name": "disclosure", "setting": "", "params": canonical_json(params),
            "synthetic": synthetic, "measure": measure, "value": value}  # fmt: skip


def _target(target: str, train: list[float], hold: list[float], low: float, high: float) -> list[dict]:
    p = {"keys": ["a", "b"], "target": target}
    rows = [_row(str(i), "repU", t + 100, **p) for i, t in enumerate(train, start=1)]  # own rows: not shown
    for i, (t, h) in enumerate(zip(train, hold, strict=True), start=1):
        rows += [_row(str(i), "repU", t, **p, baseline="training"), _row(str(i), "repU", h, **p, baseline="holdout")]
        rows += [_row(str(i), "repU", t - h, **p, baseline="excess")]
    mean = sum(t - h for t, h in zip(train, hold, strict=True)) / len(train)
    rows += [_row("mean", "repU", mean, **p, baseline="excess", summary="mean")]
    rows += [_row("mean", "repU", mean - low, **p, baseline="excess", summary="lower95", ci="permutation")]
    rows += [_row("mean", "repU", mean + high, **p, baseline="excess", summary="upper95", ci="permutation")]
    rows += [_row("mean", "repU", 999.0, **p, summary="upper95", ci="t")]  # a t bound of the own rows
    return rows


def test_the_table_shows_the_worst_setting_with_its_interval_and_verdict():
    rows = _target("x", [2.0, 4.0], [1.0, 1.0], 1.0, 1.0) + _target("y", [1.0, 1.0], [1.0, 1.0], 0.5, 4.0)
    table = excess_summary(pd.DataFrame(rows))
    assert len(table) == 1
    got = table.iloc[0]
    # y has the larger upper bound (0 + 4 against 2 + 1)
    assert (got["figure"], got["training"], got["holdout"], got["excess"]) == ("repU (%)", 1.0, 1.0, 0.0)
    assert (got["lower95"], got["upper95"], got["verdict"]) == (-0.5, 4.0, NO_EXCESS)
    assert got["note"] == "1 of 2 settings with an interval above 0; shown: target=y"


def test_verdicts():
    assert verdict(0.01, 0.2) == ADDS_RISK
    assert verdict(-0.01, 0.2) == NO_EXCESS
    assert verdict(-0.3, -0.1) == NO_EXCESS
    assert verdict(math.nan, math.nan) == NO_INTERVAL


def test_no_holdout_no_table_and_headlines_read_own_rows():
    rows = pd.DataFrame(_target("x", [2.0, 4.0], [1.0, 1.0], 1.0, 1.0))
    assert excess_summary(rows[~rows["params"].str.contains("baseline")]).empty
    manifest = {"task_spec": {"measures": [{"type": "disclosure"}], "gates": []}}
    headline = release_summary(rows, manifest).set_index("headline")
    assert headline.loc["repU (%)", "value"] == 104.0  # the own rows' max over sets, not a baseline or t bound
