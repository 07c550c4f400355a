"""Singling-out predicates and how many records satisfy each (anonymeter 1.1.0's queries, our code).

A predicate is a conjunction of conditions ``column <op> value`` over a records matrix (factor
level codes and numeric values as float64, NaN missing).  Predicates are arrays, not strings:
``columns`` (q, d) with -1 for unused slots, ``ops`` (q, d) and ``values`` (q, d).

Counting (:func:`count_matches`) sorts each column once and turns every condition into a
slice of that sorted order (an equality into the run of equal values, a one-sided range into
a prefix or suffix, a missing-value test into the run of NaNs), found with ``searchsorted`` for
all predicates at once.  Each predicate then scans only its narrowest slice and checks its
other conditions on those records, stopping at ``cap`` matches (whether a predicate singles out
needs 0, 1 or more).  Predicates are thus grouped by column, never looped over records in
Python; the scan is compiled.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
import pandas as pd

from pipeline.risk.nearest.kernel import encode

#: condition operators (polars semantics: a missing value satisfies no comparison)
EQ, NE, GE, LE, GT, LT, NULL, NOT_NULL = range(8)
NUMERIC_OPS = np.array([EQ, NE, GT, LT, GE, LE], dtype=np.int8)
FACTOR_OPS = np.array([EQ, NE], dtype=np.int8)


@dataclass(frozen=True)
class Predicates:
    """``q`` conjunctions of at most ``d`` conditions (column -1: no condition)."""

    columns: np.ndarray
    ops: np.ndarray
    values: np.ndarray

    def __len__(self) -> int:
        return len(self.columns)

    @classmethod
    def empty(cls, d: int) -> Predicates:
        return cls(np.zeros((0, d), np.int64), np.zeros((0, d), np.int8), np.zeros((0, d)))

    def take(self, index: np.ndarray) -> Predicates:
        return Predicates(self.columns[index], self.ops[index], self.values[index])

    def keys(self) -> list[bytes]:
        """One identity per predicate (conditions in column order), to drop repeated predicates."""
        order = np.argsort(self.columns, axis=1, kind="stable")
        cols, ops, vals = (np.take_along_axis(a, order, axis=1) for a in (self.columns, self.ops, self.values))
        vals = np.where(np.isnan(vals), np.inf, vals)  # a NaN value (NULL tests) never differs
        stacked = np.concatenate([cols.astype(np.float64), ops.astype(np.float64), vals], axis=1)
        return [row.tobytes() for row in np.ascontiguousarray(stacked)]


def concat(parts: list[Predicates]) -> Predicates:
    """Predicates of several sets, in order (narrower ones padded with empty conditions)."""
    d = max(p.columns.shape[1] for p in parts)

    def pad(a: np.ndarray, fill: float) -> np.ndarray:
        return np.pad(a, ((0, 0), (0, d - a.shape[1])), constant_values=fill)

    return Predicates(
        np.concatenate([pad(p.columns, -1) for p in parts]),
        np.concatenate([pad(p.ops, EQ) for p in parts]),
        np.concatenate([pad(p.values, np.nan) for p in parts]),
    )


def records_matrix(
    frame: pd.DataFrame, factors: list[str], numerics: list[str], missing_codes: dict[str, tuple[float, ...]]
) -> np.ndarray:
    """A block's records as float64 columns (``factors`` then ``numerics``): level codes and values,
    NaN missing (a numeric variable's special missing codes too, as the distance reads them)."""
    codes, numbers = encode(frame, factors, numerics, missing_codes)
    return np.concatenate([np.where(codes < 0, np.nan, codes), numbers], axis=1)


def _slices(
    sorted_values: np.ndarray, valid: int, ops: np.ndarray, values: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Where in a column's sorted order (NaN last, ``valid`` non-missing) each condition's records lie;
    NE (not a slice) gets the whole column."""
    present = sorted_values[:valid]
    left = np.searchsorted(present, values, side="left")
    right = np.searchsorted(present, values, side="right")
    n = len(sorted_values)
    lo = np.select([ops == EQ, ops == GE, ops == GT, ops == NULL], [left, left, right, valid], 0)
    hi = np.select(
        [ops == EQ, ops == LE, ops == LT, ops == GE, ops == GT, ops == NULL, ops == NOT_NULL],
        [right, right, left, valid, valid, n, valid],
        n,
    )
    nan_value = np.isnan(values) & (ops != NULL) & (ops != NOT_NULL) & (ops != NE)
    return lo, np.where(nan_value, lo, hi)  # a comparison with a missing value matches nothing


@numba.njit(cache=True, nogil=True)
def _satisfies(x: float, op: int, v: float) -> bool:
    if op == NULL:
        return np.isnan(x)
    if op == NOT_NULL:
        return not np.isnan(x)
    if np.isnan(x) or np.isnan(v):
        return False
    if op == EQ:
        return x == v
    if op == NE:
        return x != v
    if op == GE:
        return x >= v
    if op == LE:
        return x <= v
    if op == GT:
        return x > v
    return x < v


@numba.njit(cache=True, nogil=True)
def _scan(
    records: np.ndarray,
    order: np.ndarray,
    columns: np.ndarray,
    ops: np.ndarray,
    values: np.ndarray,
    scan_column: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    cap: int,
) -> np.ndarray:
    """Matches of each predicate among the records of its slice (at most ``cap``)."""
    q, d = columns.shape
    out = np.zeros(q, dtype=np.int64)
    for i in range(q):
        count = 0
        for k in range(lo[i], hi[i]):
            r = order[scan_column[i], k]
            ok = True
            for j in range(d):
                c = columns[i, j]
                if c >= 0 and not _satisfies(records[r, c], ops[i, j], values[i, j]):
                    ok = False
                    break
            if ok:
                count += 1
                if count >= cap:
                    break
        out[i] = count
    return out


@dataclass(frozen=True)
class SortedRecords:
    """Records with each column's sorted order (NaN last) and its number of non-missing values,
    made once for all the predicates counted on them."""

    records: np.ndarray
    order: np.ndarray
    valid: np.ndarray

    @classmethod
    def of(cls, records: np.ndarray) -> SortedRecords:
        order = np.ascontiguousarray(np.argsort(records, axis=0, kind="stable").T)
        return cls(records, order, (~np.isnan(records)).sum(axis=0))


def count_matches(records: np.ndarray | SortedRecords, predicates: Predicates, cap: int | None = 2) -> np.ndarray:
    """Number of records satisfying each predicate, at most ``cap`` (None: exact)."""
    index = records if isinstance(records, SortedRecords) else SortedRecords.of(records)
    q, n = len(predicates), len(index.records)
    if q == 0 or n == 0:
        return np.zeros(q, dtype=np.int64)
    lo = np.zeros(predicates.columns.shape, dtype=np.int64)
    hi = np.full(predicates.columns.shape, n, dtype=np.int64)
    for c in np.unique(predicates.columns[predicates.columns >= 0]):
        at = predicates.columns == c
        column = index.records[index.order[c], c]
        lo[at], hi[at] = _slices(column, int(index.valid[c]), predicates.ops[at], predicates.values[at])
    width = np.where(predicates.columns >= 0, hi - lo, n + 1)
    best = np.argmin(width, axis=1)
    rows = np.arange(q)
    scan_column = predicates.columns[rows, best]
    return _scan(
        index.records,
        index.order,
        predicates.columns,
        predicates.ops.astype(np.int64),
        predicates.values,
        np.maximum(scan_column, 0),
        lo[rows, best],
        np.where(scan_column >= 0, hi[rows, best], lo[rows, best]),
        n + 1 if cap is None else cap,
    )
