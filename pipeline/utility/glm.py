"""Logistic regression by IRLS that reproduces R's ``glm.fit`` (binomial, logit link).

The iteration is R's: start from ``mustart = (w y + 0.5) / (w + 1)``; at each step solve the
weighted least-squares problem of the working response; stop when
``|dev - dev_old| / (|dev| + 0.1) < epsilon`` (``glm.control``: ``epsilon = 1e-8``) or after
``maxit`` steps; R's thresholds in the logit link (``|eta| > 30``) are kept, so separated data
converge the way R does instead of diverging.

Distributed form: the stacked records are split into partitions (Dask) or handled as one
partition (pandas).  Every pass over the partitions evaluates the current coefficients and
returns, per partition, the deviance and the pieces of the next least-squares problem, which
are summed:

* the first pass returns the R factor of ``sqrt(W) [X | z]`` (a tall-skinny QR, combined by
  stacking and re-factorising).  R's ``glm.fit`` decides here which columns are aliased: a
  pivoted QR (LINPACK ``dqrdc2``) moves a column to the end when its norm after projection
  on the previous columns falls below ``1e-11`` times its original norm (``min(1e-7,
  epsilon / 1000)``).  The same rule is applied to the combined R factor, which has the same
  column norms and projections as ``sqrt(W) X``, so the same columns are dropped, in the
  same order;
* the later passes return ``X'WX`` and ``X'W(z - X beta)`` for the kept columns (Newton's
  increment form, which converges to the same fixed point as R's solution of the normal
  equations); if ``X'WX`` is not numerically positive definite (separation), that pass is
  redone with the QR form.

``predicted probabilities`` are ``linkinv(X beta)`` with ``eta`` accumulated column by
column, so identical records get identical scores whatever the partition (ties matter for
SPECKS and U).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import scipy.linalg as sla
from threadpoolctl import threadpool_limits

from pipeline.utility.design import Design

EPS = np.finfo(float).eps
THRESH = 30.0
LABEL = "__t__"
WEIGHT = "__w__"
FREQ = "__f__"
CHUNK_ROWS = 65_536


# ---------------------------------------------------------------------------------------------
# R's binomial family with logit link (src/library/stats/src/family.c)
# ---------------------------------------------------------------------------------------------
def linkinv(eta: np.ndarray) -> np.ndarray:
    tmp = np.where(eta < -THRESH, EPS, np.where(eta > THRESH, 1 / EPS, np.exp(np.clip(eta, -THRESH, THRESH))))
    return tmp / (1 + tmp)


def mu_eta(eta: np.ndarray) -> np.ndarray:
    e = np.exp(np.clip(eta, -THRESH, THRESH))
    out = e / ((1 + e) * (1 + e))
    return np.where((eta > THRESH) | (eta < -THRESH), EPS, out)


def linkfun(mu: np.ndarray) -> np.ndarray:
    return np.log(mu / (1 - mu))


def dev_resids(y: np.ndarray, mu: np.ndarray, wt: np.ndarray) -> np.ndarray:
    """Binomial deviance residuals for 0/1 responses (``y log(y/mu)`` is 0 when y = 0)."""
    return 2 * wt * np.where(y > 0, -np.log(mu), -np.log(1 - mu))


# ---------------------------------------------------------------------------------------------
# model specification and the partition kernel
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ModelSpec:
    """What a kernel needs to build design rows from a prepared partition.

    Attributes
    ----------
    design : Design
    columns : tuple of str
        Column of the partition holding each predictor.
    lookups : tuple
        For a factor predictor, an int array mapping the prepared (global) level code to the
        level index in the stacked data; ``None`` for numeric predictors.
    """

    design: Design
    columns: tuple[str, ...]
    lookups: tuple[np.ndarray | None, ...]

    def matrix(self, part: pd.DataFrame, start: int, stop: int) -> np.ndarray:
        cols = []
        for name, lookup in zip(self.columns, self.lookups, strict=True):
            values = part[name].to_numpy()[start:stop]
            cols.append(values if lookup is None else lookup[values])
        return self.design.matrix(cols)


def draw_labels(label_spec: Any, n: int, default: np.ndarray) -> np.ndarray:
    """The response of a partition: stored labels, given labels, or a seeded random relabelling.

    ``label_spec`` is ``None`` (use ``default``), an array, ``("perm", seed_seq, n_ones)`` (a
    uniformly random choice of ``n_ones`` records labelled 1) or ``("bernoulli", seed_seq)``.
    """
    if label_spec is None:
        return default
    if isinstance(label_spec, np.ndarray):
        return label_spec
    kind, seed = label_spec[0], label_spec[1]
    rng = np.random.default_rng(seed)
    if kind == "perm":
        out = np.zeros(n, dtype=float)
        out[rng.choice(n, size=int(label_spec[2]), replace=False)] = 1.0
        return out
    return rng.integers(0, 2, size=n).astype(float)


def _eta(x: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """``x @ beta`` accumulated column by column (identical rows give identical results)."""
    eta = x[:, 0] * beta[0]
    for j in range(1, x.shape[1]):
        if beta[j] != 0.0:
            eta = eta + x[:, j] * beta[j]
    return eta


def compress_records(frame: pd.DataFrame, max_ratio: float = 0.5) -> pd.DataFrame:
    """Identical records merged, their number in ``__f__`` (exact: every IRLS sum is per record).

    Identical records have identical scores and contributions, so the fit on the distinct
    records with frequency weights follows exactly the same iterates (only the order of the
    floating-point sums changes).  The frame is returned unchanged when fewer than
    ``1 - max_ratio`` of its records would be saved (then ``__f__`` is 1).
    """
    if FREQ in frame.columns:
        return frame
    counts = frame.groupby(list(frame.columns), sort=False, dropna=False, observed=True).size()
    if len(counts) > max_ratio * len(frame) or len(frame) == 0:
        return frame.assign(**{FREQ: 1.0})
    out = counts.reset_index(name=FREQ)
    out[FREQ] = out[FREQ].astype(float)
    return out


def logit_pass(
    part: pd.DataFrame,
    spec: ModelSpec,
    mode: str,
    beta: np.ndarray | None,
    kept: np.ndarray | None,
    label_spec: Any = None,
) -> dict[str, Any]:
    """One IRLS pass over a partition.

    Parameters
    ----------
    mode : {"qr", "gram", "scores"}
        ``qr``: deviance and the R factor of ``sqrt(W)[X | z]``; ``gram``: deviance,
        ``X'WX`` and ``X'W(z - X beta)`` on the kept columns; ``scores``: fitted
        probabilities, responses and record weights.
    beta : ndarray or None
        Current coefficients on the kept columns (``None``: R's starting values).
    kept : ndarray or None
        Indices of the non-aliased design columns (``None``: all).

    Records may carry prior weights (``__w__``, R's ``weights``, synthpop's ``aggregate``) and
    frequency weights (``__f__``, merged identical records); the BLAS runs single-threaded
    (one Dask task per core).
    """
    with threadpool_limits(limits=1, user_api="blas"):
        return _logit_pass(part, spec, mode, beta, kept, label_spec)


def _logit_pass(part, spec, mode, beta, kept, label_spec) -> dict[str, Any]:
    n = len(part)
    y_all = draw_labels(label_spec, n, part[LABEL].to_numpy(dtype=float))
    w_all = part[WEIGHT].to_numpy(dtype=float) if WEIGHT in part.columns else np.ones(n)
    f_all = part[FREQ].to_numpy(dtype=float) if FREQ in part.columns else np.ones(n)
    p = spec.design.n_columns
    cols = np.arange(p) if kept is None else kept
    dev = 0.0
    out: dict[str, Any] = {"n": float(np.sum(f_all))}
    rs, scores_parts, mu_min, mu_max = [], [], 1.0, 0.0
    g = np.zeros((len(cols), len(cols)))
    s = np.zeros(len(cols))
    for start in range(0, n, CHUNK_ROWS):
        stop = min(n, start + CHUNK_ROWS)
        x = spec.matrix(part, start, stop)
        if kept is not None:
            x = np.asfortranarray(x[:, cols])
        y, w0, f = y_all[start:stop], w_all[start:stop], f_all[start:stop]
        if beta is None:
            mu = (w0 * y + 0.5) / (w0 + 1)
            eta = linkfun(mu)
            mu = linkinv(eta)
        else:
            eta = _eta(x, beta)
            mu = linkinv(eta)
        dev += float(np.sum(f * dev_resids(y, mu, w0)))
        if mode == "scores":
            scores_parts.append(mu)
            mu_min, mu_max = min(mu_min, float(mu.min(initial=1.0))), max(mu_max, float(mu.max(initial=0.0)))
            continue
        me = mu_eta(eta)
        var = mu * (1 - mu)
        sw = np.sqrt(f * w0 * me * me / var)
        if mode == "qr":
            z = eta + (y - mu) / me
            aug = np.empty((stop - start, len(cols) + 1), order="F")
            aug[:, :-1] = x * sw[:, None]
            aug[:, -1] = z * sw
            rs.append(sla.qr(aug, mode="r", overwrite_a=True, check_finite=False)[0][: len(cols) + 1])
        else:
            xw = np.asfortranarray(x * sw[:, None])
            g += sla.blas.dsyrk(1.0, xw, trans=1)
            # W (z - X beta) with z - X beta = (y - mu) / mu_eta; at the start X beta is not
            # defined and the pass returns X'Wz (z = eta + (y - mu) / mu_eta)
            resid = (y - mu) / me if beta is not None else eta + (y - mu) / me
            s += x.T @ (sw * sw * resid)
    out["dev"] = dev
    if mode == "scores":
        out["mu"] = np.concatenate(scores_parts) if scores_parts else np.empty(0)
        out["y"] = y_all.astype(np.int8)
        weighted = WEIGHT in part.columns or FREQ in part.columns
        out["w"] = w_all * f_all if weighted else None
        out["mu_min"], out["mu_max"] = mu_min, mu_max
    elif mode == "qr":
        out["r"] = _stack_r(rs, len(cols) + 1)
    else:
        # dsyrk fills the upper triangle only
        out["g"], out["s"] = np.triu(g) + np.triu(g, 1).T, s
    return out


def _stack_r(rs: Sequence[np.ndarray], width: int) -> np.ndarray:
    if not rs:
        return np.zeros((0, width))
    if len(rs) == 1:
        return rs[0]
    return sla.qr(np.vstack(rs), mode="r", check_finite=False)[0][:width]


def combine_passes(results: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Sum (or stack and re-factorise) the per-partition results of one pass."""
    results = [r for r in results if r is not None]
    out: dict[str, Any] = {"n": float(sum(r["n"] for r in results)), "dev": float(np.sum([r["dev"] for r in results]))}
    first = results[0]
    if "r" in first:
        width = max(r["r"].shape[1] for r in results)
        out["r"] = _stack_r([r["r"] for r in results if r["r"].shape[0]], width)
    elif "g" in first:
        out["g"] = np.sum([r["g"] for r in results], axis=0)
        out["s"] = np.sum([r["s"] for r in results], axis=0)
    else:
        out["mu"] = np.concatenate([r["mu"] for r in results])
        out["y"] = np.concatenate([r["y"] for r in results])
        if all(r["w"] is None for r in results):
            out["w"] = None
        else:
            out["w"] = np.concatenate([np.ones(len(r["mu"])) if r["w"] is None else r["w"] for r in results])
        out["mu_min"] = min(r["mu_min"] for r in results)
        out["mu_max"] = max(r["mu_max"] for r in results)
    return out


# ---------------------------------------------------------------------------------------------
# R's pivoting rule (LINPACK dqrdc2) on the combined R factor
# ---------------------------------------------------------------------------------------------
def dqrdc2_kept(r: np.ndarray, tol: float = 1e-11) -> np.ndarray:
    """Columns that ``dqrdc2`` keeps (in their original order) for a matrix with this R factor.

    A column is moved to the end (aliased) when the norm of its part orthogonal to the
    columns kept before it is below ``tol`` times its original norm.  Orthogonal
    transformations preserve these norms, so the R factor of ``sqrt(W) X`` decides exactly
    as the full matrix would.
    """
    a = np.array(r, dtype=float, order="F")
    nrow, p = a.shape
    orig = np.linalg.norm(a, axis=0)
    ref = np.where(orig == 0, 1.0, orig)
    kept: list[int] = []
    row = 0
    for j in range(p):
        col = a[row:, j]
        norm = float(np.linalg.norm(col))
        if norm < ref[j] * tol or row >= nrow:
            continue
        # Householder reflection of this column applied to the columns after it
        v = col.copy()
        v[0] += np.copysign(norm, v[0]) if v[0] != 0 else norm
        vnorm2 = float(v @ v)
        if vnorm2 > 0 and j + 1 < p:
            rest = a[row:, j + 1 :]
            rest -= np.outer(v, (v @ rest) * (2.0 / vnorm2))
        kept.append(j)
        row += 1
    return np.asarray(kept, dtype=np.int64)


# ---------------------------------------------------------------------------------------------
# the iteration as a state machine (so many fits can share Dask rounds)
# ---------------------------------------------------------------------------------------------
@dataclass
class LogitFit:
    """Result of one IRLS fit, with R's ``glm`` names where they exist."""

    names: tuple[str, ...]
    coefficients: np.ndarray  # NaN for aliased columns (R: NA)
    deviance: float
    null_deviance: float
    iter: int
    converged: bool
    rank: int
    fitted_extreme: bool  # fitted probabilities within 1e-8 of 0 or 1: (quasi-)separation

    def to_dict(self) -> dict[str, Any]:
        return {
            "converged": self.converged,
            "iter": self.iter,
            "deviance": self.deviance,
            "null_deviance": self.null_deviance,
            "rank": self.rank,
            "fitted_probabilities_0_or_1": self.fitted_extreme,
            "coefficients": {
                n: (None if np.isnan(c) else float(c)) for n, c in zip(self.names, self.coefficients, strict=True)
            },
        }


@dataclass
class IRLS:
    """R's ``glm.fit`` iteration driven by pass results (see module docstring)."""

    p: int
    maxit: int = 200
    epsilon: float = 1e-8
    kept: np.ndarray | None = None
    beta: np.ndarray | None = None
    dev_old: float = float("nan")
    iteration: int = 0
    converged: bool = False
    finished: bool = False
    force_qr: bool = False
    redo: bool = False
    history: list[float] = field(default_factory=list)

    def request(self) -> tuple[str, np.ndarray | None, np.ndarray | None]:
        """The next pass: (mode, beta on kept columns, kept columns)."""
        if self.finished:
            return "scores", self.beta, self.kept
        if self.force_qr:
            return "qr", self.beta, self.kept
        return "gram", self.beta, self.kept

    def feed(self, res: dict[str, Any]) -> None:
        """Advance with the combined result of the requested pass."""
        if self.beta is None:  # the pass at R's starting values
            self.dev_old = res["dev"]
        elif self.redo:  # the same coefficients again, in QR form
            self.redo = False
        else:
            dev = res["dev"]
            self.history.append(dev)
            if abs(dev - self.dev_old) / (abs(dev) + 0.1) < self.epsilon:
                self.converged = True
                self.finished = True
                return
            if self.iteration >= self.maxit:
                self.finished = True
                return
            self.dev_old = dev
        if "r" in res:
            self._solve_qr(res["r"])
        elif self.beta is None:
            self._start_from_gram(res["g"], res["s"])
        else:
            self._solve_gram(res["g"], res["s"])

    def _start_from_gram(self, g: np.ndarray, s: np.ndarray) -> None:
        """First step from ``X'WX`` when R's aliasing decision is clear from it.

        Columns are examined in order as ``dqrdc2`` does: a zero column is aliased; a column
        whose squared norm after projection on the kept columns exceeds ``1e-8`` of its own
        is kept (far above R's ``1e-11`` on the norm, and far above the rounding of a Gram
        matrix).  Anything in between cannot be decided from ``X'WX`` (an exact dependence
        shows there as ~1e-16 relative, not 0): the pass is redone as a QR.
        """
        kept: list[int] = []
        chol = np.zeros((0, 0))
        for j in range(self.p):
            gjj = g[j, j]
            if gjj == 0:
                continue
            v = sla.solve_triangular(chol, g[kept, j], trans="T", check_finite=False) if kept else np.zeros(0)
            d = gjj - float(v @ v)
            if d <= 1e-8 * gjj:
                self.force_qr = True
                return
            new = np.zeros((len(kept) + 1, len(kept) + 1))
            new[: len(kept), : len(kept)] = chol
            new[: len(kept), -1] = v
            new[-1, -1] = np.sqrt(d)
            chol = new
            kept.append(j)
        self.kept = np.asarray(kept, dtype=np.int64)
        self.beta = np.zeros(len(kept))
        self._solve_gram(g[np.ix_(kept, kept)], s[kept])
        if self.force_qr:  # the Newton system itself was ill-conditioned
            self.kept, self.beta, self.redo = None, None, False

    def _solve_qr(self, r: np.ndarray) -> None:
        width = r.shape[1] - 1
        rx, qty = r[:width, :width], r[:width, width]
        if self.kept is None:
            kept_local = dqrdc2_kept(rx)
            self.kept = kept_local
            rx = rx[:, kept_local]
        beta, *_ = np.linalg.lstsq(rx, qty, rcond=None)
        self.beta = beta
        self.iteration += 1
        self.force_qr = False

    def _solve_gram(self, g: np.ndarray, s: np.ndarray) -> None:
        d = np.sqrt(np.diag(g))
        if not np.all(d > 0):
            self.force_qr = self.redo = True
            return
        scaled = g / d[:, None] / d[None, :]
        try:
            factor = sla.cho_factor(scaled, check_finite=False)
            delta = sla.cho_solve(factor, s / d, check_finite=False) / d
        except (np.linalg.LinAlgError, ValueError):
            self.force_qr = self.redo = True
            return
        if not np.all(np.isfinite(delta)) or np.linalg.cond(scaled) > 1e12:
            self.force_qr = self.redo = True
            return
        self.beta = self.beta + delta
        self.iteration += 1

    def coefficients(self) -> np.ndarray:
        out = np.full(self.p, np.nan)
        out[self.kept] = self.beta
        return out


def null_deviance(y: np.ndarray, w: np.ndarray) -> float:
    """Deviance of the intercept-only model."""
    p = float(np.sum(w * y) / np.sum(w))
    return float(np.sum(dev_resids(y, np.full(len(y), p), w)))
