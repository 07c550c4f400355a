"""The variables a distance compares: the checks of the measures that use the nearest-neighbour
search (``dcr`` and anonymeter's attacks), apart from its numba kernels so that ``validate``
runs them without loading numba."""

from __future__ import annotations

from collections.abc import Sequence

from pipeline.data.schema import Schema
from pipeline.errors import ParameterError


def split_kinds(schema: Schema, variables: Sequence[str], where: str) -> tuple[list[str], list[str]]:
    """The factor and the numeric variables among ``variables`` (character ones are refused)."""
    factors = [v for v in variables if schema[v].is_factor]
    numerics = [v for v in variables if schema[v].is_numeric]
    other = [v for v in variables if v not in factors and v not in numerics]
    if other:
        raise ParameterError(
            f"{where}: variable(s) {', '.join(map(repr, other))} are character variables; "
            "a distance compares factors and numeric variables only (declare them as factors)"
        )
    return factors, numerics


def check_block_on(schema: Schema, block_on: Sequence[str], where: str) -> None:
    """``block_on`` variables must be factors (they are compared by their level codes)."""
    wrong = [v for v in block_on if not schema[v].is_factor]
    if wrong:
        raise ParameterError(f"{where}: block_on variable(s) {', '.join(map(repr, wrong))} must be factors")
