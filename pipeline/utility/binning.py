"""Numeric binning exactly as synthpop's ``group_num`` (classInt breaks, R ``cut`` labels).

synthpop turns a numeric variable into a factor for table-based measures (``utility.tab``,
``disclosure``) and, on request (``ngroups``), for ``utility.gen``:

1. pool the values of the original and of the synthetic sets, without missing values and
   without the special missing codes (``cont.na``);
2. breaks = ``classInt::classIntervals(pooled, n, style)$brks`` made unique: sample quantiles
   (R type 7) at ``0, 1/n, ..., 1`` for ``style="quantile"``, ``n + 1`` equally spaced points
   for ``style="equal"``; when the pooled data have at most ``n`` distinct values every value
   is a class (breaks at mid-points, ends padded by half the mean gap);
3. ``cut(x, breaks, right=FALSE, include.lowest=TRUE, dig.lab=8)``: intervals ``[b0,b1)``,
   ..., ``[b(k-1),bk]`` labelled with 8 significant digits (more if labels would collide);
4. each special code becomes a level of its own (named as R prints the number), after the
   intervals; a missing value stays missing.

Everything here works on numpy arrays of the pooled *distinct values and their counts*, so the
same code serves pandas input and value counts aggregated from Dask partitions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pipeline.errors import ParameterError


def r_number_label(x: float) -> str:
    """A number as R's ``as.character`` prints it: at most 15 significant digits, in fixed
    notation unless scientific notation is shorter (``1e+05`` for 100000, ``-8``, ``0.5``).
    """
    x = float(x)
    if x == 0:
        return "0"
    if not np.isfinite(x):
        return "NaN" if np.isnan(x) else ("Inf" if x > 0 else "-Inf")
    target = float(f"{x:.14e}")
    digits = next(d for d in range(1, 16) if float(f"{x:.{d - 1}e}") == target)
    mant, exp = f"{x:.{digits - 1}e}".split("e")
    e = int(exp)
    sci = f"{mant}e{'-' if e < 0 else '+'}{abs(e):02d}"
    fixed = f"{target:.{max(0, digits - 1 - e)}f}"
    return fixed if len(fixed) <= len(sci) else sci


def r_seq_by(n: int) -> np.ndarray:
    """R's ``seq(0, 1, 1/n)``: ``(0:n) * (1/n)`` capped at 1."""
    by = 1.0 / n
    return np.minimum(np.arange(n + 1, dtype=float) * by, 1.0)


