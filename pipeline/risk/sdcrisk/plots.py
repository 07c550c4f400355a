"""Plots of sdc_risk results (matplotlib figures, no pyplot state: safe on the Agg backend).

:func:`plot_suda_contributions` answers "which variables drive the risk": each key's share of
the SUDA scores, per file, from the tidy results table.  :func:`plot_risk_distribution` shows
how the records' individual risks are spread, per file, from a result (counts of records per
risk bin: aggregates only).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from pipeline.risk.sdcrisk.assemble import RISK, N
from pipeline.risk.sdcrisk.result import SdcRiskResult
from pipeline.row_params import param_columns

#: the upper ends of the individual-risk bins
RISK_BINS = (0.0, 0.001, 0.01, 0.05, 0.1, 0.2, 0.5, 1.0)


def plot_suda_contributions(rows: pd.DataFrame) -> Figure:
    """Each key's contribution to the SUDA scores (percent), one bar per file, from the rows of
    the results table (measure ``suda_contribution``)."""
    got = param_columns(rows[rows["measure"] == "suda_contribution"], "variable", "summary", "baseline")
    # the files' own rows (not the summaries over sets or the holdout baselines beside them)
    got = got[got["summary"].isna() & got["baseline"].isna() & (got["synthetic"] != "mean")]
    table = got.pivot_table(index="variable", columns="synthetic", values="value", aggfunc="first", sort=False)
    files = ["original", *sorted((c for c in table.columns if c != "original"), key=str)]
    table = table[[f for f in files if f in table.columns]]
    fig = Figure(figsize=(7, 0.45 * len(table) + 1.6))
    ax = fig.add_subplot()
    height = 0.8 / max(1, table.shape[1])
    y = np.arange(len(table))
    for j, file in enumerate(table.columns):
        ax.barh(y + j * height, table[file].to_numpy(), height, label=str(file))
    ax.set_yticks(y + height * (table.shape[1] - 1) / 2, list(table.index))
    ax.invert_yaxis()
    ax.set_xlabel("Contribution to the SUDA scores (%)")
    ax.set_title("Which variables drive the risk (SUDA2 contributions)", fontsize=10)
    ax.legend(fontsize=8, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return fig


def risk_bins(result: SdcRiskResult) -> pd.DataFrame:
    """Records per individual-risk bin (rows) and file (columns)."""
    edges = np.array([-np.inf, *RISK_BINS[1:]])
    labels = [f"<= {hi:g}" for hi in RISK_BINS[1:]]
    columns = {}
    for label, file in zip(result.labels, result.files, strict=True):
        risk, n = file.key_table[RISK].to_numpy(), file.key_table[N].to_numpy()
        which = np.clip(np.searchsorted(edges, risk, side="left") - 1, 0, len(labels) - 1)
        columns[label] = np.bincount(which, weights=n, minlength=len(labels))
    return pd.DataFrame(columns, index=labels)


def plot_risk_distribution(result: SdcRiskResult) -> Figure:
    """Share of each file's records per individual-risk bin."""
    bins = risk_bins(result)
    shares = 100.0 * bins / bins.sum()
    fig = Figure(figsize=(7, 3.2))
    ax = fig.add_subplot()
    width = 0.8 / max(1, shares.shape[1])
    x = np.arange(len(shares))
    for j, file in enumerate(shares.columns):
        ax.bar(x + j * width, shares[file].to_numpy(), width, label=str(file))
    ax.set_xticks(x + width * (shares.shape[1] - 1) / 2, list(shares.index), fontsize=8)
    ax.set_xlabel("Individual re-identification risk")
    ax.set_ylabel("Records (%)")
    ax.set_title("Distribution of the individual risk", fontsize=10)
    ax.legend(fontsize=8, frameon=False)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return fig


__all__ = ["plot_risk_distribution", "plot_suda_contributions", "risk_bins"]
