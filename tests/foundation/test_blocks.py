"""Key blocks: aligned, stable, and invariant to partitioning and worker count."""

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

from pipeline.blocks import BLOCK_COLUMN, ROW_COLUMN, KeyBlocks, key_hash
from pipeline.datasets import load_demo, load_demo_synthetic

KEYS = ["sex", "agegr", "edu", "marital"]


@pytest.fixture(scope="module")
def data():
    orig = load_demo("sd2011_subset").to_pandas()
    syn = [s.to_pandas() for s in load_demo_synthetic("sd2011_cart")[:2]]
    return orig, syn


def _count_kernel(o: pd.DataFrame, *syns: pd.DataFrame) -> pd.DataFrame:
    frames = [o.assign(src=0)] + [s.assign(src=i + 1) for i, s in enumerate(syns)]
    allf = pd.concat(frames, ignore_index=True)
    keys = [k for k in KEYS if k in allf.columns]
    sizes = allf.groupby([*keys, "src"], observed=True, dropna=False).size().rename("n").reset_index()
    for k in keys:
        sizes[k] = sizes[k].astype(object)
    return sizes


def _run(orig, syn, nparts: int, n_blocks: int) -> pd.DataFrame:
    kb = KeyBlocks(KEYS, n_blocks)
    aligned = kb.partition(
        dd.from_pandas(orig[KEYS], npartitions=nparts), [dd.from_pandas(s[KEYS], npartitions=nparts) for s in syn]
    )
    meta = pd.DataFrame(
        {**{k: pd.Series(dtype=object) for k in KEYS}, "src": pd.Series(dtype="int64"), "n": pd.Series(dtype="int64")}
    )
    out = aligned.map(_count_kernel, meta).compute()
    return out.sort_values([*KEYS, "src"], na_position="first").reset_index(drop=True)


def test_blockwise_counts_equal_pandas_groupby(data, dask_client):
    orig, syn = data
    got = _run(orig, syn, nparts=3, n_blocks=7)
    expected = _count_kernel(orig[KEYS], *[s[KEYS] for s in syn])
    expected = expected.sort_values([*KEYS, "src"], na_position="first").reset_index(drop=True)
    pd.testing.assert_frame_equal(got, expected)
    # a key combination appears once per source: no combination is split across blocks
    assert not got.duplicated([*KEYS, "src"]).any()


def test_invariant_to_partitions_and_workers(data, dask_client):
    orig, syn = data
    a = _run(orig, syn, nparts=1, n_blocks=5)
    b = _run(orig, syn, nparts=4, n_blocks=5)
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=1, processes=False, dashboard_address=":0") as one, Client(one):
        c = _run(orig, syn, nparts=2, n_blocks=5)
    pd.testing.assert_frame_equal(a, b)
    pd.testing.assert_frame_equal(a, c)


def test_hash_uses_labels_not_codes():
    a = pd.DataFrame({"k": pd.Categorical(["x", "y"], categories=["x", "y"])})
    b = pd.DataFrame({"k": pd.Categorical(["x", "y"], categories=["y", "x"])})
    np.testing.assert_array_equal(key_hash(a, ["k"]), key_hash(b, ["k"]))
    # a plain string column with the same labels hashes the same as the categorical
    assert int(key_hash(pd.DataFrame({"k": ["x"]}), ["k"])[0]) == int(key_hash(a, ["k"])[0])


def test_hash_is_the_same_in_another_process():
    import subprocess
    import sys

    frame = pd.DataFrame({"sex": ["MALE", "FEMALE"], "age": [57.0, np.nan]})
    here = [int(h) for h in key_hash(frame, ["sex", "age"])]
    code = (
        "import numpy as np, pandas as pd; from pipeline.blocks import key_hash; "
        "f = pd.DataFrame({'sex': ['MALE', 'FEMALE'], 'age': [57.0, np.nan]}); "
        "print(*[int(h) for h in key_hash(f, ['sex', 'age'])])"
    )
    there = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert [int(h) for h in there] == here and here[0] != here[1]


def test_row_ids_follow_records(data, dask_client):
    orig, _ = data
    kb = KeyBlocks(["sex"], 3)
    aligned = kb.partition(dd.from_pandas(orig[["sex", "age"]], npartitions=4), [], with_row_id=True)
    got = aligned.original.compute().sort_values(ROW_COLUMN)
    assert got[ROW_COLUMN].tolist() == list(range(len(orig)))
    np.testing.assert_array_equal(got["age"].to_numpy(), orig["age"].to_numpy())
    assert BLOCK_COLUMN in got.columns
