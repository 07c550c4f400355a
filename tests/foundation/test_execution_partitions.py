"""Executor partition merging (coalesce / persist / prepare) and the one-block shortcut of key_blocks.

Small partitions of a data set are merged, in order, to about ``block_rows`` records when the
data are put in cluster memory; the grouping depends only on the partitions' record counts.
Measures give the same results for 1, 3 and 20 input partitions (merged or not), and with all
records in one block ``key_blocks`` neither hashes nor shuffles.
"""

from __future__ import annotations

import itertools
import math
import time
import warnings

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

from pipeline.blocks import BLOCK_COLUMN, ROW_COLUMN, key_hash
from pipeline.data.schema import Schema
from pipeline.datasets import load_demo, load_demo_synthetic
from pipeline.evaluation.data import as_eval_data
from pipeline.evaluation.execution import Executor
from pipeline.risk.disclosure import disclosure
from pipeline.risk.idrisk import identification_risk
from pipeline.utility import utility_gen


def _frame(n: int = 1000, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "a": rng.integers(0, 4, n).astype(float),
        "b": pd.Categorical(rng.choice(["p", "q", "r"], n)),
        "x": rng.random(n),
    })  # fmt: skip


def _lazy(frame: pd.DataFrame, parts: int) -> dd.DataFrame:
    return dd.from_pandas(frame, npartitions=parts, sort=False)


# ---- merging ----------------------------------------------------------------------------------


def test_coalesce_merges_consecutive_partitions_to_about_block_rows() -> None:
    frame = _frame()
    executor = Executor(policy="blocks", block_rows=300)
    (merged,) = executor.coalesce(_lazy(frame, 20))
    # 1000 records in 20 x 50: ceil(1000 / 300) = 4 partitions of 250, records in order, index kept
    assert merged.npartitions == 4
    assert executor.partition_rows(merged) == [(250, 250, 250, 250)]
    pd.testing.assert_frame_equal(merged.compute(), frame)


def test_coalesce_keeps_known_divisions() -> None:
    frame = _frame()
    (merged,) = Executor(block_rows=400).coalesce(dd.from_pandas(frame, npartitions=10))
    assert merged.npartitions == 3
    assert merged.divisions == (0, 300, 700, 999)
    pd.testing.assert_frame_equal(merged.compute(), frame)


def test_coalesce_groups_by_records_not_by_partitions() -> None:
    # ten partitions of 50 records and one of 500, target 500: two groups of 500 records (not 6 + 5 partitions)
    sizes = [50] * 10 + [500]
    frame = _frame(sum(sizes))
    edges = np.cumsum([0, *sizes])
    parts = [dask.delayed(frame.iloc[a:b]) for a, b in itertools.pairwise(edges)]
    lazy = dd.from_delayed(parts, meta=frame.iloc[:0], verify_meta=False)
    executor = Executor(block_rows=500)
    (merged,) = executor.coalesce(lazy)
    assert executor.partition_rows(merged) == [(500, 500)]
    pd.testing.assert_frame_equal(merged.compute(), frame)


_BUILT: list[int] = []


def _built_part(i: int) -> pd.DataFrame:
    _BUILT.append(i)
    return pd.DataFrame({"a": np.arange(10 * i, 10 * i + 10, dtype=float), "x": np.ones(10)})


def test_partition_rows_are_counted_once_per_frame_and_its_column_selections() -> None:
    meta = pd.DataFrame({"a": pd.Series(dtype=float), "x": pd.Series(dtype=float)})
    lazy = dd.from_delayed([dask.delayed(_built_part)(i) for i in range(3)], meta=meta, verify_meta=False)
    executor = Executor(block_rows=100)
    _BUILT.clear()
    assert executor.partition_rows(lazy) == [(10, 10, 10)]
    assert sorted(_BUILT) == [0, 1, 2]
    assert executor.partition_rows(lazy[["a"]], lazy) == [(10, 10, 10)] * 2
    data = as_eval_data(lazy[["x"]], [], Schema.infer(meta[["x"]]), require_synthetic=False)
    assert executor.rows(data) == (30,)
    assert sorted(_BUILT) == [0, 1, 2]  # not counted again


def test_coalesce_leaves_large_partitions_and_pandas_frames_alone() -> None:
    frame = _frame()
    lazy = _lazy(frame, 3)
    same, pandas = Executor(block_rows=300).coalesce(lazy, frame)
    assert same is lazy and pandas is frame


