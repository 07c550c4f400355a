"""The utility family's part of the report: per entry S_pMSE of every synthetic set, the table
utility heat maps, utility.synds' summary per propensity method, compare.synds' distributions and
multi.compare's panels.
Fed by tidy rows only (aggregates); which entry is which measure is the rows' ``type``."""

from __future__ import annotations

import html

import pandas as pd

from pipeline.evaluation.reporting import Block, Figure, Markup, ReportedRun, Table, section_title
from pipeline.results import per_set
from pipeline.row_params import UNIT, param_columns, unit_groups
from pipeline.utility.plots import plot_compare_rows, plot_multi_compare, plot_spmse_by_set, plot_utility_tables

RUN_GROUP = ["dataset", "source", "repetition", "measure_name"]


def _entries(results: pd.DataFrame, kind: str) -> list[str]:
    """The measure entries (names) of measure type ``kind`` among the rows."""
    return list(dict.fromkeys(results.loc[results["type"] == kind, "measure_name"]))


#: the figures of synthpop's compare functions: task type, plot, caption
COMPARE_PLOTS = (
    ("compare", plot_compare_rows, "distributions of the original and the pooled synthetic sets"),
    ("multi_compare", plot_multi_compare, "the variable by group in the original and the synthetic data"),
)


def utility_section(results: pd.DataFrame, run: ReportedRun | None = None) -> list[Block]:
    """Per dataset and utility_gen / utility_tab entry: S_pMSE of every synthetic set, one row per
    source, repetition and setting (sources side by side); per utility_tables entry and source
    its heat map."""
    tables = _entries(results, "utility_tables")
    out: list[Block] = []
    spmse = per_set(results[(results["measure"] == "S_pMSE") & ~results["measure_name"].isin(tables)])
    for (dataset, name), sub in spmse.groupby(["dataset", "measure_name"], sort=False):
        labels, values = [], []
        for (source, rep, _), cell in sub.groupby(["source", "repetition", "params"], sort=False):
            setting = cell["setting"].iloc[0]
            labels.append(source + (f" #{rep}" if rep else "") + (f" [{setting}]" if setting else ""))
            values.append(cell["value"].to_numpy())
        caption = f"{name}: {dataset}: S_pMSE of each synthetic set by source (bar: mean)"
        out.append(Figure(caption, plot_spmse_by_set, (labels, values), {"title": f"{name}: {dataset}"}))
    out += _table_heat_maps(per_set(results[results["measure_name"].isin(tables)]))
    out += utility_synds_tables(results[results["measure_name"].isin(_entries(results, "utility_synds"))])
    for kind, plot, what in COMPARE_PLOTS:
        compares = results[results["measure_name"].isin(_entries(results, kind))]
        for (dataset, name, source, rep), sub in compares.groupby(
            ["dataset", "measure_name", "source", "repetition"], sort=False
        ):
            title = section_title(dataset, source, rep, name)
            out.append(Figure(f"{title}: {what}", plot, (sub, title)))
    return out


#: utility_synds summary rows ("mean") shown per method, as synthpop 1.2-1 prints them
SYNDS_SUMMARY = {
    "pMSE": "pMSE (mean)",
    "pMSE_sd": "pMSE (SD)",
    "deviance": "deviance/N (mean)",
    "deviance_sd": "deviance/N (SD)",
    "null_mean_diff": "null: Mean diff",
    "null_mean_ratio": "null: Mean ratio",
}


def utility_synds_tables(rows: pd.DataFrame) -> list[Block]:
    """Per dataset, utility_synds entry, source and repetition: one row per propensity method
    with the mean/SD of pMSE and deviance and the pairwise-null summary (synthpop 1.2-1)."""
    out: list[Block] = []
    summary = param_columns(rows[rows["synthetic"] == "mean"], "method", row_keys=["method", "all_comb"])
    for (dataset, source, rep, name), unit, sub in unit_groups(summary, RUN_GROUP):
        wide = sub.pivot_table(index="method", columns="measure", values="value", aggfunc="first", sort=False)
        wide = wide[[c for c in SYNDS_SUMMARY if c in wide.columns]].rename(columns=SYNDS_SUMMARY)
        out.append(Table(wide.reset_index(), section_title(dataset, source, rep, name, unit)))
    return out


def _table_heat_maps(rows: pd.DataFrame) -> list[Block]:
    """synthpop's utility.tables heat map per entry, setting and source, of the entry's
    ``plot_stat`` (else S_pMSE) averaged over synthetic sets and repetitions."""
    out: list[Block] = []
    for (dataset, name, source), unit, sub in unit_groups(
        param_columns(rows, "vars"), ["dataset", "measure_name", "source"]
    ):
        settings = dict(sub[UNIT].iloc[0])
        stat, third = settings.get("plot_stat", "S_pMSE"), settings.get("third_var")
        values = sub[sub["measure"] == stat].groupby("vars", sort=False)["value"].mean()
        if values.empty:
            continue
        title = section_title(dataset, source, 0, name, unit)
        if len(values.index[0]) == 3 and third is None:
            out.append(Markup(f"<p>{html.escape(title)}: the three-way heat map needs the task to name its "
                              "<code>third_var</code>.</p>"))  # fmt: skip
            continue
        tables = pd.DataFrame({"vars": list(values.index), "value": values.to_numpy()})
        caption = f"{title}: table utility heat map ({stat}, mean over synthetic sets)"
        out.append(Figure(caption, plot_utility_tables, (tables,), {"third_var": third, "stat": stat, "title": title}))
    return out
