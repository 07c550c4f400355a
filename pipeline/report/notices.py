"""The report's plan of each partial synthesis and the warnings the run's units raised, both
read from the run's unit summaries (``summary.json``): variable names and counts, no values."""

from __future__ import annotations

import html

import pandas as pd

from pipeline.evaluation.reporting import ReportedRun
from pipeline.report.markup import table_html


def plans_section(run: ReportedRun) -> str:
    """Per partial synthesis its predictor matrix: one row per synthesised variable, in visit
    order, with its method and the variables that predict it."""
    parts = []
    for label, summary in run.summaries.items():
        matrix = summary.get("predictor_matrix") if isinstance(summary, dict) else None
        if matrix is None:
            continue
        method = summary.get("method", {})
        order = [v for v in summary.get("visit_sequence", list(matrix)) if v in matrix]
        table = pd.DataFrame(
            {
                "synthesised variable": order,
                "method": [method.get(v, "") if isinstance(method, dict) else "" for v in order],
                "predictors": [", ".join(matrix[v]) or "none" for v in order],
            }
        )
        parts.append(f"<h3>{html.escape(label)}</h3>" + table_html(table, text_columns=("predictors",)))
    if not parts:
        return ""
    return (
        '<section id="plans"><h2>Plan of each partial synthesis (predictor matrix)</h2>'
        "<p>Each synthesised variable is drawn from a model of the original data on these predictors; a "
        "variable with few of the kept variables as predictors is drawn with little regard to them.</p>"
        + "".join(parts)
        + "</section>"
    )


def warnings_section(run: ReportedRun) -> str:
    """Every warning of the run (the manifest's, :mod:`pipeline.run.notices`), with the units that raised it."""
    warned = run.manifest.get("warnings", [])
    if not warned:
        return ""
    table = pd.DataFrame({"warning": [w["warning"] for w in warned], "units": ["; ".join(w["units"]) for w in warned]})
    shown = table_html(table, text_columns=("warning", "units"))
    return f'<section id="warnings"><h2>Warnings ({len(warned)})</h2>' + shown + "</section>"
