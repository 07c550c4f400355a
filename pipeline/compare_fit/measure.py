"""The ``compare_fit`` measure: synthpop's model-based utility (``compare.fit.synds``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipeline.compare_fit.params import CompareFitParams
from pipeline.errors import ParameterError
from pipeline.evaluation.base import Measure
from pipeline.evaluation.reporting import ReportSection

if TYPE_CHECKING:
    from pipeline.compare_fit.result import CompareFitResult
    from pipeline.evaluation.data import EvalData
    from pipeline.evaluation.execution import Executor


class CompareFitMeasure(Measure):
    """A model fitted to the original and to each synthetic set: combined estimates, standardised
    differences, confidence-interval overlap and the lack-of-fit test."""

    type = "compare_fit"
    family = "compare_fit"
    params_model = CompareFitParams
    description = "synthpop glm/lm/multinom/polr.synds + compare.fit.synds: CI overlap, std. differences, lack of fit"
    report_section = ReportSection(
        "Model-based utility (synthpop compare.fit.synds)", "pipeline.compare_fit.section:compare_fit_section"
    )
    row_measures = frozenset(
        {"coef", "se", "z", "qbar", "ubar", "b", "summary_se", "summary_z", "summary_p", "compare_se", "compare_z",
         "diff", "std_diff", "ci_overlap", "mean_ci_overlap", "mean_abs_std_diff", "incomplete", "m", "ncoef",
         "lack_of_fit", "lof_pvalue", "lof_ratio", "lof_df", "lof_df2", "lof_excluded"}
    )  # fmt: skip

    def check(self, data: EvalData) -> None:
        super().check(data)
        p = self.params
        response, transform, predictors = p.parts
        schema = data.schema
        target = schema[response]
        factor_response = p.fitting_function in ("multinom", "polr")
        if factor_response and not target.is_factor:
            raise ParameterError(f"{p.fitting_function} needs a factor response; {response!r} is {target.kind}")
        if p.fitting_function == "polr" and len(target.levels or ()) < 3:
            raise ParameterError(f"polr needs a response with 3 or more levels; {response!r} has fewer")
        if (
            p.fitting_function in ("lm", "glm")
            and target.is_factor
            and not (p.fitting_function == "glm" and p.family == "binomial")
        ):
            raise ParameterError(f"{p.fitting_function} needs a numeric response; {response!r} is a factor")
        if transform == "log" and target.is_factor:
            raise ParameterError(f"log() of the factor {response!r}")
        for v in predictors:
            if schema[v].kind == "character":
                raise ParameterError(f"predictor {v!r} is a character variable (a factor or a number is expected)")

    def evaluate(self, data: EvalData, executor: Executor) -> CompareFitResult:
        from pipeline.compare_fit.compute import evaluate_compare_fit

        return evaluate_compare_fit(self.params, data, executor)
