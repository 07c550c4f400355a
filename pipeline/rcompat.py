"""R behaviour that several ports rely on, implemented once.

synthpop's outputs contain labels and break points made by base R and classInt; to compare
numbers with the R references they must come out exactly as R makes them:

* :func:`as_character` - ``as.character()`` of a double (category labels of numbers, e.g.
  ``factor(x)`` of a numeric key, or a ``cont.na`` code as a level);
* :func:`quantile7` - ``quantile(type = 7)`` (R's default), from value counts;
* :func:`class_breaks` - ``classInt::classIntervals(style = "quantile" | "equal")$brks``;
* :func:`cut_labels` / :func:`cut_index` - ``cut(right = FALSE, include.lowest = TRUE)``;
* :func:`normalise_cont_na` - synthpop's ``cont.na`` argument as ``{variable: codes}``.

The references were made with R 4.2.2; everything here follows that R's source (``formatReal``
and ``scientific`` in ``src/main/format.c``, ``cut.default``, ``quantile.default``,
``seq.default``), which is unchanged in this respect up to R 4.5.
"""

from __future__ import annotations

import itertools
import math
import numbers
import struct
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from pipeline.errors import ParameterError

BinStyle = Literal["quantile", "equal"]

# ---- as.character(<double>) ----------------------------------------------------------------

#: R sets ``R_print.digits = DBL_DIG`` (15) for as.character: every digit shown is reliable
#: (15 decimal digits always survive a round trip through a double), at the price of not
#: always reading back to the same double (as.character(0.1 + 0.2) is "0.3").
_DIGITS = 15
#: R's table of powers of ten that are exact in a long double (64-bit mantissa).
_KP_MAX = 27
_POW10 = [np.longdouble(1)]
for _ in range(_KP_MAX):
    _POW10.append(_POW10[-1] * 10)
_TBL = np.array(_POW10, dtype=np.longdouble)
#: low word of the NaN payload of R's NA_real_ (R_NaReal); any other NaN is NaN.
_R_NA_PAYLOAD = 1954


def _is_r_na(x: float) -> bool:
    return math.isnan(x) and struct.unpack("<Q", struct.pack("<d", x))[0] & 0xFFFFFFFF == _R_NA_PAYLOAD


