"""HTML markup of the report: the families' blocks as HTML, their figures drawn in one batch
(:func:`blocks_html`), tables, the page style.

It imports only the blocks' declarations (:mod:`pipeline.evaluation.reporting`), so every report
module (and a nightly section) can use it without an import cycle.
"""

from __future__ import annotations

import base64
import ctypes
import hashlib
import html
import io
import multiprocessing
import os
import re
import signal
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from pipeline.evaluation.reporting import Block, Details, Figure, Heading, Markup, Paragraph, Table, number_text

CSS = """
body{font-family:system-ui,Segoe UI,Helvetica,Arial,sans-serif;margin:2em;max-width:1200px;color:#222}
h1{font-size:1.6em}h2{border-bottom:2px solid #446;padding-bottom:.2em;margin-top:2em}h3{margin-top:1.4em}
table{border-collapse:collapse;font-size:.85em;margin:.6em 0}
th,td{border:1px solid #bbb;padding:2px 6px;text-align:right}
th{background:#eef}td.l,th.l{text-align:left}.meta td{text-align:left}.fail{color:#b00;font-weight:bold}
.ok{color:#070;font-weight:bold}figure{margin:1em 0}figcaption{font-size:.85em;color:#555}
details{margin:.5em 0}.scroll{overflow-x:auto;max-width:100%}img{max-width:100%;height:auto}
td.pass{background:#e6f4e6;color:#070;font-weight:bold}td.attention{background:#fdecea;color:#b00;font-weight:bold}
#summary table{font-size:.95em}#summary td{text-align:left}td.pass,td.attention{white-space:nowrap}
td.text,th.text{text-align:left;overflow-wrap:anywhere;min-width:9em}p.verdict{margin:.35em 0}
"""

#: resolution of the embedded figures
DPI = 90


@dataclass
class FigureCache:
    """PNGs of report figures in a folder, by a digest of what draws them: the plotting function,
    the data and settings it is given, ``version`` (the package's code version) and matplotlib's.

    A figure whose digest is there is not drawn again (a rerun from cached units redraws
    nothing); :meth:`prune` removes the PNGs the last report did not use.
    """

    folder: Path
    version: str
    used: set[str] = field(default_factory=set)

    def get(self, digest: str) -> bytes | None:
        """The PNG kept for ``digest`` (None when there is none)."""
        self.used.add(digest)
        try:
            return (self.folder / f"{digest}.png").read_bytes()
        except OSError:
            return None

    def put(self, digest: str, png: bytes) -> bytes:
        """Keep ``png`` for ``digest``; returns it."""
        self.used.add(digest)
        path = self.folder / f"{digest}.png"
        self.folder.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_bytes(png)
        tmp.replace(path)
        return png

    def prune(self) -> None:
        """Remove the PNGs that the reports rendered with this cache did not use."""
        if self.folder.is_dir():
            for f in self.folder.iterdir():
                if f.suffix == ".png" and f.stem not in self.used:
                    f.unlink(missing_ok=True)


def _canonical(value: Any) -> Any:
    """A value as plain, exactly printable Python (frames by columns, dtypes, index and values),
    so that equal data give equal text in any process."""
    if isinstance(value, pd.DataFrame):
        return ("DataFrame", _canonical(list(value.columns)), [str(t) for t in value.dtypes],
                _canonical(list(value.index)), _canonical(value.to_numpy(dtype=object).tolist()))  # fmt: skip
    if isinstance(value, pd.Series):
        return ("Series", str(value.name), str(value.dtype), _canonical(list(value.index)), _canonical(value.tolist()))
    if isinstance(value, np.ndarray):
        return ("ndarray", str(value.dtype), value.shape, _canonical(value.tolist()))
    if isinstance(value, dict):
        return ("dict", [(_canonical(k), _canonical(v)) for k, v in value.items()])
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [_canonical(v) for v in value])
    if isinstance(value, np.generic):
        return value.item()
    return value


def figure_digest(plot: Callable[..., Any], args: tuple, kwargs: dict[str, Any], version: str) -> str:
    """The digest :class:`FigureCache` keeps a figure by (see there)."""
    what = (plot.__module__, plot.__qualname__, _canonical(args), _canonical(kwargs), version, matplotlib.__version__)
    return hashlib.sha256(repr(what).encode()).hexdigest()[:32]


def _wrap_titles(fig: Any) -> None:
    """Titles wrap at the figure's edges instead of running past them."""
    titles = [fig._suptitle] if fig._suptitle is not None else []
    for ax in fig.axes:
        titles += [ax.title, ax._left_title, ax._right_title]
    for t in titles:
        t.set_wrap(True)


def figure_png(fig: Any) -> bytes:
    """A matplotlib figure as PNG bytes (the figure is closed).

    Its titles wrap to the figure's width and constrained layout fits every label, title and
    legend inside the figure, so the figure is drawn once: ``bbox_inches="tight"`` would draw
    it twice, once to find how far its contents reach.
    """
    _wrap_titles(fig)
    if not isinstance(fig.get_layout_engine(), matplotlib.layout_engine.ConstrainedLayoutEngine):
        fig.set_layout_engine("constrained")
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
    plt.close(fig)
    return buf.getvalue()


#: processes that draw a report's figures at most (one per core)
DRAWING_PROCESSES = 2


def _img(caption: str, png: bytes) -> str:
    data = base64.b64encode(png).decode("ascii")
    return (
        f'<figure><img alt="{html.escape(caption)}" src="data:image/png;base64,{data}">'
        f"<figcaption>{html.escape(caption)}</figcaption></figure>"
    )


