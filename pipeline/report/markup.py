"""HTML markup of the report: embedded figures, number text, tables, the page style.

A leaf: it imports nothing of the package, so every report module (and a nightly section) can
use it without an import cycle.
"""

from __future__ import annotations

import base64
import html
import io
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

CSS = """
body{font-family:system-ui,Segoe UI,Helvetica,Arial,sans-serif;margin:2em;max-width:1200px;color:#222}
h1{font-size:1.6em}h2{border-bottom:2px solid #446;padding-bottom:.2em;margin-top:2em}h3{margin-top:1.4em}
table{border-collapse:collapse;font-size:.85em;margin:.6em 0}
th,td{border:1px solid #bbb;padding:2px 6px;text-align:right}
th{background:#eef}td.l,th.l{text-align:left}.meta td{text-align:left}.fail{color:#b00;font-weight:bold}
.ok{color:#070;font-weight:bold}figure{margin:1em 0}figcaption{font-size:.85em;color:#555}
details{margin:.5em 0}.scroll{overflow-x:auto;max-width:100%}img{max-width:100%;height:auto}
td.pass{background:#e6f4e6;color:#070;font-weight:bold}td.attention{background:#fdecea;color:#b00;font-weight:bold}
#summary table{font-size:.95em}#summary td{text-align:left}#summary td:nth-child(7){min-width:22em}
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


NOISE = 1e-9


#: from here on a number reads as a whole number with thousands separators (not 2.816e+04)
WHOLE_FROM = 1e4


def number_text(v: float, float_format: str = "{:.4g}") -> str:
    """A number for reading: 4 significant digits, noise around 0 shown as 0, and from 10,000 on
    a whole number with separators (a count of 28,155 stored as 28154.999… reads 28,155; raw
    values are in ``results.csv``)."""
    if pd.isna(v):
        return "NA"
    if abs(v) < NOISE:
        return "0"
    if WHOLE_FROM <= abs(v) < 1e15:
        return f"{v:,.0f}"
    return float_format.format(v)


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
