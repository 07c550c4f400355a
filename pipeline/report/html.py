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
details{margin:.5em 0}
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


def table_html(frame: pd.DataFrame, float_format: str = "{:.6g}", css_class: str = "") -> str:
    def cell(v: Any) -> str:
        if isinstance(v, float):
            return "NA" if pd.isna(v) else float_format.format(v)
        return html.escape(str(v))

    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{cell(v)}</td>" for v in row) + "</tr>" for row in frame.itertuples(index=False)
    )
    return f'<table class="{css_class}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def wide_table(results: pd.DataFrame) -> pd.DataFrame:
    """Results of one family as a wide table: one row per dataset, source, repetition, measure
    entry, params and measure (labelled by the display setting), one column per synthetic set."""
    wide = results.pivot_table(
        index=["dataset", "source", "repetition", "measure_name", "params", "setting", "measure"],
        columns="synthetic",
        values="value",
        aggfunc="first",
        sort=False,
    )
    return wide.reset_index().drop(columns="params")


#: family -> function(results of the family, outcome) -> list of HTML fragments (plots)
PlotSection = Callable[[pd.DataFrame, Any], list[str]]


def _plot_sections() -> dict[str, PlotSection]:
    from pipeline.report import sections

    return sections.SECTIONS


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
        parts.append("<details><summary>All values (table)</summary>")
        parts.append(table_html(wide_table(sub)))
        parts.append("</details></section>")
    body = "\n".join(parts)
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>sdc-pipeline: '
        f"{html.escape(m['task'])}</title><style>{CSS}</style></head><body>{body}</body></html>"
    )


def write_report(outcome: Any, path: Path, extra_sections: list[str] | None = None) -> None:
    atomic_write_text(render(outcome, extra_sections), path)
