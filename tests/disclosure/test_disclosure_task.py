"""The disclosure measure: parameter model, evaluate() on Datasets, rows with params, JSON summary, plots."""

from __future__ import annotations

import json

import pytest
from matplotlib.figure import Figure
from pydantic import ValidationError

from pipeline.datasets import load_demo, load_demo_synthetic
from pipeline.errors import ParameterError
from pipeline.evaluation.base import TIDY_COLUMNS
from pipeline.evaluation.data import as_eval_data
from pipeline.evaluation.execution import Executor
from pipeline.risk.disclosure import disclosure, multi_disclosure
from pipeline.risk.disclosure.measure import DisclosureMeasure, DisclosureParams
from pipeline.risk.disclosure.plots import plot_disclosure, plot_disclosure_rows, plot_multi_disclosure


@pytest.fixture(scope="module")
def datasets():
    return load_demo("sd2011_subset"), load_demo_synthetic("sd2011_cart")[:2]


def test_params_model() -> None:
    p = DisclosureParams.model_validate({"keys": ["sex", "age"], "target": "ls", "usekeysNA": {"age": False}})
    assert p.key_sets == [["sex", "age"]]
    assert DisclosureParams.model_validate({"keys": [["sex"], ["sex", "edu"]]}).key_sets == [["sex"], ["sex", "edu"]]
    for bad in (
        {"keys": ["sex"], "unknown": 1},
        {"keys": ["sex"], "target": "ls", "targets": ["ls"]},
        {"keys": []},
        {"keys": [["sex"], []]},
        {"keys": ["sex"], "denom_lim": 0},
        {"keys": ["sex"], "target": "ls", "not_targetlev": {"ls": "MIXED"}},
    ):
        with pytest.raises(ValidationError):
            DisclosureParams.model_validate(bad)


def test_synthpop_plural_spellings_are_aliases() -> None:
    plural = {
        "keys": ["sex"],
        "targets": ["ls", "smoke"],
        "not_targetslev": {"smoke": "NO"},
        "usetargetsNA": [True, False],
        "ngroups_targets": 0,
    }
    singular = {
        "keys": ["sex"],
        "targets": ["ls", "smoke"],
        "not_targetlev": {"smoke": "NO"},
        "usetargetNA": [True, False],
        "ngroups_target": 0,
    }
    assert DisclosureParams.model_validate(plural) == DisclosureParams.model_validate(singular)
    with pytest.raises(ValidationError, match="usetargetNA/usetargetsNA: one option in two spellings"):
        DisclosureParams.model_validate({**singular, "usetargetsNA": True})


def test_variables_and_default_targets(datasets) -> None:
    original, synthetic = datasets
    data = as_eval_data(original, synthetic)
    measure = DisclosureMeasure({"keys": [["sex", "agegr"], ["sex", "edu"]], "cont_na": {"income": -8}})
    assert measure.params.variables() == ["sex", "agegr", "edu", "income"]
    (keys1, targets1, _), (keys2, targets2, _) = measure.bound_key_sets(data)
    assert (keys1, keys2) == (("sex", "agegr"), ("sex", "edu"))
    assert targets1 == [c for c in data.columns if c not in ("sex", "agegr")]
    assert targets2 == [c for c in data.columns if c not in ("sex", "edu")]
    # a per-target list must fit the default targets, which only the data tell
    with pytest.raises(ParameterError, match="one entry per target"):
        DisclosureMeasure({"keys": ["sex"], "usetargetNA": [True, False]}).check(data)


def test_evaluate_multi_and_single(datasets) -> None:
    original, synthetic = datasets
    measure = DisclosureMeasure(
        {
            "keys": [["sex", "age", "region", "placesize"], ["sex", "agegr"]],
            "targets": ["ls", "smoke"],
            "not_targetlev": {"smoke": "NO"},
        }
    )
    result = measure.run(as_eval_data(original, synthetic), Executor(policy="memory"))
    assert all(set(r.params) == {"keys", "target"} for r in result.rows())
    tidy = result.tidy()
    assert list(tidy.columns) == TIDY_COLUMNS
    assert set(tidy["synthetic"]) == {"original", "1", "2", "mean"}
    # keys in the order given (issue 23: one setting per key set whatever a source's column order)
    smoke = {"keys": ["sex", "age", "region", "placesize"], "target": "smoke"}
    assert json.dumps(smoke, separators=(",", ":"), sort_keys=True) in set(tidy["params"])
    assert "keys=sex+age+region+placesize;target=smoke" in set(tidy["setting"])
    assert tidy["value"].dtype == "float64"
    direct = multi_disclosure(
        original, synthetic, ["sex", "age", "region", "placesize"], ["ls", "smoke"], not_targetslev={"smoke": "NO"}
    )
    row = tidy[(tidy["params"].map(json.loads) == smoke) & (tidy["synthetic"] == "2") & (tidy["measure"] == "DiSCO")]
    assert row["value"].item() == direct.results["smoke"].attrib.loc[2, "DiSCO"]
    json.dumps(result.to_dict())

    single = DisclosureMeasure({"keys": ["sex", "edu"], "target": "ls"}).run(as_eval_data(original, synthetic))
    assert set(single.tidy()["setting"]) == {"keys=sex+edu;target=ls"}
    json.dumps(single.to_dict())


def test_plots_return_figures(datasets) -> None:
    original, synthetic = datasets
    multi = multi_disclosure(original, synthetic, ["sex", "age"], ["ls", "smoke", "depress"])
    assert isinstance(plot_multi_disclosure(multi), Figure)
    assert isinstance(plot_disclosure(disclosure(original, synthetic, ["sex", "age"], "ls")), Figure)
    fig = plot_disclosure_rows(multi.tidy())
    assert isinstance(fig, Figure)
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == list(multi.attrib_table["target"])
