"""Issue 36: the report shows every warning of the run (with the units that raised it) and the
plan (predictor matrix) of each partial synthesis."""

from __future__ import annotations

import re

from test_report_rows import outcome, rows, table

from pipeline.report import html as report_html

NOTE = "'Income' is synthesised with no predictors (drawn independently of the kept variables)"


def test_the_report_shows_the_run_s_warnings_and_each_partial_synthesis_plan():
    results = table(
        [
            {**r, "type": "partial"}
            for r in rows("synthesis", "synthesise", {"kind": "partial"}, {"n": {"original": 1000}}, source="p")
        ]
    )
    summaries = {
        "synthesise ce/p": {
            "method": {"Income": "cart", "Tenure": "cart", "Age": ""},
            "visit_sequence": ["Income", "Age", "Tenure"],
            "predictor_matrix": {"Income": [], "Tenure": ["Income", "Age"]},
            "warnings": [NOTE],
        }
    }
    run = outcome(results, [{"type": "profile"}], summaries)
    run.manifest["warnings"] = [{"warning": NOTE, "units": ["synthesise ce/p"]}]
    page = report_html.render(run)
    warnings = re.search(r'<section id="warnings">(.*?)</section>', page, re.S)
    assert warnings and "Warnings (1)" in warnings.group(1)
    assert "&#x27;Income&#x27; is synthesised with no predictors" in warnings.group(1)
    assert "synthesise ce/p" in warnings.group(1)
    plan = re.search(r'<section id="plans">(.*?)</section>', page, re.S)
    assert plan is not None
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", plan.group(1))
    assert cells == ["Income", "cart", "none", "Tenure", "cart", "Income, Age"]
    # no warnings, no partial synthesis: neither section
    quiet = report_html.render(outcome(results, [{"type": "profile"}]))
    assert 'id="warnings"' not in quiet and 'id="plans"' not in quiet