def _figures(blocks: Sequence[Block]) -> Iterator[Figure]:
    """The figures among ``blocks`` (folded ones included), in page order."""
    for b in blocks:
        if isinstance(b, Figure):
            yield b
        elif isinstance(b, Details):
            yield from _figures(b.blocks)


def draw_figures(figures: Sequence[Figure], cache: FigureCache | None = None) -> list[bytes]:
    """The PNGs of ``figures``, in one batch: those ``cache`` holds taken from it, the others drawn
    at once (:func:`_draw`) and kept there."""
    if cache is None:
        return _draw(figures)
    digests = [figure_digest(f.plot, f.args, dict(f.kwargs), cache.version) for f in figures]
    found = [cache.get(d) for d in digests]
    todo = [i for i, png in enumerate(found) if png is None]
    for i, png in zip(todo, _draw([figures[i] for i in todo]), strict=True):
        found[i] = cache.put(digests[i], png)
    return [png for png in found if png is not None]


def _block_html(block: Block, pngs: dict[int, bytes]) -> str:
    if isinstance(block, Figure):
        return _img(block.caption, pngs[id(block)])
    if isinstance(block, Table):
        heading = f"<h3>{html.escape(block.heading)}</h3>" if block.heading else ""
        classes = dict.fromkeys(block.status_columns, "")
        return heading + table_html(block.frame, cell_classes=classes, text_columns=block.text_columns)
    if isinstance(block, Heading):
        return f"<h3>{html.escape(block.text)}</h3>"
    if isinstance(block, Paragraph):
        css = f' class="{html.escape(block.css_class)}"' if block.css_class else ""
        return f"<p{css}>{html.escape(block.text)}</p>"
    if isinstance(block, Markup):
        return block.html
    inner = "".join(_block_html(b, pngs) for b in block.blocks)
    return f"<details><summary>{html.escape(block.summary)}</summary>{inner}</details>"


def blocks_html(blocks: Sequence[Block], cache: FigureCache | None = None) -> str:
    """``blocks`` as HTML, one after the other; their figures are drawn first, together
    (:func:`draw_figures`: up to :data:`DRAWING_PROCESSES` processes, ``cache`` first)."""
    figures = list(_figures(blocks))
    pngs = dict(zip(map(id, figures), draw_figures(figures, cache), strict=True))
    return "\n".join(_block_html(b, pngs) for b in blocks)


def _png_of(figure: Figure) -> bytes:
    return figure_png(figure.plot(*figure.args, **figure.kwargs))


#: Linux's prctl option naming the signal a process gets when the thread that forked it ends
_PR_SET_PDEATHSIG = 1


def _die_with(parent: int) -> None:
    """Start of a drawing process: have the kernel kill it when the run that forked it ends,
    however that ends (kill -9 included), so that no drawing process outlives its run."""
    with suppress(OSError, AttributeError):  # not Linux: the process ends when the pool's pipe breaks
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the run ended before the request took effect
        os._exit(1)


def _draw(figures: Sequence[Figure]) -> list[bytes]:
    """Draw figures: in forked processes (one per core, at most :data:`DRAWING_PROCESSES`) when
    there are several and the system forks — matplotlib and the data are already loaded there,
    so a process starts in milliseconds — else one after the other."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    processes = min(DRAWING_PROCESSES, cores, len(figures) - 1)
    if processes < 2 or "fork" not in multiprocessing.get_all_start_methods():
        return [_png_of(f) for f in figures]
    # the first figure drawn here loads the fonts and fills matplotlib's caches the processes inherit
    first = _png_of(figures[0])
    fork = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(processes, mp_context=fork, initializer=_die_with, initargs=(os.getpid(),)) as pool:
        return [first, *pool.map(_png_of, figures[1:])]


#: where a sentence column's long settings may break first (``keys=Urban+Tenure;target=Income``)
_BREAKS = re.compile(r"(?<=[+;=])(?=\S)")


def _breakable(text: str) -> str:
    """``text`` escaped, with a line-break opportunity (``<wbr>``) at each of :data:`_BREAKS`."""
    return "<wbr>".join(html.escape(part) for part in _BREAKS.split(text))


def table_html(
    frame: pd.DataFrame,
    float_format: str = "{:.4g}",
    css_class: str = "",
    cell_classes: dict[str, str] | None = None,
    text_columns: tuple[str, ...] = (),
) -> str:
    """A frame as an HTML table inside a box that scrolls sideways when the table is wide.

    ``cell_classes`` maps a column to a CSS class per value: the cell gets the class named by
    its own text (e.g. the ``status`` column's ``pass`` / ``attention``). ``text_columns`` hold
    sentences (notes, explanations): class ``text``, left-aligned and wrapped — first after
    ``+ ; =`` in a long setting such as ``keys=Urban+Tenure+Educ``, else anywhere — so that they
    never widen the table past the page (:data:`CSS`)."""

    def cell(col: str, v: Any) -> str:
        if isinstance(v, float):
            text = number_text(v, float_format)
        else:
            text = _breakable(str(v)) if col in text_columns else html.escape(str(v))
        if cell_classes and col in cell_classes:
            return f'<td class="{html.escape(str(v))}">{text}</td>'
        return f'<td class="text">{text}</td>' if col in text_columns else f"<td>{text}</td>"

    cols = [str(c) for c in frame.columns]
    text_class = ' class="text"'
    head = "".join(f"<th{text_class if c in text_columns else ''}>{html.escape(c)}</th>" for c in cols)
    body = "".join(
        "<tr>" + "".join(cell(c, v) for c, v in zip(cols, row, strict=True)) + "</tr>"
        for row in frame.itertuples(index=False)
    )
    table = f'<table class="{css_class}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
    return f'<div class="scroll">{table}</div>'
