"""The profile family's part of the report: the key-combination size distribution of the original
and the synthetic sets (the ``combinations`` rows of each size bucket). Fed by tidy rows only."""

from __future__ import annotations

import pandas as pd
from matplotlib.figure import Figure as MatplotlibFigure

from pipeline.evaluation.reporting import Block, Figure, ReportedRun, section_title
from pipeline.row_params import param_columns, unit_groups

RUN_GROUP = ["dataset", "source", "repetition", "measure_name"]


def _size_label(size_from: int, size_to: int | None) -> str:
    if size_to is None:
        return f"{size_from}+"
    return str(size_from) if size_from == size_to else f"{size_from}–{size_to}"


def profile_section(results: pd.DataFrame, run: ReportedRun | None = None) -> list[Block]:
    """Key-combination size distribution (the ``combinations`` rows of each size bucket),
    original vs synthetic sets."""
    out: list[Block] = []
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
