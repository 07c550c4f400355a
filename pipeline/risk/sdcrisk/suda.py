"""SUDA2 special-uniques scores (sdcMicro ``suda2``), as a pure kernel over a key table.

A minimal sample unique (MSU) of a record is a set of key variables on which the record's values
are unique in the file while no smaller subset is.  Records with equal keys have the same MSUs
(and records that are not unique on all keys have none), so everything is computed on the table
of distinct key combinations with their record counts — the counts a pass over the key blocks
gives.  For every subset of the variables, in increasing size up to the missing dimension, one
grouped count over that table marks the combinations unique on it; a subset is an MSU of a
combination when it is unique there and none of the subsets one variable smaller is.  This is
exact (the definition itself), ``O(sum_k C(M, k) * c)`` for ``M`` variables and ``c`` distinct
combinations, and replaces sdcMicro's recursive search.

sdcMicro's conventions (5.8.0, ``Suda2.h``), kept here:

* values are integers (factor level numbers; numbers truncated towards zero), a missing value is
  the ``missing`` code (-999) and is never part of an MSU (it is "no value");
* fewer than three variables are padded with constant columns (which then count in ``M``);
* the score of an MSU of size k is ``(M - k)!`` (``original_scores = TRUE``, Elliot's SUDA) or
  ``(2^(M-k) - 1) * k! (M-k)! / M!``; a record's score is the sum over its MSUs;
* each variable's contribution is the share of the score from the MSUs that contain it;
* the DIS-SUDA score uses sdcMicro's file-level uniques count, which counts a unique record only
  when no other record shares its 16-bit hash bucket (a property of sdcMicro's hash table, kept
  so the scores agree), and its single-precision arithmetic (``float``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pandas as pd

#: the record count column of the key table
COUNT = "n"
#: sdcMicro pads the variables to this many with constant columns
MIN_VARIABLES = 3


@dataclass(frozen=True)
class SudaScores:
    """SUDA2 per distinct key combination (rows of the input table).

    Attributes
    ----------
    score, dis_score : ndarray
        SUDA and DIS-SUDA score of each combination's records.
    contribution : DataFrame
        Per variable, the share of the score from the MSUs that contain it (0 without MSUs).
    msu_counts : DataFrame
        Number of MSUs of each size (columns 1..max size) per combination.
    """

    score: np.ndarray
    dis_score: np.ndarray
    contribution: pd.DataFrame
    msu_counts: pd.DataFrame


def msu_weights(n_variables: int, original_scores: bool = True) -> np.ndarray:
    """The score of an MSU of each size 1..M (sdcMicro's ``g_ab``)."""
    m = n_variables
    if original_scores:
        return np.array([float(math.factorial(m - k)) for k in range(1, m + 1)])
    return np.array(
        [(2.0 ** (m - k) - 1) * math.factorial(k) * math.factorial(m - k) / math.factorial(m) for k in range(1, m + 1)]
    )


def integer_values(table: pd.DataFrame, variables: Sequence[str], missing: int = -999) -> np.ndarray:
    """The variables as sdcMicro's C++ reads them: integers, missing values as ``missing``,
    padded with constant columns to :data:`MIN_VARIABLES`."""
    values = table[list(variables)].to_numpy(dtype=float)
    values = np.where(np.isnan(values), missing, np.trunc(values)).astype(np.int64)
    pad = max(0, MIN_VARIABLES - values.shape[1])
    return np.hstack([values, np.ones((len(values), pad), dtype=np.int64)])


def bucket_hash(values: np.ndarray) -> np.ndarray:
    """sdcMicro's 16-bit hash of each row of values (rotate left by one bit, add the value)."""
    h = np.zeros(len(values), dtype=np.int64)
    for j in range(values.shape[1]):  # over variables, not records
        carry = (h >> 15) & 1
        h = (((h << 1) & 0xFFFF) + values[:, j] + carry) & 0xFFFF
    return h


def _unique_on(codes: np.ndarray, present: np.ndarray, single: np.ndarray) -> np.ndarray:
    """Rows whose codes (one column per variable of a subset) no other row shares, among rows
    with every value present; a row standing for several records is never unique."""
    frame = pd.DataFrame(codes[present])
    shared = frame.duplicated(keep=False).to_numpy()
    out = np.zeros(len(codes), dtype=bool)
    out[present] = ~shared
    return out & single


def suda2(
    table: pd.DataFrame,
    variables: Sequence[str],
    missing: int = -999,
    dis_fraction: float = 0.01,
    original_scores: bool = True,
    max_size: int | None = None,
) -> SudaScores:
    """SUDA2 scores of the distinct key combinations in ``table`` (keys + count ``n``).

    Parameters
    ----------
    table : DataFrame
        Distinct combinations of ``variables`` (float codes, NaN missing) with record counts ``n``.
    variables : sequence of str
        The key variables.
    missing : int
        The missing-value code (sdcMicro ``missing``).
    dis_fraction : float
        The sampling fraction of the DIS-SUDA score (sdcMicro ``DisFraction``).
    original_scores : bool
        Elliot's scores (sdcMicro's default) or the alternative weights.
    max_size : int or None
        The largest MSU size searched (the missing dimension); None searches all sizes, as
        sdcMicro does.  A smaller one gives a lower bound of sdcMicro's score, not its value.
    """
    values = integer_values(table, variables, missing)
    n_rows, m = values.shape
    counts = table[COUNT].to_numpy()
    single = counts == 1
    present = values != missing
    largest = m if max_size is None else min(max_size, m)
    weights = msu_weights(m, original_scores)
    score = np.zeros(n_rows)
    contribution = np.zeros((n_rows, m))
    msu_counts = np.zeros((n_rows, largest), dtype=np.int64)
    previous: dict[tuple[int, ...], np.ndarray] = {}
    for size in range(1, largest + 1):
        current = {}
        for subset in combinations(range(m), size):
            cols = list(subset)
            unique = _unique_on(values[:, cols], present[:, cols].all(axis=1), single)
            current[subset] = unique
            msu = unique.copy()
            if size > 1:
                for drop in range(size):
                    msu &= ~previous[subset[:drop] + subset[drop + 1 :]]
            if msu.any():
                msu_counts[msu, size - 1] += 1
                contribution[np.ix_(msu, cols)] += weights[size - 1]
        previous = current
    # summed by size, in sdcMicro's order (the same floats for the alternative weights)
    for size in range(largest):
        score += msu_counts[:, size] * weights[size]
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(score[:, None] > 0, contribution / score[:, None], 0.0)
    dis = _dis_scores(values, counts, score, m, dis_fraction)
    return SudaScores(
        score=score,
        dis_score=dis,
        contribution=pd.DataFrame(share[:, : len(variables)], columns=list(variables), index=table.index),
        msu_counts=pd.DataFrame(msu_counts, columns=range(1, largest + 1), index=table.index).rename_axis(None),
    )


def _dis_scores(values: np.ndarray, counts: np.ndarray, score: np.ndarray, m: int, dis_fraction: float) -> np.ndarray:
    """sdcMicro's DIS-SUDA score of each combination (single-precision steps as in its C++)."""
    hashes = bucket_hash(values)
    in_bucket = pd.Series(counts).groupby(hashes).transform("sum").to_numpy()
    uniques = np.float32(np.sum((counts == 1) & (in_bucket == 1)))
    pairs = np.float32(2 * np.sum(counts == 2))
    fraction = np.float32(dis_fraction or 0.5)
    dis = uniques * fraction / (uniques * fraction + pairs * (np.float32(1.0) - fraction))
    q = float(np.float32(1.0) + (np.float32(8.0) - np.float32(m)) / np.float32(20.0))
    scored = score > 0
    powered = np.power(score, q, where=scored, out=np.zeros_like(score))
    adjust = float(np.sum(counts[scored] / powered[scored]))
    spread = float(uniques / np.float32(dis) - uniques) if dis else float("inf")
    out = np.zeros_like(score)
    out[scored] = 1.0 / (1.0 + spread / (powered[scored] * adjust))
    return out


__all__ = ["COUNT", "SudaScores", "bucket_hash", "integer_values", "msu_weights", "suda2"]
