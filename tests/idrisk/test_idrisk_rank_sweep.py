"""The 3-d segment-tree sweep (:func:`_count_3d_ranks`), radius grids and balanced key blocks
against brute force: ties, values on interval ends, empty and one-record blocks, NA keys."""

from __future__ import annotations

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from idrisk_brute import brute_force

from pipeline.blocks import (
    BLOCK_COLUMN,
    ROW_COLUMN,
    balanced_blocks,
    key_hash,
    keyed_partition,
    split_by_block,
    sum_key_counts,
    sum_key_loads,
)
from pipeline.data.schema import Schema
from pipeline.evaluation.data import as_eval_data
from pipeline.evaluation.execution import Executor
from pipeline.risk.idrisk import identification_risk, radius_sweep
from pipeline.risk.idrisk.counting import BoxIndex, _count_3d_ranks, query_visit_order


def _inside(points, groups, q_groups, lo, hi, closed):
    inside = groups[None, :] == q_groups[:, None]
    for k in range(points.shape[1]):
        v = points[None, :, k]
        if closed:
            inside &= (v >= lo[:, None, k]) & (v <= hi[:, None, k])
        else:
            inside &= (v > lo[:, None, k]) & (v < hi[:, None, k])
    return inside.sum(axis=1)


@pytest.mark.parametrize("closed", [False, True])
def test_index_counts_in_three_dimensions_match_brute_force(closed):
    """Integer values (ties everywhere; integer radii put values exactly on the interval ends),
    up to 4 blocks of which some are empty or hold one point, no points at all, dimensions
    with 1 to 40 distinct values (each may become the segment-tree dimension)."""
    rng = np.random.default_rng(3 + closed)
    for _ in range(150):
        n, q, g = int(rng.integers(0, 120)), int(rng.integers(0, 100)), int(rng.integers(1, 5))
        spans = rng.integers(1, 40, 3)
        points = np.column_stack([rng.integers(0, s, n) for s in spans]).astype(float).reshape(n, 3)
        groups = rng.integers(0, g, n)
        if n and rng.random() < 0.3:
            groups[:] = 0
            groups[0] = g  # block g holds one point
        q_groups = rng.integers(0, g + 2, q)  # block g + 1 holds none
        centres = np.column_stack([rng.integers(0, s, q) for s in spans]).astype(float).reshape(q, 3)
        half = rng.integers(0, 4, (q, 3)).astype(float)
        lo, hi = centres - half, centres + half
        index = BoxIndex(groups, points, g + 2)
        visit = [query_visit_order(q_groups, centres[:, k], g + 2) for k in range(3)]
        got = index.count(*index.bounds(q_groups, lo, hi, closed, visit))
        np.testing.assert_array_equal(got, _inside(points, groups, q_groups, lo, hi, closed))


