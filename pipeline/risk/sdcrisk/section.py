"""The sdcrisk family's part of the report: per key set which variables drive the risk (SUDA2
contributions) and sdcMicro's risk figures of the original and of the synthetic sets. Fed by tidy
rows only (aggregates)."""

from __future__ import annotations

import pandas as pd

from pipeline.evaluation.reporting import Block, Figure, ReportedRun, Table
from pipeline.results import per_set
from pipeline.risk.sdcrisk.plots import plot_suda_contributions
from pipeline.row_params import param_columns, unit_groups, value_text

#: the sdc_risk table's columns: row measure -> column
SDC_RISK_COLUMNS = {
    "global_risk": "global risk",
    "expected_reidentifications": "expected re-identifications",
    "sample_uniques": "sample uniques",
    "kanon_violations": "k-anonymity violations (k = 3)",
    "dis_suda_mean": "DIS-SUDA (mean)",
    "uniques_matching_original_uniques_pct": "uniques on original uniques (%)",
}


def sdc_risk_section(results: pd.DataFrame, run: ReportedRun | None = None) -> list[Block]:
    """Per dataset, measure entry and key set: which variables drive the risk (SUDA2
    contributions, first repetition of each source) and a table of sdcMicro's risk figures of
    the original and the synthetic sets (their mean)."""
    out: list[Block] = []
    rows = param_columns(
        results, "keys", "k", "weighted", row_keys=["keys", "k", "weighted", "variable", "sensitive", "method"]
    )
    rows = rows[rows["keys"].notna() & (rows["k"].isna() | ((rows["k"] == 3) & (rows["weighted"] == False)))]  # noqa: E712
    for (dataset, name, keys), unit, sub in unit_groups(rows, ["dataset", "measure_name", "keys"]):
        about = f"keys: {value_text(keys)}" + (f"; {unit}" if unit else "")
        for source, first in sub[sub["repetition"] == 0].groupby("source", sort=False):
            if (first["measure"] == "suda_contribution").any():
                title = f"{name}: {dataset} / {source} ({about})"
                out.append(Figure(f"{title}: which variables drive the risk", plot_suda_contributions, (first,)))
        table = []
        for (source, rep), cell in sub.groupby(["source", "repetition"], sort=False):
            for file, values in (
                ("original", cell[cell["synthetic"] == "original"]),
                ("synthetic (mean)", per_set(cell)),
            ):
                means = values.groupby("measure")["value"].mean()
                table.append(
                    {
                        "source": source,
                        "repetition": rep,
                        "file": file,
                        **{c: means.get(m) for m, c in SDC_RISK_COLUMNS.items()},
                    }
                )
        out.append(Table(pd.DataFrame(table), f"{name}: {dataset} ({about})"))
    return out
