"""Nearest neighbours over the executor: queries' partitions folded over the reference's partitions.

Every query partition carries its running k best (distance, global position) from one
reference partition to the next (:meth:`~pipeline.evaluation.execution.Executor.map_fold`);
each step is the exact block search of :mod:`pipeline.risk.nearest.kernel`.  Because the best
lists are ordered by (distance, global position) and the block search skips only records whose
lower bound is strictly above the k-th best, the result is the exact k nearest, ties to the
earlier reference record (or, with ``ties``, to the smaller of seeded random keys of the
reference records, :func:`tie_keys`), whatever the partitions or workers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from pipeline.blocks import ROW_COLUMN
from pipeline.data.schema import Schema
from pipeline.evaluation.data import EvalData, Frame
from pipeline.evaluation.execution import Deferred, Executor
from pipeline.risk.nearest.kernel import ReferenceBlock, build_reference, empty_best, encode, search_block

#: reference records searched as one block: each query visits ceil(reference / this) blocks, and
#: every visit costs a search, so fewer and larger blocks are cheaper (5M register records: 2M
#: blocks 289 CPU-s, one block 140); a block of 8M records with 3 numeric variables takes about
#: 250 MiB prepared
REFERENCE_BLOCK_ROWS = 8_000_000


@dataclass(frozen=True)
class DistanceSpace:
    """The variables a distance compares and the scale of each numeric one.

    Attributes
    ----------
    factors, numerics : list of str
        Categorical (mismatch = 1) and numeric (scaled difference, at most 1) variables.
    scale : float array
        ``1 / range`` per numeric variable, 0 where the range is 0 or unknown.
    missing_codes : dict
        Special missing codes (cont.na) of numeric variables: compared as missing values (and
        reported as missing, for a payload variable).
    exact : int
        The first ``exact`` factors must match exactly (``block_on``): records that differ on
        one are never neighbours, and the search runs on key blocks of those factors.
    """

    factors: list[str]
    numerics: list[str]
    scale: np.ndarray
    missing_codes: dict[str, tuple[float, ...]] = field(default_factory=dict)
    exact: int = 0

    def encode(self, frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        """Codes and numeric values of a block's records in this space."""
        return encode(frame, self.factors, self.numerics, self.missing_codes)

    @property
    def variables(self) -> list[str]:
        return [*self.factors, *self.numerics]

    def payload_codes(self, payload: str | None) -> tuple[float, ...]:
        """The special missing codes of the variable neighbours report (none: ``()``)."""
        return tuple(self.missing_codes.get(payload, ())) if payload is not None else ()


def _min_max(part: pd.DataFrame, numerics: list[str], missing_codes: dict[str, tuple[float, ...]]) -> np.ndarray:
    """Smallest and largest value of each numeric variable in one partition (+-inf: none)."""
    _, values = encode(part, [], numerics, missing_codes)
    present = ~np.isnan(values)
    lo = np.where(present, values, np.inf).min(axis=0, initial=np.inf)
    hi = np.where(present, values, -np.inf).max(axis=0, initial=-np.inf)
    return np.stack([lo, hi])


def _combine_min_max(parts: Sequence[np.ndarray]) -> np.ndarray:
    stacked = np.stack(parts)
    return np.stack([stacked[:, 0].min(axis=0), stacked[:, 1].max(axis=0)])


def value_ranges(
    executor: Executor, frames: Sequence[Frame], numerics: list[str], missing_codes: dict[str, tuple[float, ...]]
) -> list[Deferred]:
    """Minimum and maximum of each numeric variable in each of ``frames`` (deferred, one per frame)."""
    if not numerics:
        return []
    return [executor.map_reduce(f[numerics], _min_max, _combine_min_max, numerics, missing_codes) for f in frames]


def space_from_ranges(
    factors: list[str],
    numerics: list[str],
    min_max: Sequence[np.ndarray],
    missing_codes: dict[str, tuple[float, ...]],
    exact: Sequence[str] = (),
) -> DistanceSpace:
    """The space whose numeric scales are ``1 / (max - min)``, max and min over all given pairs;
    the factors ``exact`` (put first) must match exactly."""
    factors = [*exact, *(f for f in factors if f not in exact)]
    if not numerics:
        return DistanceSpace(factors, numerics, np.zeros(0), missing_codes, len(exact))
    lo = np.stack([m[0] for m in min_max]).min(axis=0)
    hi = np.stack([m[1] for m in min_max]).max(axis=0)
    with np.errstate(invalid="ignore"):
        span = hi - lo
        scale = np.where(np.isfinite(span) & (span > 0), 1.0 / span, 0.0)
    return DistanceSpace(factors, numerics, scale, missing_codes, len(exact))


