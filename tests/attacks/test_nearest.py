"""The exact nearest-neighbour search against a brute force over every pair (distances and ties)."""

from __future__ import annotations

import itertools

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from distributed import Client, LocalCluster

from pipeline.data.schema import Schema
from pipeline.evaluation.execution import Executor
from pipeline.risk.nearest.compute import DistanceSpace, gather, nearest_neighbours
from pipeline.risk.nearest.kernel import build_reference, empty_best, encode, search_block


def _brute(q_codes, q_numbers, r_codes, r_numbers, scale, k, exact=0):
    """Every pair's distance with plain numpy, then the k smallest by (distance, position); pairs
    that differ on one of the first ``exact`` codes are no candidates (inf, position -1)."""
    numeric = np.zeros((len(q_numbers), len(r_numbers)))
    for j in range(q_numbers.shape[1]):
        a, b = q_numbers[:, j][:, None], r_numbers[:, j][None, :]
        diff = np.abs(a - b)
        coord = np.minimum(diff * scale[j], 1.0) if scale[j] > 0 else (diff > 0).astype(float)
        coord = np.where(np.isnan(a) & np.isnan(b), 0.0, np.where(np.isnan(a) | np.isnan(b), 1.0, coord))
        numeric = numeric + coord
    mismatch = (q_codes[:, None, :] != r_codes[None, :, :]).sum(axis=2)
    dist = numeric + mismatch
    barred = (q_codes[:, None, :exact] != r_codes[None, :, :exact]).any(axis=2)
    dist = np.where(barred, np.inf, dist)
    order = np.lexsort((np.broadcast_to(np.arange(len(r_numbers)), dist.shape), dist), axis=1)[:, :k]
    best = np.take_along_axis(dist, order, axis=1)
    return best, np.where(np.isinf(best), -1, order)


def _random_records(rng, n, c, p, levels=3, missing=0.1, ties=False):
    codes = rng.integers(-1 if missing else 0, levels, size=(n, c)).astype(np.int32)
    numbers = rng.integers(0, 4, size=(n, p)).astype(float) if ties else rng.normal(size=(n, p))
    numbers[rng.random((n, p)) < missing] = np.nan
    return codes, numbers


def _search(q_codes, q_numbers, r_codes, r_numbers, scale, k, cuts=(), exact=0):
    d, i = empty_best(len(q_codes), k)
    edges = [0, *cuts, len(r_codes)]
    for a, b in itertools.pairwise(edges):
        search_block(build_reference(r_codes[a:b], r_numbers[a:b], a), q_codes, q_numbers, scale, d, i, exact)
    return d, i


@pytest.mark.parametrize(("c", "p", "exact"), [(3, 2, 1), (3, 0, 2), (2, 1, 2)])
def test_exact_match_variables_bar_other_records(c, p, exact):
    rng = np.random.default_rng(c + p + exact)
    q_codes, q_numbers = _random_records(rng, 60, c, p, levels=8, missing=0.1)
    r_codes, r_numbers = _random_records(rng, 40, c, p, levels=8, missing=0.1)
    scale = np.ones(p)
    want_d, want_i = _brute(q_codes, q_numbers, r_codes, r_numbers, scale, 3, exact)
    assert (want_i == -1).any()  # some queries lack a third record in their block
    for cuts in [(), (20, 21)]:
        d, i = _search(q_codes, q_numbers, r_codes, r_numbers, scale, 3, cuts, exact)
        np.testing.assert_array_equal(i, want_i)
        np.testing.assert_array_equal(d, want_d)


