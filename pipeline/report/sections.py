"""Plots per measure family, made from the tidy results only (so cached and resumed units
report exactly like fresh ones).

Every section reads the rows' structured ``params`` through :mod:`pipeline.row_params` and
shows the display ``setting`` only as a label; it shows aggregates only (the rows' values and
their means or maxima over synthetic sets), never record values.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
from matplotlib import colormaps
from matplotlib.figure import Figure

from pipeline.report.attacks import attack_section
from pipeline.report.compare_fit import compare_fit_section
from pipeline.report.distance import distance_section
from pipeline.report.glossary import SYNTHESIS_TERMS, glossary_table, plain_name
from pipeline.report.markup import figure_html, table_html
from pipeline.results import per_set
from pipeline.risk.disclosure.plots import plot_disclosure_rows
from pipeline.risk.idrisk.plots import (
    IDRISK_RUN,
    boxplot_points,
    plot_2d_boxplot,
    plot_risk_at_max_radius,
    plot_risk_by_radius,
    plot_utility_risk,
    risk_by_radius,
    risk_points,
    utility_points,
)
from pipeline.risk.sdcrisk.plots import plot_suda_contributions
from pipeline.row_params import UNIT, param_columns, unit_groups, value_text
from pipeline.utility.plots import plot_compare_rows, plot_multi_compare, plot_spmse_by_set, plot_utility_tables

RUN_GROUP = ["dataset", "source", "repetition", "measure_name"]


def measure_types(outcome: Any) -> dict[str, str]:
    """Measure name of each task entry (its ``name``, else its type) -> its task type, from the
    task recorded in the run's manifest."""
    return {m.get("name") or m["type"]: m["type"] for m in outcome.manifest["task_spec"]["measures"]}


def _title(dataset: str, source: str, rep: int, name: str, unit: str = "") -> str:
    where = f"{dataset} / {source}" if source else dataset
    return f"{name}: {where}" + (f" (repetition {rep})" if rep else "") + (f" [{unit}]" if unit else "")


def _size_label(size_from: int, size_to: int | None) -> str:
    if size_to is None:
        return f"{size_from}+"
    return str(size_from) if size_from == size_to else f"{size_from}–{size_to}"


def profile_section(results: pd.DataFrame, outcome: Any) -> list[str]:
    """Key-combination size distribution (the ``combinations`` rows of each size bucket),
    original vs synthetic sets."""
    out = []
    buckets = param_columns(results[results["measure"] == "combinations"], "size_from", "size_to")
    buckets = buckets[buckets["size_from"].notna()]
    for key, unit, sub in unit_groups(buckets, RUN_GROUP):
        title = _title(*key, unit)
        sizes = sub.assign(size=[_size_label(a, b) for a, b in zip(sub["size_from"], sub["size_to"], strict=True)])
        counts = sizes.pivot_table(index="size", columns="synthetic", values="value", sort=False)
        caption = f"{title}: key-combination sizes, original vs synthetic sets"
        out.append(figure_html(caption, plot_key_sizes, counts, title))
    return out


def plot_key_sizes(counts: pd.DataFrame, title: str) -> Figure:
    """Key combinations per size bucket (rows) of the original and each synthetic set (columns)."""
    fig = Figure(figsize=(7, 3.2), layout="constrained")
    ax = fig.subplots()
    counts.plot.bar(ax=ax, rot=0)
    ax.set_xlabel("records per key combination")
    ax.set_ylabel("key combinations")
    ax.set_title(title)
    return fig