def _scientific(r: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """R's ``scientific()`` for positive finite ``r`` at 15 digits: (kpower, nsig, roundingwidens).

    R scales ``r`` to a 15-digit integer in long double (exact powers of ten up to 1e27),
    rounds it half-to-even, and counts the significant digits left after dropping trailing
    zeros; the *width* decision of :func:`as_character` depends on these counts, so they are
    reproduced with the same arithmetic rather than with exact decimal rounding.
    """
    kp = np.array([math.floor(math.log10(v)) for v in r], dtype=np.int64) - _DIGITS + 1
    r_prec = r.astype(np.longdouble)
    exact = np.abs(kp) <= _KP_MAX
    pos, neg = exact & (kp > 0), exact & (kp < 0)
    r_prec[pos] /= _TBL[kp[pos]]
    r_prec[neg] *= _TBL[-kp[neg]]
    far = ~exact
    if far.any():  # R: powl(10, kp)
        r_prec[far] /= np.power(np.longdouble(10), kp[far].astype(np.longdouble))
    low = r_prec < _TBL[_DIGITS - 1]  # log10 rounded up: one digit short
    r_prec[low] *= 10
    kp[low] -= 1
    alpha = np.rint(r_prec).astype(np.float64)
    nsig = np.full(r.shape, _DIGITS, dtype=np.int64)
    going = np.ones(r.shape, dtype=bool)
    for _ in range(_DIGITS):  # drop trailing zeros of the 15-digit integer
        alpha = alpha / 10.0
        whole = alpha == np.floor(alpha)
        nsig[going & whole] -= 1
        going &= whole
    zero = nsig == 0  # alpha rounded up to 10^15
    nsig[zero] = 1
    kp[zero] += 1
    kpower = kp + _DIGITS - 1
    # fixed notation can round less than scientific (R's 9996 at 3 digits); rare at 15 digits
    rgt = np.clip(_DIGITS - kpower, 0, _KP_MAX)
    fuzz = 0.5 / _TBL[rgt].astype(np.float64)
    inside = (kpower > 0) & (kpower <= _KP_MAX)
    widens = np.zeros(r.shape, dtype=bool)
    widens[inside] = r[inside].astype(np.longdouble) < _TBL[kpower[inside]] - fuzz[inside]
    return kpower, nsig, widens


def _drop0(text: str) -> str:
    """R's ``EncodeRealDrop0``: trailing zeros of the decimals go, and a bare ``.`` with them."""
    if "." not in text:
        return text
    mantissa, e, exponent = text.partition("e")
    mantissa = mantissa.rstrip("0").rstrip(".")
    return mantissa + e + exponent


def _encode(x: float, kpower: int, nsig: int, widens: bool) -> str:
    """R's ``formatReal`` for one value (scipen = 0), then ``EncodeRealDrop0``."""
    neg = 1 if x < 0 else 0
    left = kpower + 1 - (1 if widens else 0)
    right = nsig - left  # digits right of the decimal point in fixed notation
    rgt = max(right, 0)
    sleft = neg + (left if left > 0 else 1)
    width_fixed = sleft + rgt + (1 if rgt else 0)
    exp_digits = 2 if (left > 100 or left <= -99) else 1  # three-digit exponent
    d = nsig - 1
    width_sci = neg + (1 if d > 0 else 0) + d + 4 + exp_digits
    # R prefers fixed notation unless it is wider than scientific (ties go to fixed):
    # 123456 stays "123456", 100000 becomes "1e+05", 0.0001 becomes "1e-04"
    if width_fixed <= width_sci:
        return _drop0(f"{x:.{rgt}f}")
    return _drop0(f"{x:.{d}e}")


def as_character_array(values: ArrayLike) -> list[str]:
    """``as.character()`` of every number (see :func:`as_character`), vectorised.

    Parameters
    ----------
    values : array_like of float
        NaN is ``"NaN"`` unless it carries R's NA payload (then ``"NA"``).

    Returns
    -------
    list of str
    """
    x = np.asarray(values, dtype=np.float64).ravel()
    out = [""] * x.size
    finite = np.isfinite(x)
    nonzero = finite & (x != 0)
    idx = np.flatnonzero(nonzero)
    if idx.size:
        kpower, nsig, widens = _scientific(np.abs(x[idx]))
        for j, i in enumerate(idx.tolist()):
            out[i] = _encode(float(x[i]), int(kpower[j]), int(nsig[j]), bool(widens[j]))
    for i in np.flatnonzero(~nonzero).tolist():
        v = float(x[i])
        if v == 0:
            out[i] = "0"  # R prints -0 as 0 (EncodeRealDrop0 resets the sign)
        elif math.isnan(v):
            out[i] = "NA" if _is_r_na(v) else "NaN"
        else:
            out[i] = "Inf" if v > 0 else "-Inf"
    return out


def as_character(x: float | None) -> str:
    """R's ``as.character(x)`` of one double.

    R (``StringFromReal``) formats with 15 significant digits, the fewest that show the value
    rounded to 15 digits, drops trailing zeros, and uses fixed notation unless scientific
    notation is narrower (``options(scipen = 0)``). There is no 17-digit fallback: a value
    that 15 digits do not pin down keeps its 15-digit label.

    Parameters
    ----------
    x : float or None
        ``None`` (or ``pandas.NA``) stands for R's ``NA``.

    Returns
    -------
    str
        E.g. ``57 -> "57"``, ``100000 -> "1e+05"``, ``123456 -> "123456"``,
        ``1e-04 -> "1e-04"``, ``0.1 + 0.2 -> "0.3"``, ``1/3 -> "0.333333333333333"``,
        ``1234567890123456 -> "1234567890123456"`` (fixed notation prints every integer
        digit of the double), ``NaN -> "NaN"``, ``-Inf -> "-Inf"``.
    """
    if x is None or x is pd.NA:
        return "NA"
    return as_character_array([float(x)])[0]


# ---- quantile(type = 7) and classInt breaks --------------------------------------------------


def seq_probs(n: int) -> np.ndarray:
    """R's ``seq(0, 1, 1/n)``: ``(0:n) * (1/n)`` capped at 1 (``seq.default`` guards overshoot)."""
    return np.minimum(np.arange(n + 1, dtype=np.float64) * (1.0 / n), 1.0)


def seq_length_out(start: float, stop: float, length_out: int) -> np.ndarray:
    """R's ``seq(start, stop, length.out = length_out)``: the ends are exactly ``start`` and ``stop``."""
    n1 = length_out - 1
    return np.concatenate([[start], start + np.arange(1, n1, dtype=np.float64) * ((stop - start) / n1), [stop]])


def quantile7(sorted_values: np.ndarray, counts: np.ndarray, probs: ArrayLike) -> np.ndarray:
    """R's ``quantile(x, probs, type = 7)`` of a sample given as sorted distinct values and counts.

    The order statistics are looked up in the cumulative counts, so a distributed sample is
    never materialised. R's formula is kept to the last bit: ``index = 1 + (n - 1) p``,
    ``q = x[lo]`` and, where ``index > lo`` and ``x[hi] != x[lo]``,
    ``q = (1 - h) x[lo] + h x[hi]`` with ``h = index - lo``.

    Parameters
    ----------
    sorted_values : ndarray
        Distinct values, increasing.
    counts : ndarray
        How often each value occurs (at least one value in all).
    probs : array_like
        Probabilities in [0, 1].
    """
    cum = np.cumsum(counts)
    if cum.size == 0 or cum[-1] < 1:
        raise ParameterError("quantiles of an empty sample are not defined")
    n = int(cum[-1])
    p = np.asarray(probs, dtype=np.float64)
    index = 1 + (n - 1) * p
    lo = np.floor(index)
    hi = np.ceil(index)

    def order_stat(k: np.ndarray) -> np.ndarray:  # k-th smallest, k 1-based
        return sorted_values[np.searchsorted(cum, k.astype(np.int64), side="left")]

    x_lo, x_hi = order_stat(lo), order_stat(hi)
    h = index - lo
    interp = (index > lo) & (x_hi != x_lo)
    return np.where(interp, (1 - h) * x_lo + h * x_hi, x_lo)


def class_breaks(sorted_values: np.ndarray, counts: np.ndarray, n: int, style: str = "quantile") -> np.ndarray:
    """``unique(classInt::classIntervals(x, n, style)$brks)`` from distinct values and counts.

    classInt makes every distinct value a class of its own when there are at most ``n`` of
    them (break points half-way between neighbours, the ends padded by half the mean gap);
    otherwise "quantile" takes type-7 quantiles at ``seq(0, 1, 1/n)`` and "equal" takes
    ``seq(min, max, length.out = n + 1)``. Duplicated breaks are dropped (synthpop calls
    ``unique()``), keeping the first.

    Parameters
    ----------
    sorted_values : ndarray
        Sorted distinct finite values.
    counts : ndarray
        How often each value occurs.
    n : int
        Number of classes asked for (>= 2).
    style : {"quantile", "equal"}

    Raises
    ------
    ParameterError
        ``n < 2``, fewer than two distinct values, or an unknown style.
    """
    if n < 2:
        raise ParameterError(f"ngroups must be at least 2, got {n}")
    nobs = len(sorted_values)
    if nobs < 2:
        raise ParameterError(
            "cannot group a numeric variable with fewer than two distinct non-missing values "
            "(classInt: 'single unique value')"
        )
    if style not in ("quantile", "equal"):
        raise ParameterError(f"grouping style must be 'quantile' or 'equal', got {style!r}")
    if n >= nobs:
        gaps = np.diff(sorted_values)
        half_mean_gap = gaps.mean() / 2
        brks = np.concatenate(
            [[sorted_values[0] - half_mean_gap], sorted_values[:-1] + gaps / 2, [sorted_values[-1] + half_mean_gap]]
        )
    elif style == "quantile":
        brks = quantile7(sorted_values, counts, seq_probs(n))
    else:
        brks = seq_length_out(float(sorted_values[0]), float(sorted_values[-1]), n + 1)
    return np.array(list(dict.fromkeys(brks.tolist())), dtype=np.float64)


# ---- cut() -------------------------------------------------------------------------------------


def format_g(x: float, digits: int) -> str:
    """R's ``formatC(x, digits = digits, width = 1)`` of a double (C's ``%.*g``).

    Non-finite values are written as R writes them (``Inf``, ``-Inf``, ``NaN``).
    """
    if not math.isfinite(x):
        return as_character(x)
    return f"{x + 0.0:.{digits}g}"  # R's cut() formats 0 + breaks: no "-0"


def cut_labels(breaks: Sequence[float] | np.ndarray, dig_lab: int = 8) -> list[str]:
    """Level labels of ``cut(x, breaks, right = FALSE, include.lowest = TRUE, dig.lab = dig_lab)``.

    R formats the sorted breaks with ``formatC(digits = dig)`` for ``dig`` from ``dig.lab``
    up to ``max(12, dig.lab)``, stopping at the first ``dig`` that gives neighbouring breaks
    different text; if even that fails the levels are ``Range_1, Range_2, ...``. Intervals
    are ``[a,b)``, the last one closed: ``[a,b]``.

    Parameters
    ----------
    breaks : sequence of float
        At least two distinct break points (sorted here, as R does).
    dig_lab : int
        synthpop's grouping uses 8; ``cut()``'s own default is 3.
    """
    brks = np.sort(np.asarray(breaks, dtype=np.float64))
    if brks.size < 2:
        raise ParameterError("cut needs at least two break points")
    if np.any(brks[1:] == brks[:-1]):
        raise ParameterError("cut: 'breaks' are not unique")
    text = cut_edge_texts(brks, dig_lab)
    if text is None:
        return [f"Range_{i + 1}" for i in range(brks.size - 1)]
    return interval_labels(text)


def cut_edge_texts(breaks: np.ndarray, dig_lab: int = 8) -> list[str] | None:
    """The break texts of :func:`cut_labels` (sorted, distinct ``breaks``); ``None`` when R falls
    back to ``Range_i`` labels."""
    for digits in range(dig_lab, max(12, dig_lab) + 1):
        text = [format_g(float(b), digits) for b in breaks]
        if all(a != b for a, b in itertools.pairwise(text)):
            return text
    return None


def interval_labels(edges: Sequence[str]) -> list[str]:
    """``cut``'s interval labels from the edge texts: ``[a,b)``, the last one closed ``[a,b]``."""
    labels = [f"[{a},{b})" for a, b in itertools.pairwise(edges)]
    labels[-1] = labels[-1][:-1] + "]"
    return labels


def cut_index(x: ArrayLike, breaks: np.ndarray) -> np.ndarray:
    """0-based interval of each value under ``cut(right = FALSE, include.lowest = TRUE)``.

    Intervals are ``[b_i, b_{i+1})`` and the last one is closed; a value outside
    ``[b_0, b_k]`` or missing is -1 (R's ``NA``).
    """
    v = np.asarray(x, dtype=np.float64)
    b = np.asarray(breaks, dtype=np.float64)
    idx = np.searchsorted(b, v, side="right") - 1
    idx[v == b[-1]] = b.size - 2
    idx[~((v >= b[0]) & (v <= b[-1]))] = -1
    return idx.astype(np.int64)


# ---- cont.na ---------------------------------------------------------------------------------


def normalise_cont_na(cont_na: Mapping[str, Any] | None) -> dict[str, tuple[float, ...]]:
    """synthpop's ``cont.na`` as ``{variable: (code, ...)}``.

    A variable may be given one code or a list of codes. ``None`` entries are R's ``NA``
    (synthpop's default ``cont.na`` entry, which adds nothing: NA is always missing) and are
    dropped; duplicates are dropped. Codes must be finite numbers because they are compared
    with ``==`` to the data and become levels named by :func:`as_character`.

    Raises
    ------
    ParameterError
        ``cont_na`` is not a mapping, or a code is not a finite number.
    """
    if cont_na is None:
        return {}
    if not isinstance(cont_na, Mapping):
        raise ParameterError("cont_na must be a mapping variable -> code(s), e.g. {'income': -8}")
    out: dict[str, tuple[float, ...]] = {}
    for name, value in cont_na.items():
        seq = list(value) if isinstance(value, (list, tuple, np.ndarray)) else [value]
        codes = []
        for v in seq:
            if v is None:
                continue
            if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v):
                raise ParameterError(f"cont_na[{str(name)!r}] must be finite number(s), got {value!r}")
            codes.append(float(v))
        out[str(name)] = tuple(dict.fromkeys(codes))
    return out


