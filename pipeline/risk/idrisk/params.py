"""Parameters of identification risk: scenarios, radii, radius grids and repetitions.

Example task parameters (YAML)::

    scenarios:
      income:    {known: [Age, Urban, Marital], synthesised: [Income]}
      incexp:    {known: [Age, Urban, Marital], synthesised: [Expenditure, Income]}
    radius: {Age: 0.1}                      # fixed radii (known continuous variables)
    radius_grid: [0.01, 0.025, 0.05, 0.1, 0.2, 0.3]   # shared by the synthesised continuous ones
    percentage: true
    interval: open
    exact: [Age]                            # numeric variables matched by equality, not a radius

A scenario may override ``radius``/``radius_grid`` (a grid may also be per variable:
``{Income: [...], Expenditure: [...]}``; ``radius_grid: null`` turns the sweep off).
Without a grid the scenario is evaluated at its fixed radius; with neither, every variable
is matched exactly (package ``r = NULL``).

:class:`IdentificationRiskParams` is the only validation of these parameters;
:meth:`~pipeline.risk.idrisk.measure.IdentificationRiskMeasure.check` adds what needs the schema
(which variables are continuous, whether each has a radius).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from numbers import Real
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BeforeValidator, Field, field_validator, model_validator

from pipeline.data.schema import Schema
from pipeline.errors import ParameterError
from pipeline.evaluation.base import Params
from pipeline.risk.idrisk.plan import MatchPlan, RadiusGrid, make_grid, make_plan, resolve_radius

RadiusValue = float | dict[str, float] | list[float] | None
GridValue = list[float] | dict[str, list[float]] | None

# ---- parameter values (pure checks used by the Params model) ------------------------------


def _radius_number(r: Any, where: str) -> float:
    """A radius value: a finite number >= 0 (whether it must be < 1 depends on ``percentage``)."""
    if isinstance(r, bool) or not isinstance(r, Real):
        raise ValueError(f"{where} must be a number, got {type(r).__name__}")
    value = float(r)
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{where} must be a finite number >= 0")
    return value


def _is_list(value: Any) -> bool:
    return isinstance(value, (Sequence, np.ndarray)) and not isinstance(value, (str, bytes))


def _radius_value(value: Any) -> RadiusValue:
    """None, one number, ``{variable: number}`` or the package's positional vector of numbers."""
    if value is None:
        return None
    if isinstance(value, Mapping):
        return {str(v): _radius_number(r, f"radius for {v!r}") for v, r in value.items()}
    if _is_list(value):
        return [_radius_number(r, "radius") for r in value]
    return _radius_number(value, "radius")


def _grid_values(values: Any, variable: str) -> list[float]:
    if not _is_list(values):
        raise ValueError(f"radius grid for {variable!r} must be a list of numbers")
    checked = [_radius_number(r, f"radius grid value for {variable!r}") for r in values]
    if not checked:
        raise ValueError(f"radius grid for {variable!r} is empty")
    if len(set(checked)) != len(checked):
        raise ValueError(f"radius grid for {variable!r} has repeated values")
    return checked


def _grid_value(value: Any) -> GridValue:
    """None, one shared list of radii, or ``{variable: [radii]}``."""
    if value is None:
        return None
    if isinstance(value, Mapping):
        if not value:
            raise ValueError("the radius grid mapping is empty")
        return {str(v): _grid_values(vals, str(v)) for v, vals in value.items()}
    return _grid_values(value, "r")


def _radius_numbers(radius: RadiusValue, grid: GridValue) -> list[tuple[str, float]]:
    """Every value of a radius and a grid, with how messages name it."""
    out: list[tuple[str, float]] = []
    if isinstance(radius, dict):
        out += [(f"radius for {v!r}", r) for v, r in radius.items()]
    elif isinstance(radius, list):
        out += [("radius", r) for r in radius]
    elif radius is not None:
        out.append(("radius", radius))
    if isinstance(grid, dict):
        out += [(f"radius grid value for {v!r}", r) for v, vals in grid.items() for r in vals]
    elif grid is not None:
        out += [("radius grid value", r) for r in grid]
    return out


#: a radius / radius grid parameter, checked and normalised by one rule wherever it is given
Radius = Annotated[RadiusValue, BeforeValidator(_radius_value)]
Grid = Annotated[GridValue, BeforeValidator(_grid_value)]


def _mapping_keys(value: RadiusValue | GridValue) -> list[str]:
    return list(value) if isinstance(value, dict) else []


# ---- the Params model -----------------------------------------------------------------------


