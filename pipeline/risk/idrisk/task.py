"""The identification-risk measure: scenarios, radius grids and repetitions, and its thin wrappers.

Example task parameters (YAML)::

    scenarios:
      income:    {known: [Age, Urban, Marital], synthesised: [Income]}
      incexp:    {known: [Age, Urban, Marital], synthesised: [Expenditure, Income]}
    radius: {Age: 0.1}                      # fixed radii (known continuous variables)
    radius_grid: [0.01, 0.025, 0.05, 0.1, 0.2, 0.3]   # shared by the synthesised continuous ones
    percentage: true
    interval: open

A scenario may override ``radius``/``radius_grid`` (a grid may also be per variable:
``{Income: [...], Expenditure: [...]}``; ``radius_grid: null`` turns the sweep off).
Without a grid the scenario is evaluated at its fixed radius; with neither, every variable
is matched exactly (package ``r = NULL``).

:class:`IdentificationRiskParams` is the only validation of these parameters;
:meth:`IdentificationRiskMeasure.check` adds what needs the schema (which variables are
continuous, whether each has a radius).  The package-like functions
:func:`identification_risk`, :func:`identification_risk_categorical` and :func:`radius_sweep`
are thin wrappers over the measure.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from numbers import Real
from typing import Annotated, Any, ClassVar, Literal

import numpy as np
from pydantic import BeforeValidator, Field, field_validator, model_validator

from pipeline.data.schema import Schema
from pipeline.errors import ParameterError
from pipeline.evaluation.base import Measure, Params, Result, Row
from pipeline.evaluation.data import EvalData, as_eval_data
from pipeline.evaluation.execution import Executor
from pipeline.evaluation.footing import Footing, PairedFooting
from pipeline.risk.idrisk.compute import (
    check_frames,
    count_histograms,
    count_records,
    records_matrices,
    sweep_statistics,
)
from pipeline.risk.idrisk.plan import MatchPlan, RadiusGrid, make_grid, make_plan, resolve_radius
from pipeline.risk.idrisk.result import IdentificationRiskResult, RadiusSweepResult, SetStatistics, summarise

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

    @model_validator(mode="after")
    def _consistent(self) -> IdentificationRiskParams:
        bad = [name for name in self.scenarios if not name or any(ch in name for ch in ";=")]
        if bad:
            raise ValueError(f"scenario names must be non-empty and contain neither ';' nor '=': {bad}")
        unused = [v for v in _mapping_keys(self.radius) if v not in self.variables()]
        if unused:
            raise ValueError(f"radius given for {', '.join(map(repr, unused))}, which no scenario uses")
        for name, scenario in self.scenarios.items():
            foreign = [v for v in _mapping_keys(self.grid_of(name)) if v not in scenario.variables()]
            if foreign:
                raise ValueError(
                    f"radius grid given for {', '.join(map(repr, foreign))}, which scenario {name!r} neither "
                    "knows nor synthesises"
                )
        if self.percentage:
            values = _radius_numbers(self.radius, self.radius_grid)
            for s in self.scenarios.values():
                values += _radius_numbers(s.radius, s.radius_grid)
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
            )
            if grid is not None:
                return ScenarioSetup(plan, None, make_grid(plan, grid, radius))
            return ScenarioSetup(plan, None if radius is None else resolve_radius(plan, radius), None)
        except ParameterError as e:
            raise ParameterError(f"scenario {name!r}: {e}") from None


# ---- the result -----------------------------------------------------------------------------

ScenarioResult = RadiusSweepResult | IdentificationRiskResult


def _at_max(result: ScenarioResult) -> SetStatistics:
    return result.at_max if isinstance(result, RadiusSweepResult) else result.statistics


@dataclass(frozen=True)
class IdentificationRiskTaskResult(Result):
    """Results of every scenario: a radius sweep, or a single evaluation at a fixed radius.

    Attributes
    ----------
    scenarios : dict
        Scenario name -> :class:`RadiusSweepResult` (with a grid) or
        :class:`IdentificationRiskResult` (fixed radius or exact matching).
    sets_per_repetition : int or None
        When the synthetic sets are R repetitions of m sets each (the paper's m study),
        m; per-repetition averages are then reported.
    """

    scenarios: dict[str, ScenarioResult]
    sets_per_repetition: int | None = None

    def at_max(self, name: str) -> SetStatistics:
        """Per-set statistics of a scenario at its maximising (or only) radius."""
        return _at_max(self.scenarios[name])

    def repetition_means(self, name: str) -> np.ndarray:
        """Mean file-level risk (at the maximising radius) of each repetition of m sets."""
        risk = self.at_max(name).file_risk
        m = self.sets_per_repetition or len(risk)
        return risk.reshape(-1, m).mean(axis=1)

    def rows(self) -> list[Row]:
        """Every scenario's rows with ``scenario`` in their params, and the repetition means.

        Per scenario: ``exp.risk``, ``file_risk``, ``true.rate``, ``false.rate``, ``s`` per set and
        their mean, per radius (``{"scenario", "radius"}``); for a sweep ``r_star``
        (``{"scenario", "variable"}``) and ``r_star_at_boundary`` (``{"scenario"}``);
        ``file_risk_at_max`` per set at r* (or the only radius); with ``sets_per_repetition``
        ``repetition_file_risk`` (``{"scenario", "repetition"}``, repetitions from 1).
        """
        rows: list[Row] = []
        for name, res in self.scenarios.items():
            rows.extend(Row(r.synthetic, r.measure, r.value, {"scenario": name, **r.params}) for r in res.rows())
            if self.sets_per_repetition:
                rows.extend(
                    Row("mean", "repetition_file_risk", float(v), {"scenario": name, "repetition": k + 1})
                    for k, v in enumerate(self.repetition_means(name))
                )
        return rows

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"measure": "identification_risk", "scenarios": {}}
        for name, res in self.scenarios.items():
            entry = res.to_dict()
            if isinstance(res, RadiusSweepResult):
                entry["max_radius"] = res.r_star
                entry["file_risk_at_max"] = summarise(res.at_max.file_risk)
            else:
                entry["max_radius"] = None if res.radius is None else dict(res.radius)
                entry["file_risk_at_max"] = summarise(res.file_risk)
            if self.sets_per_repetition:
                entry["repetition_file_risk"] = self.repetition_means(name).tolist()
            out["scenarios"][name] = entry
        out["sets_per_repetition"] = self.sets_per_repetition
        return out


# ---- the measure ----------------------------------------------------------------------------


class IdentificationRiskMeasure(Measure):
    """Hornby & Hu identification risk of row-aligned partially synthetic sets, per scenario."""

    type = "identification_risk"
    family = "identification_risk"
    params_model = IdentificationRiskParams
    description = "Hornby & Hu identification risk with radius matching and radius sweeps"
    #: exp.risk is a sum over records (no normalised form); file_risk and true.rate are shares
    baseline_measures: ClassVar[Mapping[str, float | None]] = {"exp.risk": None, "file_risk": 1.0, "true.rate": 1.0}
    params: IdentificationRiskParams

    def baseline_units(self, data: EvalData) -> list[tuple[Measure, Footing]]:
        """One unit per scenario: its records' synthesised values against those of holdout records
        with the same categorical known values (row-aligned data: docs/baselines.md)."""
        p = self.params
        units: list[tuple[Measure, Footing]] = []
        for name, scenario in p.scenarios.items():
            plan = p.setup(name, data.schema, data.columns).plan
            cells = tuple(v for v in plan.categorical if v in scenario.known)
            one = IdentificationRiskMeasure(p.model_copy(update={"scenarios": {name: scenario}}))
            units.append((one, PairedFooting(cells, tuple(scenario.synthesised), tuple(scenario.variables()))))
        return units

    def check(self, data: EvalData) -> None:
        """Variables present, repetitions dividing m, and every scenario resolved against the schema.

        Row alignment and missing continuous values need a pass over the data; they are checked
        at the start of :meth:`evaluate`, before any matching.
        """
        super().check(data)
        p = self.params
        if p.sets_per_repetition and data.m % p.sets_per_repetition:
            raise ParameterError(
                f"sets_per_repetition={p.sets_per_repetition} does not divide the {data.m} synthetic sets"
            )
        for name in p.scenarios:
            p.setup(name, data.schema, data.columns)

    def check_aggregates(self, data: EvalData, executor: Executor) -> None:
        """Row alignment and missing continuous values (:func:`check_frames`, as :meth:`evaluate`)."""
        p = self.params
        setups = [p.setup(name, data.schema, data.columns) for name in p.scenarios]
        continuous = list(dict.fromkeys(v for s in setups for v in s.plan.continuous))
        check_frames(executor.prepare(data.select(p.variables())), executor, continuous, p.na_action)

    def evaluate(self, data: EvalData, executor: Executor) -> IdentificationRiskTaskResult:
        """Every scenario on the data in the form the executor chose (in memory or key blocks).

        The declared variables are kept (persisted on a cluster); one pass of aggregates checks
        row alignment and missing continuous values; then each scenario's counts (c and T per
        record at a fixed radius, (c, T) histograms for a sweep) are computed on its own key
        blocks, all scenarios together.
        """
        p = self.params
        setups = {name: p.setup(name, data.schema, data.columns) for name in p.scenarios}
        prepared = executor.prepare(data.select(p.variables()))
        prepared = prepared.with_frames(executor.persist(*prepared.frames))
        continuous = list(dict.fromkeys(v for s in setups.values() for v in s.plan.continuous))
        n = check_frames(prepared, executor, continuous, p.na_action)
        counts = [
            count_records(prepared, executor, s.plan, s.radius or {})
            if s.grid is None
            else count_histograms(prepared, executor, s.plan, s.grid.combos)
            for s in setups.values()
        ]
        results: dict[str, ScenarioResult] = {}
        for (name, s), value in zip(setups.items(), executor.compute(*counts), strict=True):
            if s.grid is None:
                c, t = records_matrices(value, n, data.m)
                results[name] = IdentificationRiskResult(plan=s.plan, radius=s.radius, c=c, T=t)
            else:
                stats = sweep_statistics(value, n, data.m, len(s.grid.combos))
                results[name] = RadiusSweepResult(s.plan, s.grid, tuple(stats), p.criterion)
        return IdentificationRiskTaskResult(results, p.sets_per_repetition)


# ---- the package-like functions -------------------------------------------------------------


def identification_risk(
    original: Any,
    synthetic: Any,
    known: Sequence[str],
    synthesised: Sequence[str],
    radius: Any = None,
    percentage: bool = True,
    euclidean: bool = False,
    interval: str = "open",
    schema: Schema | None = None,
    *,
    na_action: str = "error",
    executor: Executor | None = None,
) -> IdentificationRiskResult:
    """Identification risk of every target record in every partially synthetic set.

    An intruder knows record i's ``known`` values and the true values of its ``synthesised``
    values and searches each synthetic set for records that agree: categorical variables
    exactly, continuous variables within a radius.  c_i counts the matches, T_i says whether
    record i's own synthetic row is among them, and IR_i = T_i / c_i.

    Parameters
    ----------
    original : DataFrame (pandas or Dask) or Dataset
        The confidential data, n records.
    synthetic : DataFrame/Dataset or list of them
        Partially synthetic sets, each with the same n rows in the same order.
    known, synthesised : list of str
        Known (released unchanged) and synthesised variables; disjoint.
    radius : float, mapping, sequence or None
        None: every variable is matched exactly (package ``r = NULL``).  A number: the radius
        of every continuous known/synthesised variable.  A mapping ``{variable: radius}``:
        one per continuous variable.  A sequence: the package's radius vector, one entry per
        continuous compared variable in the column order of ``original``.
    percentage : bool
        Radius as a fraction of the target's true value (half-width ``r * x``; must be < 1)
        or in the variable's units.
    euclidean : bool
        The package's ``euclideanDist`` (a shared half-width per variable group).
    interval : {"open", "closed"}
        Package (open: ``|x* - x| < rho``) or paper (closed: ``<= rho``) intervals.
    schema : Schema, optional
        Decides which variables are categorical (factor/character) or continuous; default the
        Dataset's schema, else one inferred from the pandas original (numeric = continuous).
    na_action : {"error", "no_match"}
        Missing/non-finite continuous values: raise, or such records match nothing.
        Missing categorical values never match (as in the package).
    executor : Executor, optional
        Where to compute (default: :meth:`Executor.current`: in memory for small data, key
        blocks on the active Dask client for large data).

    Returns
    -------
    IdentificationRiskResult
    """
    scenario = {"known": known, "synthesised": synthesised, "radius": radius, "radius_grid": None}
    options = {"percentage": percentage, "euclidean": euclidean, "interval": interval, "na_action": na_action}
    return _one_scenario(original, synthetic, schema, executor, scenario, options)


def identification_risk_categorical(
    original: Any,
    synthetic: Any,
    known: Sequence[str],
    synthesised: Sequence[str],
    schema: Schema | None = None,
    *,
    executor: Executor | None = None,
) -> IdentificationRiskResult:
    """The package's ``IdentificationRiskCategorical``: every variable matched exactly."""
    return identification_risk(original, synthetic, known, synthesised, None, schema=schema, executor=executor)


