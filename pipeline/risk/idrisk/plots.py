"""Figures of the identification-risk study (Hornby & Hu 2021, Figs. 6-10).

Every function returns a matplotlib :class:`~matplotlib.figure.Figure` built without pyplot
(no global state; it renders with the Agg canvas, e.g. ``fig.savefig(path)``) and shows no
record values: only file-level risks and utilities.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from pipeline.errors import ParameterError
from pipeline.risk.idrisk.result import IdentificationRiskResult, RadiusSweepResult
from pipeline.risk.idrisk.task import IdentificationRiskTaskResult

Sweeps = IdentificationRiskTaskResult | RadiusSweepResult | Mapping[str, RadiusSweepResult | IdentificationRiskResult]


def _scenarios(result: Sweeps) -> dict[str, RadiusSweepResult | IdentificationRiskResult]:
    if isinstance(result, IdentificationRiskTaskResult):
        return dict(result.scenarios)
    if isinstance(result, (RadiusSweepResult, IdentificationRiskResult)):
        return {"": result}
    return dict(result)


def plot_risk_by_radius(result: Sweeps) -> Figure:
    """Fig. 6: distribution of the file-level risk across synthetic sets for every radius.

    One panel per scenario with a radius sweep; one box per radius setting; the maximising
    setting is highlighted.
    """
    sweeps = {k: v for k, v in _scenarios(result).items() if isinstance(v, RadiusSweepResult)}
    if not sweeps:
        raise ParameterError("plot_risk_by_radius needs at least one scenario with a radius grid")
    fig = Figure(figsize=(4.5 * len(sweeps), 4))
    axes = fig.subplots(1, len(sweeps), squeeze=False)
    for ax, (name, sw) in zip(axes[0], sweeps.items(), strict=True):
        risk = sw.file_risk
        ax.boxplot([row for row in risk], tick_labels=sw.labels)
        best = sw.best
        ax.plot(best + 1, sw.criterion_values[best], marker="*", markersize=12, color="tab:red", label="r*")
        ax.set_title(name or "identification risk")
        ax.set_xlabel("radius")
        ax.set_ylabel("file-level identification risk")
        ax.tick_params(axis="x", labelrotation=45)
        ax.legend(loc="best")
    fig.tight_layout()
    return fig


def plot_risk_at_max_radius(result: Sweeps) -> Figure:
    """Fig. 7: file-level risk across synthetic sets per scenario, each at its maximising radius."""
    scen = _scenarios(result)
    data, labels = [], []
    for name, res in scen.items():
        if isinstance(res, RadiusSweepResult):
            data.append(res.at_max.file_risk)
            labels.append(f"{name}\n{res.r_star_setting}")
        else:
            data.append(res.file_risk)
            labels.append(name)
    fig = Figure(figsize=(max(4.0, 1.6 * len(data)), 4))
    ax = fig.subplots()
    ax.boxplot(data, tick_labels=labels)
    ax.set_ylabel("file-level identification risk")
    ax.set_title("risk at the maximising radius")
    fig.tight_layout()
    return fig


def utility_risk_points(result: IdentificationRiskTaskResult, utility: Mapping[str, Sequence[float]]) -> pd.DataFrame:
    """Pair each synthetic set's utility (e.g. pMSE, computed elsewhere) with its file-level risk
    at the scenario's maximising radius: columns ``scenario``, ``utility``, ``risk``."""
    rows = []
    for name, values in utility.items():
        risk = result.at_max(name).file_risk
        if len(values) != len(risk):
            raise ParameterError(f"scenario {name!r}: {len(values)} utility values for {len(risk)} synthetic sets")
        rows.append(pd.DataFrame({"scenario": name, "utility": np.asarray(values, float), "risk": risk}))
    return pd.concat(rows, ignore_index=True)


def _quartiles(v: np.ndarray) -> tuple[float, float, float]:
    q1, med, q3 = np.quantile(np.asarray(v, dtype=float), [0.25, 0.5, 0.75])
    return float(q1), float(med), float(q3)


