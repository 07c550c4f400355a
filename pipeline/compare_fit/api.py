"""synthpop's ``glm.synds``, ``lm.synds``, ``multinom.synds`` and ``polr.synds`` with
``compare.fit.synds``: thin wrappers of :class:`~pipeline.compare_fit.measure.CompareFitMeasure`.

synthpop fits the synthetic sets first and compares with the original later; here one call does
both (the original is needed for ``compare``), and the result holds the fit, the summary
(``summary.fit.synds``) and the comparison.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pipeline.compare_fit.measure import CompareFitMeasure
from pipeline.compare_fit.result import CompareFitResult
from pipeline.data.schema import Schema
from pipeline.evaluation.data import as_eval_data
from pipeline.evaluation.execution import Executor


def compare_fit_synds(
    formula: str,
    original: Any,
    synthetic: Any,
    *,
    fitting_function: Literal["glm", "lm", "multinom", "polr"] = "glm",
    family: Literal["binomial", "poisson"] = "binomial",
    population_inference: bool = False,
    ci_level: float = 0.95,
    not_synthesised: Sequence[str] | None = None,
    proper: bool = False,
    schema: Schema | None = None,
    cont_na: Mapping[str, Any] | None = None,
    executor: Executor | None = None,
) -> CompareFitResult:
    """Fit ``formula`` to the original and to each synthetic set and compare (synthpop ``compare.fit.synds``).

    Parameters
    ----------
    formula : str
        ``y ~ x1 + x2`` (main effects; ``log(y)`` allowed).
    original, synthetic : frames or Datasets
        The original and the m synthetic sets; ``synthetic`` may be a partial synthesis' result
        (:func:`~pipeline.synth.partial.syn.synthesise_partial`), which tells which variables were kept.
    fitting_function : {"glm", "lm", "multinom", "polr"}
    family : {"binomial", "poisson"}
        The GLM family (logit / log link).
    population_inference : bool
        synthpop's ``population.inference``.
    ci_level : float
        Level of the intervals whose overlap is reported.
    not_synthesised : sequence of str, optional
        Formula variables copied from the original (synthpop method ""): ``incomplete``.
        Default: read from a synthesis result passed as ``synthetic``, else none.
    proper : bool
        Whether the synthesis was proper.
    schema, cont_na : optional
        As every measure (:func:`~pipeline.evaluation.data.as_eval_data`).
    executor : Executor, optional
        Default: the current one.
    """
    measure = CompareFitMeasure(
        formula=formula, model=fitting_function, family=family, population_inference=population_inference,
        ci_level=ci_level, not_synthesised=None if not_synthesised is None else list(not_synthesised), proper=proper,
    )  # fmt: skip
    return measure.run(as_eval_data(original, synthetic, schema, cont_na), executor or Executor.current())


def glm_synds(formula: str, original: Any, synthetic: Any, family: Literal["binomial", "poisson"] = "binomial",
              **kwargs: Any) -> CompareFitResult:  # fmt: skip
    """synthpop ``glm.synds`` (+ ``summary`` and ``compare``); ``kwargs`` as :func:`compare_fit_synds`."""
    return compare_fit_synds(formula, original, synthetic, fitting_function="glm", family=family, **kwargs)


def lm_synds(formula: str, original: Any, synthetic: Any, **kwargs: Any) -> CompareFitResult:
    """synthpop ``lm.synds`` (+ ``summary`` and ``compare``)."""
    return compare_fit_synds(formula, original, synthetic, fitting_function="lm", **kwargs)


def multinom_synds(formula: str, original: Any, synthetic: Any, **kwargs: Any) -> CompareFitResult:
    """synthpop ``multinom.synds`` (+ ``summary`` and ``compare``)."""
    return compare_fit_synds(formula, original, synthetic, fitting_function="multinom", **kwargs)


def polr_synds(formula: str, original: Any, synthetic: Any, **kwargs: Any) -> CompareFitResult:
    """synthpop ``polr.synds`` (+ ``summary`` and ``compare``)."""
    return compare_fit_synds(formula, original, synthetic, fitting_function="polr", **kwargs)