def disclosure_section(results: pd.DataFrame, outcome: Any) -> list[str]:
    """Per dataset, measure entry and key set: the repU/DiSCO vs UiO/Dorig plot of every source
    (first repetition) and one table of every source, repetition and target."""
    out = []
    rows = param_columns(results, "keys", "target")
    rows = rows[rows["target"].notna()]
    for (dataset, name, keys), unit, sub in unit_groups(rows, ["dataset", "measure_name", "keys"]):
        about = f"keys: {value_text(keys)}" + (f"; {unit}" if unit else "")
        for source, first in sub[sub["repetition"] == 0].groupby("source", sort=False):
            title = f"{name}: {dataset} / {source} ({about})"
            out.append(figure_html(f"{title}: original vs synthetic", plot_disclosure_rows, first, title))
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
        out.append(f"<h3>{name}: {dataset} ({about})</h3>" + table_html(pd.DataFrame(table)))
    return out


def identification_risk_section(results: pd.DataFrame, outcome: Any) -> list[str]:
    """Risk by radius (r* marked), risk at the maximising radius, and the utility–risk plots."""
    utility_gen = [name for name, kind in measure_types(outcome).items() if kind == "utility_gen"]
    return identification_risk_figures(outcome.results, utility_gen)


def _idrisk_title(dataset: str, source: str, rep: int, name: str, unit: str) -> str:
    return f"{name}: {dataset} / {source}" + (f" (repetition {rep})" if rep else "") + (f" [{unit}]" if unit else "")


def identification_risk_figures(results: pd.DataFrame, utility_gen: list[str]) -> list[str]:
    """Figs. 6-10 of the run's identification-risk rows (``utility_gen``: the measure names of the
    run's utility_gen entries, for the utility axis of Figs. 8-10)."""
    out: list[str] = []
    # one Fig. 6 per source and measure entry: a repeated study (the m-study: 3 sources x 100+
    # repetitions) would otherwise draw hundreds of near-identical sweeps and spend most of the
    # report's time on them; the other repetitions' sweeps and r* stay in the results table
    drawn: set[tuple[Any, ...]] = set()
    not_drawn = 0
    for (dataset, source, rep, name), unit, sub in unit_groups(risk_by_radius(results), IDRISK_RUN):
        swept = sub.groupby("scenario", sort=False)["radius"].nunique()
        sub = sub[sub["scenario"].isin(swept.index[swept > 1])]
        if sub.empty:
            continue
        if (dataset, source, name, unit) in drawn:
            not_drawn += 1
            continue
        drawn.add((dataset, source, name, unit))
        title = _idrisk_title(dataset, source, rep, name, unit)
        out.append(
            figure_html(
                f"{title}: risk across synthetic sets for each radius, r* marked (Hornby & Hu Fig. 6)",
                plot_risk_by_radius,
                sub,
                title=title,
            )
        )
    if not_drawn:
        out.append(
            f"<p>Fig. 6 is drawn for the first repetition of each source; the radius sweeps of {not_drawn} "
            "further repetitions (and each one's r*) are rows of the results table (measures file_risk, r_star).</p>"
        )
    best = risk_points(results)
    if best.empty:
        return out
    labelled = pd.concat(
        [
            part.assign(
                scenario=[f"{dataset}/{source}: {sc}" + (f" [{unit}]" if unit else "") for sc in part["scenario"]]
            )
            for (dataset, source, _), unit, part in unit_groups(best, ["dataset", "source", "measure_name"])
        ]
    )
    out.append(
        figure_html(
            "Identification risk per scenario at its maximising radius (Hornby & Hu Fig. 7)",
            plot_risk_at_max_radius,
            labelled,
        )
    )
    joined = labelled.merge(utility_points(results, utility_gen), on=["dataset", "source", "repetition", "synthetic"])
    if joined.empty:
        out.append("<p>Utility–risk plots need a utility_gen measure on the same data and sources.</p>")
        return out
    label = "S_pMSE (lower = more useful)"
    out.append(
        figure_html(
            "Utility–risk trade-off: one point per synthetic set at the maximising "
            "radius; rectangles span the quartiles of both axes (Hornby & Hu Figs. 8–9)",
            plot_utility_risk,
            joined[["scenario", "utility", "risk"]],
            utility_label=label,
        )
    )
    out.append(
        figure_html(
            "2D boxplot per synthetic source: interquartile rectangles and min–max "
            "whiskers of utility and risk; a repeated source has one point per repetition, the "
            "mean over its m sets (Hornby & Hu Fig. 10)",
            plot_2d_boxplot,
            boxplot_points(joined),
            group="source",
            utility_label=label,
        )
    )
    return out


