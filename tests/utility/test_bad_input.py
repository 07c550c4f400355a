"""Bad input to utility_gen / utility_tab: clear errors or documented handling."""

from __future__ import annotations

import time
import warnings

import numpy as np
import pandas as pd
import pytest

from pipeline.data.schema import Schema, Variable
from pipeline.errors import ParameterError
from pipeline.utility import utility_gen, utility_tab

SCHEMA = Schema(
    (
        Variable("sex", "factor", ("M", "F")),
        Variable("region", "factor", ("N", "S", "E", "W")),
        Variable("age", "integer"),
        Variable("income", "numeric"),
    )
)


def _data(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    income = rng.gamma(2.0, 800.0, n).round()
    income[rng.random(n) < 0.05] = -8
    income[rng.random(n) < 0.05] = np.nan
    return SCHEMA.apply(
        pd.DataFrame(
            {
                "sex": rng.choice(["M", "F"], n),
                "region": rng.choice(["N", "S", "E", "W"], n),
                "age": rng.integers(16, 90, n).astype(float),
                "income": income,
            }
        )
    )


ORIG, SYN1, SYN2, SYN3 = (_data(400, s) for s in (1, 2, 3, 4))


def test_maxorder_too_large():
    with pytest.raises(ParameterError, match="maxorder"):
        utility_gen(ORIG, SYN1, method="logit", vars=["sex", "age"], maxorder=2, schema=SCHEMA)


def test_model_over_max_params():
    with pytest.raises(ParameterError, match="max_params"):
        utility_gen(ORIG, SYN1, method="logit", maxorder=2, max_params=20, schema=SCHEMA)


def test_all_variables_unsynthesised():
    with pytest.raises(ParameterError, match="unsynthesised"):
        utility_gen(ORIG, [SYN1, SYN2], method="logit", vars=["sex", "age"], not_synthesised=["sex", "age"],
                    schema=SCHEMA)  # fmt: skip


def test_cont_na_code_absent_from_original():
    with pytest.raises(ParameterError, match="does not occur"):
        utility_gen(ORIG, SYN1, method="logit", cont_na={"income": -9}, schema=SCHEMA)


def test_constant_variable_in_both_sets_is_dropped():
    orig, syn = ORIG.copy(), SYN1.copy()
    orig["sex"] = pd.Categorical(["M"] * len(orig), categories=["M", "F"])
    syn["sex"] = pd.Categorical(["M"] * len(syn), categories=["M", "F"])
    with pytest.warns(UserWarning, match="sex"):
        res = utility_gen(orig, syn, method="logit", maxorder=0, schema=SCHEMA)
    assert res.dropped == ("sex",) and "sex" not in res.predictors
    only = orig[["sex"]]
    with pytest.raises(ParameterError, match="constant"):
        utility_gen(only, syn[["sex"]], method="logit", schema=SCHEMA.select(["sex"]))


def test_perfect_separation_is_reported_and_stops():
    orig, syn = ORIG.copy(), SYN1.copy()
    orig["region"] = pd.Categorical(["N"] * len(orig), categories=["N", "S", "E", "W"])
    syn["region"] = pd.Categorical(["S"] * len(syn), categories=["N", "S", "E", "W"])
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = utility_gen(orig, syn, method="logit", vars=["sex", "region", "age"], maxorder=0, schema=SCHEMA)
    assert time.perf_counter() - start < 30
    fit = res.fits[0]
    assert fit.fitted_extreme and fit.iter <= 200
    assert res["pMSE"][0] == pytest.approx(0.25, abs=1e-6)  # the maximum c(1 - c)
    assert any("separation" in str(w.message) for w in caught)


def test_non_convergence_is_reported():
    with pytest.warns(UserWarning, match="did not converge"):
        res = utility_gen(ORIG, SYN1, method="logit", maxorder=1, maxit=1, cont_na={"income": -8}, schema=SCHEMA)
    assert not res.fits[0].converged and res.fits[0].iter == 1


def test_bad_parameters():
    with pytest.raises(ParameterError, match="method"):
        utility_gen(ORIG, SYN1, method="poly", schema=SCHEMA)
    with pytest.raises(ParameterError, match="pairs"):
        utility_gen(ORIG, SYN1, method="cart", resamp_method="pairs", schema=SCHEMA)
    with pytest.raises(ParameterError, match="aggregate"):
        utility_gen(ORIG, SYN1, method="cart", aggregate=True, schema=SCHEMA)
    with pytest.raises(ParameterError, match="incomplete"):
        utility_gen(ORIG, [SYN1, SYN2], method="cart", resamp_method="perm", not_synthesised=["sex"], schema=SCHEMA)
    with pytest.raises(ParameterError, match="not found"):
        utility_gen(ORIG, SYN1, vars=["nope"], schema=SCHEMA)
    with pytest.raises(ParameterError, match="max_table"):
        utility_tab(ORIG, SYN1, ["sex", "region", "age", "income"], ngroups=20, max_table=100, schema=SCHEMA)


def test_incomplete_synthesis_uses_pairs():
    # decision (spec §5.3.3): km1 counts the coefficients naming a synthesised variable,
    # not multiplied by print.flag (synthpop then gets km1 = 0 and S_pMSE = Inf)
    syns = [SYN1, SYN2, SYN3]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = utility_gen(ORIG, syns, method="logit", vars=["sex", "region", "age"], maxorder=0,
                          not_synthesised=["sex"], schema=SCHEMA)  # fmt: skip
    assert res.resamp_method == "pairs" and res.incomplete
    assert np.all(res["df"] == 4)  # region (3) + age (1); sex's coefficient excluded
    assert np.all(np.isfinite(res["S_pMSE"])) and np.all(np.isfinite(res["S_SPECKS"]))
    assert res.nnosplits["pairs"][1] == 3


def test_k_syn_and_aggregate():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = utility_gen(ORIG, SYN1, method="logit", vars=["sex", "region"], schema=SCHEMA)
        agg = utility_gen(ORIG, SYN1, method="logit", vars=["sex", "region"], aggregate=True, schema=SCHEMA)
        ksyn = utility_gen(ORIG, SYN1, method="logit", vars=["sex", "region"], k_syn=True, schema=SCHEMA)
    # aggregated records with frequency weights give the same saturated fit
    np.testing.assert_allclose(agg["pMSE"], plain["pMSE"], rtol=1e-6)
    assert agg["U"][0] == plain["U"][0] and agg["SPECKS"][0] == pytest.approx(plain["SPECKS"][0])
    assert ksyn["df"][0] == plain["df"][0] + 1


def test_ngroups_separates_special_codes():
    # decision (spec §5.3.4): with ngroups the cont_na codes get their own level for m = 1 too
    # (synthpop 1.9-2 bins them with the ordinary values when m = 1)
    from pipeline.evaluation.data import as_eval_data
    from pipeline.evaluation.execution import Executor
    from pipeline.utility.prepare import build_plan

    data = as_eval_data(ORIG, [SYN1], SCHEMA, {"income": -8})
    plan = build_plan(data, Executor(policy="memory"), ["sex", "income"], 5, {"income": (-8.0,)})
    income = plan.columns[1]
    assert income.role == "binned" and income.labels[-2:] == ("-8", None)
    assert plan.names == ["sex", "income"]  # no _NA / _cna indicators when binning
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = utility_gen(ORIG, SYN1, method="logit", vars=["sex", "income"], ngroups=5, cont_na={"income": -8},
                          schema=SCHEMA)  # fmt: skip
    assert any(name.startswith("income-8") for name in res.fits[0].names)


def test_quasi_separation_is_a_row_per_set_and_the_fit_converges():
    """Issue 23: where R's glm breaks down (maxit iterations, |coef| ~ 1e15, pMSE 0.25) on
    quasi-separated sets, the IRLS port converges; the rows flag those sets."""
    orig, syn1, syn2 = ORIG.copy(), SYN1.copy(), _data(len(ORIG), 22)
    # region W only in 30 records of set 1: they alone are told apart (quasi-complete separation)
    orig["region"] = orig["region"].replace("W", "E")
    syn1["region"] = syn1["region"].replace("W", "E")
    syn1.loc[syn1.index[:30], "region"] = "W"
    syn2["region"] = syn2["region"].replace("W", "E")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = utility_gen(orig, [syn1, syn2], method="logit", vars=["sex", "region", "age"], maxorder=0, schema=SCHEMA)
    # the fit stops by R's rule at |eta| ~ 16 for the 30 records (probabilities 1 - 1e-7: not
    # "numerically 1"), with the region W coefficient still growing by ~1 per step
    assert [(f.fitted_extreme, f.diverging, f.separated) for f in res.fits] == [(False, True, True), (False,) * 3]
    assert all(f.converged and f.iter < 40 for f in res.fits)
    assert res["pMSE"][0] == pytest.approx(0.0103, abs=1e-4)  # not the breakdown value 0.25 (R, |coef| ~ 1e15)
    flags = {r.synthetic: r.value for r in res.rows() if r.measure == "separation"}
    assert flags == {"1": 1.0, "2": 0.0, "mean": 0.5}
    [note] = [str(w.message) for w in caught if "separates" in str(w.message)]
    # issue 36: the term, the records and what they do to S_pMSE (refit without their cells)
    assert "separates synthetic set 1 from the original on the term(s) region: 30 records" in note
    sep = res.separations[0]
    assert sep.records == 30 and sep.terms == ("region",) and res.separations[1] is None
    assert sep.S_pMSE == pytest.approx(res["S_pMSE"][0]) and sep.S_pMSE_without < 0.1 * sep.S_pMSE
    plain = utility_gen(orig, [syn2, syn2], method="logit", vars=["sex", "region", "age"], maxorder=0, schema=SCHEMA)
    assert not [r for r in plain.rows() if r.measure == "separation"]  # nothing separated: no rows


def test_a_single_record_alone_in_its_cell_does_not_flag_separation():
    """Issue 36: one original record with a missing sex (a level no synthetic set has) separates
    the logit fit but hardly moves S_pMSE: no note, no flag; the rows count the record."""
    orig = ORIG.copy()
    orig["sex"] = orig["sex"].cat.add_categories([]).astype(object)
    orig.loc[orig.index[0], "sex"] = None
    orig["sex"] = pd.Categorical(orig["sex"], categories=ORIG["sex"].cat.categories)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = utility_gen(orig, [SYN1, _data(len(ORIG), 23)], method="logit", vars=["sex", "region", "age"],
                          maxorder=1, schema=SCHEMA)  # fmt: skip
    assert all(f.separated for f in res.fits)
    assert not [w for w in caught if "separates" in str(w.message)]
    assert [s.records for s in res.separations] == [1.0, 1.0] and {s.terms for s in res.separations} == {("sex",)}
    rows = {(r.synthetic, r.measure): r.value for r in res.rows()}
    assert rows[("1", "separation")] == 0.0 and rows[("mean", "separation")] == 0.0
    assert rows[("1", "separated_records")] == 1.0