@pytest.mark.parametrize(
    ("c", "p", "ties", "missing"),
    [
        (2, 2, False, 0.1),
        (3, 1, True, 0.2),
        (3, 0, False, 0.1),
        (0, 3, False, 0.0),
        (0, 2, True, 0.3),
        (1, 2, True, 0.0),
    ],
)
@pytest.mark.parametrize("k", [1, 3])
def test_search_equals_brute_force(c, p, ties, missing, k):
    rng = np.random.default_rng(c * 10 + p + k)
    q_codes, q_numbers = _random_records(rng, 60, c, p, missing=missing, ties=ties)
    r_codes, r_numbers = _random_records(rng, 200, c, p, missing=missing, ties=ties)
    scale = np.array([0.5, 0.0, 2.0][:p]) if p else np.zeros(0)
    want_d, want_i = _brute(q_codes, q_numbers, r_codes, r_numbers, scale, k)
    for cuts in [(), (1,), (50, 51, 130)]:
        d, i = _search(q_codes, q_numbers, r_codes, r_numbers, scale, k, cuts)
        np.testing.assert_array_equal(i, want_i)
        np.testing.assert_array_equal(d, want_d)


@pytest.mark.parametrize(("c", "levels", "exact"), [(4, 6, 0), (4, 6, 1), (3, 20, 0), (9, 120, 0)])
def test_groups_one_mismatch_away_found_through_the_indexes(c, levels, exact):
    """Many small groups, so most queries look beyond their own; queries hold levels no reference
    record has (their leave-one-out numbers must not alias another group); 9 factors of 120
    levels overflow the mixed-radix numbers (every group is then checked)."""
    rng = np.random.default_rng(c * levels + exact)
    q_codes, q_numbers = _random_records(rng, 150, c, 2, levels=levels + 2, missing=0.05)
    r_codes, r_numbers = _random_records(rng, 300, c, 2, levels=levels, missing=0.05)
    scale = np.array([0.3, 1.0])
    reference = build_reference(r_codes, r_numbers, 0, scale)
    assert len(reference.loo_keys) == (0 if c == 9 else c)
    want_d, want_i = _brute(q_codes, q_numbers, r_codes, r_numbers, scale, 3, exact)
    assert (want_d[:, 2] >= 1).mean() > 0.2 and (want_d[:, 2] >= 2).any()
    for cuts in [(), (97, 200)]:
        d, i = _search(q_codes, q_numbers, r_codes, r_numbers, scale, 3, cuts, exact)
        np.testing.assert_array_equal(i, want_i)
        np.testing.assert_array_equal(d, want_d)


def test_the_least_crowded_variable_is_sorted_on():
    """Scaled by its range, a heavy-tailed variable crowds near its median; whole years do not."""
    rng = np.random.default_rng(1)
    numbers = np.column_stack([np.exp(rng.normal(10, 1.5, 5000)), rng.integers(0, 100, 5000).astype(float)])
    scale = 1 / (numbers.max(axis=0) - numbers.min(axis=0))
    assert build_reference(np.zeros((5000, 0), dtype=np.int32), numbers, 0, scale).sort_on == 1
    assert build_reference(np.zeros((5000, 0), dtype=np.int32), numbers[:, ::-1], 0, scale[::-1]).sort_on == 0


def test_one_reference_record_and_more_neighbours_than_records():
    q_codes, q_numbers = np.array([[0], [1]], dtype=np.int32), np.array([[0.0], [np.nan]])
    d, i = _search(q_codes, q_numbers, np.array([[1]], dtype=np.int32), np.array([[0.5]]), np.array([1.0]), 2)
    np.testing.assert_array_equal(i, [[0, -1], [0, -1]])
    np.testing.assert_array_equal(d, [[1.5, np.inf], [1.0, np.inf]])


def test_exact_copies_are_at_distance_zero_and_ties_go_to_the_first_record():
    codes = np.array([[0], [0], [1]], dtype=np.int32)
    numbers = np.array([[1.0], [1.0], [1.0]])
    d, i = _search(codes, numbers, codes, numbers, np.array([1.0]), 2, cuts=(1,))
    np.testing.assert_array_equal(i, [[0, 1], [0, 1], [2, 0]])
    np.testing.assert_array_equal(d, [[0, 0], [0, 0], [0, 1]])


