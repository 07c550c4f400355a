"""The compiled box-counting kernels against brute force: ties, values on the radius boundary, d = 1..4."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from idrisk_brute import brute_force

from pipeline.blocks import ROW_COLUMN
from pipeline.risk.idrisk import identification_risk
from pipeline.risk.idrisk.counting import BoxIndex, _count_3d, query_visit_order
from pipeline.risk.idrisk.matching import _own_rows


def _grid_frames(rng, n, d):
    """An original and one row-aligned synthetic set whose continuous values are multiples of 4
    (ties everywhere; radii 0.25 / 0.5 of a value or 4 / 8 absolute put other values exactly on
    the interval ends), with a categorical key and a few zeros."""
    values = {f"v{k}": rng.integers(0, 7, n) * 4.0 for k in range(d)}
    orig = pd.DataFrame({"key": pd.Categorical(rng.choice(["a", "b"], n)), **values})
    syn = orig.copy()
    for k in range(d):
        moved = rng.random(n) < 0.5
        syn.loc[moved, f"v{k}"] = syn.loc[moved, f"v{k}"] + rng.choice([-8.0, -4.0, 4.0, 8.0], int(moved.sum()))
    return orig, syn


@pytest.mark.parametrize("d", [1, 2, 3, 4])
@pytest.mark.parametrize("interval", ["open", "closed"])
@pytest.mark.parametrize("percentage", [True, False])
def test_measure_on_ties_and_boundaries_matches_brute_force(d, interval, percentage):
    rng = np.random.default_rng(100 * d + 10 * percentage + (interval == "closed"))
    orig, syn = _grid_frames(rng, 220, d)
    cont = [f"v{k}" for k in range(d)]
    known, synthesised = ["key", *cont[: d // 2]], cont[d // 2 :]
    radius = {v: (0.25 if percentage else 4.0) * (1 + k % 2) for k, v in enumerate(cont)}
    res = identification_risk(orig, [syn], known, synthesised, radius, percentage=percentage, interval=interval)
    c, t = brute_force(orig, syn, known, synthesised, radius, percentage, False, interval == "closed")
    np.testing.assert_array_equal(res.c[:, 0], c)
    np.testing.assert_array_equal(res.T[:, 0], t)
    # the boundary matters: the other interval type gives other counts on these data
    other = brute_force(orig, syn, known, synthesised, radius, percentage, False, interval == "open")[0]
    assert not np.array_equal(other, c)


@pytest.mark.parametrize("d", [3, 4])
def test_euclidean_in_three_and_four_dimensions_matches_brute_force(d):
    rng = np.random.default_rng(d)
    orig, syn = _grid_frames(rng, 200, d)
    cont = [f"v{k}" for k in range(d)]
    radius = dict.fromkeys(cont, 0.5)
    res = identification_risk(orig, [syn], ["key", "v0"], cont[1:], radius, euclidean=True)
    c, t = brute_force(orig, syn, ["key", "v0"], cont[1:], radius, True, True, False)
    np.testing.assert_array_equal(res.c[:, 0], c)
    np.testing.assert_array_equal(res.T[:, 0], t)


def _brute_counts(pg, pos, qg, a, b):
    inside = pg[None, :] == qg[:, None]
    for k in range(pos.shape[1]):
        inside &= (pos[None, :, k] >= a[:, None, k]) & (pos[None, :, k] < b[:, None, k])
    return inside.sum(axis=1)


def test_3d_kernel_with_blocks_matches_brute_force():
    """Blocks (as the four-dimensional levels pass them), empty boxes, empty and full ranges."""
    rng = np.random.default_rng(0)
    for _ in range(60):
        n, q, g = int(rng.integers(0, 90)), int(rng.integers(0, 90)), int(rng.integers(1, 5))
        m = n + 1
        pos = np.column_stack([rng.permutation(n) for _ in range(3)]).reshape(n, 3).astype(np.int64)
        pg = rng.integers(0, g, n)
        qg = rng.integers(0, g + 1, q)  # block g has no points
        a = rng.integers(0, m, (q, 3))
        b = np.maximum(a, rng.integers(0, m, (q, 3)))
        b[: q // 4] = n  # whole ranges
        got = _count_3d(pg, pos, qg, a, b, m)
        np.testing.assert_array_equal(got, _brute_counts(pg, pos, qg, a, b))


def test_3d_counts_of_many_levels_match_brute_force():
    """A few thousand points with tied values: many merge levels and chunk boundaries."""
    rng = np.random.default_rng(1)
    n, q = 3000, 2500
    groups = rng.integers(0, 3, n)
    pts = np.round(rng.normal(size=(n, 3)), 1)
    idx = BoxIndex(groups, pts, 3)
    qg = rng.integers(0, 3, q)
    centre = np.round(rng.normal(size=(q, 3)), 1)
    lo, hi = centre - 0.5, centre + 0.5
    visit = [query_visit_order(qg, centre[:, k], 3) for k in range(3)]
    got = idx.count(*idx.bounds(qg, lo, hi, False, visit))
    inside = groups[None, :] == qg[:, None]
    for k in range(3):
        inside &= (pts[None, :, k] > lo[:, None, k]) & (pts[None, :, k] < hi[:, None, k])
    np.testing.assert_array_equal(got, inside.sum(axis=1))


def test_key_codes_of_mixed_kinds_match_brute_force():
    """Key variables as strings in one set and categoricals in the other, numbers matched exactly
    (no radius; -0.0 == 0.0), missing values: the key blocks agree with brute force."""
    rng = np.random.default_rng(9)
    n = 150
    orig = pd.DataFrame(
        {
            "region": pd.Series(rng.choice(["x", "y", "z"], n), dtype=object),
            "size": rng.choice([-0.0, 0.0, 1.0, 2.5], n),
            "income": rng.integers(1, 9, n) * 4.0,
        }
    )
    orig.loc[orig.index[:4], "region"] = None
    syn = orig.copy()
    syn["region"] = pd.Categorical(rng.choice(["z", "y", "x"], n), categories=["z", "y", "x", "w"])
    syn["size"] = np.where(orig["size"] == 0.0, -orig["size"], orig["size"])  # signs of zeros flipped
    known, synthesised = ["region", "size"], ["income"]
    res = identification_risk(orig, [syn], known, synthesised, None)
    c, t = brute_force(orig, syn, known, synthesised, None)
    np.testing.assert_array_equal(res.c[:, 0], c)
    np.testing.assert_array_equal(res.T[:, 0], t)
    assert res.c[0, 0] == 0  # a missing key matches nothing


def test_key_variables_beyond_one_int64_code_match_brute_force():
    """Five categorical variables of 10,000 declared levels each (a radix product over 2**62, so
    the key codes are renumbered on the way): same counts as brute force."""
    rng = np.random.default_rng(10)
    n = 120
    levels = [f"l{k}" for k in range(10_000)]
    cols = {f"k{j}": pd.Categorical(rng.choice(levels[:2], n), categories=levels) for j in range(5)}
    orig = pd.DataFrame({**cols, "income": rng.integers(1, 9, n) * 4.0})
    syn = orig.copy()
    syn["k4"] = pd.Categorical(rng.choice(levels[:2], n), categories=levels)
    known, synthesised = [f"k{j}" for j in range(4)], ["k4", "income"]
    res = identification_risk(orig, [syn], known, synthesised, {"income": 0.5}, interval="closed")
    c, t = brute_force(orig, syn, known, synthesised, {"income": 0.5}, closed=True)
    np.testing.assert_array_equal(res.c[:, 0], c)
    np.testing.assert_array_equal(res.T[:, 0], t)


@pytest.mark.parametrize("shuffled", [False, True])
def test_own_rows_found_in_any_row_order(shuffled):
    """A block's records in increasing row order (the usual case) or not: each target finds the
    position of its own synthetic row, -1 where that row is in another block."""
    rng = np.random.default_rng(12)
    rows = np.sort(rng.choice(5000, 800, replace=False))
    syn_rows = np.sort(np.concatenate([rng.choice(rows, 500, replace=False), np.arange(5000, 5100)]))
    if shuffled:
        rows, syn_rows = rng.permutation(rows), rng.permutation(syn_rows)
    got = _own_rows(pd.DataFrame({ROW_COLUMN: rows}), pd.DataFrame({ROW_COLUMN: syn_rows}))
    np.testing.assert_array_equal(got, pd.Index(syn_rows).get_indexer(rows))
    assert (got == -1).sum() == 300


@pytest.mark.parametrize("interval", ["open", "closed"])
def test_exact_variables_beside_a_percentage_radius_match_brute_force(interval):
    """Issue 23: whole-number years of education matched exactly while the wage takes a 10 %
    radius (zeros included: a percentage radius of a 0 is 0, which no open interval matches)."""
    rng = np.random.default_rng(23)
    n = 400
    orig = pd.DataFrame(
        {
            "key": pd.Categorical(rng.choice(["a", "b"], n)),
            "education": rng.integers(0, 4, n).astype(float),
            "experience": rng.integers(0, 3, n).astype(float),
            "wage": rng.lognormal(6, 0.3, n),
        }
    )
    syn = orig.copy()
    moved = rng.random(n) < 0.5
    syn.loc[moved, "wage"] = syn.loc[moved, "wage"] * rng.uniform(0.8, 1.2, int(moved.sum()))
    known, synthesised = ["key", "education", "experience"], ["wage"]
    res = identification_risk(
        orig, [syn], known, synthesised, {"experience": 0.5, "wage": 0.1}, interval=interval, exact=["education"]
    )
    assert res.plan.categorical == ("key", "education") and res.plan.continuous == ("experience", "wage")
    c, t = brute_force(orig, syn, known, synthesised, {"experience": 0.5, "wage": 0.1}, closed=interval == "closed")
    np.testing.assert_array_equal(res.c[:, 0], c)
    np.testing.assert_array_equal(res.T[:, 0], t)
    # both whole-number variables exact; a single radius then applies to the wage alone
    both = identification_risk(
        orig, [syn], known, synthesised, 0.1, interval=interval, exact=["education", "experience"]
    )
    c, t = brute_force(orig, syn, known, synthesised, {"wage": 0.1}, closed=interval == "closed")
    np.testing.assert_array_equal(both.c[:, 0], c)
    np.testing.assert_array_equal(both.T[:, 0], t)
    zeros = orig["education"].eq(0).to_numpy() & orig["experience"].eq(0).to_numpy() & ~moved
    assert zeros.sum() > 10 and both.T[zeros, 0].all()  # a record with 0s still matches its own row
