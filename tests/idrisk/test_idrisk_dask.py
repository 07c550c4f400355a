"""Key blocks on a cluster give exactly the in-memory results for any partitioning and block count."""

from __future__ import annotations

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

from pipeline.data.schema import Schema
from pipeline.evaluation.execution import Executor
from pipeline.risk.idrisk import identification_risk, radius_sweep


def _frames(n=400, m=2, seed=11):
    rng = np.random.default_rng(seed)
    orig = pd.DataFrame(
        {
            "urban": pd.Categorical(rng.choice(["1", "2"], n, p=[0.8, 0.2])),
            "marital": pd.Categorical(rng.choice(list("12345"), n)),
            "age": rng.integers(20, 70, n).astype(float),
            "tenure": pd.Categorical(rng.choice(["own", "rent"], n)),
            "income": np.round(rng.lognormal(10, 0.5, n), -2),
            "spend": np.round(rng.lognormal(8, 0.4, n), -1),
        }
    )
    syns = []
    for _ in range(m):
        s = orig.copy()
        s["income"] = np.round(orig["income"].to_numpy() * rng.uniform(0.85, 1.15, n), -2)
        s["spend"] = np.round(orig["spend"].to_numpy() * rng.uniform(0.85, 1.15, n), -1)
        s["tenure"] = pd.Categorical(rng.choice(["own", "rent"], n))
        syns.append(s)
    return orig, syns


CASES = [
    (["urban", "marital"], ["income"], 0.1, False),
    (["urban", "marital"], ["income", "spend"], 0.1, False),
    (["age", "urban"], ["tenure", "income", "spend"], {"age": 0.1, "income": 0.1, "spend": 0.2}, False),
    (["urban", "marital"], ["income", "spend"], 0.1, True),
    (["urban", "marital"], ["tenure"], None, False),
    ([], ["income", "spend"], 0.1, False),  # no categorical key: one block
]


@pytest.mark.parametrize(("known", "syn", "radius", "euc"), CASES)
def test_dask_equals_pandas(dask_client, known, syn, radius, euc):
    orig, syns = _frames()
    ref = identification_risk(orig, syns, known, syn, radius, euclidean=euc, executor=Executor(policy="memory"))
    # 400 records: 1, 4 and 7 key blocks
    for n_parts, block_rows in [(1, 400), (3, 100), (4, 58)]:
        res = identification_risk(
            dd.from_pandas(orig, npartitions=n_parts),
            [dd.from_pandas(s, npartitions=max(1, n_parts - 1)) for s in syns],
            known,
            syn,
            radius,
            euclidean=euc,
            schema=Schema.infer(orig),  # Dask input carries no inferred schema
            executor=Executor(dask_client, policy="blocks", block_rows=block_rows),
        )
        np.testing.assert_array_equal(res.c, ref.c)
        np.testing.assert_array_equal(res.T, ref.T)
        np.testing.assert_array_equal(res.exp_risk, ref.exp_risk)


def test_dask_sweep_equals_pandas(dask_client):
    orig, syns = _frames(seed=12)
    grid = {"income": [0.025, 0.05, 0.1], "spend": [0.05, 0.1]}
    ref = radius_sweep(
        orig, syns, ["urban", "marital"], ["income", "spend"], grid=grid, executor=Executor(policy="memory")
    )
    # 400 records: 1 and 5 key blocks
    for n_parts, block_rows in [(1, 400), (3, 80)]:
        res = radius_sweep(
            dd.from_pandas(orig, npartitions=n_parts),
            [dd.from_pandas(s, npartitions=n_parts) for s in syns],
            ["urban", "marital"],
            ["income", "spend"],
            grid=grid,
            schema=Schema.infer(orig),
            executor=Executor(dask_client, policy="blocks", block_rows=block_rows),
        )
        for name in ("exp.risk", "true.rate", "s"):
            np.testing.assert_array_equal(res.measure(name), ref.measure(name))
        assert res.r_star == ref.r_star
