"""Result objects of identification risk: per record, per synthetic set, per radius, per task (every scenario).

The results are :class:`~pipeline.evaluation.base.Result` objects: :meth:`rows` carry the radius
as a mapping (``{"radius": {"Income": 0.1}}``; ``{}`` for exact matching), and the decision of a
sweep — the maximising radius r* under the chosen criterion — is emitted as rows
(``r_star``, ``r_star_at_boundary``, ``file_risk_at_max``) so that nothing downstream recomputes it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from pipeline.evaluation.base import Result, Row
from pipeline.risk.idrisk.matching import expected_risk, histogram
from pipeline.risk.idrisk.plan import MatchPlan, RadiusGrid, format_radius

#: measures reported per synthetic set (package names, plus the paper's file-level risk)
MEASURES = ("exp.risk", "file_risk", "true.rate", "false.rate", "s")
SUMMARIES = ("mean", "median", "q1", "q3", "min", "max")

Histogram = tuple[np.ndarray, np.ndarray, np.ndarray]


def _defined(values: np.ndarray) -> np.ndarray:
    v = np.asarray(values, dtype=np.float64)
    return v[~np.isnan(v)]


def defined_mean(values: np.ndarray) -> float:
    """The mean of :func:`summarise` alone (no quantiles: the rows of every bootstrap replicate
    need only the mean, and the quantiles cost most of a replicate)."""
    v = _defined(values)
    if len(v) == 1:  # one defined value (one set): the value itself, as np.mean gives it, without its cost
        return float(v[0])
    return float(np.mean(v)) if len(v) else math.nan


def defined_median(values: np.ndarray) -> float:
    """The median of :func:`summarise` alone (its quantile, to the last bit)."""
    v = _defined(values)
    return float(np.quantile(v, 0.5)) if len(v) else math.nan


#: the sweep's criteria: one summary of :func:`summarise` each, computed alone
CRITERIA = {"mean": defined_mean, "median": defined_median}


def summarise(values: np.ndarray) -> dict[str, float]:
    """Mean, median, quartiles and range over synthetic sets (ignoring undefined values, e.g. a
    false match rate with no unique match)."""
    v = _defined(values)
    if len(v) == 0:
        return dict.fromkeys(SUMMARIES, math.nan)
    q1, med, q3 = np.quantile(v, [0.25, 0.5, 0.75])
    return {
        "mean": float(np.mean(v)),
        "median": float(med),
        "q1": float(q1),
        "q3": float(q3),
        "min": float(v.min()),
        "max": float(v.max()),
    }


@dataclass(frozen=True)
class SetStatistics:
    """File-level quantities of m synthetic sets (each array has length m).

    Attributes
    ----------
    n : int
        Number of target records.
    s : ndarray of int
        Unique matches, #{i : c_i = 1}.
    n_true_unique, n_false_unique : ndarray of int
        #{c_i = 1 and T_i = 1} and #{c_i = 1 and T_i = 0}.
    exp_risk : ndarray of float
        Package's expected match risk, Σ_i T_i / c_i (a sum over records).
    sum_c : ndarray of int
        Σ_i c_i.
    n_no_match : ndarray of int
        #{c_i = 0}.
    histograms : tuple of (c, T, count)
        The (c, T) histogram of each set the statistics were made from (aggregates: numbers of
        matches, never record values), for :meth:`resampled`.
    """

    n: int
    s: np.ndarray
    n_true_unique: np.ndarray
    n_false_unique: np.ndarray
    exp_risk: np.ndarray
    sum_c: np.ndarray
    n_no_match: np.ndarray
    histograms: tuple[Histogram, ...] = ()

    @classmethod
    def from_histograms(cls, n: int, histograms: Sequence[Histogram]) -> SetStatistics:
        """From one (c, T, count) histogram per synthetic set (exact integer counts)."""
        cols: dict[str, list[Any]] = {k: [] for k in ("s", "tu", "fu", "er", "sc", "nm")}
        for c, t, cnt in histograms:
            one = c == 1
            cols["s"].append(int(cnt[one].sum()))
            cols["tu"].append(int(cnt[one & t].sum()))
            cols["fu"].append(int(cnt[one & ~t].sum()))
            cols["er"].append(expected_risk(c, t, cnt))
            cols["sc"].append(int((c * cnt).sum()))
            cols["nm"].append(int(cnt[c == 0].sum()))
        as_int = {k: np.array(v, dtype=np.int64) for k, v in cols.items() if k != "er"}
        return cls(
            n=int(n),
            s=as_int["s"],
            n_true_unique=as_int["tu"],
            n_false_unique=as_int["fu"],
            exp_risk=np.array(cols["er"], dtype=np.float64),
            sum_c=as_int["sc"],
            n_no_match=as_int["nm"],
            histograms=tuple(histograms),
        )

    def resampled(self, rng: np.random.Generator, replicates: int) -> SetStatistics:
        """The statistics of ``replicates`` draws of n target records with replacement from the
        one synthetic set's statistics, as the statistics of ``replicates`` sets: every statistic
        is a sum over records of a function of (c_i, T_i), so drawing the records is drawing the
        (c, T) histogram from a multinomial, and each statistic of a draw is the drawn counts
        times that function of the histogram's (c, T) pairs."""
        if len(self.histograms) != 1:
            raise ValueError(f"a bootstrap redraws the records of one synthetic set, not {len(self.histograms)}")
        (c, t, cnt), total = self.histograms[0], int(self.histograms[0][2].sum())
        if total == 0:  # no target record: every statistic 0 (and the rates undefined)
            drawn = np.zeros((replicates, len(cnt)), np.int64)
        else:
            drawn = rng.multinomial(total, cnt / total, size=replicates)
        one, risky = c == 1, t & (c > 0)
        return SetStatistics(
            n=self.n,
            s=drawn[:, one].sum(axis=1),
            n_true_unique=drawn[:, one & t].sum(axis=1),
            n_false_unique=drawn[:, one & ~t].sum(axis=1),
            exp_risk=drawn[:, risky] @ (1.0 / c[risky]),
            sum_c=drawn @ c.astype(np.int64),
            n_no_match=drawn[:, c == 0].sum(axis=1),
        )

    @property
    def m(self) -> int:
        return len(self.s)

    @property
    def true_rate(self) -> np.ndarray:
        """#{c_i = 1, T_i = 1} / n."""
        return self.n_true_unique / self.n if self.n else np.full(self.m, math.nan)

    @property
    def false_rate(self) -> np.ndarray:
        """#{c_i = 1, T_i = 0} / s; NaN when s = 0 (0/0, as in the package)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.s > 0, self.n_false_unique / np.maximum(self.s, 1), math.nan)

    @property
    def file_risk(self) -> np.ndarray:
        """The paper's file-level identification risk, the mean of IR_i: exp.risk / n."""
        return self.exp_risk / self.n if self.n else np.full(self.m, math.nan)

    def measures(self) -> dict[str, np.ndarray]:
        """Every reported measure by its name (see :data:`MEASURES`)."""
        return {
            "exp.risk": self.exp_risk,
            "file_risk": self.file_risk,
            "true.rate": self.true_rate,
            "false.rate": self.false_rate,
            "s": self.s.astype(np.float64),
        }

    def rows(self, params: Mapping[str, Any]) -> list[Row]:
        """Every measure per synthetic set ("1".."m") and its mean over the sets ("mean")."""
        rows = []
        for name, values in self.measures().items():
            rows.extend(Row(str(k + 1), name, float(v), params) for k, v in enumerate(values))
            rows.append(Row("mean", name, defined_mean(values), params))
        return rows

    def at_max_rows(self, radius: Mapping[str, float]) -> list[Row]:
        """``file_risk_at_max`` per synthetic set: these statistics are the ones at the maximising radius."""
        params = {"radius": dict(radius)}
        return [Row(str(k + 1), "file_risk_at_max", float(v), params) for k, v in enumerate(self.file_risk)]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, values in self.measures().items():
            out[name] = [float(v) for v in values]
            out[f"{name}_summary"] = {k: float(v) for k, v in summarise(values).items()}
        out["sum_c"] = self.sum_c.tolist()
        out["n_no_match"] = self.n_no_match.tolist()
        return out


