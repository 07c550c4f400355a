"""utility_gen against synthpop 1.9-2 (reference/utility_gen, vendored in tests/reference).

Logit cases: pMSE, S_pMSE and df to 1e-6 relative (they agree to ~1e-13), SPECKS/PO50/U, and the
glm coefficients (names, aliased columns, values), deviance and iteration count.
CART (G04): the propensity scores of rpart's trees are reproduced exactly (pMSE, SPECKS, PO50,
U and the tree sizes); the permutation null depends on R's random numbers (set.seed(123) and
rpart's cross-validation draws), so only its statistical consistency is checked.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from pipeline.utility import utility_gen

from .helpers import case_data, load, r_values, ref_files

CASES = ref_files("utility_gen")
LOGIT = [p for p in CASES if load(p)["args"]["method"] == "logit"]
CART = [p for p in CASES if load(p)["args"]["method"] == "cart"]


def _run(ref, syns_limit=None, **extra):
    orig, syns, schema = case_data(ref)
    args = ref["args"]
    if syns_limit:
        syns = syns[:syns_limit]
    kwargs = dict(method=args["method"], vars=args.get("vars"), maxorder=args.get("maxorder", 1),
                  cont_na=args.get("cont.na"), schema=schema, nperms=args.get("nperms", 50))  # fmt: skip
    kwargs.update(extra)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return utility_gen(orig, syns if len(syns) > 1 else syns[0], **kwargs)


@pytest.mark.parametrize("path", LOGIT, ids=lambda p: p.stem)
def test_logit_matches_synthpop(path):
    ref = load(path)
    exp = ref["result"]
    res = _run(ref)
    assert res.resamp_method is None  # analytic null for logit
    for stat in ("pMSE", "S_pMSE"):
        np.testing.assert_allclose(res[stat], r_values(exp[stat]), rtol=1e-6, err_msg=stat)
    np.testing.assert_allclose(res["pMSEExp"], r_values(exp["pMSE_expected_null"]), rtol=1e-6)
    # synthpop returns the df of the last set; ours is per set and equal for every set here
    assert np.all(res["df"] == exp["df"])
    np.testing.assert_allclose(res["SPECKS"], r_values(exp["SPECKS"]), rtol=1e-9)
    np.testing.assert_allclose(res["PO50"], r_values(exp["PO50"]), rtol=1e-9)
    np.testing.assert_allclose(res["U"], r_values(exp["U"]), rtol=1e-9)
    for fit, rfit in zip(res.fits, exp["fits"], strict=True):
        assert list(fit.names) == rfit["coef_names"]
        want = r_values(rfit["coefficients"])
        np.testing.assert_array_equal(np.isnan(fit.coefficients), np.isnan(want))  # aliased as in R
        np.testing.assert_allclose(fit.coefficients, want, rtol=1e-6, atol=1e-9, equal_nan=True)
        assert fit.rank == rfit["rank"]
        assert fit.iter == rfit["iter"] and fit.converged == rfit["converged"]
        np.testing.assert_allclose(fit.deviance, rfit["deviance"], rtol=1e-10)
        np.testing.assert_allclose(fit.null_deviance, rfit["null.deviance"], rtol=1e-10)


@pytest.mark.parametrize("path", CART, ids=lambda p: p.stem)
def test_cart_scores_match_rpart(path):
    ref = load(path)
    exp = ref["result"]
    res = _run(ref, resamp_method="none")
    np.testing.assert_allclose(res["pMSE"], r_values(exp["pMSE"]), rtol=1e-12)
    np.testing.assert_allclose(res["SPECKS"], r_values(exp["SPECKS"]), rtol=1e-12)
    np.testing.assert_allclose(res["PO50"], r_values(exp["PO50"]), rtol=1e-12)
    np.testing.assert_array_equal(res["U"], r_values(exp["U"]))
    for fit, rfit in zip(res.fits, exp["fits"], strict=True):
        assert (fit["n_nodes"], fit["n_leaves"]) == (rfit["n_nodes"], rfit["n_leaves"])
    assert np.all(np.isnan(res["S_pMSE"]))  # resamp_method="none"


def _check_null_consistent(res, exp, sets):
    for j in sets:
        r_null = exp["pMSE"][j] / exp["S_pMSE"][j]  # R's mean of the halved permutation pMSEs
        sims = res.null_pMSE[str(j + 1)] / 2
        # R's null mean lies inside our permutation distribution and close to our mean
        assert sims.min() < r_null < sims.max()
        assert abs(sims.mean() - r_null) < 4 * sims.std(ddof=1) / np.sqrt(len(sims)) + 0.05 * r_null
        assert res.nnosplits[str(j + 1)] == (exp["nnosplits"][j][0], len(sims))


@pytest.mark.parametrize("path", CART, ids=lambda p: p.stem)
def test_cart_permutation_null_is_consistent_first_set(path):
    ref = load(path)
    exp = ref["result"]
    res = _run(ref, syns_limit=1, nperms=12, seed=2011)
    np.testing.assert_allclose(res["pMSE"], exp["pMSE"][0], rtol=1e-12)
    _check_null_consistent(res, exp, [0])


@pytest.mark.slow
@pytest.mark.parametrize("path", CART, ids=lambda p: p.stem)
def test_cart_permutation_null_is_consistent_all_sets(path):
    ref = load(path)
    exp = ref["result"]
    res = _run(ref, seed=123)
    assert res.resamp_method == "perm"
    _check_null_consistent(res, exp, range(5))
    # S_pMSE of each set within 25 % of R's (the null means are random)
    np.testing.assert_allclose(res["S_pMSE"], r_values(exp["S_pMSE"]), rtol=0.25)
