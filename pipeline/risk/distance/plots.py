"""Plot of ``dcr`` rows: median DCR to the training records, to the holdout and of random records.

Fed by tidy rows (the results table or ``Result.tidy()``), so a report can plot stored results.
"""

from __future__ import annotations

import pandas as pd
from matplotlib.figure import Figure

#: what each point shows, in drawing order
SERIES = {
    "dcr_median": ("to training", "#d95f02", "o"),
    "holdout_dcr_median": ("to holdout", "#1b9e77", "s"),
    "random_dcr_median": ("random records to training", "0.5", "x"),
}


def plot_dcr_rows(rows: pd.DataFrame) -> Figure:
    """One point per synthetic set and series: a synthetic set much closer to the training records
    than to the holdout (or than random records are) copies training records."""
    fig = Figure(figsize=(6.0, 3.2), layout="constrained")
    ax = fig.subplots()
    sets = sorted(rows.loc[rows["measure"] == "dcr_median", "synthetic"].unique(), key=lambda s: (len(s), s))
    for measure, (label, color, marker) in SERIES.items():
        values = rows[rows["measure"] == measure].set_index("synthetic")["value"]
        if values.empty:
            continue
        ax.plot(sets, [values.get(s) for s in sets], linestyle="", marker=marker, color=color, label=label)
    ax.set_xlabel("synthetic set")
    ax.set_ylabel("median DCR (SDMetrics scale, 0-1)")
    ax.set_ylim(bottom=0)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8, frameon=False)
    return fig
