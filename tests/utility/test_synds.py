"""utility_synds (synthpop 1.2-1's utility.synds) against the R references US01-US06, and bad input."""

from __future__ import annotations

import dataclasses
from functools import cache

import numpy as np
import pandas as pd
import pytest
from reference import reference_path

from pipeline.errors import ParameterError
from pipeline.evaluation.data import as_eval_data
from pipeline.evaluation.execution import Executor
from pipeline.rmodels.polyclass import REDUCED, STEP_HALF
from pipeline.utility.api import utility_synds
from pipeline.utility.measure import UtilitySyndsMeasure
from pipeline.utility.result import UtilitySyndsResult, format_r_matrix
from pipeline.utility.synds_model import Kind, model_columns

from .helpers import case_data, load, r_array, ref_files

RTOL = 1e-8
#: poly (US04): bit-identical search and models; only the last additions of R's sums differ
POLY_RTOL = 1e-12


@cache
def _case(case_id: str) -> dict:
    (path,) = [f for f in ref_files("utility_synds") if f.name == f"utility_synds_{case_id}.json"]
    return load(path)


@cache
def _data(case_id: str) -> tuple[pd.DataFrame, list[pd.DataFrame], object, list[str]]:
    ref = _case(case_id)
    orig, syns, schema = case_data(ref)
    prep = ref["data_preparation"]
    names = prep["vars"]
    if prep["rows"] != "all":  # "first 1000 rows of ..."
        rows = int(prep["rows"].split()[1])
        orig, syns = orig.iloc[:rows], [s.iloc[:rows] for s in syns]
    synthesised = [v for v, how in prep["synds_method"].items() if how]
    return orig[names], [s[names] for s in syns], schema.select(names), synthesised


def _run(case_id: str, variant: str | None = None, **extra) -> tuple[UtilitySyndsResult, dict]:
    ref = _case(case_id)
    args = {k.replace(".", "_"): v for k, v in ref["args"].items() if k != "variants"}
    if variant is not None:
        args.update({k.replace(".", "_"): v for k, v in ref["args"]["variants"][variant].items()})
    orig, syns, schema, synthesised = _data(case_id)
    method = args.pop("method")
    res = utility_synds(orig, syns, method, schema=schema, synthesised=synthesised, **args, **extra)
    result = ref["result"] if variant is None else ref["result"][variant]
    return res, result


def _assert_case(res: UtilitySyndsResult, r: dict) -> None:
    assert list(res.method) == ([r["method"]] if isinstance(r["method"], str) else r["method"])
    np.testing.assert_allclose(res.utility_raw.to_numpy(), r_array(r["utility.raw"]), rtol=RTOL)
    assert list(res.utility_raw.index) == r["utility.raw"]["dimnames"][0]
    np.testing.assert_allclose(res.utility_summary.to_numpy(), r_array(r["utility.summary"]), rtol=RTOL)
    if r["deviance.raw"] is None:
        assert res.deviance_raw is None
    else:
        assert list(res.deviance_raw.columns) == r["deviance.raw"]["dimnames"][1]
        np.testing.assert_allclose(res.deviance_raw.to_numpy(), r_array(r["deviance.raw"]), rtol=RTOL)
        np.testing.assert_allclose(res.deviance_summary.to_numpy(), r_array(r["deviance.summary"]), rtol=RTOL)
    if r["nullstats.raw"] is None:
        assert res.null_raw is None
    else:
        for name, matrix in r["nullstats.raw"].items():
            np.testing.assert_allclose(res.null_raw[name.removesuffix(".null")], r_array(matrix), rtol=RTOL, atol=1e-15)
        np.testing.assert_allclose(res.nullstats_summary.to_numpy(), r_array(r["nullstats.summary"]), rtol=RTOL)
    summary = r["ind.propensity.scores_summary"]
    assert res.ind_propensity_scores.shape == tuple(r["ind.propensity.scores_dim"])
    for k, meth in enumerate(res.method):
        for i, (setname, s) in enumerate(summary[meth].items()):
            scores = res.ind_propensity_scores[:, k, i]
            np.testing.assert_allclose(scores[:20], s["first20"], rtol=1e-6)
            np.testing.assert_allclose(np.sum((scores - 0.5) ** 2), s["sum_sq_dev_0.5"], rtol=1e-7)
            assert setname == res.utility_raw.index[i]


