"""The iterations of R's ``lm``, ``glm`` (binomial logit, Poisson log), ``nnet::multinom`` and
``MASS::polr`` fits, fed with per-partition sums (:mod:`pipeline.rmodels.regression`).

Every fit is a small state machine (:class:`LmFit`, :class:`GlmFit`, :class:`MultinomFit`,
:class:`PolrFit`): :meth:`request` names the next pass over the records (``None`` once finished),
:func:`~pipeline.rmodels.regression.model_pass` computes that pass on one partition and
:func:`~pipeline.rmodels.regression.combine_model_passes` adds the partitions' results in
partition order; :meth:`feed` advances with the sum.  A driver runs the
passes of many fits together, one round at a time.

* ``lm`` and ``glm`` solve their least-squares problems from ``X'WX`` summed over partitions,
  factorised with its columns scaled to unit norm (the Cholesky factor is then the R factor of
  the scaled design; a column of zeros is aliased, any other near dependence sends the pass to
  the QR below, where R's pivoting (``dqrdc2``) decides; an aliased coefficient is NaN, R's NA).  lm refines
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

from abc import ABC, abstractmethod
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field, replace
from itertools import pairwise
from typing import Any, ClassVar

import numpy as np
import scipy.linalg as sla

from pipeline.rmodels.glm import dqrdc2_kept
from pipeline.rmodels.regression import (
    Evaluation,
    FittedModel,
    ModelDataError,
    RegressionSpec,
    Request,
    ginv,
    theta_jacobian,
)

#: glm.control's defaults
GLM_EPSILON = 1e-8
GLM_MAXIT = 25
#: nnet's optimiser settings (``nnet.default``: ``maxit = 100``, ``abstol = 1e-4``, ``reltol = 1e-8``)
NNET_MAXIT, NNET_ABSTOL, NNET_RELTOL = 100, 1e-4, 1e-8
#: optim's defaults (``maxit = 100`` for BFGS, ``reltol = sqrt(eps)``, ``ndeps = 1e-3``)
OPTIM_MAXIT, OPTIM_RELTOL, OPTIM_NDEPS = 100, float(np.sqrt(np.finfo(float).eps)), 1e-3
#: ``dqrdc2``'s tolerance: lm's ``qr(tol = 1e-7)``; glm.fit's ``min(1e-7, epsilon / 1000)``
LM_TOL, GLM_TOL = 1e-7, min(1e-7, GLM_EPSILON / 1000)
#: the largest condition number (estimated from the scaled Cholesky factor) at which lm and glm
#: solve the normal equations; above it they make R's QR of the records instead
GRAM_CONDITION = 1e8


class ModelFit(ABC):
    """A fit driven by pass results (see the module docstring)."""

    spec: RegressionSpec
    result: FittedModel | None = None

    @abstractmethod
    def request(self) -> Request | None:
        """The next pass (the model, the pass's mode, its parameters), ``None`` once finished."""

    @abstractmethod
    def feed(self, res: dict[str, Any]) -> None:
        """Advance with the combined result of the requested pass."""


def _check_rank(rank: int, names: Sequence[str], n: int) -> None:
    """A fit needs an estimable coefficient and more complete records than estimable coefficients."""
    if rank == 0 or n <= rank:
        raise ModelDataError(
            f"the model matrix ({len(names)} columns, {rank} estimable, {n} complete records) leaves no residual "
            "degrees of freedom"
        )


def _pivoted(r: np.ndarray, p: int, tol: float) -> tuple[np.ndarray, np.ndarray]:
    """R's pivoting (``dqrdc2``) on the R factor of ``[X | y]``: the kept columns and the R factor of
    ``[X_kept | y]`` (the R factor itself when nothing is aliased)."""
    kept = dqrdc2_kept(r[:, :p], tol)
    if len(kept) == p:
        return kept, r
    return kept, np.linalg.qr(r[:, [*kept.tolist(), p]], mode="r")


def _on_kept(kept: np.ndarray, p: int, values: np.ndarray, fill: float) -> np.ndarray:
    """A vector (or square matrix) over the kept columns spread over all ``p`` (``fill`` elsewhere)."""
    if values.ndim == 1:
        out = np.full(p, fill)
        out[kept] = values
    else:
        out = np.full((p, p), fill)
        out[np.ix_(kept, kept)] = values
    return out


def _chol2inv(r: np.ndarray) -> np.ndarray:
    inv = sla.solve_triangular(r, np.eye(r.shape[0]), check_finite=False)
    return inv @ inv.T


@dataclass(frozen=True)
class GramSystem:
    """``X'WX`` of the kept columns, factorised with its columns scaled to unit diagonal (the
    Cholesky factor of the scaled Gram is the R factor of ``sqrt(W) X`` with unit-norm columns).

    A column of zeros is aliased (``dqrdc2``: a column whose norm is 0); any other near
    dependence makes the system too ill-conditioned, and the pass is then made as a QR, where
    R's pivoting decides.
    """

    scale: np.ndarray
    factor: np.ndarray
    kept: np.ndarray
    p: int

    @classmethod
    def of(cls, g: np.ndarray, names: Sequence[str], n: int) -> GramSystem | None:
        """The system, or ``None`` when it is too ill-conditioned for the normal equations (then
        the pass is made as a QR)."""
        diag = np.diag(g)
        kept = np.flatnonzero(diag > 0)
        _check_rank(len(kept), names, n)
        scale = np.sqrt(diag[kept])
        try:
            factor = sla.cholesky(g[np.ix_(kept, kept)] / scale[:, None] / scale[None, :], check_finite=False)
        except np.linalg.LinAlgError:
            return None
        d = np.abs(np.diag(factor))
        if (d.max() / d.min()) ** 2 > GRAM_CONDITION:
            return None
        return cls(scale, factor, kept, len(names))

    def solve(self, rhs: np.ndarray) -> np.ndarray:
        """The solution on every column (0 for an aliased one)."""
        kept = sla.cho_solve((self.factor, False), rhs[self.kept] / self.scale, check_finite=False) / self.scale
        return _on_kept(self.kept, self.p, kept, 0.0)

    def inverse(self) -> np.ndarray:
        """``(X'WX)^-1`` on the kept columns, NaN in the rows and columns of aliased ones."""
        return _on_kept(self.kept, self.p, _chol2inv(self.factor) / self.scale[:, None] / self.scale[None, :], np.nan)


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
            kept, r = _pivoted(res["r"], p, LM_TOL)
            q = len(kept)
            _check_rank(q, names, n)
            beta = sla.solve_triangular(r[:q, :q], r[:q, q], check_finite=False)
            rss = float(r[q, q] ** 2) if r.shape[0] > q else 0.0
            self._finish(_on_kept(kept, p, beta, 0.0), rss, _on_kept(kept, p, _chol2inv(r[:q, :q]), np.nan), n)
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
        aliased = np.isnan(np.diag(unscaled))
        rank = int((~aliased).sum())
        sigma2 = rss / (n - rank)
        facts = {"sigma": float(np.sqrt(sigma2)), "df_residual": float(n - rank), "rss": rss}
        coef = np.where(aliased, np.nan, beta)  # R: NA for an aliased coefficient
        self.result = FittedModel(self.spec.x_names, coef, unscaled * sigma2, n, n - rank, facts)


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
            kept, r = _pivoted(res["r"], p, GLM_TOL)
            q = len(kept)
            _check_rank(q, names, n)
            self.covariance = _on_kept(kept, p, _chol2inv(r[:q, :q]), np.nan)
            self.beta = _on_kept(kept, p, sla.solve_triangular(r[:q, :q], r[:q, q], check_finite=False), 0.0)
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
        aliased = np.isnan(np.diag(self.covariance))
        facts = {"deviance": dev, "iter": float(self.iteration), "converged": float(converged),
                 "df_residual": float(n - int((~aliased).sum()))}  # fmt: skip
        coef = np.where(aliased, np.nan, self.beta)  # R: NA for an aliased coefficient
        self.result = FittedModel(self.spec.x_names, coef, self.covariance, n, None, facts)


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

    #: the optimiser's iteration limit (R's ``maxit``)
    maxit: ClassVar[int]

    spec: RegressionSpec
    result: FittedModel | None = None
    steps: Generator | None = None
    point: np.ndarray | None = None
    #: the optimiser's result and facts (deviance, counts of evaluations, converged)
    par: np.ndarray | None = None
    facts: dict[str, float] = field(default_factory=dict)

    def _drive(self, res: dict[str, Any] | None) -> None:
        """Advance the optimiser with an evaluation (``None``: start it)."""
        try:
            self.point = next(self.steps) if res is None else self.steps.send((float(res["value"]), res["grad"]))
        except StopIteration as stop:
            self.point = None
            par, value, fcount, gcount = stop.value
            self.par = par
            self.facts = {"deviance": 2 * value, "fn_evals": float(fcount), "gr_evals": float(gcount),
                          "converged": float(gcount < self.maxit)}  # fmt: skip


@dataclass
class MultinomFit(OptimFit):
    """``nnet::multinom(Hess = TRUE)``: nnet's BFGS from zero weights (``maxit = 100``,
    ``abstol = 1e-4``, ``reltol = 1e-8``), then the analytic Hessian at the result."""

    maxit = NNET_MAXIT

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

    maxit = OPTIM_MAXIT
    start: GlmFit | None = None

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
            if self.start.result is not None and np.isnan(self.start.result.coefficients).any():
                raise ModelDataError("the model matrix is rank deficient: a coefficient is aliased (polr drops it)")
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

    def _finish(self, res: dict[str, Any]) -> None:
        pc = len(self.spec.x_names)
        vc, _ = ginv(_difference_hessian(res["grad"], OPTIM_NDEPS))
        theta = self.par[pc:]
        jac = theta_jacobian(theta)
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
