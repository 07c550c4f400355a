"""synthpop's parametric methods with ``proper = FALSE``: ``norm``, ``normrank``, ``logreg``, ``polyreg``.

Factor predictors enter as treatment dummies (synthpop's ``padModel``: one column per level
but the first); the columns then pass synthpop's ``remove.lindep.syn``
(:mod:`pipeline.synth.partial.lindep`: constant, response-copying and collinear columns out).

* ``norm`` (``syn.norm``): linear regression with synthpop's ridge ``1e-5 * diag(X'X)``,
  ``sigma = sqrt(RSS / (n - ncol(X) - 1))``; a value is ``xp beta + sigma * N(0, 1)`` rounded
  to the largest number of decimals of the original values.
* ``normrank`` (``syn.normrank``): ``norm`` on the normal scores ``qnorm(rank(y) / (n + 1))``;
  a draw ``z`` becomes the original order statistic ``round(pnorm(z) (n + 1))`` (clipped to 1..n).
* ``logreg`` (``syn.logreg``): predictors centred, data augmented (``augment.syn``: 2 p k
  pseudo-records at mean +- sd/2 with weight (p + 1) / (2 p k) against perfect prediction),
  logistic IRLS as R's ``glm.fit``; level 2 when ``U <= p``.
* ``polyreg`` (``syn.polyreg``): the same augmentation, numeric predictors outside [0, 1]
  rescaled by their range, the multinomial logit maximum likelihood (``nnet::multinom``
  without decay; here by L-BFGS to a relative tolerance of 1e-10 instead of nnet's BFGS), and
  a level drawn by one uniform against the cumulative probabilities.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special

from pipeline.synth.partial.lindep import lindep_keep

RIDGE = 1e-5


def _dummies(x: np.ndarray, pcat: np.ndarray) -> np.ndarray:
    """Numeric columns as they are, each factor (codes 1..L) as dummies of levels 2..L."""
    cols = [np.zeros((len(x), 0))]
    for j, nc in enumerate(pcat):
        if nc == 0:
            cols.append(x[:, j : j + 1])
        else:
            cols.append((x[:, j].astype(np.int64)[:, None] == np.arange(2, nc + 1)[None, :]).astype(float))
    return np.hstack(cols)


@dataclass(frozen=True)
class Design:
    """How predictor columns become a model matrix: dummies, without the constant ones of the fit."""

    pcat: np.ndarray
    keep: np.ndarray

    def matrix(self, x: np.ndarray) -> np.ndarray:
        return _dummies(x, self.pcat)[:, self.keep]


def _design(x: np.ndarray, pcat: np.ndarray, y: np.ndarray) -> tuple[Design, np.ndarray]:
    """The dummy matrix and the columns synthpop's ``remove.lindep.syn`` keeps for response ``y``."""
    full = _dummies(x, np.asarray(pcat))
    keep = lindep_keep(full, y)
    return Design(np.asarray(pcat), keep), full[:, keep]


def decimals(y: np.ndarray) -> int:
    """The largest number of decimal places among ``y`` (synthpop's ``decimalplaces``), at most 15."""
    for d in range(16):
        if np.all(np.abs(np.round(y, d) - y) <= 1e-9 * np.maximum(1.0, np.abs(y))):
            return d
    return 15


def _ridge_fit(y: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, float]:
    """``.norm.fix.syn``: ridge-stabilised least squares and synthpop's residual SD."""
    xtx = x.T @ x
    v = np.linalg.inv(xtx + np.diag(RIDGE * np.diag(xtx)))
    beta = v @ (x.T @ y)
    resid = y - x @ beta
    return beta, float(np.sqrt(np.sum(resid**2) / (len(y) - x.shape[1] - 1)))


