"""Sums of positive doubles per group that do not depend on the order of the terms.

A float sum taken per partition and then over partitions depends on the partitioning in its last
bits.  Here every term is split, exactly, into 32-bit integer pieces at fixed binary positions
(its 53-bit mantissa shifted to its exponent: at most three pieces), the pieces are summed per
group as int64 (exact, in any order and grouping, for up to 2**31 terms per group), and only the
final sums are turned back into doubles — from the carried-out (canonical) pieces, so the
double is a function of the exact sum alone.  The double is within 2 units in the last place
of the exact sum (the pieces are added in double precision, smallest first).

Columns: for a value column ``w``, the pieces are columns ``w@<j>`` (bits ``32 j - OFFSET`` ..
``32 j + 31 - OFFSET``); a frame of partial sums has the pieces its terms reached.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

#: bits per piece
BITS = 32
MASK = (1 << BITS) - 1
#: the position of bit 0 of piece 0: below the least significant bit of the smallest subnormal
OFFSET = 1126


def piece_name(column: str, j: int) -> str:
    return f"{column}@{j}"


def pieces(values: np.ndarray, column: str) -> pd.DataFrame:
    """The exact pieces of positive finite ``values`` (one row per value, int64 columns
    ``column@j`` for the pieces any value reaches)."""
    v = np.asarray(values, dtype=float)
    if v.size == 0:
        return pd.DataFrame(index=pd.RangeIndex(0))
    frac, exp = np.frexp(v)
    mantissa = np.ldexp(frac, 53).astype(np.uint64)  # exact: v = mantissa * 2 ** (exp - 53)
    bit = (exp.astype(np.int64) - 53 + OFFSET).astype(np.int64)
    j0, shift = bit // BITS, (bit % BITS).astype(np.uint64)
    low = (mantissa & np.uint64(MASK)) << shift  # < 2**64
    high = (mantissa >> np.uint64(BITS)) << shift  # < 2**53
    parts = [
        (j0, low & np.uint64(MASK)),
        (j0 + 1, (low >> np.uint64(BITS)) + (high & np.uint64(MASK))),
        (j0 + 2, high >> np.uint64(BITS)),
    ]
    lo, hi = int(j0.min()), int(j0.max()) + 2
    out = np.zeros((len(v), hi - lo + 1), dtype=np.int64)
    rows = np.arange(len(v))
    for j, part in parts:  # a value's three pieces are in three different columns
        out[rows, j - lo] = part.astype(np.int64)
    return pd.DataFrame(out, columns=[piece_name(column, j) for j in range(lo, hi + 1)])


def piece_columns(frame: pd.DataFrame, column: str) -> list[str]:
    """The piece columns of ``column`` in ``frame``, lowest first."""
    prefix = f"{column}@"
    return sorted((c for c in frame.columns if c.startswith(prefix)), key=lambda c: int(c[len(prefix) :]))


def aligned(frames: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """Frames of partial sums stacked, a piece absent from one of them 0 there (int64 kept)."""
    stacked = pd.concat(frames, ignore_index=True)
    at = [c for c in stacked.columns if "@" in c]
    stacked[at] = stacked[at].fillna(0).astype(np.int64)
    return stacked


def to_double(frame: pd.DataFrame, column: str) -> np.ndarray:
    """The sums of ``column``'s pieces as doubles: carries propagated (each piece then below
    2**32: one representation per exact sum), then the pieces added smallest first."""
    names = piece_columns(frame, column)
    if not names:
        return np.zeros(len(frame))
    limbs = frame[names].to_numpy(dtype=np.int64).copy()
    carry = np.zeros(len(frame), dtype=np.int64)
    for i in range(limbs.shape[1]):
        limbs[:, i] += carry
        carry = limbs[:, i] >> BITS
        limbs[:, i] &= MASK
    top = int(names[-1].rsplit("@", 1)[1])
    total = np.ldexp(carry.astype(float), (top + 1) * BITS - OFFSET)  # beyond the top piece (huge sums)
    lows = np.zeros(len(frame))
    for i, name in enumerate(names):
        lows += np.ldexp(limbs[:, i].astype(float), int(name.rsplit("@", 1)[1]) * BITS - OFFSET)
    return lows + total
