"""The profile family's part of the report: each dataset's profile (per variable its missing
share, missing codes, levels or distinct values) and the key-combination size distribution of the
original and the synthetic sets (the ``combinations`` rows of each size bucket). Fed by tidy rows
only: counts and shares, never a value."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure as MatplotlibFigure

from pipeline.evaluation.reporting import Block, Figure, Markup, ReportedRun, Table, number_text, section_title
from pipeline.row_params import param_columns, unit_groups

RUN_GROUP = ["dataset", "source", "repetition", "measure_name"]


def _size_label(size_from: int, size_to: int | None) -> str:
    if size_to is None:
        return f"{size_from}+"
    return str(size_from) if size_from == size_to else f"{size_from}–{size_to}"


#: the profile measure's per-variable rows -> the profile table's columns, in order
PROFILE_COLUMNS = {
    "missing_pct": "missing (%)",
    "special_missing": "missing codes (records)",
    "levels": "levels (schema)",
    "levels_observed": "levels observed",
    "distinct": "distinct values",
}
#: a figure a variable of that kind does not have (a numeric variable's levels, a factor's missing codes)
NOT_APPLICABLE = "–"


def profile_tables(results: pd.DataFrame) -> list[Block]:
    """Per dataset and profile entry: one row per variable with its share of missing values, the
    records holding one of its missing codes (and their share), its levels or distinct values."""
    out: list[Block] = []
    rows = param_columns(results[results["measure"].isin(["records", *PROFILE_COLUMNS])], "variable")
    for (dataset, name), unit, sub in unit_groups(rows, ["dataset", "measure_name"]):
        per_variable = sub[sub["variable"].notna()]
        if per_variable.empty:
            continue
        records = sub.loc[sub["measure"] == "records", "value"]
        wide = per_variable.pivot_table(index="variable", columns="measure", values="value", sort=False)
        table = pd.DataFrame({"variable": wide.index})
        for measure, column in PROFILE_COLUMNS.items():
            values = wide[measure].to_numpy() if measure in wide.columns else np.full(len(wide), np.nan)
            table[column] = values
            if measure == "special_missing" and len(records):
                table["missing codes (%)"] = 100.0 * values / float(records.iloc[0])
        shown = table.astype(object).where(table.notna(), NOT_APPLICABLE)
        size = f", {number_text(float(records.iloc[0]))} records" if len(records) else ""
        out.append(Table(shown, heading=section_title(dataset, "", 0, name, unit) + size))
    if out:
        out.append(
            Markup(
                "<p>Missing (%): the share of the original's records with no value (NA); missing codes: the "
                "records holding one of the variable's declared missing codes (synthpop's <code>cont.na</code>, "
                "such as SD2011's income −8), counted apart from the NAs; levels: the schema's and those the data "
                "hold; distinct values of a numeric variable. Only counts and shares, never a value.</p>"
            )
        )
    return out


def profile_section(results: pd.DataFrame, run: ReportedRun | None = None) -> list[Block]:
    """The profile of every dataset (:func:`profile_tables`) and the key-combination size
    distribution (the ``combinations`` rows of each size bucket), original vs synthetic sets."""
    out = profile_tables(results)
    buckets = param_columns(results[results["measure"] == "combinations"], "size_from", "size_to")
    buckets = buckets[buckets["size_from"].notna()]
    for key, unit, sub in unit_groups(buckets, RUN_GROUP):
        title = section_title(*key, unit)
        sizes = sub.assign(size=[_size_label(a, b) for a, b in zip(sub["size_from"], sub["size_to"], strict=True)])
        counts = sizes.pivot_table(index="size", columns="synthetic", values="value", sort=False)
        caption = f"{title}: key-combination sizes, original vs synthetic sets"
        out.append(Figure(caption, plot_key_sizes, (counts, title)))
    return out


def plot_key_sizes(counts: pd.DataFrame, title: str) -> MatplotlibFigure:
    """Key combinations per size bucket (rows) of the original and each synthetic set (columns)."""
    fig = MatplotlibFigure(figsize=(7, 3.2), layout="constrained")
    ax = fig.subplots()
    counts.plot.bar(ax=ax, rot=0)
    ax.set_xlabel("records per key combination")
    ax.set_ylabel("key combinations")
    ax.set_title(title)
    return fig
