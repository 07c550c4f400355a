"""The profile measure: aggregates computed as Dask reductions, identical for any partitioning."""

import pandas as pd

from pipeline.data.dataset import Dataset
from pipeline.datasets import load_demo
from pipeline.profile import ProfileParams, evaluate_profile


def _value(table: pd.DataFrame, setting: str, measure: str) -> float:
    return float(table.loc[(table.setting == setting) & (table.measure == measure), "value"].iloc[0])


def test_profile_values_and_partition_invariance():
    demo = load_demo("sd2011_subset")
    one = evaluate_profile(demo, [], ProfileParams()).tidy()
    assert _value(one, "", "records") == 5000
    assert _value(one, "variable=income", "special_missing") == 603  # synthpop's cont.na code -8
    assert _value(one, "variable=income", "missing_pct") == 13.66  # 683 empty incomes
    assert _value(one, "variable=agegr", "levels_observed") == 6
    assert _value(one, "variable=region", "levels") == 16
    split = Dataset.from_pandas(demo.to_pandas(), demo.schema, name="sd", npartitions=4)
    pd.testing.assert_frame_equal(evaluate_profile(split, [], ProfileParams()).tidy(), one)
