"""The distance family's part of the report: per ``dcr`` entry and release, the evidence behind its verdict —
the share of synthetic records that copy a training record (zero DCR), the NNDR, both
protections, and the share closer to training with its interval beside the largest share the split
at hand allows (the measure's ``closer_to_training_ceiling`` row) — and the plot of the median
distances.

Fed by tidy rows (aggregates) only.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from pipeline.evaluation.reporting import Block, Figure, Markup, ReportedRun, Table, number_text
from pipeline.results import per_set
from pipeline.risk.distance.plots import plot_dcr_rows
from pipeline.row_params import param_columns, unit_groups

#: the columns of one synthetic set's line: title -> (row measure, times)
COLUMNS = {
    "exact copies (zero DCR, %)": ("dcr_zero_pct", 1.0),
    "median NNDR": ("nndr_median", 1.0),
    "median DCR to training": ("dcr_median", 1.0),
    "median DCR to holdout": ("holdout_dcr_median", 1.0),
    "median DCR of random records": ("random_dcr_median", 1.0),
    "baseline protection": ("dcr_baseline_protection", 1.0),
    "overfitting protection": ("dcr_overfitting_protection", 1.0),
}
SHARE = "closer_to_training"
RELEASE = ["dataset", "source", "repetition"]


def dcr_table(rows: pd.DataFrame) -> pd.DataFrame:
    """One line per synthetic set of one entry and setting: the figures of :data:`COLUMNS`, the
    share closer to training with its interval, and the split's ceiling (percentages)."""
    out = []
    for synthetic, sub in per_set(rows).groupby("synthetic", sort=False):
        value = sub.set_index("measure")["value"]
        line: dict[str, Any] = {"synthetic": synthetic}
        for title, (measure, times) in COLUMNS.items():
            line[title] = number_text(value[measure] * times) if measure in value.index else "–"
        if SHARE in value.index:
            bounds = [number_text(100 * value.get(f"{SHARE}_{b}", math.nan)) for b in ("lower", "upper")]
            line["closer to training (%) [95 %]"] = f"{number_text(100 * value[SHARE])} [{bounds[0]}, {bounds[1]}]"
            ceiling = value.get(f"{SHARE}_ceiling", math.nan)
            line["ceiling for this split (%)"] = number_text(100 * ceiling) if math.isfinite(ceiling) else "–"
        out.append(line)
    return pd.DataFrame(out)


def distance_section(results: pd.DataFrame, run: ReportedRun | None = None) -> list[Block]:
    """Per dataset, source, repetition, ``dcr`` entry and setting: the evidence table and the plot."""
    out: list[Block] = []
    rows = param_columns(results)
    for (dataset, source, rep, name), unit, sub in unit_groups(
        rows, ["dataset", "source", "repetition", "measure_name"]
    ):
        title = f"{name}: {dataset}" + (f" / {source}" if source else "") + (f" #{rep}" if rep else "")
        title += f" ({unit})" if unit else ""
        out.append(Table(dcr_table(sub), title))
        out.append(Figure(f"{title}: median distances to the closest record", plot_dcr_rows, (sub,)))
    if out:
        out.append(
            Markup(
                "<p>Exact copies: synthetic records at distance 0 from a training record. NNDR: the distance to the "
                "closest training record over that to the second closest (near 0: the record sits on one training "
                "record). Baseline protection: the median DCR over that of random records (1: as far as random "
                "data); overfitting protection: 2 × (1 − share closer to training), capped at 1. The share closer "
                "to training is 50 % when the synthesis memorises nothing; a release that copies every training "
                "record reaches the ceiling, not 100 %, when the training part is subsampled to the holdout's size "
                "(docs/distance.md).</p>"
            )
        )
    return out
