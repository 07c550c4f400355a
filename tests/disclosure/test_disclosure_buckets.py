"""The one-pass cluster path: per-partition counts merged in key buckets equal every other path.

Data with many key cells (so that the counts of the partitions outgrow one block and are
merged in several key buckets), on 1 and 2 workers and 1 or 3 partitions: the results equal
the in-memory path and a dense brute-force transcription of synthpop, and the graph reads
the records once (one counting task per partition, no shuffle of records).
"""

from __future__ import annotations

import itertools
import logging
import re
from collections import Counter
from collections.abc import Iterator

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from dask.distributed import Client, LocalCluster, futures_of, get_task_stream
from test_disclosure_bruteforce import _reference
from test_disclosure_dask import _assert_identical

from pipeline.data.schema import Schema
from pipeline.evaluation.data import as_eval_data
from pipeline.evaluation.execution import PER_WORKER_PARTITIONS, Executor
from pipeline.risk.disclosure import disclosure, multi_disclosure
from pipeline.risk.disclosure.compute import gather_stats
from pipeline.risk.disclosure.kernel import COUNT, split_by_bucket

KEYS = ["a", "b", "c"]


@pytest.fixture(scope="module", params=[1, 2], ids=["1 worker", "2 workers"])
def client(request) -> Iterator[Client]:
    logging.getLogger("distributed.shuffle._scheduler_plugin").setLevel(logging.ERROR)
    with (
        LocalCluster(n_workers=request.param, threads_per_worker=1, processes=False, dashboard_address=":0") as cl,
        Client(cl) as c,
    ):
        yield c


def _many_cells(n: int, seed: int) -> pd.DataFrame:
    """Keys with about 2 x 61 x 31 combinations (missing values included) and a target with NA."""
    rng = np.random.default_rng(seed)

    def cat(levels: list[str], p_missing: float) -> pd.Categorical:
        v = rng.choice(levels, n).astype(object)
        v[rng.random(n) < p_missing] = None
        return pd.Categorical(v, categories=levels)

    age = rng.integers(0, 60, n).astype(float)
    age[rng.random(n) < 0.03] = np.nan
    return pd.DataFrame(
        {
            "a": cat(["x", "y"], 0.0),
            "b": age,
            "c": cat([f"c{i:02d}" for i in range(30)], 0.04),
            "t": cat(["t1", "t2", "t3"], 0.1),
            "u": rng.integers(0, 20, n).astype(float),
        }
    )


@pytest.fixture(scope="module")
def data() -> tuple[pd.DataFrame, pd.DataFrame, Schema]:
    original, synthetic = _many_cells(4000, 1), _many_cells(3000, 2)
    return original, synthetic, Schema.infer(original)


def _lazy(frame: pd.DataFrame, n: int) -> dd.DataFrame:
    return dd.from_pandas(frame, npartitions=n, sort=False)


def test_split_by_bucket_keeps_every_key_group_in_one_bucket() -> None:
    rng = np.random.default_rng(3)
    cells = pd.DataFrame({"k1": rng.integers(0, 5, 500, dtype=np.int16), "k2": rng.integers(0, 40, 500)})
    cells[COUNT] = np.arange(500)
    pieces = split_by_bucket(cells, ("k1", "k2"), 4)
    assert len(pieces) == 4 and all(len(p) for p in pieces)
    assert sorted(pd.concat(pieces)[COUNT]) == list(range(500))  # every row once
    assert all(p[COUNT].is_monotonic_increasing for p in pieces)  # rows keep their order
    groups = [set(zip(p["k1"], p["k2"], strict=True)) for p in pieces]
    assert sum(map(len, groups)) == len(set().union(*groups))  # no key group in two buckets
    # the bucket depends only on the codes: a subset of the rows goes to the same buckets
    again = split_by_bucket(cells.iloc[::3], ("k1", "k2"), 4)
    for p, q in zip(pieces, again, strict=True):
        assert set(q[COUNT]) == set(p[COUNT]) & set(range(0, 500, 3))


def test_large_counts_are_kept_per_partition_for_the_buckets(data) -> None:
    original, synthetic, schema = data
    lazy = as_eval_data(_lazy(original, 3), [_lazy(synthetic, 2)], schema)
    stats = gather_stats(lazy, Executor(policy="blocks", block_rows=500), ["a", "b", "c", "t"])
    assert not stats.local and stats.partials is not None
    assert [len(p) for p in stats.partials] == [3, 2]
    assert [sum(int(j.counts.sum()) for j in p) for p in stats.partials] == [4000, 3000]
    assert stats.partial_rows == sum(len(j) for j in stats.partials[0])


OPTIONS = [
    {},
    dict(usekeysNA={"c": False}, usetargetNA=False, not_targetlev="t3"),
    dict(
        exclude_keys=["c"], exclude_keylevs=["c03"], exclude_targetlevs=["t2"], exclude_ov_denom_lim=True, denom_lim=2
    ),
]


