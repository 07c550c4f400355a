"""R's ``lm``, ``glm`` (binomial logit, Poisson log), ``nnet::multinom`` and ``MASS::polr`` fits,
computed from per-partition sums so that no fit needs its records in one piece.

Every fit is a small state machine (:class:`LmFit`, :class:`GlmFit`, :class:`MultinomFit`,
:class:`PolrFit`): :meth:`request` names the next pass over the records (``None`` once finished),
:func:`model_pass` computes that pass on one partition and :func:`combine_model_passes` adds the
partitions' results in partition order; :meth:`feed` advances with the sum.  A driver runs the
passes of many fits together, one round at a time.

* ``lm`` and ``glm`` solve their least-squares problems from ``X'WX`` summed over partitions,
  factorised with its columns scaled to unit norm (the Cholesky factor is then the R factor of
  the scaled design, whose diagonal decides rank deficiency as R's pivoting does).  lm refines
  its solution once from the residuals (a second pass: the corrected semi-normal equations);
  glm takes Newton's increment form, so the rounding of one step is corrected by the next.
  When the scaled Gram is too ill-conditioned (:data:`GRAM_CONDITION`) the fit makes R's own
  computation instead: a QR per partition of ``[X | y]`` / ``sqrt(W) [X | z]``, the R factors
  stacked and re-factorised (unique up to the signs of their rows, which change neither the
  solution, ``chol2inv(R)`` nor the residual norm).
* ``glm`` follows ``glm.fit`` step by step: R's starting values (``mustart``), one weighted
  least-squares fit per round, R's convergence rule ``|dev - devold| / (|dev| + 0.1) < 1e-8``,
  and the covariance ``chol2inv(R)`` of the *last* least-squares fit (whose weights are those
  of the previous iterate, as in ``summary.glm``).
* ``multinom`` and ``polr`` run the optimiser R runs — a port of R's ``vmmin`` (BFGS), one pass
  per function evaluation (value and gradient together) — from R's starting values (nnet: zero
  weights; MASS: the slopes of a logit of the middle cut fitted by ``glm.fit``, and its spaced
  cut points) with R's settings, so they stop where R stops rather than at the exact maximum
  (nnet's ``reltol = 1e-8``, optim's ``sqrt(eps)``).  The covariance is R's:
  ``ginv`` of the analytic Hessian at the result (``multinomHess``, ``vcov.multinom``), or for
  polr ``optimHess``'s central differences of the analytic gradient with steps ``1e-3``,
  symmetrised, in MASS's parametrisation (the first cut point and the logs of the gaps), mapped
  to the cut points with MASS's Jacobian (``vcov.polr``).
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass, field, replace
from itertools import pairwise
from typing import Any

import numpy as np
import pandas as pd
import scipy.linalg as sla
from scipy import special

from pipeline.rmodels.design import Design, Predictor
from pipeline.rmodels.glm import EPS, THRESH, mu_eta

#: glm.control's defaults
GLM_EPSILON = 1e-8
GLM_MAXIT = 25
#: nnet's optimiser settings (``nnet.default``: ``maxit = 100``, ``abstol = 1e-4``, ``reltol = 1e-8``)
NNET_MAXIT, NNET_ABSTOL, NNET_RELTOL = 100, 1e-4, 1e-8
#: optim's defaults (``maxit = 100`` for BFGS, ``reltol = sqrt(eps)``, ``ndeps = 1e-3``)
OPTIM_MAXIT, OPTIM_RELTOL, OPTIM_NDEPS = 100, float(np.sqrt(np.finfo(float).eps)), 1e-3
#: the largest condition number (estimated from the scaled Cholesky factor) at which lm and glm
#: solve the normal equations; above it they make R's QR of the records instead
GRAM_CONDITION = 1e8
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


class ModelFit:
    """A fit driven by pass results (see the module docstring)."""

    spec: RegressionSpec
    result: FittedModel | None = None

    def request(self) -> Request | None:
        raise NotImplementedError

    def feed(self, res: dict[str, Any]) -> None:
        raise NotImplementedError


def _check_rank(diag: np.ndarray, names: Sequence[str], n: int) -> None:
    """R would report NA for an aliased coefficient (a pivot below ``1e-7`` of the largest, on
    columns scaled to norm 1); such a fit is refused here."""
    d = np.abs(diag)
    if n <= len(names) or len(d) < len(names) or np.any(d <= 1e-7 * np.max(d, initial=0.0)):
        raise ModelDataError(
            f"the model matrix ({len(names)} columns, {n} complete records) is rank deficient: "
            "a coefficient would be aliased (NA in R)"
        )


def _chol2inv(r: np.ndarray) -> np.ndarray:
    inv = sla.solve_triangular(r, np.eye(r.shape[0]), check_finite=False)
    return inv @ inv.T


@dataclass(frozen=True)
class GramSystem:
    """``X'WX`` of the kept columns, factorised with its columns scaled to unit diagonal (the
    Cholesky factor of the scaled Gram is the R factor of ``sqrt(W) X`` with unit-norm columns)."""

    scale: np.ndarray
    factor: np.ndarray

    @classmethod
    def of(cls, g: np.ndarray, names: Sequence[str], n: int) -> GramSystem | None:
        """The system, or ``None`` when it is too ill-conditioned for the normal equations (then
        the pass is made as a QR); rank deficiency is an error either way."""
        diag = np.diag(g)
        if np.any(diag <= 0):
            _check_rank(np.zeros(len(names)), names, n)
        scale = np.sqrt(diag)
        try:
            factor = sla.cholesky(g / scale[:, None] / scale[None, :], check_finite=False)
        except np.linalg.LinAlgError:
            return None
        d = np.abs(np.diag(factor))
        _check_rank(d, names, n)
        if (d.max() / d.min()) ** 2 > GRAM_CONDITION:
            return None
        return cls(scale, factor)

    def solve(self, rhs: np.ndarray) -> np.ndarray:
        return sla.cho_solve((self.factor, False), rhs / self.scale, check_finite=False) / self.scale

    def inverse(self) -> np.ndarray:
        return _chol2inv(self.factor) / self.scale[:, None] / self.scale[None, :]


@dataclass
class LmFit(ModelFit):
    """``lm``: the normal equations (one pass) refined once from the residuals (a second pass), or
    when they are ill-conditioned the R factor of ``[X | y]`` (one pass)."""

    spec: RegressionSpec
    result: FittedModel | None = None
    mode: str = "gram"
    system: GramSystem | None = None
    beta: np.ndarray | None = None

    def request(self) -> Request | None:
        return None if self.result is not None else (self.spec, self.mode, self.beta)

    def feed(self, res: dict[str, Any]) -> None:
        names = self.spec.x_names
        p, n = len(names), int(res["n"])
        if self.mode == "qr":
            r = res["r"]
            _check_rank(np.diag(r[:p, :p]) / np.linalg.norm(r[:p, :p], axis=0), names, n)
            beta = sla.solve_triangular(r[:p, :p], r[:p, p], check_finite=False)
            rss = float(r[p, p] ** 2) if r.shape[0] > p else 0.0
            self._finish(beta, rss, _chol2inv(r[:p, :p]), n)
        elif self.beta is None:
            self.system = GramSystem.of(res["g"], names, n)
            if self.system is None:
                self.mode = "qr"
            else:
                self.beta = self.system.solve(res["s"])
        else:  # corrected semi-normal equations: one refinement from the residuals
            step = self.system.solve(res["s"])
            rss = float(res["rss"] - 2 * res["s"] @ step + step @ res["g"] @ step)
            self._finish(self.beta + step, rss, self.system.inverse(), n)

    def _finish(self, beta: np.ndarray, rss: float, unscaled: np.ndarray, n: int) -> None:
        p = len(beta)
        sigma2 = rss / (n - p)
        facts = {"sigma": float(np.sqrt(sigma2)), "df_residual": float(n - p), "rss": rss}
        self.result = FittedModel(self.spec.x_names, beta, unscaled * sigma2, n, n - p, facts)


@dataclass
class GlmFit(ModelFit):
    """``glm.fit`` for the binomial (logit) and Poisson (log) families, one IRLS step per pass.

    Each step solves the weighted least-squares problem from ``X'WX`` (Newton's increment form,
    ``beta + (X'WX)^-1 X'W(z - eta)``: the same iterates as R's up to rounding, and the rounding
    of the normal equations does not accumulate, each step correcting the last); a Gram too
    ill-conditioned for that makes the fit switch to R's own QR of ``sqrt(W) [X | z]``.
    """

    spec: RegressionSpec
    result: FittedModel | None = None
    mode: str = "gram"
    beta: np.ndarray | None = None
    dev_old: float = float("nan")
    iteration: int = 0
    started: bool = False
    redo: bool = False
    covariance: np.ndarray | None = None

    def request(self) -> Request | None:
        return None if self.result is not None else (self.spec, self.mode, self.beta)

    def feed(self, res: dict[str, Any]) -> None:
        names = self.spec.x_names
        p, n, dev = len(names), int(res["n"]), float(res["dev"])
        if not np.isfinite(dev):
            raise ModelDataError(f"the {self.spec.kind} fit of {self.spec.response!r} has a non-finite deviance")
        if not self.started:
            self.started, self.dev_old = True, dev
        elif not self.redo:
            self.iteration += 1
            converged = abs(dev - self.dev_old) / (abs(dev) + 0.1) < GLM_EPSILON
            if converged or self.iteration >= GLM_MAXIT:
                self._finish(n, dev, converged)
                return
            self.dev_old = dev
        self.redo = False
        if self.mode == "qr":
            r = res["r"]
            _check_rank(np.diag(r[:p, :p]) / np.linalg.norm(r[:p, :p], axis=0), names, n)
            self.covariance = _chol2inv(r[:p, :p])
            self.beta = sla.solve_triangular(r[:p, :p], r[:p, p], check_finite=False)
            return
        system = GramSystem.of(res["g"], names, n)
        if system is None:  # the same pass again, as a QR
            self.mode = "qr"
            self.started = self.beta is not None
            self.redo = self.beta is not None
            return
        self.covariance = system.inverse()
        step = system.solve(res["s"])
        self.beta = step if self.beta is None else self.beta + step

    def _finish(self, n: int, dev: float, converged: bool) -> None:
        names = self.spec.x_names
        facts = {"deviance": dev, "iter": float(self.iteration), "converged": float(converged),
                 "df_residual": float(n - len(names))}  # fmt: skip
        self.result = FittedModel(names, self.beta, self.covariance, n, None, facts)


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


def vmmin(
    b: np.ndarray, maxit: int, abstol: float, reltol: float
) -> Generator[np.ndarray, Evaluation, tuple[np.ndarray, float, int, int]]:
    """R's ``vmmin`` (the BFGS of ``optim`` and of nnet), as a generator.

    It yields each point where the objective is needed and receives ``(value, gradient)`` there
    (one pass over the records gives both; ``vmmin`` only asks for a gradient at the point whose
    value it last computed).  Returns the parameters, the minimum and the counts of function and
    gradient evaluations (``optim``'s ``counts``).
    """
    stepredn, acctol, reltest = 0.2, 0.0001, 10.0
    n = len(b)
    b = np.array(b, dtype=float)
    f, g = yield b.copy()
    if not np.isfinite(f):
        raise ModelDataError("initial value in 'vmmin' is not finite")
    fmin = f
    funcount = gradcount = 1
    iteration = 1
    ilast = gradcount
    bmat = np.eye(n)
    count = 0
    while True:
        if ilast == gradcount:
            bmat = np.eye(n)
        x = b.copy()
        c = g.copy()
        t = -(bmat @ g)
        gradproj = float(np.sum(t * g))
        if gradproj < 0.0:
            steplength = 1.0
            accpoint = False
            while True:
                b = x + steplength * t
                count = int(np.sum(reltest + x == reltest + b))
                if count < n:
                    f, g_new = yield b.copy()
                    funcount += 1
                    accpoint = bool(np.isfinite(f)) and f <= fmin + gradproj * steplength * acctol
                    if not accpoint:
                        steplength *= stepredn
                if count == n or accpoint:
                    break
            enough = f > abstol and abs(f - fmin) > reltol * (abs(fmin) + reltol)
            if not enough:
                count = n
                fmin = f
            if count < n:
                fmin = f
                g = g_new
                gradcount += 1
                iteration += 1
                t = steplength * t
                c = g - c
                d1 = float(np.sum(t * c))
                if d1 > 0:
                    xv = bmat @ c
                    d2 = 1.0 + float(np.sum(xv * c)) / d1
                    bmat = bmat + (d2 * np.outer(t, t) - np.outer(xv, t) - np.outer(t, xv)) / d1
                else:
                    ilast = gradcount
            elif ilast < gradcount:
                count = 0
                ilast = gradcount
        else:
            count = 0
            if ilast == gradcount:
                count = n
            else:
                ilast = gradcount
        if iteration >= maxit:
            break
        if gradcount - ilast > 2 * n:
            ilast = gradcount
        if count == n and ilast == gradcount:
            break
    return b, fmin, funcount, gradcount


@dataclass
class OptimFit(ModelFit):
    """A fit whose optimiser (:func:`vmmin`) asks for the objective one point at a time."""

    spec: RegressionSpec
    result: FittedModel | None = None
    steps: Generator | None = None
    point: np.ndarray | None = None

    def _drive(self, res: dict[str, Any] | None) -> None:
        """Advance the optimiser with an evaluation (``None``: start it)."""
        try:
            self.point = next(self.steps) if res is None else self.steps.send((float(res["value"]), res["grad"]))
        except StopIteration as stop:
            self.point = None
            self._optimised(*stop.value)

    def _optimised(self, par: np.ndarray, value: float, fcount: int, gcount: int) -> None:
        raise NotImplementedError


@dataclass
class MultinomFit(OptimFit):
    """``nnet::multinom(Hess = TRUE)``: nnet's BFGS from zero weights (``maxit = 100``,
    ``abstol = 1e-4``, ``reltol = 1e-8``), then the analytic Hessian at the result."""

    par: np.ndarray | None = None
    facts: dict[str, float] = field(default_factory=dict)

    def request(self) -> Request | None:
        if self.result is not None:
            return None
        if self.steps is None:
            start = np.zeros((self.spec.n_classes - 1) * self.spec.design.n_columns)
            self.steps = vmmin(start, NNET_MAXIT, NNET_ABSTOL, NNET_RELTOL)
            self._drive(None)
        if self.point is not None:
            return self.spec, "multinom_objective", self.point
        return self.spec, "multinom_information", self.par

    def feed(self, res: dict[str, Any]) -> None:
        if self.point is not None:
            self._drive(res)
            return
        levels = self.spec.response_levels or ()
        names = tuple(f"{lev}:{c}" for lev in levels[1:] for c in self.spec.x_names)
        vcov, _ = ginv(res["info"])
        self.result = FittedModel(names, self.par, vcov, int(res["n"]), None, self.facts)

    def _optimised(self, par: np.ndarray, value: float, fcount: int, gcount: int) -> None:
        self.par = par
        self.facts = {"deviance": 2 * value, "fn_evals": float(fcount), "gr_evals": float(gcount),
                      "converged": float(gcount < NNET_MAXIT)}  # fmt: skip


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
    g2 = -xx @ _theta_jacobian(theta)
    return float(-np.sum(np.log(pr))), np.concatenate([g1, g2])


def _theta_jacobian(theta: np.ndarray) -> np.ndarray:
    """MASS's ``jacobian``: d(cut points) / d(theta)."""
    q = len(theta)
    jac = np.zeros((q, q))
    jac[:, 0] = 1.0
    for i in range(1, q):
        jac[i:, i] = np.exp(theta[i])
    return jac