@pytest.mark.parametrize("case_id", ["US01", "US02", "US03"])
def test_reference_cases(case_id: str) -> None:
    res, r = _run(case_id)
    _assert_case(res, r)
    assert list(res.model_columns) == _case(case_id)["design"]["columns"]


@pytest.mark.parametrize("variant", ["syn_only_TRUE", "syn_only_FALSE"])
def test_partially_synthetic_cedata_with_and_without_syn_only(variant: str) -> None:
    res, r = _run("US05", variant)
    _assert_case(res, r)
    assert list(res.model_columns) == _case("US05")["design"][variant]["columns"]
    expected = {
        "syn_only_TRUE": "Non-synthesized variables not used in computing the utility.",
        "syn_only_FALSE": "NOTE: Non-synthesized variables also used in computing the utility.",
    }[variant]
    assert res.notes == (expected,)


@pytest.mark.parametrize("variant", ["syn_only_TRUE", "syn_only_FALSE"])
def test_partially_synthetic_cedata_reads_synthesised_from_the_synds_data(variant: str) -> None:
    """US05 as R built it: the sets with their method vector (data carrying ``synthesised``, as
    the pipeline's own partial synthesis gives them), ``synthesised`` not passed."""
    ref = _case("US05")
    orig, syns, schema, synthesised = _data("US05")
    args = {k.replace(".", "_"): v for k, v in {**ref["args"], **ref["args"]["variants"][variant]}.items()
            if k != "variants"}  # fmt: skip
    data = as_eval_data(orig, syns, schema, synthesised=synthesised)
    res = UtilitySyndsMeasure(args).run(data, Executor(policy="memory"))
    _assert_case(res, ref["result"][variant])
    assert list(res.model_columns) == ref["design"][variant]["columns"]
    assert len(res.notes) == 1 and "Non-synthesized variables" in res.notes[0]


def test_syn_only_needs_the_synthesised_variables() -> None:
    """Files carry no method vector: syn_only is refused when checking (validate), not on the params."""
    orig, syns, schema, _ = _data("US05")
    measure = UtilitySyndsMeasure(method="cart", syn_only=True)
    with pytest.raises(ParameterError, match="syn_only = true needs 'synthesised'"):
        measure.check(as_eval_data(orig, syns, schema))
    measure.check(as_eval_data(orig, syns, schema, synthesised=["Income"]))


def test_factor_only_missing_values_r_quirk_and_default() -> None:
    """US06: 1.2-1's fill.NA drops the factors (r_fill_quirk); by default they stay with an NA level."""
    res, r = _run("US06", r_fill_quirk=True)
    _assert_case(res, r)
    assert res.model_columns == ("age",)
    kept, _ = _run("US06")
    assert kept.model_columns == ("sex", "edu", "marital", "age")
    # with the factors in the model the sets are told apart better than with age alone
    assert np.all(kept.utility_raw.to_numpy() > res.utility_raw.to_numpy())


def test_print_like_synthpop_1_2_1() -> None:
    res, _ = _run("US02")
    text = str(res)
    assert "Method:\n($method)\ncart \n" in text
    assert "($utility.summary)\n           Mean          SD\ncart 0.06349473 0.001201259" in text
    assert "($nullstats.summary)\n        Mean diff Mean ratio\ncart -0.003509779  0.9476188" in text
    frame = pd.DataFrame({"Mean": [7.700586949701245e-06, 0.0075704846532066205]}, index=["logit", "cart"])
    assert format_r_matrix(frame) == "              Mean\nlogit 7.700587e-06\ncart  7.570485e-03"


