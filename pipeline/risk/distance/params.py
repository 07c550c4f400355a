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
        Seed of the random baseline, the equal-footing subsample and the relabellings.
    confidence_level : float
        Level of the interval of the share of synthetic records closer to training.
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
    ties : {"half", "not_closer"}
        How ``closer_to_training`` counts a synthetic record exactly as close to both: half
        (default since issue 32: an independent draw gives 0.5 however many records tie, as on
        categorical or binned data) or not closer to training (SDMetrics 0.32 and anonymeter's
        strict comparison, kept for comparison: with many ties it reads far below 0.5).
    relabellings : int
        Random splits of the compared training and holdout records into groups of their sizes
        behind the interval of ``closer_to_training`` (its value ± t · sd over them: which
        records fell in training or holdout moves the share more than the Wilson interval,
        which counts only synthetic records, allows).  0: the Wilson interval.
    """

    vars: list[str] | None = Field(None, min_length=1)
    baseline_records: int = Field(10_000, ge=1)
    seed: Seed = 0
    confidence_level: float = Field(0.95, gt=0, lt=1)
    block_on: list[str] = Field(default_factory=list)
    holdout_scale: Literal["training", "holdout"] = "training"
    footing: Literal["equal", "all"] = "equal"
    ties: Literal["half", "not_closer"] = "half"
    relabellings: int = Field(100, ge=0)

    def variables(self) -> list[str]:
        return list(dict.fromkeys([*self.block_on, *(self.vars or [])]))
