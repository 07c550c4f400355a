"""Reproduce the R package's outputs: reference/idrisk/*.json and the spec fixtures (vendored in tests/reference)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from reference import reference_cases, reference_path

from pipeline.risk.idrisk import identification_risk, identification_risk_categorical, radius_sweep

CASES = reference_cases("idrisk")
FIXTURES = reference_path("spec/fixtures/identification_risk_examples.json")


def _r_value(v):
    return math.nan if v in ("NaN", None) else float(v)


def _close(actual, expected, rel=1e-12, abs_=1e-12):
    expected = np.array([_r_value(v) for v in np.atleast_1d(expected)])
    np.testing.assert_allclose(np.asarray(actual, dtype=float), expected, rtol=rel, atol=abs_, equal_nan=True)


@pytest.fixture(scope="module")
def fixtures():
    return json.loads(FIXTURES.read_text(encoding="utf-8"))


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_reference_case(path, load_ce, ce_schema):
    case = json.loads(path.read_text(encoding="utf-8"))
    args = case["args"]
    orig = load_ce(case["data"]["original"])
    syns = [load_ce(p) for p in case["data"]["synthetic"]]
    if case["function"] == "IdentificationRiskCategorical":
        res = identification_risk_categorical(orig, syns, args["known"], args["syn"], schema=ce_schema)
    else:
        res = identification_risk(
            orig,
            syns,
            args["known"],
            args["syn"],
            radius=args["r"],
            percentage=args["percentage"],
            euclidean=args["euclideanDist"],
            schema=ce_schema,
        )
    expected = case["result"]
    assert res.m == len(syns)
    for k in range(res.m):
        np.testing.assert_array_equal(res.c[:, k], expected["c_vector"][k])
        np.testing.assert_array_equal(res.T_package[:, k].astype(int), expected["T_vector"][k])
        np.testing.assert_array_equal(res.K[:, k].astype(int), expected["K_vector"][k])
        np.testing.assert_array_equal(res.F[:, k].astype(int), expected["F_vector"][k])
        np.testing.assert_allclose(res.risk[:, k], expected["Risk_vector"][k], rtol=0, atol=1e-15)
    np.testing.assert_array_equal(res.s, expected["s_vector"])
    _close(res.exp_risk, expected["exp.risk_vector"])
    _close(res.true_rate, expected["true.rate_vector"])
    _close(res.false_rate, expected["false.rate_vector"])
    # logical T: never 1 without a match
    assert not (res.T & (res.c == 0)).any()


def _frames(example, cat_as_str=True):
    import pandas as pd

    orig = pd.DataFrame(example["orig"])
    syns = [pd.DataFrame(s) for s in example["syn"]]
    for col in example.get("categorical", list(orig.columns)):
        orig[col] = orig[col].astype(str).astype("category")
        for s in syns:
            s[col] = s[col].astype(str).astype("category")
    return orig, syns


def test_example1_categorical(fixtures):
    ex = fixtures["example1"]
    orig, syns = _frames(ex)
    res = identification_risk(orig, syns, ex["known"], ex["synthesised"], radius=None)
    exp = ex["expected"]
    np.testing.assert_array_equal(res.c[:, 0], exp["c"])
    np.testing.assert_array_equal(res.T[:, 0].astype(int), exp["T_logical"])
    np.testing.assert_array_equal(res.T_package[:, 0].astype(int), exp["T_package"])
    np.testing.assert_allclose(res.risk[:, 0], exp["IR"], atol=1e-15)
    np.testing.assert_array_equal(res.K[:, 0].astype(int), exp["K"])
    np.testing.assert_array_equal(res.F[:, 0].astype(int), exp["F"])
    assert res.s[0] == exp["s"]
    _close(res.exp_risk, exp["exp_risk"])
    _close(res.file_risk, exp["ir_file"])
    _close(res.true_rate, exp["true_rate"])
    _close(res.false_rate, exp["false_rate"])
    same = identification_risk_categorical(orig, syns, ex["known"], ex["synthesised"])
    np.testing.assert_array_equal(same.c, res.c)


@pytest.mark.parametrize("k", range(4))
def test_example2_cases(fixtures, k):
    ex = fixtures["example2"]
    case = ex["cases"][k]
    orig, syns = _frames(ex)
    res = identification_risk(
        orig,
        syns,
        ex["known"],
        ex["synthesised"],
        radius=case["radius"],
        percentage=case["mode"] == "percentage",
        interval=case["interval"],
    )
    exp = case["expected"]
    np.testing.assert_array_equal(res.c[:, 0], exp["c"])
    if "T_package" in exp:
        np.testing.assert_array_equal(res.T_package[:, 0].astype(int), exp["T_package"])
        np.testing.assert_array_equal(res.T[:, 0].astype(int), exp["T_logical"])
        np.testing.assert_allclose(res.risk[:, 0], exp["IR"], atol=1e-15)
        _close(res.file_risk, exp["ir_file"])
    assert res.s[0] == exp["s"]
    _close(res.exp_risk, exp["exp_risk"])
    _close(res.true_rate, exp["true_rate"])
    _close(res.false_rate, exp["false_rate"])
    if "package_r_vector" in case:  # the package's positional vector gives the same result
        vec = identification_risk(orig, syns, ex["known"], ex["synthesised"], radius=case["package_r_vector"])
        np.testing.assert_array_equal(vec.c, res.c)


def test_example2_sweep_and_two_files(fixtures):
    ex = fixtures["example2"]
    orig, syns = _frames(ex)
    sweep = ex["sweep_same_r_both"]
    res = radius_sweep(orig, syns, ex["known"], ex["synthesised"], grid=sweep["grid"])
    _close(res.measure("exp.risk")[:, 0], sweep["exp_risk"])
    assert res.r_star == {"r": sweep["argmax"]}
    assert res.r_star_at_boundary is sweep["argmax_at_grid_boundary"]
    two = identification_risk(orig, [syns[0], orig], ex["known"], ex["synthesised"], radius=0.1)
    exp = ex["two_files_second_is_identity"]
    np.testing.assert_array_equal(two.c[:, 1], exp["file2_c"])
    np.testing.assert_array_equal(two.c[:, 0], ex["cases"][0]["expected"]["c"])
    assert two.s[1] == exp["file2_s"]
    _close(two.exp_risk[1], exp["file2_exp_risk"])
    _close(two.true_rate[1], exp["file2_true_rate"])
    _close(two.false_rate[1], exp["file2_false_rate"])


def _shifted(orig, spec):
    syn = orig.copy()
    if spec == "identity":
        return syn
    for col, how in spec.items():
        k = int(how.removeprefix("shift_"))
        syn[col] = np.roll(orig[col].to_numpy(), -k)
        if hasattr(orig[col], "cat"):
            syn[col] = syn[col].astype(orig[col].dtype)
    return syn


@pytest.mark.parametrize("case_id", ["A", "A2", "B", "C", "D", "F"])
def test_cedata_reference(fixtures, load_ce, ce_schema, case_id):
    case = fixtures["cedata_reference"]["cases"][case_id]
    orig = load_ce("data/cedata.csv")
    syn = _shifted(orig, case["synthetic"])
    radius = {v: r for part in ("known", "syn") for v, r in case[part].items() if r is not None} or None
    res = identification_risk(orig, [syn], list(case["known"]), list(case["syn"]), radius=radius, schema=ce_schema)
    assert res.s[0] == case["s"]
    assert res.statistics.sum_c[0] == case["sum_c"]
    assert res.statistics.n_no_match[0] == case["n_c0"]
    _close(res.exp_risk, case["exp_risk"], rel=1e-11)
    _close(res.true_rate, case["true_rate"], rel=1e-11)
    _close(res.false_rate, case["false_rate"], rel=1e-11)
    if "package_r_vector" in case:
        vec = identification_risk(
            orig, [syn], list(case["known"]), list(case["syn"]), radius=case["package_r_vector"], schema=ce_schema
        )
        np.testing.assert_array_equal(vec.c, res.c)


def test_cedata_reference_two_files(fixtures, load_ce, ce_schema):
    """Case E: files are evaluated independently (file 1 = case B, file 2 = case D)."""
    cases = fixtures["cedata_reference"]["cases"]
    orig = load_ce("data/cedata.csv")
    syns = [_shifted(orig, cases["B"]["synthetic"]), _shifted(orig, cases["D"]["synthetic"])]
    res = identification_risk(orig, syns, ["Age", "Urban", "Marital"], ["Income"], radius=0.1, schema=ce_schema)
    for k, cid in enumerate("BD"):
        assert res.s[k] == cases[cid]["s"]
        _close(res.exp_risk[k], cases[cid]["exp_risk"], rel=1e-11)
    # D: exactly the records with Income <= 0 have no match
    np.testing.assert_array_equal(res.c[:, 1] == 0, orig["Income"].to_numpy() <= 0)


@pytest.mark.parametrize("scenario", ["income", "incexp", "incexpten"])
def test_cedata_syn_sweep(fixtures, load_ce, ce_schema, scenario):
    ref = fixtures["cedata_syn_reference"]
    orig = load_ce("data/cedata.csv")
    syns = [load_ce(f"data/cedata_syn_{scenario}_{k}.csv") for k in range(1, 6)]
    grid = [float(r) for r in ref["by_r"][scenario]]
    res = radius_sweep(
        orig, syns, list(ref["known"]), ref["syn"][scenario], grid=grid, radius={"Age": 0.1}, schema=ce_schema
    )
    assert res.labels == [f"r={r}" for r in ref["by_r"][scenario]]
    for k, r in enumerate(ref["by_r"][scenario]):
        exp = ref["by_r"][scenario][r]
        np.testing.assert_array_equal(res.statistics[k].s, exp["s"])
        _close(res.statistics[k].exp_risk, exp["exp_risk"], rel=1e-10)
        _close(res.statistics[k].true_rate, exp["true_rate"], rel=1e-9)
        _close(res.statistics[k].false_rate, exp["false_rate"], rel=1e-9)
    expected_r_star = {"income": 0.01, "incexp": 0.1, "incexpten": 0.3}[scenario]
    assert res.r_star == {"r": expected_r_star}
    assert res.r_star_at_boundary is (scenario != "incexp")
