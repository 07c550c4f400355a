"""Figures of the identification-risk study (Hornby & Hu 2021, Figs. 6-10).

Every function returns a matplotlib :class:`~matplotlib.figure.Figure` built without pyplot
(no global state; it renders with the Agg canvas, e.g. ``fig.savefig(path)``) and shows no
record values: only file-level risks and utilities.

The report's figures are fed by tidy rows (:func:`r_star`, :func:`risk_by_radius`,
:func:`risk_points`, :func:`utility_points`, :func:`boxplot_points`): the report never chooses a
radius — Fig. 6 marks the measure's ``r_star`` rows (and says when ``r_star_at_boundary``),
Figs. 7-10 plot its ``file_risk_at_max`` rows.  The utility axis of the trade-off plots is
synthpop's S_pMSE from a ``utility_gen`` measure of the same run on the same dataset, source
and repetition (lower = more useful).
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from pipeline.errors import ParameterError
from pipeline.results import per_set
from pipeline.risk.idrisk.params import IdentificationRiskParams
from pipeline.risk.idrisk.result import IdentificationRiskResult, IdentificationRiskTaskResult, RadiusSweepResult
from pipeline.row_params import UNIT, param_columns

Sweeps = IdentificationRiskTaskResult | RadiusSweepResult | Mapping[str, RadiusSweepResult | IdentificationRiskResult]


def _scenarios(result: Sweeps) -> dict[str, RadiusSweepResult | IdentificationRiskResult]:
    if isinstance(result, IdentificationRiskTaskResult):
        return dict(result.scenarios)
    if isinstance(result, (RadiusSweepResult, IdentificationRiskResult)):
        return {"": result}
    return dict(result)


def radius_text(radius: Mapping[str, float] | None) -> str:
    """A radius for people (``Income=0.1``; ``exact`` for exact matching)."""
    return ", ".join(f"{v}={r:g}" for v, r in radius.items()) if radius else "exact"


#: the y axis of the risk plots, with its unit
RISK_LABEL = "file-level identification risk\n(share of records matched correctly)"
#: tick labels and notes are wrapped to lines of at most this many characters (at ", " and
#: spaces), so that long scenario names or many fixed radii never squeeze the axes
WRAP = 18


def radius_label(percentage: bool | None, variable: str = "") -> str:
    """The radius axis with its unit: a share of each record's value (``percentage``) or the
    variables' own units; ``None``: not known (a result's frame without the setting). With
    ``variable``, the axis of that one variable's radius."""
    name = f"radius of {variable}" if variable else "radius"
    if percentage is None:
        return name
    if percentage:
        return f"{name} (share of each value: r × x)"
    return f"{name} (in its own units)" if variable else f"{name} (in each variable's own units)"


def _wrapped(text: str, width: int = WRAP) -> str:
    """``text`` on lines of at most ``width`` characters, broken at ", " and spaces only."""
    return "\n".join(textwrap.wrap(str(text), width, break_long_words=False, break_on_hyphens=False)) or str(text)


#: inches of a tick-label character at 10 pt (DejaVu Sans averages about 0.6 em)
CHAR_WIDTH = 0.085
#: Fig. 6 grows to at most this width (inches; 1,080 px at the report's 90 dpi, inside its page);
#: wider tick labels are turned 45° instead
MAX_WIDTH = 12.0
#: inches beside a panel's boxes: the y axis's two-line label and tick values
Y_AXIS_WIDTH = 1.3
#: Fig. 6's height (inches) with level tick labels
HEIGHT = 4.2


def _one_variable(labels: list[str]) -> tuple[str, list[str]]:
    """When every radius label names the same one variable (``Income=0.01``, ``Income=0.025``):
    that variable and the bare radii (the axis names the variable once); else ``""`` and the labels."""
    pairs = [label.split("=") if label.count("=") == 1 and ", " not in label else None for label in labels]
    names = {p[0] for p in pairs if p is not None}
    if any(p is None for p in pairs) or len(names) != 1:
        return "", labels
    return names.pop(), [p[1] for p in pairs]


def _tick_layout(labels: list[list[str]]) -> tuple[float, float, bool]:
    """Fig. 6's panel width and height (inches) from its tick labels (one list of wrapped labels
    per panel) and whether they are turned. Level, each box gets the width of its longest label
    line; when the panels would be wider than :data:`MAX_WIDTH`, the labels are turned 45° and each
    box gets the height of its label's lines (neighbours then cannot overlap, whatever their
    length), the panel the room the longest label takes below and left of its axis."""
    chars = max((len(line) for panel in labels for label in panel for line in label.split("\n")), default=1)
    lines = max((label.count("\n") + 1 for panel in labels for label in panel), default=1)
    boxes = max((len(panel) for panel in labels), default=1)
    level = max(5.0, max(0.45, CHAR_WIDTH * chars + 0.15) * boxes + Y_AXIS_WIDTH)
    if level * len(labels) <= MAX_WIDTH:
        return level, HEIGHT, False
    reach = CHAR_WIDTH * chars * np.sqrt(0.5)  # a turned label's reach down and to the left
    return max(5.0, (0.25 * lines + 0.1) * boxes + Y_AXIS_WIDTH + reach), HEIGHT + reach, True


