"""The kernels: records -> (q, target) cell counts -> exact integer statistics per key block.

:func:`cell_counts` turns any partition of records into counts of (key codes, target code)
cells for every target at once (a dense ``bincount`` when few cells are possible, else a
hash group-by).  Counts are mergeable, so on
the Dask path these small tables, not the records, are shuffled into key blocks.

A block holds whole key groups ``q`` (all records, in the original and in every synthetic
set, whose key codes are equal), so everything synthpop derives from the two-way tables
``d[t, q]`` and ``s[t, q]`` (disclosive cells, exclusions, uniques, CAP terms, the flags'
counts) can be computed inside the block.  The kernel turns a block into a small long
table of integer statistics; the statistics of all blocks are summed (or, for the largest
DiSCO cell, maximised), so the result does not depend on how the records were partitioned.

Ratios (the CAP measures) are kept exact as histograms of integer (numerator, denominator)
pairs; the final floating-point sums are taken once, in a fixed order, from the combined
histograms (:mod:`pipeline.risk.disclosure.assemble`).

Everything is vectorised numpy on the block: one ``np.unique`` over the cell codes, then
``reduceat``/``bincount`` over the cells.  There is no loop over records or
key groups; the only Python loops are over the m synthetic sets and the keys.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import NamedTuple

import numba
import numpy as np
import pandas as pd

SUMMARY_COLUMNS = ("set", "stat", "a", "b", "c", "value")
#: columns of a cell-count table besides the key codes (dunder names cannot clash with variables)
TARGET_INDEX, TARGET_CODE, COUNT = "__target__", "__t__", "__n__"
#: cell spaces up to this size are counted densely (bincount) rather than hashed
DENSE_CELLS = 1 << 20
#: whole numbers spanning fewer values than this are coded by their offset (no hashing)
SMALL_SPAN = 1 << 16
#: rows of the combination numbers filled by all columns in turn (a slice that stays in cache)
MIX_ROWS = 1 << 15


class Stat(IntEnum):
    """Statistics a block contributes (``set`` 0 = original only, j = synthetic set j)."""

    N_ROWS = 0  # records
    NEXCL = 1  # a = table (0..7), b = exclusion step (0..4) or 5 = table total before exclusions
    UIO = 2  # key groups unique in the original after exclusions
    UIS = 3  # ... unique in synthetic set j
    UIOIS = 4  # ... unique in the original and present in set j before exclusions
    REPU = 5  # ... unique in both
    MAX_DISCO = 6  # largest excluded DiSCO cell (combined with max)
    NNZ_DISCO = 7  # number of non-zero excluded DiSCO cells
    TCAP_DEN = 8  # original records whose q is in the excluded synthetic table
    CAPD = 9  # histogram: a = sum_t d'^2, b = d'_.q
    CAPS = 10  # histogram: a = sum_t s'^2, b = s'_.q
    DCAP = 11  # histogram: a = sum_t s' d', b = s'_.q
    GT_T = 12  # a = target code: original target margin (before exclusions)
    GT_T_EXCL = 13  # a = target code: original target margin after exclusions
    DISCO_T = 14  # a = target code: excluded DiSCO records per target level
    PAIRS = 15  # a = key index, b = key code, c = target code: DiSCO records in cells over thresh_2way[0]
    GT_KT = 16  # a = key index, b = key code, c = target code: original records
    KEYS_DIFFER = 17  # key groups whose records after exclusions in set j differ in number from the original's
    CELLS_DIFFER = 18  # (key group, target level) cells whose records in set j differ in number from the original's


#: indices of synthpop's eight tables (rows of ``Nexclusions``)
T_ORIGINAL, T_SYNTHETIC, T_DORIG, T_DSYN, T_IS, T_DIS, T_DISCO, T_DISDIO = range(8)
TOTAL_STEP = 5


@dataclass(frozen=True)
class KernelPlan:
    """What the kernel needs to know, in codes (pickled to the workers).

    Attributes
    ----------
    keys : tuple of str
        Key code columns, in data order.
    target_index : int
        Which target's cells (column ``__target__``) the plan is for.
    key_sizes, target_size
        Number of codes of each key and of the target.
    not_target : tuple of int
        Target codes excluded everywhere (``not.targetlev``).
    missing_target : int or None
        Target code of "Missing" to exclude (``usetargetNA = FALSE`` and the original has it).
    keys_missing : tuple of (key index, code)
        "Missing" codes of the keys with ``usekeysNA = FALSE``.
    exclude : tuple of (key index, key code, target code)
        The ``exclude.*`` triples.
    denom_lim : int or None
        Zero cells over this count (``exclude_ov_denom_lim``); None = off.
    thresh_2way : float
        Count threshold of the two-way check.
    single_key_levels : tuple of (numpy bool array or None)
        With one key only: per synthetic set, the key codes R's synthetic factor declares;
        synthpop counts such a level as present in the synthetic data even with no record.
    """

    keys: tuple[str, ...]
    target_index: int
    key_sizes: tuple[int, ...]
    target_size: int
    not_target: tuple[int, ...] = ()
    missing_target: int | None = None
    keys_missing: tuple[tuple[int, int], ...] = ()
    exclude: tuple[tuple[int, int, int], ...] = ()
    denom_lim: int | None = None
    thresh_2way: float = 4.0
    single_key_levels: tuple[np.ndarray | None, ...] = ()


def summary_meta() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=np.int64) for c in SUMMARY_COLUMNS})


class _Rows:
    """Collects (set, stat, a, b, c, value) rows as arrays."""

    def __init__(self) -> None:
        self.parts: list[tuple[int, int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []

    def add(self, set_: int, stat: Stat, value: int | np.ndarray, a=0, b=0, c=0) -> None:
        v = np.atleast_1d(np.asarray(value, dtype=np.int64))
        n = len(v)
        self.parts.append((set_, int(stat), *(np.broadcast_to(np.asarray(x, dtype=np.int64), n) for x in (a, b, c)), v))

    def frame(self) -> pd.DataFrame:
        if not self.parts:
            return summary_meta()
        sizes = [len(p[-1]) for p in self.parts]
        return pd.DataFrame(
            {
                "set": np.repeat([p[0] for p in self.parts], sizes).astype(np.int64),
                "stat": np.repeat([p[1] for p in self.parts], sizes).astype(np.int64),
                "a": np.concatenate([p[2] for p in self.parts]),
                "b": np.concatenate([p[3] for p in self.parts]),
                "c": np.concatenate([p[4] for p in self.parts]),
                "value": np.concatenate([p[5] for p in self.parts]),
            }
        )


def _pair_histogram(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct (a, b) pairs of non-negative integers and how often each occurs, ordered by (a, b)."""
    if not len(a):
        return a, b, a
    span = int(b.max()) + 1
    if int(a.max()) < (2**62 - span) // span:  # one number per pair, in the same order
        pairs, n = _sums_by(a * span + b, None)
        return pairs // span, pairs % span, n
    order = np.lexsort((b, a))
    a, b = a[order], b[order]
    new = np.r_[True, (a[1:] != a[:-1]) | (b[1:] != b[:-1])]
    starts = np.flatnonzero(new)
    return a[starts], b[starts], np.diff(np.r_[starts, len(a)])


