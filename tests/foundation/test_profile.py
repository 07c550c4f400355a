"""The profile measure: aggregates over partitions, identical for any partitioning."""

import pandas as pd

from pipeline.data.dataset import Dataset
from pipeline.datasets import load_demo
from pipeline.evaluation.data import as_eval_data
from pipeline.evaluation.execution import Executor
from pipeline.profile import Profile


def _value(table: pd.DataFrame, setting: str, measure: str) -> float:
    return float(table.loc[(table.setting == setting) & (table.measure == measure), "value"].iloc[0])


def test_profile_values_and_partition_invariance():
    demo = load_demo("sd2011_subset")
    measure = Profile()
    one = measure.run(as_eval_data(demo, require_synthetic=False), Executor(policy="memory")).tidy()
    assert _value(one, "", "records") == 5000
    assert _value(one, "variable=income", "special_missing") == 603  # synthpop's cont.na code -8
    assert _value(one, "variable=income", "missing_pct") == 13.66  # 683 empty incomes
    assert _value(one, "variable=agegr", "levels_observed") == 6
    assert _value(one, "variable=region", "levels") == 16
    split = Dataset.from_pandas(demo.to_pandas(), demo.schema, name="sd", npartitions=4)
    blocks = measure.run(as_eval_data(split, require_synthetic=False), Executor(policy="blocks")).tidy()
    pd.testing.assert_frame_equal(blocks, one)
