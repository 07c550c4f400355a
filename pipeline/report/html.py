"""Write a run's self-contained HTML report: metadata, one section per measure family with its
tables and plots (PNG embedded as data URIs), and for nightly runs the gate comparison.

Only aggregates appear (the tidy results and the plots made from them).
"""

from __future__ import annotations

import copy
import html
from pathlib import Path
from typing import Any

import pandas as pd

from pipeline.report.baselines import excess_section, excess_summary
from pipeline.report.markup import CSS, figures_drawn_together, table_html
from pipeline.report.notices import plans_section, warnings_section
from pipeline.report.sections import SECTIONS
from pipeline.report.summary import RELEASE, release_summary
from pipeline.report.verdicts import release_lines
from pipeline.results import atomic_write_text
from pipeline.row_params import of_kind

FAMILY_TITLES = {
    "profile": "Data profiles and key blocks",
    "disclosure": "Disclosure risk (synthpop identity and attribute measures)",
    "identification_risk": "Identification risk (Hornby & Hu)",
    "utility": "Utility",
    "compare_fit": "Model-based utility (synthpop compare.fit.synds)",
    "synthesis": "Synthesis",
    "distance": "Distance to the closest record (DCR, NNDR)",
    "attacks": "Attacks (anonymeter: singling out, linkability, inference)",
    "integrity": "Overlap with the original (share of records equal to an original record)",
    "sdcrisk": "Agencies' risk measures (sdcMicro: frequencies, risk, k-anonymity, l-diversity, SUDA2)",
}
#: the synthesis family has one section per synthesiser kind (the rows' ``type``)
SYNTHESIS_TITLES = {
    "margins": "Synthesis from coarsened margins",
    "partial": "Partial synthesis (synthpop syn(): the variables not synthesised are released unchanged)",
}


def _sections(results: pd.DataFrame) -> list[tuple[str, str, str, pd.DataFrame]]:
    """(family, section id, title, rows) of every section in the order the families come: one per
    family, and for the synthesis family one per synthesiser kind."""
    out = []
    for family in dict.fromkeys(results["family"]):
        sub = results[results["family"] == family]
        if family != "synthesis":
            out.append((family, family, FAMILY_TITLES.get(family, family), sub))
            continue
        for kind, part in sub.groupby(sub["type"].fillna(""), sort=False):
            title = SYNTHESIS_TITLES.get(kind, f"Synthesis ({kind})" if kind else FAMILY_TITLES[family])
            out.append((family, f"{family}-{kind}" if kind else family, title, part))
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


def summary_section(outcome: Any, excess: pd.DataFrame) -> str:
    """The first screen: a verdict line per release, then per release the headline risk and
    utility against the task's gates or the rules of thumb (:mod:`pipeline.report.summary`), each
    marked pass or attention (``excess``: :func:`~pipeline.report.baselines.excess_summary`)."""
    table = release_summary(outcome.results, outcome.manifest)
    results = outcome.results
    releases = results.loc[results["source"] != "", RELEASE].drop_duplicates()
    if releases.empty and excess.empty:
        return ""
    shown = table.assign(release=[_release_text(*r) for r in table[RELEASE].itertuples(index=False)])
    shown = shown[["release", "headline", "value", "threshold", "basis", "status", "explanation", "note"]]
    return (
        '<section id="summary"><h2>Summary: is each release safe and useful?</h2>'
        + verdict_lines(table, excess, releases)
        + (table_html(shown, cell_classes={"status": ""}, text_columns=TEXT_COLUMNS) if len(table) else "")
        + "<p>Units: risks are percentages of records (repU, DiSCO: of the original's records; "
        "identification risk: of the records an intruder matches correctly); S_pMSE is a ratio (pMSE "
        "over its expectation under a correct synthesis model: about 1 is ideal). Thresholds: the task's "
        "nightly gates where it has them, else the rules of thumb in docs/architecture.md (report summary). "
        "<em>attention</em> means look closer, not reject; the explanation says when a figure is high by "
        "construction (keys released unchanged) or from prior knowledge (synthpop's flags). The verdict "
        "line of a release with a holdout leads with the excess-risk verdict below.</p></section>"
    )


def render(outcome: Any, extra_sections: list[str] | None = None) -> str:
    """The whole report as an HTML string (its figures drawn together: :func:`figures_drawn_together`).

    The sections read the rows without their ``run_id`` (the metadata table names the run): a
    figure is then drawn from the same data in every run of the same units, and a figure cache
    (:func:`~pipeline.report.markup.cached_figures`) finds it.
    """
    rows = copy.copy(outcome)
    rows.results = outcome.results.drop(columns=["run_id"], errors="ignore")
    with figures_drawn_together() as fill:
        return fill(_page(rows, extra_sections))


def _page(outcome: Any, extra_sections: list[str] | None) -> str:
    m = outcome.manifest
    res = outcome.results
    excess = excess_summary(res)
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
        summary_section(outcome, excess),
        warnings_section(outcome),
        excess_section(res, excess),
        plans_section(outcome),
        '<section id="metadata"><h2>Run</h2>',
        table_html(meta, css_class="meta"),
        "</section>",
    ]
    parts += extra_sections or []
    for family, section, title, sub in _sections(res):
        parts.append(f'<section id="{html.escape(section)}"><h2>{html.escape(title)}</h2>')
        if family in SECTIONS:  # a family's plots and tables show its own figures (baselines: above)
            parts += SECTIONS[family](of_kind(sub), outcome)
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
