"""The first screen's verdict line per release: one sentence that decides, above the tables.

Every release of the run (dataset, synthetic source, repetition) gets exactly one line, made from
the two first-screen tables and nothing else (never recomputed):

* a release with a holdout interval leads with the holdout verdict of its excess-risk figures
  (:func:`~pipeline.report.baselines.release_verdicts`: *the synthesis adds risk* naming the
  figures above the holdout, *no excess detected at this size* with the smallest detectable
  differences, *below the holdout*);
* a release without one (no holdout, or ``permutations: 0``) leads with *attention* when a
  headline of the release summary (:func:`~pipeline.report.summary.release_summary`) is above its
  gate or rule of thumb, else *pass*;
* either way the line names every summary headline marked *attention* with its value and
  threshold, and the headlines within theirs;
* a release of the run with neither (its task runs no headline measure on it) is *not judged*,
  and says so.

A headline a family judges otherwise (``by_threshold`` false: identification risk's excess over
the holdout) is one of the release's excess figures: it is judged once, by the holdout verdict.
"""

from __future__ import annotations

import pandas as pd

from pipeline.evaluation.comparison import NO_INTERVAL
from pipeline.evaluation.holdout_rows import RELEASE
from pipeline.report.baselines import release_verdicts
from pipeline.report.markup import number_text

LINE_COLUMNS = [*RELEASE, "verdict", "text"]
PASS, ATTENTION = "pass", "attention"
#: a release the task judges by no headline and no holdout comparison (e.g. compare_fit only)
NOT_JUDGED = "not judged"


def _headlines(rows: pd.DataFrame, lead: str) -> list[str]:
    """What the release summary's rule-of-thumb and gate headlines say: those marked attention with
    their value and threshold (after ``lead``), then those within their threshold."""
    judged = rows[rows["by_threshold"].astype(bool)]
    high = judged[judged["status"] == ATTENTION]
    out = [
        f"{h} {number_text(v)} "
        + (f"above {number_text(t)}" if v > t else f"(threshold {number_text(t)}: see the note)")
        for h, v, t in zip(high["headline"], high["value"], high["threshold"], strict=True)
    ]
    if out and lead:
        out[0] = f"{lead}: {out[0]}"
    within = list(judged.loc[judged["status"] != ATTENTION, "headline"])
    if within:
        out.append("within the threshold: " + ", ".join(within))
    return out


def release_lines(summary: pd.DataFrame, excess: pd.DataFrame, releases: pd.DataFrame | None = None) -> pd.DataFrame:
    """One verdict line per release (columns :data:`LINE_COLUMNS`), in release order.

    ``summary``: :func:`~pipeline.report.summary.release_summary`; ``excess``:
    :func:`~pipeline.report.baselines.excess_summary` (either may be empty); ``releases``: every
    release of the run (:data:`RELEASE` columns), so that one without a headline gets its line too."""
    holdout = {tuple(k): (v, d) for *k, v, d in release_verdicts(excess).itertuples(index=False)} if len(excess) else {}
    every = [summary[RELEASE], excess[RELEASE]] + ([] if releases is None else [releases[RELEASE]])
    releases = pd.concat(every).drop_duplicates().sort_values(RELEASE, kind="stable")
    by_release = dict(list(summary.groupby(RELEASE, sort=False))) if len(summary) else {}
    out = []
    for release in releases.itertuples(index=False):
        key = tuple(release)
        rows = by_release.get(key, summary.iloc[:0])
        found, driven = holdout.get(key, (NO_INTERVAL, ""))
        if rows.empty and key not in holdout:
            text = "the task runs no headline measure (repU, DiSCO, identification risk, S_pMSE) or holdout"
            out.append([*key, NOT_JUDGED, text + " comparison on it: see its sections below"])
            continue
        if found != NO_INTERVAL:
            verdict, parts = found, [driven, *_headlines(rows, ATTENTION)]
        else:
            parts = _headlines(rows, "")
            verdict = ATTENTION if (rows["status"] == ATTENTION).any() else PASS
            if key in holdout:
                parts.append("no interval against the holdout (baseline permutations: 0)")
        out.append([*key, verdict, "; ".join(p for p in parts if p)])
    return pd.DataFrame(out, columns=LINE_COLUMNS)
