"""Task integration (parameter models, evaluate_*), utility_tables and its heat map."""

from __future__ import annotations

import json
import warnings

import matplotlib
import numpy as np
import pytest
from pydantic import ValidationError

from pipeline.data.dataset import Dataset
from pipeline.utility import utility_by_set, utility_tables
from pipeline.utility.plots import heatmap_matrix, plot_utility_tables
from pipeline.utility.task import (
    UtilityGenParams,
    UtilityTablesParams,
    UtilityTabParams,
    evaluate_gen,
    evaluate_tab,
    evaluate_tables,
)

from .test_bad_input import ORIG, SCHEMA, SYN1, SYN2

TIDY = ["synthetic", "setting", "measure", "value"]


@pytest.fixture(scope="module")
def datasets():
    return (
        Dataset.from_pandas(ORIG, SCHEMA, "orig"),
        [Dataset.from_pandas(SYN1, SCHEMA, "syn1"), Dataset.from_pandas(SYN2, SCHEMA, "syn2", npartitions=2)],
    )


def test_params_models_forbid_unknown_keys():
    with pytest.raises(ValidationError):
        UtilityGenParams(method="logit", resamp="perm")
    with pytest.raises(ValidationError):
        UtilityTabParams()
    assert UtilityTablesParams(tab_stats="all").tab_stats == "all"


def test_evaluate_gen_on_datasets(datasets):
    orig, syns = datasets
    params = UtilityGenParams(method="logit", vars=["sex", "region", "income"], cont_na={"income": -8})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = evaluate_gen(orig, syns, params)
    tidy = res.tidy()
    assert list(tidy.columns) == TIDY and {"pMSE", "S_pMSE", "pMSEExp", "df"} <= set(tidy["measure"])
    json.dumps(res.to_dict())
    per_set = utility_by_set(res)
    assert list(per_set.columns) == ["synthetic", "pMSE", "S_pMSE"] and list(per_set["synthetic"]) == ["1", "2"]


def test_evaluate_cart_on_datasets(datasets):
    orig, syns = datasets
    res = evaluate_gen(orig, syns, UtilityGenParams(method="cart", nperms=3, seed=1, cont_na={"income": -8}))
    assert res.resamp_method == "perm" and np.all(np.isfinite(res["S_pMSE"]))


def test_evaluate_tab_and_tables(datasets):
    orig, syns = datasets
    tab = evaluate_tab(orig, syns, UtilityTabParams(vars=["sex", "income"], cont_na={"income": -8}))
    assert tab.levels[1][-2:] == ("-8", None)  # special code level, then the NA category
    assert list(tab.tidy().columns) == TIDY
    tables = evaluate_tables(orig, syns, UtilityTablesParams(tab_stats="all"))
    assert list(tables.tabs.index) == ["1.sex:2.region", "1.sex:3.age", "1.sex:4.income", "2.region:3.age",
                                       "2.region:4.income", "3.age:4.income"]  # fmt: skip
    assert list(tables.tidy().columns) == TIDY
    json.dumps(tables.to_dict())


@pytest.mark.parametrize("tables", ["oneway", "twoway", "threeway"])
def test_heatmap(tables):
    res = utility_tables(ORIG, [SYN1, SYN2], tables=tables, schema=SCHEMA, nworst=3)
    rows, _, mat = heatmap_matrix(res)
    if tables == "twoway":
        assert np.allclose(mat, mat.T, equal_nan=True) and np.all(np.isnan(np.diag(mat)))
    if tables == "threeway":
        assert res.third_var == res.var_scores.index[0] and res.third_var not in rows
    assert len(res.worst) == 3 and res.worst.is_monotonic_decreasing
    fig = plot_utility_tables(res)
    assert isinstance(fig, matplotlib.figure.Figure)
