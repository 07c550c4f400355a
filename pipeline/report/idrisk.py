"""Identification-risk figures of the report (Hornby & Hu Figs. 6, 7, 8-9 and 10), from the rows
the measure emits.

The report never chooses a radius: Fig. 6 marks the measure's ``r_star`` rows (and says when
``r_star_at_boundary``), Figs. 7-10 plot its ``file_risk_at_max`` rows.  The utility axis of the
trade-off plots is synthpop's S_pMSE from a ``utility_gen`` measure of the same run on the same
dataset, source and repetition (lower = more useful).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from pipeline.report.html import figure_html
from pipeline.results import per_set
from pipeline.risk.idrisk.plots import (
    plot_2d_boxplot,
    plot_risk_at_max_radius,
    plot_risk_by_radius,
    plot_utility_risk,
    radius_text,
)
from pipeline.row_params import UNIT, param_columns, unit_groups

FAMILY = "identification_risk"
RUN = ["dataset", "source", "repetition", "measure_name"]
#: row-level params of the family's rows; the unit's own default ``radius`` is shadowed by the
#: rows' radius, so it is left out of the unit of every row alike
ROW_KEYS = ("scenario", "radius", "variable", "repetition")
SCENARIO = [*RUN, UNIT, "scenario"]


def _rows(results: pd.DataFrame, measure: str) -> pd.DataFrame:
    rows = results[(results["family"] == FAMILY) & (results["measure"] == measure)]
    return param_columns(rows, "scenario", "radius", "variable", row_keys=ROW_KEYS)


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
    return marked.assign(
        r_star=[_is_r_star(r, b) for r, b in zip(marked["radius"], marked["r_star"], strict=True)],
        at_boundary=marked["at_boundary"].eq(True),
        radius=marked["radius"].map(_radius_label),
        risk=marked["value"],
    )


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


def _title(dataset: str, source: str, rep: int, name: str, unit: str) -> str:
    return f"{name}: {dataset} / {source}" + (f" (repetition {rep})" if rep else "") + (f" [{unit}]" if unit else "")


def identification_risk_figures(results: pd.DataFrame, utility_gen: list[str]) -> list[str]:
    """Figs. 6-10 of the run's identification-risk rows (``utility_gen``: the measure names of the
    run's utility_gen entries, for the utility axis of Figs. 8-10)."""
    out: list[str] = []
    # one Fig. 6 per source and measure entry: a repeated study (the m-study: 3 sources x 100+
    # repetitions) would otherwise draw hundreds of near-identical sweeps and spend most of the
    # report's time on them; the other repetitions' sweeps and r* stay in the results table
    drawn: set[tuple[Any, ...]] = set()
    not_drawn = 0
    for (dataset, source, rep, name), unit, sub in unit_groups(risk_by_radius(results), RUN):
        swept = sub.groupby("scenario", sort=False)["radius"].nunique()
        sub = sub[sub["scenario"].isin(swept.index[swept > 1])]
        if sub.empty:
            continue
        if (dataset, source, name, unit) in drawn:
            not_drawn += 1
            continue
        drawn.add((dataset, source, name, unit))
        title = _title(dataset, source, rep, name, unit)
        out.append(
            figure_html(
                plot_risk_by_radius(sub, title=title),
                f"{title}: risk across synthetic sets for each radius, r* marked (Hornby & Hu Fig. 6)",
            )
        )
    if not_drawn:
        out.append(
            f"<p>Fig. 6 is drawn for the first repetition of each source; the radius sweeps of {not_drawn} "
            "further repetitions (and each one's r*) are rows of the results table (measures file_risk, r_star).</p>"
        )
    best = risk_points(results)
    if best.empty:
        return out
    labelled = pd.concat(
        [
            part.assign(
                scenario=[f"{dataset}/{source}: {sc}" + (f" [{unit}]" if unit else "") for sc in part["scenario"]]
            )
            for (dataset, source, _), unit, part in unit_groups(best, ["dataset", "source", "measure_name"])
        ]
    )
    out.append(
        figure_html(
            plot_risk_at_max_radius(labelled),
            "Identification risk per scenario at its maximising radius (Hornby & Hu Fig. 7)",
        )
    )
    joined = labelled.merge(utility_points(results, utility_gen), on=["dataset", "source", "repetition", "synthetic"])
    if joined.empty:
        out.append("<p>Utility–risk plots need a utility_gen measure on the same data and sources.</p>")
        return out
    label = "S_pMSE (lower = more useful)"
    out.append(
        figure_html(
            plot_utility_risk(joined[["scenario", "utility", "risk"]], utility_label=label),
            "Utility–risk trade-off: one point per synthetic set at the maximising "
            "radius; rectangles span the quartiles of both axes (Hornby & Hu Figs. 8–9)",
        )
    )
    out.append(
        figure_html(
            plot_2d_boxplot(boxplot_points(joined), group="source", utility_label=label),
            "2D boxplot per synthetic source: interquartile rectangles and min–max "
            "whiskers of utility and risk; a repeated source has one point per repetition, the "
            "mean over its m sets (Hornby & Hu Fig. 10)",
        )
    )
    return out


def boxplot_points(joined: pd.DataFrame) -> pd.DataFrame:
    """Fig. 10's points (``source``, ``utility``, ``risk``): for a source with several repetitions
    (e.g. the m-study), one point per repetition, the mean over the sets of that repetition;
    otherwise one point per synthetic set."""
    repeated = joined.groupby("source")["repetition"].transform("nunique") > 1
    means = joined[repeated].groupby(["source", "repetition"], sort=False)[["utility", "risk"]].mean().reset_index()
    return pd.concat(
        [joined.loc[~repeated, ["source", "utility", "risk"]], means[["source", "utility", "risk"]]], ignore_index=True
    )
