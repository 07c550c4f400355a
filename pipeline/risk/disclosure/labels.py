"""Category labels as R writes them, and classInt's numeric binning.

synthpop turns numbers into categories in two ways, and both are reproduced exactly here
because the labels are part of the output (check tables, exclusion parameters) and the bin
edges decide which records share a key group:

* without grouping, ``factor(x)``: one category per distinct value, labelled with
  ``as.character`` (15 significant digits, fixed or scientific notation, whichever is
  narrower) — :func:`r_number_label`;
* with ``ngroups``, ``classInt::classIntervals(style = "quantile" | "equal")`` break points,
  then ``cut(..., right = FALSE, include.lowest = TRUE, dig.lab = 8)`` labels such as
  ``[1,3)`` — :func:`class_breaks` and :func:`interval_labels`.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Literal

import numpy as np

from pipeline.errors import ParameterError

BinStyle = Literal["quantile", "equal"]


def r_number_label(x: float) -> str:
    """``as.character(x)`` of R (>= 4.0) for one finite double.

    R keeps the fewest significant digits (at most 15) that represent the value to 15
    digits, and uses fixed notation unless scientific notation is narrower
    (``100000`` -> ``"1e+05"``, ``123456`` -> ``"123456"``, ``0.0001`` -> ``"1e-04"``).
    """
    if x == 0:
        return "0"
    mantissa, exp_text = f"{x:.14e}".split("e")
    exponent = int(exp_text)
    digits = mantissa.lstrip("-").replace(".", "").rstrip("0")
    nsig = max(1, len(digits))
    neg = 1 if x < 0 else 0
    if exponent >= 0:
        left, right = exponent + 1, max(0, nsig - exponent - 1)
    else:
        left, right = 1, nsig - exponent - 1
    fixed_width = neg + left + (right + 1 if right > 0 else 0)
    sci_width = neg + (nsig + 1 if nsig > 1 else 1) + (4 if abs(exponent) < 100 else 5)
    if fixed_width <= sci_width:
        return f"{x:.{right}f}"
    return f"{x:.{nsig - 1}e}"


def r_number_labels(values: np.ndarray) -> list[str]:
    """:func:`r_number_label` of every value."""
    return [r_number_label(float(v)) for v in values]


def quantile7(sorted_values: np.ndarray, counts: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """R's ``quantile(type = 7)`` of a multiset given as sorted distinct values with counts.

    Order statistics are looked up in the cumulative counts, so the whole sample never has
    to be materialised; the interpolation is R's ``(1 - h) * x[lo] + h * x[hi]``.
    """
    n = int(counts.sum())
    cum = np.cumsum(counts)
    index = 1 + (n - 1) * probs
    lo = np.floor(index)
    hi = np.ceil(index)

    def order_stat(k: np.ndarray) -> np.ndarray:  # k is 1-based
        return sorted_values[np.searchsorted(cum, k.astype(np.int64), side="left")]

    x_lo, x_hi = order_stat(lo), order_stat(hi)
    out = x_lo.copy()
    interp = (index > lo) & (x_hi != x_lo)
    h = (index - lo)[interp]
    out[interp] = (1 - h) * x_lo[interp] + h * x_hi[interp]
    return out


def class_breaks(sorted_values: np.ndarray, counts: np.ndarray, n: int, style: BinStyle) -> np.ndarray:
    """``unique(classInt::classIntervals(x, n, style)$brks)`` for the multiset (values, counts).

    classInt makes every distinct value its own class when there are at most ``n`` of them
    (break points half-way between neighbours, ends padded by half the mean gap).
    """
    nobs = len(sorted_values)
    if nobs < 2:
        raise ParameterError("cannot group a numeric variable with fewer than two distinct values")
    if n >= nobs:
        gaps = np.diff(sorted_values)
        half_mean_gap = gaps.mean() / 2
        brks = np.concatenate(
            [[sorted_values[0] - half_mean_gap], sorted_values[:-1] + gaps / 2, [sorted_values[-1] + half_mean_gap]]
        )
    elif style == "quantile":
        probs = np.minimum(np.arange(n + 1) * (1 / n), 1.0)  # R: seq(0, 1, 1/n)
        brks = quantile7(sorted_values, counts, probs)
    elif style == "equal":
        lo, hi = float(sorted_values[0]), float(sorted_values[-1])
        step = (hi - lo) / n  # R: seq(min, max, length.out = n + 1)
        brks = np.concatenate([[lo], lo + np.arange(1, n) * step, [hi]])
    else:
        raise ParameterError(f"unknown grouping style {style!r}; expected 'quantile' or 'equal'")
    return np.array(list(dict.fromkeys(brks.tolist())), dtype=np.float64)


def interval_labels(breaks: Sequence[float], dig_lab: int = 8) -> list[str]:
    """Labels of ``cut(breaks = breaks, right = FALSE, include.lowest = TRUE, dig.lab = 8)``.

    Like R, the number of significant digits is raised (up to 12) until neighbouring break
    labels differ.
    """
    brks = np.sort(np.asarray(breaks, dtype=np.float64))
    text: list[str] = []
    for digits in range(dig_lab, max(12, dig_lab) + 1):
        text = [f"{b + 0:.{digits}g}" for b in brks]
        if all(a != b for a, b in itertools.pairwise(text)):
            break
    else:
        return [f"Range_{i + 1}" for i in range(len(brks) - 1)]
    labels = [f"[{a},{b})" for a, b in itertools.pairwise(text)]
    labels[-1] = labels[-1][:-1] + "]"
    return labels


def bin_index(x: np.ndarray, breaks: np.ndarray) -> np.ndarray:
    """0-based interval of each value for left-closed intervals, the last one closed."""
    idx = np.searchsorted(breaks, x, side="right") - 1
    return np.clip(idx, 0, len(breaks) - 2)