def _sums_by(index: np.ndarray, weights: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values of ``index`` (>= 0) with non-zero sums of ``weights`` (None: one each), in order.

    Values below ``max(DENSE_CELLS, 4 * len(index))`` (e.g. key code x target code, or the
    bulk of the CAP histograms' pairs) are summed directly, any others after a sort.
    """
    bound = max(DENSE_CELLS, 4 * len(index))
    if not len(index) or int(index.max()) < bound:
        return _dense_sums(index, weights)
    high = index >= bound
    if high.all():
        return _sorted_sums(index, weights)
    low = ~high
    dense = _dense_sums(index[low], None if weights is None else weights[low])
    rest = _sorted_sums(index[high], None if weights is None else weights[high])
    return np.concatenate([dense[0], rest[0]]), np.concatenate([dense[1], rest[1]])


def _dense_sums(index: np.ndarray, weights: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    sums = np.bincount(index, weights=weights)
    groups = np.flatnonzero(sums)
    return groups, sums[groups].astype(np.int64)  # only the values present converted


def _sorted_sums(index: np.ndarray, weights: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    groups, inverse = np.unique(index, return_inverse=True)
    sums = np.bincount(inverse, weights=weights, minlength=len(groups)).astype(np.int64)
    nz = sums != 0
    return groups[nz], sums[nz]


def cell_counts(
    codes: pd.DataFrame,
    keys: tuple[str, ...],
    key_sizes: tuple[int, ...],
    targets: tuple[str, ...],
    target_sizes: tuple[int, ...],
    weights: np.ndarray | None = None,
) -> pd.DataFrame:
    """Counts of the (key codes, target code) cells of some records, for every target.

    Parameters
    ----------
    codes : DataFrame
        Category codes of the keys and targets (one row per record, or per combination of
        values with ``weights``).
    weights : numpy array, optional
        Number of records of each row (default: one).

    Returns
    -------
    DataFrame
        Columns: the keys, ``__target__`` (index into ``targets``), ``__t__`` (target code),
        ``__n__`` (number of records).
    """
    q, _ = key_groups((codes,), keys, key_sizes, max(target_sizes))
    radix = math.prod(key_sizes) < 2**62 // max(target_sizes)
    w = np.zeros(0, dtype=np.int64) if weights is None else np.asarray(weights).astype(np.int64, copy=False)
    parts = []
    for i, (target, size) in enumerate(zip(targets, target_sizes, strict=True)):
        t = codes[target].to_numpy().astype(np.int64)
        space = math.prod(key_sizes) * size
        if radix and space <= max(DENSE_CELLS, DENSE_PER_ROW * len(t)):
            # few possible cells: count them all (compiled, in int64) and read the key codes off
            # the digits of the non-zero cells' numbers
            counter = np.zeros(space, dtype=np.int64)
            _count_pairs(q, t, size, 0, w, counter)
            digits = np.empty((len(keys) + 1, np.count_nonzero(counter)), dtype=np.int64)
            n = np.empty(digits.shape[1], dtype=np.int64)
            _dense_cells(counter, np.array([*key_sizes, size], dtype=np.int64), digits, n)
            part = {k: digits[j].astype(codes[k].dtype) for j, k in enumerate(keys)}
            t_cell = digits[-1]
        else:  # a compiled hash group-by, no sort
            rep, n = _count_groups(q * size + t, w)
            part = {k: codes[k].to_numpy()[rep] for k in keys}
            t_cell = t[rep]
        part[TARGET_INDEX] = np.full(len(n), i, dtype=np.int8 if len(targets) < 128 else np.int16)
        part[TARGET_CODE] = t_cell.astype(np.int32)
        part[COUNT] = n
        parts.append(pd.DataFrame(part))
    return pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]


def split_by_bucket(
    cells: pd.DataFrame | Mapping[str, np.ndarray], keys: Sequence[str], n_buckets: int
) -> list[pd.DataFrame]:
    """The rows of a cell-count table in ``n_buckets`` pieces by a hash of their key codes.

    Equal key codes, in any table of any data set, land in the same bucket, so a bucket holds
    whole key groups.  The hash mixes the codes in uint64 arithmetic (multiply-add per key,
    then MurmurHash3's finaliser), so it depends only on the codes; rows keep their order.

    Parameters
    ----------
    cells : DataFrame or mapping of column name to numpy array
        The table (as columns: no frame is made before the pieces).
    """
    columns = {c: cells[c].to_numpy() for c in cells.columns} if isinstance(cells, pd.DataFrame) else dict(cells)
    rows = len(next(iter(columns.values()))) if columns else 0
    codes = np.empty((len(keys), rows), dtype=np.int64)
    for i, k in enumerate(keys):
        codes[i] = columns[k]
    order, bounds = _bucket_order(codes, n_buckets)
    # one gather per column and bucket: the pieces are made from the arrays, in row order
    return [
        pd.DataFrame({c: a[order[lo:hi]] for c, a in columns.items()}) for lo, hi in itertools.pairwise(bounds.tolist())
    ]


@numba.njit(cache=True, nogil=True)
def _bucket_order(codes, n_buckets):  # pragma: no cover - compiled
    """The rows in bucket order (stable) and each bucket's bounds in it, the bucket of a row
    being the hash of its column of ``codes`` (keys x rows) modulo ``n_buckets``: a counting sort."""
    k, n = codes.shape
    bucket = np.empty(n, dtype=np.int64)
    bounds = np.zeros(n_buckets + 1, dtype=np.int64)
    for i in range(n):
        h = np.uint64(0)
        for j in range(k):
            h = h * np.uint64(0x100000001B3) + np.uint64(codes[j, i])
        h ^= h >> np.uint64(33)
        h *= np.uint64(0xFF51AFD7ED558CCD)
        h ^= h >> np.uint64(33)
        b = np.int64(h % np.uint64(n_buckets))
        bucket[i] = b
        bounds[b + 1] += 1
    for b in range(n_buckets):
        bounds[b + 1] += bounds[b]
    at = bounds[:-1].copy()
    order = np.empty(n, dtype=np.int64)
    for i in range(n):
        order[at[bucket[i]]] = i
        at[bucket[i]] += 1
    return order, bounds


#: combinations numbered in mixed radix are counted densely while the space of numbers is at
#: most this many times the rows (one int64 counter per possible combination)
DENSE_PER_ROW = 8
#: with several targets, one with more than one value per this many records is not counted with
#: the keys (:func:`joint_counts_by_target`): its combinations are the records
ROWS_PER_VALUE = 16


@dataclass(frozen=True)
class JointCounts:
    """The distinct combinations of values of some variables in one partition, in its own codes
    (or, from :func:`joint_counts_by_target` for a target with about as many values as records,
    its records: a combination may then have several rows).

    Attributes
    ----------
    variables : tuple of str
    codes : tuple of numpy arrays
        Per variable, the local code of each combination (an index into ``values``).
    values : tuple of Series
        Per variable, the value of every local code (the column's dtype; missing included).
    factor : tuple of bool
        Per variable, whether it is a factor (its value counts list every level, as
        :func:`~pipeline.risk.disclosure.coding.value_counts` does).
    counts : numpy array of int64
        Records of each combination.
    """

    variables: tuple[str, ...]
    codes: tuple[np.ndarray, ...]
    values: tuple[pd.Series, ...]
    factor: tuple[bool, ...]
    counts: np.ndarray

    def __len__(self) -> int:
        return len(self.counts)

    def frame(self) -> pd.DataFrame:
        """The combinations as values (dtypes as in the records; index 0..k-1) and ``__n__``."""
        columns = zip(self.variables, self.codes, self.values, strict=True)
        out = pd.DataFrame({v: values.array.take(codes) for v, codes, values in columns})
        out[COUNT] = self.counts
        return out

    def value_counts(self) -> dict[str, pd.Series]:
        """Records per value of every variable (missing included), from the combinations' codes."""
        return _variable_counts(self, range(len(self.variables)))


@dataclass(frozen=True)
class JointTables:
    """Several :class:`JointCounts` of the same records (the keys with each target: the joint
    of the keys and all targets would have about one combination per record as soon as a
    target is a money variable).

    Attributes
    ----------
    tables : tuple of JointCounts
    """

    tables: tuple[JointCounts, ...]

    def __len__(self) -> int:
        return sum(len(t) for t in self.tables)

    def table(self, variables: Sequence[str]) -> JointCounts:
        """The table of exactly these ``variables``."""
        variables = tuple(variables)
        return next(t for t in self.tables if t.variables == variables)

    def value_counts(self) -> dict[str, pd.Series]:
        """Records per value of every variable, each from the first table that has it."""
        out: dict[str, pd.Series] = {}
        for t in self.tables:
            out.update(_variable_counts(t, [i for i, v in enumerate(t.variables) if v not in out]))
        return out


def _variable_counts(joint: JointCounts, indices: Iterable[int]) -> dict[str, pd.Series]:
    """Records per value (missing included) of the variables at ``indices`` of one table."""
    out = {}
    for i in indices:
        v, c, d = joint.variables[i], joint.codes[i], joint.values[i]
        n = _weighted_counts(c, joint.counts, len(d))
        # a factor: every level, missing first (also when no code stands for it), as the records' value counts
        if joint.factor[i]:
            levels = d.array.categories
            every = np.zeros(len(levels) + 1, dtype=np.int64)
            every[d.array.codes.astype(np.int64) + 1] = n
            out[v] = pd.Series(every, index=pd.Index([np.nan, *levels.astype(object)], dtype=object))
        else:
            present = np.flatnonzero(n)
            out[v] = pd.Series(n[present], index=pd.Index(d.array.take(present)))
    return out


def joint_counts(
    frame: pd.DataFrame | Sequence[pd.DataFrame],
    variables: Sequence[str],
    factors: Collection[str],
    weights: np.ndarray | None = None,
) -> JointCounts:
    """Counts of the distinct combinations of values of ``variables`` (missing is a value).

    Every column becomes integer codes local to the records counted (a factor's category
    codes; whole numbers in a moderate range offset from their minimum; other values
    factorised; a code for missing only when there is a missing value), the combinations are
    numbered in mixed radix (compiled, one pass per column) and counted: with one counter per
    possible number when there are at most :data:`DENSE_PER_ROW` per row (each slice of
    numbers counted while in cache; the codes are the digits of the non-zero counters'
    numbers), else in one compiled pass with a hash table (the codes taken from a record of
    each combination).

    Parameters
    ----------
    frame : DataFrame or sequence of DataFrames
        Records (or combinations already counted, with ``weights``); several frames (e.g. the
        partitions on one worker) are counted together without being concatenated.
    variables : sequence of str
    factors : collection of str
        The variables that are factors in the schema (categorical columns).
    weights : numpy array, optional
        Records per row of ``frame`` (default: one; with several frames, their rows in order).

    Returns
    -------
    JointCounts
    """
    variables = list(variables)
    (joint,) = joint_counts_by_target(frame, variables[:-1], variables[-1:], factors, weights)
    return joint


def joint_counts_by_target(
    frame: pd.DataFrame | Sequence[pd.DataFrame],
    keys: Sequence[str],
    targets: Sequence[str],
    factors: Collection[str],
    weights: np.ndarray | None = None,
) -> list[JointCounts]:
    """:func:`joint_counts` of the keys with each target, ``[joint_counts(frame, [*keys, t]) for
    t in targets]``, in one pass over the records for all targets.

    The keys' local codes are made once; with several targets so is every record's number of
    its key combination, which each target's count then extends by the target's code (the
    joint of the keys and *all* targets would have about one combination per record once a
    target is a money variable, so nothing would be aggregated).

    Parameters
    ----------
    keys : sequence of str
    targets : sequence of str
        At least one, none of them a key.
    Other parameters as in :func:`joint_counts`.
    """
    frames = [frame] if isinstance(frame, pd.DataFrame) else list(frame)
    lengths = [len(f) for f in frames]
    n = sum(lengths)
    key_columns = [_local_codes([f[v] for f in frames], v in factors, n) for v in keys]
    key_space = math.prod(size for _, _, size, _ in key_columns)
    w = np.zeros(0, dtype=np.int64) if weights is None else weights.astype(np.int64)
    # int32 counters when no sum can overflow them: half the memory to clear and scan
    counter_type = np.int32 if weights is None and n < 2**31 else np.int64
    key_numbers = None  # every record's key number, made once when several targets use it
    record_codes = None  # every record's key codes, made once when several targets use them
    out = []
    for target in targets:
        target_column = _local_codes([f[target] for f in frames], target in factors, n)
        columns = [*key_columns, target_column]
        sizes = [size for _, _, size, _ in columns]
        space = key_space * sizes[-1]
        if len(targets) > 1 and sizes[-1] * ROWS_PER_VALUE > n:
            # a target with about as many values as records (money): its combinations with the
            # keys are nearly all distinct, so they are the records' codes, uncounted (hashing
            # millions of distinct numbers costs a cache miss or more each); the cells count them
            # once the values are grouped
            if record_codes is None:
                record_codes = [_codes(_joined_values(v), o) for v, o, _, _ in key_columns]
            values, offset, _, _ = target_column
            codes = [*record_codes, _codes(_joined_values(values), offset)]
            counts = w if len(w) else np.ones(n, dtype=np.int64)
        elif space <= DENSE_PER_ROW * max(n, 1):  # one counter per mixed-radix number; the codes are its digits
            counter = np.zeros(space, dtype=counter_type)
            if len(targets) == 1:
                _count_mixed(columns, lengths, w, counter)
            else:
                if key_numbers is None:
                    key_numbers = _numbers([(_joined_values(v), o, s, d) for v, o, s, d in key_columns], n)
                values, offset, size, _ = target_column
                at = 0
                for i, length in enumerate(lengths):
                    _count_pairs(key_numbers[at : at + length], values[i], size, offset,
                                 w[at : at + length] if len(w) else w, counter)  # fmt: skip
                    at += length
            codes_2d = np.empty(
                (len(columns), np.count_nonzero(counter)), dtype=np.int32 if space < 2**31 else np.int64
            )
            counts = np.empty(codes_2d.shape[1], dtype=np.int64)
            _dense_cells(counter, np.array(sizes, dtype=np.int64), codes_2d, counts)
            codes = list(codes_2d)
        else:
            joined = [(_joined_values(values), offset, size, d) for values, offset, size, d in columns]
            if len(targets) > 1 and space < 2**62:  # the key numbers extended by the target's codes
                if key_numbers is None:
                    key_numbers = _numbers(joined[:-1], n)
                values, offset, size, _ = joined[-1]
                numbers = _mix(key_numbers.copy(), values, size, offset)
            else:
                numbers = _numbers(joined, n)
            rep, counts = _count_groups(numbers, w)
            codes = [_codes_at(values, offset, rep) for values, offset, _, _ in joined]
        small = [c.astype(np.int32, copy=False) if size < 2**31 else c for c, size in zip(codes, sizes, strict=True)]
        variables = (*keys, target)
        out.append(JointCounts(variables, tuple(small), tuple(d for *_, d in columns),
                               tuple(v in factors for v in variables), counts))  # fmt: skip
    return out


def _count_mixed(columns: list[tuple[list[np.ndarray], int, int, pd.Series]], lengths: list[int], w: np.ndarray,
                 counter: np.ndarray) -> None:  # fmt: skip
    """``counter[number] += weight`` of every record's mixed-radix number of its local codes,
    each slice of numbers counted while it is in cache (never all numbers at once)."""
    q = np.empty(min(sum(lengths), MIX_ROWS), dtype=np.int64)
    for i, (first, length) in enumerate(zip(np.cumsum([0, *lengths[:-1]]).tolist(), lengths, strict=True)):
        for start in range(0, length, MIX_ROWS):
            part = q[: min(MIX_ROWS, length - start)]
            part[:] = 0
            for values, offset, size, _ in columns:
                _mix(part, values[i][start : start + MIX_ROWS], size, offset)
            at = first + start
            _count_numbers(part, w[at : at + len(part)] if len(w) else w, counter)


def _joined_values(values: list[np.ndarray]) -> np.ndarray:
    return values[0] if len(values) == 1 else np.concatenate(values)


def _numbers(columns: list[tuple[np.ndarray, int, int, pd.Series]], n: int) -> np.ndarray:
    """A number per record identifying its combination of local codes (see :func:`_local_codes`):
    mixed radix when the space of numbers fits an int64, else renumbered densely whenever the
    next column would overflow it."""
    space = math.prod(size for _, _, size, _ in columns)
    q = np.zeros(n, dtype=np.int64)
    if space < 2**62:
        for start in range(0, n, MIX_ROWS):  # all columns into a slice of q while it is in cache
            part = q[start : start + MIX_ROWS]
            for values, offset, size, _ in columns:
                _mix(part, values[start : start + MIX_ROWS], size, offset)
        return q
    space = 1
    for values, offset, size, _ in columns:
        if space * size >= 2**62:
            q, present = pd.factorize(q)  # at most n combinations so far, numbered densely
            space = max(len(present), 1)
        _mix(q, values, size, offset)
        space *= size
    return q


def _local_codes(parts: list[pd.Series], factor: bool, n: int = 0) -> tuple[list[np.ndarray], int, int, pd.Series]:
    """One column's values in some frames as codes ``0..size-1`` shared by the frames:
    ``(values, offset, size, dictionary)``, ``values`` per frame, the code of a value being
    ``value + offset`` (0 for a missing factor level or number when there is one; no code for
    missing when there is none, which keeps the space of combinations small) and
    ``dictionary`` the value of every code (the column's dtype).

    Whole numbers are coded by their offset when they span fewer than ``max(SMALL_SPAN, 2 n)``
    values (``n`` the records: the dictionary and the value counts then cost no more than the
    records; money in whole units spans a few hundred thousand values), others factorised."""
    if factor and len({p.dtype for p in parts}) > 1:  # the frames' levels differ: one list of levels
        union = pd.api.types.union_categoricals([p.array for p in parts])
        bounds = np.cumsum([0, *(len(p) for p in parts)])
        parts = [pd.Series(union[a:b]) for a, b in itertools.pairwise(bounds.tolist())]
    s = parts[0]
    if factor:
        codes, n_levels = [p.array.codes for p in parts], len(s.array.categories)
        offset = 0 if all(len(c) and c.min() >= 0 for c in codes) else 1
        categories = np.arange(-offset, n_levels)
        return codes, offset, max(len(categories), 1), pd.Series(pd.Categorical.from_codes(categories, dtype=s.dtype))
    if all(p.dtype == np.float64 for p in parts):
        xs = [p.to_numpy() for p in parts]
        ranges = [_whole_range(x, max(SMALL_SPAN, 2 * n)) for x in xs]
        present = sum(r[0] for r in ranges)
        if present and all(r[3] for r in ranges):  # whole numbers: the range of the frames that have some
            lo = min(r[1] for r in ranges if r[0])
            hi = max(r[2] for r in ranges if r[0])
            if max(-lo, hi) < 2**52 and hi - lo < max(SMALL_SPAN, 2 * n):
                missing = int(present < sum(len(x) for x in xs))
                offset, size = int(missing - lo), int(hi - lo) + 1 + missing
                numbers = np.arange(size, dtype=np.float64) - offset
                if missing:
                    numbers[0] = np.nan
                return xs, offset, size, pd.Series(numbers)
    joined = parts[0] if len(parts) == 1 else pd.concat(parts, ignore_index=True)
    codes, uniques = pd.factorize(joined, use_na_sentinel=False)
    bounds = np.cumsum([len(p) for p in parts])[:-1]
    return np.split(codes, bounds), 0, max(len(uniques), 1), pd.Series(uniques, dtype=joined.dtype)


def _codes_at(values: np.ndarray, offset: int, rows: np.ndarray) -> np.ndarray:
    """The local codes (see :func:`_local_codes`) of the records at ``rows``."""
    return _codes(values[rows], offset)


def _codes(values: np.ndarray, offset: int) -> np.ndarray:
    """The local codes (see :func:`_local_codes`) of some records' ``values``."""
    if values.dtype.kind == "f":
        return np.where(values != values, 0, values + offset).astype(np.int64)
    return values.astype(np.int64) + offset


def _whole_range(x: np.ndarray, span: int = SMALL_SPAN) -> tuple[int, float, float, bool]:
    """Number of non-missing values, their minimum and maximum, and whether all are whole numbers
    (known only when they could be coded by their offset from the minimum: ``hi - lo < span``
    and ``|x| < 2^52``; else False)."""
    if not len(x):
        return 0, np.inf, -np.inf, True
    lo, hi = float(x.min()), float(x.max())  # vectorised; a missing value makes them missing
    if lo != lo or hi != hi:
        return _whole_range_missing(x)
    small = max(-lo, hi) < 2**52 and hi - lo < span
    return len(x), lo, hi, small and lo == math.floor(lo) and _whole_offsets(x, lo)


@numba.njit(cache=True, nogil=True)
def _whole_offsets(x, lo):  # pragma: no cover - compiled
    """Whether every ``x - lo`` (in ``[0, 2^52)``) is a whole number: adding and taking away 2^52
    rounds it to one (branch-free, so the loop is vectorised; a conversion to an integer is not)."""
    magic = 2.0**52
    fraction = False
    for v in x:
        u = v - lo
        fraction |= (u + magic) - magic != u
    return not fraction


@numba.njit(cache=True, nogil=True)
def _whole_range_missing(x):  # pragma: no cover - compiled
    """:func:`_whole_range` of values some of which are missing (skipped)."""
    present, lo, hi, whole = 0, np.inf, -np.inf, True
    for v in x:
        if v != v:
            continue
        present += 1
        lo, hi = min(lo, v), max(hi, v)
        whole = whole and v == np.floor(v)
    return present, lo, hi, whole


@numba.njit(cache=True, nogil=True)
def _mix(q, values, size, offset):  # pragma: no cover - compiled
    """``q = q * size + code`` in place (mixed radix), ``code = value + offset`` (0 for NaN); returns ``q``."""
    for i in range(q.shape[0]):
        v = values[i]
        q[i] = q[i] * size + (0 if v != v else np.int64(v) + offset)
    return q


@numba.njit(cache=True, nogil=True)
def _count_pairs(q, values, size, offset, weights, counter):  # pragma: no cover - compiled
    """``counter[q[i] * size + code] += weights[i]`` (empty ``weights``: one per row), ``code =
    values[i] + offset`` (0 for NaN): a key number extended by one more variable's code."""
    weighted = weights.shape[0] > 0
    for i in range(q.shape[0]):
        v = values[i]
        number = q[i] * size + (0 if v != v else np.int64(v) + offset)
        counter[number] += weights[i] if weighted else 1


@numba.njit(cache=True, nogil=True)
def _weighted_counts(codes, weights, size):  # pragma: no cover - compiled
    """``np.bincount(codes, weights, minlength=size)`` in int64 (no conversion of the codes or
    the weights to a float copy)."""
    out = np.zeros(size, dtype=np.int64)
    for i in range(codes.shape[0]):
        out[codes[i]] += weights[i]
    return out


@numba.njit(cache=True, nogil=True)
def _count_numbers(q, weights, counter):  # pragma: no cover - compiled
    """``counter[q[i]] += weights[i]`` (empty ``weights``: one per row)."""
    if weights.shape[0] == 0:
        for i in range(q.shape[0]):
            counter[q[i]] += 1
    else:
        for i in range(q.shape[0]):
            counter[q[i]] += weights[i]


@numba.njit(cache=True, nogil=True)
def _dense_cells(counter, sizes, codes, counts):  # pragma: no cover - compiled
    """The non-zero counters in order: their counts into ``counts`` and the mixed-radix digits
    of their numbers (radices ``sizes``, the last varying fastest) into the rows of ``codes``.

    The digits are kept as an odometer advanced with the number, so no division is needed.
    """
    k = sizes.shape[0]
    digit = np.zeros(k, dtype=np.int64)
    j = 0
    for i in range(counter.shape[0]):
        if counter[i] != 0:
            for d in range(k):
                codes[d, j] = digit[d]
            counts[j] = counter[i]
            j += 1
        d = k - 1
        while d >= 0:  # advance the odometer: the last digit, carrying into earlier ones
            digit[d] += 1
            if digit[d] < sizes[d]:
                break
            digit[d] = 0
            d -= 1


@numba.njit(cache=True, nogil=True)
def _count_groups(q, weights):  # pragma: no cover - compiled
    """The first row of every distinct value of ``q`` (>= 0) and the sum of ``weights`` over its rows
    (empty ``weights``: one per row).

    One pass with an open-addressing hash table (multiplicative hashing, linear probing) that
    doubles when half full; groups come in order of first appearance.
    """
    n = q.shape[0]
    bits = 10
    keys = np.full(1 << bits, -1, dtype=np.int64)  # the value in a slot, -1 = free
    group = np.empty(1 << bits, dtype=np.int64)  # its group number
    rep = np.empty(n, dtype=np.int64)
    counts = np.empty(n, dtype=np.int64)
    n_groups = 0
    weighted = weights.shape[0] > 0
    for i in range(n):
        key = q[i]
        mask = (1 << bits) - 1
        slot = np.int64((np.uint64(key) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(64 - bits))
        while keys[slot] >= 0 and keys[slot] != key:
            slot = (slot + 1) & mask
        w = weights[i] if weighted else 1
        if keys[slot] == key:
            counts[group[slot]] += w
            continue
        keys[slot] = key
        group[slot] = n_groups
        rep[n_groups] = i
        counts[n_groups] = w
        n_groups += 1
        if 2 * n_groups > (1 << bits):  # rehash into a table twice as large
            bits += 1
            mask = (1 << bits) - 1
            keys = np.full(1 << bits, -1, dtype=np.int64)
            group = np.empty(1 << bits, dtype=np.int64)
            for h in range(n_groups):
                value = q[rep[h]]
                slot = np.int64((np.uint64(value) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(64 - bits))
                while keys[slot] >= 0:
                    slot = (slot + 1) & mask
                keys[slot] = value
                group[slot] = h
    return rep[:n_groups].copy(), counts[:n_groups].copy()


def key_groups(
    frames: tuple[pd.DataFrame, ...], keys: tuple[str, ...], sizes: tuple[int, ...], room: int = 1
) -> tuple[np.ndarray, list[np.ndarray]]:
    """A number per record identifying its key group within the block, and the key codes.

    Records of all ``frames`` are stacked.  The number is the mixed-radix value of the key
    codes when it fits an int64 with ``room`` to spare (to be multiplied by ``room`` later),
    otherwise a group number from a group-by of the key codes.
    """
    codes = [np.concatenate([f[k].to_numpy() for f in frames]).astype(np.int64) for k in keys]
    if math.prod(sizes) * room < 2**62:
        q = np.zeros(len(codes[0]) if codes else 0, dtype=np.int64)
        for k, size in zip(codes, sizes, strict=True):
            q = q * size + k
        return q, codes
    stacked = pd.DataFrame(dict(enumerate(codes)))
    return stacked.groupby(list(range(len(codes))), sort=True).ngroup().to_numpy(dtype=np.int64), codes


def _distinct(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_inverse=True)`` of non-negative integers: by one counter per
    possible value when there are at most :data:`DENSE_PER_ROW` per value given, else by a sort."""
    space = int(values.max()) + 1 if len(values) else 0
    if space > DENSE_PER_ROW * len(values):
        return np.unique(values, return_inverse=True)
    return _dense_distinct(values, space)


@numba.njit(cache=True, nogil=True)
def _dense_distinct(values, space):  # pragma: no cover - compiled
    """:func:`_distinct` by one slot per possible value: mark the values present, number the
    marked slots in order, look every value's number up (int32 slots: a quarter of the memory
    of a count and an index per value)."""
    slot = np.zeros(space, dtype=np.int32)
    for v in values:
        slot[v] = 1
    n_distinct = 0
    for v in range(space):
        if slot[v]:
            slot[v] = n_distinct
            n_distinct += 1
        else:
            slot[v] = -1
    distinct = np.empty(n_distinct, dtype=np.int64)
    for v in range(space):
        if slot[v] >= 0:
            distinct[slot[v]] = v
    inverse = np.empty(values.shape[0], dtype=np.int64)
    for i in range(values.shape[0]):
        inverse[i] = slot[values[i]]
    return distinct, inverse


def _target_rows(cells: pd.DataFrame, target_index: int) -> pd.DataFrame:
    """The rows of one target in a cell-count table."""
    mine = cells[TARGET_INDEX].to_numpy() == target_index
    return cells if mine.all() else cells[mine]


class _Cells:
    """The (q, t) cells of one block with the count of every data set (``sets[i]``: the tables
    of data set ``i``; a cell may have rows in several, which are summed)."""

    def __init__(self, sets: tuple[Sequence[pd.DataFrame], ...], plan: KernelPlan) -> None:
        # the plan's target's rows of every table (no copy of a table that has only those)
        mine = [[_target_rows(f, plan.target_index) for f in tables] for tables in sets]
        frames = tuple(f for tables in mine for f in tables)
        src = np.repeat(np.arange(len(sets)), [sum(len(f) for f in tables) for tables in mine])
        q, keys = key_groups(frames, plan.keys, plan.key_sizes, plan.target_size)
        t = np.concatenate([f[TARGET_CODE].to_numpy() for f in frames]).astype(np.int64)
        n = np.concatenate([f[COUNT].to_numpy() for f in frames]).astype(np.int64)
        cells, inverse = _distinct(q * plan.target_size + t)
        n_cells = len(cells)
        self.counts = _weighted_counts(src * n_cells + inverse, n, len(sets) * n_cells).reshape(len(sets), -1)
        rep = np.empty(n_cells, dtype=np.int64)
        rep[inverse] = np.arange(len(t))
        self.t = t[rep]
        self.keys = [k[rep] for k in keys]
        q_cell = cells // plan.target_size
        first = np.r_[True, q_cell[1:] != q_cell[:-1]] if n_cells else np.zeros(0, dtype=bool)
        self.q_start = np.flatnonzero(first)
        self.q_of_cell = np.cumsum(first) - 1

    def per_q(self, x: np.ndarray) -> np.ndarray:
        """Sum of a cell quantity over each key group."""
        return np.add.reduceat(x, self.q_start) if len(x) else np.zeros(0, dtype=x.dtype)


class _Exclusions:
    """synthpop's exclusion steps 1-5 (spec §8), applied cell-wise to any of the eight tables."""

    def __init__(self, cells: _Cells, plan: KernelPlan) -> None:
        t = cells.t
        masks = [np.isin(t, plan.not_target)]
        masks.append(t == plan.missing_target if plan.missing_target is not None else np.zeros(len(t), bool))
        m3 = np.zeros(len(t), dtype=bool)
        for i, code in plan.keys_missing:
            m3 |= cells.keys[i] == code
        masks.append(m3)
        m4 = np.zeros(len(t), dtype=bool)
        for i, key_code, target_code in plan.exclude:
            m4 |= (t == target_code) & (cells.keys[i] == key_code)
        masks.append(m4)
        done = np.zeros(len(t), dtype=bool)
        self.steps = []
        for mask in masks:  # each step counts only what earlier steps left
            self.steps.append(mask & ~done)
            done |= mask
        self.keep = ~done
        self.denom_lim = plan.denom_lim

    def apply(self, x: np.ndarray, rows: _Rows, set_: int, table: int) -> np.ndarray:
        rows.add(set_, Stat.NEXCL, int(x.sum()), a=table, b=TOTAL_STEP)
        for step, mask in enumerate(self.steps):
            rows.add(set_, Stat.NEXCL, int(x[mask].sum()), a=table, b=step)
        out = np.where(self.keep, x, 0)
        over = out > self.denom_lim if self.denom_lim is not None else np.zeros(len(out), dtype=bool)
        rows.add(set_, Stat.NEXCL, int(out[over].sum()), a=table, b=4)
        return np.where(over, 0, out)


def block_summary(
    original: pd.DataFrame | Sequence[pd.DataFrame], *synthetic: pd.DataFrame | Sequence[pd.DataFrame], plan: KernelPlan
) -> pd.DataFrame:
    """Integer statistics of one block (see :class:`Stat`) for the original and m synthetic sets.

    Parameters
    ----------
    original, *synthetic
        Cell-count tables (:func:`cell_counts`) of the same key blocks, or per data set a list
        of them (e.g. the pieces of its tables of counts in one key bucket: not concatenated).
    plan : KernelPlan
    """
    frames = tuple([f] if isinstance(f, pd.DataFrame) else list(f) for f in (original, *synthetic))
    rows = _Rows()
    cells = _Cells(frames, plan)
    for j in range(len(frames)):
        rows.add(j, Stat.N_ROWS, int(cells.counts[j].sum()))
    if not len(cells.t):
        return rows.frame()
    ex = _Exclusions(cells, plan)
    t, size_t = cells.t, plan.target_size

    d = cells.counts[0]
    dq = cells.per_q(d)
    d_unique_cell = (d == dq[cells.q_of_cell]) & (d > 0)
    d_ex = ex.apply(d, rows, 0, T_ORIGINAL)
    ex.apply(d * d_unique_cell, rows, 0, T_DORIG)
    dq_ex = cells.per_q(d_ex)
    d_unique_q = dq_ex == 1
    rows.add(0, Stat.UIO, int(d_unique_q.sum()))
    occupied = dq_ex > 0
    a, b, n = _pair_histogram(cells.per_q(d_ex * d_ex)[occupied], dq_ex[occupied])
    rows.add(0, Stat.CAPD, n, a=a, b=b)
    for stat, weights in ((Stat.GT_T, d), (Stat.GT_T_EXCL, d_ex)):
        codes, counts = _sums_by(t, weights)
        rows.add(0, stat, counts, a=codes)
    for i, k in enumerate(cells.keys):
        codes, counts = _sums_by(k * size_t + t, d)
        rows.add(0, Stat.GT_KT, counts, a=i, b=codes // size_t, c=codes % size_t)

    for j in range(1, len(frames)):
        s = cells.counts[j]
        sq = cells.per_q(s)
        s_one_value = (s == sq[cells.q_of_cell]) & (s > 0)  # ps_tq == 1
        any_disclosive = cells.per_q(s_one_value.astype(np.int64)) > 0
        in_syn = sq > 0
        s_ex = ex.apply(s, rows, j, T_SYNTHETIC)
        ex.apply(s * s_one_value, rows, j, T_DSYN)
        ex.apply(d * in_syn[cells.q_of_cell], rows, j, T_IS)
        ex.apply(d * any_disclosive[cells.q_of_cell], rows, j, T_DIS)
        disco = ex.apply(d * s_one_value, rows, j, T_DISCO)
        ex.apply(d * (s_one_value & d_unique_cell), rows, j, T_DISDIO)

        sq_ex = cells.per_q(s_ex)
        declared = plan.single_key_levels[j - 1] if plan.single_key_levels else None
        present = in_syn | declared[cells.keys[0][cells.q_start]] if declared is not None else in_syn
        rows.add(j, Stat.UIS, int((sq_ex == 1).sum()))
        rows.add(j, Stat.UIOIS, int((d_unique_q & present).sum()))
        rows.add(j, Stat.REPU, int((d_unique_q & (sq_ex == 1)).sum()))
        # none differ: repU = UiO (and with the cells, DiSCO = Dorig) whatever the synthesis did
        rows.add(j, Stat.KEYS_DIFFER, int((sq_ex != dq_ex).sum()))
        rows.add(j, Stat.CELLS_DIFFER, int((s != d).sum()))
        rows.add(j, Stat.MAX_DISCO, int(disco.max()))
        rows.add(j, Stat.NNZ_DISCO, int((disco > 0).sum()))
        rows.add(j, Stat.TCAP_DEN, int(dq_ex[sq_ex > 0].sum()))
        occupied = sq_ex > 0
        a, b, n = _pair_histogram(cells.per_q(s_ex * s_ex)[occupied], sq_ex[occupied])
        rows.add(j, Stat.CAPS, n, a=a, b=b)
        cross = cells.per_q(s_ex * d_ex)
        a, b, n = _pair_histogram(cross[occupied & (cross > 0)], sq_ex[occupied & (cross > 0)])
        rows.add(j, Stat.DCAP, n, a=a, b=b)
        codes, counts = _sums_by(t, disco)
        rows.add(j, Stat.DISCO_T, counts, a=codes)
        big = disco > plan.thresh_2way
        if big.any():
            for i, k in enumerate(cells.keys):
                codes, counts = _sums_by(k[big] * size_t + t[big], disco[big])
                rows.add(j, Stat.PAIRS, counts, a=i, b=codes // size_t, c=codes % size_t)
    return rows.frame()


class StatRows(NamedTuple):
    """The combined rows of one (set, statistic), sorted by (a, b, c)."""

    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    value: np.ndarray


def combine(parts: list[pd.DataFrame]) -> dict[tuple[int, int], StatRows]:
    """Sum the statistics of all blocks (max for :attr:`Stat.MAX_DISCO`).

    Returns
    -------
    dict
        ``(set, stat) -> StatRows``.
    """
    frames = [p for p in parts if len(p)]
    if not frames:
        return {}
    cols = [np.concatenate([f[c].to_numpy(dtype=np.int64) for f in frames]) for c in SUMMARY_COLUMNS]
    order = np.lexsort(cols[4::-1])  # by set, stat, a, b, c
    set_, stat, a, b, c, value = (x[order] for x in cols)
    keys = (set_, stat, a, b, c)
    new_row = np.r_[True, np.any([k[1:] != k[:-1] for k in keys], axis=0)]
    starts = np.flatnonzero(new_row)
    summed = np.where(
        stat[starts] == int(Stat.MAX_DISCO), np.maximum.reduceat(value, starts), np.add.reduceat(value, starts)
    )
    set_, stat, a, b, c = (k[starts] for k in keys)
    new_group = np.r_[True, (set_[1:] != set_[:-1]) | (stat[1:] != stat[:-1])]
    bounds = np.r_[np.flatnonzero(new_group), len(set_)]
    return {
        (int(set_[lo]), int(stat[lo])): StatRows(a[lo:hi], b[lo:hi], c[lo:hi], summed[lo:hi])
        for lo, hi in itertools.pairwise(bounds.tolist())
    }
