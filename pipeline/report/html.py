"""Write a run's self-contained HTML report: metadata, one section per measure family with its
tables and plots (PNG embedded as data URIs), and for nightly runs the gate comparison.

Only aggregates appear (the tidy results and the plots made from them).
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

from pipeline.results import atomic_write_text

FAMILY_TITLES = {
    "profile": "Data profiles and key blocks",
    "disclosure": "Disclosure risk (synthpop identity and attribute measures)",
    "identification_risk": "Identification risk (Hornby & Hu)",
    "utility": "Utility",
    "synthesis": "Synthesis from coarsened margins",
}

CSS = """
body{font-family:system-ui,Segoe UI,Helvetica,Arial,sans-serif;margin:2em;max-width:1200px;color:#222}
h1{font-size:1.6em}h2{border-bottom:2px solid #446;padding-bottom:.2em;margin-top:2em}h3{margin-top:1.4em}
table{border-collapse:collapse;font-size:.85em;margin:.6em 0}
th,td{border:1px solid #bbb;padding:2px 6px;text-align:right}
th{background:#eef}td.l,th.l{text-align:left}.meta td{text-align:left}.fail{color:#b00;font-weight:bold}
.ok{color:#070;font-weight:bold}figure{margin:1em 0}figcaption{font-size:.85em;color:#555}
details{margin:.5em 0}.scroll{overflow-x:auto;max-width:100%}img{max-width:100%;height:auto}
td.pass{background:#e6f4e6;color:#070;font-weight:bold}td.attention{background:#fdecea;color:#b00;font-weight:bold}
#summary table{font-size:.95em}#summary td{text-align:left}
"""


def figure_html(fig: Any, caption: str) -> str:
    """A matplotlib figure as an embedded PNG with a caption (the figure is closed)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    data = base64.b64encode(buf.getvalue()).decode("ascii")
    return (
        f'<figure><img alt="{html.escape(caption)}" src="data:image/png;base64,{data}">'
        f"<figcaption>{html.escape(caption)}</figcaption></figure>"
    )


#: below this magnitude a value shown in a table is floating-point noise around 0
NOISE = 1e-9


def number_text(v: float, float_format: str = "{:.4g}") -> str:
    """A number for reading: 4 significant digits, noise around 0 shown as 0 (raw values are in
    ``results.csv``)."""
    if pd.isna(v):
        return "NA"
    return "0" if abs(v) < NOISE else float_format.format(v)


def table_html(
    frame: pd.DataFrame, float_format: str = "{:.4g}", css_class: str = "", cell_classes: dict[str, str] | None = None
) -> str:
    """A frame as an HTML table inside a box that scrolls sideways when the table is wide.

    ``cell_classes`` maps a column to a CSS class per value: the cell gets the class named by
    its own text (e.g. the ``status`` column's ``pass`` / ``attention``)."""

    def cell(col: str, v: Any) -> str:
        text = number_text(v, float_format) if isinstance(v, float) else html.escape(str(v))
        cls = f' class="{html.escape(str(v))}"' if cell_classes and col in cell_classes else ""
        return f"<td{cls}>{text}</td>"

    cols = [str(c) for c in frame.columns]
    head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
    body = "".join(
        "<tr>" + "".join(cell(c, v) for c, v in zip(cols, row, strict=True)) + "</tr>"
        for row in frame.itertuples(index=False)
    )
    table = f'<table class="{css_class}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
    return f'<div class="scroll">{table}</div>'


#: family -> function(results of the family, outcome) -> list of HTML fragments (plots)
PlotSection = Callable[[pd.DataFrame, Any], list[str]]


def _plot_sections() -> dict[str, PlotSection]:
    from pipeline.report import sections

    return sections.SECTIONS


def summary_section(outcome: Any) -> str:
    """The first screen: per release the headline risk and utility against the task's gates or
    the rules of thumb (:mod:`pipeline.report.summary`), each marked pass or attention."""
    from pipeline.report.summary import release_summary

    table = release_summary(outcome.results, outcome.manifest)
    if table.empty:
        return ""
    releases = zip(table["dataset"], table["source"], table["repetition"], strict=True)
    shown = table.assign(release=[f"{d} / {s}" + (f" #{r}" if r else "") for d, s, r in releases])
    shown = shown[["release", "headline", "value", "threshold", "basis", "status", "note"]]
    return (
        '<section id="summary"><h2>Summary: is each release safe and useful?</h2>'
        + table_html(shown, cell_classes={"status": ""})
        + "<p>Thresholds: the task's nightly gates where it has them, else the rules of thumb in "
        "docs/architecture.md (report summary). <em>attention</em> means look closer, not reject.</p></section>"
    )


def render(outcome: Any, extra_sections: list[str] | None = None) -> str:
    """The whole report as an HTML string."""
    m = outcome.manifest
    res = outcome.results
    meta = pd.DataFrame(
        [
            ("task", m["task"]),
            ("run id", m["run_id"]),
            ("started (UTC)", m["started_utc"]),
            ("duration", f"{m['seconds']:.1f} s"),
            ("cluster", m["cluster"].get("type")),
            ("seed", m["seed"]),
            ("units", len(m["units"])),
            ("result rows", m["rows"]),
            ("sdc-pipeline", m["versions"]["sdc-pipeline"]),
            ("dask", m["versions"]["dask"]),
        ],
        columns=["item", "value"],
    )
    parts = [
        f"<h1>sdc-pipeline report — {html.escape(m['task'])}</h1>",
        summary_section(outcome),
        '<section id="metadata"><h2>Run</h2>',
        table_html(meta, css_class="meta"),
        "</section>",
    ]
    parts += extra_sections or []
    plots = _plot_sections()
    for family in dict.fromkeys(res["family"]):
        sub = res[res["family"] == family]
        title = FAMILY_TITLES.get(family, family)
        parts.append(f'<section id="{html.escape(family)}"><h2>{html.escape(title)}</h2>')
        if family in plots:
            parts += plots[family](sub, outcome)
        parts.append(
            f'<p class="raw">All {len(sub)} values of this section, unrounded: the run\'s '
            '<a href="results.csv" download>results.csv</a> (and results.parquet) beside this report.</p></section>'
        )
    body = "\n".join(parts)
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>sdc-pipeline: '
        f"{html.escape(m['task'])}</title><style>{CSS}</style></head><body>{body}</body></html>"
    )


def write_report(outcome: Any, path: Path, extra_sections: list[str] | None = None) -> None:
    atomic_write_text(render(outcome, extra_sections), path)
