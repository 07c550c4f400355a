"""polspline's ``polyclass`` for two classes, as synthpop 1.2-1's ``utility.synds`` calls it.

Why a port: the ``"poly"`` propensity of ``utility.synds`` is ``polyclass(data = t, cov,
penalty = 0)`` followed by ``ppolyclass``; no Python library fits polyclass's adaptive
linear-spline / tensor-product logistic model, and its result depends on the details of the
search.  This module ports polspline 1.1.22's ``src/polyall.c`` for the case used there:
two classes, unit case weights, no test set, no cross-validation, ``penalty = 0``, the
default maximum dimension, no ``exclude``/``include``/``linear``:

* covariates are rounded to single precision (R passes ``as.single(cov)``); knots are
  single-precision data values;
* basis functions: the constant, a covariate (linear), ``(x - knot)+``, and products of two
  of those for two different covariates;
* fit (``pnewton``): Newton–Raphson on the log-likelihood with step halving; the Hessian of
  the first iteration is reused for iterations 1–7 (quasi-Newton), converged when the
  log-likelihood gains less than 1e-4; failures as in C;
* addition (``padddim``): every admissible candidate is scored by its Rao statistic at the
  current fit — first linear terms and products (``padders1``), then a new knot on each
  entered non-binary covariate (``pearch``: a few starting order statistics, then interval
  halving) — and the largest statistic (the earlier one on ties) is added;
* stop adding at ``maxdim`` or by polyclass's early-stopping rule for the default
  ``maxdim``; a failed refit restores the previous model ("model size was reduced");
* selection with ``penalty = 0``: the visited model with the largest log-likelihood.  The
  deletion phase is not ported: with ``penalty = 0`` it refits smaller models, which can be
  selected only on a tie within 1e-8 in −2 log-likelihood.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import numpy as np

MAXSPACE = 250
#: polyclass stops with 'not enough data' below this many records
MIN_POLY_RECORDS = 25
MAXKNOTS = 10
ZERROR = 1e-4
MAXITER = 300
FAILED = 200.0
#: a candidate whose weighted residual variance after the model's basis is below this share of its own is degenerate
DEGENERATE = 1e-8


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
    """Values of one basis function (``petvector``)."""
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
    return np.column_stack([_column(x, space, b) for b in space.basis])


def _theta(bmat: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """``beta_0 + sum_j B_j beta_j`` accumulated basis by basis, as polyall.c."""
    theta = np.full(bmat.shape[0], beta[0])
    for j in range(1, bmat.shape[1]):
        theta = theta + bmat[:, j] * beta[j]
    return theta


def _probs(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Probabilities of class 0 and of the reference class 1 (``pcompall``'s formulas)."""
    e = np.exp(np.minimum(theta, 600.0))
    p1 = 1.0 / (1.0 + e)
    return e * p1, p1


def _loglik(y0: np.ndarray, p0: np.ndarray, p1: np.ndarray) -> float:
    p = np.where(y0, p0, p1)
    return float(np.sum(np.where(p < 10.0e-250, -576.0, np.log(np.maximum(p, 1e-300)))))


@dataclass
class _Fit:
    """State shared by the search: data, current design, inverse information, fitted p0."""

    x: np.ndarray
    y0: np.ndarray  # record is of class 0 (t = 0)
    bmat: np.ndarray | None = None
    ainv: np.ndarray | None = None  # minus the inverse of the Hessian at the fit (w1 = -w3)
    p0: np.ndarray | None = None
    messages: list[str] = field(default_factory=list)

    def score_info(self, beta: np.ndarray, want_info: bool) -> tuple[float, np.ndarray, np.ndarray | None]:
        p0, p1 = _probs(_theta(self.bmat, beta))
        logl = _loglik(self.y0, p0, p1)
        score = self.bmat.T @ (self.y0 - p0)
        info = None
        if want_info:
            info = -(self.bmat.T @ (self.bmat * (p0 - p0 * p0)[:, None]))
        self.p0 = p0
        return logl, score, info

    def loglik(self, beta: np.ndarray) -> float:
        p0, p1 = _probs(_theta(self.bmat, beta))
        return _loglik(self.y0, p0, p1)


