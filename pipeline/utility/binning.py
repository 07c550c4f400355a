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

The R pieces (classInt breaks, ``cut`` labels and intervals, ``as.character``) come from
:mod:`pipeline.rcompat`, shared with ``disclosure``. Everything here works on numpy arrays of
the pooled *distinct values and their counts*, so the same code serves pandas input and value
counts aggregated from Dask partitions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pipeline.errors import ParameterError
from pipeline.rcompat import as_character, class_breaks, cut_index, cut_labels


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
        out[regular] = cut_index(x[regular], self.breaks)
        return out


def make_binning(
    values: np.ndarray,
    counts: np.ndarray,
    ngroups: int,
    codes: Sequence[float] = (),
    style: str = "quantile",
) -> Binning:
    """synthpop's ``group_num`` breaks and levels from the pooled distinct values and counts."""
    if len(values) == 0:
        raise ParameterError("cannot bin a numeric variable without any non-missing value")
    breaks = class_breaks(values, counts, ngroups, style)
    if len(breaks) < 2:
        raise ParameterError("binning produced fewer than two distinct breaks")
    levels = tuple(cut_labels(breaks, dig_lab=8)) + tuple(as_character(c) for c in codes)
    return Binning(breaks=breaks, levels=levels, codes=tuple(float(c) for c in codes))
