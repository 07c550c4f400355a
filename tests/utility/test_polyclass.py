"""The polyclass port against R's own polyclass (its console trace, model and propensities) on
13 data sets, and checks that need no R: the LINPACK port, the fit, the Rao statistic."""

from __future__ import annotations

import json
import re
from functools import cache

import numpy as np
import pandas as pd
import pytest
from reference import reference_path

from pipeline.rmodels.polyclass import (
    REDUCED,
    STEP_HALF,
    Basis,
    Space,
    _Fit,
    _rao,
    _sym_inverse,
    _sym_solve,
    design,
    pnewton,
    polyclass,
    probability1,
)


@cache
def _traces() -> dict[str, dict]:
    doc = json.loads(reference_path("polyclass/polyclass_traces.json").read_text(encoding="utf-8"))
    return {case["case_id"]: case for case in doc["cases"]}


def _case_data(case: dict) -> tuple[np.ndarray, np.ndarray]:
    d = pd.read_csv(reference_path(case["data"]))
    return d.iloc[:, 0].to_numpy(float), d.iloc[:, 1:].to_numpy(float)


def _r_trace(lines: list[str]) -> list[str]:
    """R's console lines as the port records them: fits as ``dim AIC log-likelihood``."""
    out = []
    for line in lines:
        fitted = re.match(r"^ *\d+ +\S+ +\S+", line)  # printf("%3d %10.4f %10.4f ...")
        if fitted:
            out.append(fitted.group(0))
        elif line.startswith(("   add:", "remove:")) or line in (STEP_HALF, REDUCED):
            out.append(line)
    return out


def _r_basis(fcts: dict, ncov: int) -> list[Basis]:
    """polyclass's ``fcts`` rows (1-based covariates and knot ranks, NA = none) as basis functions."""
    out = [Basis(ncov, -1, ncov, -1)]
    rows = list(zip(fcts["dim1"], fcts["knot1"], fcts["dim2"], fcts["knot2"], strict=True))[1:]
    for d1, k1, d2, k2 in rows:
        t1 = -1 if k1 is None else int(k1) - 1
        b2, t2 = (ncov, -1) if d2 is None else (int(d2) - 1, -1 if k2 is None else int(k2) - 1)
        out.append(Basis(int(d1) - 1, t1, b2, t2))
    return out


@pytest.mark.parametrize("case_id", sorted(_traces()))
def test_same_search_model_and_propensities_as_r(case_id: str) -> None:
    """Every fit, addition (with its Rao statistic), removal (Wald) and message of R's search,
    then the same model: the port's arithmetic selects the same rounding-noise candidates."""
    case = _traces()[case_id]
    t, x = _case_data(case)
    fit = polyclass(t, x)
    assert list(fit.trace) == _r_trace(case["trace"])
    assert fit.ndim == case["ndim"]
    assert fit.space.basis == _r_basis(case["fcts"], x.shape[1])
    np.testing.assert_allclose(fit.space.beta, case["fcts"]["beta"], rtol=1e-12, atol=1e-300)
    for got, want in zip(fit.space.knots, case["knots"], strict=True):
        assert got == [k for k in want[1 : int(want[0]) + 1]]
    p = fit.prob1(x)
    np.testing.assert_allclose(p[:20], case["prob_first20"], rtol=0, atol=1e-14)
    assert np.sum((p - 0.5) ** 2) == pytest.approx(case["prob_sum_sq_dev_0.5"], rel=1e-12)


def test_a_failed_refit_and_deletion_from_its_state() -> None:
    """r05: a degenerate addition fails, the previous model's refit fails too, and R deletes from
    that failed state (its coefficients, its working matrix) — the final model is the deletion's."""
    case = _traces()["r05"]
    assert case["trace"].count(STEP_HALF) == 4 and REDUCED in case["trace"]
    assert any(line.startswith("remove:") for line in case["trace"])
    t, x = _case_data(case)
    assert polyclass(t, x).messages == (STEP_HALF,) * 4 + (REDUCED,)


