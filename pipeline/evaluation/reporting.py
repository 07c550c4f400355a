"""What a measure family tells the report about itself: the title and content of its section, its
headlines on the first screen, and the row names its measures produce.

A family declares them on its :class:`~pipeline.evaluation.base.Measure` classes (``report_section``,
``headlines``, ``row_measures``, beside ``holdout_view``; a synthesiser on its class, the run's own
rows in :mod:`pipeline.measures`), and the report reads them through the registry by the rows'
``type``: adding a family touches no file of ``pipeline/report/``.

A section is a function ``section(rows, run) -> list[Block]`` in the family's ``section.py``: the
family's own rows (not their holdout baselines and summaries over sets) and the whole run
(:class:`ReportedRun`), giving plain blocks — headings, paragraphs, tables, figures — that the
report lays out and whose figures it draws in one batch. Nothing here imports matplotlib or the
report.

A headline is judged like SDMetrics' metrics declare it: a ``goal`` (lower or higher is better)
and a threshold in the rows' unit; a task's gate on the same row measure replaces the threshold.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:  # the registry reads these declarations before pandas is needed
    import pandas as pd

#: which way a headline figure is better (SDMetrics' ``goal``)
Goal = Literal["minimize", "maximize"]


# ---- blocks: what a section is made of ---------------------------------------------------------


@dataclass(frozen=True)
class Heading:
    """A sub-heading of a section (plain text)."""

    text: str


@dataclass(frozen=True)
class Paragraph:
    """A paragraph of plain text; ``css_class`` ``warning`` marks a warning."""

    text: str
    css_class: str = ""


@dataclass(frozen=True)
class Markup:
    """A paragraph the family writes as markup itself (fixed text with emphasis or code, no data)."""

    html: str


@dataclass(frozen=True, eq=False)
class Table:
    """A table of aggregates under its sub-heading (none: ""); the cells of the ``status_columns``
    get their own text as a CSS class (``pass`` / ``attention``); the ``text_columns`` hold
    sentences (notes, explanations), wrapped within the page."""

    frame: pd.DataFrame
    heading: str = ""
    status_columns: tuple[str, ...] = ()
    text_columns: tuple[str, ...] = ()


@dataclass(frozen=True, eq=False)
class Figure:
    """A figure ``plot(*args, **kwargs)`` (a matplotlib ``Figure``) with its caption; the report
    draws every figure of a page in one batch (and takes the ones it drew before from its cache)."""

    caption: str
    plot: Callable[..., Any]
    args: tuple = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Details:
    """Blocks shown folded, under a one-line summary."""

    summary: str
    blocks: tuple[Block, ...]


Block = Heading | Paragraph | Markup | Table | Figure | Details


# ---- what a section is given -------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class ReportedRun:
    """The run a report is about: its tidy rows (without ``run_id``), manifest and unit summaries."""

    results: pd.DataFrame
    manifest: Mapping[str, Any]
    summaries: Mapping[str, Any] = field(default_factory=dict)


#: a family's section: its own rows and the whole run -> the section's blocks
SectionFunction = Callable[["pd.DataFrame", ReportedRun], list[Block]]


@dataclass(frozen=True)
class ReportSection:
    """A family's section of the report: its title, its anchor (the family's name unless given)
    and where its content is made (``"module:function"``, a :data:`SectionFunction`; None: the
    title and the pointer to the raw values only). Measures of one family declare the same one."""

    title: str
    content: str | None = None
    anchor: str | None = None

    def blocks(self, rows: pd.DataFrame, run: ReportedRun) -> list[Block]:
        return _load(self.content)(rows, run) if self.content else []


# ---- headlines ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Explanation:
    """A flag row a measure emits per synthetic set (non-zero: raised) and what it says of a
    headline's figure; ``text`` is formatted with ``sets`` ("every synthetic set", "2 of 5
    synthetic sets") and ``largest`` (the flag's largest value). A fact about how the figure is
    made is shown whatever the status (``always``); a warning only beside *attention*."""

    flag: str
    text: str
    always: bool = False


@dataclass(frozen=True)
class HeadlineDetail:
    """What a family adds to its headline for one release: the note (instead of the worst
    setting's name), ``attention`` whatever the value, or — ``judged`` — the whole line judged
    otherwise (e.g. against the holdout): (label, value, threshold, basis), shown as they are,
    *attention* exactly when ``attention``."""

    note: str
    attention: bool = False
    judged: tuple[str, float, float, str] | None = None


#: a family's headline details: (the run's own rows, all its rows) -> per release (dataset,
#: source, repetition) its :class:`HeadlineDetail`
DetailFunction = Callable[["pd.DataFrame", "pd.DataFrame"], Mapping[tuple[Any, ...], HeadlineDetail]]


@dataclass(frozen=True)
class Headline:
    """One figure of a release on the report's first screen.

    Attributes
    ----------
    label : str
        What the first screen calls it, with its unit; distinct among all headlines.
    measure : str
        The row measure it reads (of the declaring measure's type).
    statistic : {"max", "mean"}
        How the synthetic sets combine (:func:`pipeline.gates.gate_value`); the worst setting is shown.
    threshold : float
        The rule of thumb, in the rows' unit; a task's gate on ``measure`` replaces it.
    goal : {"minimize", "maximize"}
        Lower (``minimize``: *attention* above the threshold) or higher is better.
    scale, unit : float, str
        Shown times ``scale`` (a share as a percentage: 100), in ``unit``.
    explained_by : tuple of Explanation
        The flag rows that explain a high figure, in the order they are shown.
    details : str, optional
        ``"module:function"`` of a :data:`DetailFunction` (notes per release, or a release judged otherwise).
    """

    label: str
    measure: str
    statistic: Literal["max", "mean"]
    threshold: float
    goal: Goal = "minimize"
    scale: float = 1.0
    unit: str = "%"
    explained_by: tuple[Explanation, ...] = ()
    details: str | None = None

    def detail_function(self) -> DetailFunction | None:
        return _load(self.details) if self.details else None


def _load(ref: str) -> Any:
    module, name = ref.split(":")
    return getattr(importlib.import_module(module), name)


# ---- numbers for reading -----------------------------------------------------------------------

#: below this a number is noise around 0
NOISE = 1e-9
#: from here on a number reads as a whole number with thousands separators (not 2.816e+04)
WHOLE_FROM = 1e4


def number_text(v: float, float_format: str = "{:.4g}") -> str:
    """A number for reading: 4 significant digits, noise around 0 shown as 0, and from 10,000 on
    a whole number with separators (a count of 28,155 stored as 28154.999… reads 28,155; raw
    values are in ``results.csv``); a missing value reads NA."""
    try:
        missing = v is None or bool(v != v)
    except TypeError:  # pandas' NA
        missing = True
    if missing:
        return "NA"
    if abs(v) < NOISE:
        return "0"
    if WHOLE_FROM <= abs(v) < 1e15:
        return f"{v:,.0f}"
    return float_format.format(v)


def section_title(dataset: str, source: str, repetition: int, name: str, unit: str = "") -> str:
    """The title of one measure entry's part of a section: ``name: dataset / source (repetition r) [unit]``."""
    where = f"{dataset} / {source}" if source else dataset
    return f"{name}: {where}" + (f" (repetition {repetition})" if repetition else "") + (f" [{unit}]" if unit else "")
