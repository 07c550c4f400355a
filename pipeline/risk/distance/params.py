"""Parameters of the ``dcr`` measure (the only validation of them)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from pipeline.config_io import Seed
from pipeline.evaluation.base import Params


class DCRParams(Params):
    """Parameters of ``dcr``.

    Attributes
    ----------
    vars : list of str, optional
        Variables the distance compares (factors: mismatch 1; numeric: difference scaled by the
        reference's range, at most 1); default every factor and numeric variable.
    baseline_records : int
        Random records of the DCRBaselineProtection baseline (SDMetrics draws as many as there
        are synthetic records; we draw that many up to this bound: the median barely moves beyond it).
    seed : int
        Seed of the random baseline.
    confidence_level : float
        Level of the Wilson interval of the share of synthetic records closer to training.
    block_on : list of str
        Factors compared exactly: a record's nearest neighbours are searched only among the
        records with the same values of these (and the search runs on key blocks of them, so it
        scales with the block sizes instead of the data size).
    holdout_scale : {"training", "holdout"}
        Ranges that scale the distances to the holdout: the training records' (default: both
        distances of a synthetic record on one scale, so an independent draw gives a share near
        0.5) or the holdout's own (SDMetrics 0.32 scales each distance by its reference's range;
        a holdout with a wider range then looks closer).
    footing : {"equal", "all"}
        What ``closer_to_training`` compares: "equal" (default) — each synthetic record's nearest
        record in a seeded subsample of the larger of training and holdout of the smaller one's
        size against its nearest in the other, so an independent draw gives 0.5 whatever the
        sizes (with a 4:1 split, "all" gives about 0.8 for a harmless synthesis); "all" —
        every training record against the holdout (SDMetrics 0.32's DCROverfittingProtection).
        The DCR and NNDR figures always use every training record.
    """

    vars: list[str] | None = Field(None, min_length=1)
    baseline_records: int = Field(10_000, ge=1)
    seed: Seed = 0
    confidence_level: float = Field(0.95, gt=0, lt=1)
    block_on: list[str] = Field(default_factory=list)
    holdout_scale: Literal["training", "holdout"] = "training"
    footing: Literal["equal", "all"] = "equal"

    def variables(self) -> list[str]:
        return list(dict.fromkeys([*self.block_on, *(self.vars or [])]))