def quantile_type7(values: np.ndarray, counts: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """R ``quantile(x, probs, type = 7)`` of the data given as sorted distinct values and counts.

    Uses R's formula: ``index = 1 + (n - 1) p``, ``lo = floor(index)``, ``hi = ceiling(index)``,
    ``q = x[lo]`` and, where ``index > lo`` and ``x[hi] != q``, ``q = (1 - h) x[lo] + h x[hi]``.
    """
    n = int(counts.sum())
    cum = np.cumsum(counts)
    index = 1 + max(n - 1, 0) * probs
    lo = np.floor(index).astype(np.int64)
    hi = np.ceil(index).astype(np.int64)

    def order_stat(k: np.ndarray) -> np.ndarray:  # 1-based k-th smallest
        return values[np.searchsorted(cum, k, side="left")]

    qs = order_stat(lo)
    xhi = order_stat(hi)
    h = index - lo
    interp = (index > lo) & (xhi != qs)
    qs = np.where(interp, (1 - h) * qs + h * xhi, qs)
    return qs


def class_interval_breaks(values: np.ndarray, counts: np.ndarray, n: int, style: str = "quantile") -> np.ndarray:
    """``unique(classInt::classIntervals(pooled, n, style)$brks)`` from distinct values and counts.

    Parameters
    ----------
    values : ndarray
        Sorted distinct finite values of the pooled data.
    counts : ndarray
        How often each value occurs.
    n : int
        Number of classes requested.
    style : {"quantile", "equal"}
    """
    if n < 2:
        raise ParameterError(f"ngroups must be at least 2, got {n}")
    nobs = len(values)
    if nobs == 0:
        raise ParameterError("cannot bin a numeric variable without any non-missing value")
    if nobs == 1:
        raise ParameterError(
            "cannot bin a numeric variable with a single distinct value (classInt: 'single unique value')"
        )
    if n >= nobs:
        gaps = np.diff(values)
        md = gaps.mean()
        brks = np.concatenate([[values[0] - md / 2], values[:-1] + gaps / 2, [values[-1] + md / 2]])
    elif style == "quantile":
        brks = quantile_type7(values, counts, r_seq_by(n))
    elif style == "equal":
        lo, hi = float(values[0]), float(values[-1])
        brks = np.concatenate([[lo], lo + np.arange(1, n) * ((hi - lo) / n), [hi]])
    else:
        raise ParameterError(f"binning style must be 'quantile' or 'equal', got {style!r}")
    # R's unique() keeps the first occurrence; breaks are non-decreasing so this is a dedup
    return np.asarray(list(dict.fromkeys(brks.tolist())), dtype=float)


def cut_labels(breaks: np.ndarray, dig_lab: int = 8) -> list[str]:
    """Labels of ``cut(..., right = FALSE, include.lowest = TRUE, dig.lab = dig_lab)``."""
    nb = len(breaks)
    for dig in range(dig_lab, max(12, dig_lab) + 1):
        ch = [f"{b + 0.0:.{dig}g}" for b in breaks]
        if all(ch[i + 1] != ch[i] for i in range(nb - 1)):
            break
    else:  # R falls back to numbered labels when even 12 digits collide
        return [f"Range_{i + 1}" for i in range(nb - 1)]
    labels = [f"[{ch[i]},{ch[i + 1]})" for i in range(nb - 1)]
    labels[-1] = labels[-1][:-1] + "]"
    return labels


@dataclass(frozen=True)
class Binning:
    """How one numeric variable is cut into levels.

    Attributes
    ----------
    breaks : ndarray
        Unique, increasing break points.
    levels : tuple of str
        Interval labels, then one label per special missing code.
    codes : tuple of float
        The special missing codes, in the order of their levels.
    """

    breaks: np.ndarray
    levels: tuple[str, ...]
    codes: tuple[float, ...]

    @property
    def n_intervals(self) -> int:
        return len(self.breaks) - 1

    def assign(self, x: np.ndarray) -> np.ndarray:
        """Level index (0-based) of every value; -1 for a missing value.

        Values equal to a special code get the code's level; other values the interval
        ``[b_i, b_{i+1})`` they fall in (the last interval is closed).  A value outside the
        breaks (impossible when the breaks come from the pooled data) is missing, as in R.
        """
        x = np.asarray(x, dtype=float)
        out = np.full(x.shape, -1, dtype=np.int64)
        ok = ~np.isnan(x)
        special = np.zeros(x.shape, dtype=bool)
        for j, code in enumerate(self.codes):
            hit = ok & (x == code)
            out[hit] = self.n_intervals + j
            special |= hit
        regular = ok & ~special
        v = x[regular]
        idx = np.searchsorted(self.breaks, v, side="right") - 1
        idx[v == self.breaks[-1]] = self.n_intervals - 1
        idx[(v < self.breaks[0]) | (v > self.breaks[-1])] = -1
        out[regular] = idx
        return out


def make_binning(
    values: np.ndarray,
    counts: np.ndarray,
    ngroups: int,
    codes: Sequence[float] = (),
    style: str = "quantile",
) -> Binning:
    """synthpop's ``group_num`` breaks and levels from the pooled distinct values and counts."""
    breaks = class_interval_breaks(values, counts, ngroups, style)
    if len(breaks) < 2:
        raise ParameterError("binning produced fewer than two distinct breaks")
    levels = tuple(cut_labels(breaks)) + tuple(r_number_label(c) for c in codes)
    return Binning(breaks=breaks, levels=levels, codes=tuple(float(c) for c in codes))
