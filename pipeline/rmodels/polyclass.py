"""polspline's ``polyclass`` for two classes, as synthpop 1.2-1's ``utility.synds`` calls it.

Why a port: the ``"poly"`` propensity of ``utility.synds`` is ``polyclass(data = t, cov,
penalty = 0)`` followed by ``ppolyclass``; no Python library fits polyclass's adaptive
linear-spline / tensor-product logistic model, and its result depends on the details of the
search.  This module ports the behaviour of polspline 1.1.22's ``src/polyall.c`` for the case
used there: two classes, unit case weights, no test set, no cross-validation, ``penalty = 0``,
the default maximum dimension, no ``exclude``/``include``/``linear``, ``delete = 2``.

Its selection is not robust to rounding: at ``penalty = 0`` the search keeps adding, and late
additions are often numerically degenerate candidates (a repeated knot, a knot at a
covariate's minimum) whose Rao statistic is rounding noise that happens to be the largest.
To select R's models, the arithmetic follows polyall.c operation by operation, in double
precision with the C library's ``exp``/``log`` (numba kernels, no fused multiply-add):

* covariates rounded to single precision (R passes ``as.single(cov)``); knots are such values;
* ``pcompall``: per record, in data order, ``theta`` accumulated basis by basis (zeros
  skipped), ``p1 = 1 / (1 + exp(theta))``, ``p0 = exp(theta) * p1``; score and the upper
  triangle of the Hessian accumulated record by record (``-b_j p0 b_k`` then ``+ b_j p0 b_k p0``);
* the symmetric inverse and solves of LINPACK (``dsifa``/``dsidi``/``dsisl``: Bunch–Kaufman
  pivoting, reference-BLAS order), as polyall.c's ``lusolinv``;
* ``pnewton``: Newton–Raphson with step halving (the trial ``beta - s`` and its restoration
  ``+ s`` rounded as in C), the Hessian inverse of the first iteration updated by the DFP
  rank-two formula for iterations 1–7 (``pcomp2``), full Newton from iteration 8, converged
  when the log-likelihood gains less than 1e-4, and its failure paths;
* ``prao``: the Rao statistic of a candidate from the fitted model's ``p0`` and minus its
  inverse Hessian, with polyall.c's accumulation order, the 1x1 solve (0 for an exactly zero
  variance) and the ``rao > 1000`` cut; degenerate candidates get polyall.c's noise;
* the addition search (``padddim``: linear terms and products, then a new knot per entered
  non-binary covariate by ``pearch``'s order statistics and interval halving; the strictly
  largest statistic wins), ``maxdim`` and the early-stopping rule on ``computeloss``'s
  log-likelihoods, a failed refit restoring (and refitting) the previous model;
* the deletion phase (``prembas``): the eligible basis function with the smallest Wald
  statistic (the first on ties) is removed, the coefficients shifted by a solve with the
  reduced Hessian and the model refitted; with ``penalty = 0`` deletion stops as soon as a
  model is not strictly better than the best, so usually one deletion is fitted;
* selection: the fitted model with the smallest ``-2 log-likelihood``, a later one on a tie
  within 1e-8.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field

import numba
import numpy as np

MAXSPACE = 250
#: polyclass stops with 'not enough data' below this many records
MIN_POLY_RECORDS = 25
MAXKNOTS = 10
ZERROR = 1e-4
MAXITER = 300
FAILED = 200.0
STEP_HALF = "step half ouch..."
REDUCED = "warning - model size was reduced"


class PolyclassError(ValueError):
    """polyclass could not fit even the constant model (1.2-1 then uses ``p = c``)."""


@dataclass
class Basis:
    """One basis function: covariate ``b1`` (``ncov`` = constant) with knot index ``t1`` (-1 =
    linear), times covariate ``b2`` (``ncov`` = none) with knot index ``t2``."""

    b1: int
    t1: int
    b2: int
    t2: int


@dataclass
class Space:
    """A polyclass model: basis functions, knots per covariate, 2-d subspace flags, coefficients."""

    ncov: int
    basis: list[Basis] = field(default_factory=list)
    beta: list[float] = field(default_factory=list)
    dim1: list[int] = field(default_factory=list)  # functions in each covariate's 1-d space
    knots: list[list[float]] = field(default_factory=list)  # in order of addition (as polyall.c)
    dim2: dict[tuple[int, int], int] = field(default_factory=dict)
    kts2: dict[tuple[int, int], set[tuple[int, int]]] = field(default_factory=dict)

    @classmethod
    def constant(cls, ncov: int) -> Space:
        return cls(ncov, [Basis(ncov, -1, ncov, -1)], [0.0], [0] * ncov, [[] for _ in range(ncov)])

    @property
    def nbas(self) -> int:
        return len(self.basis)

    def copy(self) -> Space:
        return copy.deepcopy(self)


def _column(x: np.ndarray, space: Space, b: Basis) -> np.ndarray:
    """Values of one basis function (``petvector``; exact in double for single-precision data)."""
    if b.b1 == space.ncov:
        return np.ones(len(x))
    val = x[:, b.b1].copy()
    if b.t1 > -1:
        val = np.maximum(val - space.knots[b.b1][b.t1], 0.0)
    if b.b2 != space.ncov and b.b2 != -1:
        xx = x[:, b.b2]
        if b.t2 > -1:
            xx = np.maximum(xx - space.knots[b.b2][b.t2], 0.0)
        val = val * xx
    return val


def design(x: np.ndarray, space: Space) -> np.ndarray:
    """The basis functions of ``space`` at the rows of ``x`` (records x basis functions)."""
    return np.ascontiguousarray(np.column_stack([_column(x, space, b) for b in space.basis]))


# ---------------------------------------------------------------------------------------------
# record-by-record kernels (polyall.c's accumulation order)
# ---------------------------------------------------------------------------------------------
@numba.njit(cache=True, error_model="numpy")
def _pylog(x: float) -> float:
    if x < 10.0e-250:
        return -576.0
    return math.log(x)


@numba.njit(cache=True, error_model="numpy")
def _probs_row(bmat: np.ndarray, beta: np.ndarray, i: int) -> tuple[float, float, bool]:
    """``p0`` (class 0) and ``p1`` (reference class) of record ``i``; is the linear predictor finite."""
    theta = beta[0]
    for j in range(1, bmat.shape[1]):
        v = bmat[i, j]
        if v != 0.0:
            theta += v * beta[j]
    e = math.exp(theta) if theta < 600.0 else math.exp(600.0)
    p1 = 1.0 / (1.0 + (0.0 + e))
    return e * p1, p1, math.isfinite(theta)


@numba.njit(cache=True, error_model="numpy")
def _pcompall(bmat: np.ndarray, y0: np.ndarray, beta: np.ndarray, want: bool, p0: np.ndarray, final: bool = False):
    """Log-likelihood, and with ``want`` score and Hessian; fills ``p0`` (``pcompall``).

    Also returns what polyall.c leaves in the first two columns of its global ``w3`` (used as
    scratch here, and holding the inverse Hessian of the last successful fit otherwise): per
    basis function, the zero-weighted ridge terms of the last record where it is non-zero.

    polyall.c's ridge term has weight 0 here; it still turns the log-likelihood (except in the
    ``final`` call, ``what = 2``) and the score into NaN for a record with a non-finite
    linear predictor (``0 * NaN``), which is how a fit with a singular Hessian fails.
    """
    n, nb = bmat.shape
    logl = 0.0
    score = np.zeros(nb)
    hess = np.zeros((nb, nb))
    scratch = np.full((nb, 2), np.inf)  # inf: row not written
    for i in range(n):
        q0, q1, finite = _probs_row(bmat, beta, i)
        p0[i] = q0
        logl += _pylog(q0 if y0[i] else q1) * 1.0
        if not finite and not final:
            logl = math.nan
        if want:
            ridge = 0.0 if finite else math.nan  # 0 * (theta - mean theta); a zero's sign is never read
            for j in range(nb):
                v = bmat[i, j]
                if v != 0.0:
                    scratch[j, 0] = v * ridge
                    scratch[j, 1] = v * ridge
                    rtemp = v * q0
                    score[j] = score[j] - rtemp if finite else math.nan
                    for j2 in range(j, nb):
                        v2 = bmat[i, j2]
                        if v2 != 0.0:
                            hess[j, j2] = hess[j, j2] - rtemp * v2
                            hess[j, j2] = hess[j, j2] + rtemp * (v2 * q0)
                    if y0[i]:
                        score[j] = score[j] + v
    for k in range(nb - 1):
        for j in range(k + 1, nb):
            hess[j, k] = hess[k, j]
    return logl, score, hess, scratch


@numba.njit(cache=True, error_model="numpy")
def _pcomp2(bmat: np.ndarray, y0: np.ndarray, beta: np.ndarray, p0: np.ndarray):
    """Log-likelihood and score only (``pcomp2``'s record loop); fills ``p0``."""
    n, nb = bmat.shape
    logl = 0.0
    score = np.zeros(nb)
    for i in range(n):
        q0, q1, finite = _probs_row(bmat, beta, i)
        p0[i] = q0
        logl += _pylog(q0 if y0[i] else q1) * 1.0
        if not finite:
            logl = math.nan
        for j in range(nb):
            v = bmat[i, j]
            if v != 0.0:
                score[j] = score[j] - v * q0 if finite else math.nan
                if y0[i]:
                    score[j] = score[j] + v
    return logl, score


@numba.njit(cache=True, error_model="numpy")
def _loss_loglik(bmat: np.ndarray, y0: np.ndarray, beta: np.ndarray) -> float:
    """``computeloss``'s log-likelihood (its own probability formula, used by the early stop)."""
    n, nb = bmat.shape
    res = 0.0
    for i in range(n):
        c0 = 0.0
        c0 += beta[0]
        for k in range(1, nb):
            c0 += beta[k] * bmat[i, k]
        e0 = math.exp(c0) if c0 < 600.0 else math.exp(600.0)
        e1 = math.exp(0.0)
        tot = 0.0 + e0 + e1
        res += math.log(e0 / tot if y0[i] else e1 / tot) * 1.0
    return res


@numba.njit(cache=True, error_model="numpy")
def _rao(bmat: np.ndarray, bnew: np.ndarray, y0: np.ndarray, p0: np.ndarray, amat: np.ndarray) -> float:
    """Rao statistic of adding column ``bnew`` to the fitted model (``prao``).

    ``amat`` is minus the inverse Hessian of the fitted model, ``p0`` its fitted class-0
    probabilities.
    """
    n, nb = bmat.shape
    h = np.zeros(nb + 1)  # cross-information with the model's columns, then the new one
    ss = 0.0
    for i in range(n):
        q0 = p0[i]
        b = bnew[i]
        rtemp = b * q0
        ss = ss - rtemp
        h[0] = h[0] + (-(rtemp * q0))
        h[0] = h[0] + rtemp
        for j in range(1, nb + 1):
            v = bmat[i, j] if j < nb else b
            if v != 0.0:
                d0 = rtemp * v
                h[j] = h[j] + (-(d0 * q0))
                h[j] = h[j] + v * rtemp
        if y0[i]:
            ss = ss + b
    g = np.zeros(nb)
    for j in range(nb):
        acc = 0.0
        for i in range(nb):
            acc += amat[j, i] * h[i]
        g[j] = acc
    var = h[nb]
    for i in range(nb):
        var -= h[i] * g[i]
    if var == 0.0:
        return 0.0
    rao = 0.0 + (ss / var) * ss
    if rao > 1000.0 and nb + 1 > 3:
        rao = 0.0
    return rao


# ---------------------------------------------------------------------------------------------
# LINPACK's symmetric factorisation, inverse and solve (reference-BLAS operation order)
# ---------------------------------------------------------------------------------------------
@numba.njit(cache=True, error_model="numpy")
def _axpy(a: np.ndarray, m: int, t: float, src: int, dst: int) -> None:
    """``a[0:m, dst] += t * a[0:m, src]`` (``daxpy``; nothing when ``t == 0``)."""
    if m <= 0 or t == 0.0:
        return
    for r in range(m):
        a[r, dst] = a[r, dst] + t * a[r, src]


@numba.njit(cache=True, error_model="numpy")
def _iamax(a: np.ndarray, m: int, col: int) -> int:
    """0-based row of the first largest ``|a[0:m, col]|`` (``idamax``)."""
    best = 0
    dmax = abs(a[0, col])
    for r in range(1, m):
        if abs(a[r, col]) > dmax:
            best = r
            dmax = abs(a[r, col])
    return best


@numba.njit(cache=True, error_model="numpy")
def _inverse_column(a: np.ndarray, work: np.ndarray, m: int, c: int) -> None:
    """``dsidi``'s update of column ``c`` (0-based) of the inverse from its first ``m`` rows:
    the rows become the product with the inverse's leading block, and ``a[c, c]`` gains the
    dot product of the old and new rows (same operation order as ``dsidi``)."""
    for r in range(m):
        work[r] = a[r, c]
    for j in range(1, m + 1):
        a[j - 1, c] = _dot_cols(a, j, j - 1, work)
        _axpy(a, j - 1, work[j - 1], j - 1, c)
    acc = 0.0
    for r in range(m):
        acc += work[r] * a[r, c]
    a[c, c] = a[c, c] + acc


@numba.njit(cache=True, error_model="numpy")
def _swap_pivot(a: np.ndarray, imax: int, last: int) -> None:
    """Interchange pivot row/column ``imax`` (1-based) with column ``last`` (1-based) of the
    upper triangle, as ``dsifa`` does for a 1x1 (``last = k``) or 2x2 (``last = k - 1``) pivot."""
    c = last - 1
    for r in range(imax):
        t = a[r, imax - 1]
        a[r, imax - 1] = a[r, c]
        a[r, c] = t
    for jj in range(imax, last + 1):
        j = last + imax - jj
        t = a[j - 1, c]
        a[j - 1, c] = a[imax - 1, j - 1]
        a[imax - 1, j - 1] = t


@numba.njit(cache=True, error_model="numpy")
def _sifa(a: np.ndarray) -> tuple[np.ndarray, int]:
    """Bunch–Kaufman factorisation of the upper triangle of ``a`` in place (``dsifa``).

    Returns the (1-based, signed) pivot vector and ``info`` (non-zero: singular)."""
    n = a.shape[0]
    kpvt = np.zeros(n, dtype=np.int64)
    alpha = (1.0 + math.sqrt(17.0)) / 8.0
    info = 0
    k = n  # 1-based as LINPACK
    while k > 0:
        if k == 1:
            kpvt[0] = 1
            if a[0, 0] == 0.0:
                info = 1
            break
        km1 = k - 1
        absakk = abs(a[k - 1, k - 1])
        imax = _iamax(a, k - 1, k - 1) + 1
        colmax = abs(a[imax - 1, k - 1])
        swap = False
        if absakk >= alpha * colmax:
            kstep = 1
        else:
            rowmax = 0.0
            for j in range(imax + 1, k + 1):
                rowmax = max(rowmax, abs(a[imax - 1, j - 1]))
            if imax != 1:
                jmax = _iamax(a, imax - 1, imax - 1) + 1
                rowmax = max(rowmax, abs(a[jmax - 1, imax - 1]))
            if abs(a[imax - 1, imax - 1]) >= alpha * rowmax:
                kstep = 1
                swap = True
            elif absakk >= alpha * colmax * (colmax / rowmax):
                kstep = 1
            else:
                kstep = 2
                swap = imax != km1
        if max(absakk, colmax) == 0.0:
            kpvt[k - 1] = k
            info = k
        elif kstep == 1:
            if swap:
                _swap_pivot(a, imax, k)
            for jj in range(1, km1 + 1):
                j = k - jj
                mulk = -a[j - 1, k - 1] / a[k - 1, k - 1]
                _axpy(a, j, mulk, k - 1, j - 1)
                a[j - 1, k - 1] = mulk
            kpvt[k - 1] = imax if swap else k
        else:
            if swap:
                _swap_pivot(a, imax, km1)
                t = a[k - 2, k - 1]
                a[k - 2, k - 1] = a[imax - 1, k - 1]
                a[imax - 1, k - 1] = t
            km2 = k - 2
            if km2 != 0:
                ak = a[k - 1, k - 1] / a[k - 2, k - 1]
                akm1 = a[k - 2, k - 2] / a[k - 2, k - 1]
                denom = 1.0 - ak * akm1
                for jj in range(1, km2 + 1):
                    j = km1 - jj
                    bk = a[j - 1, k - 1] / a[k - 2, k - 1]
                    bkm1 = a[j - 1, k - 2] / a[k - 2, k - 1]
                    mulk = (akm1 * bk - bkm1) / denom
                    mulkm1 = (ak * bkm1 - bk) / denom
                    _axpy(a, j, mulk, k - 1, j - 1)
                    _axpy(a, j, mulkm1, k - 2, j - 1)
                    a[j - 1, k - 1] = mulk
                    a[j - 1, k - 2] = mulkm1
            kpvt[k - 1] = -imax if swap else 1 - k
            kpvt[k - 2] = kpvt[k - 1]
        k -= kstep
    return kpvt, info


@numba.njit(cache=True, error_model="numpy")
def _dot_cols(a: np.ndarray, m: int, c1: int, vec: np.ndarray) -> float:
    acc = 0.0
    for r in range(m):
        acc += a[r, c1] * vec[r]
    return acc


@numba.njit(cache=True, error_model="numpy")
def _sidi(a: np.ndarray, kpvt: np.ndarray) -> None:
    """Inverse from ``_sifa``'s factors, upper triangle, in place (``dsidi`` with job 1)."""
    n = a.shape[0]
    work = np.zeros(n)
    k = 1
    while k <= n:
        km1 = k - 1
        if kpvt[k - 1] >= 0:
            a[k - 1, k - 1] = 1.0 / a[k - 1, k - 1]
            if km1 >= 1:
                _inverse_column(a, work, km1, k - 1)
            kstep = 1
        else:
            t = abs(a[k - 1, k])
            ak = a[k - 1, k - 1] / t
            akp1 = a[k, k] / t
            akkp1 = a[k - 1, k] / t
            d = t * (ak * akp1 - 1.0)
            a[k - 1, k - 1] = akp1 / d
            a[k, k] = ak / d
            a[k - 1, k] = -akkp1 / d
            if km1 >= 1:
                _inverse_column(a, work, km1, k)
                acc = 0.0
                for r in range(km1):
                    acc += a[r, k - 1] * a[r, k]
                a[k - 1, k] = a[k - 1, k] + acc
                _inverse_column(a, work, km1, k - 1)
            kstep = 2
        ks = abs(kpvt[k - 1])
        if ks != k:
            for r in range(ks):
                t = a[r, ks - 1]
                a[r, ks - 1] = a[r, k - 1]
                a[r, k - 1] = t
            for jb in range(ks, k + 1):
                j = k + ks - jb
                t = a[j - 1, k - 1]
                a[j - 1, k - 1] = a[ks - 1, j - 1]
                a[ks - 1, j - 1] = t
            if kstep != 1:
                t = a[ks - 1, k]
                a[ks - 1, k] = a[k - 1, k]
                a[k - 1, k] = t
        k += kstep


@numba.njit(cache=True, error_model="numpy")
def _sisl(a: np.ndarray, kpvt: np.ndarray, b: np.ndarray) -> None:
    """Solve with ``_sifa``'s factors, ``b`` in place (``dsisl``)."""
    n = a.shape[0]
    k = n
    while k != 0:
        if kpvt[k - 1] >= 0:
            if k != 1:
                kp = kpvt[k - 1]
                if kp != k:
                    t = b[k - 1]
                    b[k - 1] = b[kp - 1]
                    b[kp - 1] = t
                t = b[k - 1]
                if t != 0.0:
                    for r in range(k - 1):
                        b[r] = b[r] + t * a[r, k - 1]
            b[k - 1] = b[k - 1] / a[k - 1, k - 1]
            k -= 1
        else:
            if k != 2:
                kp = abs(kpvt[k - 1])
                if kp != k - 1:
                    t = b[k - 2]
                    b[k - 2] = b[kp - 1]
                    b[kp - 1] = t
                t = b[k - 1]
                if t != 0.0:
                    for r in range(k - 2):
                        b[r] = b[r] + t * a[r, k - 1]
                t = b[k - 2]
                if t != 0.0:
                    for r in range(k - 2):
                        b[r] = b[r] + t * a[r, k - 2]
            ak = a[k - 1, k - 1] / a[k - 2, k - 1]
            akm1 = a[k - 2, k - 2] / a[k - 2, k - 1]
            bk = b[k - 1] / a[k - 2, k - 1]
            bkm1 = b[k - 2] / a[k - 2, k - 1]
            denom = ak * akm1 - 1.0
            b[k - 1] = (akm1 * bk - bkm1) / denom
            b[k - 2] = (ak * bkm1 - bk) / denom
            k -= 2
    k = 1
    while k <= n:
        if kpvt[k - 1] >= 0:
            if k != 1:
                b[k - 1] = b[k - 1] + _dot_cols(a, k - 1, k - 1, b)
                kp = kpvt[k - 1]
                if kp != k:
                    t = b[k - 1]
                    b[k - 1] = b[kp - 1]
                    b[kp - 1] = t
            k += 1
        else:
            if k != 1:
                b[k - 1] = b[k - 1] + _dot_cols(a, k - 1, k - 1, b)
                b[k] = b[k] + _dot_cols(a, k - 1, k, b)
                kp = abs(kpvt[k - 1])
                if kp != k:
                    t = b[k - 1]
                    b[k - 1] = b[kp - 1]
                    b[kp - 1] = t
            k += 2


def _sym_inverse(m: np.ndarray) -> np.ndarray:
    """``lusolinv(k = 1)``: the inverse of symmetric ``m`` from its upper triangle, mirrored."""
    a = np.array(m, dtype=float, order="C")
    kpvt, _ = _sifa(a)
    _sidi(a, kpvt)
    upper = np.triu(a)
    return upper + np.triu(a, 1).T


def _sym_solve(m: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, bool]:
    """``lusolinv(k = 2)``: solve ``m x = b`` (upper triangle); ``b`` unchanged when singular."""
    a = np.array(m, dtype=float, order="C")
    kpvt, info = _sifa(a)
    if info != 0:
        return np.array(b, dtype=float), False
    x = np.array(b, dtype=float)
    _sisl(a, kpvt, x)
    return x, True


def _matvec(m: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``out[i] = sum_j v[j] * m[i, j]`` accumulated in ``j`` order."""
    out = np.zeros(m.shape[0])
    for j in range(m.shape[1]):
        out = out + v[j] * m[:, j]
    return out


def _finite(v: float) -> bool:
    """polyall.c's ``plumbertester(v) == 3``."""
    return sum((v < 2.0, v > 0.0, v < 1e200, v > -1e200)) >= 3


@dataclass
class _Fit:
    """Data and the state polyall.c keeps between its steps: the last fitted model's design
    and ``p0``, its ``info`` matrix, the global ``w3`` and the console trace."""

    x: np.ndarray
    y0: np.ndarray  # record is of class 0 (t = 0)
    bmat: np.ndarray | None = None
    p0: np.ndarray | None = None
    #: the model's ``info`` as pnewton leaves it: the Hessian after a successful fit, the
    #: working (inverse or quasi-Newton) matrix after a failed one
    info: np.ndarray | None = None
    #: polyall.c's global ``w3``: the inverse Hessian of the last successful fit, with the
    #: scratch writes of later ``pcompall`` calls in its first two columns
    w3: np.ndarray = field(default_factory=lambda: np.zeros((MAXSPACE + 1, MAXSPACE + 1)))
    #: polyclass's console output (``silent = FALSE``): fits, additions, removals, messages
    trace: list[str] = field(default_factory=list)

    def hessian(self, beta: np.ndarray, final: bool = False) -> tuple[float, np.ndarray, np.ndarray]:
        """``pcompall(what = 1 or 2)``: log-likelihood, score and Hessian at ``beta``."""
        logl, score, hess, scratch = _pcompall(self.bmat, self.y0, beta, True, self.p0, final)
        rows = np.isfinite(scratch[:, 0]) | np.isnan(scratch[:, 0])
        self.w3[: len(beta), :2][rows] = scratch[rows]
        return logl, score, hess

    def loglik(self, beta: np.ndarray) -> float:
        """``pcompall(what = 0)``."""
        return _pcompall(self.bmat, self.y0, beta, False, self.p0)[0]


def pnewton(fit: _Fit, space: Space) -> float:
    """Fit ``space`` from its coefficients (``pnewton``); the log-likelihood, or 200 on failure.

    ``space.beta`` is updated as the C code updates it, also on failure.  A singular Hessian
    gives infinite and NaN steps, which fail the fit as they do in C (no warnings)."""
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        return _newton(fit, space)


def _newton(fit: _Fit, space: Space) -> float:
    """:func:`pnewton`'s iterations."""
    n = len(fit.y0)
    fit.bmat = design(fit.x, space)
    fit.p0 = np.zeros(n)
    beta = np.asarray(space.beta, dtype=float).copy()
    nb = len(beta)
    y0 = fit.y0
    mm = 0
    logl = lnew = 0.0
    info = np.zeros((nb, nb))
    prev_score = np.zeros(nb)
    prev_beta = np.zeros(nb)
    it = 0
    result = None
    while it < MAXITER:
        if it == 0 or mm == 3 or it > 7:
            logl, score, hess = fit.hessian(beta)
            if logl < n * math.log(1.0 / 2.0):
                beta = np.zeros(nb)
                logl, score, hess = fit.hessian(beta)
            info = _sym_inverse(hess)
            mm = 2
        elif mm == 7:
            it = 1
            mm = 1
            beta = np.zeros(nb)
            logl, score, info = fit.hessian(beta)  # not inverted, as in C
        else:
            logl, score = _pcomp2(fit.bmat, y0, beta, fit.p0)
            ds = beta - prev_beta
            dg = score - prev_score
            u = np.zeros(nb)
            for i in range(nb):
                u = u + dg[i] * info[i, :]
            d0 = d1 = 0.0
            for j in range(nb):
                d0 += dg[j] * ds[j]
                d1 += u[j] * dg[j]
            info = info + (np.outer(ds, ds) / d0 - np.outer(u, u) / d1)
            mm = 1
        prev_score = score.copy()
        prev_beta = beta.copy()
        step = _matvec(info, score)
        ihalf = 1
        while True:
            lnew = fit.loglik(beta - step)
            beta = (beta - step) + step
            if lnew < logl - ZERROR:
                if ihalf > 8192 and mm == 2 and it > 0:
                    space.beta, fit.info = list(beta), info
                    return FAILED
                if ihalf > 8192 and mm == 2:
                    mm = 7
                if ihalf > 8192 and mm != 7:
                    mm = 3
                    fit.trace.append(STEP_HALF)
                ihalf *= 2
                step = step / 2
            if not (lnew < logl - ZERROR and mm != 3 and mm != 7):
                break
        if mm != 3 and mm != 7:
            beta = beta - step
            if not (_finite(logl) and _finite(lnew)):
                space.beta, fit.info = list(beta), info
                return FAILED
            if lnew - logl < ZERROR:
                result = lnew
                break
        it += 1
    space.beta = list(beta)
    fit.info = info
    if result is None:
        return FAILED
    lfinal, _, hess = fit.hessian(beta, final=True)
    fit.info = hess
    fit.w3[:nb, :nb] = _sym_inverse(hess)
    return lfinal


# ---------------------------------------------------------------------------------------------
# the search
# ---------------------------------------------------------------------------------------------
@dataclass
class _Best:
    crit: float
    space: Space | None = None


def _try(fit: _Fit, base: Space, best: _Best, amat: np.ndarray, candidate: Basis, knot: float | None = None) -> float:
    """Score a candidate added to ``base``; keep it in ``best`` if strictly better (``cripswap``)."""
    trial_space = base
    if knot is not None:
        trial_space = base.copy()
        trial_space.knots[candidate.b1].append(knot)
    rao = _rao(fit.bmat, _column(fit.x, trial_space, candidate), fit.y0, fit.p0, amat)
    if rao > best.crit:
        new = trial_space.copy() if knot is None else trial_space
        new.basis.append(candidate)
        new.beta.append(0.0)
        if candidate.b2 == base.ncov:
            new.dim1[candidate.b1] += 1
        else:
            key = (candidate.b1, candidate.b2)
            new.dim2[key] = new.dim2.get(key, 0) + 1
            new.kts2.setdefault(key, set()).add((candidate.t1 + 1, candidate.t2 + 1))
        best.crit, best.space = rao, new
    return best.crit


def _products(fit: _Fit, space: Space, best: _Best, amat: np.ndarray) -> None:
    """``padders1``: new linear covariates and products of entered covariates."""
    ncov = space.ncov
    for i in range(ncov):
        for j in range(i + 1, ncov + 1):
            if j == ncov:
                if space.dim1[i] == 0:
                    _try(fit, space, best, amat, Basis(i, -1, ncov, -1))
                continue
            d2, d3 = space.dim1[i], space.dim1[j]
            if not (d2 > 0 and d3 > 0):
                continue
            if space.dim2.get((i, j), 0) == 0:
                _try(fit, space, best, amat, Basis(i, -1, j, -1))
                continue
            flags = space.kts2.get((i, j), set())
            for a in range(d2 - 1):
                if (a + 1, 0) in flags:
                    for c in range(d3 - 1):
                        if (a + 1, c + 1) not in flags and (0, c + 1) in flags:
                            _try(fit, space, best, amat, Basis(i, a, j, c))
                else:
                    _try(fit, space, best, amat, Basis(i, a, j, -1))
            for c in range(d3 - 1):
                if (0, c + 1) not in flags:
                    _try(fit, space, best, amat, Basis(i, -1, j, c))


def _location(what: int, x: np.ndarray, k: float) -> int:
    """``plocation``: first index with ``x >= k`` (what = 0) or last with ``x <= k`` (what = 1)."""
    nx = len(x)
    if what == 1:
        if x[0] > k:
            return 0
        if x[nx - 1] <= k:
            return nx - 1
        return int(np.searchsorted(x, k, side="right")) - 1
    if x[nx - 1] < k:
        return nx - 1
    if x[0] >= k:
        return 0
    return int(np.searchsorted(x, k, side="left"))


def _start(i: int, lgth: int, kts: list[float], x: np.ndarray, mind: int) -> tuple[int, int, int]:
    """Starting location and search bounds (``pindx``/``pindl``/``pindr``/``pindm``): (iloc, ll, uu)."""
    nx = len(x)
    if lgth == 0:
        what = -i
        if what == 0:
            ll, uu = mind, min(nx // 2, nx - mind - 1)
        elif what == 1:
            ll, uu = min(nx // 4, mind), min(3 * nx // 4, nx - mind - 1)
        else:
            ll, uu = min(nx // 2, mind), nx - 1 - mind
        return (-1 if ll > uu else (ll + uu) // 2), ll, uu
    if i == 0:
        uu = _location(0, x, kts[0])
        if uu < 2 * mind:
            return -1, 0, uu
        loc = (uu - 1) // 2
        if uu - loc < mind + 1:
            loc = uu - mind - 1
        return loc, mind, uu - mind - 1
    if i == lgth:
        ll = _location(1, x, kts[lgth - 1])
        if nx - 1 - ll < 2 * mind:
            return -1, ll, 0
        loc = (nx + ll) // 2
        if loc - ll < mind + 1:
            loc = ll + mind + 1
        return loc, ll + mind + 1, nx - 1 - mind
    ll = _location(1, x, kts[i - 1])
    uu = _location(0, x, kts[i])
    if uu - ll < 2 * mind + 1:
        return -1, ll, uu
    return (uu - mind - 1 + ll + mind + 1) // 2, ll + mind + 1, uu - mind - 1


def _toward_upper(u: int, lo: int, x: np.ndarray) -> int:
    """``pindyr``."""
    if x[lo] == x[u]:
        return -1
    i = (u + lo + 1) // 2
    if x[i] != x[lo]:
        return i
    i = (i + u) // 2
    if x[i] != x[lo]:
        return i
    return u


def _toward_lower(u: int, lo: int, x: np.ndarray) -> int:
    """``pindyl``."""
    if x[lo] == x[u]:
        return -1
    i = (u + lo - 1) // 2
    if x[i] != x[u]:
        return i
    i = (i + lo) // 2
    if x[i] != x[u]:
        return i
    return lo


def _knot_search(
    fit: _Fit, space: Space, i0: int, mind: int, crito: float, amat: np.ndarray
) -> tuple[float, Space | None]:
    """``pearch``: the best new knot on covariate ``i0`` by its Rao statistic."""
    ncov = space.ncov
    local = _Best(-1e20)
    kts = space.knots[i0]
    lgth = space.dim1[i0] - 1
    srt = np.sort(fit.x[:, i0])
    cand = Basis(i0, lgth, ncov, -1)
    lloc = uloc = 0
    bloc = -1
    crit = -1e20
    for i in [-2, -1, 0] if lgth == 0 else range(lgth + 1):
        iloc, ll, uu = _start(i, lgth, kts, srt, mind)
        if iloc >= 0:
            critnew = _try(fit, space, local, amat, cand, float(srt[iloc]))
            if critnew > crit:
                lloc, uloc, bloc, crit = ll, uu, iloc, critnew
    if bloc < 0:
        return -1.0, None
    if crit < crito - 25 and lgth == 0:
        return -1.0, None
    rounds = -1
    while True:
        rounds += 1
        if rounds >= 1 and crit < crito - 25:
            return -1.0, None
        if rounds >= 3 and crit < crito - 10:
            return -1.0, None
        if srt[uloc] > srt[lloc]:
            iloc2 = _toward_upper(uloc, bloc, srt)
            crit2 = _try(fit, space, local, amat, cand, float(srt[iloc2])) if iloc2 >= 0 else crit
            iloc = _toward_lower(bloc, lloc, srt)
            critnew = _try(fit, space, local, amat, cand, float(srt[iloc])) if iloc >= 0 else crit
            if crit >= critnew and crit >= crit2:
                lloc = uloc
            elif critnew > crit2:
                uloc, bloc, crit = bloc, iloc, critnew
            else:
                lloc, bloc, crit = bloc, iloc2, crit2
        if not srt[uloc] > srt[lloc]:
            break
    return crit, local.space


def _add_dimension(fit: _Fit, space: Space, mind: int, bincov: np.ndarray) -> Space | None:
    """``padddim``: the space with the best candidate added, or None when none has Rao > 0."""
    nb = space.nbas
    amat = np.ascontiguousarray(-fit.w3[:nb, :nb])
    best = _Best(-1e20)
    _products(fit, space, best, amat)
    for i in range(space.ncov):
        if space.dim1[i] == 0 or bincov[i] or space.dim1[i] >= MAXKNOTS:
            continue
        critx, found = _knot_search(fit, space, i, mind, best.crit, amat)
        if critx > best.crit:
            best.crit, best.space = critx, found
    if best.crit <= 0:
        return None
    fit.trace.append(f"   add: {_term(best.space, best.space.basis[-1])}(rao={best.crit:.2f})")
    return best.space


def _term(space: Space, b: Basis) -> str:
    """A basis function as polyclass prints it (``puuu``)."""
    ncov = space.ncov
    if b.b1 == ncov:
        return "constant "
    one_d = b.b2 == ncov
    out = f"cov({b.b1 + 1})=(" if one_d else f"cov({b.b1 + 1},{b.b2 + 1})=("
    out += f"knot={space.knots[b.b1][b.t1]:.2f}" if b.t1 != -1 else "linear"
    if one_d:
        return out + ") "
    return out + (f",{space.knots[b.b2][b.t2]:.2f})" if b.t2 != -1 else ",linear) ")


def _eligible_for_removal(space: Space, i: int) -> bool:
    """``prembas``: a basis function another one depends on cannot be removed."""
    if i == 0:
        return False
    ncov = space.ncov
    me = space.basis[i]
    for j2 in range(1, space.nbas):
        if j2 == i:
            continue
        other = space.basis[j2]
        if me.b2 == ncov:
            if other.b1 == me.b1 and other.t1 == me.t1:
                return False
            if other.b2 == me.b1 and other.t2 == me.t1:
                return False
            if me.t1 == -1 and (other.b1 == me.b1 or other.b2 == me.b1):
                return False
        elif other.b1 == me.b1 and other.b2 == me.b2:
            if me.t1 == -1 and me.t2 == -1:
                return False
            if me.t1 == -1 and me.t2 >= 0 and other.t2 == me.t2:
                return False
            if me.t1 >= 0 and me.t2 == -1 and other.t1 == me.t1:
                return False
    return True


def _remove_basis(fit: _Fit, space: Space) -> Space | None:
    """``prembas``: the model without its eligible basis function of smallest Wald statistic,
    with the coefficients shifted for the refit; None when nothing can be removed."""
    beta = np.asarray(space.beta, dtype=float)
    crit = 10.0**100
    bbi = -1
    for i in range(space.nbas):
        if not _eligible_for_removal(space, i):
            continue
        v, _ = _sym_solve(fit.w3[i : i + 1, i : i + 1], beta[i : i + 1])
        wald = abs(0.0 + beta[i] * v[0])
        if not math.isnan(wald) and wald < crit:
            bbi, crit = i, wald
    if bbi < 0:
        return None
    fit.trace.append(f"remove: {_term(space, space.basis[bbi])}(wald={crit:.2f})")
    nbas = space.nbas
    last = nbas - 1
    shift = np.zeros(nbas)
    for k in range(nbas):
        if k != bbi:
            shift[k] = 0.0 + beta[bbi] * fit.info[bbi, k]
    tinfo = fit.info.copy()
    tinfo[:, bbi] = tinfo[:, last]
    tinfo[bbi, :] = tinfo[last, :]
    shift[bbi] = shift[last]
    shift, _ = _sym_solve(tinfo[:last, :last], shift[:last])
    new = space.copy()
    removed = new.basis[bbi]
    new.basis[bbi] = new.basis[last]
    new.beta[bbi] = new.beta[last]
    del new.basis[last], new.beta[last]
    if removed.b2 == new.ncov:
        cov = removed.b1
        new.dim1[cov] -= 1
        if removed.t1 > -1:
            if new.dim1[cov] > 0:
                for b in new.basis:
                    if b.b1 == cov and b.t1 > removed.t1:
                        b.t1 -= 1
                    if b.b2 == cov and b.t2 > removed.t1:
                        b.t2 -= 1
            del new.knots[cov][removed.t1]
    else:
        new.dim2[(removed.b1, removed.b2)] -= 1
    new.beta = [b + s for b, s in zip(new.beta, shift, strict=True)]
    return new


@dataclass(frozen=True)
class PolyclassFit:
    """A fitted two-class polyclass model (class 0 = ``t = 0``, class 1 the reference)."""

    space: Space
    ndim: int
    loglik: float  # of the selected model
    #: polyclass's console output with ``silent = FALSE``: per fit ``dim AIC log-likelihood``
    #: (the first three columns), the additions and removals with their statistics, messages
    trace: tuple[str, ...]

    @property
    def messages(self) -> tuple[str, ...]:
        """The console messages polyclass prints even when silent (step halving, size reduced)."""
        return tuple(line for line in self.trace if line in (STEP_HALF, REDUCED))

    def prob1(self, x: np.ndarray) -> np.ndarray:
        """``ppolyclass(fit, cov)[, 2]``: probability of class 1 at the (double) covariates ``x``."""
        return probability1(self.space, x)


def probability1(space: Space, x: np.ndarray) -> np.ndarray:
    """``ppolyclass(fit, cov)[, 2]`` of the model ``space`` at the (double) covariates ``x``."""
    bmat = design(np.asarray(x, dtype=float), space)
    beta = np.asarray(space.beta)
    theta = np.full(bmat.shape[0], beta[0])
    for j in range(1, bmat.shape[1]):
        theta = theta + bmat[:, j] * beta[j]
    # R: p = exp(row - max(row)) / sum, rows (theta, 0)
    m = np.maximum(theta, 0.0)
    a, b = np.exp(theta - m), np.exp(-m)
    return b / (b + a)


def polyclass(t: np.ndarray, cov: np.ndarray) -> PolyclassFit:
    """``polyclass(data = t, cov = cov, penalty = 0)`` for a 0/1 response ``t``.

    Parameters
    ----------
    t : ndarray of 0/1
    cov : ndarray (records x covariates)
        Numeric covariates (factor level codes as numbers); rounded to single precision here.

    Returns
    -------
    PolyclassFit
        The selected model, its ``ndim``, the log-likelihoods and models of every fit (addition
        then deletion), and polyclass's console messages.

    Raises
    ------
    PolyclassError
        If not even the constant model can be fitted.
    """
    t = np.asarray(t)
    x = np.asarray(cov, dtype=np.float32).astype(float)
    n, ncov = x.shape
    maxdim = int(np.floor(4 * n ** (1 / 3)) + 1)
    ndmax = int(min(n / 2, MAXSPACE - 1, maxdim))
    mind = 3 * 2
    bincov = np.all((x == 0) | (x == 1), axis=0)
    fit = _Fit(x, t == 0)
    current = Space.constant(ncov)
    best: Space | None = None
    best_aic, best_ll = 10.0**150, 0.0
    logs: dict[int, float] = {}
    previous: Space | None = None
    add = True
    while add:
        ll = pnewton(fit, current)
        if ll > 190:
            if previous is None:
                raise PolyclassError("polyclass: the constant model could not be fitted")
            # the larger model's fit failed: the previous model is refitted (the refit's result
            # is not used, but its state is where deletion starts) and adding stops
            current = previous
            pnewton(fit, current)
            fit.trace.append(REDUCED)
            break
        aic = -(2 * ll)
        logs[current.nbas] = _loss_loglik(fit.bmat, fit.y0, np.asarray(current.beta))
        fit.trace.append(f"{current.nbas:3d} {aic:10.4f} {logs[current.nbas]:10.4f}")
        if current.nbas >= ndmax:
            add = False
        if aic <= best_aic + 0.00000001:
            best, best_aic, best_ll = current.copy(), aic, ll
        nbas = current.nbas
        if add:
            for i in range(2, nbas - 2):
                if logs[nbas] - logs[i] < (nbas - i) / 2.0 - 0.5:
                    add = False
        if add:
            previous = current.copy()
            grown = _add_dimension(fit, current, mind, bincov)
            if grown is None:
                add = False
            else:
                current = grown
    if best is None:
        raise PolyclassError("polyclass: the constant model could not be fitted")
    # deletion (delete = 2): with penalty 0 it goes on only while the refitted model's AIC is
    # below the best one, which after a successful refit it never is (a tie becomes the best)
    while True:
        smaller = _remove_basis(fit, current)
        if smaller is None:
            break
        current = smaller
        ll = pnewton(fit, current)
        if ll > 190:
            aic = FAILED
        else:
            aic = -(2 * ll)
            fit.trace.append(
                f"{current.nbas:3d} {aic:10.4f} {_loss_loglik(fit.bmat, fit.y0, np.asarray(current.beta)):10.4f}"
            )
            if aic <= best_aic + 0.00000001:
                best, best_aic, best_ll = current.copy(), aic, ll
        if not aic - best_aic < 0:
            break
    return PolyclassFit(best, best.nbas, best_ll, tuple(fit.trace))
