"""On key blocks the results are exactly those in memory, for any partitioning, block size and workers."""

from __future__ import annotations

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

from pipeline.datasets import load_demo, load_demo_synthetic
from pipeline.evaluation.execution import Executor
from pipeline.risk.disclosure import DisclosureResult, disclosure, multi_disclosure
from pipeline.risk.disclosure.uniques import remove_uniques, replicated_uniques

KEYS = ["sex", "age", "edu", "marital"]
#: Dask frames carry no schema: the demo's
SCHEMA = load_demo("sd2011_subset").schema


@pytest.fixture(scope="module")
def data() -> tuple[pd.DataFrame, list[pd.DataFrame]]:
    original = load_demo("sd2011_subset").to_pandas()
    synthetic = [s.to_pandas() for s in load_demo_synthetic("sd2011_cart")[:3]]
    return original, synthetic


def _lazy(frame: pd.DataFrame, n: int) -> dd.DataFrame:
    return dd.from_pandas(frame, npartitions=n, sort=False)


def _assert_identical(a: DisclosureResult, b: DisclosureResult) -> None:
    pd.testing.assert_frame_equal(a.measures(), b.measures(), check_exact=True)
    for x, y in zip(a.Nexclusions, b.Nexclusions, strict=True):
        pd.testing.assert_frame_equal(x, y)
    for x, y in zip(a.check_1way + a.check_2way, b.check_1way + b.check_2way, strict=True):
        assert (x is None and y is None) or x.equals(y)
    assert (a.check1, a.check2, a.keys) == (b.check1, b.check2, b.keys)


OPTIONS = dict(
    ngroups_keys={"age": 5},
    usekeysNA={"edu": False},
    exclude_ov_denom_lim=True,
    denom_lim=8,
    exclude_keys=["marital"],
    exclude_keylevs=["WIDOWED"],
    exclude_targetlevs=["NO"],
    thresh_2way=(2, 60),
)


@pytest.mark.parametrize(
    ("partitions", "policy", "block_rows"),
    [
        ((1, 1), "blocks", 10**9),  # one partition, one block
        ((3, 2), "blocks", None),  # default block size (one block here: few cells)
        ((4, 3), "blocks", 300),  # several blocks: the cell counts are shuffled
        ((3, 2), "auto", None),  # small Dask input is computed in memory
    ],
)
def test_dask_equals_pandas(dask_client, data, partitions, policy, block_rows) -> None:
    original, synthetic = data
    expected = disclosure(
        original, synthetic, KEYS, "smoke", cont_na={"income": -8}, executor=Executor(policy="memory"), **OPTIONS
    )
    executor = Executor(dask_client, policy=policy, **({} if block_rows is None else {"block_rows": block_rows}))
    got = disclosure(
        _lazy(original, partitions[0]),
        [_lazy(s, partitions[1]) for s in synthetic],
        KEYS,
        "smoke",
        schema=SCHEMA,
        cont_na={"income": -8},
        executor=executor,
        **OPTIONS,
    )
    _assert_identical(got, expected)


@pytest.mark.parametrize(
    "block_rows",
    [
        1000,  # the joint counts outgrow one block: the cell counts are shuffled into key blocks
        10**6,  # one block: the cell counts come from the joint counts of the one pass (no shuffle)
    ],
)
def test_dask_multi_disclosure_and_binned_target(dask_client, data, block_rows) -> None:
    original, synthetic = data
    kw = dict(
        targets=["ls", "income", "smoke"],
        ngroups_targets={"income": 6},
        cont_na={"income": -8},
        not_targetslev={"smoke": "NO"},
    )
    expected = multi_disclosure(original, synthetic, KEYS, executor=Executor(policy="memory"), **kw)
    got = multi_disclosure(
        _lazy(original, 3),
        [_lazy(s, 2) for s in synthetic],
        KEYS,
        schema=SCHEMA,
        executor=Executor(dask_client, policy="blocks", block_rows=block_rows),
        **kw,
    )
    pd.testing.assert_frame_equal(got.attrib_table, expected.attrib_table, check_exact=True)
    pd.testing.assert_frame_equal(got.ident_table, expected.ident_table, check_exact=True)
    for t in expected.targets:
        _assert_identical(got.results[t], expected.results[t])


def test_dask_replicated_uniques_and_removal(dask_client, data) -> None:
    original, synthetic = data
    keys = ["sex", "age", "edu", "income"]
    expected = replicated_uniques(original, synthetic[:2], keys, executor=Executor(policy="memory"))
    got = replicated_uniques(
        _lazy(original, 3),
        [_lazy(s, 2) for s in synthetic[:2]],
        keys,
        schema=SCHEMA,
        executor=Executor(dask_client, policy="blocks", block_rows=1000),
    )
    for a, b in zip(got.res_tab, expected.res_tab, strict=True):
        pd.testing.assert_frame_equal(a, b)
    for a, b in zip(got.repU_rm + got.synU_rm, expected.repU_rm + expected.synU_rm, strict=True):
        np.testing.assert_array_equal(a, b)
    removed = remove_uniques(
        _lazy(original, 3),
        [_lazy(s, 2) for s in synthetic[:2]],
        keys,
        schema=SCHEMA,
        rm_replicated_uniques=True,
        executor=Executor(dask_client, policy="blocks"),
    )
    for kept, flags, syn, rep_u in zip(
        removed.synthetic, removed.removed, synthetic[:2], expected.repU_rm, strict=True
    ):
        np.testing.assert_array_equal(flags, rep_u)
        pd.testing.assert_frame_equal(kept.compute().reset_index(drop=True), syn[~rep_u].reset_index(drop=True))