@pytest.mark.parametrize("partitions", [(1, 1), (3, 2)], ids=["1 partition", "3 partitions"])
@pytest.mark.parametrize("opts", OPTIONS, ids=["plain", "NA options", "exclusions"])
def test_buckets_equal_memory_and_brute_force(client, data, partitions, opts) -> None:
    original, synthetic, schema = data
    expected = disclosure(original, [synthetic], KEYS, "t", schema=schema, executor=Executor(policy="memory"), **opts)
    executor = Executor(client, policy="blocks", block_rows=200)  # ~4,000 cells: about 10 buckets
    got = disclosure(
        _lazy(original, partitions[0]), [_lazy(synthetic, partitions[1])], KEYS, "t", schema=schema,
        executor=executor, **opts,
    )  # fmt: skip
    _assert_identical(got, expected)
    reference, nex = _reference(original, synthetic, KEYS, "t", opts)
    measures = got.measures().iloc[0]
    for name, value in reference.items():
        assert measures[name] == pytest.approx(value, abs=1e-9, nan_ok=True), name
    assert got.Nexclusions[0].to_numpy().tolist() == nex


def test_buckets_multi_disclosure_with_grouped_key_and_binned_target(client, data) -> None:
    # grouping merges values into one key code after the partitions were counted by value
    original, synthetic, schema = data
    kw = dict(targets=["t", "u"], ngroups_keys={"b": 7}, ngroups_targets={"u": 3}, schema=schema)
    expected = multi_disclosure(
        original, [synthetic, synthetic.iloc[::-1]], KEYS, executor=Executor(policy="memory"), **kw
    )
    got = multi_disclosure(
        _lazy(original, 3), [_lazy(synthetic, 2), _lazy(synthetic.iloc[::-1], 1)], KEYS,
        executor=Executor(client, policy="blocks", block_rows=150), **kw,
    )  # fmt: skip
    pd.testing.assert_frame_equal(got.attrib_table, expected.attrib_table, check_exact=True)
    pd.testing.assert_frame_equal(got.ident_table, expected.ident_table, check_exact=True)
    for t in expected.targets:
        _assert_identical(got.results[t], expected.results[t])


def test_buckets_when_the_key_combinations_cannot_be_numbered(client) -> None:
    # eight numeric keys of ~300 values each: ~2^66 possible combinations, beyond an int64
    rng = np.random.default_rng(5)
    base = pd.DataFrame({f"k{i}": rng.integers(0, 300, 400).astype(float) for i in range(8)})
    base["t"] = pd.Categorical(rng.choice(["p", "q"], 400))
    original = pd.concat([base, base.iloc[:150]], ignore_index=True)  # repeated combinations
    synthetic = pd.concat([base.iloc[100:], base.iloc[:60]], ignore_index=True)
    keys = [f"k{i}" for i in range(8)]
    schema = Schema.infer(original)
    expected = disclosure(original, [synthetic], keys, "t", schema=schema, executor=Executor(policy="memory"))
    got = disclosure(
        _lazy(original, 3), [_lazy(synthetic, 2)], keys, "t", schema=schema,
        executor=Executor(client, policy="blocks", block_rows=100),
    )  # fmt: skip
    _assert_identical(got, expected)


def test_one_pass_over_the_records_and_no_record_shuffle(client, data) -> None:
    original, synthetic, schema = data
    executor = Executor(client, policy="blocks", block_rows=500)
    o, s = executor.persist(_lazy(original, 3), _lazy(synthetic, 2), merge=False)
    executor.partition_rows(o, s)  # counted before (as for a run's inputs)
    # the partitions of a data set on one worker are counted together (one table per worker and data set)
    tables = sum(len({min(w) for w in client.who_has(futures_of(f)).values()}) for f in (o, s))
    assert 2 <= tables <= 2 * len(client.scheduler_info()["workers"])
    with get_task_stream(client) as stream:
        disclosure(o, [s], KEYS, "t", schema=schema, executor=executor)
    tasks = Counter(
        re.match(r"[A-Za-z_]+", str(t["key"][0] if isinstance(t["key"], tuple) else t["key"]))[0] for t in stream.data
    )
    n_buckets = tasks["bucket_summaries"]
    assert tasks["tally_records"] == tables  # the only tasks that read records: one per worker and data set
    assert tasks["bucket_cells"] == tables  # each table of counts cut into buckets
    assert n_buckets >= 2 and tasks["getitem"] == tables * n_buckets
    assert tasks["tally_summary"] == tables  # taken beside each table of counts: only these move to the driver
    assert not any(t["startstops"][0]["action"] == "transfer" for t in stream.data if "tally_records" in str(t["key"]))
    # merge_summaries only where a data set has tables on several workers
    assert set(tasks) - {"merge_summaries"} == {"tally_records", "tally_summary", "bucket_cells", "getitem",
                                                "bucket_summaries"}  # fmt: skip


def _values_per_frame(frames: list[pd.DataFrame]) -> list[list[int]]:
    return [f["x"].tolist() for f in frames]