SCHEMA = Schema.from_dict(
    {
        "columns": [
            {"name": "a", "type": "factor", "levels": ["x", "y", "z"]},
            {"name": "b", "type": "factor", "levels": ["u", "v"]},
            {"name": "n", "type": "numeric"},
            {"name": "m", "type": "numeric"},
        ]
    }
)


def _frame(rng, n):
    frame = pd.DataFrame(
        {
            "a": rng.choice(["x", "y", "z", None], n),
            "b": rng.choice(["u", "v"], n),
            "n": np.round(rng.normal(size=n), 1),
            "m": rng.exponential(size=n),
        }
    )
    frame.loc[rng.random(n) < 0.05, "n"] = np.nan
    return SCHEMA.apply(frame, "test")


@pytest.fixture(scope="module")
def two_workers():
    with (
        LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0") as cluster,
        Client(cluster, set_as_default=False) as client,
    ):
        yield client


@pytest.mark.parametrize("block_rows", [1, 250, 2_000_000])
def test_the_same_neighbours_on_partitions_and_workers(two_workers, block_rows, monkeypatch):
    """Reference partitions searched one by one, joined two by two (4 partitions) and all joined."""
    monkeypatch.setattr("pipeline.risk.nearest.compute.REFERENCE_BLOCK_ROWS", block_rows)
    rng = np.random.default_rng(5)
    queries, reference = _frame(rng, 150), _frame(rng, 400)
    space = DistanceSpace(["a", "b"], ["n", "m"], np.array([0.25, 0.5]))
    q_codes, q_numbers = encode(queries, space.factors, space.numerics)
    r_codes, r_numbers = encode(reference, space.factors, space.numerics)
    want_d, want_i = _brute(q_codes, q_numbers, r_codes, r_numbers, space.scale, 3)
    runs = [(Executor(policy="memory"), queries, reference)]
    for qp, rp in ((1, 3), (3, 1), (2, 4)):
        dq, dr = dd.from_pandas(queries, npartitions=qp), dd.from_pandas(reference, npartitions=rp)
        runs.append((Executor(two_workers, policy="blocks"), dq, dr))
    for executor, q, r in runs:
        (parts,) = executor.compute(nearest_neighbours(executor, q, r, space, 3, payload="m"))
        got = gather(parts, 3)
        np.testing.assert_array_equal(got.positions, want_i)
        np.testing.assert_array_equal(got.distances, want_d)
        np.testing.assert_array_equal(got.payload, reference["m"].to_numpy()[want_i])


def test_blocked_on_exact_factors_on_partitions_and_workers(two_workers):
    rng = np.random.default_rng(6)
    queries, reference = _frame(rng, 150), _frame(rng, 400)
    space = DistanceSpace(["b", "a"], ["n", "m"], np.array([0.25, 0.5]), exact=1)
    q_codes, q_numbers = space.encode(queries)
    r_codes, r_numbers = space.encode(reference)
    want_d, want_i = _brute(q_codes, q_numbers, r_codes, r_numbers, space.scale, 2, exact=1)
    runs = [(Executor(policy="memory"), queries, reference)]
    for qp, rp in ((1, 3), (3, 2)):
        dq, dr = dd.from_pandas(queries, npartitions=qp), dd.from_pandas(reference, npartitions=rp)
        runs.append((Executor(two_workers, policy="blocks", block_rows=100), dq, dr))
    for executor, q, r in runs:
        (found,) = executor.compute(nearest_neighbours(executor, q, r, space, 2, payload="a"))
        got = gather(found, 2)
        np.testing.assert_array_equal(got.positions, want_i)
        np.testing.assert_array_equal(got.distances, want_d)
        codes = reference["a"].cat.codes.to_numpy().astype(float)
        np.testing.assert_array_equal(got.payload, np.where(codes < 0, np.nan, codes)[want_i])
