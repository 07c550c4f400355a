"""``compare_fit``: the model fitted to the original and to every synthetic set, by rounds of
passes over their partitions, then synthpop's combining rules and comparison.

Each lm or glm fit (:mod:`pipeline.rmodels.regression`) asks for one pass at a time; every
round sends the passes of all unfinished fits together (``map_combine`` over each set's
partitions, sums in partition order), so the records never leave their partitions: lm needs two
rounds, a GLM one per IRLS step.  multinom and polr run R's BFGS, which would need a round per
function evaluation and whose path depends on the order of the sums at the 1e-7 level: each of
their data sets is fitted whole, in one task on a worker (``map_frame_tasks``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from pipeline.compare_fit.inference import combine, compare
from pipeline.compare_fit.names import written_names
from pipeline.compare_fit.result import CompareFitResult
from pipeline.errors import DataError
from pipeline.evaluation.data import HOLDOUT, EvalData, source_name
from pipeline.rmodels.design import Predictor
from pipeline.rmodels.fitting import new_fit
from pipeline.rmodels.glm import single_threaded_blas
from pipeline.rmodels.regression import (
    FittedModel,
    ModelDataError,
    RegressionSpec,
    combine_model_passes,
    model_pass,
)

if TYPE_CHECKING:
    from pipeline.compare_fit.params import CompareFitParams
    from pipeline.data.schema import Schema
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


#: fits whose optimiser (R's BFGS, whose line search amplifies the rounding of sums taken in
#: another order to ~1e-7) read each data set whole, on a worker: their rows then do not depend
#: on the partitioning
WHOLE_SET_KINDS = frozenset({"multinom", "polr"})


def fit_whole(spec: RegressionSpec, frames: list[pd.DataFrame]) -> FittedModel | str:
    """The fit of one whole data set (a worker task), or the message of a :class:`ModelDataError`."""
    fit = new_fit(spec)
    try:
        with single_threaded_blas():
            while (req := fit.request()) is not None:
                fit.feed(combine_model_passes([model_pass(frames[0], *req)]))
    except ModelDataError as e:
        return str(e)
    return fit.result


def fit_all(spec: RegressionSpec, data: EvalData, executor: Executor, holdout_last: bool = False) -> list[FittedModel]:
    """The model fitted to every data set of ``data`` (original first): lm and glm by rounds of
    passes over the partitions (the passes of all sets together), multinom and polr one task per
    whole data set (:data:`WHOLE_SET_KINDS`). ``holdout_last``: the last frame is the holdout
    (errors name it so)."""

    def where(i: int) -> str:
        return source_name(HOLDOUT if holdout_last and i == len(data.frames) - 1 else i)

    if spec.kind in WHOLE_SET_KINDS:
        jobs = [((i,),) for i in range(len(data.frames))]
        fitted = executor.map_frame_tasks(fit_whole, jobs, data.frames, (spec,))
        for i, f in enumerate(fitted):
            if isinstance(f, str):
                raise DataError(f"{where(i)}: {f}")
        return fitted
    parts = [executor.partitions(f) for f in data.frames]
    fits = [new_fit(spec) for _ in data.frames]
    while True:
        todo = [(i, req) for i, f in enumerate(fits) if (req := f.request()) is not None]
        if not todo:
            return [f.result for f in fits]
        rounds = [executor.map_combine(parts[i], model_pass, combine_model_passes, None, *req) for i, req in todo]
        with single_threaded_blas():
            for (i, _), res in zip(todo, executor.compute(*rounds), strict=True):
                try:
                    fits[i].feed(res)
                except ModelDataError as e:
                    raise DataError(f"{where(i)}: {e}") from None


def evaluate_compare_fit(params: CompareFitParams, data: EvalData, executor: Executor) -> CompareFitResult:
    """synthpop's ``<fit>.synds`` + ``summary.fit.synds`` + ``compare.fit.synds`` on ``data``."""
    names = params.variables()
    kept = data.kept(names, params.not_synthesised)
    # synthpop's checkcomplete: the method of the first formula variable in data order
    incomplete = next(v for v in data.columns if v in names) in kept
    data = executor.prepare(data.select(names), holdout=True)
    spec = model_spec(params, data.schema)
    with_holdout = data.holdout is not None
    frames = EvalData((*data.frames, data.holdout) if with_holdout else data.frames, data.schema)
    rows = executor.rows(frames)
    n, k = rows[0], rows[1]
    try:
        fits = fit_all(spec, frames, executor, holdout_last=with_holdout)
    except ModelDataError as e:  # raised by a kernel (the set is not known there)
        raise DataError(str(e)) from None
    if with_holdout:
        fits, holdout_fit = fits[:-1], fits[-1]
    (counts,) = executor.compute(
        executor.map_reduce(data.original, model_pass, combine_model_passes, spec, "levels", None)
    )
    summary = combine(fits[1:], n, k, params.population_inference, incomplete, params.proper)
    comparison = compare(fits[1:], fits[0], n, k, params.population_inference, incomplete, params.proper,
                         params.ci_level)  # fmt: skip
    written = written_names(spec, counts["levels"])
    # beyond synthpop: the holdout in the place of one fully synthetic set of its size, the
    # figures a fresh sample of the population gets (the baseline of every comparison)
    holdout = None
    if with_holdout:
        holdout = compare([holdout_fit], fits[0], n, rows[-1], params.population_inference, False, False,
                          params.ci_level)  # fmt: skip
    return CompareFitResult(params, fits[0], tuple(fits[1:]), summary, comparison, n, k, incomplete, written,
                            tuple(kept), holdout, rows[-1] if with_holdout else None)  # fmt: skip
