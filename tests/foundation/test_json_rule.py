"""The one rule for non-finite numbers in the JSON files a run writes (``results.jsonable``)."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pandas as pd

from pipeline.datasets import load_demo, load_demo_synthetic
from pipeline.results import jsonable
from pipeline.utility.api import utility_gen, utility_synds
from pipeline.utility.result import UtilityTabResult


def test_nan_is_null_and_infinities_are_strings_in_every_container():
    summary = {
        "S_pMSE": [1.5, math.inf, -math.inf, math.nan],
        "np": np.array([np.inf, np.nan, 2.0]),
        "scalar": np.float64(np.inf),
        "series": pd.Series({"a": -np.inf, "b": 0.25}),
        "frame": pd.DataFrame({"x": [np.nan, 1.0]}),
        "missing": pd.NA,
        7: (np.int64(3), None),
    }
    out = jsonable(summary)
    assert out == {
        "S_pMSE": [1.5, "Inf", "-Inf", None],
        "np": ["Inf", None, 2.0],
        "scalar": "Inf",
        "series": {"a": "-Inf", "b": 0.25},
        "frame": [{"x": None}, {"x": 1.0}],
        "missing": None,
        "7": [3, None],
    }
    json.dumps(out, allow_nan=False)  # strict JSON


def test_an_infinite_table_statistic_is_written_as_inf_not_null():
    # utility_tab's to_dict used to write "Inf" itself and utility_gen's None; both now leave
    # floats and the writer's rule decides
    stats = pd.DataFrame({"S_pMSE": [math.inf, 2.0], "pMSE": [0.1, math.nan]}, index=pd.Index([1, 2], name="synthetic"))
    res = UtilityTabResult(
        vars=("a",),
        k_syn=False,
        stats=stats,
        tab_obs=np.array([1, 2]),
        tab_syn=(np.array([1, 2]), np.array([2, 1])),
        tab_zdiff=(np.zeros(2), np.zeros(2)),
        levels=(("x", "y"),),
        notes=(),
        breaks=(None,),
    )
    written = jsonable(res.to_dict())
    assert written["stats"]["S_pMSE"] == ["Inf", 2.0] and written["stats"]["pMSE"] == [0.1, None]


def _with_an_infinite_statistic(result, column: str):
    """``result`` with the first set's ``column`` statistic made infinite (a perfectly separated set)."""
    stats = result.stats.copy()
    stats.iloc[0, stats.columns.get_loc(column)] = math.inf
    return dataclasses.replace(result, stats=stats)


def test_utility_gen_and_synds_summaries_follow_the_rule():
    # utility_gen's and utility_synds' to_dict wrote +-Inf as null; they now leave floats to the writer
    sd, cart = load_demo("sd2011_subset"), load_demo_synthetic("sd2011_cart")
    variables = ["sex", "age", "placesize"]
    gen = _with_an_infinite_statistic(utility_gen(sd, cart, method="logit", vars=variables, nperms=2), "S_pMSE")
    written = jsonable(gen.to_dict())
    assert written["stats"]["S_pMSE"][0] == "Inf"
    json.dumps(written, allow_nan=False)
    synds = utility_synds(sd, cart, method="logit", vars=variables)
    frame = synds.utility_raw.copy()
    frame.iloc[0, 0] = -math.inf
    written = jsonable(dataclasses.replace(synds, utility_raw=frame).to_dict())
    assert written["utility.raw"][frame.columns[0]][0] == "-Inf"
    json.dumps(written, allow_nan=False)