def _points(points: pd.DataFrame | Mapping[str, tuple[Sequence[float], Sequence[float]]], group: str) -> pd.DataFrame:
    if isinstance(points, pd.DataFrame):
        missing = [c for c in (group, "utility", "risk") if c not in points.columns]
        if missing:
            raise ParameterError(f"points need the column(s) {missing}")
        return points
    return pd.concat(
        [
            pd.DataFrame({group: k, "utility": np.asarray(u, float), "risk": np.asarray(r, float)})
            for k, (u, r) in points.items()
        ],
        ignore_index=True,
    )


def plot_utility_risk(
    points: pd.DataFrame | Mapping[str, tuple[Sequence[float], Sequence[float]]], utility_label: str = "utility (U_p)"
) -> Figure:
    """Figs. 8-9: utility-risk trade-off, one point per synthetic set and one colour per
    scenario, with a rectangle spanning the 1st-3rd quartiles of both axes per scenario.

    ``points``: a frame with columns ``scenario``, ``utility``, ``risk`` (see
    :func:`utility_risk_points`) or ``{scenario: (utilities, risks)}``.
    """
    df = _points(points, "scenario")
    fig = Figure(figsize=(6, 4.5))
    ax = fig.subplots()
    for k, (name, g) in enumerate(df.groupby("scenario", sort=False)):
        colour = f"C{k % 10}"
        ax.scatter(g["utility"], g["risk"], s=18, color=colour, label=str(name), alpha=0.8)
        ux1, _, ux3 = _quartiles(g["utility"])
        ry1, _, ry3 = _quartiles(g["risk"])
        ax.add_patch(Rectangle((ux1, ry1), ux3 - ux1, ry3 - ry1, fill=False, edgecolor=colour, linewidth=1.5))
    ax.set_xlabel(utility_label)
    ax.set_ylabel("file-level identification risk")
    ax.legend(loc="best")
    fig.tight_layout()
    return fig


def plot_2d_boxplot(
    points: pd.DataFrame | Mapping[str, tuple[Sequence[float], Sequence[float]]],
    group: str = "m",
    utility_label: str = "average utility (U_p)",
) -> Figure:
    """Fig. 10, the "2D boxplot": per group (e.g. the number m of synthetic sets), a rectangle
    over the interquartile ranges of utility (x) and risk (y), and whiskers that start at the
    median lines and end at the minimum and maximum of each axis.

    ``points``: columns ``group``, ``utility``, ``risk`` (one row per repetition, each value
    averaged over its m sets) or ``{group: (utilities, risks)}``.
    """
    df = _points(points, group)
    fig = Figure(figsize=(6, 4.5))
    ax = fig.subplots()
    for k, (name, g) in enumerate(df.groupby(group, sort=False)):
        colour = f"C{k % 10}"
        u, r = g["utility"].to_numpy(float), g["risk"].to_numpy(float)
        u1, um, u3 = _quartiles(u)
        r1, rm, r3 = _quartiles(r)
        ax.add_patch(
            Rectangle((u1, r1), u3 - u1, r3 - r1, fill=False, edgecolor=colour, linewidth=1.5, label=f"{group}={name}")
        )
        ax.plot([u.min(), u1], [rm, rm], color=colour)  # horizontal whiskers at the median risk
        ax.plot([u3, u.max()], [rm, rm], color=colour)
        ax.plot([um, um], [r.min(), r1], color=colour)  # vertical whiskers at the median utility
        ax.plot([um, um], [r3, r.max()], color=colour)
        ax.plot([u1, u3], [rm, rm], color=colour, linestyle=":")
        ax.plot([um, um], [r1, r3], color=colour, linestyle=":")
    ax.autoscale_view()
    ax.set_xlabel(utility_label)
    ax.set_ylabel("average file-level identification risk")
    ax.legend(loc="best")
    fig.tight_layout()
    return fig
