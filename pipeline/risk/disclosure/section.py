"""The disclosure family's part of the report: its section (per key set the repU/DiSCO vs UiO/Dorig
plot of every source and a table) — fed by tidy rows only (aggregates)."""

from __future__ import annotations

import pandas as pd

from pipeline.evaluation.reporting import Block, Figure, ReportedRun, Table
from pipeline.results import per_set
from pipeline.risk.disclosure.plots import plot_disclosure_rows
from pipeline.row_params import param_columns, unit_groups, value_text


def disclosure_section(results: pd.DataFrame, run: ReportedRun | None = None) -> list[Block]:
    """Per dataset, measure entry and key set: the repU/DiSCO vs UiO/Dorig plot of every source
    (first repetition) and one table of every source, repetition and target."""
    out: list[Block] = []
    rows = param_columns(results, "keys", "target")
    rows = rows[rows["target"].notna()]
    for (dataset, name, keys), unit, sub in unit_groups(rows, ["dataset", "measure_name", "keys"]):
        about = f"keys: {value_text(keys)}" + (f"; {unit}" if unit else "")
        for source, first in sub[sub["repetition"] == 0].groupby("source", sort=False):
            title = f"{name}: {dataset} / {source} ({about})"
            out.append(Figure(f"{title}: original vs synthetic", plot_disclosure_rows, (first, title)))
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
        out.append(Table(pd.DataFrame(table), f"{name}: {dataset} ({about})"))
    return out
