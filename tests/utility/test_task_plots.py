"""Task integration (parameter models, the measures on Datasets), utility_tables and its heat map."""

from __future__ import annotations

import json
import warnings

import matplotlib
import numpy as np
import pytest
from pydantic import ValidationError

from pipeline.data.dataset import Dataset
from pipeline.errors import ParameterError
from pipeline.evaluation.base import TIDY_COLUMNS as TIDY
from pipeline.evaluation.data import as_eval_data
from pipeline.utility import utility_by_set, utility_tables
from pipeline.utility.measure import UtilityGenMeasure, UtilityTablesMeasure, UtilityTabMeasure
from pipeline.utility.params import UtilityGenParams, UtilityTablesParams, UtilityTabParams
from pipeline.utility.plots import heatmap_matrix, plot_utility_tables

from .test_bad_input import ORIG, SCHEMA, SYN1, SYN2


@pytest.fixture(scope="module")
def datasets():
    return as_eval_data(
        Dataset.from_pandas(ORIG, SCHEMA, "orig"),
        [Dataset.from_pandas(SYN1, SCHEMA, "syn1"), Dataset.from_pandas(SYN2, SCHEMA, "syn2", npartitions=2)],
    )


def test_params_models_forbid_unknown_keys():
    with pytest.raises(ValidationError):
        UtilityGenParams(method="logit", resamp="perm")
    with pytest.raises(ValidationError):
        UtilityTabParams()
    assert UtilityTablesParams(tab_stats="all").tab_stats == "all"
    with pytest.raises(ParameterError, match="backend"):
        UtilityGenMeasure({"method": "logit", "backend": "dask"})


def test_parameter_only_checks_are_validators():
    with pytest.raises(ParameterError, match="maxdepth"):
        UtilityGenMeasure({"maxdepth": 31})
    with pytest.raises(ParameterError, match="k_syn"):
        UtilityGenMeasure({"resamp_method": "pairs", "k_syn": True})
    with pytest.warns(UserWarning, match="cp < 0"):
        UtilityGenMeasure({"cp": -1})
    with pytest.raises(ParameterError, match="plot"):
        UtilityTablesMeasure({"plot_stat": "df"})
    with pytest.raises(ParameterError, match="third_var"):
        UtilityTablesMeasure({"tables": "threeway", "vars": ["sex", "age", "income"], "third_var": "region"})
    assert UtilityTabMeasure({"vars": "sex"}).params.vars == ["sex"]


def test_declared_variables_and_default_vars(datasets):
    measure = UtilityGenMeasure({"not_synthesised": ["sex"], "cont_na": {"income": -8}})
    assert measure.params.variables() == ["sex", "income"]
    measure.check(datasets)  # vars=None: every common variable, of which sex is one
    one_set = datasets.with_frames(datasets.frames[:2])
    with pytest.raises(ParameterError, match="pairs"):
        UtilityGenMeasure({"method": "logit", "resamp_method": "pairs"}).check(one_set)


def test_evaluate_gen_on_datasets(datasets):
    params = {"method": "logit", "vars": ["sex", "region", "income"], "cont_na": {"income": -8}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = UtilityGenMeasure(params).run(datasets)
    tidy = res.tidy()
    assert list(tidy.columns) == TIDY and {"pMSE", "S_pMSE", "pMSEExp", "df"} <= set(tidy["measure"])
    json.dumps(res.to_dict())
    per_set = utility_by_set(res)
    assert list(per_set.columns) == ["synthetic", "pMSE", "S_pMSE"] and list(per_set["synthetic"]) == ["1", "2"]


def test_evaluate_cart_on_datasets(datasets):
    res = UtilityGenMeasure({"method": "cart", "nperms": 3, "seed": 1, "cont_na": {"income": -8}}).run(datasets)
    assert res.resamp_method == "perm" and np.all(np.isfinite(res["S_pMSE"]))


def test_evaluate_tab_and_tables(datasets):
    tab = UtilityTabMeasure({"vars": ["sex", "income"], "cont_na": {"income": -8}}).run(datasets)
    assert tab.levels[1][-2:] == ("-8", None)  # special code level, then the NA category
    assert list(tab.tidy().columns) == TIDY
    assert {json.loads(p)["vars"] == ["sex", "income"] for p in tab.tidy()["params"]} == {True}
    tables = UtilityTablesMeasure({"tab_stats": "all"}).run(datasets)
    assert list(tables.tabs.index) == ["1.sex:2.region", "1.sex:3.age", "1.sex:4.income", "2.region:3.age",
                                       "2.region:4.income", "3.age:4.income"]  # fmt: skip
    tidy = tables.tidy()
    assert list(tidy.columns) == TIDY
    pairs = {tuple(json.loads(p)["vars"]) for p in tidy["params"]}
    assert pairs == {tuple(v) for v in tables.combination_vars} and ("sex", "region") in pairs
    assert set(tidy["synthetic"]) == {"1", "2", "mean"}
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
