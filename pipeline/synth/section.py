"""The synthesis rows' part of the report: the fit of each synthesis with plain names, units and
meanings (:mod:`pipeline.synth.glossary`), per margin and synthesised variable, and for DP releases
the ε trade-off plot. Fed by tidy rows only (aggregates)."""

from __future__ import annotations

import pandas as pd
from matplotlib import colormaps
from matplotlib.figure import Figure as MatplotlibFigure

from pipeline.evaluation.reporting import Block, Details, Figure, ReportedRun, Table, section_title
from pipeline.results import per_set
from pipeline.row_params import param_columns, unit_groups, value_text
from pipeline.synth.glossary import SYNTHESIS_TERMS, glossary_table, plain_name

RUN_GROUP = ["dataset", "source", "repetition", "measure_name"]
#: the synthesis rows given per margin or per synthesised variable (a table each), with its heading
PER_ITEM = {"margin": "margins", "variable": "synthesised variables"}


def synthesis_section(results: pd.DataFrame, run: ReportedRun | None = None) -> list[Block]:
    """The fit of each synthesis: its figures with plain names, units and meanings, per margin how
    far the released totals moved and how well the fit matches them, per synthesised variable the
    size of its model; with DP releases, the ε trade-off plot (from all of the run's rows)."""
    out: list[Block] = []
    rows = param_columns(results[results["synthetic"] == "original"], *PER_ITEM)
    for key, unit, sub in unit_groups(rows, RUN_GROUP):
        title = section_title(*key, unit)
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
        out.append(Table(table, f"{title}: fit"))
        for item, heading in PER_ITEM.items():
            per_item = sub[sub[item].notna()]
            if per_item.empty:
                continue
            items = per_item.assign(**{item: per_item[item].map(value_text)})
            wide = items.pivot_table(index=item, columns="measure", values="value", sort=False)
            glossary = glossary_table(list(wide.columns))
            wide = wide.rename(columns=plain_name)
            out += [
                Table(wide.reset_index(), f"{title}: {heading}"),
                Details("What the columns mean", (Table(glossary),)),
            ]
    if (results["measure"] == "dp_epsilon_spent").any():  # DP releases: the trade-off needs the whole run's rows
        out += dp_tradeoff_section(run.results if run is not None else results)
    return out


#: the utility and risk measures the DP trade-off plot shows, with the direction that is better
TRADEOFF_MEASURES = {
    "S_pMSE": "utility (lower is better)",
    "repU": "risk (lower is safer)",
    "DiSCO": "risk (lower is safer)",
}


def dp_tradeoff_section(results: pd.DataFrame) -> list[Block]:
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
    out: list[Block] = []
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
        caption = f"{dataset}: utility and risk of DP margins against epsilon, beside the other syntheses"
        out.append(Figure(caption, plot_dp_tradeoff, (lines,)))
    return out


def plot_dp_tradeoff(panels: list[tuple[str, str, pd.DataFrame, pd.Series]]) -> MatplotlibFigure:
    """One panel per (measure entry, measure, DP points ``eps``/``value``, other syntheses' values):
    the DP releases' values against ε (log scale), the other syntheses as horizontal lines."""
    fig = MatplotlibFigure(figsize=(3.6 * len(panels), 3.2), layout="constrained")
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
