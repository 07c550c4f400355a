"""Key blocks shared by a task's scenarios (:func:`~pipeline.risk.idrisk.compute.scenario_blocks`):
which scenarios share, and the same rows on shared cluster blocks as in memory."""

from __future__ import annotations

import dask.dataframe as dd
import numpy as np
import pandas as pd

from pipeline.data.schema import Schema
from pipeline.evaluation.data import as_eval_data
from pipeline.evaluation.execution import Executor
from pipeline.risk.idrisk.compute import scenario_blocks
from pipeline.risk.idrisk.measure import IdentificationRiskMeasure
from pipeline.risk.idrisk.plan import MatchPlan


def _plan(categorical: tuple[str, ...]) -> MatchPlan:
    return MatchPlan(
        known=(*categorical, "age"),
        synthesised=("money",),
        categorical=categorical,
        continuous=("age", "money"),
        continuous_known=(True, False),
    )


def _data(rng: np.random.Generator, n: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Sex, region and edu keys (missing values among them), age in years, rounded money; a
    row-aligned synthetic set with edu and money synthesised."""
    sex = rng.choice(["f", "m"], n).astype(object)
    sex[3] = None
    region = rng.choice(["r0", "r1", "r2", "r3", "r4"], n, p=[0.4, 0.3, 0.15, 0.1, 0.05]).astype(object)
    region[:2] = None
    edu = rng.choice(["low", "mid", "high"], n).astype(object)
    orig = pd.DataFrame(
        {
            "sex": pd.Categorical(sex),
            "region": pd.Categorical(region),
            "edu": pd.Categorical(edu, categories=["low", "mid", "high"]),
            "age": rng.integers(18, 40, n).astype(float),
            "money": np.round(rng.lognormal(3, 0.3, n)),
        }
    )
    syn = orig.copy()
    syn["edu"] = pd.Categorical(rng.choice(["low", "mid", "high"], n), categories=["low", "mid", "high"])
    syn["money"] = np.round(orig["money"] * rng.choice([0.9, 1.0, 1.1], n))
    return orig, syn


def test_scenarios_share_blocks_when_one_scenarios_keys_are_everyones():
    orig, syn = _data(np.random.default_rng(3), 50)
    data = as_eval_data(orig, [syn], Schema.infer(orig))
    memory = Executor(policy="memory")
    nested = [_plan(("sex", "region")), _plan(("sex", "region", "edu")), _plan(("region", "sex"))]
    shared = scenario_blocks(data, memory, nested)
    assert len(shared) == 3 and shared[0] is shared[1] is shared[2]
    # sex alone is no scenario's key set: sharing it would make two large blocks
    apart = scenario_blocks(data, memory, [_plan(("sex", "region")), _plan(("sex", "edu"))])
    assert len(apart) == 2 and apart[0] is not apart[1]
    keyless = scenario_blocks(data, memory, [_plan(()), _plan(())])
    assert len(keyless) == 2 and keyless[0] is keyless[1]
    apart = scenario_blocks(data, memory, [_plan(()), _plan(("sex",))])
    assert len(apart) == 2 and apart[0] is not apart[1]


def test_shared_cluster_blocks_give_the_rows_of_memory(dask_client):
    """Two sweeps and a fixed radius, keys sex + region and sex + region + edu (NA keys): the rows
    on shared balanced blocks equal those in memory, for several partitionings and block sizes."""
    orig, syn = _data(np.random.default_rng(8), 600)
    schema = Schema.infer(orig)
    params = {
        "radius": {"age": 0.1},
        "radius_grid": [0.05, 0.1, 0.2],
        "scenarios": {
            "money": {"known": ["sex", "region", "age"], "synthesised": ["money"]},
            "money_edu": {"known": ["sex", "region", "age"], "synthesised": ["edu", "money"]},
            "fixed": {"known": ["sex", "region", "age"], "synthesised": ["money"], "radius": {"age": 0.1, "money": 0.1},
                      "radius_grid": None},
        },
    }  # fmt: skip
    measure = IdentificationRiskMeasure(params)
    expected = measure.run(as_eval_data(orig, [syn], schema), Executor(policy="memory")).rows()
    for n_parts, block_rows in [(1, 600), (3, 150), (4, 70)]:
        lazy = as_eval_data(dd.from_pandas(orig, npartitions=n_parts), [dd.from_pandas(syn, npartitions=2)], schema)
        got = measure.run(lazy, Executor(dask_client, policy="blocks", block_rows=block_rows)).rows()
        assert [(r.synthetic, r.measure, r.params) for r in got] == [
            (r.synthetic, r.measure, r.params) for r in expected
        ]
        np.testing.assert_array_equal([r.value for r in got], [r.value for r in expected])
