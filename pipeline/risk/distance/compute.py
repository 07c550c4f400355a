"""DCR / NNDR orchestration: ranges, the nearest-neighbour searches and the per-set statistics.

For every synthetic set: its two nearest training records (DCR and NNDR), its nearest holdout
record (when there is a holdout), and the nearest training record of random records drawn as
SDMetrics' baseline.  Numeric differences are scaled by the training records' ranges (or,
as SDMetrics does, by the range of the reference searched: ``holdout_scale="holdout"``).
All searches run in one pass of the executor.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pipeline.evaluation.data import EvalData, Frame
from pipeline.evaluation.execution import Executor
from pipeline.risk.distance.baseline import combine_summaries, random_records, summarise_part
from pipeline.risk.nearest.compute import DistanceSpace, gather, nearest_neighbours, space_from_ranges, value_ranges


@dataclass(frozen=True)
class SetDistances:
    """Per synthetic record of one set: DCR to training (and holdout), NNDR; and the random baseline's DCR.

    DCRs are SDMetrics' (the mixed distance divided by the number of variables).
    """

    to_training: np.ndarray
    to_holdout: np.ndarray | None
    nndr: np.ndarray
    random_to_training: np.ndarray
    #: (training, holdout) distances ``closer_to_training`` compares: on equal footing, one of
    #: them to a subsample of the larger reference of the smaller one's size
    compared: tuple[np.ndarray, np.ndarray] | None = None


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
) -> list[SetDistances]:
    """Distances of every synthetic set of ``data`` (prepared by the caller; holdout optional).

    ``holdout_scale``: "training" scales the distances to the holdout by the training records'
    ranges, "holdout" by the holdout's own (SDMetrics).  ``block_on``: factors compared exactly.
    ``footing``: "equal" also searches a seeded subsample (``seed``) of the larger of training
    and holdout of the other's size, for :attr:`SetDistances.compared`; "all" compares them whole.
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
    equal = _equal_footing(executor, training, holdout, seed) if holdout is not None and footing == "equal" else None
    lazy = []
    for i, syn in enumerate(data.synthetic):
        random = random_records(summary, data.schema, min(sizes[i], baseline_records), seed + i)
        lazy.append(nearest_neighbours(executor, syn, training, train_space, 2))
        lazy.append(nearest_neighbours(executor, random, training, train_space, 1))
        if hold_space is not None:
            lazy.append(nearest_neighbours(executor, syn, holdout, hold_space, 1))
        if equal is not None:
            which, sub = equal
            lazy.append(nearest_neighbours(executor, syn, sub, train_space if which == 0 else hold_space, 1))
    got = iter(executor.compute(*lazy))
    width = len(factors) + len(numerics)
    out = []
    for _ in data.synthetic:
        train, random = gather(next(got), 2), gather(next(got), 1)
        hold = gather(next(got), 1).distances[:, 0] / width if hold_space is not None else None
        to_training = train.distances[:, 0] / width
        compared = None
        if equal is not None and hold is not None:
            sub = gather(next(got), 1).distances[:, 0] / width
            compared = (sub, hold) if equal[0] == 0 else (to_training, sub)
        out.append(
            SetDistances(
                to_training=to_training,
                to_holdout=hold,
                nndr=_ratio(train.distances[:, 0], train.distances[:, 1]),
                random_to_training=random.distances[:, 0] / width,
                compared=compared,
            )
        )
    return out


#: the random stream of the equal-footing subsample (the random baseline uses ``seed + i``)
FOOTING_STREAM = 7


def _equal_footing(executor: Executor, training: Frame, holdout: Frame, seed: int) -> tuple[int, Frame] | None:
    """(0 = training, 1 = holdout; its seeded subsample of the other's size), or None when the
    sizes are equal. Positions by ``default_rng([seed, FOOTING_STREAM])``: the same subsample
    whatever the partitions or workers."""
    n_train = sum(executor.partition_rows(training)[0])
    n_hold = sum(executor.partition_rows(holdout)[0])
    if n_train == n_hold:
        return None
    which, larger, size = (0, training, n_train) if n_train > n_hold else (1, holdout, n_hold)
    keep = np.zeros(size, dtype=bool)
    keep[np.random.default_rng([seed, FOOTING_STREAM]).choice(size, min(n_train, n_hold), replace=False)] = True
    (subsample,) = executor.persist(executor.keep_rows(larger, keep))
    return which, subsample