def risk_by_radius_frame(result: Sweeps) -> pd.DataFrame:
    """The per-set file-level risks of every radius of a result's sweeps, as
    :func:`plot_risk_by_radius` draws them (``r_star``: the sweep's maximising radius)."""
    frames = [
        pd.DataFrame(
            {
                "scenario": name,
                "radius": label,
                "risk": risks,
                "r_star": k == sweep.best,
                "at_boundary": sweep.r_star_at_boundary,
                "percentage": sweep.plan.percentage,
            }
        )
        for name, sweep in _scenarios(result).items()
        if isinstance(sweep, RadiusSweepResult)
        for k, (label, risks) in enumerate(zip(sweep.labels, sweep.file_risk, strict=True))
    ]
    if not frames:
        raise ParameterError("plot_risk_by_radius needs at least one scenario with a radius grid")
    return pd.concat(frames, ignore_index=True)


def risk_at_max_frame(result: Sweeps) -> pd.DataFrame:
    """The per-set file-level risks of every scenario at its maximising (or only) radius, as
    :func:`plot_risk_at_max_radius` draws them."""
    frames = []
    for name, res in _scenarios(result).items():
        if isinstance(res, RadiusSweepResult):
            radius, risks = radius_text(res.r_star), res.at_max.file_risk
        else:
            radius, risks = radius_text(res.radius), res.file_risk
        frames.append(pd.DataFrame({"scenario": name, "radius": radius, "risk": risks}))
    return pd.concat(frames, ignore_index=True)


def plot_risk_by_radius(risk: pd.DataFrame | Sweeps, title: str = "") -> Figure:
    """Fig. 6: distribution of the file-level risk across synthetic sets for every radius.

    One panel per scenario, one box per radius; the measure's maximising radius r* is shaded
    (and the panel says when r* lies at an end of the grid).  Tick labels name only the radii
    that vary (the bare radius when one variable varies: the axis names it); the radii that stay
    fixed are written under the axis, whose label gives the radius's unit, so that a scenario
    with fixed radii keeps a readable plot.  The panels are as wide as their tick labels need
    (:func:`_tick_layout`), up to :data:`MAX_WIDTH`; beyond it the labels are turned 45°, so
    that long variable names never overlap.

    Parameters
    ----------
    risk : DataFrame or result
        One row per radius and synthetic set with columns ``scenario``, ``radius`` (label, in grid
        order), ``risk``, ``r_star`` (bool) and optionally ``at_boundary`` (bool), ``fixed`` (the
        radii that do not vary, as text) and ``percentage`` (bool: the radius's unit), as made
        from the measure's rows by the report or by :func:`risk_by_radius_frame` from a result.
    title : str
        Title over the panels.
    """
    frame = risk if isinstance(risk, pd.DataFrame) else risk_by_radius_frame(risk)
    scenarios = list(dict.fromkeys(frame["scenario"]))
    panels = [frame[frame["scenario"] == name] for name in scenarios]
    radii = [list(dict.fromkeys(sc["radius"])) for sc in panels]
    ticks = [_one_variable(r) for r in radii]
    width, height, turned = _tick_layout([[_wrapped(t) for t in shown] for _, shown in ticks])
    fig = Figure(figsize=(width * len(scenarios), height), layout="constrained")
    axes = fig.subplots(1, len(scenarios), squeeze=False)
    for ax, name, sc, radii_of, (variable, shown) in zip(axes[0], scenarios, panels, radii, ticks, strict=True):
        ax.boxplot(
            [sc.loc[sc["radius"] == r, "risk"].to_numpy() for r in radii_of], tick_labels=[_wrapped(t) for t in shown]
        )
        best = [k for k, r in enumerate(radii_of) if sc.loc[sc["radius"] == r, "r_star"].any()]
        boundary = "at_boundary" in sc.columns and bool(sc["at_boundary"].any())
        for k in best:
            ax.axvspan(
                k + 0.5, k + 1.5, color="tab:red", alpha=0.15, label="r*" + (" (grid boundary)" if boundary else "")
            )
            ax.get_xticklabels()[k].set_fontweight("bold")
        ax.set_title(_wrapped(str(name), 60) or "identification risk", fontsize=10)
        percentage = sc["percentage"].iloc[0] if "percentage" in sc.columns else None
        fixed = sc["fixed"].iloc[0] if "fixed" in sc.columns else ""
        ax.set_xlabel(radius_label(percentage, variable) + (f"\n{_wrapped('fixed: ' + fixed, 60)}" if fixed else ""))
        ax.set_ylabel(RISK_LABEL)
        if turned:
            ax.tick_params(axis="x", labelrotation=45)
            for label in ax.get_xticklabels():
                label.set_horizontalalignment("right")
                label.set_rotation_mode("anchor")
        if best:
            ax.legend(loc="best", fontsize=8)
    if title:
        fig.suptitle(_wrapped(title, 100), fontsize=10)
    return fig


