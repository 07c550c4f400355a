"""Plots per measure family, made from the tidy results only (so cached and resumed units
report exactly like fresh ones)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from pipeline.report.html import figure_html, table_html
from pipeline.results import per_set

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
    """Per dataset, measure and key set: the repU/DiSCO vs UiO/Dorig plot of every source (first
    repetition) and one table of every source, repetition and target."""
    from pipeline.risk.disclosure.plots import plot_disclosure_rows

    out = []
    rows = results.assign(
        keys=results["setting"].map(_key_set), target=results["setting"].str.extract(r"target=([^;]+)", expand=False)
    )
    for (dataset, name, keys), sub in rows.groupby(["dataset", "measure_name", "keys"], sort=False):
        heading = f"{name}: {dataset} ({keys.replace('keys=', 'keys: ').replace('+', ', ')})"
        for source, first in sub[sub["repetition"] == 0].groupby("source", sort=False):
            title = f"{name}: {dataset} / {source} ({keys.replace('keys=', 'keys: ').replace('+', ', ')})"
            out.append(figure_html(plot_disclosure_rows(first, title), f"{title}: original vs synthetic"))
        table = []
        for (source, rep, target), cell in sub.groupby(["source", "repetition", "target"], sort=False):
            orig = cell[cell["synthetic"] == "original"].set_index("measure")["value"]
            sets = per_set(cell).groupby("measure")["value"]
            mean, high = sets.mean(), sets.max()
            table.append(
                {
                    "source": source,
                    "repetition": rep,
                    "target": target,
                    "UiO": orig.get("UiO"),
                    "repU (mean)": mean.get("repU"),
                    "Dorig": orig.get("Dorig"),
                    "DiSCO (mean)": mean.get("DiSCO"),
                    "check_1way": high.get("check_1way"),
                    "check_2way": high.get("check_2way"),
                }
            )
        out.append(f"<h3>{heading}</h3>" + table_html(pd.DataFrame(table)))
    return out


def identification_risk_section(results: pd.DataFrame, outcome: Any) -> list[str]:
    """Risk by radius (distribution over sets), risk at the maximising radius, and the 2D boxplot."""
    from pipeline.report.idrisk import identification_risk_figures

    return identification_risk_figures(results, outcome)


def utility_section(results: pd.DataFrame, outcome: Any) -> list[str]:
    """Per dataset and utility measure: S_pMSE of every synthetic set, one row per source,
    repetition and setting (sources side by side); a heat map per source for utility_tables."""
    out = []
    spmse = per_set(results[results["measure"] == "S_pMSE"])
    for (dataset, name), sub in spmse.groupby(["dataset", "measure_name"], sort=False):
        if sub["setting"].nunique() > 12 and sub["setting"].str.contains("vars=").all():
            for source, per_source in sub.groupby("source", sort=False):
                out.append(_heatmap(per_source, f"{name}: {dataset} / {source}"))
            continue
        rows = sub.assign(
            label=[
                src + (f" #{rep}" if rep else "") + (f" [{st}]" if st else "")
                for src, rep, st in zip(sub["source"], sub["repetition"], sub["setting"], strict=True)
            ]
        )
        labels = list(dict.fromkeys(rows["label"]))
        fig, ax = plt.subplots(figsize=(7, 1.3 + 0.35 * len(labels)))
        for i, label in enumerate(labels):
            vals = rows.loc[rows["label"] == label, "value"].to_numpy()
            ax.scatter(vals, np.full(len(vals), i), color="#d95f02", s=14, zorder=3)
            ax.plot([vals.mean()] * 2, [i - 0.3, i + 0.3], color="k")
        ax.set_yticks(range(len(labels)), labels)
        ax.axvline(1, color="0.5", ls="--", lw=1)
        ax.set_xlabel("S_pMSE (1 = as expected for a correct synthesis model)")
        ax.set_title(f"{name}: {dataset}")
        ax.invert_yaxis()
        out.append(figure_html(fig, f"{name}: {dataset}: S_pMSE of each synthetic set by source (bar: mean)"))
    return out


def _heatmap(spmse: pd.DataFrame, title: str) -> str:
    pairs = spmse.assign(v=spmse["setting"].str.extract(r"vars=([^;]+)", expand=False))
    mean = pairs.groupby("v")["value"].mean()  # over synthetic sets and repetitions
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
    return figure_html(fig, f"{title}: two-way table utility heat map (S_pMSE)")


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
