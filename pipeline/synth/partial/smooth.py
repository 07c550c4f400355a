"""synthpop's ``smoothing = "density"`` of synthesised numeric values (``syn.smooth``).

Each drawn value ``y`` becomes ``y + h Z`` (``Z`` standard normal) with ``h`` the
Sheather-Jones bandwidth of the drawn values (R's ``bw.SJ``, ``method = "ste"``, the binned
pair counts R uses for more than 500 values), except that values holding more than 70 % of the
draws, and the maximum when the data look top-coded (its count exceeds the second-largest
value's by more than ten times that count), stay as they are.  Smoothed values are clipped to
``[min(y_obs), max(y_obs) + h]`` (to ``max(y_obs)`` when top-coded) and rounded to the largest
number of decimals of the original values.

The root of the SJ equation is found by Brent's method to R's tolerance (``0.1 * lower``), so
``h`` agrees with R's within that tolerance, not to the last digit.
"""

from __future__ import annotations

import numpy as np

from pipeline.synth.partial.parametric import decimals

NB = 1000
DELMAX = 1000.0
SQRT_2PI = float(np.sqrt(2 * np.pi))


def _pair_counts(x: np.ndarray, nb: int = NB) -> tuple[float, np.ndarray]:
    """R's ``bw_pair_cnts``: bin width and the number of pairs of values ``k`` bins apart."""
    n = len(x)
    if n > nb / 2:  # binned
        lo, hi = x.min(), x.max()
        d = (hi - lo) * 1.01 / nb
        xx = np.trunc(np.abs(x) / d) * np.sign(x)
        xx = (xx - xx.min()).astype(np.int64)
        w = np.bincount(xx, minlength=nb)[:nb].astype(float)
        cnt = np.correlate(w, w, mode="full")[nb - 1 :].copy()
        cnt[0] = 0.5 * float(np.sum(w * (w - 1.0)))
        return float(d), cnt
    d = (x.max() - x.min()) * 1.01 / nb
    bins = (x / d).astype(np.int64)
    diff = np.abs(bins[:, None] - bins[None, :])[np.triu_indices(n, 1)]
    return float(d), np.bincount(diff, minlength=nb).astype(float)[:nb]


def _phi(n: int, d: float, cnt: np.ndarray, h: float, order: int) -> float:
    delta = (np.arange(len(cnt)) * d / h) ** 2
    keep = delta < DELMAX
    first = int(np.argmin(keep)) if not keep.all() else len(keep)  # R stops at the first large delta
    delta, c = delta[:first], cnt[:first]
    if order == 4:
        term = np.exp(-delta / 2) * (delta * delta - 6 * delta + 3)
        total = 2 * float(np.sum(term * c)) + n * 3
        return total / (n * (n - 1) * h**5 * SQRT_2PI)
    term = np.exp(-delta / 2) * (delta**3 - 15 * delta**2 + 45 * delta - 15)
    total = 2 * float(np.sum(term * c)) - 15 * n
    return total / (n * (n - 1) * h**7 * SQRT_2PI)


def bandwidth_sj(x: np.ndarray) -> float:
    """R's ``bw.SJ(x)`` (``method = "ste"``).

    Raises
    ------
    ValueError
        Fewer than 2 values, or a sample too sparse for the SJ equation (R's own errors).
    """
    x = np.asarray(x, dtype=float)
    n = len(x)
    if n < 2:
        raise ValueError("bw.SJ needs at least 2 data points")
    d, cnt = _pair_counts(x)
    q75, q25 = np.quantile(x, [0.75, 0.25])
    scale = min(float(np.std(x, ddof=1)), (q75 - q25) / 1.349)
    a = 1.24 * scale * n ** (-1 / 7)
    b = 1.23 * scale * n ** (-1 / 9)
    c1 = 1 / (2 * np.sqrt(np.pi) * n)
    td = -_phi(n, d, cnt, b, 6)
    if not np.isfinite(td) or td <= 0:
        raise ValueError("sample is too sparse to find TD")
    hmax = 1.144 * scale * n ** (-1 / 5)
    lower, upper = 0.1 * hmax, hmax
    tol = 0.1 * lower
    alph2 = 1.357 * (_phi(n, d, cnt, a, 4) / td) ** (1 / 7)
    if not np.isfinite(alph2):
        raise ValueError("sample is too sparse to find alph2")

    def fsd(h: float) -> float:
        return (c1 / _phi(n, d, cnt, alph2 * h ** (5 / 7), 4)) ** (1 / 5) - h

    itry = 1
    while fsd(lower) * fsd(upper) > 0:
        if itry > 99:
            raise ValueError("no solution in the specified range of bandwidths")
        if itry % 2:
            upper *= 1.2
        else:
            lower /= 1.2
        itry += 1
    from scipy import optimize  # on first use: loading scipy.optimize costs about a second

    return float(optimize.brentq(fsd, lower, upper, xtol=tol))


def smooth_density(ysyn: np.ndarray, yobs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``syn.smooth(ysyn, yobs, smoothing = "density")``."""
    ysyn = np.asarray(ysyn, dtype=float).copy()
    values, counts = np.unique(ysyn, return_counts=True)
    smooth = np.ones(len(ysyn), dtype=bool)
    top = int(np.argmax(counts))
    if counts[top] / counts.sum() > 0.7:
        smooth &= ysyn != values[top]
    maxy = None
    if len(counts) >= 2 and 10 * counts[-2] < counts[-1] - counts[-2]:  # looks top-coded
        maxy = float(yobs.max())
        smooth &= ysyn != maxy
    ys = ysyn[smooth]
    h = bandwidth_sj(ys)
    ys = ys + rng.standard_normal(len(ys)) * h
    upper = maxy if maxy is not None else float(yobs.max()) + h
    ysyn[smooth] = np.round(np.clip(ys, float(yobs.min()), upper), decimals(yobs))
    return ysyn