# ---- pretty() and hist() -------------------------------------------------------------------
def pretty(lo: float, hi: float, n: int = 5, min_n: int | None = None) -> np.ndarray:
    """R's ``pretty(c(lo, hi), n, min.n)`` (``R_pretty`` in ``src/appl/pretty.c``, R 4.2's
    ``rounding_eps = 1e-10``, default biases ``high.u.bias = 1.5``, ``u5.bias = 2.75``)."""
    min_n = n // 3 if min_n is None else min_n
    h, h5, shrink, rounding_eps = 1.5, 0.5 + 1.5 * 1.5, 0.75, 1e-10
    eps = np.finfo(float).eps
    dx = hi - lo
    if dx == 0 and hi == 0:
        cell, small = 1.0, True
    else:
        cell = max(abs(lo), abs(hi))
        u = 1 + (1 / (1 + h) if h5 >= 1.5 * h + 0.5 else 1.5 / (1 + h5))
        u *= max(1, n) * eps
        small = dx < cell * u * 3
    if small:
        if cell > 10:
            cell = 9 + cell / 10
        cell *= shrink
        if min_n > 1:
            cell /= min_n
    else:
        cell = dx
        if n > 1:
            cell /= n
    base = 10.0 ** math.floor(math.log10(cell))
    unit = base
    if 2 * base - cell < h * (cell - unit):
        unit = 2 * base
        if 5 * base - cell < h5 * (cell - unit):
            unit = 5 * base
            if 10 * base - cell < h * (cell - unit):
                unit = 10 * base
    ns = math.floor(lo / unit + rounding_eps)
    nu = math.ceil(hi / unit - rounding_eps)
    while ns * unit > lo + rounding_eps * unit:
        ns -= 1
    while nu * unit < hi - rounding_eps * unit:
        nu += 1
    k = int(0.5 + nu - ns)
    if k < min_n:
        k = min_n - k
        if ns >= 0:
            nu += k // 2
            ns -= k // 2 + k % 2
        else:
            ns -= k // 2
            nu += k // 2 + k % 2
        ndiv = min_n
    else:
        ndiv = k
    out = np.linspace(ns * unit, nu * unit, ndiv + 1)  # seq.int(l, u, length.out = n + 1)
    if ndiv:
        out[np.abs(out) < 1e-14 * (nu * unit - ns * unit) / ndiv] = 0.0
    return out


