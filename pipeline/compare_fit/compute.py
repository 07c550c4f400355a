"""``compare_fit``: the model fitted to the original and to every synthetic set, by rounds of
passes over their partitions, then synthpop's combining rules and comparison.

Each fit (:mod:`pipeline.rmodels.regression`) asks for one pass at a time; every round sends
the passes of all unfinished fits together (``map_combine`` over each set's partitions, sums in
partition order), so the records never leave their partitions: lm needs one round, a GLM one
per IRLS step, multinom and polr one per evaluation of their BFGS.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipeline.compare_fit.inference import combine, compare
from pipeline.compare_fit.names import written_names
from pipeline.compare_fit.result import CompareFitResult
from pipeline.errors import DataError
from pipeline.evaluation.data import source_name
from pipeline.rmodels.design import Predictor
from pipeline.rmodels.glm import single_threaded_blas
from pipeline.rmodels.regression import (
    ModelDataError,
    ModelFit,
    RegressionSpec,
    combine_model_passes,
    model_pass,
    new_fit,
)

if TYPE_CHECKING:
    from pipeline.compare_fit.params import CompareFitParams
    from pipeline.data.schema import Schema
    from pipeline.evaluation.data import EvalData
    from pipeline.evaluation.execution import Executor

#: the kind of fit of each fitting function (``glm``: by family)
KINDS = {"lm": "lm", "multinom": "multinom", "polr": "polr"}
GLM_KINDS = {"binomial": "logit", "poisson": "poisson"}


def model_spec(params: CompareFitParams, schema: Schema) -> RegressionSpec:
    """The model of ``params`` on the variables of ``schema`` (their kinds and levels)."""
    response, transform, predictors = params.parts
    kind = GLM_KINDS[params.family] if params.fitting_function == "glm" else KINDS[params.fitting_function]
    preds = [Predictor(v, tuple(schema[v].levels), bool(schema[v].ordered)) if schema[v].is_factor else Predictor(v)
             for v in predictors]  # fmt: skip
    target = schema[response]
    return RegressionSpec.build(kind, response, transform, tuple(target.levels) if target.is_factor else None, preds)


def fit_all(spec: RegressionSpec, data: EvalData, executor: Executor) -> list[ModelFit]:
    """The model fitted to every data set of ``data`` (original first), rounds of passes together."""
    parts = [executor.partitions(f) for f in data.frames]
    fits = [new_fit(spec) for _ in data.frames]
    while True:
        todo = [(i, req) for i, f in enumerate(fits) if (req := f.request()) is not None]
        if not todo:
            return fits
        rounds = [executor.map_combine(parts[i], model_pass, combine_model_passes, None, *req) for i, req in todo]
        with single_threaded_blas():
            for (i, _), res in zip(todo, executor.compute(*rounds), strict=True):
                try:
                    fits[i].feed(res)
                except ModelDataError as e:
                    raise DataError(f"{source_name(i)}: {e}") from None


def evaluate_compare_fit(params: CompareFitParams, data: EvalData, executor: Executor) -> CompareFitResult:
    """synthpop's ``<fit>.synds`` + ``summary.fit.synds`` + ``compare.fit.synds`` on ``data``."""
    names = params.variables()
    # synthpop's checkcomplete: the method of the first formula variable in data order
    incomplete = next(v for v in data.columns if v in names) in params.not_synthesised
    data = executor.prepare(data.select(names))
    spec = model_spec(params, data.schema)
    rows = executor.rows(data)
    n, k = rows[0], rows[1]
    try:
        fits = [f.result for f in fit_all(spec, data, executor)]
    except ModelDataError as e:  # raised by a kernel (the set is not known there)
        raise DataError(str(e)) from None
    (counts,) = executor.compute(
        executor.map_reduce(data.original, model_pass, combine_model_passes, spec, "levels", None)
    )
    summary = combine(fits[1:], n, k, params.population_inference, incomplete, params.proper)
    comparison = compare(fits[1:], fits[0], n, k, params.population_inference, incomplete, params.proper,
                         params.ci_level)  # fmt: skip
    written = written_names(spec, counts["levels"])
    return CompareFitResult(params, fits[0], tuple(fits[1:]), summary, comparison, n, k, incomplete, written)