def test_rows_carry_method_and_null_pairs() -> None:
    res, _ = _run("US02")
    tidy = res.tidy()
    null = tidy[tidy["measure"] == "null_pMSE"]
    assert len(null) == 5 * 4
    row = null[(null["synthetic"] == "3") & (null["params"] == '{"against":1,"method":"cart"}')]
    assert row["value"].item() == pytest.approx(res.null_raw["cart"][2, 0], rel=1e-15)
    ratio = tidy[tidy["measure"] == "null_mean_ratio"]["value"].item()
    assert ratio == pytest.approx(0.9476187622214453, rel=RTOL)


def test_same_result_on_partitions() -> None:
    """The fits read whole data sets assembled on the workers: partitions do not change them."""
    import dask.dataframe as dd

    orig, syns, schema, _ = _data("US01")
    small = [f.iloc[:1500].reset_index(drop=True) for f in (orig, *syns[:3])]
    kw = {"schema": schema, "maxorder": 1, "deviance": True, "null_utility": True}
    ref = utility_synds(small[0], small[1:], ["logit", "cart"], executor=Executor(policy="memory"), **kw)
    parts = [dd.from_pandas(f, npartitions=3, sort=False) for f in small]
    got = utility_synds(parts[0], parts[1:], ["logit", "cart"], executor=Executor(policy="blocks"), **kw)
    pd.testing.assert_frame_equal(got.tidy(), ref.tidy(), rtol=1e-12)


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"method": ["cart", "forest"]}, "method"),
        ({"method": ["poly", "polymars"]}, "method"),
        ({"method": "poly2"}, "method"),
        ({"method": []}, "method"),
        ({"maxorder": 5}, "maxorder"),
        ({"maxorder": -1}, "maxorder"),
        ({"method": ["cart", "cart"]}, "once"),
        ({"cp": -1}, "cp"),
    ],
)
def test_bad_parameters_refused(params: dict, match: str) -> None:
    with pytest.raises(ParameterError, match=match):
        UtilitySyndsMeasure(params)


def test_null_utility_needs_several_sets() -> None:
    orig, syns, schema, _ = _data("US06")
    with pytest.raises(ParameterError, match="null_utility needs m > 1"):
        utility_synds(orig, syns[0], "cart", schema=schema, null_utility=True)


def test_syn_only_with_no_synthesised_variable_left() -> None:
    """Unknown variables are refused by the contract's check; here none of ``vars`` is synthesised."""
    orig, syns, schema, _ = _data("US06")
    with pytest.raises(ParameterError, match="synthesised"):
        utility_synds(orig, syns, "cart", schema=schema, syn_only=True, synthesised=["age"], vars=["sex", "edu"])


def test_missing_values_only_in_a_synthetic_set_are_filled() -> None:
    """1.2-1 decides from the original alone (its glm then fails); here the comparison is filled."""
    orig, syns, schema, _ = _data("US06")
    orig = orig.dropna().reset_index(drop=True)
    syn = syns[0].copy()
    syn.loc[:9, "age"] = np.nan
    res = utility_synds(orig, [syn, syns[1]], ["logit", "cart"], schema=schema, deviance=True)
    assert "age.NA" in res.model_columns
    assert np.all(np.isfinite(res.utility_raw.to_numpy()))
    clean = utility_synds(orig, [syns[1].dropna()], ["logit"], schema=schema)
    assert clean.model_columns == ("sex", "age", "edu", "marital")  # no missing values: data order


def test_all_comb_rows_are_one_comparison() -> None:
    res, _ = _run("US03")
    tidy = res.tidy()
    assert set(tidy["synthetic"]) == {"mean"}
    pmse = tidy[(tidy["measure"] == "pMSE") & (tidy["params"] == '{"all_comb":true,"method":"cart"}')]
    assert pmse["value"].item() == pytest.approx(0.0001240778367550652, rel=RTOL)
    assert "pMSE_sd" not in set(tidy["measure"])