def test_rank_kernel_on_raw_ranges_matches_brute_force():
    """The kernel itself: ranks with ties, distinct y and z positions, empty and full ranges,
    queries whose rank range covers every level of the tree."""
    rng = np.random.default_rng(5)
    for _ in range(100):
        n, q = int(rng.integers(0, 150)), int(rng.integers(0, 120))
        n_ranks = int(rng.integers(1, 70))
        x = rng.integers(0, n_ranks, n)
        y, z = rng.permutation(n), rng.permutation(n)
        xa = rng.integers(0, n_ranks + 1, q)
        xb = np.maximum(xa, rng.integers(0, n_ranks + 1, q))
        xb[: q // 5] = n_ranks
        box = np.column_stack([rng.integers(0, n + 1, q) for _ in range(4)]).reshape(q, 4)
        box[:, 1] = np.maximum(box[:, 0], box[:, 1])
        box[:, 3] = np.maximum(box[:, 2], box[:, 3])
        x_by_y = np.empty(n, dtype=np.int64)
        z_by_y = np.empty(n, dtype=np.int64)
        x_by_y[y], z_by_y[y] = x, z
        got = _count_3d_ranks(x_by_y, z_by_y, n_ranks, xa, xb, box)
        inside = (
            (x[None, :] >= xa[:, None])
            & (x[None, :] < xb[:, None])
            & (y[None, :] >= box[:, 0:1])
            & (y[None, :] < box[:, 1:2])
            & (z[None, :] >= box[:, 2:3])
            & (z[None, :] < box[:, 3:4])
        )
        np.testing.assert_array_equal(got, inside.sum(axis=1))


def _register_like(rng, n, d):
    """Sex and region keys with missing values, a single-record region, age in whole years
    (few distinct values) and rounded money values (ties), a row-aligned synthetic set."""
    region = rng.choice(["r0", "r1", "r2", "r3"], n, p=[0.6, 0.25, 0.1, 0.05]).astype(object)
    region[0] = "solo"
    region[1:4] = None
    sex = rng.choice(["f", "m"], n).astype(object)
    sex[5] = None
    cont = {"age": rng.integers(18, 30, n).astype(float)}
    for k in range(d - 1):
        cont[f"money{k}"] = np.round(rng.lognormal(3, 0.3, n))
    orig = pd.DataFrame({"sex": pd.Categorical(sex), "region": pd.Categorical(region), **cont})
    syn = orig.copy()
    for k in range(d - 1):
        syn[f"money{k}"] = np.round(orig[f"money{k}"] * rng.choice([0.9, 1.0, 1.1], n))
    syn.loc[syn.index[6], "sex"] = None
    return orig, syn


@pytest.mark.parametrize("d", [1, 2, 3, 4])
@pytest.mark.parametrize("percentage", [True, False])
def test_measure_with_na_keys_and_small_blocks_matches_brute_force(d, percentage):
    rng = np.random.default_rng(20 + d)
    orig, syn = _register_like(rng, 260, d)
    cont = [c for c in orig.columns if c not in ("sex", "region")]
    known, synthesised = (["sex", "region", "age"], cont[1:]) if d > 1 else (["sex", "region"], cont)
    radius = {v: (0.1 if percentage else 2.0) for v in cont}
    for interval in ("open", "closed"):
        res = identification_risk(orig, [syn], known, synthesised, radius, percentage=percentage, interval=interval)
        c, t = brute_force(orig, syn, known, synthesised, radius, percentage, False, interval == "closed")
        np.testing.assert_array_equal(res.c[:, 0], c)
        np.testing.assert_array_equal(res.T[:, 0], t)
        assert res.c[1, 0] == 0  # a missing key matches nothing
        assert res.c[0, 0] == int(t[0])  # the only record of its region


def test_three_dimensional_grid_equals_single_radius_runs():
    """A radius grid reuses one index per set (sorts, ranks, sweep layout): every combination
    gives the counts of a separate run at that radius."""
    rng = np.random.default_rng(31)
    orig, syn = _register_like(rng, 300, 3)
    syns = [syn, _register_like(rng, 300, 3)[1]]
    grid = {"money0": [0.05, 0.1, 0.2], "money1": [0.1, 0.3]}
    sweep = radius_sweep(orig, syns, ["sex", "region", "age"], ["money0", "money1"], grid=grid, radius={"age": 0.1})
    for k, combo in enumerate(sweep.grid.combos):
        single = identification_risk(orig, syns, ["sex", "region", "age"], ["money0", "money1"], combo)
        np.testing.assert_array_equal(sweep.measure("exp.risk")[k], single.exp_risk)
        np.testing.assert_array_equal(sweep.measure("s")[k], single.s)


def test_balanced_blocks_deal_largest_keys_first_deterministically():
    loads = pd.Series([50, 30, 30, 20, 10, 10], index=np.array([7, 3, 9, -4, 5, 1], dtype=np.int64))
    blocks = balanced_blocks(loads, 2)
    # 50 -> 0; 30 (hash 3) -> 1; 30 (hash 9) -> 1 (60); 20 -> 0 (70); 10 (hash 1) -> 1 (70);
    # 10 (hash 5) -> 0 (equal loads: the lowest block)
    assert blocks.to_dict() == {7: 0, 3: 1, 9: 1, -4: 0, 5: 0, 1: 1}
    shuffled = loads.sample(frac=1.0, random_state=1)
    assert balanced_blocks(shuffled, 2).sort_index().equals(blocks.sort_index())
    totals = loads.groupby(blocks.reindex(loads.index).to_numpy()).sum()
    assert totals.tolist() == [80, 70]


def test_split_by_block_cuts_a_partition_into_whole_keys_in_record_order():
    """Every record once, in its key's block, records in order, row ids from the offset; NA keys a key."""
    rng = np.random.default_rng(5)
    region = pd.Categorical(rng.choice(["a", "b", "c", None], size=60), categories=["a", "b", "c", "d"])
    frame = pd.DataFrame({"region": region, "v": rng.integers(0, 4, 60).astype(float)})
    part = keyed_partition(frame, ["region"])
    loads = sum_key_loads([part])
    assert loads.sum() == 60 and len(loads) == 4  # a, b, c and the missing value
    assignment = balanced_blocks(loads, 3).sort_index()
    hashes, blocks = assignment.index.to_numpy(), assignment.to_numpy()
    pieces = split_by_block(part, hashes, blocks, 3, offset=100)
    assert len(pieces) == 3 and sum(len(p) for p in pieces) == 60
    for b, piece in enumerate(pieces):
        rows = piece[ROW_COLUMN].to_numpy()
        assert np.all(np.diff(rows) > 0)  # record order kept
        np.testing.assert_array_equal(piece["v"].to_numpy(), frame["v"].to_numpy()[rows - 100])
        np.testing.assert_array_equal(piece[BLOCK_COLUMN].to_numpy(), key_hash(frame.iloc[rows - 100], ["region"]))
        assert set(assignment.reindex(piece[BLOCK_COLUMN].to_numpy()).tolist()) <= {b}
        assert piece["region"].dtype == frame["region"].dtype
    assert sorted(np.concatenate([p[ROW_COLUMN].to_numpy() for p in pieces]).tolist()) == list(range(100, 160))
    empty = split_by_block(keyed_partition(frame.iloc[:0], ["region"]), hashes, blocks, 3, offset=None)
    assert [len(p) for p in empty] == [0, 0, 0] and ROW_COLUMN not in empty[0].columns


def test_balanced_key_blocks_keep_keys_whole_and_sizes_even(dask_client):
    """Heavy-tailed key sizes: each key whole in the block it was dealt, blocks within the largest key."""
    rng = np.random.default_rng(8)
    sizes = (4000 / np.arange(1, 41) ** 1.2).astype(int) + 1
    region = np.repeat([f"m{k}" for k in range(40)], sizes)
    frame = pd.DataFrame({"region": pd.Categorical(rng.permutation(region)), "v": np.arange(len(region))})
    keys = ["region"]
    loads = sum_key_counts([pd.Series(key_hash(frame, keys)).value_counts()])
    lazy = dd.from_pandas(frame, npartitions=3)
    ex = Executor(dask_client, policy="blocks")
    blocks = ex.key_blocks(as_eval_data(lazy, [lazy], Schema.infer(frame)), keys, n_blocks=4, with_row_id=True,
                           balanced=True)  # fmt: skip
    parts = [p.compute() for p in blocks.original.to_delayed()]
    syn_parts = [p.compute() for p in blocks.synthetic[0].to_delayed()]
    assert sum(len(p) for p in parts) == len(frame)
    seen = [set(p["region"].astype(str)) for p in parts]
    assert all(not (a & b) for i, a in enumerate(seen) for b in seen[i + 1 :])  # keys whole
    expected = balanced_blocks(loads, 4)
    for b, (p, q) in enumerate(zip(parts, syn_parts, strict=True)):  # each block in its own partition, as dealt
        assert set(expected.reindex(key_hash(p, keys)).tolist()) <= {b}
        np.testing.assert_array_equal(p["v"].to_numpy(), p[ROW_COLUMN].to_numpy())  # row ids are positions
        pd.testing.assert_frame_equal(p.reset_index(drop=True), q.reset_index(drop=True))  # aligned
    assert max(len(p) for p in parts) <= max(sizes.max(), 1.05 * len(frame) / 4)


def test_three_dimensional_cluster_results_equal_memory(dask_client):
    """Balanced key blocks on the cluster: identical c and T for any partitioning and block count."""
    rng = np.random.default_rng(41)
    orig, syn = _register_like(rng, 400, 3)
    args = (["sex", "region", "age"], ["money0", "money1"], 0.1)
    ref = identification_risk(orig, [syn], *args, executor=Executor(policy="memory"))
    for n_parts, block_rows in [(1, 400), (3, 90), (4, 55)]:
        res = identification_risk(
            dd.from_pandas(orig, npartitions=n_parts),
            [dd.from_pandas(syn, npartitions=max(1, n_parts - 1))],
            *args,
            schema=Schema.infer(orig),
            executor=Executor(dask_client, policy="blocks", block_rows=block_rows),
        )
        np.testing.assert_array_equal(res.c, ref.c)
        np.testing.assert_array_equal(res.T, ref.T)
        np.testing.assert_array_equal(res.exp_risk, ref.exp_risk)
