"""DCR / NNDR orchestration: ranges, the nearest-neighbour searches and the per-set statistics.

For every synthetic set: its two nearest training records (DCR and NNDR), its nearest holdout
record (when there is a holdout), and the nearest training record of random records drawn as
SDMetrics' baseline.  Numeric differences are scaled by the training records' ranges (or,
as SDMetrics does, by the range of the reference searched: ``holdout_scale="holdout"``).
All searches run in one pass of the executor.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from pipeline.evaluation.data import EvalData, Frame
from pipeline.evaluation.execution import Executor
from pipeline.risk.distance.baseline import combine_summaries, random_records, summarise_part
from pipeline.risk.nearest.compute import (
    DistanceSpace,
    Neighbours,
    gather,
    nearest_neighbours,
    space_from_ranges,
    value_ranges,
)

#: nearest records of each compared group kept per synthetic record: a relabelled group's nearest
#: record is among them unless none of a group's first ``RELABEL_NEIGHBOURS`` got its label
#: (chance about 2 · 2^-16 per record and relabelling; then both count as tied, :func:`nearest_of`)
RELABEL_NEIGHBOURS = 16


@dataclass(frozen=True)
class ComparedNeighbours:
    """The nearest records of every synthetic record in the two compared groups (training and
    holdout, on equal footing), pooled: what ``closer_to_training`` and its relabellings read.

    Attributes
    ----------
    distances : float array (n, 2k)
        The k nearest in the training group, then the k nearest in the holdout group (inf: none).
    ids : int array (n, 2k)
        Their record in the pool: training group ``0 .. a - 1``, holdout group ``a .. a + b - 1``
        (-1: none).
    sizes : (int, int)
        Records of the two groups (a, b).
    training_share : float
        Share of the training records in the training group (1, or the subsample's share).
    """

    distances: np.ndarray
    ids: np.ndarray
    sizes: tuple[int, int]
    training_share: float

    def nearest(self, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each synthetic record's distance to its nearest record labelled training and to its
        nearest labelled holdout, ``labels`` a boolean (training) per pool record."""
        training, holdout = self.closest(labels, 1)
        return training[:, 0], holdout[:, 0]

    def closest(self, labels: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
        """Each synthetic record's distances to its ``count`` nearest records labelled training
        and labelled holdout (arrays (n, count), ascending)."""
        k = self.distances.shape[1] // 2
        a = self.sizes[0]
        listed = self.ids >= 0
        lab = np.where(listed, labels[np.maximum(self.ids, 0)], False)
        # a group's records not listed are at least as far as its k-th nearest: a relabelled
        # group's nearest are exact when listed records are within the bound of the groups it
        # draws from, else the bound stands for them (and ties)
        last = (self.distances[:, k - 1], self.distances[:, -1])
        out = []
        for mine, members in ((lab, labels), (listed & ~lab, ~labels)):
            found = np.sort(np.where(mine, self.distances, np.inf), axis=1)[:, :count]
            bound = np.full(len(found), np.inf)
            for g, (lo, hi) in enumerate(((0, a), (a, len(labels)))):
                if members[lo:hi].any():
                    bound = np.minimum(bound, last[g])
            out.append(np.minimum(found, bound[:, None]))
        return out[0], out[1]


def closer_share(to_training: np.ndarray, to_holdout: np.ndarray, ties: str) -> tuple[float, float]:
    """(share of records closer to training, share tied): a tie counts half (``ties="half"``) or
    as not closer (``"not_closer"``, SDMetrics' and anonymeter's strict comparison)."""
    n = len(to_training)
    if not n:
        return math.nan, math.nan
    closer = float(np.sum(to_training < to_holdout))
    tied = float(np.sum(to_training == to_holdout))
    return (closer + (0.5 * tied if ties == "half" else 0.0)) / n, tied / n


def nndr_share(pool: ComparedNeighbours, labels: np.ndarray, ties: str) -> float:
    """Share of synthetic records whose NNDR (nearest / second nearest distance) is smaller with
    the records labelled training than with those labelled holdout (ties as :func:`closer_share`):
    0.5 when the synthesis memorises nothing, above when its records sit nearer one training
    record than the rest (NNDR near 0)."""
    training, holdout = pool.closest(labels, 2)
    return closer_share(_ratio(training[:, 0], training[:, 1]), _ratio(holdout[:, 0], holdout[:, 1]), ties)[0]


def observed_labels(pool: ComparedNeighbours) -> np.ndarray:
    """The observed split of the pool: the training group's records first."""
    a, b = pool.sizes
    return np.arange(a + b) < a


def relabelled_shares(
    pool: ComparedNeighbours, share: Callable[[np.ndarray], float], relabellings: int, seed: int
) -> list[float]:
    """``share`` (of the labels, training per pool record) on ``relabellings`` random splits of the
    pooled groups into groups of the same sizes (streams ``(seed, RELABEL_STREAM)``): its spread
    when training and holdout records are exchangeable, which sets the interval (the Wilson
    interval counts only the synthetic records, not which real records fell in training or
    holdout)."""
    a, b = pool.sizes
    rng = np.random.default_rng([seed, RELABEL_STREAM])
    out = []
    for _ in range(relabellings):
        labels = np.zeros(a + b, dtype=bool)
        labels[rng.choice(a + b, size=a, replace=False)] = True
        out.append(share(labels))
    return out


@dataclass(frozen=True)
class SetDistances:
    """Per synthetic record of one set: DCR to training (and holdout), NNDR; and the random baseline's DCR.

    DCRs are SDMetrics' (the mixed distance divided by the number of variables).
    """

    to_training: np.ndarray
    to_holdout: np.ndarray | None
    nndr: np.ndarray
    random_to_training: np.ndarray
    #: the compared groups' nearest records (with a holdout): on equal footing, one of the
    #: groups is a subsample of the larger reference of the smaller one's size
    compared: ComparedNeighbours | None = None


def _ratio(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """d1 / d2; 1 when both are 0 (the record copies a duplicated training record), 0 without a second."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(second > 0, first / second, np.where(np.isinf(second), 0.0, 1.0))


def set_distances(
    data: EvalData,
    executor: Executor,
    factors: list[str],
    numerics: list[str],
    baseline_records: int,
    seed: int,
    holdout_scale: str = "training",
    block_on: Sequence[str] = (),
    footing: str = "all",
    neighbours: int = 1,
) -> list[SetDistances]:
    """Distances of every synthetic set of ``data`` (prepared by the caller; holdout optional).

    ``holdout_scale``: "training" scales the distances to the holdout by the training records'
    ranges, "holdout" by the holdout's own (SDMetrics).  ``block_on``: factors compared exactly.
    ``footing``: "equal" compares a seeded subsample (``seed``) of the larger of training and
    holdout of the other's size with the other, "all" compares them whole.  ``neighbours``:
    nearest records of each compared group kept (:attr:`SetDistances.compared`; more than one
    for relabellings, :data:`RELABEL_NEIGHBOURS`).
    """
    codes = {v: data.schema[v].missing_codes for v in numerics if data.schema[v].missing_codes}
    training, holdout = data.original, data.holdout
    references = [training] if holdout is None else [training, holdout]
    ranges = executor.compute(*value_ranges(executor, references, numerics, codes))
    train_space = space_from_ranges(factors, numerics, ranges[:1], codes, block_on)
    hold_space = None
    if holdout is not None:
        hold_space = (
            train_space
            if holdout_scale == "training"
            else space_from_ranges(factors, numerics, ranges[1:], codes, block_on)
        )
    space = DistanceSpace(factors, numerics, np.zeros(len(numerics)), codes)
    (summary,) = executor.compute(
        executor.map_reduce(training[space.variables], summarise_part, combine_summaries, space)
    )
    sizes = executor.rows(data)[1:]
    counts = executor.partition_rows(*references)
    n_train, n_hold = sum(counts[0]), sum(counts[-1])
    equal = None
    if holdout is not None and footing == "equal":
        equal = _equal_footing(executor, training, holdout, seed, n_train, n_hold)
    which = None if equal is None else equal[0]
    k_train = max(2, neighbours) if holdout is not None and which != 0 else 2
    k_hold = neighbours if which != 1 else 1
    lazy = []
    for i, syn in enumerate(data.synthetic):
        random = random_records(summary, data.schema, min(sizes[i], baseline_records), seed + i)
        lazy.append(nearest_neighbours(executor, syn, training, train_space, k_train))
        lazy.append(nearest_neighbours(executor, random, training, train_space, 1))
        if hold_space is not None:
            lazy.append(nearest_neighbours(executor, syn, holdout, hold_space, k_hold))
        if equal is not None:
            lazy.append(
                nearest_neighbours(executor, syn, equal[1], train_space if which == 0 else hold_space, neighbours)
            )
    got = iter(executor.compute(*lazy))
    width = len(factors) + len(numerics)
    out = []
    for _ in data.synthetic:
        train, random = gather(next(got), k_train), gather(next(got), 1)
        hold = gather(next(got), k_hold) if hold_space is not None else None
        compared = None
        if hold is not None:
            groups = [(train, n_train), (hold, n_hold)]
            if equal is not None:
                groups[which] = (gather(next(got), neighbours), min(n_train, n_hold))
            compared = _pooled(groups, neighbours, width, groups[0][1] / n_train)
        out.append(
            SetDistances(
                to_training=train.distances[:, 0] / width,
                to_holdout=hold.distances[:, 0] / width if hold is not None else None,
                nndr=_ratio(train.distances[:, 0], train.distances[:, 1]),
                random_to_training=random.distances[:, 0] / width,
                compared=compared,
            )
        )
    return out


def _pooled(groups: list[tuple[Neighbours, int]], k: int, width: int, training_share: float) -> ComparedNeighbours:
    """The first ``k`` neighbours of the (training, holdout) groups side by side, ids in the pool."""
    (first, a), (second, b) = groups
    distances = np.hstack([first.distances[:, :k], second.distances[:, :k]]) / width
    ids = np.hstack([first.positions[:, :k], np.where(second.positions[:, :k] >= 0, second.positions[:, :k] + a, -1)])
    return ComparedNeighbours(distances, ids, (a, b), training_share)


#: the random streams of the equal-footing subsample and of the relabellings (the random baseline uses ``seed + i``)
FOOTING_STREAM, RELABEL_STREAM = 7, 8


def _equal_footing(
    executor: Executor, training: Frame, holdout: Frame, seed: int, n_train: int, n_hold: int
) -> tuple[int, Frame] | None:
    """(0 = training, 1 = holdout; its seeded subsample of the other's size), or None when the
    sizes are equal. Positions by ``default_rng([seed, FOOTING_STREAM])``: the same subsample
    whatever the partitions or workers."""
    if n_train == n_hold:
        return None
    which, larger, size = (0, training, n_train) if n_train > n_hold else (1, holdout, n_hold)
    keep = np.zeros(size, dtype=bool)
    keep[np.random.default_rng([seed, FOOTING_STREAM]).choice(size, min(n_train, n_hold), replace=False)] = True
    (subsample,) = executor.persist(executor.keep_rows(larger, keep))
    return which, subsample