def plot_risk_at_max_radius(at_max: pd.DataFrame | Sweeps) -> Figure:
    """Fig. 7: file-level risk across synthetic sets per scenario, each at its maximising radius.

    ``at_max``: one row per scenario and synthetic set with columns ``scenario``, ``radius``
    (label of r*) and ``risk``, as made from the measure's ``file_risk_at_max`` rows by the report
    or by :func:`risk_at_max_frame` from a result.  Each box is labelled with its scenario and
    radius wrapped on short lines (fixed radii of several variables stay readable); the figure
    grows with the number of boxes and label lines instead of squeezing its axes.
    """
    frame = at_max if isinstance(at_max, pd.DataFrame) else risk_at_max_frame(at_max)
    groups = list(dict.fromkeys(zip(frame["scenario"], frame["radius"], strict=True)))
    labels = [f"{_wrapped(s)}\nr: {_wrapped(r)}" if s else _wrapped(r) for s, r in groups]
    lines = max(label.count("\n") + 1 for label in labels)
    chars = max(len(line) for label in labels for line in label.split("\n"))
    per_box = max(1.6, 0.085 * chars)  # inches: a label line of 10-pt text must fit under its box
    fig = Figure(figsize=(max(5.0, per_box * len(groups) + 1.0), 3.6 + 0.17 * lines), layout="constrained")
    ax = fig.subplots()
    data = [frame.loc[(frame["scenario"] == s) & (frame["radius"] == r), "risk"].to_numpy() for s, r in groups]
    ax.boxplot(data, tick_labels=labels)
    ax.set_ylabel(RISK_LABEL)
    ax.set_title("risk at the maximising radius r*", fontsize=10)
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
    fig = Figure(figsize=(6, 4.5), layout="constrained")
    ax = fig.subplots()
    for k, (name, g) in enumerate(df.groupby("scenario", sort=False)):
        colour = f"C{k % 10}"
        ax.scatter(g["utility"], g["risk"], s=18, color=colour, label=str(name), alpha=0.8)
        ux1, _, ux3 = _quartiles(g["utility"])
        ry1, _, ry3 = _quartiles(g["risk"])
        ax.add_patch(Rectangle((ux1, ry1), ux3 - ux1, ry3 - ry1, fill=False, edgecolor=colour, linewidth=1.5))
    ax.set_xlabel(utility_label)
    ax.set_ylabel(RISK_LABEL)
    ax.legend(loc="best")
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
    fig = Figure(figsize=(6, 4.5), layout="constrained")
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
    ax.set_ylabel("average " + RISK_LABEL)
    ax.legend(loc="best")
    return fig


# ---- the figures' data from tidy rows (the report never chooses a radius: it reads the
# measure's r_star and file_risk_at_max rows) -------------------------------------------------
FAMILY = "identification_risk"


IDRISK_RUN = ["dataset", "source", "repetition", "measure_name"]


ROW_KEYS = ("scenario", "radius", "variable", "repetition")


SCENARIO = [*IDRISK_RUN, UNIT, "scenario"]


#: the radius's unit when a task does not say (the rows' params leave defaults out)
PERCENTAGE = IdentificationRiskParams.model_fields["percentage"].default


def _rows(results: pd.DataFrame, measure: str) -> pd.DataFrame:
    rows = results[(results["family"] == FAMILY) & (results["measure"] == measure)]
    rows = param_columns(rows, "scenario", "radius", "variable", "percentage", row_keys=ROW_KEYS)
    return rows.assign(percentage=rows["percentage"].where(rows["percentage"].notna(), PERCENTAGE))


def _radius_label(radius: Any) -> str:
    return radius_text(dict(radius) if radius else None)


