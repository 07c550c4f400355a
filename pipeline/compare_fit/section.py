"""The compare_fit family's part of the report (model-based utility): per entry and model, synthpop's
coefficient plot and a table of the comparison per coefficient, with the lack-of-fit test.

Fed by tidy rows only (fitted coefficients and statistics: aggregates).
"""

from __future__ import annotations

import html

import pandas as pd

from pipeline.compare_fit.plots import plot_coefficients
from pipeline.evaluation.reporting import Block, Figure, Markup, ReportedRun, Table, number_text
from pipeline.row_params import param_columns, unit_groups

#: the per-coefficient columns of the table: (row measure, column title)
COEFFICIENT_COLUMNS = [
    ("std_diff", "std. coef diff"),
    ("ci_overlap", "CI overlap"),
    ("compare_z", "synthetic z"),
]


def compare_fit_section(results: pd.DataFrame, run: ReportedRun | None = None) -> list[Block]:
    """Per dataset, source, repetition, entry and model: the coefficient plot and the table."""
    out: list[Block] = []
    rows = param_columns(results, "formula", "coefficient")
    for (dataset, source, rep, name, formula), unit, sub in unit_groups(
        rows, ["dataset", "source", "repetition", "measure_name", "formula"]
    ):
        title = f"{name}: {dataset} / {source}" + (f" (repetition {rep})" if rep else "") + f" — {formula}"
        if unit:
            title += f" [{unit}]"
        out.append(Figure(f"{title}: z values of the original and synthetic fits", plot_coefficients, (sub,)))
        mean = sub[sub["synthetic"] == "mean"]
        per_coef = mean[mean["coefficient"].notna()]
        table = per_coef.pivot_table(index="coefficient", columns="measure", values="value", sort=False)
        shown = pd.DataFrame({"coefficient": table.index})
        for measure, label in COEFFICIENT_COLUMNS:
            shown[label] = [number_text(v) for v in table.get(measure, pd.Series(index=table.index)).to_numpy()]
        scalars = mean[mean["coefficient"].isna()].set_index("measure")["value"]
        facts = [f"{k}: {number_text(scalars[k])}" for k in ("mean_ci_overlap", "mean_abs_std_diff", "lack_of_fit",
                                                               "lof_pvalue") if k in scalars]  # fmt: skip
        if "lack_of_fit" not in scalars:
            facts.append("no lack-of-fit test (incomplete synthesis with fewer syntheses than coefficients)")
        fresh = _holdout_facts(run, mean[mean["coefficient"].isna()])
        out += [Markup(f"<h3>{html.escape(title)}</h3><p>{html.escape('; '.join(facts))}</p>{fresh}"), Table(shown)]
    return out


def _holdout_facts(run: ReportedRun | None, scalars: pd.DataFrame) -> str:
    """The same figures with the holdout in the synthetic sets' place (rows ``role`` holdout of
    the run, matched on the unit's scalar rows), when the dataset has a holdout."""
    results = None if run is None else run.results
    if results is None or "role" not in results.columns or scalars.empty:
        return ""
    keys = ["dataset", "source", "repetition", "measure_name", "params", "measure"]
    held = results[results["role"] == "holdout"].merge(scalars[keys].drop_duplicates(), on=keys)
    values = held.set_index("measure")["value"]
    facts = [f"{k}: {number_text(values[k])}" for k in ("mean_ci_overlap", "mean_abs_std_diff") if k in values]
    if not facts:
        return ""
    return f"<p>a fresh sample (the holdout in the synthetic sets' place): {html.escape('; '.join(facts))}</p>"
