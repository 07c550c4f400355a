"""Task-file integration of identification risk: scenarios, radius grids and repetitions.

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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, model_validator

from pipeline.data.dataset import Dataset
from pipeline.errors import ParameterError
from pipeline.risk.idrisk.measure import identification_risk, radius_sweep
from pipeline.risk.idrisk.result import (
    TIDY_COLUMNS,
    IdentificationRiskResult,
    RadiusSweepResult,
    SetStatistics,
    summarise,
)

RadiusParam = float | dict[str, float] | list[float] | None
GridParam = list[float] | dict[str, list[float]] | None


class Scenario(BaseModel):
    """Which variables the intruder knows and which were synthesised (and optional radii)."""

    model_config = ConfigDict(extra="forbid")

    known: list[str]
    synthesised: list[str] = Field(min_length=1)
    radius: RadiusParam = None
    radius_grid: GridParam = None


class IdentificationRiskParams(BaseModel):
    """Parameters of the identification-risk task (names follow IdentificationRisk())."""

    model_config = ConfigDict(extra="forbid")

    scenarios: dict[str, Scenario] = Field(min_length=1)
    radius: RadiusParam = None
    radius_grid: GridParam = None
    percentage: bool = True
    euclidean: bool = False
    interval: Literal["open", "closed"] = "open"
    criterion: Literal["mean", "median"] = "mean"
    na_action: Literal["error", "no_match"] = "error"
    sets_per_repetition: int | None = Field(default=None, ge=1)
    n_blocks: int | None = Field(default=None, ge=1)

    @model_validator(mode="after")
    def _names(self) -> IdentificationRiskParams:
        bad = [name for name in self.scenarios if not name or any(ch in name for ch in ";=")]
        if bad:
            raise ValueError(f"scenario names must be non-empty and contain neither ';' nor '=': {bad}")
        return self

    def radius_of(self, name: str) -> RadiusParam:
        """The scenario's radius, else the task default (a default mapping is restricted to the
        scenario's variables, so one default can serve scenarios with different variables)."""
        s = self.scenarios[name]
        if "radius" in s.model_fields_set:
            return s.radius
        if isinstance(self.radius, dict):
            return {v: r for v, r in self.radius.items() if v in s.known or v in s.synthesised}
        return self.radius

    def grid_of(self, name: str) -> GridParam:
        """The scenario's grid (an explicit ``null`` means: no sweep), else the task default."""
        s = self.scenarios[name]
        return s.radius_grid if "radius_grid" in s.model_fields_set else self.radius_grid


ScenarioResult = RadiusSweepResult | IdentificationRiskResult


def _at_max(result: ScenarioResult) -> SetStatistics:
    return result.at_max if isinstance(result, RadiusSweepResult) else result.statistics


@dataclass(frozen=True)
class IdentificationRiskTaskResult:
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

    def tidy(self) -> pd.DataFrame:
        frames = []
        for name, res in self.scenarios.items():
            prefix = f"scenario={name}"
            if isinstance(res, RadiusSweepResult):
                frames.append(res.tidy(prefix=prefix + ";"))
                rows = [
                    {
                        "synthetic": "mean",
                        "setting": prefix,
                        "measure": f"r_star{'' if k == 'r' else '_' + k}",
                        "value": float(v),
                    }
                    for k, v in res.r_star.items()
                ]
                rows.append(
                    {
                        "synthetic": "mean",
                        "setting": prefix,
                        "measure": "r_star_at_boundary",
                        "value": float(res.r_star_at_boundary),
                    }
                )
                frames.append(pd.DataFrame(rows, columns=TIDY_COLUMNS))
            else:
                frames.append(pd.DataFrame(res.statistics.tidy_rows(prefix), columns=TIDY_COLUMNS))
            if self.sets_per_repetition:
                reps = self.repetition_means(name)
                frames.append(
                    pd.DataFrame(
                        [
                            {
                                "synthetic": "mean",
                                "setting": f"{prefix};repetition={k + 1}",
                                "measure": "file_risk",
                                "value": float(v),
                            }
                            for k, v in enumerate(reps)
                        ],
                        columns=TIDY_COLUMNS,
                    )
                )
        return pd.concat(frames, ignore_index=True)

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


def evaluate(
    original: Dataset, synthetic: list[Dataset], params: IdentificationRiskParams
) -> IdentificationRiskTaskResult:
    """Run every scenario of the task on the original and the partially synthetic sets."""
    if params.sets_per_repetition and len(synthetic) % params.sets_per_repetition:
        raise ParameterError(
            f"sets_per_repetition={params.sets_per_repetition} does not divide the {len(synthetic)} synthetic sets"
        )
    common = {
        "percentage": params.percentage,
        "euclidean": params.euclidean,
        "interval": params.interval,
        "schema": original.schema,
        "na_action": params.na_action,
        "n_blocks": params.n_blocks,
    }
    results: dict[str, ScenarioResult] = {}
    for name, sc in params.scenarios.items():
        grid = params.grid_of(name)
        if grid is not None:
            results[name] = radius_sweep(
                original,
                synthetic,
                sc.known,
                sc.synthesised,
                grid,
                params.radius_of(name),
                criterion=params.criterion,
                **common,
            )
        else:
            results[name] = identification_risk(
                original, synthetic, sc.known, sc.synthesised, params.radius_of(name), **common
            )
    return IdentificationRiskTaskResult(results, params.sets_per_repetition)
