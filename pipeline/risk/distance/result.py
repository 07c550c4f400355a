"""The ``dcr`` result: per synthetic set, SDMetrics' DCR figures as rows with structured params."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from pipeline.evaluation.base import Result, Row
from pipeline.evaluation.comparison import wilson
from pipeline.risk.distance.compute import SetDistances


def _median(x: np.ndarray) -> float:
    return float(np.median(x)) if len(x) else math.nan


def set_rows(
    label: str, d: SetDistances, variables: list[str], confidence: float, block_on: list[str] | None = None
) -> list[Row]:
    """The rows of one synthetic set (``label``); params ``{"vars": [...]}`` (and ``block_on``)."""
    p = {"vars": variables, **({"block_on": block_on} if block_on else {})}
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
    if d.to_holdout is not None:
        n = len(d.to_training)
        to_training, to_holdout = d.compared if d.compared is not None else (d.to_training, d.to_holdout)
        closer = int(np.sum(to_training < to_holdout))
        share = closer / n if n else math.nan
        interval = wilson(closer, n, confidence)
        rows += [
            Row(label, "holdout_dcr_median", _median(d.to_holdout), p),
            Row(label, "closer_to_training", share, p),
            Row(label, "closer_to_training_lower", interval.lower, p),
            Row(label, "closer_to_training_upper", interval.upper, p),
            Row(label, "dcr_overfitting_protection", min(2.0 * (1.0 - share), 1.0) if n else math.nan, p),
        ]
    return rows


@dataclass(frozen=True)
class DCRResult(Result):
    """Rows of every synthetic set and a summary (aggregates only)."""

    row_list: tuple[Row, ...]
    variables: tuple[str, ...]

    def rows(self) -> list[Row]:
        return list(self.row_list)

    def to_dict(self) -> dict[str, Any]:
        return {"vars": list(self.variables), "sets": self.values_by_set()}
