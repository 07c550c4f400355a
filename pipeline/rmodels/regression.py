"""The data side of R's ``lm``, ``glm`` (binomial logit, Poisson log), ``nnet::multinom`` and
``MASS::polr`` fits: the model of a main-effects formula, its complete records as a model matrix,
and what one partition contributes to a pass over the records (:func:`model_pass`, summed in
partition order by :func:`combine_model_passes`): ``X'WX``-type sums, R factors, objectives and
gradients.  The iterations that consume the passes are in :mod:`pipeline.rmodels.fitting`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import scipy.linalg as sla
from scipy import special

from pipeline.rmodels.design import Design, Predictor
from pipeline.rmodels.glm import EPS, THRESH, mu_eta

#: MASS::ginv's tolerance
GINV_TOL = float(np.sqrt(np.finfo(float).eps))


class ModelDataError(ValueError):
    """Records a model cannot be fitted to (the message names the variable, never a value)."""


@dataclass(frozen=True)
class RegressionSpec:
    """A main-effects model ``response ~ x1 + x2 + ...`` as R's formula code builds it.

    Attributes
    ----------
    kind : {"lm", "logit", "poisson", "multinom", "polr"}
    response : str
    transform : {"identity", "log"}
        Applied to a numeric response (``log(income) ~ ...``).
    response_levels : tuple of str or None
        The levels of a factor response (``None`` for a numeric one).
    design : Design
        The predictors' model matrix (main effects, R's default contrasts, intercept first).
    """

    kind: str
    response: str
    transform: str
    response_levels: tuple[str, ...] | None
    design: Design
    #: binomial response from a factor: level codes ``>= split`` are successes (R: every level
    #: but the first; MASS's polr start: the levels above the middle cut)
    split: int = 1

    @classmethod
    def build(cls, kind: str, response: str, transform: str, response_levels: Sequence[str] | None,
              predictors: Sequence[Predictor]) -> RegressionSpec:  # fmt: skip
        design = Design.build(predictors, maxorder=0)
        return cls(kind, response, transform, None if response_levels is None else tuple(response_levels), design)

    @property
    def columns(self) -> list[str]:
        """The variables a partition must hold (response first)."""
        return [self.response, *(p.name for p in self.design.predictors)]

    @property
    def x_names(self) -> tuple[str, ...]:
        """Columns of the model matrix; polr has no intercept column (the cut points take its place)."""
        names = self.design.names
        return names[1:] if self.kind == "polr" else names

    @property
    def n_classes(self) -> int:
        return len(self.response_levels or ())


def _columns(part: pd.DataFrame, spec: RegressionSpec) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """The predictors (factor codes or values), the response and which records are complete."""
    ok = np.ones(len(part), dtype=bool)
    cols = []
    for p in spec.design.predictors:
        if p.is_factor:
            codes = part[p.name].cat.codes.to_numpy()
            ok &= codes >= 0
            cols.append(codes)
        else:
            values = part[p.name].to_numpy(dtype=float)
            ok &= ~np.isnan(values)
            cols.append(values)
    if spec.response_levels is not None:
        y = part[spec.response].cat.codes.to_numpy().astype(float)
        ok &= y >= 0
    else:
        y = part[spec.response].to_numpy(dtype=float)
        if spec.transform == "log":
            with np.errstate(divide="ignore", invalid="ignore"):
                y = np.log(y)
        ok &= ~np.isnan(y)
    return cols, y, ok


def model_arrays(part: pd.DataFrame, spec: RegressionSpec) -> tuple[np.ndarray, np.ndarray]:
    """The model matrix and response of one partition's complete records (R's ``na.omit``).

    A factor response becomes its 0-based level code (binomial: 1 for the levels from
    ``spec.split`` on — R's "first level is failure"); a numeric one is transformed first
    (``log``), and a record whose response or predictor is missing (or ``log`` of a negative
    number, NaN in R as here) is dropped.  Infinite values are an error, as in ``lm.fit`` /
    ``glm.fit``.
    """
    cols, y, ok = _columns(part, spec)
    if not ok.all():
        cols = [c[ok] for c in cols]
        y = y[ok]
    if spec.kind == "logit" and spec.response_levels is not None:
        y = (y >= spec.split).astype(float)
    for p, c in zip(spec.design.predictors, cols, strict=True):
        if not p.is_factor and not np.isfinite(c).all():
            raise ModelDataError(f"predictor {p.name!r} has infinite values")
    if not np.isfinite(y).all():
        raise ModelDataError(f"response {spec.response!r} has infinite values (after {spec.transform})")
    x = _main_effects(spec.design, cols, len(y))
    if spec.kind == "polr":
        x = x[:, 1:]
    return x, y


def _main_effects(design: Design, cols: Sequence[np.ndarray], n: int) -> np.ndarray:
    """``model.matrix`` of a main-effects design (:meth:`Design.matrix`'s columns), built directly:
    a treatment-coded factor sets one 1 per record instead of indexing its contrast matrix."""
    x = np.zeros((n, design.n_columns))
    x[:, 0] = 1.0
    rows = np.arange(n)
    for p, c, (start, stop) in zip(design.predictors, cols, design.blocks, strict=True):
        if not p.is_factor:
            x[:, start] = c
        elif p.ordered:
            x[:, start:stop] = p.basis()[0][c]
        else:
            coded = c > 0
            x[rows[coded], start + c[coded].astype(np.int64) - 1] = 1.0
    return x


def level_counts(part: pd.DataFrame, spec: RegressionSpec) -> np.ndarray:
    """Complete records per level of each factor predictor, then of a factor response (one array,
    in that order): what a written coefficient name may reveal about rare levels."""
    cols, y, ok = _columns(part, spec)
    factors = [(c, len(p.levels)) for p, c in zip(spec.design.predictors, cols, strict=True) if p.is_factor]
    if spec.response_levels is not None:
        factors.append((y.astype(np.int64), len(spec.response_levels)))
    counts = [np.bincount(c[ok], minlength=n) for c, n in factors]
    return np.concatenate(counts) if counts else np.zeros(0, dtype=np.int64)


# ---------------------------------------------------------------------------------------------
# R's families (src/library/stats/R/family.R, src/library/stats/src/family.c)
# ---------------------------------------------------------------------------------------------
def _logit_linkinv(eta: np.ndarray) -> np.ndarray:
    e = np.where(eta < -THRESH, EPS, np.where(eta > THRESH, 1 / EPS, np.exp(np.clip(eta, -THRESH, THRESH))))
    return e / (1 + e)


def _glm_pieces(kind: str, eta: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``mu``, ``mu.eta`` and the variance at ``eta``."""
    if kind == "logit":
        mu = _logit_linkinv(eta)
        return mu, mu_eta(eta), mu * (1 - mu)
    mu = np.maximum(np.exp(eta), EPS)
    return mu, mu, mu


def _glm_start_eta(kind: str, y: np.ndarray) -> np.ndarray:
    """``linkfun(mustart)``: binomial ``(y + 0.5) / 2``, Poisson ``y + 0.1``."""
    if kind == "logit":
        mustart = (y + 0.5) / 2
        return np.log(mustart / (1 - mustart))
    return np.log(y + 0.1)


def _glm_deviance(kind: str, y: np.ndarray, mu: np.ndarray) -> float:
    if kind == "logit":
        return float(np.sum(np.where(y > 0, -2 * np.log(mu), -2 * np.log1p(-mu))))
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(y > 0, y * np.log(y / mu) - (y - mu), mu)
    return float(2 * np.sum(r))


def _r_factor(a: np.ndarray) -> np.ndarray:
    """The R factor of ``a`` (``min(rows, cols)`` rows; zero rows for an empty block)."""
    if a.shape[0] == 0:
        return np.zeros((0, a.shape[1]))
    return sla.qr(a, mode="r", check_finite=False)[0][: min(a.shape)]


def _stacked_r(factors: Sequence[np.ndarray], width: int) -> np.ndarray:
    stacked = np.vstack([f for f in factors if f.shape[0]] or [np.zeros((0, width))])
    return _r_factor(stacked) if stacked.shape[0] > 1 or len(factors) > 1 else stacked


# ---------------------------------------------------------------------------------------------
# one pass over one partition
# ---------------------------------------------------------------------------------------------
def model_pass(part: pd.DataFrame, spec: RegressionSpec, mode: str, theta: np.ndarray | None) -> dict[str, Any]:
    """The sums one partition contributes to the requested pass.

    ``mode``: ``"gram"`` (lm: ``X'X``, ``X'r`` and ``r'r`` for the residuals ``r`` at ``theta``,
    or ``y`` when ``theta`` is ``None``; glm: ``X'WX`` and ``X'W(z - eta)`` at ``theta``, or
    ``X'Wz`` at R's start when it is ``None``, with the deviance there), ``"qr"`` (lm: the R
    factor of ``[X | y]``; glm: of ``sqrt(W) [X | z]``), ``"levels"``
    (:func:`level_counts`), ``"multinom_objective"`` (nnet's criterion, minus the log-likelihood,
    and its gradient at ``theta``), ``"multinom_information"`` (the Hessian of that criterion) or ``"polr_objective"``
    (MASS's ``fmin`` and ``gmin`` at each row of ``theta``).
    """
    if mode == "levels":
        return {"levels": level_counts(part, spec)}
    x, y = model_arrays(part, spec)
    out: dict[str, Any] = {"n": len(y)}
    if mode == "gram" and spec.kind == "lm":
        out["g"] = x.T @ x
        residual = y if theta is None else y - x @ theta
        out["s"] = x.T @ residual
        out["rss"] = float(residual @ residual)
    elif mode == "gram":
        eta = _glm_start_eta(spec.kind, y) if theta is None else x @ theta
        mu, me, var = _glm_pieces(spec.kind, eta)
        w = me * me / var
        z = (y - mu) / me  # the working response minus eta; at the start the whole of it
        if theta is None:
            z = z + eta
        out["g"] = (x * w[:, None]).T @ x
        out["s"] = x.T @ (w * z)
        out["dev"] = _glm_deviance(spec.kind, y, mu)
    elif mode == "qr" and spec.kind == "lm":
        out["r"] = _r_factor(np.column_stack([x, y]))
    elif mode == "qr":
        eta = _glm_start_eta(spec.kind, y) if theta is None else x @ theta
        mu, me, var = _glm_pieces(spec.kind, eta)
        w = np.sqrt(me * me / var)
        z = eta + (y - mu) / me
        out["r"] = _r_factor(np.column_stack([x * w[:, None], z * w]))
        out["dev"] = _glm_deviance(spec.kind, y, mu)
    elif mode.startswith("multinom"):
        b = theta.reshape(spec.n_classes - 1, -1)
        out.update(_multinom_information(x, b) if mode == "multinom_information" else _multinom_objective(x, y, b))
    else:
        values, grads = zip(*(_polr_objective(x, y.astype(np.int64), t) for t in theta), strict=True)
        out["value"], out["grad"] = np.array(values), np.array(grads)
    return out


def combine_model_passes(results: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The partitions' results of one pass, summed (R factors stacked and re-factorised) in order."""
    out: dict[str, Any] = {}
    for key in results[0]:
        if key == "r":
            width = results[0]["r"].shape[1]
            out["r"] = _stacked_r([r["r"] for r in results], width)
        else:
            out[key] = sum(r[key] for r in results[1:]) + results[0][key]
    return out


# ---------------------------------------------------------------------------------------------
# the fits
# ---------------------------------------------------------------------------------------------
@dataclass
class FittedModel:
    """What ``summary()`` of R's fit gives: names, estimates, their covariance and the fit's facts."""

    names: tuple[str, ...]
    coefficients: np.ndarray
    vcov: np.ndarray
    nobs: int
    #: lm: residual degrees of freedom (the t distribution of its tests); else None (normal)
    df_residual: int | None = None
    facts: dict[str, float] = field(default_factory=dict)

    @property
    def se(self) -> np.ndarray:
        return np.sqrt(np.diag(self.vcov))


#: the objective and its gradient at a point
Evaluation = tuple[float, np.ndarray]
#: what a fit asks for: the model whose records to read, the pass, its parameters
Request = tuple[RegressionSpec, str, np.ndarray | None]


def ginv(a: np.ndarray, tol: float = GINV_TOL) -> tuple[np.ndarray, int]:
    """``MASS::ginv``: the Moore-Penrose inverse dropping singular values ``<= tol * largest``, and its rank."""
    u, d, vt = np.linalg.svd(a)
    keep = d > max(tol * d[0], 0.0) if d.size else np.zeros(0, dtype=bool)
    return (vt[keep].T * (1 / d[keep])) @ u[:, keep].T, int(keep.sum())


def _multinom_probabilities(x: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Linear predictors (reference level first, 0) and their log-sum-exp."""
    eta = np.column_stack([np.zeros(x.shape[0]), x @ b.T])
    return eta, special.logsumexp(eta, axis=1)


def _multinom_objective(x: np.ndarray, y: np.ndarray, b: np.ndarray) -> dict[str, Any]:
    """nnet's criterion for a softmax fit (minus the log-likelihood) and its gradient in ``b``
    (``(K - 1) x p``, level-major like synthpop's ``level:coef`` names)."""
    codes = y.astype(np.int64)
    eta, lse = _multinom_probabilities(x, b)
    prob = np.exp(eta - lse[:, None])[:, 1:]
    onehot = np.zeros_like(prob)
    rows = np.flatnonzero(codes > 0)
    onehot[rows, codes[rows] - 1] = 1.0
    value = -float(np.sum(eta[np.arange(len(codes)), codes] - lse))
    return {"value": value, "grad": ((prob - onehot).T @ x).reshape(-1)}


def _multinom_information(x: np.ndarray, b: np.ndarray) -> dict[str, Any]:
    """The Hessian of the criterion (``nnet:::multinomHess``): blocks ``X' diag(p_j (d_jl - p_l)) X``."""
    k1, p = b.shape
    eta, lse = _multinom_probabilities(x, b)
    prob = np.exp(eta - lse[:, None])[:, 1:]
    info = np.empty((k1 * p, k1 * p))
    for j in range(k1):
        for m in range(j, k1):
            block = (x * (prob[:, j] * ((j == m) - prob[:, m]))[:, None]).T @ x
            info[j * p : (j + 1) * p, m * p : (m + 1) * p] = block
            info[m * p : (m + 1) * p, j * p : (j + 1) * p] = block.T
    return {"info": info}


def _polr_objective(x: np.ndarray, y: np.ndarray, s: np.ndarray) -> tuple[float, np.ndarray]:
    """MASS's ``fmin`` and ``gmin`` (logistic) at ``s = (beta, theta)``; ``y`` the 0-based level."""
    pc = x.shape[1]
    theta = s[pc:]
    q = len(theta)
    with np.errstate(over="ignore"):  # a trial step of the line search may overflow: value Inf, rejected
        gamm = np.concatenate([[-np.inf], np.cumsum(np.concatenate([theta[:1], np.exp(theta[1:])])), [np.inf]])
    eta = x @ s[:pc]
    z1 = np.minimum(100, gamm[y + 1] - eta)
    z2 = np.maximum(-100, gamm[y] - eta)
    pr = special.expit(z1) - special.expit(z2)
    if not np.all(pr > 0):
        return float("inf"), np.full(pc + q, np.nan)
    p1 = np.exp(-np.abs(z1)) / (1 + np.exp(-np.abs(z1))) ** 2  # dlogis, symmetric
    p2 = np.exp(-np.abs(z2)) / (1 + np.exp(-np.abs(z2))) ** 2
    g1 = x.T @ ((p1 - p2) / pr)
    # t(xx) %*% (1/pr) with xx = Y1 * p1 - Y2 * p2: level column y gets p1, column y - 1 gets -p2
    xx = (
        np.bincount(y, weights=p1 / pr, minlength=q + 1)[:q]
        - np.bincount(y, weights=p2 / pr, minlength=q + 2)[1 : q + 1]
    )
    g2 = -xx @ theta_jacobian(theta)
    return float(-np.sum(np.log(pr))), np.concatenate([g1, g2])


def theta_jacobian(theta: np.ndarray) -> np.ndarray:
    """MASS's ``jacobian``: d(cut points) / d(theta)."""
    q = len(theta)
    jac = np.zeros((q, q))
    jac[:, 0] = 1.0
    for i in range(1, q):
        jac[i:, i] = np.exp(theta[i])
    return jac
