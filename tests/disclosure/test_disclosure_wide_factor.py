"""A key factor with 100,000 declared levels (a register's address codes) is coded in linear time
and gives the same figures as the same data with only its observed levels (issue 25)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from pipeline.risk.disclosure import disclosure
from pipeline.risk.disclosure.coding import MISSING, ColumnStats, factor_coder

LEVELS = [f"P{i:06d}" for i in range(100_000)]


def test_factor_coder_keeps_declared_order_then_new_labels():
    counts = pd.Series([3, 1], index=["P000007", "P099999"])
    other = pd.Series([2], index=["zzz"])  # a label only a synthetic set has (text)
    coder = factor_coder(
        "place",
        [
            ColumnStats(True, tuple(LEVELS), counts, 0, 4),
            ColumnStats(True, tuple(LEVELS), pd.concat([counts, other]), 0, 6),
        ],
    )
    assert list(coder.labels[:3]) == LEVELS[:3] and coder.labels[99_999] == "P099999"
    assert list(coder.labels[100_000:]) == ["zzz", MISSING] and coder.labels[coder.missing] == MISSING


def test_disclosure_with_a_100000_level_key_equals_its_observed_levels():
    rng = np.random.default_rng(7)
    n = 20_000
    place = rng.choice(LEVELS[:3_000], n)
    frame = pd.DataFrame({"place": place, "sex": rng.choice(["M", "F"], n), "y": rng.choice(["a", "b", "c"], n)})
    syn = frame.sample(frac=1, random_state=3).reset_index(drop=True)
    syn["y"] = rng.choice(["a", "b", "c"], n)
    wide = {"place": pd.Categorical(frame["place"], categories=LEVELS)}
    wide_syn = {"place": pd.Categorical(syn["place"], categories=LEVELS)}
    observed = sorted(set(place))
    narrow = {"place": pd.Categorical(frame["place"], categories=observed)}
    narrow_syn = {"place": pd.Categorical(syn["place"], categories=observed)}
    got = disclosure(frame.assign(**wide), syn.assign(**wide_syn), keys=["place", "sex"], target="y")
    want = disclosure(frame.assign(**narrow), syn.assign(**narrow_syn), keys=["place", "sex"], target="y")
    pd.testing.assert_frame_equal(got.ident, want.ident)
    pd.testing.assert_frame_equal(got.attrib, want.attrib)
    assert 0 < got.ident["repU"].iloc[0] < 100