def _plan_dict(plan: MatchPlan) -> dict[str, Any]:
    return {
        "known": list(plan.known),
        "synthesised": list(plan.synthesised),
        "categorical": list(plan.categorical),
        "continuous": list(plan.continuous),
        "percentage": plan.percentage,
        "euclidean": plan.euclidean,
        "interval": plan.interval,
        "na_action": plan.na_action,
    }


@dataclass(frozen=True)
class IdentificationRiskResult(Result):
    """Record- and file-level identification risk for one radius setting.

    Attributes
    ----------
    plan : MatchPlan
        Variables and matching rules.
    radius : dict or None
        Radius of every continuous variable; None = exact matching of every variable.
    c : ndarray of int64, shape (n, m)
        Number of synthetic records matching target record i in synthetic set l.
    T : ndarray of bool, shape (n, m)
        Whether record i's own synthetic row is among its matches (False when c = 0; the
        package's convention of reporting 1 there is :attr:`T_package`).
    """

    plan: MatchPlan
    radius: dict[str, float] | None
    c: np.ndarray
    T: np.ndarray
    #: bootstrap replicates' statistics (:meth:`resampled`: sets 1..B) in place of those of ``c`` and ``T``
    replicate: SetStatistics | None = None

    @property
    def n(self) -> int:
        return self.c.shape[0]

    @property
    def m(self) -> int:
        return self.c.shape[1]

    @property
    def T_package(self) -> np.ndarray:
        """T as the package reports it: 1 where c = 0."""
        return np.where(self.c == 0, True, self.T)

    @property
    def K(self) -> np.ndarray:
        """True unique match: c = 1 and T = 1."""
        return (self.c == 1) & self.T

    @property
    def F(self) -> np.ndarray:
        """False unique match: c = 1 and T = 0."""
        return (self.c == 1) & ~self.T

    @property
    def risk(self) -> np.ndarray:
        """IR_i = T_i / c_i (0 when c_i = 0); the package's ``Risk_vector``."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.c > 0, self.T / np.maximum(self.c, 1), 0.0)

    @cached_property
    def statistics(self) -> SetStatistics:
        if self.replicate is not None:
            return self.replicate
        return SetStatistics.from_histograms(self.n, [histogram(self.c[:, k], self.T[:, k]) for k in range(self.m)])

    def resampled(self, rng: np.random.Generator, replicates: int) -> IdentificationRiskResult:
        """Bootstrap replicates as sets 1..replicates: the file-level statistics of target records
        drawn with replacement."""
        return replace(self, replicate=self.statistics.resampled(rng, replicates))

    @property
    def exp_risk(self) -> np.ndarray:
        return self.statistics.exp_risk

    @property
    def file_risk(self) -> np.ndarray:
        return self.statistics.file_risk

    @property
    def true_rate(self) -> np.ndarray:
        return self.statistics.true_rate

    @property
    def false_rate(self) -> np.ndarray:
        return self.statistics.false_rate

    @property
    def s(self) -> np.ndarray:
        return self.statistics.s

    def summary(self) -> pd.DataFrame:
        """Summaries over the m synthetic sets: one row per measure."""
        return pd.DataFrame({k: summarise(v) for k, v in self.statistics.measures().items()}).T

    def rows(self) -> list[Row]:
        """The per-set statistics at the radius (``{}`` = exact), and again as ``file_risk_at_max``."""
        radius = dict(self.radius or {})
        return [*self.statistics.rows({"radius": radius}), *self.statistics.at_max_rows(radius)]

    def to_dict(self) -> dict[str, Any]:
        return {
            "measure": "identification_risk",
            **_plan_dict(self.plan),
            "radius": None if self.radius is None else dict(self.radius),
            "n": self.n,
            "m": self.m,
            **self.statistics.to_dict(),
        }


@dataclass(frozen=True)
class RadiusSweepResult(Result):
    """File-level identification risk over a grid of radii, and the maximising radius.

    Attributes
    ----------
    plan : MatchPlan
    grid : RadiusGrid
    statistics : tuple of SetStatistics
        One per radius combination, in grid order.
    criterion : {"mean", "median"}
        How the file-level risks of the m sets are combined to choose the maximising radius.
    """

    plan: MatchPlan
    grid: RadiusGrid
    statistics: tuple[SetStatistics, ...]
    criterion: str = "mean"
    #: a bootstrap replicate keeps the observed maximising combination (its rows stay comparable)
    fixed_best: int | None = None

    @property
    def labels(self) -> list[str]:
        return self.grid.labels

    @property
    def n(self) -> int:
        return self.statistics[0].n

    @property
    def m(self) -> int:
        return self.statistics[0].m

    def measure(self, name: str) -> np.ndarray:
        """Values of one measure, shape (n_combinations, m)."""
        return np.stack([s.measures()[name] for s in self.statistics])

    @property
    def file_risk(self) -> np.ndarray:
        return self.measure("file_risk")

    @property
    def criterion_values(self) -> np.ndarray:
        """Mean (or median) file-level risk over the sets, per radius combination."""
        return np.array([CRITERIA[self.criterion](row) for row in self.file_risk])

    @cached_property
    def best(self) -> int:
        """Index of the maximising combination; ties go to the first (smallest radii).  Kept
        once found: every bootstrap replicate (:meth:`resampled`) asks for it."""
        return self.fixed_best if self.fixed_best is not None else int(np.argmax(self.criterion_values))

    def resampled(self, rng: np.random.Generator, replicates: int) -> RadiusSweepResult:
        """Bootstrap replicates as sets 1..replicates (target records drawn with replacement for
        every combination), at the observed maximising combination."""
        statistics = tuple(s.resampled(rng, replicates) for s in self.statistics)
        return replace(self, statistics=statistics, fixed_best=self.best)

    @property
    def r_star(self) -> dict[str, float]:
        """The maximising radius (``{"r": value}`` for a shared grid, else per variable)."""
        return self.grid.radius_of(self.best)

    @property
    def r_star_setting(self) -> str:
        return self.grid.label(self.best)

    @property
    def r_star_at_boundary(self) -> bool:
        """The maximum sits at an end of the grid: the true maximiser may lie outside it."""
        return self.grid.at_boundary(self.best)

    @property
    def at_max(self) -> SetStatistics:
        return self.statistics[self.best]

    @property
    def r_star_variables(self) -> tuple[str, ...]:
        """Variables whose radius at r* is reported: the synthesised continuous ones and any swept
        known one (in the column order of the original)."""
        plan = self.plan
        return tuple(
            v
            for v, known in zip(plan.continuous, plan.continuous_known, strict=True)
            if not known or v in self.grid.variables
        )

    def rows(self) -> list[Row]:
        """Per radius combination the per-set statistics (``radius`` = the full combination), then
        the decision: ``r_star`` per variable, ``r_star_at_boundary`` (0/1) and the per-set
        ``file_risk_at_max`` at r*."""
        rows = []
        for combo, stats in zip(self.grid.combos, self.statistics, strict=True):
            rows.extend(stats.rows({"radius": dict(combo)}))
        best = self.grid.combos[self.best]
        rows.extend(Row("mean", "r_star", best[v], {"variable": v}) for v in self.r_star_variables)
        rows.append(Row("mean", "r_star_at_boundary", float(self.r_star_at_boundary), {}))
        rows.extend(self.at_max.at_max_rows(best))
        return rows

    def to_dict(self) -> dict[str, Any]:
        return {
            "measure": "identification_risk_sweep",
            **_plan_dict(self.plan),
            "n": self.n,
            "m": self.m,
            "grid": {
                "variables": list(self.grid.variables),
                "shared": self.grid.shared,
                "values": [[float(v) for v in vals] for vals in self.grid.values],
            },
            "criterion": self.criterion,
            "r_star": self.r_star,
            "r_star_setting": self.r_star_setting,
            "r_star_at_boundary": self.r_star_at_boundary,
            "by_setting": {
                label: {"radius": {v: format_radius(r) for v, r in combo.items()}, **stats.to_dict()}
                for label, combo, stats in zip(self.labels, self.grid.combos, self.statistics, strict=True)
            },
        }


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
    excluded_share : dict
        Under ``na_action: no_match``, per scenario the share of the original's records left out
        of the matching (a missing or non-finite value in a radius-matched variable); else empty.
    """

    scenarios: dict[str, ScenarioResult]
    sets_per_repetition: int | None = None
    excluded_share: dict[str, float] = field(default_factory=dict)

    def resampled(self, rng: np.random.Generator, replicates: int) -> IdentificationRiskTaskResult:
        """Bootstrap replicates over target records as sets 1..replicates (:meth:`Result.resampled`):
        every scenario's statistics from records drawn with replacement, the synthetic set held
        fixed (no repetitions: the replicates are not repetitions of m sets)."""
        scenarios = {name: res.resampled(rng, replicates) for name, res in self.scenarios.items()}
        return replace(self, scenarios=scenarios, sets_per_repetition=None)

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
        ``repetition_file_risk`` (``{"scenario", "repetition"}``, repetitions from 1); under
        ``na_action: no_match`` ``excluded_share`` (synthetic "original", ``{"scenario"}``).
        """
        rows: list[Row] = []
        for name, res in self.scenarios.items():
            scenario_rows = res.rows()
            # one params object per setting, as the scenario's rows share theirs (the rows of many
            # sets, e.g. bootstrap replicates, then cost one canonical text per setting)
            params = {id(r.params): {"scenario": name, **r.params} for r in scenario_rows}
            rows.extend(Row(r.synthetic, r.measure, r.value, params[id(r.params)]) for r in scenario_rows)
            if name in self.excluded_share:
                rows.append(Row("original", "excluded_share", self.excluded_share[name], {"scenario": name}))
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
            if name in self.excluded_share:
                entry["excluded_share"] = self.excluded_share[name]
            out["scenarios"][name] = entry
        out["sets_per_repetition"] = self.sets_per_repetition
        return out