def _poly_covariates(case_id: str, i: int) -> tuple[np.ndarray, np.ndarray]:
    """The covariates 1.2-1 passes to polyclass for original vs set i (fill.NA layout, level codes)."""
    orig, syns, schema, _ = _data(case_id)
    kinds = [Kind(v, tuple(schema[v].levels), schema[v].ordered) if schema[v].is_factor else Kind(v, None)
             for v in orig.columns]  # fmt: skip
    stacked = pd.concat([orig, syns[i]], ignore_index=True)
    cols = model_columns(stacked, kinds, fill=True, r_fill_quirk=False)
    x = np.column_stack([c.values + 1.0 if c.levels is not None else c.values for c in cols])
    return np.r_[np.zeros(len(orig)), np.ones(len(syns[i]))], x


def test_poly_covariates_are_the_traced_ones() -> None:
    """The covariates of tests/reference/polyclass/data/us04_set*.csv (R's traces) are these."""
    for i in range(5):
        t, x = _poly_covariates("US04", i)
        traced = pd.read_csv(reference_path(f"polyclass/data/us04_set{i + 1}.csv"))
        np.testing.assert_array_equal(traced["t"].to_numpy(float), t)
        np.testing.assert_array_equal(traced.iloc[:, 1:].to_numpy(float), x)


def test_poly_reproduces_us04() -> None:
    """polyclass follows polyall.c's arithmetic, so R's search — its rounding-noise candidates
    included — and R's models are reproduced (tests/utility/test_polyclass.py checks the search
    step by step); the values then agree to rounding: <= 2.3e-16 relative, 4.4e-15 for the
    deviance SD (a difference of near-equal numbers), propensities <= 1.2e-16 apart."""
    res, r = _run("US04")
    assert list(res.deviance_raw.columns) == ["poly Stat", "poly DF"]
    for key, got in [
        ("utility.raw", res.utility_raw),
        ("utility.summary", res.utility_summary),
        ("deviance.raw", res.deviance_raw),
        ("deviance.summary", res.deviance_summary),
    ]:
        np.testing.assert_allclose(got.to_numpy(), r_array(r[key]), rtol=POLY_RTOL)
    d = r["ind.propensity.scores"]
    r_scores = np.array(d["data"], dtype=float).reshape(d["dim"][::-1]).transpose()
    np.testing.assert_allclose(res.ind_propensity_scores, r_scores, rtol=0, atol=1e-14)
    # R's console messages per set (its traces) are the notes; the reference holds their union
    traces = {c["case_id"]: c["trace"] for c in load(reference_path("polyclass/polyclass_traces.json"))["cases"]}
    expected = tuple(
        f"poly, synthetic set {k}: {line}"
        for k in range(1, 6)
        for line in traces[f"us04_set{k}"]
        if line in (STEP_HALF, REDUCED)
    )
    assert res.notes == expected
    (stdout,) = _case("US04")["messages"]
    assert set(stdout.removeprefix("stdout: ").split(" | ")) == {STEP_HALF, REDUCED}


def test_polyclass_messages_become_notes_naming_the_fit(monkeypatch) -> None:
    import pipeline.utility.synds_model as synds_model

    real = synds_model.polyclass

    def noisy(t, x):
        fit = real(t, x)
        return dataclasses.replace(fit, trace=(STEP_HALF, REDUCED))

    monkeypatch.setattr(synds_model, "polyclass", noisy)
    orig, syns, schema, _ = _data("US04")
    res = utility_synds(orig, syns[:2], "poly", schema=schema, null_utility=True)
    assert res.notes[:2] == (
        "poly, synthetic set 1: step half ouch...",
        "poly, synthetic set 1: warning - model size was reduced",
    )
    assert "poly, null pair (set 2 vs set 1): step half ouch..." in res.notes