#: the utility section's figures of synthpop's compare functions: task type, plot, caption
COMPARE_PLOTS = (
    ("compare", plot_compare_rows, "distributions of the original and the pooled synthetic sets"),
    ("multi_compare", plot_multi_compare, "the variable by group in the original and the synthetic data"),
)


def utility_section(results: pd.DataFrame, outcome: Any) -> list[str]:
    """Per dataset and utility_gen / utility_tab entry: S_pMSE of every synthetic set, one row per
    source, repetition and setting (sources side by side); per utility_tables entry and source
    its heat map."""
    tables = [name for name, kind in measure_types(outcome).items() if kind == "utility_tables"]
    out = []
    spmse = per_set(results[(results["measure"] == "S_pMSE") & ~results["measure_name"].isin(tables)])
    for (dataset, name), sub in spmse.groupby(["dataset", "measure_name"], sort=False):
        labels, values = [], []
        for (source, rep, _), cell in sub.groupby(["source", "repetition", "params"], sort=False):
            setting = cell["setting"].iloc[0]
            labels.append(source + (f" #{rep}" if rep else "") + (f" [{setting}]" if setting else ""))
            values.append(cell["value"].to_numpy())
        caption = f"{name}: {dataset}: S_pMSE of each synthetic set by source (bar: mean)"
        out.append(figure_html(caption, plot_spmse_by_set, labels, values, title=f"{name}: {dataset}"))
    out += _table_heat_maps(per_set(results[results["measure_name"].isin(tables)]))
    synds = [name for name, kind in measure_types(outcome).items() if kind == "utility_synds"]
    out += utility_synds_tables(results[results["measure_name"].isin(synds)])
    for kind, plot, what in COMPARE_PLOTS:
        names = [name for name, k in measure_types(outcome).items() if k == kind]
        for (dataset, name, source, rep), sub in results[results["measure_name"].isin(names)].groupby(
            ["dataset", "measure_name", "source", "repetition"], sort=False
        ):
            title = _title(dataset, source, rep, name)
            out.append(figure_html(f"{title}: {what}", plot, sub, title))
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


def utility_synds_tables(rows: pd.DataFrame) -> list[str]:
    """Per dataset, utility_synds entry, source and repetition: one row per propensity method
    with the mean/SD of pMSE and deviance and the pairwise-null summary (synthpop 1.2-1)."""
    out = []
    summary = param_columns(rows[rows["synthetic"] == "mean"], "method", row_keys=["method", "all_comb"])
    for (dataset, source, rep, name), unit, sub in unit_groups(summary, RUN_GROUP):
        wide = sub.pivot_table(index="method", columns="measure", values="value", aggfunc="first", sort=False)
        wide = wide[[c for c in SYNDS_SUMMARY if c in wide.columns]].rename(columns=SYNDS_SUMMARY)
        out.append(f"<h3>{_title(dataset, source, rep, name, unit)}</h3>" + table_html(wide.reset_index()))
    return out


def _table_heat_maps(rows: pd.DataFrame) -> list[str]:
    """synthpop's utility.tables heat map per entry, setting and source, of the entry's
    ``plot_stat`` (else S_pMSE) averaged over synthetic sets and repetitions."""
    out = []
    for (dataset, name, source), unit, sub in unit_groups(
        param_columns(rows, "vars"), ["dataset", "measure_name", "source"]
    ):
        settings = dict(sub[UNIT].iloc[0])
        stat, third = settings.get("plot_stat", "S_pMSE"), settings.get("third_var")
        values = sub[sub["measure"] == stat].groupby("vars", sort=False)["value"].mean()
        if values.empty:
            continue
        title = _title(dataset, source, 0, name, unit)
        if len(values.index[0]) == 3 and third is None:
            out.append(f"<p>{title}: the three-way heat map needs the task to name its <code>third_var</code>.</p>")
            continue
        tables = pd.DataFrame({"vars": list(values.index), "value": values.to_numpy()})
        caption = f"{title}: table utility heat map ({stat}, mean over synthetic sets)"
        out.append(figure_html(caption, plot_utility_tables, tables, third_var=third, stat=stat, title=title))
    return out


