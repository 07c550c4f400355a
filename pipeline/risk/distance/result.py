"""The ``dcr`` result: per synthetic set, SDMetrics' DCR figures as rows with structured params."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from pipeline.evaluation.base import Result, Row
from pipeline.evaluation.comparison import wilson
from pipeline.evaluation.intervals import shift_interval
from pipeline.risk.distance.compute import (
    ComparedNeighbours,
    SetDistances,
    closer_share,
    nndr_share,
    observed_labels,
    relabelled_shares,
)
from pipeline.risk.distance.params import DCRParams


def _median(x: np.ndarray) -> float:
    return float(np.median(x)) if len(x) else math.nan


def set_rows(label: str, d: SetDistances, variables: list[str], params: DCRParams) -> list[Row]:
    """The rows of one synthetic set (``label``); params ``{"vars": [...]}`` (and ``block_on``).

    With a holdout: ``closer_to_training`` (ties as ``params.ties`` says) with its interval (from
    ``params.relabellings`` relabellings of training and holdout records, else Wilson's), the
    share of synthetic records as close to both (``closer_to_training_ties``) and the share a
    copy of the training records would reach (``closer_to_training_ceiling``: with a training
    group subsampled to the holdout's size, a copied record is at 0 from its training twin only
    when the twin is in the subsample, ``(1 + share) / 2`` — 62.5 % at 4:1); and
    ``nndr_closer_to_training``, the share of synthetic records whose NNDR is smaller with the
    training group than with the holdout group, with its interval drawn the same way.
    """
    p = {"vars": variables, **({"block_on": params.block_on} if params.block_on else {})}
    syn_median, random_median = _median(d.to_training), _median(d.random_to_training)
    rows = [
        Row(label, "dcr_median", syn_median, p),
        Row(label, "dcr_mean", float(np.mean(d.to_training)) if len(d.to_training) else math.nan, p),
        Row(label, "dcr_zero_pct", 100.0 * float(np.mean(d.to_training == 0)) if len(d.to_training) else math.nan, p),
        Row(label, "nndr_median", _median(d.nndr), p),
        Row(label, "random_dcr_median", random_median, p),
        Row(
            label,
            "dcr_baseline_protection",
            min(syn_median / random_median, 1.0) if random_median > 0 else math.nan,
            p,
        ),
    ]
    if d.to_holdout is not None and d.compared is not None:
        n = len(d.to_training)
        pool = d.compared

        def closer(labels: np.ndarray) -> float:
            return closer_share(*pool.nearest(labels), params.ties)[0]

        def nndr(labels: np.ndarray) -> float:
            return nndr_share(pool, labels, params.ties)

        share, tied = closer_share(*pool.nearest(observed_labels(pool)), params.ties)
        rows += [
            Row(label, "holdout_dcr_median", _median(d.to_holdout), p),
            *_share_rows(label, "closer_to_training", share, closer, pool, n, params, p),
            Row(label, "closer_to_training_ties", tied, p),
            Row(label, "closer_to_training_ceiling", (1.0 + pool.training_share) / 2.0, p),
            Row(label, "dcr_overfitting_protection", min(2.0 * (1.0 - share), 1.0) if n else math.nan, p),
            *_share_rows(label, "nndr_closer_to_training", nndr(observed_labels(pool)), nndr, pool, n, params, p),
        ]
    return rows


def _share_rows(
    label: str,
    name: str,
    share: float,
    of_labels: Callable[[np.ndarray], float],
    pool: ComparedNeighbours,
    n: int,
    params: DCRParams,
    p: dict[str, Any],
) -> list[Row]:
    """A share against 0.5 with its interval: from ``params.relabellings`` relabellings of training
    and holdout records (``of_labels`` recomputes it for a split), else Wilson's over the ``n``
    synthetic records."""
    if params.relabellings:
        relabelled = relabelled_shares(pool, of_labels, params.relabellings, params.seed)
        lower, upper = (min(max(x, 0.0), 1.0) for x in shift_interval(share, relabelled, params.confidence_level))
    else:
        interval = wilson(share * n, n, params.confidence_level)
        lower, upper = interval.lower, interval.upper
    return [Row(label, name, share, p), Row(label, f"{name}_lower", lower, p), Row(label, f"{name}_upper", upper, p)]


@dataclass(frozen=True)
class DCRResult(Result):
    """Rows of every synthetic set and a summary (aggregates only)."""

    row_list: tuple[Row, ...]
    variables: tuple[str, ...]

    def rows(self) -> list[Row]:
        return list(self.row_list)

    def to_dict(self) -> dict[str, Any]:
        return {"vars": list(self.variables), "sets": self.values_by_set()}
