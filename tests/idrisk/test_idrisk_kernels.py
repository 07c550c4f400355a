"""Counting kernels and the full measure against a brute-force O(n²) implementation."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from idrisk_brute import brute_force

from pipeline.risk.idrisk import identification_risk, radius_sweep
from pipeline.risk.idrisk.counting import BoxIndex, query_visit_order


@pytest.mark.parametrize("d", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("closed", [False, True])
def test_box_counts_match_brute_force(d, closed):
    rng = np.random.default_rng(d * 10 + closed)
    for _ in range(8):
        n, q, g = rng.integers(0, 120), rng.integers(1, 120), rng.integers(1, 5)
        pg = rng.integers(0, g, n)
        qg = rng.integers(0, g + 1, q)  # block g has no points
        pts = rng.integers(0, 6, (n, d)).astype(float)  # many ties and boundary hits
        lo = rng.integers(-1, 6, (q, d)) - rng.random((q, d)) * rng.integers(0, 2)
        hi = lo + rng.integers(-1, 4, (q, d))  # includes empty and reversed intervals
        idx = BoxIndex(pg, pts, g + 1)
        if d == 0:
            got = idx.count_exact(qg)
        else:
            # any visiting order is correct; (block, centre) order is only faster
            visit = [
                query_visit_order(qg, lo[:, k], g + 1) if k % 2 else rng.permutation(q).astype(np.int64)
                for k in range(d)
            ]
            got = idx.count(*idx.bounds(qg, lo, hi, closed, visit))
        inside = pg[None, :] == qg[:, None]
        for k in range(d):
            p, a, b = pts[None, :, k], lo[:, None, k], hi[:, None, k]
            inside &= ((p >= a) & (p <= b)) if closed else ((p > a) & (p < b))
        np.testing.assert_array_equal(got, inside.sum(axis=1))


def test_many_y_ranges_in_one_sweep():
    rng = np.random.default_rng(7)
    pts = rng.normal(size=(300, 2))
    groups = rng.integers(0, 3, 300)
    idx = BoxIndex(groups, pts, 3)
    centre = rng.normal(size=(200, 2))
    qg = rng.integers(0, 3, 200)
    visit = [query_visit_order(qg, centre[:, k], 3) for k in range(2)]
    widths = [0.1, 0.3, 0.7]
    ax, bx = idx.bound_dim(0, qg, centre[:, 0] - 0.5, centre[:, 0] + 0.5, False, visit[0])
    ranges = [idx.bound_dim(1, qg, centre[:, 1] - w, centre[:, 1] + w, False, visit[1]) for w in widths]
    many = idx.count_2d_many(ax, bx, np.column_stack([r[0] for r in ranges]), np.column_stack([r[1] for r in ranges]))
    for j, (ay, by) in enumerate(ranges):
        single = idx.count(np.column_stack([ax, ay]), np.column_stack([bx, by]))
        np.testing.assert_array_equal(many[:, j], single)


def _random_frames(rng, n, m=2, zeros=True):
    orig = pd.DataFrame(
        {
            "sex": pd.Categorical(rng.choice(["F", "M"], n)),
            "age": rng.integers(18, 30, n).astype(float),
            "region": pd.Categorical(rng.choice(["a", "b", "c"], n)),
            "income": np.round(rng.lognormal(3, 0.4, n)),
            "spend": np.round(rng.lognormal(2, 0.3, n)),
        }
    )
    if zeros:  # zero and negative values: never matched with a percentage radius
        orig.loc[orig.index[:3], "income"] = [0.0, -5.0, 0.0]
    syns = []
    for _ in range(m):
        s = orig.copy()
        s["income"] = np.round(orig["income"].to_numpy() * rng.uniform(0.8, 1.2, n))
        s["spend"] = rng.permutation(orig["spend"].to_numpy())
        s["region"] = pd.Categorical(rng.choice(["a", "b", "c"], n), categories=["c", "b", "a"])  # other level order
        syns.append(s)
    return orig, syns


SETTINGS = [
    (["sex"], ["income"], {"income": 0.1}, True, False, "open"),
    (["sex", "age"], ["income", "spend"], {"age": 0.05, "income": 0.1, "spend": 0.2}, True, False, "open"),
    (["sex", "age"], ["region", "income", "spend"], {"age": 0.1, "income": 0.1, "spend": 0.1}, True, True, "open"),
    (["sex"], ["income", "spend"], {"income": 3.0, "spend": 1.0}, False, False, "closed"),
    (["age"], ["region", "income"], {"age": 1.0, "income": 2.0}, False, True, "open"),
    (["sex", "age"], ["income", "spend"], {"age": 0.05, "income": 0.1, "spend": 0.2}, True, False, "closed"),
    ([], ["income", "spend"], {"income": 0.1, "spend": 0.1}, True, False, "open"),
]


@pytest.mark.parametrize(("known", "syn", "radius", "pct", "euc", "interval"), SETTINGS)
def test_measure_matches_brute_force(known, syn, radius, pct, euc, interval):
    rng = np.random.default_rng(len(known) * 7 + len(syn))
    orig, syns = _random_frames(rng, 150)
    res = identification_risk(orig, syns, known, syn, radius, percentage=pct, euclidean=euc, interval=interval)
    for k, s in enumerate(syns):
        c, t = brute_force(orig, s, known, syn, radius, pct, euc, interval == "closed")
        np.testing.assert_array_equal(res.c[:, k], c)
        np.testing.assert_array_equal(res.T[:, k], t)


def test_exact_matching_without_radius():
    rng = np.random.default_rng(3)
    orig, syns = _random_frames(rng, 120)
    res = identification_risk(orig, syns, ["sex", "age"], ["income"], radius=None)
    for k, s in enumerate(syns):
        c, t = brute_force(orig, s, ["sex", "age"], ["income"], None)
        np.testing.assert_array_equal(res.c[:, k], c)
        np.testing.assert_array_equal(res.T[:, k], t)


def test_missing_categorical_values_never_match():
    rng = np.random.default_rng(4)
    orig, syns = _random_frames(rng, 60, m=1)
    orig.loc[orig.index[5], "sex"] = np.nan
    syns[0].loc[syns[0].index[7], "sex"] = np.nan
    res = identification_risk(orig, syns, ["sex"], ["income"], 0.2)
    c, t = brute_force(orig, syns[0], ["sex"], ["income"], {"income": 0.2})
    np.testing.assert_array_equal(res.c[:, 0], c)
    np.testing.assert_array_equal(res.T[:, 0], t)
    assert res.c[5, 0] == 0 and not res.T[7, 0]


def test_sweep_equals_single_radius_runs():
    rng = np.random.default_rng(5)
    orig, syns = _random_frames(rng, 200, m=3)
    known, syn = ["sex", "age"], ["income", "spend"]
    grid = {"income": [0.05, 0.1, 0.2], "spend": [0.02, 0.1]}
    sweep = radius_sweep(orig, syns, known, syn, grid=grid, radius={"age": 0.1})
    assert sweep.labels[0] == "r_income=0.05;r_spend=0.02" and len(sweep.labels) == 6
    for k, combo in enumerate(sweep.grid.combos):
        single = identification_risk(orig, syns, known, syn, combo)
        for name in ("exp.risk", "file_risk", "true.rate", "false.rate", "s"):
            np.testing.assert_array_equal(sweep.measure(name)[k], single.statistics.measures()[name])
    # two continuous variables (fast path with several y-ranges per sweep)
    sweep2 = radius_sweep(orig, syns, ["sex"], syn, grid=grid)
    for k, combo in enumerate(sweep2.grid.combos):
        single = identification_risk(orig, syns, ["sex"], syn, combo)
        np.testing.assert_array_equal(sweep2.measure("exp.risk")[k], single.exp_risk)
        np.testing.assert_array_equal(sweep2.measure("s")[k], single.s)
    best = int(np.argmax(sweep2.file_risk.mean(axis=1)))
    assert sweep2.best == best and sweep2.r_star == sweep2.grid.radius_of(best)


def test_known_continuous_variable_in_grid_and_euclidean_sweep():
    rng = np.random.default_rng(6)
    orig, syns = _random_frames(rng, 120, m=2)
    grid = {"age": [0.05, 0.1], "income": [0.1, 0.2]}
    sweep = radius_sweep(orig, syns, ["age"], ["income", "spend"], grid=grid, radius=0.1, euclidean=True)
    for k, combo in enumerate(sweep.grid.combos):
        assert combo["spend"] == 0.1
        single = identification_risk(orig, syns, ["age"], ["income", "spend"], combo, euclidean=True)
        np.testing.assert_array_equal(sweep.measure("exp.risk")[k], single.exp_risk)
