"""The ``sdc_risk`` measure: sdcMicro's risk measures of the original and of every synthetic set.

Each file is assessed as a release in its own right (the original as the agencies assess it
before anything else, and each synthetic set the same way)::

    - type: sdc_risk
      keys: [sex, agegr, edu, marital]
      weights: w              # optional: Benedetti-Franconi risk with Fk the weight sum
      household: hh           # optional: household risk
      sensitive: [depress]    # optional: l-diversity
      k: [2, 3, 5]
      modrisk: [default, IPF] # optional: log-linear risk estimates

Rows carry params ``{"keys": [...]}`` (plus ``k``/``weighted``, ``sensitive``, ``variable`` or
``method``); see :mod:`pipeline.risk.sdcrisk.result`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, ClassVar

from pipeline.errors import ParameterError
from pipeline.evaluation.base import Measure
from pipeline.evaluation.data import EvalData
from pipeline.evaluation.reporting import ReportSection
from pipeline.risk.sdcrisk.params import SdcRiskParams

if TYPE_CHECKING:
    from pipeline.evaluation.execution import Executor
    from pipeline.risk.sdcrisk.result import SdcRiskResult


class SdcRiskMeasure(Measure):
    """sdcMicro's frequencies, individual/global/household risk, k-anonymity, l-diversity, SUDA2
    and modRisk for one key set, for the original and each synthetic set."""

    type = "sdc_risk"
    family = "sdcrisk"
    params_model = SdcRiskParams
    description = "sdcMicro freqCalc/measure_risk/kAnon/ldiversity/suda2/modRisk of every file"
    report_section = ReportSection(
        "Agencies' risk measures (sdcMicro: frequencies, risk, k-anonymity, l-diversity, SUDA2)",
        "pipeline.risk.sdcrisk.section:sdc_risk_section",
    )
    row_measures = frozenset(
        {"records", "global_risk", "expected_reidentifications", "risk_threshold", "sample_uniques", "sample_pairs",
         "household_risk", "household_expected_reidentifications", "kanon_violations", "suda_records",
         "suda_score_mean", "suda_score_max", "dis_suda_mean", "dis_suda_max", "suda_contribution", "modrisk_gr1",
         "modrisk_gr2", "uniques_matching_original_uniques_pct", "ldiversity_distinct_min",
         "ldiversity_single_value_records", "ldiversity_distinct_mean", "ldiversity_entropy_mean",
         "ldiversity_recursive_mean", "ldiversity_multi_entropy_min", "ldiversity_multi_recursive_min"}
    )  # fmt: skip
    #: synthetic records that are sample uniques on an original sample unique (percent)
    baseline_measures: ClassVar[Mapping[str, float | None]] = {"uniques_matching_original_uniques_pct": 100.0}
    params: SdcRiskParams

    def check(self, data: EvalData) -> None:
        """The variables; the keys and sensitive variables are factors or numbers, the weights
        numbers.  A task gives the synthetic sets; the Python API assesses one file alone, so no
        synthetic set is required (the base check's only other rule)."""
        p = self.params
        data.require(p.variables())
        wrong = [v for v in (*p.keys, *p.sensitive) if not (data.schema[v].is_factor or data.schema[v].is_numeric)]
        if wrong:
            raise ParameterError(
                f"{self.type}: {', '.join(map(repr, wrong))}: keys and sensitive variables must be factors or numbers"
            )
        if p.weights is not None and not data.schema[p.weights].is_numeric:
            raise ParameterError(f"{self.type}: weights {p.weights!r} must be a numeric variable")

    def evaluate(self, data: EvalData, executor: Executor) -> SdcRiskResult:
        from pipeline.risk.sdcrisk.compute import evaluate_files, file_labels
        from pipeline.risk.sdcrisk.result import SdcRiskResult

        files = evaluate_files(data, executor, self.params)
        return SdcRiskResult(tuple(self.params.keys), tuple(files), tuple(file_labels(data.m)))


__all__ = ["SdcRiskMeasure", "SdcRiskParams"]
