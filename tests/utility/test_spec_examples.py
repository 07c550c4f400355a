"""The worked examples of spec §6 (U1–U4) and the decisions taken on synthpop's quirks."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from pipeline.data.schema import Schema, Variable
from pipeline.evaluation.base import TIDY_COLUMNS
from pipeline.utility import utility_gen, utility_tab
from pipeline.utility.gen import GEN_STATS

X5 = Schema((Variable("x", "factor", tuple("abcde")),))
TWO = Schema((Variable("sex", "factor", ("F", "M")), Variable("y", "factor", ("N", "Y"))))


def _frame(schema: Schema, counts: dict) -> pd.DataFrame:
    rows = [k if isinstance(k, tuple) else (k,) for k, v in counts.items() for _ in range(v)]
    return schema.apply(pd.DataFrame(rows, columns=schema.names))


U1_ORIG, U1_SYN = _frame(X5, {"a": 5, "b": 3, "c": 2}), _frame(X5, {"a": 4, "b": 2, "c": 3, "d": 1})
U2_ORIG = _frame(TWO, {("F", "N"): 4, ("F", "Y"): 2, ("M", "N"): 3, ("M", "Y"): 3})
U2_SYN = _frame(TWO, {("F", "N"): 3, ("M", "N"): 2, ("M", "Y"): 3})


def quiet_gen(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return utility_gen(*args, **kwargs)


def test_u1_table_statistics():
    res = utility_tab(U1_ORIG, U1_SYN, ["x"], schema=X5)
    expected = {
        "VW": 3.0222222, "S_VW": 1.0074074, "S_pMSE": 1.0074074, "pMSE": 0.0188889, "FT": 5.0310765,
        "S_FT": 1.6770255, "JSD": 0.0685405, "S_JSD": 1.3184401, "G": 0.9222711, "dfG": 2, "S_G": 0.4611355,
        "SPECKS": 0.2, "U": 62, "PO50": 10, "MabsDD": 0.4, "WMabsDD": 3.9486027, "S_WMabsDD": 1.3162009,
        "dBhatt": 0.2507757, "df": 3, "nempty": 1,
    }  # fmt: skip
    for stat, value in expected.items():
        assert res[stat][0] == pytest.approx(value, abs=5e-7), stat
    np.testing.assert_allclose(
        res.tab_zdiff[0], [-0.4714045, -0.6324555, 0.6324555, 1.4142136, np.nan], atol=5e-7, equal_nan=True
    )
    # declared-but-empty level e stays in the table (it only changes nempty)
    assert res.levels == (tuple("abcde"),)


def test_u1_logit_cross_check():
    # empty levels dropped (4 levels -> km1 = 3); fitted values = cell scores.  The d cell is
    # separated, so R's glm stops just short of 1 and agrees to ~1e-6 only.
    res = quiet_gen(U1_ORIG, U1_SYN, method="logit", maxorder=0, schema=X5)
    assert res["pMSE"][0] == pytest.approx(0.0188889, rel=1e-5)
    assert res["pMSEExp"][0] == pytest.approx(0.01875, rel=1e-12)
    assert res["S_pMSE"][0] == pytest.approx(1.0074074, rel=1e-5)
    assert res["df"][0] == 3
    assert (res["SPECKS"][0], res["PO50"][0], res["U"][0]) == (pytest.approx(0.2), pytest.approx(10), 62)


def test_u2_table_statistics():
    res = utility_tab(U2_ORIG, U2_SYN, ["sex", "y"], schema=TWO)
    expected = {
        "VW": 75 / 28, "S_pMSE": 0.8928571, "pMSE": 0.0192857, "FT": 5.7766651, "S_FT": 1.9255550,
        "JSD": 0.0932958, "S_JSD": 1.7946316, "WMabsDD": 2.9270074, "S_WMabsDD": 0.9756691, "G": 0.2223440,
        "dfG": 2, "S_G": 0.1111720, "SPECKS": 0.1666667, "U": 59.5, "PO50": 5, "MabsDD": 0.3333333,
        "dBhatt": 0.3004337, "df": 3, "nempty": 0,
    }  # fmt: skip
    for stat, value in expected.items():
        assert res[stat][0] == pytest.approx(value, abs=5e-7), stat


def test_u2_logit_po50_uses_threshold_half():
    # Quirk kept as the spec says (§5.3.7): utility.gen's PO50 thresholds scores at 0.5, while
    # utility.tab compares shares -> PO50 10 here against 5 from the table.
    res = quiet_gen(U2_ORIG, U2_SYN, method="logit", maxorder=1, schema=TWO)
    assert res["pMSE"][0] == pytest.approx(0.0192857, abs=5e-7)
    assert res["S_pMSE"][0] == pytest.approx(0.8928571, abs=5e-7)
    assert res["df"][0] == 3
    assert res["SPECKS"][0] == pytest.approx(1 / 6)
    assert res["U"][0] == 59.5
    assert res["PO50"][0] == pytest.approx(10)


def test_u3_cart_perfect_separation():
    schema = Schema((Variable("x", "factor", ("A", "B")), Variable("y", "factor", ("p", "q"))))
    orig = schema.apply(pd.DataFrame({"x": ["A"] * 20, "y": ["p", "q"] * 10}))
    syn = schema.apply(pd.DataFrame({"x": ["B"] * 20, "y": ["p", "q"] * 10}))
    res = quiet_gen(orig, syn, method="cart", resamp_method="none", schema=schema)
    assert res["pMSE"][0] == pytest.approx(0.25)
    assert (res["SPECKS"][0], res["PO50"][0], res["U"][0]) == (1.0, 50.0, 400.0)
    assert np.isnan(res["S_pMSE"][0])
    assert res.fits[0]["n_leaves"] == 2
    # decision: x is constant within each set but differs between them, so it is kept (synthpop
    # drops it whenever print.flag = TRUE, which would hide this separation)
    assert "x" in res.vars


def test_u4_standardisation_arithmetic():
    from pipeline.utility.gen import Comparison, _assemble
    from pipeline.utility.params import UtilityGenParams
    from pipeline.utility.prepare import GenPlan

    plan = GenPlan(columns=(), level_counts=({}, {}, {}, {}), n_rows=(60, 60, 60, 60), vars=("x",), dropped=(),
                   notes=())  # fmt: skip

    def stats(p):
        return {"stats": {"pMSE": p, "SPECKS": 0.1, "PO50": 1.0, "U": 10.0}, "fit": {}, "n": 120}

    # perm: permuted pMSEs {0.004, 0.006} -> null 0.0025; pMSE 0.01 -> S_pMSE 4
    comps = [Comparison("main", 1, 0), Comparison("perm", 1, 0, ("perm", 1)), Comparison("perm", 1, 0, ("perm", 2))]
    perm = UtilityGenParams(method="cart", resamp_method="perm", nperms=2)
    res = _assemble(plan, comps, [stats(0.01), stats(0.004), stats(0.006)], perm, [])
    assert res["pMSEExp"][0] == pytest.approx(0.0025) and res["S_pMSE"][0] == pytest.approx(4.0)
    # pairs (m = 3): pair pMSEs {0.004, 0.005, 0.006} -> null 0.0025; S_pMSE {1.2, 2.0, 4.0}, mean 2.4
    comps = [Comparison("main", j, 0) for j in (1, 2, 3)] + [
        Comparison("pair", 1, 2),
        Comparison("pair", 1, 3),
        Comparison("pair", 2, 3),
    ]
    results = [stats(p) for p in (0.003, 0.005, 0.010, 0.004, 0.005, 0.006)]
    with pytest.warns(UserWarning, match="pair"):
        res = _assemble(plan, comps, results, UtilityGenParams(method="cart", resamp_method="pairs"), [])
    np.testing.assert_allclose(res["S_pMSE"], [1.2, 2.0, 4.0])
    assert res.summary()["S_pMSE"] == pytest.approx(2.4)
    # decision (spec §5.3.5): S_PO50 is standardised by the pairs' PO50, not their SPECKS
    np.testing.assert_allclose(res["S_PO50"], [2.0, 2.0, 2.0])


def test_u4_analytic_null():
    # km1 = 11, c = 0.5, N = 120 -> pMSEExp = 11 * 0.25 * 0.5 / 120; pMSE 0.0229167 -> S_pMSE 2
    from pipeline.rmodels.glm import LogitFit
    from pipeline.utility.gen import Comparison, _assemble
    from pipeline.utility.params import UtilityGenParams
    from pipeline.utility.prepare import GenPlan

    plan = GenPlan(columns=(), level_counts=({}, {}), n_rows=(60, 60), vars=("x",), dropped=(), notes=())
    analytic = UtilityGenParams(method="logit")  # no resampling: the analytic null
    fit = LogitFit(tuple(f"b{i}" for i in range(12)), np.zeros(12), 1.0, 1.0, 3, True, 12, False)
    stats = {"pMSE": 0.0229167, "SPECKS": 0.1, "PO50": 1.0, "U": 10.0}
    res = _assemble(plan, [Comparison("main", 1, 0)], [{"stats": stats, "fit": fit, "n": 120}], analytic, [])
    assert res["df"][0] == 11
    assert res["pMSEExp"][0] == pytest.approx(0.0114583, abs=5e-8)
    assert res["S_pMSE"][0] == pytest.approx(2.0, abs=1e-5)


def test_tidy_and_dict_shapes():
    res = quiet_gen(U2_ORIG, [U2_SYN, U2_SYN], method="logit", schema=TWO)
    tidy = res.tidy()
    assert list(tidy.columns) == TIDY_COLUMNS
    assert set(tidy["synthetic"]) == {"1", "2", "mean"}
    # U2's synthetic set has no (F, Y) record: the saturated logit separates it (quasi-complete),
    # which the rows report with its records and S_pMSE without them (issues 23, 36)
    assert set(tidy["measure"]) == {*GEN_STATS, "separation", "separated_records", "S_pMSE_without_separated"}
    assert set(tidy["params"]) == {"{}"} and set(tidy["setting"]) == {""}
    import json

    json.dumps(res.to_dict())
    tab = utility_tab(U2_ORIG, [U2_SYN, U2_SYN], ["sex", "y"], schema=TWO)
    assert list(tab.tidy().columns) == TIDY_COLUMNS
    assert set(tab.tidy()["params"]) == {'{"vars":["sex","y"]}'}
    json.dumps(tab.to_dict())
