"""Plots of utility results (matplotlib, Agg backend; every function returns a Figure)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import LinearSegmentedColormap
from matplotlib.figure import Figure

from pipeline.utility.tab import UtilityTablesResult

_TITLES = {
    "oneway": "One-way utility: {stat} for each variable",
    "twoway": "Two-way utility: {stat} for pairs of variables",
    "threeway": "Three-way utility: {stat} for pairs along with {third}",
}


def heatmap_matrix(result: UtilityTablesResult) -> tuple[list[str], list[str], np.ndarray]:
    """Row labels, column labels and the matrix of plotted values (NaN = no tile).

    One-way: a single column; two-way: a symmetric matrix with an empty diagonal; three-way:
    the combinations containing ``third_var``, the two other variables as axes (mirrored).
    """
    vals = result.values
    labels = list(result.labels)
    if result.tables == "oneway":
        mat = np.array([[vals.get(lab, np.nan)] for lab in labels])
        return labels, [""], mat
    axis = labels if result.tables == "twoway" else [lab for lab in labels if lab != result.third_var]
    pos = {lab: i for i, lab in enumerate(axis)}
    mat = np.full((len(axis), len(axis)), np.nan)
    for combo, value in zip(result.combinations, vals.to_numpy(), strict=True):
        if result.tables == "threeway":
            if result.third_var not in combo:
                continue
            combo = tuple(c for c in combo if c != result.third_var)
        i, j = pos[combo[0]], pos[combo[1]]
        mat[i, j] = mat[j, i] = value
    return axis, axis, mat


def plot_utility_tables(
    result: UtilityTablesResult,
    *,
    max_scale: float | None = None,
    min_scale: float = 0.0,
    low: str = "#EBEBEB",
    high: str = "#E41A1C",
    title: str | None = None,
) -> Figure:
    """synthpop's ``utility.tables`` heat map: one tile per variable combination.

    The colour runs from ``low`` (0) to ``high`` (``max_scale``, default the largest value);
    values outside ``[min_scale, max_scale]`` are clamped, as synthpop does.
    """
    rows, cols, mat = heatmap_matrix(result)
    finite = mat[np.isfinite(mat)]
    top = float(max_scale) if max_scale is not None else (float(finite.max()) if finite.size else 1.0)
    shown = np.clip(mat, min_scale if min_scale else -np.inf, top)
    cmap = LinearSegmentedColormap.from_list("utility", [low, high]).with_extremes(bad="white")
    size = max(4.0, 0.45 * len(rows) + 2)
    fig, ax = plt.subplots(figsize=(size if len(cols) > 1 else 3.5, size))
    im = ax.imshow(np.ma.masked_invalid(shown), cmap=cmap, vmin=0, vmax=top if top > 0 else 1, aspect="auto")
    ax.set_xticks(range(len(cols)), cols, rotation=90)
    ax.set_yticks(range(len(rows)), rows)
    for spine in ax.spines.values():
        spine.set_visible(False)
    third = (result.third_var or "").split(".", 1)[-1]
    ax.set_title(title or _TITLES[result.tables].format(stat=result.plot_stat, third=third), fontsize=11)
    fig.colorbar(im, ax=ax)
    fig.tight_layout()
    return fig
