"""Nearest neighbours over the executor: queries' partitions folded over the reference's partitions.

Every query partition carries its running k best (distance, global position) from one
reference partition to the next (:meth:`~pipeline.evaluation.execution.Executor.map_fold`);
each step is the exact block search of :mod:`pipeline.risk.nearest.kernel`.  Because the best
lists are ordered by (distance, global position) and the block search skips only records whose
lower bound is strictly above the k-th best, the result is the exact k nearest, ties to the
earlier reference record, whatever the partitions or workers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from pipeline.data.schema import Schema
from pipeline.errors import ParameterError
from pipeline.evaluation.data import Frame
from pipeline.evaluation.execution import Deferred, Executor
from pipeline.risk.nearest.kernel import ReferenceBlock, build_reference, empty_best, encode, search_block


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
        Special missing codes (cont.na) of numeric variables: compared as missing values.
    """

    factors: list[str]
    numerics: list[str]
    scale: np.ndarray
    missing_codes: dict[str, tuple[float, ...]] = field(default_factory=dict)

    def encode(self, frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        """Codes and numeric values of a block's records in this space."""
        return encode(frame, self.factors, self.numerics, self.missing_codes)

    @property
    def variables(self) -> list[str]:
        return [*self.factors, *self.numerics]


def split_kinds(schema: Schema, variables: Sequence[str], where: str) -> tuple[list[str], list[str]]:
    """The factor and the numeric variables among ``variables`` (character ones are refused)."""
    factors = [v for v in variables if schema[v].is_factor]
    numerics = [v for v in variables if schema[v].is_numeric]
    other = [v for v in variables if v not in factors and v not in numerics]
    if other:
        raise ParameterError(
            f"{where}: variable(s) {', '.join(map(repr, other))} are character variables; "
            "a distance compares factors and numeric variables only (declare them as factors)"
        )
    return factors, numerics


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
) -> DistanceSpace:
    """The space whose numeric scales are ``1 / (max - min)``, max and min over all given pairs."""
    if not numerics:
        return DistanceSpace(factors, numerics, np.zeros(0), missing_codes)
    lo = np.stack([m[0] for m in min_max]).min(axis=0)
    hi = np.stack([m[1] for m in min_max]).max(axis=0)
    with np.errstate(invalid="ignore"):
        span = hi - lo
        scale = np.where(np.isfinite(span) & (span > 0), 1.0 / span, 0.0)
    return DistanceSpace(factors, numerics, scale, missing_codes)


@dataclass(frozen=True)
class PreparedReference:
    """A reference partition ready to be searched, with the values neighbours report (``payload``)."""

    block: ReferenceBlock
    offset: int
    payload: np.ndarray | None


def _prepare(part: pd.DataFrame, offset: int, space: DistanceSpace, k: int, payload: str | None) -> PreparedReference:
    codes, numbers = space.encode(part)
    values = None
    if payload is not None:
        column = part[payload]
        values = (
            column.cat.codes.to_numpy().astype(np.float64)
            if isinstance(column.dtype, pd.CategoricalDtype)
            else column.to_numpy(dtype=np.float64, na_value=np.nan)
        )
        values = np.where(values < 0, np.nan, values) if isinstance(column.dtype, pd.CategoricalDtype) else values
    return PreparedReference(build_reference(codes, numbers, offset), offset, values)


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
) -> _Running:
    if state is None:
        codes, numbers = space.encode(queries)
        distances, positions = empty_best(len(queries), k)
        state = _Running(codes, numbers, distances, positions, np.full((len(queries), k), np.nan))
    before, carried = state.positions.copy(), state.payload
    search_block(reference.block, state.codes, state.numbers, space.scale, state.distances, state.positions)
    if reference.payload is not None:
        # neighbours found before keep their value (they may have moved down the list) ...
        same = state.positions[:, :, None] == before[:, None, :]
        payload = np.take_along_axis(carried, same.argmax(axis=2), axis=1)
        # ... and those of this block take theirs
        local = state.positions - reference.offset
        here = (local >= 0) & (local < len(reference.payload))
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
) -> Deferred:
    """The exact ``k`` nearest records of ``reference`` for every record of ``queries`` (deferred
    list of per-partition arrays; :func:`gather` joins them into :class:`Neighbours`)."""
    columns = space.variables + ([payload] if payload is not None and payload not in space.variables else [])
    return executor.map_fold(queries[space.variables], reference[columns], _prepare, _step, _finish, space, k, payload)


def gather(parts: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]], k: int) -> Neighbours:
    """Per-partition results of :func:`nearest_neighbours` as one :class:`Neighbours`."""
    if not parts:
        empty = np.zeros((0, k))
        return Neighbours(empty, empty.astype(np.int64), empty)
    return Neighbours(*(np.concatenate([p[j] for p in parts]) for j in range(3)))