def test_coalesce_unions_categories_that_differ_between_partitions() -> None:
    one = pd.DataFrame({"c": pd.Categorical(["x", "y"]), "v": [1, 2]})
    two = pd.DataFrame({"c": pd.Categorical(["z", "x"]), "v": [3, 4]}, index=[2, 3])
    lazy = dd.from_delayed([dask.delayed(one), dask.delayed(two)], meta=one.iloc[:0], verify_meta=False)
    (merged,) = Executor(block_rows=10).coalesce(lazy)
    got = merged.compute()
    assert merged.npartitions == 1
    assert got["c"].astype(str).tolist() == ["x", "y", "z", "x"] and got["v"].tolist() == [1, 2, 3, 4]


def _keys_on_cluster(client) -> set:
    return {k for keys in client.has_what().values() for k in keys}


def test_persist_merges_and_prepare_reuses_the_merged_partitions(dask_client) -> None:
    frame = _frame()
    executor = Executor(dask_client, policy="blocks", block_rows=300)
    before = _keys_on_cluster(dask_client)
    (kept,) = executor.persist(_lazy(frame, 20))
    assert kept.npartitions == 4
    assert all(f.status == "finished" for f in dask_client.futures_of(kept))
    # the 20 unmerged partitions are released once merged: only the 4 merged ones stay
    deadline = time.monotonic() + 10
    while len(_keys_on_cluster(dask_client) - before) > 4 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _keys_on_cluster(dask_client) - before == {f.key for f in dask_client.futures_of(kept)}
    prepared = executor.prepare(as_eval_data(kept, [], Schema.infer(frame), require_synthetic=False))
    assert prepared.original is kept  # already merged: neither merged nor persisted again
    (unmerged,) = executor.persist(_lazy(frame, 20), merge=False)
    assert unmerged.npartitions == 20
    got = executor.prepare(as_eval_data(unmerged, [], Schema.infer(frame), require_synthetic=False)).original
    assert got.npartitions == 4 and all(f.status == "finished" for f in dask_client.futures_of(got))
    pd.testing.assert_frame_equal(got.compute(), frame)


def test_collect_transfers_persisted_data_once_for_every_selection_of_columns(dask_client) -> None:
    from distributed import get_task_stream

    frame = _frame()
    executor = Executor(dask_client, policy="memory", block_rows=300)
    (kept,) = executor.persist(_lazy(frame, 6))
    schema = Schema.infer(frame)
    first = executor.collect(as_eval_data(kept[["a", "x"]], [], schema, require_synthetic=False)).original
    pd.testing.assert_frame_equal(first, frame[["a", "x"]])
    with get_task_stream(dask_client) as stream:
        second = executor.collect(as_eval_data(kept[["b", "a"]], [], schema, require_synthetic=False)).original
        whole = executor.collect(as_eval_data(kept, [], schema, require_synthetic=False)).original
    assert stream.data == []  # taken from the first transfer: nothing ran on the cluster
    pd.testing.assert_frame_equal(second, frame[["b", "a"]])
    pd.testing.assert_frame_equal(whole, frame)
    # data that are not persisted are computed every time
    lazy = _lazy(frame, 3)
    with get_task_stream(dask_client) as stream:
        got = executor.collect(as_eval_data(lazy, [], schema, require_synthetic=False)).original
    assert len(stream.data) > 0
    pd.testing.assert_frame_equal(got, frame)


def _column_sums(part: pd.DataFrame, scale: float) -> tuple[list[str], float]:
    return list(part.columns), float(part.to_numpy(dtype=float).sum()) * scale


def _task_count(value) -> int:
    return sum(1 for task in dict(value.__dask_graph__()).values() if type(task).__name__ != "DataNode")


@pytest.mark.parametrize("on_cluster", [True, False])
def test_map_reduce_and_partitions_run_one_task_per_stored_partition(on_cluster, dask_client) -> None:
    frame = _frame()[["a", "x"]]
    executor = Executor(dask_client if on_cluster else None, policy="blocks", block_rows=100)
    (kept,) = executor.persist(_lazy(_frame(), 20))
    assert kept.npartitions == 10
    selected = kept[["x", "a"]]
    lazy = executor.map_reduce(selected, _column_sums, list, 2.0, split_every=4)
    # one kernel task per merged partition (reading the stored partition, selecting the
    # columns, running the kernel: no alias or selection tasks) + 3 + 1 combine tasks
    assert _task_count(lazy.value) == 10 + 4
    (got,) = executor.compute(lazy)
    flat = [item for group in got for item in group]
    assert [cols for cols, _ in flat] == [["x", "a"]] * 10
    expected = [2.0 * float(frame.iloc[i : i + 100][["x", "a"]].to_numpy().sum()) for i in range(0, 1000, 100)]
    assert [total for _, total in flat] == pytest.approx(expected, rel=1e-15)
    # handles of the stored partitions themselves; a selection adds one task per partition
    whole = executor.map_combine(executor.partitions(kept), len, list)
    assert _task_count(whole.value) == 10 + 1 and executor.compute(whole) == [[100] * 10]
    picked = executor.map_combine(executor.partitions(selected), _column_sums, list, None, 1.0)
    assert _task_count(picked.value) == 2 * 10 + 1
    assert [cols for cols, _ in executor.compute(picked)[0]] == [["x", "a"]] * 10


