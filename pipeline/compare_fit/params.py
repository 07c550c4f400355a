"""Parameters of ``compare_fit`` (synthpop's ``glm.synds`` / ``lm.synds`` / ``multinom.synds`` /
``polr.synds`` followed by ``summary.fit.synds`` and ``compare.fit.synds``)."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from pipeline.evaluation.base import Params

#: ``response ~ x1 + x2 + ...`` with an optional ``log()`` of the response
_NAME = r"(?:[A-Za-z]|\.[A-Za-z._])[A-Za-z0-9._]*"
FORMULA = re.compile(rf"^\s*(?:(log)\(\s*({_NAME})\s*\)|({_NAME}))\s*~\s*({_NAME}(?:\s*\+\s*{_NAME})*)\s*$")


def parse_formula(formula: str) -> tuple[str, str, list[str]]:
    """``(response, transform, predictors)`` of a main-effects formula (``log(income) ~ sex + age``).

    Raises
    ------
    ValueError
        Not of the form ``y ~ a + b`` / ``log(y) ~ a + b``, or a variable named twice.
    """
    match = FORMULA.match(formula)
    if match is None:
        raise ValueError(
            f"formula {formula!r} is not of the form 'y ~ x1 + x2' or 'log(y) ~ x1 + x2' "
            "(main effects of variables of the data; no interactions, '.' or other functions)"
        )
    transform = "log" if match.group(1) else "identity"
    response = match.group(2) or match.group(3)
    predictors = [p.strip() for p in match.group(4).split("+")]
    if len(set(predictors)) < len(predictors) or response in predictors:
        raise ValueError(f"formula {formula!r} names a variable twice")
    return response, transform, predictors


class CompareFitParams(Params):
    """Parameters of ``compare_fit``.

    Attributes
    ----------
    formula : str
        ``y ~ x1 + x2 + ...`` (main effects; the response may be ``log(y)``).
    fitting_function : {"glm", "lm", "multinom", "polr"}
        synthpop's ``glm.synds`` / ``lm.synds`` / ``multinom.synds`` / ``polr.synds``.
    family : {"binomial", "poisson"}
        For ``glm`` (logit and log links); synthpop's default is binomial.
    population_inference : bool
        synthpop's ``population.inference`` (combining rules of Reiter / Raab et al.).
    ci_level : float
        Confidence level of the intervals whose overlap is measured.
    not_synthesised : list of str or None
        Variables the synthesis copied from the original (method ""); synthpop's ``incomplete``
        is whether the first formula variable in data order is one of them.  ``None`` (default):
        read from the synthesis when the pipeline made the sets (a partial synthesis keeps every
        variable without a method), else none (a file is taken as fully synthetic).
    proper : bool
        Whether the synthesis was proper (``syn(proper = TRUE)``): the population-inference variance.
    """

    formula: str
    fitting_function: Literal["glm", "lm", "multinom", "polr"] = Field("glm", alias="model")
    family: Literal["binomial", "poisson"] = "binomial"
    population_inference: bool = False
    ci_level: float = Field(0.95, gt=0, le=1)
    not_synthesised: list[str] | None = None
    proper: bool = False

    @field_validator("formula")
    @classmethod
    def _formula_parses(cls, value: str) -> str:
        parse_formula(value)
        return value

    @model_validator(mode="after")
    def _unsynthesised_in_formula(self) -> CompareFitParams:
        outside = [v for v in self.not_synthesised or () if v not in self.variables()]
        if outside:
            raise ValueError(f"not_synthesised variable(s) {outside} are not in the formula")
        return self

    @property
    def parts(self) -> tuple[str, str, list[str]]:
        """``(response, transform, predictors)`` of the formula."""
        return parse_formula(self.formula)

    def variables(self) -> list[str]:
        response, _, predictors = self.parts
        return [response, *predictors]