#: the synthesis rows given per margin or per synthesised variable (a table each), with its heading
PER_ITEM = {"margin": "margins", "variable": "synthesised variables"}


def synthesis_section(results: pd.DataFrame, outcome: Any) -> list[str]:
    """The fit of each synthesis: its figures with plain names, units and meanings
    (:mod:`pipeline.report.glossary`), per margin how far the released totals moved and how well
    the fit matches them, per synthesised variable the size of its model; with DP releases, the ε
    trade-off plot (from all of the run's rows)."""
    out = []
    rows = param_columns(results[results["synthetic"] == "original"], *PER_ITEM)
    for key, unit, sub in unit_groups(rows, RUN_GROUP):
        title = _title(*key, unit)
        fit = sub[sub[list(PER_ITEM)].isna().all(axis=1)]
        terms = [SYNTHESIS_TERMS.get(m) for m in fit["measure"]]
        table = pd.DataFrame(
            {
                "figure": [t.name if t else m for t, m in zip(terms, fit["measure"], strict=True)],
                "value": fit["value"].to_numpy(),
                "unit": [t.unit if t else "" for t in terms],
                "meaning": [t.meaning if t else "" for t in terms],
                "in results.csv": fit["measure"].to_numpy(),
            }
        )
        out.append(f"<h3>{title}: fit</h3>" + table_html(table))
        for item, heading in PER_ITEM.items():
            per_item = sub[sub[item].notna()]
            if per_item.empty:
                continue
            items = per_item.assign(**{item: per_item[item].map(value_text)})
            wide = items.pivot_table(index=item, columns="measure", values="value", sort=False)
            glossary = glossary_table(list(wide.columns))
            wide = wide.rename(columns=plain_name)
            out.append(
                f"<h3>{title}: {heading}</h3>"
                + table_html(wide.reset_index())
                + "<details><summary>What the columns mean</summary>"
                + table_html(glossary)
                + "</details>"
            )
    if (results["measure"] == "dp_epsilon_spent").any():  # DP releases: the trade-off needs the whole run's rows
        out += dp_tradeoff_section(getattr(outcome, "results", results))
    return out


#: the utility and risk measures the DP trade-off plot shows, with the direction that is better
TRADEOFF_MEASURES = {
    "S_pMSE": "utility (lower is better)",
    "repU": "risk (lower is safer)",
    "DiSCO": "risk (lower is safer)",
}


def dp_tradeoff_section(results: pd.DataFrame) -> list[str]:
    """Per dataset with differentially private releases: utility (S_pMSE) and risk (repU,
    DiSCO) against the release's ε (log scale), beside the dataset's other synthesised sources
    (e.g. coarsened margins V1/V2/V3) drawn as horizontal lines. Values are means over
    synthetic sets, repetitions and settings of each measure entry."""
    eps = results[results["measure"] == "dp_epsilon_spent"].groupby(["dataset", "source"])["value"].mean()
    if eps.empty:
        return []
    syn = results[results["family"] == "synthesis"]
    synthesised = set(zip(syn["dataset"], syn["source"], strict=True))
    shown = results["measure"].isin(TRADEOFF_MEASURES) & results["family"].isin(["utility", "disclosure"])
    rows = per_set(results[shown])
    means = rows.groupby(["dataset", "measure_name", "measure", "source"])["value"].mean()
    out = []
    for dataset in eps.index.get_level_values("dataset").unique():
        panels = means.loc[dataset].index.droplevel("source").unique() if dataset in means.index else []
        panels = sorted(panels, key=lambda p: (list(TRADEOFF_MEASURES).index(p[1]), p[0]))  # utility first
        if len(panels) == 0:
            continue
        lines = []
        for name, measure in panels:
            vals = means.loc[(dataset, name, measure)]
            dp = pd.DataFrame({"eps": eps.loc[dataset], "value": vals}).dropna().sort_values("eps")
            others = [s for s in vals.index if s not in eps.loc[dataset].index and (dataset, s) in synthesised]
            lines.append((name, measure, dp, vals[others]))
        out.append(
            figure_html(
                f"{dataset}: utility and risk of DP margins against epsilon, beside the other syntheses",
                plot_dp_tradeoff,
                lines,
            )
        )
    return out