def _flattened(parts: list[list[list[int]]]) -> list[int]:
    return [x for part in parts for frame in part for x in frame]


def test_partitions_on_one_worker_go_to_the_kernel_together_a_few_at_a_time(client) -> None:
    executor = Executor(client, policy="blocks")
    (lazy,) = executor.persist(_lazy(pd.DataFrame({"x": np.arange(90)}), 9), merge=False)
    partials, (combined,) = executor.map_reduce_partials([lazy], _values_per_frame, _flattened, per_worker=True)
    (kept,) = executor.gather(partials)
    on_worker = Counter(min(w) for w in client.who_has(futures_of(lazy)).values())
    assert len(kept) == sum(-(-n // PER_WORKER_PARTITIONS) for n in on_worker.values())
    assert all(1 <= len(frames) <= PER_WORKER_PARTITIONS for frames in kept)
    assert all(len(f) == 10 for frames in kept for f in frames)  # whole partitions, not concatenated
    assert sorted(combined) == sorted(_flattened(kept)) == list(range(90))
    for frames in kept:  # in partition order within a task
        starts = [f[0] for f in frames]
        assert starts == sorted(starts)


def test_measure_result_has_synthpop_names_a_short_repr_and_one_setting_per_key_set():
    """Issue 23: ``DisclosureMeasure(params).run(data)`` had no ``.ident`` and a 4,800-character
    repr; the same key set got other setting labels in a source with another column order."""
    from pipeline.datasets import load_demo, load_demo_synthetic
    from pipeline.evaluation.data import as_eval_data
    from pipeline.evaluation.execution import Executor
    from pipeline.risk.disclosure.measure import DisclosureMeasure

    orig = load_demo("sd2011_subset").to_pandas()
    syn = load_demo_synthetic("sd2011_cart")[0].to_pandas()
    measure = DisclosureMeasure({"keys": ["sex", "age", "edu"], "target": "ls"})
    memory = Executor(policy="memory")
    res = measure.run(as_eval_data(orig, [syn]), memory)
    assert list(res.ident.columns) == ["UiO", "UiS", "UiOiS", "repU"] and res.attrib["DiSCO"].shape == (1,)
    assert repr(res) == "DisclosureResults(keys [sex, age, edu] x 1 target(s); m=1)"
    reordered = [c for c in reversed(orig.columns)]
    other = measure.run(as_eval_data(orig[reordered], [syn[reordered]]), memory)
    assert other.results[0].keys == ("edu", "age", "sex")  # synthpop's data order, inside the result
    assert (
        {tuple(r.params["keys"]) for r in res.rows()}
        == {tuple(r.params["keys"]) for r in other.rows()}
        == {("sex", "age", "edu")}
    )
    assert [(r.synthetic, r.measure, r.value) for r in res.rows()] == [
        (r.synthetic, r.measure, r.value) for r in other.rows()
    ]
    two = DisclosureMeasure({"keys": [["sex", "age"], ["sex", "edu"]], "target": "ls"}).run(as_eval_data(orig, [syn]))
    with pytest.raises(AttributeError, match=r"2 key sets; take one of .results\[0..1\]"):
        _ = two.ident


def _with_empty_and_single_record_partitions(frame: pd.DataFrame) -> dd.DataFrame:
    """``frame`` as partitions of 0, 1, 0, the rest and 1 records (in order)."""
    cuts = [0, 0, 1, 1, len(frame) - 1, len(frame)]
    pieces = [frame.iloc[a:b] for a, b in itertools.pairwise(cuts)]
    return dd.from_delayed([dask.delayed(p) for p in pieces], meta=frame.iloc[:0], verify_meta=False)


@pytest.mark.parametrize("block_rows", [1, 10**6], ids=["key buckets", "one block in the driver"])
def test_empty_and_single_record_partitions_and_buckets(client, data, block_rows) -> None:
    # NA keys and target included; with block_rows=1 there are more buckets than most partitions have
    # rows, so buckets of no and of one record meet the block kernel.  There every cell is a bucket and
    # a task (about 120 CPU-s for all 7,000 records): 350 records give hundreds of them
    original, synthetic, schema = data
    if block_rows == 1:
        original, synthetic = original.iloc[:200], synthetic.iloc[:150]
    small = original.iloc[:7]
    for o, s in ((original, synthetic), (small, synthetic.iloc[:5])):
        expected = disclosure(o, [s], KEYS, "t", schema=schema, executor=Executor(policy="memory"))
        got = disclosure(
            _with_empty_and_single_record_partitions(o), [_with_empty_and_single_record_partitions(s)], KEYS, "t",
            schema=schema, executor=Executor(client, policy="blocks", block_rows=block_rows),
        )  # fmt: skip
        _assert_identical(got, expected)
        reference, nex = _reference(o, s, KEYS, "t", {})
        measures = got.measures().iloc[0]
        for name, value in reference.items():
            assert measures[name] == pytest.approx(value, abs=1e-9, nan_ok=True), name
        assert got.Nexclusions[0].to_numpy().tolist() == nex
