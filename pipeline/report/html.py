"""Write a run's self-contained HTML report: metadata, one section per measure family with its
tables and plots (PNG embedded as data URIs), and for nightly runs the gate comparison.

Only aggregates appear (the tidy results and the plots made from them).
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any, Protocol

import pandas as pd

from pipeline.evaluation.holdout_rows import RELEASE
from pipeline.evaluation.reporting import Block, Markup, ReportedRun, ReportSection, Table
from pipeline.measures import report_section
from pipeline.report.baselines import excess_section, excess_summary
from pipeline.report.markup import CSS, FigureCache, blocks_html, table_html
from pipeline.report.notices import plans_section, warnings_section
from pipeline.report.summary import release_summary
from pipeline.report.verdicts import release_lines
from pipeline.row_params import of_kind


class Run(Protocol):
    """What a report is made from: a run's tidy rows, manifest and unit summaries (a run's
    :class:`~pipeline.run.folder.RunOutcome`)."""

    results: pd.DataFrame
    manifest: Mapping[str, Any]
    summaries: Mapping[str, Any]


def _sections(results: pd.DataFrame) -> list[tuple[str, ReportSection, pd.DataFrame]]:
    """Every section (anchor, declaration, rows), in the order the families come: per family one
    section per declaration its rows' types make (:func:`pipeline.measures.report_section`: the
    measures of a family share one; each synthesiser kind has its own); rows that declare none
    under their family's name."""
    out = []
    for family in dict.fromkeys(results["family"]):
        sub = results[results["family"] == family]
        kinds = sub["type"].fillna("")
        declared = {k: report_section(k) or ReportSection(family) for k in dict.fromkeys(kinds)}
        for section in dict.fromkeys(declared.values()):
            rows = sub[kinds.isin([k for k, s in declared.items() if s == section])]
            out.append((section.anchor or family, section, rows))
    return out


#: the summary's columns of sentences (wrapped within the page: markup.table_html)
TEXT_COLUMNS = ("basis", "explanation", "note")


def _release_text(dataset: str, source: str, repetition: int) -> str:
    return f"{dataset} / {source}" + (f" #{repetition}" if repetition else "")


def verdict_lines(summary: pd.DataFrame, excess: pd.DataFrame, releases: pd.DataFrame) -> str:
    """The verdict line of every release (:func:`~pipeline.report.verdicts.release_lines`)."""
    lines = release_lines(summary, excess, releases)
    return "".join(
        f'<p class="verdict"><strong>{html.escape(_release_text(d, s, r))}</strong>: {html.escape(v)}'
        + (f" — {html.escape(t)}" if t else "")
        + "</p>"
        for d, s, r, v, t in lines.itertuples(index=False)
    )


def summary_section(run: ReportedRun, excess: pd.DataFrame) -> list[Block]:
    """The first screen: a verdict line per release, then per release the headline risk and
    utility against the task's gates or the rules of thumb (:mod:`pipeline.report.summary`), each
    marked pass or attention (``excess``: :func:`~pipeline.report.baselines.excess_summary`)."""
    table = release_summary(run.results, run.manifest)
    releases = run.results.loc[run.results["source"] != "", RELEASE].drop_duplicates()
    if releases.empty and excess.empty:
        return []
    shown = table.assign(release=[_release_text(*r) for r in table[RELEASE].itertuples(index=False)])
    shown = shown[["release", "headline", "value", "threshold", "basis", "status", "explanation", "note"]]
    return [
        Markup(
            '<section id="summary"><h2>Summary: is each release safe and useful?</h2>'
            + verdict_lines(table, excess, releases)
        ),
        *([Table(shown, status_columns=("status",), text_columns=TEXT_COLUMNS)] if len(table) else []),
        Markup(
            "<p>Units: risks are percentages of records (repU, DiSCO: of the original's records; "
            "identification risk: of the records an intruder matches correctly); S_pMSE is a ratio (pMSE "
            "over its expectation under a correct synthesis model: about 1 is ideal). Thresholds: the task's "
            "nightly gates where it has them, else the rules of thumb in docs/architecture.md (report summary). "
            "<em>attention</em> means look closer, not reject; the explanation says when a figure is high by "
            "construction (keys released unchanged) or from prior knowledge (synthpop's flags). The verdict "
            "line of a release with a holdout leads with the excess-risk verdict below.</p></section>"
        ),
    ]


def render(outcome: Run, extra_sections: list[str] | None = None, figures: FigureCache | None = None) -> str:
    """The whole report as an HTML string; its figures are drawn in one batch (those ``figures``
    holds taken from it: :func:`~pipeline.report.markup.blocks_html`).

    The sections read the rows without their ``run_id`` (the metadata table names the run): a
    figure is then drawn from the same data in every run of the same units, and the figure cache
    finds it.
    """
    run = ReportedRun(outcome.results.drop(columns=["run_id"], errors="ignore"), outcome.manifest, outcome.summaries)
    m = run.manifest
    body = blocks_html(_page(run, extra_sections or []), figures)
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>sdc-pipeline: '
        f"{html.escape(m['task'])}</title><style>{CSS}</style></head><body>{body}</body></html>"
    )


def _page(run: ReportedRun, extra_sections: list[str]) -> list[Block]:
    m = run.manifest
    excess = excess_summary(run.results)
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
    parts: list[Block] = [
        Markup(f"<h1>sdc-pipeline report — {html.escape(m['task'])}</h1>"),
        *summary_section(run, excess),
        Markup(warnings_section(run)),
        *excess_section(run.results, excess),
        Markup(plans_section(run)),
        Markup('<section id="metadata"><h2>Run</h2>' + table_html(meta, css_class="meta") + "</section>"),
        *(Markup(extra) for extra in extra_sections),
    ]
    for anchor, section, sub in _sections(run.results):
        parts.append(Markup(f'<section id="{html.escape(anchor)}"><h2>{html.escape(section.title)}</h2>'))
        parts += section.blocks(of_kind(sub), run)  # a family's own figures (its baselines: above)
        parts.append(
            Markup(
                f'<p class="raw">All {len(sub)} values of this section, unrounded: the run\'s '
                '<a href="results.csv" download>results.csv</a> (and results.parquet) beside this report.</p></section>'
            )
        )
    return parts
