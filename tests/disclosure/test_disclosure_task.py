"""Task integration: parameter model, evaluate() on Datasets, tidy table, JSON summary, plots."""

from __future__ import annotations

import json

import pytest
from matplotlib.figure import Figure
from pydantic import ValidationError

from pipeline.datasets import load_demo, load_demo_synthetic
from pipeline.results import MEASURE_COLUMNS
from pipeline.risk.disclosure import disclosure, multi_disclosure
from pipeline.risk.disclosure.plots import plot_disclosure, plot_disclosure_rows, plot_multi_disclosure
from pipeline.risk.disclosure.task import DisclosureParams, evaluate


@pytest.fixture(scope="module")
def datasets():
    return load_demo("sd2011_subset"), load_demo_synthetic("sd2011_cart")[:2]


def test_params_model() -> None:
    p = DisclosureParams.model_validate({"keys": ["sex", "age"], "target": "ls", "usekeysNA": {"age": False}})
    assert p.key_sets == [["sex", "age"]]
    assert DisclosureParams.model_validate({"keys": [["sex"], ["sex", "edu"]]}).key_sets == [["sex"], ["sex", "edu"]]
    for bad in ({"keys": ["sex"], "unknown": 1}, {"keys": ["sex"], "target": "ls", "targets": ["ls"]},
                {"keys": []}, {"keys": [["sex"], []]}, {"keys": ["sex"], "denom_lim": 0},
                {"keys": ["sex"], "target": "ls", "not_targetlev": {"ls": "MIXED"}}):
        with pytest.raises(ValidationError):
            DisclosureParams.model_validate(bad)


def test_evaluate_multi_and_single(datasets) -> None:
    original, synthetic = datasets
    params = DisclosureParams.model_validate({
        "keys": [["sex", "age", "region", "placesize"], ["sex", "agegr"]], "targets": ["ls", "smoke"],
        "not_targetlev": {"smoke": "NO"},
    })
    result = evaluate(original, synthetic, params)
    tidy = result.tidy()
    assert list(tidy.columns) == MEASURE_COLUMNS
    assert set(tidy["synthetic"]) == {"original", "1", "2", "mean"}
    assert "keys=sex+age+placesize+region;target=smoke" in set(tidy["setting"])
    assert tidy["value"].dtype == "float64"
    direct = multi_disclosure(original, synthetic, ["sex", "age", "region", "placesize"], ["ls", "smoke"],
                              not_targetslev={"smoke": "NO"})
    row = tidy[(tidy["setting"] == "keys=sex+age+placesize+region;target=smoke") & (tidy["synthetic"] == "2")
               & (tidy["measure"] == "DiSCO")]
    assert row["value"].item() == direct.results["smoke"].attrib.loc[2, "DiSCO"]
    json.dumps(result.to_dict())

    single = evaluate(original, synthetic, DisclosureParams.model_validate({"keys": ["sex", "edu"], "target": "ls"}))
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