def _difference_points(s: np.ndarray, h: float) -> np.ndarray:
    """``s``, then ``s + h e_i`` and ``s - h e_i`` for each parameter (optimHess's order)."""
    eye = np.eye(len(s)) * h
    return np.vstack([s[None, :], *[np.vstack([s + eye[i], s - eye[i]]) for i in range(len(s))]])


def _difference_hessian(grads: np.ndarray, h: float) -> np.ndarray:
    """optimHess: row i ``(g(s + h e_i) - g(s - h e_i)) / 2h``, then symmetrised."""
    k = grads.shape[1]
    hess = np.array([(grads[1 + 2 * i] - grads[2 + 2 * i]) / (2 * h) for i in range(k)])
    return 0.5 * (hess + hess.T)


@dataclass
class PolrFit(OptimFit):
    """``MASS::polr(Hess = TRUE)`` (logistic): MASS's start (a logit of the middle cut by
    ``glm.fit``), ``optim``'s BFGS in MASS's parametrisation, ``optimHess``, ``vcov.polr``."""

    start: GlmFit | None = None
    par: np.ndarray | None = None
    facts: dict[str, float] = field(default_factory=dict)

    def request(self) -> Request | None:
        if self.result is not None:
            return None
        if self.start is None:
            q1 = self.spec.n_classes // 2
            self.start = GlmFit(replace(self.spec, kind="logit", split=q1))
        if self.start.result is None:
            return self.start.request()
        if self.steps is None:
            self.steps = vmmin(self._start_values(), OPTIM_MAXIT, -np.inf, OPTIM_RELTOL)
            self._drive(None)
        if self.point is not None:
            return self.spec, "polr_objective", self.point[None, :]
        return self.spec, "polr_objective", _difference_points(self.par, OPTIM_NDEPS)

    def feed(self, res: dict[str, Any]) -> None:
        if self.start.result is None:
            self.start.feed(res)
            if self.start.result is not None and not self.start.result.facts["converged"]:
                raise ModelDataError("attempt to find suitable starting values failed (MASS::polr)")
        elif self.point is not None:
            self._drive({"value": res["value"][0], "grad": res["grad"][0]})
        else:
            self._finish(res)

    def _start_values(self) -> np.ndarray:
        """MASS's start: the logit's slopes; cut points ``-intercept + spacing - spacing[q1]``."""
        coefs = self.start.result.coefficients
        q = self.spec.n_classes - 1
        q1 = self.spec.n_classes // 2
        k = np.arange(1, q + 1) / (q + 1)
        spacing = np.log(k / (1 - k))
        gammas = -coefs[0] + spacing - spacing[q1 - 1]
        return np.concatenate([coefs[1:], gammas[:1], np.log(np.diff(gammas))])

    def _optimised(self, par: np.ndarray, value: float, fcount: int, gcount: int) -> None:
        self.par = par
        self.facts = {"deviance": 2 * value, "fn_evals": float(fcount), "gr_evals": float(gcount),
                      "converged": float(gcount < OPTIM_MAXIT)}  # fmt: skip

    def _finish(self, res: dict[str, Any]) -> None:
        pc = len(self.spec.x_names)
        vc, _ = ginv(_difference_hessian(res["grad"], OPTIM_NDEPS))
        theta = self.par[pc:]
        jac = _theta_jacobian(theta)
        a = np.eye(len(self.par))
        a[pc:, pc:] = jac
        zeta = np.cumsum(np.concatenate([theta[:1], np.exp(theta[1:])]))
        levels = self.spec.response_levels or ()
        names = (*self.spec.x_names, *(f"{lo}|{hi}" for lo, hi in pairwise(levels)))
        coef = np.concatenate([self.par[:pc], zeta])
        self.result = FittedModel(names, coef, a @ vc @ a.T, int(res["n"]), None, self.facts)


FITS: dict[str, type[ModelFit]] = {"lm": LmFit, "logit": GlmFit, "poisson": GlmFit, "multinom": MultinomFit,
                                   "polr": PolrFit}  # fmt: skip


def new_fit(spec: RegressionSpec) -> ModelFit:
    """A fresh fit of ``spec`` (its kind's state machine)."""
    return FITS[spec.kind](spec)