class Scenario(Params):
    """Which variables the intruder knows and which were synthesised (and optional radii).

    ``radius``/``radius_grid`` override the task's defaults; an explicit ``radius_grid: null``
    turns a default sweep off.
    """

    known: list[str]
    synthesised: list[str]
    radius: Radius = None
    radius_grid: Grid = None

    @field_validator("known", "synthesised", mode="before")
    @classmethod
    def _one_name(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @model_validator(mode="after")
    def _variables(self) -> Scenario:
        if not self.synthesised:
            raise ValueError("synthesised must name at least one variable")
        for what, names in (("known", self.known), ("synthesised", self.synthesised)):
            dupes = sorted({v for v in names if names.count(v) > 1})
            if dupes:
                raise ValueError(f"{what} lists {', '.join(map(repr, dupes))} more than once")
        both = [v for v in self.synthesised if v in self.known]
        if both:
            raise ValueError(
                f"variable(s) {', '.join(map(repr, both))} are listed as both known and synthesised; "
                "a known variable is released unchanged, a synthesised one is replaced"
            )
        for what, value in (("radius", self.radius), ("radius grid", self.radius_grid)):
            foreign = [v for v in _mapping_keys(value) if v not in self.variables()]
            if foreign:
                raise ValueError(
                    f"{what} given for {', '.join(map(repr, foreign))}, which is neither a known nor a "
                    "synthesised variable"
                )
        return self

    def variables(self) -> list[str]:
        return [*self.known, *self.synthesised]


@dataclass(frozen=True)
class ScenarioSetup:
    """A scenario resolved against the schema: its plan and its radius, or its grid."""

    plan: MatchPlan
    radius: dict[str, float] | None
    grid: RadiusGrid | None


class IdentificationRiskParams(Params):
    """Parameters of identification risk (names follow IdentificationRisk()).

    ``sets_per_repetition``: when the synthetic sets are R repetitions of m sets each (the
    paper's m study), m; the per-repetition mean file risk at r* is then reported.

    ``exact``: numeric variables matched by equality in every scenario that compares them,
    while the other numeric variables take their radius (a percentage or absolute one): e.g.
    whole-number years of education known exactly beside a wage within 10 %.  They take no
    radius and no grid, and a shared grid or a single radius skips them.
    """

    scenarios: dict[str, Scenario] = Field(min_length=1)
    radius: Radius = None
    radius_grid: Grid = None
    percentage: bool = True
    euclidean: bool = False
    interval: Literal["open", "closed"] = "open"
    criterion: Literal["mean", "median"] = "mean"
    na_action: Literal["error", "no_match"] = "error"
    sets_per_repetition: int | None = Field(default=None, ge=1)
    exact: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _consistent(self) -> IdentificationRiskParams:
        bad = [name for name in self.scenarios if not name or any(ch in name for ch in ";=")]
        if bad:
            raise ValueError(f"scenario names must be non-empty and contain neither ';' nor '=': {bad}")
        unused = [v for v in _mapping_keys(self.radius) if v not in self.variables()]
        if unused:
            raise ValueError(f"radius given for {', '.join(map(repr, unused))}, which no scenario uses")
        unused = [v for v in self.exact if v not in self.variables()]
        if unused:
            raise ValueError(f"exact names {', '.join(map(repr, unused))}, which no scenario uses")
        given = set(_mapping_keys(self.radius)) | set(_mapping_keys(self.radius_grid))
        for s in self.scenarios.values():
            given |= set(_mapping_keys(s.radius)) | set(_mapping_keys(s.radius_grid))
        both = [v for v in self.exact if v in given]
        if both:
            raise ValueError(
                f"{', '.join(map(repr, both))} is matched exactly ('exact') and also given a radius or a radius "
                "grid; remove it from one of them"
            )
        for name, scenario in self.scenarios.items():
            foreign = [v for v in _mapping_keys(self.grid_of(name)) if v not in scenario.variables()]
            if foreign:
                raise ValueError(
                    f"radius grid given for {', '.join(map(repr, foreign))}, which scenario {name!r} neither "
                    "knows nor synthesises"
                )
        values = _radius_numbers(self.radius, self.radius_grid)
        for s in self.scenarios.values():
            values += _radius_numbers(s.radius, s.radius_grid)
        zero = [where for where, r in values if r == 0]
        if zero and self.interval == "open":
            # |x - y| < 0 holds for no pair: the file risk would be 0 because nothing matches
            raise ValueError(
                f"{zero[0]} is 0, but with interval='open' a match needs |x - y| < radius, so a radius of 0 "
                "matches nothing, not even a record's own value; to match a variable exactly list it in "
                "exact: [variable] (the others keep their radius), or set interval: closed (then 0 means equal "
                "values)"
            )
        if self.percentage:
            for where, r in values:
                if r >= 1:
                    raise ValueError(
                        f"{where} is {r:g}, but with percentage=True a radius is a fraction of the true "
                        "value (0.1 = 10 %), so it must be < 1; use percentage=False for a radius in the "
                        "variable's own units"
                    )
        return self

    def variables(self) -> list[str]:
        """Every known and synthesised variable of every scenario."""
        return list(dict.fromkeys(v for s in self.scenarios.values() for v in s.variables()))

    def radius_of(self, name: str) -> RadiusValue:
        """The scenario's radius, else the task default (a default mapping is restricted to the
        scenario's variables, so one default can serve scenarios with different variables)."""
        s = self.scenarios[name]
        if "radius" in s.model_fields_set:
            return s.radius
        if isinstance(self.radius, dict):
            return {v: r for v, r in self.radius.items() if v in s.variables()}
        return self.radius

    def grid_of(self, name: str) -> GridValue:
        """The scenario's grid (an explicit ``null`` means: no sweep), else the task default."""
        s = self.scenarios[name]
        return s.radius_grid if "radius_grid" in s.model_fields_set else self.radius_grid

    def setup(self, name: str, schema: Schema, columns: Sequence[str]) -> ScenarioSetup:
        """Scenario ``name`` against the schema: plan, radius or grid.

        Raises
        ------
        ParameterError
            What only the schema can tell: a radius or grid for a categorical variable, a
            continuous variable without a radius, a package radius vector of the wrong length,
            a grid without a continuous (synthesised) variable.
        """
        s = self.scenarios[name]
        radius, grid = self.radius_of(name), self.grid_of(name)
        try:
            plan = make_plan(
                schema,
                columns,
                s.known,
                s.synthesised,
                exact=radius is None and grid is None,
                percentage=self.percentage,
                euclidean=self.euclidean,
                interval=self.interval,
                na_action=self.na_action,
                exact_variables=self.exact,
            )
            if grid is not None:
                return ScenarioSetup(plan, None, make_grid(plan, grid, radius))
            return ScenarioSetup(plan, None if radius is None else resolve_radius(plan, radius), None)
        except ParameterError as e:
            raise ParameterError(f"scenario {name!r}: {e}") from None