def _augment(y: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``augment.syn``: pseudo-records at each predictor's mean +- sd/2 for every class."""
    icod = np.unique(y)
    ki, p = len(icod), x.shape[1]
    if p == 0 or len(y) == 1:
        return y, x, np.ones(len(y))
    nr = 2 * p * ki
    mean = x.mean(axis=0)
    sd = x.std(axis=0, ddof=1)
    pattern = np.concatenate([np.tile([0.5, -0.5], ki), np.zeros(nr)])
    b = np.resize(pattern, nr * p).reshape(p, nr).T  # R fills column by column, recycling
    d = np.clip(mean[None, :] + b * sd[None, :], x.min(axis=0), x.max(axis=0))
    e = np.tile(np.repeat(icod, 2), p)
    w = np.concatenate([np.ones(len(y)), np.full(nr, (p + 1) / nr)])
    return np.concatenate([y, e]), np.vstack([x, d]), w


def _logistic_irls(x: np.ndarray, y: np.ndarray, w: np.ndarray, maxit: int = 25, eps: float = 1e-8) -> np.ndarray:
    """R's ``glm.fit`` for the binomial logit: IRLS until |dev - dev_old| / (|dev| + 0.1) < eps."""
    mu = (w * y + 0.5) / (w + 1)
    eta = np.log(mu / (1 - mu))
    dev_old = np.inf
    beta = np.zeros(x.shape[1])
    for _ in range(maxit):
        var = mu * (1 - mu)
        z = eta + (y - mu) / var
        sw = np.sqrt(w * var)
        beta = np.linalg.lstsq(x * sw[:, None], z * sw, rcond=None)[0]
        eta = x @ beta
        mu = special.expit(eta)
        with np.errstate(divide="ignore", invalid="ignore"):
            dev = 2 * np.sum(w * (special.xlogy(y, y / mu) + special.xlogy(1 - y, (1 - y) / (1 - mu))))
        if abs(dev - dev_old) / (abs(dev) + 0.1) < eps:
            break
        dev_old = dev
    return beta


def _multinom(x: np.ndarray, yk: np.ndarray, w: np.ndarray, k: int) -> np.ndarray:
    """Multinomial logit MLE (class 0 the reference): coefficients (ncol(x), k - 1)."""
    onehot = (yk[:, None] == np.arange(k)[None, :]).astype(float)

    def nll(theta: np.ndarray) -> tuple[float, np.ndarray]:
        b = theta.reshape(x.shape[1], k - 1)
        eta = np.hstack([np.zeros((len(x), 1)), x @ b])
        logp = eta - special.logsumexp(eta, axis=1, keepdims=True)
        grad = x.T @ (w[:, None] * (np.exp(logp) - onehot))[:, 1:]
        return float(-np.sum(w[:, None] * onehot * logp)), grad.ravel()

    from scipy import optimize  # on first use: loading scipy.optimize costs about a second

    res = optimize.minimize(
        nll,
        np.zeros(x.shape[1] * (k - 1)),
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": 1000, "ftol": 1e-10, "gtol": 1e-8},
    )
    return res.x.reshape(x.shape[1], k - 1)


@dataclass(frozen=True)
class ParametricFit:
    """A fitted parametric model; :meth:`draw` gives synthetic values for predictor rows ``xp``."""

    method: str
    design: Design
    beta: np.ndarray
    sigma: float = 0.0
    decimals: int = 0
    #: normrank: the sorted original values; logreg/polyreg: the class codes
    values: np.ndarray | None = None
    #: logreg: predictor means (centring); polyreg: (min, range) of rescaled columns
    shift: np.ndarray | None = None
    scale: np.ndarray | None = None

    def draw(self, xp: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        d = self.design.matrix(xp)
        if self.shift is not None:
            d = (d - self.shift) / self.scale
        d = np.hstack([np.ones((len(d), 1)), d])
        if self.method == "norm":
            return np.round(d @ self.beta + rng.standard_normal(len(d)) * self.sigma, self.decimals)
        if self.method == "normrank":
            assert self.values is not None
            n = len(self.values)
            pred = d @ self.beta + rng.standard_normal(len(d)) * self.sigma
            idx = np.clip(np.round(special.ndtr(pred) * (n + 1)), 1, n).astype(np.int64)
            return self.values[idx - 1]
        assert self.values is not None
        if self.method == "logreg":
            p = special.expit(d @ self.beta)
            return np.where(rng.random(len(d)) <= p, self.values[1], self.values[0])
        eta = np.hstack([np.zeros((len(d), 1)), d @ self.beta])
        prob = special.softmax(eta, axis=1)
        u = rng.random(len(d))
        idx = np.minimum((np.cumsum(prob, axis=1) < u[:, None]).sum(axis=1), prob.shape[1] - 1)
        return self.values[idx]


def fit_parametric(method: str, x: np.ndarray, pcat: np.ndarray, y: np.ndarray, ncat: int) -> ParametricFit:
    """Fit ``method`` to the response ``y`` (numeric values, or factor codes when ``ncat > 0``)."""
    design, xd = _design(x, pcat, np.unique(y, return_inverse=True)[1] if ncat else y)
    if method in ("norm", "normrank"):
        xi = np.hstack([np.ones((len(xd), 1)), xd])
        if method == "norm":
            beta, sigma = _ridge_fit(y, xi)
            return ParametricFit(method, design, beta, sigma, decimals=decimals(y))
        from scipy.stats import rankdata  # on first use: loading scipy.stats costs about a second

        z = special.ndtri(rankdata(y) / (len(y) + 1))
        beta, sigma = _ridge_fit(z, xi)
        return ParametricFit(method, design, beta, sigma, values=np.sort(y))
    classes, yk = np.unique(y.astype(np.int64), return_inverse=True)
    if method == "logreg":
        mean = xd.mean(axis=0)
        xc = xd - mean
        ya, xa, w = _augment(yk.astype(float), xc)
        beta = _logistic_irls(np.hstack([np.ones((len(xa), 1)), xa]), (ya == 1).astype(float), w)
        return ParametricFit(method, design, beta, values=classes.astype(float), shift=mean, scale=np.ones_like(mean))
    ya, xa, w = _augment(yk, xd)
    numeric = np.repeat(np.asarray(pcat) == 0, [1 if c == 0 else max(int(c) - 1, 0) for c in pcat])[design.keep]
    lo, hi = xa.min(axis=0), xa.max(axis=0)
    rescale = numeric & ((lo < 0) | (hi > 1)) & (hi > lo)
    shift = np.where(rescale, lo, 0.0)
    scale = np.where(rescale, hi - lo, 1.0)
    xs = np.hstack([np.ones((len(xa), 1)), (xa - shift) / scale])
    beta = _multinom(xs, ya.astype(np.int64), w, len(classes))
    return ParametricFit(method, design, beta, values=classes.astype(float), shift=shift, scale=scale)
