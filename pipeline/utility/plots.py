"""Plots of utility results (matplotlib, Agg backend; every function returns a Figure)."""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.colors import LinearSegmentedColormap
from matplotlib.figure import Figure

from pipeline.errors import ParameterError
from pipeline.row_params import param_columns
from pipeline.utility.result import UtilityTablesResult

_TITLES = {
    "oneway": "One-way utility: {stat} for each variable",
    "twoway": "Two-way utility: {stat} for pairs of variables",
    "threeway": "Three-way utility: {stat} for pairs along with {third}",
}


_KINDS = {1: "oneway", 2: "twoway", 3: "threeway"}


def tables_frame(result: UtilityTablesResult) -> pd.DataFrame:
    """A utility_tables result as the frame the heat map draws: one row per table with its
    variables (``vars``, a tuple) and the value of the result's ``plot_stat`` (``value``)."""
    return pd.DataFrame({"vars": list(result.combinations), "value": result.values.to_numpy()})


def heatmap_matrix(
    tables: UtilityTablesResult | pd.DataFrame, third_var: str | None = None
) -> tuple[list[str], list[str], np.ndarray]:
    """Row labels, column labels and the matrix of plotted values (NaN = no tile).

    ``tables``: one row per table with columns ``vars`` (the table's variables, a tuple) and
    ``value`` (see :func:`tables_frame`), or a utility_tables result. One-way tables give a single
    column; two-way tables a symmetric matrix with an empty diagonal; three-way tables the
    combinations containing ``third_var`` (a result's own by default), the two other variables
    as axes (mirrored).
    """
    if isinstance(tables, UtilityTablesResult):
        tables, third_var = tables_frame(tables), third_var or tables.third_var
    combos = list(tables["vars"])
    axis = list(dict.fromkeys(v for combo in combos for v in combo))
    if len(combos[0]) == 1:
        return axis, [""], tables["value"].to_numpy(dtype=float).reshape(-1, 1)
    if len(combos[0]) == 3:
        if third_var is None:
            raise ParameterError("a three-way heat map needs third_var")
        axis.remove(third_var)
    pos = {v: i for i, v in enumerate(axis)}
    mat = np.full((len(axis), len(axis)), np.nan)
    for combo, value in zip(combos, tables["value"].to_numpy(dtype=float), strict=True):
        if len(combo) == 3:
            if third_var not in combo:
                continue
            combo = tuple(c for c in combo if c != third_var)
        i, j = pos[combo[0]], pos[combo[1]]
        mat[i, j] = mat[j, i] = value
    return axis, axis, mat


def plot_utility_tables(
    tables: UtilityTablesResult | pd.DataFrame,
    *,
    third_var: str | None = None,
    stat: str | None = None,
    max_scale: float | None = None,
    min_scale: float = 0.0,
    low: str = "#EBEBEB",
    high: str = "#E41A1C",
    title: str | None = None,
) -> Figure:
    """synthpop's ``utility.tables`` heat map: one tile per variable combination.

    ``tables`` and ``third_var`` as in :func:`heatmap_matrix` (the report passes the mean over
    synthetic sets of each table's rows); ``stat`` names the plotted statistic in the title (a
    result's ``plot_stat`` by default). The colour runs from ``low`` (0) to ``high``
    (``max_scale``, default the largest value); values outside ``[min_scale, max_scale]`` are
    clamped, as synthpop does.
    """
    if isinstance(tables, UtilityTablesResult):
        stat = stat or tables.plot_stat
        third_var = third_var or tables.third_var
        names = {
            label: name
            for labels, variables in zip(tables.combinations, tables.combination_vars, strict=True)
            for label, name in zip(labels, variables, strict=True)
        }
        third_name = names.get(third_var, third_var or "")
        tables = tables_frame(tables)
    else:
        third_name = third_var or ""
    rows, cols, mat = heatmap_matrix(tables, third_var)
    finite = mat[np.isfinite(mat)]
    top = float(max_scale) if max_scale is not None else (float(finite.max()) if finite.size else 1.0)
    shown = np.clip(mat, min_scale if min_scale else -np.inf, top)
    cmap = LinearSegmentedColormap.from_list("utility", [low, high]).with_extremes(bad="white")
    size = max(4.0, 0.45 * len(rows) + 2)
    fig, ax = plt.subplots(figsize=(size if len(cols) > 1 else 3.5, size), layout="constrained")
    im = ax.imshow(np.ma.masked_invalid(shown), cmap=cmap, vmin=0, vmax=top if top > 0 else 1, aspect="auto")
    ax.set_xticks(range(len(cols)), cols, rotation=90)
    ax.set_yticks(range(len(rows)), rows)
    for spine in ax.spines.values():
        spine.set_visible(False)
    kind = _KINDS[len(tables["vars"].iloc[0])]
    ax.set_title(title or _TITLES[kind].format(stat=stat or "value", third=third_name), fontsize=11)
    fig.colorbar(im, ax=ax)
    return fig