#: tie orders: a seeded bijection of [0, 2^63) (two rounds of add, multiply by an odd number,
#: xor-shift), so each reference record's key is computed where the record is and turned back
#: into its position after the search
_BITS, _MASK = 63, np.uint64((1 << 63) - 1)
_ROUNDS = ((0x3F58476D1CE4E5B9, 31), (0x14D049BB133111EB, 29))


def _round_keys(ties: Sequence[int]) -> np.ndarray:
    return np.random.default_rng(list(ties)).integers(0, 1 << _BITS, size=len(_ROUNDS), dtype=np.uint64)


def tie_keys(positions: np.ndarray, ties: Sequence[int]) -> np.ndarray:
    """The keys that order equally distant reference records: a seeded (``ties``) random
    permutation of the positions, the same whatever the partitions."""
    x = np.asarray(positions).astype(np.uint64)
    with np.errstate(over="ignore"):
        for key, (mult, shift) in zip(_round_keys(ties), _ROUNDS, strict=True):
            x = ((x + key) & _MASK) * np.uint64(mult) & _MASK
            x ^= x >> np.uint64(shift)
    return x.astype(np.int64)


def tie_positions(keys: np.ndarray, ties: Sequence[int]) -> np.ndarray:
    """The positions of :func:`tie_keys` ``keys`` (-1, an empty slot, stays -1)."""
    x = np.asarray(keys).astype(np.uint64)
    with np.errstate(over="ignore"):
        for key, (mult, shift) in reversed(list(zip(_round_keys(ties), _ROUNDS, strict=True))):
            y = x.copy()
            for _ in range(_BITS // shift + 1):  # undo the xor-shift, ``shift`` more bits per pass
                y = x ^ (y >> np.uint64(shift))
            x = ((y * np.uint64(pow(mult, -1, 1 << _BITS))) & _MASK) - key & _MASK
    return np.where(np.asarray(keys) < 0, -1, x.astype(np.int64))


@dataclass(frozen=True)
class PreparedReference:
    """A reference partition ready to be searched, with the values neighbours report
    (``payload``) and, with random tie orders, each record's key (``keys``, else its position)."""

    block: ReferenceBlock
    offset: int
    payload: np.ndarray | None
    keys: np.ndarray | None = None


def reported_values(
    part: pd.DataFrame, payload: str | None, missing_codes: tuple[float, ...] = ()
) -> np.ndarray | None:
    """A variable's values as neighbours report them: a factor's level codes (NaN missing) or
    numeric values with the variable's special missing codes (synthpop's cont.na) as NaN, as the
    distances read them; None without a variable."""
    if payload is None:
        return None
    column = part[payload]
    if isinstance(column.dtype, pd.CategoricalDtype):
        codes = column.cat.codes.to_numpy()
        return np.where(codes < 0, np.nan, codes.astype(np.float64))
    values = column.to_numpy(dtype=np.float64, na_value=np.nan)
    return np.where(np.isin(values, missing_codes), np.nan, values) if missing_codes else values


def _prepare(
    part: pd.DataFrame, offset: int, space: DistanceSpace, k: int, payload: str | None, ties: Sequence[int] | None
) -> PreparedReference:
    codes, numbers = space.encode(part)
    keys = None if ties is None else tie_keys(offset + np.arange(len(part)), ties)
    block = build_reference(codes, numbers, offset if keys is None else keys, space.scale)
    return PreparedReference(block, offset, reported_values(part, payload, space.payload_codes(payload)), keys)


def _located(keys: np.ndarray, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each of ``wanted`` is in ``keys`` (any order), and whether it is there."""
    if not len(keys):
        return np.zeros(wanted.shape, dtype=np.int64), np.zeros(wanted.shape, dtype=bool)
    order = np.argsort(keys)
    at = order[np.minimum(np.searchsorted(keys, wanted, sorter=order), len(keys) - 1)]
    return at, (keys[at] == wanted) & (wanted >= 0)


@dataclass
class _Running:
    codes: np.ndarray
    numbers: np.ndarray
    distances: np.ndarray
    positions: np.ndarray
    payload: np.ndarray


def _step(
    state: _Running | None,
    queries: pd.DataFrame,
    reference: PreparedReference,
    space: DistanceSpace,
    k: int,
    payload: str | None,
    ties: Sequence[int] | None,
) -> _Running:
    if state is None:
        codes, numbers = space.encode(queries)
        distances, positions = empty_best(len(queries), k)
        state = _Running(codes, numbers, distances, positions, np.full((len(queries), k), np.nan))
    before, carried = state.positions.copy(), state.payload
    search_block(
        reference.block, state.codes, state.numbers, space.scale, state.distances, state.positions, space.exact
    )
    if reference.payload is not None:
        # neighbours found before keep their value (they may have moved down the list) ...
        same = state.positions[:, :, None] == before[:, None, :]
        payload = np.take_along_axis(carried, same.argmax(axis=2), axis=1)
        # ... and those of this block take theirs
        if reference.keys is None:
            local = state.positions - reference.offset
            here = (local >= 0) & (local < len(reference.payload))
        else:
            local, here = _located(reference.keys, state.positions)
        payload[here] = reference.payload[local[here]]
        state.payload = payload
    return state


def _finish(state: _Running) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return state.distances, state.positions, state.payload


@dataclass(frozen=True)
class Neighbours:
    """The k nearest reference records of every query, in query order.

    Attributes
    ----------
    distances : float array (n, k)
        Ascending; ties ordered by position.
    positions : int array (n, k)
        Positions of the neighbours in the reference data set.
    payload : float array (n, k)
        The neighbours' value of the payload variable (factor: level code), NaN without one.
    """

    distances: np.ndarray
    positions: np.ndarray
    payload: np.ndarray


def nearest_neighbours(
    executor: Executor,
    queries: Frame,
    reference: Frame,
    space: DistanceSpace,
    k: int,
    payload: str | None = None,
    ties: Sequence[int] | None = None,
) -> Deferred:
    """The exact ``k`` nearest records of ``reference`` for every record of ``queries``
    (deferred; :func:`gather` turns the computed value into :class:`Neighbours`).

    Equally distant records go to the earlier one, or with ``ties`` (a seed) in a random order
    of the reference records (:func:`tie_keys`; give :func:`gather` the same ``ties``).

    Without exact-match factors, every query partition is folded over the reference partitions
    (:meth:`~pipeline.evaluation.execution.Executor.map_fold`).  With them (``space.exact``), the
    queries and the reference are co-partitioned on those factors
    (:meth:`~pipeline.evaluation.execution.Executor.key_blocks`) and each block is searched once:
    no record outside a query's block can be its neighbour.
    """
    columns = space.variables + ([payload] if payload is not None and payload not in space.variables else [])
    if not space.exact:
        return executor.map_fold(
            queries[space.variables],
            reference[columns],
            _prepare,
            _step,
            _finish,
            space,
            k,
            payload,
            ties,
            reference_rows=REFERENCE_BLOCK_ROWS,
        )
    pair = EvalData((reference[columns], queries[space.variables]), Schema(()))
    keys = space.factors[: space.exact]
    blocks = executor.key_blocks(executor.prepare(pair), keys, with_row_id=True)
    return blocks.map(_blocked_search, _blocked_meta(k), space=space, k=k, payload=payload, ties=ties)


def _blocked_meta(k: int) -> pd.DataFrame:
    cols = {"row": pd.Series(dtype="int64")}
    cols.update({f"d{j}": pd.Series(dtype="float64") for j in range(k)})
    cols.update({f"p{j}": pd.Series(dtype="int64") for j in range(k)})
    cols.update({f"v{j}": pd.Series(dtype="float64") for j in range(k)})
    return pd.DataFrame(cols)


def _blocked_search(
    reference: pd.DataFrame,
    queries: pd.DataFrame,
    space: DistanceSpace,
    k: int,
    payload: str | None,
    ties: Sequence[int] | None,
) -> pd.DataFrame:
    """One key block: the k nearest reference records of each query (rows named by ``__row__``)."""
    rows = reference[ROW_COLUMN].to_numpy(dtype=np.int64)
    if ties is not None:
        rows = tie_keys(rows, ties)
    reported = reported_values(reference, payload, space.payload_codes(payload))
    codes, numbers = space.encode(queries)
    distances, positions = empty_best(len(queries), k)
    block = build_reference(*space.encode(reference), rows, space.scale)
    search_block(block, codes, numbers, space.scale, distances, positions, space.exact)
    values = np.full((len(queries), k), np.nan)
    if reported is not None:
        at, found = _located(rows, positions)
        values[found] = reported[at[found]]
    out = {"row": queries[ROW_COLUMN].to_numpy(dtype=np.int64)}
    out.update({f"d{j}": distances[:, j] for j in range(k)})
    out.update({f"p{j}": positions[:, j] for j in range(k)})
    out.update({f"v{j}": values[:, j] for j in range(k)})
    return pd.DataFrame(out)


def gather(
    found: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]] | pd.DataFrame, k: int, ties: Sequence[int] | None = None
) -> Neighbours:
    """The computed value of :func:`nearest_neighbours` (searched with ``ties``) as one
    :class:`Neighbours` in query order."""
    if isinstance(found, pd.DataFrame):
        found = found.sort_values("row", kind="stable")
        got = Neighbours(*(found[[f"{c}{j}" for j in range(k)]].to_numpy() for c in ("d", "p", "v")))
    elif not found:
        empty = np.zeros((0, k))
        got = Neighbours(empty, empty.astype(np.int64), empty)
    else:
        got = Neighbours(*(np.concatenate([p[j] for p in found]) for j in range(3)))
    return got if ties is None else replace(got, positions=tie_positions(got.positions, ties))
