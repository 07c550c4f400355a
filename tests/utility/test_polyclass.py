"""The polyclass port beyond the R references: its fit is the maximum-likelihood fit of its basis,
its Rao statistic is the score test, and it finds a planted knot."""

from __future__ import annotations

import numpy as np

from pipeline.utility.polyclass import Basis, Space, _Fit, _rao, design, pnewton, polyclass, probability1


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
    _, best = _newton_mle(b, t == 0)
    # penalty 0 selects the largest log-likelihood; pnewton stops when it gains less than 1e-4
    assert best - 1e-4 <= max(fit.loglik_path) <= best + 1e-9
    p = probability1(fit.space, x32)
    beta, _ = _newton_mle(b, t == 0)
    np.testing.assert_allclose(p, 1 / (1 + np.exp(b @ beta)), atol=1e-3)


def test_rao_statistic_is_the_score_test() -> None:
    t, x = _data(seed=2)
    space = Space.constant(x.shape[1])
    space.basis.append(Basis(0, -1, 3, -1))
    space.beta.append(0.0)
    space.dim1[0] = 1
    fit = _Fit(x, t == 0)
    pnewton(fit, space)
    candidate = Basis(1, -1, 3, -1)
    got = _rao(fit, space, candidate)
    # score test with the augmented information at the restricted fit
    bmat = np.column_stack([design(x, space), x[:, 1]])
    p0 = fit.p0
    g = bmat.T @ ((t == 0) - p0)
    info = (bmat * (p0 * (1 - p0))[:, None]).T @ bmat
    expected = g[-1] ** 2 * np.linalg.inv(info)[-1, -1]
    assert got > 0
    assert abs(got - expected) < 1e-6 * max(1.0, expected)
    # a repeated column is in the span of the model: 0, not rounding noise
    assert _rao(fit, space, Basis(0, -1, 3, -1)) == 0.0


def test_finds_the_planted_structure() -> None:
    t, x = _data(n=4000, seed=3)
    fit = polyclass(t, x)
    used = {(b.b1, b.b2) for b in fit.space.basis}
    assert (0, 3) in used  # covariate 0 (age-like) enters
    knots = fit.space.knots[0]
    assert any(40 <= k <= 60 for k in knots)  # a knot near the planted 50
    assert (1, 2) in used or (1, 3) in used  # the x1 * x2 interaction or x1 itself
    assert fit.ndim == len(fit.space.basis)
