"""Variable roles, radii and radius grids of one scenario, from validated parameters and the schema.

A :class:`MatchPlan` says which compared variables are matched exactly (categorical) and which
within a radius (continuous), and how the radius is applied.  Radii are always held as a
``{variable: radius}`` mapping; the package's positional radius vector is converted by
:func:`radius_from_package_vector` (column-order rule of IdentificationRiskCalculation).

The parameter values themselves (numbers >= 0, fractions < 1, distinct grid values, disjoint
variable lists) are validated once by the measure's Params model
(:class:`pipeline.risk.idrisk.params.IdentificationRiskParams`); the functions here add only the
checks that need the schema: which variables are continuous, and whether every continuous
variable has a radius.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from pipeline.data.schema import Schema
from pipeline.errors import ParameterError

#: a validated radius: None (exact matching), one number, ``{variable: r}`` or the package's vector
RadiusArg = float | Mapping[str, float] | Sequence[float] | None
#: a validated grid: one shared list of radii, or ``{variable: [radii]}``
GridArg = Sequence[float] | Mapping[str, Sequence[float]]
Interval = Literal["open", "closed"]
NaAction = Literal["error", "no_match"]


@dataclass(frozen=True)
class MatchPlan:
    """How target records are matched against synthetic records.

    Attributes
    ----------
    known, synthesised : tuple of str
        The intruder's known variables and the synthesised variables, as given.
    categorical : tuple of str
        Variables compared by exact equality (known then synthesised order): factors and
        characters, the numeric variables named in ``exact``, and with no radius
        (``radius=None``) every compared variable, as in the package.
    continuous : tuple of str
        Variables compared within a radius, in the column order of the original data (the
        order of the package's radius vector).
    continuous_known : tuple of bool
        For each continuous variable, whether it is known (else synthesised); used by the
        Euclidean option, which pools the known and the synthesised half-widths separately.
    percentage : bool
        Half-width ``r * x`` of the target's true value ``x`` (else ``r``).
    euclidean : bool
        The package's ``euclideanDist``: one shared half-width per group (see
        :func:`~pipeline.risk.idrisk.matching.box_bounds`).
    closed : bool
        Closed intervals ``[x - rho, x + rho]`` (paper) instead of the package's open ones.
    na_action : {"error", "no_match"}
        Missing or non-finite value in a continuous compared variable: raise, or let that
        record match nothing and be matched by nothing.
    """

    known: tuple[str, ...]
    synthesised: tuple[str, ...]
    categorical: tuple[str, ...]
    continuous: tuple[str, ...]
    continuous_known: tuple[bool, ...]
    percentage: bool = True
    euclidean: bool = False
    closed: bool = False
    na_action: NaAction = "error"

    @property
    def compared(self) -> tuple[str, ...]:
        return self.known + self.synthesised

    @property
    def interval(self) -> Interval:
        return "closed" if self.closed else "open"

    @property
    def columns(self) -> list[str]:
        """Every column the matching reads (categorical, then continuous)."""
        return list(dict.fromkeys([*self.categorical, *self.continuous]))


def make_plan(
    schema: Schema,
    columns: Sequence[str],
    known: Sequence[str],
    synthesised: Sequence[str],
    exact: bool,
    percentage: bool = True,
    euclidean: bool = False,
    interval: Interval = "open",
    na_action: NaAction = "error",
    exact_variables: Sequence[str] = (),
) -> MatchPlan:
    """The :class:`MatchPlan` of validated variable lists: kinds come from the schema.

    Parameters
    ----------
    schema : Schema
        Numeric variables (``integer``/``numeric``) are matched within a radius, every other
        kind exactly.
    columns : sequence of str
        Columns of the original data, in order (the order of the package's radius vector).
    known, synthesised : sequence of str
        Disjoint variable lists, each variable of the schema.
    exact : bool
        No radius: every compared variable is matched exactly (package ``r = NULL``).
    exact_variables : sequence of str
        Numeric variables matched by equality while the others take a radius (float equality
        of the stored values: exact for whole numbers, with no radius arithmetic).
    """
    known_t, syn_t = tuple(known), tuple(synthesised)
    compared = known_t + syn_t
    if exact:
        categorical, continuous = compared, ()
    else:
        by_radius = {v for v in compared if schema[v].is_numeric and v not in exact_variables}
        categorical = tuple(v for v in compared if v not in by_radius)
        continuous = tuple(c for c in columns if c in by_radius)
    return MatchPlan(
        known=known_t,
        synthesised=syn_t,
        categorical=categorical,
        continuous=continuous,
        continuous_known=tuple(v in known_t for v in continuous),
        percentage=bool(percentage),
        euclidean=bool(euclidean),
        closed=interval == "closed",
        na_action=na_action,
    )


def radius_from_package_vector(plan: MatchPlan, vector: Sequence[float]) -> dict[str, float]:
    """The package's radius vector as a mapping: entry k belongs to the k-th continuous compared
    variable in the column order of the original data (not the order of known/syn)."""
    values = [float(r) for r in vector]
    if len(values) != len(plan.continuous):
        raise ParameterError(
            f"a radius vector needs one entry per continuous compared variable in column order "
            f"({', '.join(plan.continuous) or 'none'}): expected {len(plan.continuous)}, got {len(values)}"
        )
    return dict(zip(plan.continuous, values, strict=True))


def resolve_radius(plan: MatchPlan, radius: RadiusArg, required: Sequence[str] | None = None) -> dict[str, float]:
    """Radius of every continuous compared variable as a mapping.

    A scalar (or a length-1 sequence, as in R) applies to every continuous compared variable
    (package rule); a mapping names variables; a longer sequence is the package's positional
    vector.  ``required`` (default: all continuous variables) are the variables that must end
    up with a radius.
    """
    required = plan.continuous if required is None else tuple(required)
    if radius is None:
        out: dict[str, float] = {}
    elif isinstance(radius, Mapping):
        categorical = [v for v in radius if v not in plan.continuous]
        if categorical:
            raise ParameterError(
                f"radius given for categorical variable {', '.join(map(repr, categorical))}; "
                "categorical variables are matched exactly"
            )
        out = {v: float(r) for v, r in radius.items()}
    elif isinstance(radius, (Sequence, np.ndarray)):
        if len(radius) == 1:  # R has no scalars: a length-1 vector is the package's scalar rule
            return resolve_radius(plan, radius[0], required)
        out = radius_from_package_vector(plan, radius)
    else:
        out = dict.fromkeys(plan.continuous, float(radius))
    lacking = [v for v in required if v not in out]
    if lacking:
        raise ParameterError(f"no radius for continuous variable(s) {', '.join(map(repr, lacking))}")
    return out


def format_radius(r: float) -> str:
    """Shortest exact decimal of a radius (``0.1``, ``0.025``, ``1000``)."""
    return np.format_float_positional(float(r), trim="-")


@dataclass(frozen=True)
class RadiusGrid:
    """The radius combinations of a sweep.

    Attributes
    ----------
    variables : tuple of str
        Variables whose radius varies.  For a shared grid these all take the same value.
    shared : bool
        One grid for all synthesised continuous variables (label ``r=0.1``) rather than a
        Cartesian product of per-variable grids (``r_Income=0.1;r_Expenditure=0.2``).
    values : tuple of tuple of float
        Grid values per variable (ascending); for a shared grid one tuple.
    combos : tuple of dict
        Full radius mapping (every continuous variable) of each combination, in grid order
        (lexicographic, ascending).
    """

    variables: tuple[str, ...]
    shared: bool
    values: tuple[tuple[float, ...], ...]
    combos: tuple[dict[str, float], ...]

    def label(self, k: int) -> str:
        """Display label of combination k (for people and plot axes; never parsed)."""
        combo = self.combos[k]
        if self.shared:
            return f"r={format_radius(combo[self.variables[0]])}"
        return ";".join(f"r_{v}={format_radius(combo[v])}" for v in self.variables)

    @property
    def labels(self) -> list[str]:
        return [self.label(k) for k in range(len(self.combos))]

    def at_boundary(self, k: int) -> bool:
        """Whether combination k sits at an end of some grid with more than one value."""
        combo = self.combos[k]
        for v, vals in zip(self._value_vars(), self.values, strict=True):
            if len(vals) > 1 and combo[v] in (vals[0], vals[-1]):
                return True
        return False

    def _value_vars(self) -> tuple[str, ...]:
        return self.variables[:1] if self.shared else self.variables

    def radius_of(self, k: int) -> dict[str, float]:
        """The varying radii of combination k (``{"r": value}`` for a shared grid)."""
        combo = self.combos[k]
        if self.shared:
            return {"r": combo[self.variables[0]]}
        return {v: combo[v] for v in self.variables}


def make_grid(plan: MatchPlan, grid: GridArg, radius: RadiusArg) -> RadiusGrid:
    """Radius combinations of a sweep.

    ``grid`` as a list: one shared radius for every *synthesised* continuous variable (known
    continuous variables keep their fixed radius from ``radius``, as in the paper).  As a
    mapping: a grid per named variable and the Cartesian product of them.  Variables not in
    the grid take their radius from ``radius``.
    """
    if not plan.continuous:
        raise ParameterError("a radius grid needs at least one continuous known or synthesised variable")
    if isinstance(grid, Mapping):
        variables = tuple(grid)
        categorical = [v for v in variables if v not in plan.continuous]
        if categorical:
            raise ParameterError(f"radius grid given for categorical variable {', '.join(map(repr, categorical))}")
        values = tuple(tuple(sorted(float(r) for r in grid[v])) for v in variables)
        shared = False
    else:
        variables = tuple(v for v, k in zip(plan.continuous, plan.continuous_known, strict=True) if not k)
        if not variables:
            raise ParameterError("a shared radius grid needs a continuous synthesised variable; give a mapping instead")
        values = (tuple(sorted(float(r) for r in grid)),)
        shared = True
    fixed = [v for v in plan.continuous if v not in variables]
    base = resolve_radius(plan, _without(radius, variables, plan), required=fixed)
    combos = []
    for point in itertools.product(*values):
        combo = dict(base)
        if shared:
            combo.update(dict.fromkeys(variables, point[0]))
        else:
            combo.update(dict(zip(variables, point, strict=True)))
        combos.append({v: combo[v] for v in plan.continuous})
    return RadiusGrid(variables, shared, values, tuple(combos))


def _without(radius: RadiusArg, variables: Sequence[str], plan: MatchPlan) -> RadiusArg:
    """``radius`` restricted to the variables outside the grid (a vector or scalar is first
    expanded over all continuous variables)."""
    if radius is None:
        return None
    if isinstance(radius, Mapping):
        return {v: r for v, r in radius.items() if v not in variables}
    full = resolve_radius(plan, radius)
    return {v: r for v, r in full.items() if v not in variables}
