"""HTML markup of the report: embedded figures, number text, tables, the page style.

A leaf: it imports nothing of the package, so every report module (and a nightly section) can
use it without an import cycle.
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
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
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


_FIGURES: ContextVar[FigureCache | None] = ContextVar("figure_cache", default=None)


@contextmanager
def cached_figures(cache: FigureCache | None) -> Iterator[None]:
    """:func:`figure_html` inside the block takes its figures from ``cache`` (None: draws every one)."""
    token = _FIGURES.set(cache)
    try:
        yield
    finally:
        _FIGURES.reset(token)


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


@dataclass(frozen=True)
class _Figure:
    """A figure of the report: its caption and what draws it."""

    caption: str
    plot: Callable[..., Any]
    args: tuple
    kwargs: dict[str, Any]

    def png(self) -> bytes:
        return figure_png(self.plot(*self.args, **self.kwargs))


_PENDING: ContextVar[list[_Figure] | None] = ContextVar("pending_figures", default=None)
#: where a noted figure goes in the text of :func:`figures_drawn_together` (escaped text cannot hold it)
_PLACE = re.compile(r"<!--sdc-figure:(\d+)-->")
#: processes that draw a report's figures at most (one per core)
DRAWING_PROCESSES = 2


def _img(caption: str, png: bytes) -> str:
    data = base64.b64encode(png).decode("ascii")
    return (
        f'<figure><img alt="{html.escape(caption)}" src="data:image/png;base64,{data}">'
        f"<figcaption>{html.escape(caption)}</figcaption></figure>"
    )


def figure_html(caption: str, plot: Callable[..., Any], *args: Any, **kwargs: Any) -> str:
    """The figure ``plot(*args, **kwargs)`` draws, as an embedded PNG with a caption.

    Inside :func:`figures_drawn_together` the figure is only noted (a placeholder is returned)
    and drawn with the others; inside :func:`cached_figures` it is taken from the cache when the
    same function drew it from the same data before.
    """
    figure = _Figure(caption, plot, args, kwargs)
    pending = _PENDING.get()
    if pending is not None:
        pending.append(figure)
        return f"<!--sdc-figure:{len(pending) - 1}-->"
    return _img(caption, _drawn([figure])[0])


@contextmanager
def figures_drawn_together() -> Iterator[Callable[[str], str]]:
    """Inside the block :func:`figure_html` notes each figure and returns a placeholder; the
    function it yields puts the figures into a text that holds those placeholders, drawing the
    ones not cached at once, in up to :data:`DRAWING_PROCESSES` processes."""
    pending: list[_Figure] = []
    token = _PENDING.set(pending)

    def fill(text: str) -> str:
        pngs = _drawn(pending)
        return _PLACE.sub(lambda m: _img(pending[int(m.group(1))].caption, pngs[int(m.group(1))]), text)

    try:
        yield fill
    finally:
        _PENDING.reset(token)


def _drawn(figures: list[_Figure]) -> list[bytes]:
    """The PNGs of ``figures``: from the cache of :func:`cached_figures` (if any) those it holds,
    the others drawn (and kept there)."""
    cache = _FIGURES.get()
    if cache is None:
        return _draw(figures)
    digests = [figure_digest(f.plot, f.args, f.kwargs, cache.version) for f in figures]
    found = [cache.get(d) for d in digests]
    todo = [i for i, png in enumerate(found) if png is None]
    for i, png in zip(todo, _draw([figures[i] for i in todo]), strict=True):
        found[i] = cache.put(digests[i], png)
    return [png for png in found if png is not None]


def _png_of(figure: _Figure) -> bytes:
    return figure.png()


#: Linux's prctl option naming the signal a process gets when the thread that forked it ends
_PR_SET_PDEATHSIG = 1


def _die_with(parent: int) -> None:
    """Start of a drawing process: have the kernel kill it when the run that forked it ends,
    however that ends (kill -9 included), so that no drawing process outlives its run."""
    with suppress(OSError, AttributeError):  # not Linux: the process ends when the pool's pipe breaks
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the run ended before the request took effect
        os._exit(1)


def _draw(figures: list[_Figure]) -> list[bytes]:
    """Draw figures: in forked processes (one per core, at most :data:`DRAWING_PROCESSES`) when
    there are several and the system forks — matplotlib and the data are already loaded there,
    so a process starts in milliseconds — else one after the other."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    processes = min(DRAWING_PROCESSES, cores, len(figures) - 1)
    if processes < 2 or "fork" not in multiprocessing.get_all_start_methods():
        return [f.png() for f in figures]
    # the first figure drawn here loads the fonts and fills matplotlib's caches the processes inherit
    first = figures[0].png()
    fork = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(processes, mp_context=fork, initializer=_die_with, initargs=(os.getpid(),)) as pool:
        return [first, *pool.map(_png_of, figures[1:])]


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
    sentences (notes, explanations): class ``text``, left-aligned and wrapped anywhere, even in a
    long setting such as ``keys=Urban+Tenure+Educ``, so that they never widen the table past
    the page (:data:`CSS`)."""

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
