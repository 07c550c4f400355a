"""The ``dcr`` measure: distance to the closest record, NNDR, and SDMetrics' two DCR protections."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from pipeline.evaluation.base import Measure, Params
from pipeline.evaluation.comparison import Compared
from pipeline.evaluation.data import EvalData
from pipeline.evaluation.reporting import ReportSection
from pipeline.risk.distance.params import DCRParams
from pipeline.risk.nearest.checks import check_block_on, split_kinds

# the distances are imported by evaluate: checking a task needs only the params and the schema
if TYPE_CHECKING:
    from pipeline.evaluation.execution import Executor
    from pipeline.risk.distance.result import DCRResult


class DCRMeasure(Measure):
    """DCR from every synthetic record to the training records (and to the holdout), NNDR, and the
    random-data baseline (docs/distance.md)."""

    type: ClassVar[str] = "dcr"
    family: ClassVar[str] = "distance"
    params_model: ClassVar[type[Params]] = DCRParams
    description: ClassVar[str] = "distance to closest record (SDMetrics DCR), holdout share with interval, NNDR"
    #: the share of synthetic records closer to a training than to a holdout record, against the
    #: half expected when the synthesis memorises nothing
    holdout_view: ClassVar[tuple[Compared, ...]] = (
        Compared("share closer to training (%)", "closer_to_training", "share", null=0.5, scale=100.0),
        Compared(
            "share with a smaller NNDR to training (%)", "nndr_closer_to_training", "share", null=0.5, scale=100.0
        ),
    )
    report_section: ClassVar[ReportSection] = ReportSection(
        "Distance to the closest record (DCR, NNDR)", "pipeline.risk.distance.section:distance_section"
    )
    row_measures: ClassVar[frozenset[str]] = frozenset(
        {"dcr_median", "dcr_mean", "dcr_zero_pct", "nndr_median", "random_dcr_median", "dcr_baseline_protection",
         "holdout_dcr_median", "closer_to_training", "closer_to_training_lower", "closer_to_training_upper",
         "closer_to_training_ties", "closer_to_training_ceiling", "dcr_overfitting_protection",
         "nndr_closer_to_training", "nndr_closer_to_training_lower", "nndr_closer_to_training_upper"}
    )  # fmt: skip

    def compared(self, data: EvalData) -> list[str]:
        """The compared variables: the parameter, else every factor and numeric variable."""
        params: DCRParams = self.params  # type: ignore[assignment]
        if params.vars:
            return params.variables()
        return [
            *params.block_on,
            *(v.name for v in data.schema if (v.is_factor or v.is_numeric) and v.name not in params.block_on),
        ]

    def check(self, data: EvalData) -> None:
        super().check(data)
        split_kinds(data.schema, self.compared(data), self.type)
        check_block_on(data.schema, self.params.block_on, self.type)

    def block_keys(self, data: EvalData) -> tuple[str, ...]:
        """The exact-match factors: the nearest-neighbour search runs within their key blocks."""
        return tuple(self.params.block_on)

    def evaluate(self, data: EvalData, executor: Executor) -> DCRResult:
        from pipeline.risk.distance.compute import RELABEL_NEIGHBOURS, set_distances
        from pipeline.risk.distance.result import DCRResult, set_rows

        params: DCRParams = self.params  # type: ignore[assignment]
        variables = self.compared(data)
        factors, numerics = split_kinds(data.schema, variables, self.type)
        selected = data.select(variables)
        ready = executor.prepare(selected, holdout=True)
        distances = set_distances(
            ready,
            executor,
            factors,
            numerics,
            params.baseline_records,
            params.seed,
            params.holdout_scale,
            params.block_on,
            params.footing,
            RELABEL_NEIGHBOURS if params.relabellings else 2,  # two: each group's NNDR
        )
        rows = [row for i, d in enumerate(distances, start=1) for row in set_rows(str(i), d, variables, params)]
        return DCRResult(tuple(rows), tuple(variables))