# ---- the same results for any input partitioning ------------------------------------------------


@pytest.fixture(scope="module")
def sd2011() -> tuple[pd.DataFrame, list[pd.DataFrame], Schema]:
    demo = load_demo("sd2011_subset")
    return demo.to_pandas(), [s.to_pandas() for s in load_demo_synthetic("sd2011_cart")[:2]], demo.schema


@pytest.fixture(scope="module")
def cedata() -> tuple[pd.DataFrame, list[pd.DataFrame], Schema]:
    demo = load_demo("cedata")
    return demo.to_pandas(), [s.to_pandas() for s in load_demo_synthetic("cedata_syn_income")[:2]], demo.schema


BLOCK = 2000  # 5,000 records per set: 20 partitions of 250 merge into 3, 3 partitions of 1,667 stay


def _run(kind: str, data: tuple, parts: int | None, client) -> object:
    orig, syns, schema = data
    if parts is None:
        executor, o, s = Executor(policy="memory"), orig, syns
    else:
        executor = Executor(client, policy="blocks", block_rows=BLOCK)
        o, s = _lazy(orig, parts), [_lazy(f, parts) for f in syns]
    if kind == "disclosure":
        res = disclosure(o, s, ["sex", "age", "edu", "marital"], "ls", schema=schema, executor=executor)
        return pd.concat([res.ident, res.attrib], axis=1)
    if kind == "idrisk":
        res = identification_risk(o, s, ["Urban", "Marital"], ["Income"], 0.1, schema=schema, executor=executor)
        per_record = {**{f"c{j}": res.c[:, j] for j in range(len(s))}, **{f"T{j}": res.T[:, j] for j in range(len(s))}}
        return pd.concat([pd.DataFrame(per_record), pd.DataFrame({"exp_risk": res.exp_risk})], axis=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = utility_gen(o, s, method="logit", vars=["sex", "age", "edu", "income"], maxorder=1, schema=schema,
                          executor=executor)  # fmt: skip
    return pd.DataFrame({k: np.asarray(res[k], dtype=float) for k in ("pMSE", "S_pMSE", "SPECKS", "PO50", "U")})


@pytest.mark.parametrize("kind", ["disclosure", "idrisk", "logit"])
def test_measures_identical_for_1_3_and_20_partitions(kind, sd2011, cedata, dask_client) -> None:
    data = cedata if kind == "idrisk" else sd2011
    expected = _run(kind, data, None, dask_client)
    for parts in (1, 3, 20):
        got = _run(kind, data, parts, dask_client)
        if kind == "logit":  # float sums over partitions may differ in the last bits only
            pd.testing.assert_frame_equal(got, expected, check_exact=False, rtol=1e-10, atol=1e-12)
        else:
            pd.testing.assert_frame_equal(got, expected, check_exact=True)


def test_prepare_merges_twenty_partitions_into_ceil_n_over_block_rows(sd2011, dask_client) -> None:
    orig, syns, schema = sd2011
    executor = Executor(dask_client, policy="blocks", block_rows=BLOCK)
    prepared = executor.prepare(as_eval_data(_lazy(orig, 20), [_lazy(f, 20) for f in syns], schema))
    assert [f.npartitions for f in prepared.frames] == [math.ceil(len(orig) / BLOCK)] * 3
    assert [sum(n) for n in executor.partition_rows(*prepared.frames)] == [len(orig), *map(len, syns)]


# ---- one block: no hash, no shuffle -------------------------------------------------------------


def _key_counts(original: pd.DataFrame, *synthetic: pd.DataFrame) -> pd.DataFrame:
    frames = [original, *synthetic]
    out = [f.groupby(["a", "b"], observed=True).size().rename("n").reset_index().assign(set=i)
           for i, f in enumerate(frames)]  # fmt: skip
    return pd.concat(out, ignore_index=True)


_COUNTS_META = pd.DataFrame({"a": pd.Series(dtype=float), "b": pd.Series(dtype="category"),
                             "n": pd.Series(dtype=np.int64), "set": pd.Series(dtype=np.int64)})  # fmt: skip


def _sorted(frame: pd.DataFrame) -> pd.DataFrame:
    frame = frame.assign(b=frame["b"].astype(str))
    return frame.sort_values(["set", "a", "b"]).reset_index(drop=True)


def test_one_block_is_concatenated_without_hashing_or_shuffling() -> None:
    frames = [_frame(300, 1), _frame(250, 2)]
    lazy = as_eval_data(_lazy(frames[0], 4), [_lazy(frames[1], 3)], Schema.infer(frames[0]))
    executor = Executor(policy="blocks", block_rows=10**6)
    blocks = executor.key_blocks(lazy, ["a", "b"], with_row_id=True)
    assert blocks.original.npartitions == 1 and blocks.synthetic[0].npartitions == 1
    graph_names = {k[0] if isinstance(k, tuple) else k for k in blocks.original.__dask_graph__()}
    assert not any("shuffle" in str(n) or "hash" in str(n) for n in graph_names)
    (whole,) = executor.compute(blocks.original)
    np.testing.assert_array_equal(whole[BLOCK_COLUMN].to_numpy(), np.zeros(300, dtype=np.int64))
    np.testing.assert_array_equal(whole[ROW_COLUMN].to_numpy(), np.arange(300))
    np.testing.assert_array_equal(whole["x"].to_numpy(), frames[0]["x"].to_numpy())
    # the same per-key counts as hashed and shuffled blocks, and as in memory
    (one,) = executor.compute(blocks.map(_key_counts, _COUNTS_META))
    (four,) = executor.compute(executor.key_blocks(lazy, ["a", "b"], n_blocks=4).map(_key_counts, _COUNTS_META))
    memory = Executor(policy="memory")
    (mem,) = memory.compute(memory.key_blocks(memory.prepare(lazy), ["a", "b"]).map(_key_counts, _COUNTS_META))
    pd.testing.assert_frame_equal(_sorted(one), _sorted(four))
    pd.testing.assert_frame_equal(_sorted(one), _sorted(mem))


def test_in_memory_block_is_not_hashed() -> None:
    frame = _frame(200)
    data = as_eval_data(frame, [], Schema.infer(frame), require_synthetic=False)
    blocks = Executor(policy="memory").key_blocks(data, ["a", "b"], with_row_id=True)
    assert (blocks.original[BLOCK_COLUMN] == 0).all()
    np.testing.assert_array_equal(blocks.original[ROW_COLUMN].to_numpy(), np.arange(200))


def test_key_blocks_names_missing_keys() -> None:
    frame = _frame(20)
    data = as_eval_data(frame, [], Schema.infer(frame), require_synthetic=False)
    with pytest.raises(Exception, match=r"key\(s\) \['zz'\] not among the columns"):
        Executor(policy="memory").key_blocks(data, ["a", "zz"])


def test_key_hash_of_categoricals_is_the_hash_of_their_labels() -> None:
    # hashed from the categories (no per-record strings): the same as the labels as objects, NA included
    labels = ["b", None, "a", "b", None]
    one = pd.DataFrame({"k": pd.Categorical(labels, categories=["b", "a", "zz"]), "x": [1.0, 2.0, np.nan, 1.0, 5.0]})
    two = pd.DataFrame({"k": pd.Categorical(labels, categories=["a", "b"]), "x": one["x"]})
    objects = pd.DataFrame({"k": pd.Series(labels, dtype=object), "x": one["x"]})
    expected = key_hash(objects, ["k", "x"])
    np.testing.assert_array_equal(key_hash(one, ["k", "x"]), expected)
    np.testing.assert_array_equal(key_hash(two, ["k", "x"]), expected)
    assert expected[0] == expected[3] and len(set(expected.tolist())) == 4


def _shape_and_sum(frames: list[pd.DataFrame], scale: float) -> list[tuple]:
    numeric = [[c for c in f.columns if c in ("a", "x")] for f in frames]
    return [(list(f.columns), len(f), list(f.index[:3]), float(f[c].to_numpy().sum()) * scale)
            for f, c in zip(frames, numeric, strict=True)]  # fmt: skip


def test_map_frame_tasks_assembles_stored_partitions_and_selections_on_a_worker(dask_client) -> None:
    frame = _frame()
    executor = Executor(dask_client, policy="blocks", block_rows=100)
    (kept,) = executor.persist(_lazy(frame, 20))
    frames = [kept, kept[["x", "a"]], frame[["a"]]]
    got = executor.map_frame_tasks(_shape_and_sum, [([0, 1], 2.0), ([2], 1.0)], frames)
    both = float(frame[["a", "x"]].to_numpy().sum())
    assert got[0] == [
        (["a", "b", "x"], 1000, [0, 1, 2], pytest.approx(2.0 * both, rel=1e-12)),
        (["x", "a"], 1000, [0, 1, 2], pytest.approx(2.0 * both, rel=1e-12)),
    ]
    assert got[1] == [(["a"], 1000, [0, 1, 2], float(frame["a"].sum()))]
