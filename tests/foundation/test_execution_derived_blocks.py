"""Executor.derived_key_blocks and Executor.keep_rows: same results in memory and on partitions."""

from __future__ import annotations

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

from pipeline.blocks import ROW_COLUMN
from pipeline.data.schema import Schema
from pipeline.evaluation.data import as_eval_data
from pipeline.evaluation.execution import Executor

KEYS = ["a", "b"]


def _frame(seed: int, n: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {"a": rng.integers(0, 4, n).astype(float), "b": rng.integers(0, 5, n).astype(float), "x": rng.random(n)}
    )


def _counts(part: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Records per key combination of one partition (a reducing ``derive``)."""
    return part.groupby(keys).size().rename("n").reset_index()


def _merged(*frames: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Per block and data set: the counts of each key combination, merged over partitions."""
    out = [f.groupby(keys)["n"].sum().reset_index().assign(set=i) for i, f in enumerate(frames)]
    return pd.concat(out, ignore_index=True)


def _meta() -> pd.DataFrame:
    return pd.DataFrame({"a": pd.Series(dtype=float), "b": pd.Series(dtype=float), "n": pd.Series(dtype=np.int64)})


@pytest.fixture(scope="module")
def frames() -> list[pd.DataFrame]:
    return [_frame(1, 300), _frame(2, 250), _frame(3, 280)]


@pytest.mark.parametrize(("partitions", "block_rows"), [(None, None), (1, 10**6), (3, 5), (4, 7)])
def test_derived_key_blocks_hold_whole_key_combinations(frames, partitions, block_rows) -> None:
    schema = Schema.infer(frames[0])
    if partitions is None:
        data, executor = as_eval_data(frames[0], frames[1:]), Executor(policy="memory")
    else:
        lazy = [dd.from_pandas(f, npartitions=partitions, sort=False) for f in frames]
        data, executor = as_eval_data(lazy[0], lazy[1:], schema), Executor(policy="blocks", block_rows=block_rows)
    blocks = executor.derived_key_blocks(executor.prepare(data), KEYS, _counts, _meta(), KEYS)
    (got,) = executor.compute(blocks.map(_merged, _meta().assign(set=np.int64(0)), keys=KEYS))
    # every key combination of every data set is merged in exactly one block
    assert not got.duplicated(["set", *KEYS]).any()
    got = got.sort_values(["set", *KEYS]).reset_index(drop=True)
    expected = pd.concat([_counts(f, KEYS).assign(set=i) for i, f in enumerate(frames)], ignore_index=True)
    pd.testing.assert_frame_equal(got, expected.sort_values(["set", *KEYS]).reset_index(drop=True))


def test_derived_key_blocks_number_the_rows(frames) -> None:
    lazy = [dd.from_pandas(f, npartitions=3, sort=False) for f in frames]
    data = as_eval_data(lazy[0], lazy[1:], Schema.infer(frames[0]))
    executor = Executor(policy="blocks", block_rows=100)
    blocks = executor.derived_key_blocks(
        executor.prepare(data), KEYS, pd.DataFrame.copy, frames[0].iloc[:0], with_row_id=True
    )
    (original,) = executor.compute(blocks.map(lambda o, *s: o, frames[0].iloc[:0].assign(**{ROW_COLUMN: 0})))
    by_row = original.set_index(ROW_COLUMN).sort_index()
    np.testing.assert_array_equal(by_row["x"].to_numpy(), frames[0]["x"].to_numpy())


@pytest.mark.parametrize("partitions", [None, 1, 3])
def test_keep_rows(frames, partitions) -> None:
    frame = frames[0]
    keep = np.random.default_rng(7).random(len(frame)) < 0.6
    given = frame if partitions is None else dd.from_pandas(frame, npartitions=partitions, sort=False)
    executor = Executor()
    kept = executor.keep_rows(given, keep)
    assert type(kept) is type(given)
    (kept,) = executor.compute(kept)
    pd.testing.assert_frame_equal(kept, frame[keep])