def _finite(v: float) -> bool:
    return bool(np.isfinite(v)) and abs(v) < 1e200


def _inverse(a: np.ndarray) -> np.ndarray:
    try:
        return np.linalg.inv(a)
    except np.linalg.LinAlgError:
        return np.linalg.pinv(a)


def pnewton(fit: _Fit, space: Space) -> float:
    """Fit ``space`` (polyall.c's ``pnewton``); the log-likelihood, or 200 on failure."""
    n = len(fit.y0)
    fit.bmat = design(fit.x, space)
    beta = np.asarray(space.beta, dtype=float)
    mm = 0
    logl = 0.0
    info = None
    it = 0
    converged = False
    while it < MAXITER:
        if it == 0 or mm == 3 or it > 7:
            logl, score, info = fit.score_info(beta, True)
            if logl < n * np.log(0.5):
                beta = np.zeros_like(beta)
                logl, score, info = fit.score_info(beta, True)
            info = _inverse(info)
            mm = 2
        elif mm == 7:
            it = 1
            mm = 1
            beta = np.zeros_like(beta)
            logl, score, info = fit.score_info(beta, True)  # not inverted: polyall.c's quirk
        else:
            logl, score, _ = fit.score_info(beta, False)
            mm = 1
        step = info @ score
        ihalf = 1
        while True:
            lnew = fit.loglik(beta - step)
            if lnew < logl - ZERROR:
                if ihalf > 8192 and mm == 2 and it > 0:
                    return FAILED
                if ihalf > 8192 and mm == 2:
                    mm = 7
                if ihalf > 8192 and mm != 7:
                    mm = 3
                    fit.messages.append("step half ouch...")
                ihalf *= 2
                step = step / 2
            if not (lnew < logl - ZERROR and mm != 3 and mm != 7):
                break
        if mm not in (3, 7):
            beta = beta - step
            if not (_finite(logl) and _finite(lnew)):
                return FAILED
            if lnew - logl < ZERROR:
                converged = True
                break
        it += 1
    if not converged:
        return FAILED
    space.beta = list(beta)
    lnew, _, info = fit.score_info(beta, True)
    fit.ainv = -_inverse(info)
    return lnew


# ---------------------------------------------------------------------------------------------
# the Rao statistic of a candidate and the search
# ---------------------------------------------------------------------------------------------
def _rao(fit: _Fit, space: Space, candidate: Basis) -> float:
    """Rao (score) statistic of adding ``candidate`` to the fitted ``space`` (``prao``)."""
    b = _column(fit.x, space, candidate)
    q = fit.p0 - fit.p0 * fit.p0
    s = float(np.sum(b * (fit.y0 - fit.p0)))
    f = fit.bmat.T @ (b * q)
    fnn = float(np.sum(b * b * q))
    v = fnn - float(f @ (fit.ainv @ f))
    # a candidate in the span of the model (a repeated knot, a knot at a covariate's minimum,
    # a product that is identically 0) has Rao 0/0; polyall.c evaluates it to rounding noise,
    # which can select it (its refit then fails).  Here it adds nothing: Rao 0.
    rao = 0.0 if v <= DEGENERATE * fnn else s * s / v
    if rao > 1000 and space.nbas + 1 > 3:
        rao = 0.0
    return rao


@dataclass
class _Best:
    crit: float
    space: Space | None = None


def _try(fit: _Fit, base: Space, best: _Best, candidate: Basis, knot: float | None = None) -> float:
    """Score a candidate added to ``base``; keep it in ``best`` if strictly better (``cripswap``)."""
    trial_space = base
    if knot is not None:
        trial_space = base.copy()
        trial_space.knots[candidate.b1].append(knot)
    rao = _rao(fit, trial_space, candidate)
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