def plot_dp_tradeoff(panels: list[tuple[str, str, pd.DataFrame, pd.Series]]) -> Figure:
    """One panel per (measure entry, measure, DP points ``eps``/``value``, other syntheses' values):
    the DP releases' values against ε (log scale), the other syntheses as horizontal lines."""
    fig = Figure(figsize=(3.6 * len(panels), 3.2), layout="constrained")
    axes = fig.subplots(1, len(panels), squeeze=False)
    for ax, (name, measure, dp, others) in zip(axes[0], panels, strict=True):
        ax.plot(dp["eps"], dp["value"], "o-", color="#1b9e77", label="DP margins")
        for i, (src, value) in enumerate(others.items()):
            ax.axhline(value, color=colormaps["Dark2"](i + 1), ls="--", lw=1, label=src)
        ax.set_xscale("log")
        ax.set_xlabel("overall epsilon of the release")
        ax.set_title(f"{name}: {measure}\n{TRADEOFF_MEASURES[measure]}", fontsize=9)
    axes[0][0].legend(fontsize=7)
    return fig


#: the sdc_risk table's columns: (measure, params it must have or None) -> column
SDC_RISK_COLUMNS = {
    "global_risk": "global risk",
    "expected_reidentifications": "expected re-identifications",
    "sample_uniques": "sample uniques",
    "kanon_violations": "k-anonymity violations (k = 3)",
    "dis_suda_mean": "DIS-SUDA (mean)",
    "uniques_matching_original_uniques_pct": "uniques on original uniques (%)",
}


def sdc_risk_section(results: pd.DataFrame, outcome: Any) -> list[str]:
    """Per dataset, measure entry and key set: which variables drive the risk (SUDA2
    contributions, first repetition of each source) and a table of sdcMicro's risk figures of
    the original and the synthetic sets (their mean)."""
    out = []
    rows = param_columns(
        results, "keys", "k", "weighted", row_keys=["keys", "k", "weighted", "variable", "sensitive", "method"]
    )
    rows = rows[rows["keys"].notna() & (rows["k"].isna() | ((rows["k"] == 3) & (rows["weighted"] == False)))]  # noqa: E712
    for (dataset, name, keys), unit, sub in unit_groups(rows, ["dataset", "measure_name", "keys"]):
        about = f"keys: {value_text(keys)}" + (f"; {unit}" if unit else "")
        for source, first in sub[sub["repetition"] == 0].groupby("source", sort=False):
            if (first["measure"] == "suda_contribution").any():
                title = f"{name}: {dataset} / {source} ({about})"
                out.append(figure_html(f"{title}: which variables drive the risk", plot_suda_contributions, first))
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
        out.append(f"<h3>{name}: {dataset} ({about})</h3>" + table_html(pd.DataFrame(table)))
    return out


SECTIONS = {
    "profile": profile_section,
    "disclosure": disclosure_section,
    "identification_risk": identification_risk_section,
    "utility": utility_section,
    "synthesis": synthesis_section,
    "attacks": attack_section,
    "distance": distance_section,
    "compare_fit": compare_fit_section,
    "sdcrisk": sdc_risk_section,
}