def plot_spmse_by_set(labels: Sequence[str], values: Sequence[np.ndarray], title: str = "") -> Figure:
    """S_pMSE of every synthetic set, one line per label (a source, repetition and setting): the
    sets as points, their mean as a bar, and 1 (a correct synthesis model's expectation) dashed."""
    fig = Figure(figsize=(7, 1.3 + 0.35 * len(labels)), layout="constrained")
    ax = fig.add_subplot()
    for i, vals in enumerate(values):
        ax.scatter(vals, np.full(len(vals), i), color="#d95f02", s=14, zorder=3)
        ax.plot([vals.mean()] * 2, [i - 0.3, i + 0.3], color="k")
    ax.set_yticks(range(len(labels)), labels)
    ax.axvline(1, color="0.5", ls="--", lw=1)
    ax.set_xlabel("S_pMSE (1 = as expected for a correct synthesis model)")
    ax.set_title(title)
    ax.invert_yaxis()
    return fig


def plot_compare_rows(rows: pd.DataFrame, title: str = "", ncol: int = 2) -> Figure:
    """synthpop ``compare.synds``'s bar charts from a ``compare`` entry's rows: per variable the
    original's and the pooled synthetic sets' percentages (or counts) of each category or bin,
    titled with the variable's ``S_pMSE`` when the rows have it."""
    table = param_columns(rows, "variable", "category")
    bars = table[table["measure"].isin(["percent", "count"])]
    utility = table[(table["measure"] == "S_pMSE") & table["category"].isna()].set_index("variable")["value"]
    names = list(dict.fromkeys(bars["variable"]))
    nrow = max(1, -(-len(names) // ncol))
    fig = Figure(figsize=(5.5 * ncol, 2.8 * nrow))
    axes = fig.subplots(nrow, ncol, squeeze=False).ravel()
    for ax, name in zip(axes, names, strict=False):
        sub = bars[bars["variable"] == name]
        cats = list(dict.fromkeys(sub["category"]))
        x = np.arange(len(cats))
        for offset, label, color in ((-0.2, "original", "#1A3C5A"), (0.2, "mean", "#4187BF")):
            vals = sub[sub["synthetic"] == label].set_index("category")["value"].reindex(cats)
            ax.bar(x + offset, vals.to_numpy(dtype=float), width=0.4, color=color,
                   label="observed" if label == "original" else "synthetic")  # fmt: skip
        ax.set_xticks(x, [str(c) for c in cats], rotation=-30, ha="left", fontsize=7)
        head = f"{name}: S_pMSE = {utility[name]:.2f}" if name in utility.index else str(name)
        ax.set_title(head, fontsize=9)
        ax.set_ylabel(sub["measure"].iloc[0].capitalize(), fontsize=8)
    for ax in axes[len(names) :]:
        ax.set_visible(False)
    if len(axes):
        axes[0].legend(fontsize=8, frameon=False)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


#: what the bars of a multi_compare panel show, per ``var`` kind and plot setting
_SOURCE_COLOURS = ("#1A3C5A", "#4187BF", "#88B7DC", "#C4DBEE", "#7A9A3A", "#D9A441")


def plot_multi_compare(
    rows: pd.DataFrame, title: str = "", position: str | None = None, y_hist: str | None = None
) -> Figure:
    """synthpop ``multi.compare``'s panels from a ``multi_compare`` entry's rows (or a result's
    ``tidy()``): one panel per group, as ggplot2's ``facet_wrap``.

    A factor ``var``: with ``position = "fill"`` one stacked bar per source of the percentages of
    its levels, with ``"dodge"`` the counts of each level side by side; a numeric ``var``: the
    histogram of each source side by side (counts, or ``y_hist = "density"``), without the
    ``miss.<code>`` / NA columns (ggplot2 drops NA). ``position`` and ``y_hist`` default to the
    rows' params (a run's rows carry them), else ``"fill"`` and ``"count"``.
    """
    table = param_columns(rows, "by", "group", "category", "barplot_position", "y_hist")
    by = next((b for b in table["by"] if b), ())
    position = position or next((p for p in table["barplot_position"] if p), "fill")
    y_hist = y_hist or next((p for p in table["y_hist"] if p), "count")
    numeric = bool((table["measure"] == "density").any())
    groups = list(dict.fromkeys(g for g in table["group"] if g is not None))
    sources = list(dict.fromkeys(table["synthetic"]))
    ncol = min(6, max(1, int(np.ceil(np.sqrt(len(groups))))))
    nrow = max(1, -(-len(groups) // ncol))
    fig = Figure(figsize=(2.9 * ncol + 1.6, 2.3 * nrow + 0.6), layout="constrained")
    axes = fig.subplots(nrow, ncol, squeeze=False).ravel()
    for ax, group in zip(axes, groups, strict=False):
        sub = table[(table["group"] == group) & table["category"].notna()]
        if numeric:
            _histogram_panel(ax, sub, sources, y_hist)
        elif position == "fill":
            _fill_panel(ax, sub, sources)
        else:
            _dodge_panel(ax, sub, sources)
        values = dict(group)
        order = [k for k in by if k in values] + sorted(k for k in values if k not in by)
        ax.set_title(", ".join(f"{k}={values[k]}" for k in order), fontsize=8)
        ax.tick_params(labelsize=7)
    for ax in axes[len(groups) :]:
        ax.set_visible(False)
    if len(groups):
        handles, labels = axes[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside right upper", fontsize=7, frameon=False)
    if title:
        fig.suptitle(title, fontsize=10)
    return fig


def _values(sub: pd.DataFrame, measure: str, source: str, categories: list) -> np.ndarray:
    cell = sub[(sub["measure"] == measure) & (sub["synthetic"] == source)].set_index("category")["value"]
    return cell.reindex(categories).fillna(0).to_numpy(dtype=float)


def _fill_panel(ax: plt.Axes, sub: pd.DataFrame, sources: list[str]) -> None:
    categories = list(dict.fromkeys(sub.loc[sub["measure"] == "percent", "category"]))
    bottom = np.zeros(len(sources))
    colours = plt.get_cmap("tab20")(np.arange(len(categories)) % 20)
    for category, colour in zip(categories, colours, strict=True):
        heights = np.array([_values(sub, "percent", s, [category])[0] for s in sources])
        ax.bar(range(len(sources)), heights, bottom=bottom, color=colour, label=str(category), width=0.7)
        bottom += heights
    ax.set_xticks(range(len(sources)), ["observed" if s == "original" else f"syn {s}" for s in sources])
    ax.set_ylabel("percent", fontsize=7)


def _dodge_panel(ax: plt.Axes, sub: pd.DataFrame, sources: list[str]) -> None:
    categories = list(dict.fromkeys(sub.loc[sub["measure"] == "count", "category"]))
    width = 0.8 / len(sources)
    x = np.arange(len(categories))
    for i, (source, colour) in enumerate(zip(sources, _SOURCE_COLOURS, strict=False)):
        label = "observed" if source == "original" else f"synthetic {source}"
        ax.bar(x + (i - (len(sources) - 1) / 2) * width, _values(sub, "count", source, categories), width, color=colour,
               label=label)  # fmt: skip
    ax.set_xticks(x, [str(c) for c in categories], rotation=-30, ha="left")
    ax.set_ylabel("count", fontsize=7)


def _histogram_panel(ax: plt.Axes, sub: pd.DataFrame, sources: list[str], y_hist: str) -> None:
    bins = list(dict.fromkeys(sub.loc[sub["measure"] == "density", "category"]))
    if not bins:
        bins = [c for c in dict.fromkeys(sub["category"]) if not str(c).startswith("miss.") and c != "NA"]
    measure = "density" if y_hist == "density" else "count"
    width = 0.8 / len(sources)
    x = np.arange(len(bins))
    for i, (source, colour) in enumerate(zip(sources, _SOURCE_COLOURS, strict=False)):
        label = "observed" if source == "original" else f"synthetic {source}"
        ax.bar(x + (i - (len(sources) - 1) / 2) * width, _values(sub, measure, source, bins), width, color=colour,
               label=label)  # fmt: skip
    step = max(1, len(bins) // 6)
    ax.set_xticks(x[::step], [str(b) for b in bins[::step]], rotation=-30, ha="left")
    ax.set_ylabel(measure, fontsize=7)