def _products(fit: _Fit, space: Space, best: _Best) -> None:
    """``padders1``: new linear covariates and products of entered covariates."""
    ncov = space.ncov
    for i in range(ncov):
        for j in range(i + 1, ncov + 1):
            if j == ncov:
                if space.dim1[i] == 0:
                    _try(fit, space, best, Basis(i, -1, ncov, -1))
                continue
            d2, d3 = space.dim1[i], space.dim1[j]
            if not (d2 > 0 and d3 > 0):
                continue
            if space.dim2.get((i, j), 0) == 0:
                _try(fit, space, best, Basis(i, -1, j, -1))
                continue
            flags = space.kts2.get((i, j), set())
            for a in range(d2 - 1):
                if (a + 1, 0) in flags:
                    for c in range(d3 - 1):
                        if (a + 1, c + 1) not in flags and (0, c + 1) in flags:
                            _try(fit, space, best, Basis(i, a, j, c))
                else:
                    _try(fit, space, best, Basis(i, a, j, -1))
            for c in range(d3 - 1):
                if (0, c + 1) not in flags:
                    _try(fit, space, best, Basis(i, -1, j, c))


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


def _knot_search(fit: _Fit, space: Space, i0: int, mind: int, crito: float) -> tuple[float, Space | None]:
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
            critnew = _try(fit, space, local, cand, float(srt[iloc]))
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
            crit2 = _try(fit, space, local, cand, float(srt[iloc2])) if iloc2 >= 0 else crit
            iloc = _toward_lower(bloc, lloc, srt)
            critnew = _try(fit, space, local, cand, float(srt[iloc])) if iloc >= 0 else crit
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
    best = _Best(-1e20)
    _products(fit, space, best)
    for i in range(space.ncov):
        if space.dim1[i] == 0 or bincov[i] or space.dim1[i] >= MAXKNOTS:
            continue
        critx, found = _knot_search(fit, space, i, mind, best.crit)
        if critx > best.crit:
            best.crit, best.space = critx, found
    return best.space if best.crit > 0 else None


@dataclass(frozen=True)
class PolyclassFit:
    """A fitted two-class polyclass model (class 0 = ``t = 0``, class 1 the reference)."""

    space: Space
    ndim: int
    loglik_path: tuple[float, ...]
    visited: tuple[Space, ...]  # the fitted models of the addition phase, in order
    messages: tuple[str, ...]

    def prob1(self, x: np.ndarray) -> np.ndarray:
        """``ppolyclass(fit, cov)[, 2]``: probability of class 1 at the (double) covariates ``x``."""
        return probability1(self.space, x)


def probability1(space: Space, x: np.ndarray) -> np.ndarray:
    """``ppolyclass(fit, cov)[, 2]`` of the model ``space`` at the (double) covariates ``x``."""
    theta = _theta(design(np.asarray(x, dtype=float), space), np.asarray(space.beta))
    # R: p = exp(row - max(row)) / sum, rows (theta, 0)
    m = np.maximum(theta, 0.0)
    a, b = np.exp(theta - m), np.exp(-m)
    return b / (a + b)


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
        The selected model, its ``ndim``, the log-likelihood path and fitted models of the
        addition phase, and polyclass's console messages.

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
    best_aic = 10.0**150
    logs: dict[int, float] = {}
    path: list[float] = []
    visited: list[Space] = []
    add = True
    while add:
        ll = pnewton(fit, current)
        if ll > 190:
            # the refit of the larger model failed: the previous model (already the best) stays
            fit.messages.append("warning - model size was reduced")
            break
        logs[current.nbas] = ll
        path.append(ll)
        visited.append(current.copy())
        if current.nbas >= ndmax:
            add = False
        if -2 * ll <= best_aic + 1e-8:
            best, best_aic = current.copy(), -2 * ll
        nbas = current.nbas
        for i in range(2, nbas - 2):
            if logs[nbas] - logs[i] < (nbas - i) / 2 - 0.5:
                add = False
        if add:
            grown = _add_dimension(fit, current, mind, bincov)
            if grown is None:
                add = False
            else:
                current = grown
    if best is None:
        raise PolyclassError("polyclass: the constant model could not be fitted")
    return PolyclassFit(best, best.nbas, tuple(path), tuple(visited), tuple(fit.messages))