def r_star(results: pd.DataFrame) -> pd.DataFrame:
    """The measure's maximising radius per scenario, from its ``r_star`` and ``r_star_at_boundary``
    rows: the :data:`SCENARIO` columns, ``r_star`` (variable-radius pairs of the reported
    variables) and ``at_boundary``."""
    rows = _rows(results, "r_star")
    found = [
        {**dict(zip(SCENARIO, key, strict=True)), "r_star": tuple(zip(sub["variable"], sub["value"], strict=True))}
        for key, sub in rows.groupby(SCENARIO, sort=False)
    ]
    best = pd.DataFrame(found, columns=[*SCENARIO, "r_star"])
    boundary = _rows(results, "r_star_at_boundary")
    boundary = boundary.assign(at_boundary=boundary["value"] > 0)[[*SCENARIO, "at_boundary"]]
    return best.merge(boundary, on=SCENARIO, how="left")


def _is_r_star(radius: Any, best: Any) -> bool:
    """Whether a row's radius (the full combination) has r*'s radius for every reported variable."""
    if not isinstance(best, tuple) or radius is None:
        return False
    combo = dict(radius)
    return all(v in combo and combo[v] == r for v, r in best)


def risk_by_radius(results: pd.DataFrame) -> pd.DataFrame:
    """Per-set ``file_risk`` rows of every radius with the :data:`SCENARIO` columns, ``radius``
    (label), ``risk``, ``r_star`` (the radius is the measure's maximising one) and ``at_boundary``."""
    marked = per_set(_rows(results, "file_risk")).merge(r_star(results), on=SCENARIO, how="left")
    marked = marked.merge(_varying_radius(marked), on=[*SCENARIO, "radius"], how="left")
    return marked.assign(
        r_star=[_is_r_star(r, b) for r, b in zip(marked["radius"], marked["r_star"], strict=True)],
        at_boundary=marked["at_boundary"].eq(True),
        radius=marked["label"],
        risk=marked["value"],
    )


def _varying_radius(rows: pd.DataFrame) -> pd.DataFrame:
    """Per scenario and radius (the :data:`SCENARIO` columns and ``radius``): ``label``, the radius
    naming only the variables whose radius varies within the scenario (the whole radius when
    none varies), and ``fixed``, the radii that stay fixed there ("" when none)."""
    found = []
    for key, sub in rows.drop_duplicates([*SCENARIO, "radius"]).groupby(SCENARIO, sort=False):
        combos = {r: dict(r) if r else {} for r in sub["radius"]}
        names = list(dict.fromkeys(v for c in combos.values() for v in c))
        varying = [v for v in names if len({c.get(v) for c in combos.values()}) > 1]
        first = next(iter(combos.values()))
        fixed = radius_text({v: first[v] for v in names if v not in varying and v in first}) if varying else ""
        for r, c in combos.items():
            label = radius_text({v: c[v] for v in varying if v in c}) if varying else _radius_label(r)
            found.append((*key, r, label, fixed))
    return pd.DataFrame(found, columns=[*SCENARIO, "radius", "label", "fixed"])


def risk_points(results: pd.DataFrame) -> pd.DataFrame:
    """Per scenario and synthetic set: the measure's ``file_risk_at_max`` rows, with the
    :data:`SCENARIO` columns, ``radius`` (label of r*), ``synthetic`` and ``risk``."""
    rows = per_set(_rows(results, "file_risk_at_max"))
    return rows.assign(radius=rows["radius"].map(_radius_label), risk=rows["value"])[
        [*SCENARIO, "radius", "synthetic", "risk"]
    ]


def utility_points(results: pd.DataFrame, utility_gen: list[str]) -> pd.DataFrame:
    """Per dataset/source/repetition and synthetic set: S_pMSE of the first of the run's
    ``utility_gen`` entries (``utility_gen``: their measure names) on that data."""
    util = per_set(results[results["measure_name"].isin(utility_gen) & (results["measure"] == "S_pMSE")])
    util = util.groupby(["dataset", "source", "repetition", "synthetic"], sort=False)["value"].first()
    return util.rename("utility").reset_index()


def boxplot_points(joined: pd.DataFrame) -> pd.DataFrame:
    """Fig. 10's points (``source``, ``utility``, ``risk``): for a source with several repetitions
    (e.g. the m-study), one point per repetition, the mean over the sets of that repetition;
    otherwise one point per synthetic set."""
    repeated = joined.groupby("source")["repetition"].transform("nunique") > 1
    means = joined[repeated].groupby(["source", "repetition"], sort=False)[["utility", "risk"]].mean().reset_index()
    return pd.concat(
        [joined.loc[~repeated, ["source", "utility", "risk"]], means[["source", "utility", "risk"]]], ignore_index=True
    )