def radius_sweep(
    original: Any,
    synthetic: Any,
    known: Sequence[str],
    synthesised: Sequence[str],
    grid: Any,
    radius: Any = None,
    percentage: bool = True,
    euclidean: bool = False,
    interval: str = "open",
    schema: Schema | None = None,
    *,
    criterion: str = "mean",
    na_action: str = "error",
    executor: Executor | None = None,
) -> RadiusSweepResult:
    """File-level identification risk over a grid of radii, and the maximising radius.

    Parameters
    ----------
    grid : list of float or mapping
        A list: one radius shared by every synthesised continuous variable (the paper's
        sweep; known continuous variables keep their ``radius``).  A mapping
        ``{variable: [radii]}``: the Cartesian product of per-variable grids.
    radius : float, mapping, sequence or None
        Fixed radius of the continuous variables that are not in the grid.
    criterion : {"mean", "median"}
        Combination of the m file-level risks used to pick the maximising radius r*
        (ties go to the smaller radius).

    The other parameters are those of :func:`identification_risk`.  Every radius reuses the
    same key blocks, sort orders and candidate indexes; the grid costs extra binary searches
    and sweeps, not extra shuffles or sorts.
    """
    scenario = {"known": known, "synthesised": synthesised, "radius": radius, "radius_grid": grid}
    options = {"percentage": percentage, "euclidean": euclidean, "interval": interval, "na_action": na_action,
               "criterion": criterion}  # fmt: skip
    return _one_scenario(original, synthetic, schema, executor, scenario, options)


def _one_scenario(
    original: Any,
    synthetic: Any,
    schema: Schema | None,
    executor: Executor | None,
    scenario: dict[str, Any],
    options: dict[str, Any],
) -> Any:
    """The package-style wrappers: one scenario through the measure (the only validation)."""
    params = {"scenarios": {"scenario": scenario}, **options}
    return (
        IdentificationRiskMeasure(params).run(as_eval_data(original, synthetic, schema), executor).scenarios["scenario"]
    )