def hist_counts(values: np.ndarray, breaks: np.ndarray) -> np.ndarray:
    """``hist(values, breaks)$counts``: right-closed bins, the first closed, with R's fuzz
    (``1e-7`` of the median bin width) so that values on a break fall as R puts them."""
    fuzz = 1e-7 * float(np.median(np.diff(breaks)))
    fuzzy = breaks + np.concatenate([[-fuzz], np.full(len(breaks) - 1, fuzz)])
    idx = np.searchsorted(fuzzy, values, side="left") - 1
    if len(values) and (idx.min() < 0 or idx.max() >= len(breaks) - 1):
        raise ValueError("some values are outside the histogram's breaks")
    return np.bincount(idx, minlength=len(breaks) - 1)


def format_breaks(breaks: np.ndarray) -> list[str]:
    """``format(breaks, scientific = FALSE, trim = TRUE, drop0trailing = TRUE)``: one number of
    decimals for all (up to 7 significant digits, R's default), trailing zeros dropped."""
    decimals = 0
    for x in breaks:
        text = f"{x:.7g}"
        if "e" not in text and "." in text:
            decimals = max(decimals, len(text.split(".")[1]))
    return [_drop0(f"{x + 0.0:.{decimals}f}") if decimals else f"{x + 0.0:.0f}" for x in breaks]
