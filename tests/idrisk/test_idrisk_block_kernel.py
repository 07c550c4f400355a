"""The block-by-block three-dimensional kernel (:func:`_count_3d_blocks`) and its radix argsort
against brute force: ties, values exactly on the interval ends, empty and one-record blocks,
small blocks (every pair compared) and large ones (the segment-tree sweep), several radius rows,
the Euclidean option, NA keys through the measure."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from idrisk_brute import brute_force

from pipeline.risk.idrisk import identification_risk, radius_sweep
from pipeline.risk.idrisk.counting import (
    RADIX_MIN,
    SMALL_BLOCK_PAIRS,
    _argsort_float,
    _count_3d_blocks,
    group_slices,
)
from pipeline.risk.idrisk.matching import box_bounds, euclidean_orders
from pipeline.risk.idrisk.plan import MatchPlan


@pytest.mark.parametrize("n", [0, 1, 2, RADIX_MIN - 1, RADIX_MIN, 3000])
def test_radix_argsort_sorts_every_float(n):
    """Negative and positive values, both zeros, infinities, ties and whole numbers (the
    constant low digits are skipped)."""
    rng = np.random.default_rng(n)
    for values in (
        rng.normal(0, 1e3, n),
        np.round(rng.lognormal(9, 1, n)),
        rng.choice([-np.inf, -2.5, -0.0, 0.0, 1e-300, 3.0, np.inf], n),
        np.full(n, 7.0),
    ):
        order = _argsort_float(np.ascontiguousarray(values))
        np.testing.assert_array_equal(np.sort(order), np.arange(n))
        assert np.all(values[order][1:] >= values[order][:-1])


def _plan(closed: bool, percentage: bool, euclidean: bool) -> MatchPlan:
    # v1 known, v0 and v2 synthesised: the Euclidean pools are not in column order
    return MatchPlan(
        known=("key", "v1"),
        synthesised=("v2", "v0"),
        categorical=("key",),
        continuous=("v0", "v1", "v2"),
        continuous_known=(False, True, False),
        percentage=percentage,
        euclidean=euclidean,
        closed=closed,
    )


def _brute(plan, q_groups, q_values, p_groups, p_values, radii):
    out = np.zeros((len(radii), len(q_groups)), dtype=np.int64)
    for c, row in enumerate(radii):
        lo, hi = box_bounds(plan, q_values, row)
        inside = q_groups[:, None] == p_groups[None, :]
        for k in range(3):
            v = p_values[None, :, k]
            if plan.closed:
                inside &= (v >= lo[:, None, k]) & (v <= hi[:, None, k])
            else:
                inside &= (v > lo[:, None, k]) & (v < hi[:, None, k])
        out[c] = inside.sum(axis=1)
    return out


def _kernel(plan, q_groups, q_values, p_groups, p_values, radii, n_groups):
    known, syn = euclidean_orders(plan)
    return _count_3d_blocks(
        *group_slices(q_groups, n_groups),
        np.ascontiguousarray(q_values),
        *group_slices(p_groups, n_groups),
        np.ascontiguousarray(p_values),
        np.ascontiguousarray(radii, dtype=np.float64),
        plan.percentage,
        plan.euclidean,
        np.array(known, dtype=np.int64),
        np.array(syn, dtype=np.int64),
        plan.closed,
    )


@pytest.mark.parametrize("closed", [False, True])
@pytest.mark.parametrize("percentage", [False, True])
@pytest.mark.parametrize("euclidean", [False, True])
def test_block_kernel_matches_brute_force(closed, percentage, euclidean):
    """Values on a grid of multiples of 4 (ties everywhere; radii of 0.25 / 0.5 of a value or 4 /
    8 absolute put values exactly on the interval ends), some negative (a percentage box is then
    empty) and zero; blocks of 0 to ~150 points and queries, so that both the pairwise path
    (at most SMALL_BLOCK_PAIRS pairs) and the tree path run; a dimension with one value, one
    with few and one with many (each may become the tree dimension)."""
    plan = _plan(closed, percentage, euclidean)
    rng = np.random.default_rng(10 + 4 * closed + 2 * percentage + euclidean)
    radii = np.array([[0.25, 0.5, 0.25], [0.5, 0.25, 0.0]]) if percentage else np.array([[4.0, 8.0, 4.0], [8, 0, 4]])
    seen_small = seen_tree = False
    for _ in range(40):
        n_groups = int(rng.integers(1, 6))
        p_sizes = rng.integers(0, 150, n_groups) * (rng.random(n_groups) < 0.8)
        p_sizes[rng.random(n_groups) < 0.2] = 1  # one-point blocks
        q_sizes = rng.integers(0, 150, n_groups) * (rng.random(n_groups) < 0.8)
        seen_small |= bool(np.any((p_sizes * q_sizes > 0) & (p_sizes * q_sizes <= SMALL_BLOCK_PAIRS)))
        seen_tree |= bool(np.any(p_sizes * q_sizes > SMALL_BLOCK_PAIRS))
        p_groups = rng.permutation(np.repeat(np.arange(n_groups), p_sizes))
        q_groups = rng.permutation(np.repeat(np.arange(n_groups), q_sizes))
        spans = rng.permutation([1, 6, 40])

        def values(n, spans=spans):
            return np.column_stack([(rng.integers(0, s, n) - (s > 20) * 3) * 4.0 for s in spans]).reshape(n, 3)

        p_values, q_values = values(len(p_groups)), values(len(q_groups))
        got = _kernel(plan, q_groups, q_values, p_groups, p_values, radii, n_groups)
        np.testing.assert_array_equal(got, _brute(plan, q_groups, q_values, p_groups, p_values, radii))
    assert seen_small and seen_tree


def test_block_kernel_without_points_or_queries():
    plan = _plan(False, True, False)
    radii = np.array([[0.1, 0.1, 0.1]])
    some = np.ones((5, 3))
    none = np.empty((0, 3))
    assert _kernel(plan, np.zeros(5, np.int64), some, np.zeros(0, np.int64), none, radii, 1).tolist() == [[0] * 5]
    assert _kernel(plan, np.zeros(0, np.int64), none, np.zeros(5, np.int64), some, radii, 1).shape == (1, 0)
    # queries of a block that has no points, points of a block that has no queries
    got = _kernel(plan, np.zeros(5, np.int64), some, np.ones(5, np.int64), some, radii, 2)
    assert got.tolist() == [[0] * 5]


def _many_cells(rng, n):
    """Many small key cells (sex x 40 regions) with missing keys, age in whole years and money
    rounded to tens (ties), a row-aligned synthetic set with missing keys of its own."""
    region = rng.integers(0, 40, n).astype(str).astype(object)
    region[rng.random(n) < 0.02] = None
    sex = rng.choice(["f", "m"], n).astype(object)
    orig = {
        "sex": sex,
        "region": region,
        "age": rng.integers(18, 40, n).astype(float),
        "income": np.round(rng.lognormal(7, 0.3, n), -1),
        "spend": np.round(rng.lognormal(6, 0.3, n), -1),
    }
    orig = pd.DataFrame(orig).astype({"sex": "category", "region": "category"})
    syn = orig.copy()
    syn["income"] = np.round(orig["income"] * rng.choice([0.9, 1.0, 1.1], n), -1)
    syn["spend"] = np.round(orig["spend"] * rng.choice([0.9, 1.0, 1.1], n), -1)
    syn.loc[syn.index[rng.random(n) < 0.02], "region"] = None
    return orig, syn


@pytest.mark.parametrize("interval", ["open", "closed"])
def test_measure_on_many_small_cells_matches_brute_force(interval):
    """Most cells below the pairwise threshold, a few above: c and T as brute force, NA keys
    matching nothing; a radius grid gives the counts of separate runs."""
    rng = np.random.default_rng(7 + (interval == "closed"))
    orig, syn = _many_cells(rng, 1200)
    known, synthesised = ["sex", "region", "age"], ["income", "spend"]
    radius = {"age": 0.1, "income": 0.1, "spend": 0.2}
    res = identification_risk(orig, [syn], known, synthesised, radius, interval=interval)
    c, t = brute_force(orig, syn, known, synthesised, radius, True, False, interval == "closed")
    np.testing.assert_array_equal(res.c[:, 0], c)
    np.testing.assert_array_equal(res.T[:, 0], t)
    assert np.all(res.c[orig["region"].isna().to_numpy(), 0] == 0)
    grid = {"income": [0.05, 0.1], "spend": [0.1, 0.2]}
    sweep = radius_sweep(orig, [syn], known, synthesised, grid=grid, radius={"age": 0.1}, interval=interval)
    for k, combo in enumerate(sweep.grid.combos):
        single = identification_risk(orig, [syn], known, synthesised, combo, interval=interval)
        np.testing.assert_array_equal(sweep.measure("exp.risk")[k], single.exp_risk)


@pytest.mark.parametrize("euclidean", [False, True])
def test_radius_rows_swept_together_or_apart_match_brute_force(euclidean):
    """Radius rows share one segment-tree sweep up to ``max_boxes`` (radius row, query) boxes:
    one row at a time, a few rows per sweep (a last sweep with fewer), all rows together — each
    row's counts equal brute force (grid values: ties and values on the interval ends; one
    radius 0 per row, an empty box; two tree-sized blocks and a pairwise one)."""
    plan = _plan(False, True, euclidean)
    rng = np.random.default_rng(77 + euclidean)
    sizes = np.array([300, 140, 20])  # 300 x 300 and 140 x 140 pairs take the tree, 20 x 20 does not
    p_groups = rng.permutation(np.repeat(np.arange(3), sizes))
    q_groups = rng.permutation(np.repeat(np.arange(3), sizes))

    def values(n):
        return np.column_stack([rng.integers(1, s, n) * 4.0 for s in (5, 30, 60)])

    p_values, q_values = values(len(p_groups)), values(len(q_groups))
    radii = np.array([[0.25, 0.5, 0.25], [0.5, 0.25, 0.0], [0.1, 0.1, 0.1], [0.25, 0.25, 0.5], [0.0, 0.5, 0.5]])
    expected = _brute(plan, q_groups, q_values, p_groups, p_values, radii)
    known, syn = euclidean_orders(plan)
    args = (
        *group_slices(q_groups, 3),
        q_values,
        *group_slices(p_groups, 3),
        p_values,
        radii,
        plan.percentage,
        plan.euclidean,
        np.array(known, dtype=np.int64),
        np.array(syn, dtype=np.int64),
        plan.closed,
    )
    for max_boxes in (1, 300, 2 * 300, 3 * 300 + 1, 10**6):
        np.testing.assert_array_equal(_count_3d_blocks(*args, max_boxes), expected)
    if not euclidean:  # an open interval of radius 0 holds nothing (pooled half-widths are not 0)
        assert expected[1].sum() == 0 and expected[4].sum() == 0
    assert expected[2].sum() > 0
