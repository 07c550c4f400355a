"""Plots of disclosure results (matplotlib figures, no pyplot state: safe on the Agg backend).

:func:`plot_multi_disclosure` draws synthpop's ``attrib.plot`` and its identity counterpart:
one row per target, the original's measure and the synthetic measure joined by an arrow
that points at the lower value.  :func:`plot_disclosure_rows` draws the same from the tidy
results table (the targets from the rows' params), so a report can plot stored results.
"""

from __future__ import annotations

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from pipeline.results import per_set
from pipeline.risk.disclosure.result import DisclosureResult, MultiDisclosureResult
from pipeline.row_params import param_columns

ORIGINAL_STYLE = {"color": "#1b9e77", "marker": "o"}
SYNTHETIC_STYLE = {"color": "#d95f02", "marker": "^"}


def axis_top(values: list[float]) -> float:
    """The right end of a percentage axis scaled to the data: 20 % above the largest value (at
    most 100 %), so that values of 0.1-3 % do not sit on the axis."""
    finite = [v for v in values if pd.notna(v)]
    top = max(finite, default=0.0)
    return min(100.0, top * 1.2) if top > 0 else 1.0


def _panel(ax, labels: list[str], original: list[float], synthetic: list[float], title: str) -> None:
    y = list(range(len(labels)))
    for yi, o, s in zip(y, original, synthetic, strict=True):
        lo, hi = (s, o) if s <= o else (o, s)
        ax.annotate(
            "",
            xy=(lo, yi),
            xytext=(hi, yi),
            arrowprops={"arrowstyle": "-|>", "color": "0.35", "lw": 1.2, "shrinkA": 0, "shrinkB": 4},
        )
    ax.scatter(original, y, s=45, zorder=3, **ORIGINAL_STYLE)
    ax.scatter(synthetic, y, s=45, zorder=3, **SYNTHETIC_STYLE)
    ax.set_yticks(y, labels)
    ax.set_xlim(0, axis_top([*original, *synthetic]))
    ax.set_xlabel("Disclosure measure (% of original records)")
    ax.set_title(title, fontsize=10)
    ax.set_ylim(len(labels) - 0.5, -0.5)  # first row on top
    ax.grid(axis="x", alpha=0.3)


def _figure(table: pd.DataFrame, ident: tuple[str, str], attrib: tuple[str, str], title: str) -> Figure:
    """``table`` has one row per target (top to bottom) and the four measure columns.

    One legend for both panels, under them (constrained layout keeps it inside the figure
    however few the rows): the circle is the original's measure, the triangle the synthetic one,
    each named for the left and the right panel."""
    fig = Figure(figsize=(11, 2.2 + 0.45 * len(table)), layout="constrained")
    left, right = fig.subplots(1, 2, sharey=True)
    labels = list(table.index)
    for ax, (orig, syn), name in (
        (left, ident, "Identity disclosure"),
        (right, attrib, "Comparison of attribute disclosure measures"),
    ):
        _panel(ax, labels, table[orig].tolist(), table[syn].tolist(), name)
    marker = {"linestyle": "none", "markersize": 7}
    handles = [Line2D([], [], **ORIGINAL_STYLE, **marker), Line2D([], [], **SYNTHETIC_STYLE, **marker)]
    names = [
        f"original: {ident[0]} (left), {attrib[0]} (right)",
        f"synthetic: {ident[1]} (left), {attrib[1]} (right)",
    ]
    fig.legend(handles, names, loc="outside lower center", ncol=2, fontsize=9, frameon=False)
    fig.suptitle(title)
    return fig


def plot_multi_disclosure(result: MultiDisclosureResult, title: str | None = None) -> Figure:
    """Per target: ``UiO`` vs the identity measure and ``Dorig`` vs the attribute measure.

    Rows follow ``result.attrib_table`` (sorted by the synthetic attribute measure); the
    synthetic values are means over the m synthetic sets.
    """
    orig_attrib = "CAPd" if result.attrib_meas == "DCAP" else "Dorig"
    table = pd.DataFrame(
        {
            "UiO": result.ident_table["ident_orig"],
            result.ident_meas: result.ident_table["ident_syn"],
        }
    ).loc[result.attrib_table["target"]]
    table[orig_attrib] = result.attrib_table["attrib_orig"].to_numpy()
    table[result.attrib_meas] = result.attrib_table["attrib_syn"].to_numpy()
    table.index = list(result.attrib_table.index)
    heading = (
        title
        or f"{result.attrib_meas} for synthetic data to {orig_attrib} for original data "
        f"(keys: {', '.join(result.keys)}; m = {result.m})"
    )
    return _figure(table, ("UiO", result.ident_meas), (orig_attrib, result.attrib_meas), heading)


def plot_disclosure(result: DisclosureResult, title: str | None = None) -> Figure:
    """``UiO``/``repU`` and ``Dorig``/``DiSCO`` of one target, one row per synthetic set."""
    table = pd.concat([result.ident[["UiO", "repU"]], result.attrib[["Dorig", "DiSCO"]]], axis=1)
    table.index = [f"synthesis {i}" for i in table.index]
    heading = title or f"target {result.target}, keys: {', '.join(result.keys)}"
    return _figure(table, ("UiO", "repU"), ("Dorig", "DiSCO"), heading)


def plot_disclosure_rows(tidy: pd.DataFrame, title: str = "") -> Figure:
    """The multi-target plot from tidy rows of a disclosure measure (one key set).

    ``tidy``: rows with a ``params`` column (the results table's, or a result's ``tidy()``).
    Uses the ``original`` rows of ``UiO`` and ``Dorig`` and the per-set rows of ``repU`` and
    ``DiSCO`` averaged, per ``target`` of the rows' params.
    """
    rows = param_columns(tidy, "target")
    rows = rows[rows["target"].notna()]
    orig = rows[rows["synthetic"] == "original"].pivot_table(index="target", columns="measure", values="value")
    syn = per_set(rows).pivot_table(index="target", columns="measure", values="value", aggfunc="mean")
    table = pd.DataFrame({"UiO": orig["UiO"], "repU": syn["repU"], "Dorig": orig["Dorig"], "DiSCO": syn["DiSCO"]})
    table = table.sort_values("DiSCO", kind="stable")
    return _figure(table, ("UiO", "repU"), ("Dorig", "DiSCO"), title)
