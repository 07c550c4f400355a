"""Exact k-nearest-neighbour search with a mixed (Gower-like) distance, over one block.

The distance between two records is the sum over the compared variables of

* numeric ``x``, ``y`` with scale ``s = 1 / range``: ``min(|x - y| * s, 1)``; a variable whose
  range is 0 contributes ``1`` when the values differ, else ``0`` (``s = 0`` marks it);
* categorical: ``0`` when the two codes are equal, else ``1``;
* missing values: ``0`` when both are missing, ``1`` when one is (a missing factor value has
  code ``-1``, which matches only ``-1``).

This is SDMetrics' DCR distance times the number of variables, and anonymeter's distance
wherever the range covers both records (it then never exceeds 1 per variable; anonymeter
differs on missing numeric values, see docs/attacks.md).

The search (:func:`search_block`) is exact and prunes without approximation:

1. the reference records are grouped by their combination of categorical codes, and inside a
   group sorted by one numeric variable (the one with the most distinct values; missing values
   last), then by position;
2. a query first scans its own combination's group (penalty 0) outwards from its place in the
   sort order, stopping on each side once that variable's term ``min(|dx| * s, 1)`` alone
   exceeds the current k-th best distance (every further record of that side is at least that far);
3. groups of other combinations are scanned only when their mismatch count (a lower bound of
   every distance to them) does not exceed the k-th best, in order of that count; groups that
   differ on an exact-match variable (``exact``) are never scanned. The groups one mismatch away
   are found through one sorted index per variable (the combinations with that variable left
   out), so a query whose own group is short of neighbours looks at those groups only, not at
   every group of the block; only a query still without k neighbours below 2 checks them all.

Candidates are kept by (distance, key): the key is the record's global position (ties go to
the earlier reference record) or a seeded random key of it (a random tie order), so the result
is the same whatever the blocks; only candidates whose lower bound is strictly
above the k-th best are skipped.  The running best of a query is passed from one reference
block to the next, so partitions of the reference are searched one after the other with the
bound found so far.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numba
import numpy as np

#: distance of an empty neighbour slot
NO_DISTANCE = np.inf


@dataclass(frozen=True)
class ReferenceBlock:
    """One block of reference records, grouped and sorted for :func:`search_block`.

    Attributes
    ----------
    combos : int32 array (G, c)
        Categorical codes of each group, groups in the order of ``keys``.
    keys : void array (G,)
        The combinations as bytes, sorted (to find a query's group).
    starts : int64 array (G + 1,)
        Each group's first position in ``numbers``/``positions``.
    missing_starts : int64 array (G,)
        Where each group's records with a missing value of the sort variable begin.
    numbers : float64 array (n, p)
        Numeric values in group order.
    positions : int64 array (n,)
        Global position (in the whole reference data set) of each record, in group order.
    sort_on : int
        The numeric variable records are sorted by inside a group: the one along which records
        are least crowded in scaled units (:func:`_least_crowded`), so a scan, which stops where
        that variable's term alone exceeds the k-th best distance, meets the fewest candidates.
    """

    combos: np.ndarray
    keys: np.ndarray
    starts: np.ndarray
    missing_starts: np.ndarray
    numbers: np.ndarray
    positions: np.ndarray
    sort_on: int = 0
    #: per categorical variable j, the groups sorted by their codes with j left out (mixed-radix
    #: numbers ``loo_keys[j]``, order ``loo_order[j]``, multipliers ``loo_mult[j]``, digits below
    #: ``loo_radix``); shape (0, G) when those numbers would not fit in 63 bits (every group is
    #: then checked)
    loo_keys: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.int64))
    loo_order: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.int64))
    loo_mult: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.int64))
    loo_radix: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))


def _row_keys(codes: np.ndarray) -> np.ndarray:
    """Each row of an int32 code matrix as one bytes value (for sorting and lookup)."""
    codes = np.ascontiguousarray(codes, dtype=np.int32)
    return codes.view(np.dtype((np.void, 4 * codes.shape[1]))).ravel()


def build_reference(
    codes: np.ndarray, numbers: np.ndarray, offset: int | np.ndarray, scale: np.ndarray | None = None
) -> ReferenceBlock:
    """Group and sort one block of reference records.

    Parameters
    ----------
    codes : int array (n, c)
        Categorical codes (``-1`` missing).
    numbers : float array (n, p)
        Numeric values (NaN missing), unscaled.
    offset : int or int array (n,)
        Global position of the block's first record (records consecutive), or the key of every
        record (its position, or a random tie order's key): equally distant records go to the
        smaller key.
    scale : float array (p,), optional
        The numeric variables' scales (``1 / range``), to choose the sort variable; without
        them every variable counts as scaled alike. The choice changes the speed, never the
        neighbours found.
    """
    n = len(numbers)
    if codes.shape[1]:
        keys, group = np.unique(_row_keys(codes), return_inverse=True)
        group = group.ravel()
    else:
        keys, group = np.zeros(min(n, 1), dtype="V1"), np.zeros(n, dtype=np.int64)
    sort_on = _least_crowded(numbers, np.ones(numbers.shape[1]) if scale is None else scale)
    first = numbers[:, sort_on] if numbers.shape[1] else np.zeros(n)
    missing = np.isnan(first)
    tie_keys = np.arange(n) + offset if np.ndim(offset) == 0 else np.asarray(offset)
    order = np.lexsort((tie_keys, np.where(missing, 0.0, first), missing, group))  # ties: by key, as searched
    sorted_group = group[order]
    starts = np.searchsorted(sorted_group, np.arange(len(keys) + 1)).astype(np.int64)
    present = np.bincount(group[~missing], minlength=len(keys)).astype(np.int64)
    combos = np.ascontiguousarray(codes[order][starts[:-1]], dtype=np.int32).reshape(len(keys), codes.shape[1])
    loo_keys, loo_order, loo_mult, loo_radix = _leave_one_out(combos)
    return ReferenceBlock(
        combos=combos,
        keys=keys,
        starts=starts,
        missing_starts=starts[:-1] + present,
        numbers=np.ascontiguousarray(numbers[order], dtype=np.float64),
        positions=tie_keys[order].astype(np.int64),
        sort_on=sort_on,
        loo_keys=loo_keys,
        loo_order=loo_order,
        loo_mult=loo_mult,
        loo_radix=loo_radix,
    )


def _leave_one_out(combos: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per categorical variable j, every group's codes with j left out as one mixed-radix number
    (codes + 1, so missing is 0), sorted; empty (0, G) arrays when the radix product exceeds 2⁶²."""
    g, c = combos.shape
    radix = combos.max(axis=0, initial=-1).astype(np.int64) + 2 if g else np.ones(c, dtype=np.int64)
    if c < 2 or math.prod(int(r) for r in radix) >= 2**62:
        empty = np.zeros((0, g), dtype=np.int64)
        return empty, empty, np.zeros((0, c), dtype=np.int64), radix
    mult = np.zeros((c, c), dtype=np.int64)
    for j in range(c):
        step = 1
        for i in range(c - 1, -1, -1):
            if i != j:
                mult[j, i] = step
                step *= int(radix[i])
    numbers = (combos.astype(np.int64) + 1) @ mult.T  # (G, c): column j = the key without j
    order = np.argsort(numbers, axis=0, kind="stable").T.copy()
    keys = np.take_along_axis(numbers.T, order, axis=1).copy()
    return keys, order, mult, radix


#: records of a block sampled (evenly, so the choice is deterministic) to choose the sort variable
CROWDING_SAMPLE = 4096
#: half-width, in scaled units, of the window whose occupancy measures crowding: the size of a
#: typical k-th best distance between near records (one year of age over a 100-year range is 0.01)
CROWDING_WINDOW = 0.005


def _least_crowded(numbers: np.ndarray, scale: np.ndarray) -> int:
    """The numeric column with the fewest sampled records within :data:`CROWDING_WINDOW` of each
    other in scaled units (ties: the first; 0 without any). A heavy-tailed money variable has many
    distinct values but, scaled by its range, most of them sit close together; a single year of
    age has few values that are far apart — the scan along age stops sooner."""
    n, p = numbers.shape
    if p == 0 or n == 0:
        return 0
    sample = numbers[np.unique(np.linspace(0, n - 1, min(n, CROWDING_SAMPLE)).astype(np.int64))]
    crowding = []
    for j in range(p):
        col = sample[:, j]
        present = np.sort(col[~np.isnan(col)])
        if len(present) == 0 or scale[j] == 0:
            crowding.append(np.inf)  # no values, or all equal: no pruning along it
            continue
        scaled = present * scale[j]
        near = np.searchsorted(scaled, scaled + CROWDING_WINDOW, "right") - np.searchsorted(
            scaled, scaled - CROWDING_WINDOW, "left"
        )
        crowding.append(float(near.mean()) / len(scaled))
    return int(np.argmin(crowding))


def query_groups(reference: ReferenceBlock, codes: np.ndarray) -> np.ndarray:
    """The group of ``reference`` holding each query's combination (-1: none)."""
    if codes.shape[1] == 0:
        return np.zeros(len(codes), dtype=np.int64) if len(reference.keys) else np.full(len(codes), -1)
    keys = _row_keys(codes)
    at = np.searchsorted(reference.keys, keys)
    found = at < len(reference.keys)
    found[found] = reference.keys[at[found]] == keys[found]
    return np.where(found, at, -1).astype(np.int64)


@numba.njit(cache=True, nogil=True)
def _coordinate(a: float, b: float, scale: float) -> float:
    a_missing, b_missing = np.isnan(a), np.isnan(b)
    if a_missing or b_missing:
        return 0.0 if (a_missing and b_missing) else 1.0
    diff = abs(a - b)
    if scale == 0.0:
        return 1.0 if diff > 0.0 else 0.0
    return min(diff * scale, 1.0)


@numba.njit(cache=True, nogil=True)
def _numeric_distance(q: np.ndarray, r: np.ndarray, scale: np.ndarray) -> float:
    total = 0.0
    for j in range(len(q)):
        total += _coordinate(q[j], r[j], scale[j])
    return total


@numba.njit(cache=True, nogil=True)
def _offer(best_d, best_i, row, d, i) -> None:
    """Insert candidate (d, i) into a query's best list (sorted by distance, then position)."""
    k = best_d.shape[1]
    last = k - 1
    if d > best_d[row, last] or (d == best_d[row, last] and i >= best_i[row, last] and best_i[row, last] >= 0):
        return
    at = last
    while at > 0 and (d < best_d[row, at - 1] or (d == best_d[row, at - 1] and i < best_i[row, at - 1])):
        best_d[row, at] = best_d[row, at - 1]
        best_i[row, at] = best_i[row, at - 1]
        at -= 1
    best_d[row, at] = d
    best_i[row, at] = i


@numba.njit(cache=True, nogil=True)
def _scan_group(row, q_numbers, penalty, start, missing_start, stop, numbers, positions, scale, s, best_d, best_i):
    """Offer the records of one group to query ``row`` (all its records differ in ``penalty`` codes)."""
    k = best_d.shape[1]
    p = numbers.shape[1]
    if p == 0:  # every record of the group is at distance ``penalty``: the first k positions win
        for at in range(start, stop):
            if penalty > best_d[row, k - 1] or (penalty == best_d[row, k - 1] and positions[at] >= best_i[row, k - 1]):
                break
            _offer(best_d, best_i, row, penalty, positions[at])
        return
    q0 = q_numbers[s]
    q0_missing = np.isnan(q0)
    # records with a value of the first variable: outwards from the query's place in their order
    if missing_start > start:
        if q0_missing:
            if penalty + 1.0 <= best_d[row, k - 1]:
                for at in range(start, missing_start):
                    d = penalty + _numeric_distance(q_numbers, numbers[at], scale)
                    _offer(best_d, best_i, row, d, positions[at])
        else:
            mid = start + np.searchsorted(numbers[start:missing_start, s], q0)
            left, right = mid - 1, mid
            while left >= start or right < missing_start:
                go_left = False
                if left >= start and right < missing_start:
                    go_left = q0 - numbers[left, s] <= numbers[right, s] - q0
                elif left >= start:
                    go_left = True
                at = left if go_left else right
                bound = penalty + _coordinate(q0, numbers[at, s], scale[s])
                if bound > best_d[row, k - 1]:
                    if go_left:
                        left = start - 1
                    else:
                        right = missing_start
                    continue
                d = penalty + _numeric_distance(q_numbers, numbers[at], scale)
                _offer(best_d, best_i, row, d, positions[at])
                if go_left:
                    left -= 1
                else:
                    right += 1
    # records with the first variable missing
    if stop > missing_start and penalty + (0.0 if q0_missing else 1.0) <= best_d[row, k - 1]:
        for at in range(missing_start, stop):
            d = penalty + _numeric_distance(q_numbers, numbers[at], scale)
            _offer(best_d, best_i, row, d, positions[at])


@numba.njit(cache=True, nogil=True)
def _search(
    q_codes, q_numbers, q_group, combos, starts, missing_starts, numbers, positions, scale, s, exact, best_d, best_i,
    loo_keys, loo_order, loo_mult, loo_radix,
):  # fmt: skip
    n_groups, c = combos.shape
    k = best_d.shape[1]
    penalties = np.empty(n_groups, dtype=np.int64)
    candidates = np.empty(n_groups, dtype=np.int64)
    indexed = loo_keys.shape[0] > 0
    for row in range(len(q_numbers)):
        own = q_group[row]
        if own >= 0:
            _scan_group(
                row, q_numbers[row], 0.0, starts[own], missing_starts[own], starts[own + 1],
                numbers, positions, scale, s, best_d, best_i,
            )  # fmt: skip
        if c == 0 or best_d[row, k - 1] < 1.0:
            continue
        first = 1
        if indexed:  # the groups one mismatch away, through the leave-one-out indexes
            for j in range(exact, c):
                key = 0
                for i in range(c):
                    if i != j and q_codes[row, i] + 1 >= loo_radix[i]:
                        key = -1  # a code no group has: no group one mismatch away through j
                        break
                    key += (q_codes[row, i] + 1) * loo_mult[j, i]
                if key < 0:
                    continue
                at = np.searchsorted(loo_keys[j], key)
                while at < n_groups and loo_keys[j, at] == key:
                    g = loo_order[j, at]
                    if g != own:
                        _scan_group(
                            row, q_numbers[row], 1.0, starts[g], missing_starts[g], starts[g + 1],
                            numbers, positions, scale, s, best_d, best_i,
                        )  # fmt: skip
                    at += 1
            first = 2
            if best_d[row, k - 1] < 2.0:  # indexes exist only for c >= 2
                continue
        # groups that may still hold a neighbour: mismatch count (a lower bound) within the k-th best
        worst = best_d[row, k - 1]
        count = 0
        for g in range(n_groups):
            m = 0
            for j in range(c):
                if combos[g, j] != q_codes[row, j]:
                    m += 1
                    if j < exact or m > worst:  # an exact-match variable differs, or too far already
                        m = -1
                        break
            if m >= first:
                candidates[count] = g
                penalties[count] = m
                count += 1
        for penalty in range(first, c + 1):  # nearest combinations first: they lower the bound soonest
            if penalty > best_d[row, k - 1]:
                break
            for t in range(count):
                if penalties[t] == penalty:
                    g = candidates[t]
                    _scan_group(
                        row, q_numbers[row], float(penalty), starts[g], missing_starts[g], starts[g + 1],
                        numbers, positions, scale, s, best_d, best_i,
                    )  # fmt: skip


def empty_best(n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Best lists with no neighbour yet: distances inf, positions -1."""
    return np.full((n, k), NO_DISTANCE), np.full((n, k), -1, dtype=np.int64)


def search_block(
    reference: ReferenceBlock,
    codes: np.ndarray,
    numbers: np.ndarray,
    scale: np.ndarray,
    best_d: np.ndarray,
    best_i: np.ndarray,
    exact: int = 0,
) -> None:
    """Update the queries' k best (``best_d``, ``best_i``, in place) with one reference block.

    Parameters
    ----------
    reference : ReferenceBlock
    codes, numbers : arrays (nq, c), (nq, p)
        The queries' categorical codes and numeric values (same variables as the reference).
    scale : float array (p,)
        ``1 / range`` per numeric variable (0: the range is 0, values equal or not).
    best_d, best_i : arrays (nq, k)
        The running best: distances ascending, ties by global position; updated in place.
    exact : int
        The first ``exact`` categorical variables must match: records that differ on one are
        never neighbours (a query without such records keeps empty slots: inf, -1).
    """
    if len(reference.positions) == 0 or len(codes) == 0:
        return
    _search(
        np.ascontiguousarray(codes, dtype=np.int32),
        np.ascontiguousarray(numbers, dtype=np.float64),
        query_groups(reference, codes),
        reference.combos,
        reference.starts,
        reference.missing_starts,
        reference.numbers,
        reference.positions,
        np.ascontiguousarray(scale, dtype=np.float64),
        reference.sort_on,
        exact,
        best_d,
        best_i,
        reference.loo_keys,
        reference.loo_order,
        reference.loo_mult,
        reference.loo_radix,
    )


def encode(
    frame,
    factors: list[str],
    numerics: list[str],
    missing_codes: dict[str, tuple[float, ...]] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """A block's factor codes (int32, -1 missing) and numeric values (float64, NaN missing; a
    variable's special missing codes, synthpop's cont.na, count as missing)."""
    n = len(frame)
    codes = np.empty((n, len(factors)), dtype=np.int32)
    for j, v in enumerate(factors):
        codes[:, j] = frame[v].cat.codes.to_numpy()
    numbers = np.empty((n, len(numerics)), dtype=np.float64)
    for j, v in enumerate(numerics):
        numbers[:, j] = frame[v].to_numpy(dtype=np.float64, na_value=np.nan)
        if missing_codes and missing_codes.get(v):
            numbers[np.isin(numbers[:, j], missing_codes[v]), j] = np.nan
    return codes, numbers
