"""Plots per measure family, made from the tidy results only (so cached and resumed units
report exactly like fresh ones)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from pipeline.report.html import figure_html, table_html

RUN_GROUP = ["dataset", "source", "repetition", "measure_name"]


def _groups(results: pd.DataFrame) -> Iterator[tuple[tuple[Any, ...], pd.DataFrame]]:
    yield from results.groupby(RUN_GROUP, sort=False)


def _title(key: tuple[Any, ...]) -> str:
    dataset, source, rep, name = key
    return f"{name}: {dataset} / {source}" + (f" (repetition {rep})" if rep else "")


def profile_section(results: pd.DataFrame, outcome: Any) -> list[str]:
    """Key-combination size distribution, original vs synthetic sets."""
    out = []
    dist = results[(results["measure"] == "combinations") & results["setting"].str.contains("size")]
    for key, sub in _groups(dist):
        fig, ax = plt.subplots(figsize=(7, 3.2))
        piv = sub.pivot_table(index="setting", columns="synthetic", values="value", sort=False)
        piv.index = [s.split(";")[-1].removeprefix("size=").removeprefix("size") for s in piv.index]
        piv.plot.bar(ax=ax, rot=0)
        ax.set_xlabel("records per key combination")
        ax.set_ylabel("key combinations")
        ax.set_title(_title(key))
        out.append(figure_html(fig, f"{_title(key)}: key-combination sizes, original vs synthetic sets"))
    return out


def _key_set(setting: str) -> str:
    return next((p for p in setting.split(";") if p.startswith("keys=")), "")


def disclosure_section(results: pd.DataFrame, outcome: Any) -> list[str]:
    """Per key set: repU/DiSCO (mean over sets) per target beside UiO/Dorig, and a summary table."""
    from pipeline.risk.disclosure.plots import plot_disclosure_rows

    out = []
    for key, sub in _groups(results):
        for keys, rows in sub.groupby(sub["setting"].map(_key_set), sort=False):
            title = f"{_title(key)} ({keys.replace('keys=', 'keys: ').replace('+', ', ')})"
            out.append(figure_html(plot_disclosure_rows(rows, title), f"{title}: original vs synthetic"))
            target = rows["setting"].str.extract(r"target=([^;]+)", expand=False)
            per_set = rows[~rows["synthetic"].isin(["original", "mean"])]
            summary = pd.DataFrame(
                {
                    "target": sorted(target.dropna().unique()),
                }
            )
            for measure, src in (
                ("UiO", "original"),
                ("repU", "sets"),
                ("Dorig", "original"),
                ("DiSCO", "sets"),
                ("check_1way", "sets"),
                ("check_2way", "sets"),
            ):
                base = rows if src == "original" else per_set
                vals = base[base["measure"] == measure].assign(target=target).groupby("target")["value"]
                agg = (
                    vals.first() if src == "original" else (vals.max() if measure.startswith("check") else vals.mean())
                )
                summary[measure if src == "original" or measure.startswith("check") else f"{measure} (mean)"] = summary[
                    "target"
                ].map(agg)
            out.append(f"<h3>{title}</h3>" + table_html(summary))
    return out


def identification_risk_section(results: pd.DataFrame, outcome: Any) -> list[str]:
    """Risk by radius (distribution over sets), risk at the maximising radius, and the 2D boxplot."""
    from pipeline.report.idrisk import identification_risk_figures

    return identification_risk_figures(results, outcome)


def utility_section(results: pd.DataFrame, outcome: Any) -> list[str]:
    """S_pMSE per synthetic set for every utility measure, and a heat map for utility_tables."""
    out = []
    for key, sub in _groups(results):
        spmse = sub[(sub["measure"] == "S_pMSE") & ~sub["synthetic"].isin(["mean", "original"])]
        if spmse.empty:
            continue
        settings = list(dict.fromkeys(spmse["setting"]))
        if len(settings) > 12 and spmse["setting"].str.contains("vars=").all():
            out.append(_heatmap(spmse, _title(key)))
            continue
        fig, ax = plt.subplots(figsize=(7, 0.6 + 0.4 * len(settings) + 1.5))
        for i, st in enumerate(settings):
            vals = spmse[spmse["setting"] == st]["value"].to_numpy()
            ax.scatter(vals, np.full(len(vals), i), color="#d95f02", zorder=3)
            ax.plot([vals.mean()] * 2, [i - 0.3, i + 0.3], color="k")
        ax.set_yticks(range(len(settings)), [s or "all variables" for s in settings])
        ax.axvline(1, color="0.5", ls="--", lw=1)
        ax.set_xlabel("S_pMSE (1 = as expected for a correct synthesis model)")
        ax.set_title(_title(key))
        ax.invert_yaxis()
        out.append(figure_html(fig, f"{_title(key)}: S_pMSE of each synthetic set (bar: mean)"))
    return out


def _heatmap(spmse: pd.DataFrame, title: str) -> str:
    pairs = spmse.assign(v=spmse["setting"].str.extract(r"vars=([^;]+)", expand=False))
    mean = pairs.groupby("v")["value"].mean()
    split = [v.split(",") for v in mean.index]
    names = list(dict.fromkeys(x.split(".", 1)[-1] for p in split for x in p))
    mat = np.full((len(names), len(names)), np.nan)
    for p, val in zip(split, mean.to_numpy(), strict=True):
        if len(p) == 2:
            a, b = (names.index(x.split(".", 1)[-1]) for x in p)
            mat[b, a] = val
    fig, ax = plt.subplots(figsize=(1.2 + 0.55 * len(names), 1 + 0.5 * len(names)))
    im = ax.imshow(mat, cmap="Reds")
    ax.set_xticks(range(len(names)), names, rotation=60, ha="right")
    ax.set_yticks(range(len(names)), names)
    fig.colorbar(im, ax=ax, label="S_pMSE (mean over sets)")
    ax.set_title(title)
    return figure_html(fig, f"{title}: two-way table utility heat map")


def synthesis_section(results: pd.DataFrame, outcome: Any) -> list[str]:
    """IPF fit diagnostics and how far the released margins' totals moved."""
    out = []
    for key, sub in _groups(results):
        orig = sub[sub["synthetic"] == "original"]
        diag = orig[~orig["setting"].str.contains("margin=")][["setting", "measure", "value"]]
        out.append(f"<h3>{_title(key)}: fit</h3>" + table_html(diag.reset_index(drop=True)))
        per_margin = orig[orig["setting"].str.contains("margin=")]
        if not per_margin.empty:
            wide = per_margin.pivot_table(index="setting", columns="measure", values="value", sort=False)
            out.append(f"<h3>{_title(key)}: margins</h3>" + table_html(wide.reset_index()))
    return out


SECTIONS = {
    "profile": profile_section,
    "disclosure": disclosure_section,
    "identification_risk": identification_risk_section,
    "utility": utility_section,
    "synthesis": synthesis_section,
}
