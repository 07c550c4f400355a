"""Identification-risk figures of the report (Hornby & Hu Figs. 6, 7, 8-9 and 10), from tidy rows.

The utility axis of the trade-off plots is synthpop's S_pMSE from a ``utility_gen`` measure of
the same run on the same dataset, source and repetition (lower = more useful).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from pipeline.report.html import figure_html
from pipeline.results import per_set

RISK = "file_risk"


def _split_setting(rows: pd.DataFrame) -> pd.DataFrame:
    parts = rows["setting"].str.split(";")
    scenario = parts.map(lambda p: next((x.split("=", 1)[1] for x in p if x.startswith("scenario=")), ""))
    radius = parts.map(lambda p: ";".join(x for x in p if x.startswith("r")) or "exact")
    return rows.assign(scenario=scenario, radius=radius)


def risk_points(results: pd.DataFrame) -> pd.DataFrame:
    """Per dataset/source/repetition/scenario and synthetic set: file risk at the maximising radius."""
    rows = _split_setting(per_set(results[(results["family"] == "identification_risk") & (results["measure"] == RISK)]))
    keys = ["dataset", "source", "repetition", "measure_name", "scenario"]
    means = rows.groupby([*keys, "radius"], sort=False)["value"].mean().reset_index()
    best = means.loc[means.groupby(keys, sort=False)["value"].idxmax(), [*keys, "radius"]]
    return rows.merge(best, on=[*keys, "radius"])


def utility_points(results: pd.DataFrame) -> pd.DataFrame:
    """Per dataset/source/repetition and synthetic set: S_pMSE of the run's utility_gen measures."""
    util = per_set(
        results[(results["family"] == "utility") & (results["measure"] == "S_pMSE") & (results["setting"] == "")]
    )
    util = util.groupby(["dataset", "source", "repetition", "synthetic"], sort=False)["value"].first()
    return util.rename("utility").reset_index()


def identification_risk_figures(results: pd.DataFrame, outcome: Any) -> list[str]:
    from pipeline.risk.idrisk.plots import plot_2d_boxplot, plot_utility_risk

    out: list[str] = []
    rows = _split_setting(per_set(results[results["measure"] == RISK]))
    for (dataset, source, _rep, name), sub in rows.groupby(
        ["dataset", "source", "repetition", "measure_name"], sort=False
    ):
        for scenario, sc in sub.groupby("scenario", sort=False):
            radii = list(dict.fromkeys(sc["radius"]))
            if len(radii) < 2:
                continue
            out.append(_risk_by_radius(sc, radii, f"{name}: {dataset} / {source}, scenario {scenario}"))
    best = risk_points(outcome.results)
    if not best.empty:
        out.append(_risk_at_max(best))
        util = utility_points(outcome.results)
        joined = best.merge(util, on=["dataset", "source", "repetition", "synthetic"])
        if not joined.empty:
            pts = joined.assign(scenario=joined["source"] + ": " + joined["scenario"], risk=joined["value"])
            fig = plot_utility_risk(pts[["scenario", "utility", "risk"]], utility_label="S_pMSE (lower = more useful)")
            out.append(
                figure_html(
                    fig,
                    "Utility–risk trade-off: one point per synthetic set at the maximising "
                    "radius; rectangles span the quartiles of both axes (Hornby & Hu Figs. 8–9)",
                )
            )
            box = pts.assign(source=joined["source"])[["source", "utility", "risk"]]
            fig = plot_2d_boxplot(box, group="source", utility_label="S_pMSE (lower = more useful)")
            out.append(
                figure_html(
                    fig,
                    "2D boxplot per synthetic source: interquartile rectangles and min–max "
                    "whiskers of utility and risk (Hornby & Hu Fig. 10)",
                )
            )
        else:
            out.append("<p>Utility–risk plots need a utility_gen measure on the same data and sources.</p>")
    return out


def _risk_by_radius(sc: pd.DataFrame, radii: list[str], title: str) -> str:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(max(6, 0.9 * len(radii)), 3.6), layout="constrained")
    ax = fig.subplots()
    data = [sc.loc[sc["radius"] == r, "value"].to_numpy() for r in radii]
    ax.boxplot(data, tick_labels=radii)
    means = [d.mean() for d in data]
    best = max(range(len(means)), key=means.__getitem__)
    ax.get_xticklabels()[best].set_fontweight("bold")
    ax.scatter([best + 1], [means[best]], marker="*", s=120, color="C3", zorder=3, label="maximising radius")
    ax.set_ylabel("file-level identification risk")
    ax.set_xlabel("radius")
    ax.tick_params(axis="x", rotation=30)
    ax.legend(loc="best", fontsize=8)
    ax.set_title(title, fontsize=10)
    return figure_html(fig, f"{title}: risk across synthetic sets for each radius (Hornby & Hu Fig. 6)")


def _risk_at_max(best: pd.DataFrame) -> str:
    from matplotlib.figure import Figure

    labels = best["dataset"] + "/" + best["source"] + ": " + best["scenario"] + " (" + best["radius"] + ")"
    groups = list(dict.fromkeys(labels))
    fig = Figure(figsize=(max(6, 1.4 * len(groups)), 3.8), layout="constrained")
    ax = fig.subplots()
    ax.boxplot([best.loc[labels == g, "value"].to_numpy() for g in groups], tick_labels=groups)
    ax.tick_params(axis="x", rotation=20)
    ax.set_ylabel("file-level identification risk")
    ax.set_title("Risk at each scenario's maximising radius", fontsize=10)
    return figure_html(fig, "Identification risk per scenario at its maximising radius (Hornby & Hu Fig. 7)")