def test_linpack_inverse_and_solve() -> None:
    """Bunch–Kaufman inverse and solve agree with LAPACK on definite and indefinite matrices
    (indefinite ones take 2x2 pivots and interchanges)."""
    rng = np.random.default_rng(5)
    for n, shift in [(1, 0.0), (2, 0.0), (5, -20.0), (7, 0.0), (12, 0.0), (12, 30.0)]:
        a = rng.normal(size=(n, n))
        m = (a + a.T) / 2 + shift * np.eye(n)
        if n > 1:
            m[0, 0] = m[1, 1] = 1e-3  # small diagonal: forces pivoting
        np.testing.assert_allclose(_sym_inverse(m), np.linalg.inv(m), rtol=1e-9, atol=1e-9)
        b = rng.normal(size=n)
        x, ok = _sym_solve(m, b)
        assert ok
        np.testing.assert_allclose(x, np.linalg.solve(m, b), rtol=1e-9, atol=1e-9)
    x, ok = _sym_solve(np.zeros((1, 1)), np.array([2.0]))
    assert not ok and x[0] == 2.0  # singular: LINPACK's info != 0, right-hand side untouched


def _data(n: int = 1500, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = np.column_stack([rng.integers(18, 80, n), rng.normal(0, 1, n), rng.integers(0, 2, n)]).astype(float)
    eta = -0.5 + 0.08 * np.maximum(x[:, 0] - 50, 0) + 0.6 * x[:, 1] * x[:, 2]
    t = (rng.random(n) < 1 / (1 + np.exp(eta))).astype(float)  # class 1 (t = 1) is the reference
    return t, x


def _newton_mle(b: np.ndarray, y0: np.ndarray) -> tuple[np.ndarray, float]:
    beta = np.zeros(b.shape[1])
    for _ in range(100):
        p0 = 1 / (1 + np.exp(-(b @ beta)))
        step = np.linalg.solve((b * (p0 * (1 - p0))[:, None]).T @ b, b.T @ (y0 - p0))
        beta += step
        if np.max(np.abs(step)) < 1e-12:
            break
    p0 = 1 / (1 + np.exp(-(b @ beta)))
    return beta, float(np.sum(np.where(y0, np.log(p0), np.log(1 - p0))))


def test_fit_is_the_maximum_likelihood_fit_of_its_basis() -> None:
    t, x = _data()
    fit = polyclass(t, x)
    x32 = x.astype(np.float32).astype(float)
    b = design(x32, fit.space)
    beta, best = _newton_mle(b, t == 0)
    # pnewton stops when the log-likelihood gains less than 1e-4
    assert best - 1e-4 <= fit.loglik <= best + 1e-9
    np.testing.assert_allclose(probability1(fit.space, x32), 1 / (1 + np.exp(b @ beta)), atol=1e-3)


def test_rao_statistic_is_the_score_test() -> None:
    t, x = _data(seed=2)
    space = Space.constant(x.shape[1])
    space.basis.append(Basis(0, -1, 3, -1))
    space.beta.append(0.0)
    space.dim1[0] = 1
    fit = _Fit(x, t == 0)
    pnewton(fit, space)
    got = _rao(fit.bmat, x[:, 1], fit.y0, fit.p0, -fit.w3[:2, :2])
    # score test with the augmented information at the restricted fit
    bmat = np.column_stack([design(x, space), x[:, 1]])
    p0 = fit.p0
    g = bmat.T @ ((t == 0) - p0)
    info = (bmat * (p0 * (1 - p0))[:, None]).T @ bmat
    expected = g[-1] ** 2 * np.linalg.inv(info)[-1, -1]
    assert got > 0
    assert abs(got - expected) < 1e-6 * max(1.0, expected)
    # an identically zero candidate has variance exactly 0: statistic 0, never selected
    assert _rao(fit.bmat, np.zeros(len(t)), fit.y0, fit.p0, -fit.w3[:2, :2]) == 0.0


def test_finds_the_planted_structure() -> None:
    t, x = _data(n=4000, seed=3)
    fit = polyclass(t, x)
    used = {(b.b1, b.b2) for b in fit.space.basis}
    assert (0, 3) in used  # covariate 0 (age-like) enters
    knots = fit.space.knots[0]
    assert any(40 <= k <= 60 for k in knots)  # a knot near the planted 50
    assert (1, 2) in used or (1, 3) in used  # the x1 * x2 interaction or x1 itself
    assert fit.ndim == len(fit.space.basis)
