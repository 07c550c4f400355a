"""The first screen's excess risk: each risk figure against its holdout baseline, with an interval
and a verdict (docs/baselines.md).

Read from the rows only (:mod:`pipeline.evaluation.baseline` writes them; the params through
:mod:`pipeline.row_params`), per release (dataset, synthetic source, repetition) and figure:

* measures with holdout baselines (repU, DiSCO, identification risk): the mean over sets of the
  ``baseline: training`` and ``baseline: holdout`` rows, the mean excess and its permutation
  interval, for the setting (target, scenario, radius, …) with the largest upper bound;
* the attacks (``linkability``, ``inference``): the main (training) and control (holdout) success
  rates and anonymeter's risk — the normalised excess — with its interval, worst set;
* ``dcr``: the share of synthetic records closer to a training than to a holdout record
  against the 0.5 of no memorisation, worst set.

Every figure is shown as a percentage of records (one unit for every risk: the shares of
identification risk, the attacks and ``dcr`` times 100), the excess and its interval in
percentage points.

Verdict: an interval above 0 — "the synthesis adds risk"; one covering 0 (or below it) — "no
excess detected at this size" (a larger holdout narrows the interval); no interval (``baseline:
permutations: 0``) — "no interval".
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from pipeline.report.markup import figure_html, table_html
from pipeline.results import per_set
from pipeline.row_params import BASELINE, SUMMARY, UNIT, of_kind, param_columns, unit_labels

RELEASE = ["dataset", "source", "repetition"]
EXCESS_COLUMNS = [*RELEASE, "figure", "training", "holdout", "excess", "lower95", "upper95", "verdict", "note"]
ADDS_RISK, NO_EXCESS, NO_INTERVAL = "the synthesis adds risk", "no excess detected at this size", "no interval"


@dataclass(frozen=True)
class BaselineFigure:
    """A risk measure whose holdout baseline rows the first screen shows (its values times
    ``scale``: a share as a percentage)."""

    title: str
    measure: str
    family: str
    scale: float = 1.0


#: shares (identification risk, the attacks' rates and risk, dcr's share) are shown times this
PERCENT = 100.0

BASELINE_FIGURES = (
    BaselineFigure("repU (%)", "repU", "disclosure"),
    BaselineFigure("DiSCO (%)", "DiSCO", "disclosure"),
    BaselineFigure("identification risk (file_risk, %)", "file_risk", "identification_risk", PERCENT),
)


def verdict(lower: float, upper: float) -> str:
    """The one-line verdict on an excess interval."""
    if np.isnan(lower) or np.isnan(upper):
        return NO_INTERVAL
    return ADDS_RISK if lower > 0 else NO_EXCESS


def _settings(rows: pd.DataFrame) -> Iterator[tuple[tuple, str, dict[str, float]]]:
    """Per release and setting of the baseline rows: (release, setting text, figures)."""
    rows = param_columns(rows, BASELINE, SUMMARY, "ci")
    for release, sub in rows.groupby(RELEASE, sort=False):
        labels = unit_labels(sub[UNIT])
        entries = sub["measure_name"].nunique()
        for (entry, unit), part in sub.groupby(["measure_name", UNIT], sort=False):
            sets = per_set(part)
            summary = part[(part[BASELINE] == "excess") & (part["synthetic"] == "mean")]
            figures = {
                kind: float(sets.loc[(sets[BASELINE] == kind) & sets[SUMMARY].isna(), "value"].mean())
                for kind in ("training", "holdout")
            }
            for name, key in (("excess", "mean"), ("lower95", "lower95"), ("upper95", "upper95")):
                value = summary.loc[summary[SUMMARY] == key, "value"]
                figures[name] = float(value.iloc[0]) if len(value) else float("nan")
            named = (f"{entry} [{labels[unit]}]" if labels[unit] else entry) if entries > 1 else labels[unit]
            yield release, named, figures


def _worst(found: list[tuple[str, dict[str, float]]]) -> tuple[str, dict[str, float], int]:
    """The setting with the largest upper bound (else excess), and how many have an interval above 0."""
    order = [(f["upper95"] if not np.isnan(f["upper95"]) else f["excess"], i) for i, (_, f) in enumerate(found)]
    _, at = max(order, key=lambda o: -np.inf if np.isnan(o[0]) else o[0])
    return found[at][0], found[at][1], sum(f["lower95"] > 0 for _, f in found)


def _figures(f: dict[str, float] | pd.Series, scale: float) -> list:
    """The table's figures (times ``scale``) and verdict of one row."""
    return [
        *(f[k] * scale for k in ("training", "holdout", "excess", "lower95", "upper95")),
        verdict(f["lower95"], f["upper95"]),
    ]


def _baseline_rows(results: pd.DataFrame) -> list[list]:
    out = []
    for fig in BASELINE_FIGURES:
        rows = results[(results["measure"] == fig.measure) & (results["family"] == fig.family)]
        rows = rows[param_columns(rows[["params"]], BASELINE)[BASELINE].notna().to_numpy(dtype=bool)]
        by_release: dict[tuple, list[tuple[str, dict[str, float]]]] = {}
        for release, setting, figures in _settings(rows):
            by_release.setdefault(release, []).append((setting, figures))
        for release, found in by_release.items():
            setting, f, above = _worst(found)
            note = f"{above} of {len(found)} settings with an interval above 0"
            note += f"; shown: {setting}" if setting else ""
            out.append([*release, fig.title, *_figures(f, fig.scale), note])
    return out


def _per_set_worst(rows: pd.DataFrame, names: dict[str, str], key: str) -> Iterator[tuple[tuple, str, pd.Series]]:
    """Per release, measure entry and params: the synthetic set with the largest ``key``
    (``names``: role -> measure), as a series by role."""
    own = per_set(of_kind(rows[rows["measure"].isin(names.values())]))
    wide = own.pivot_table(index=[*RELEASE, "measure_name", "params", "synthetic"], columns="measure", values="value")
    wide = wide.rename(columns={v: k for k, v in names.items()})
    if not set(names) <= set(wide.columns):
        return
    for (*release, entry, _), part in wide.groupby(level=[*RELEASE, "measure_name", "params"], sort=False):
        yield tuple(release), entry, part.loc[part[key].idxmax()]


def _attack_rows(results: pd.DataFrame) -> list[list]:
    names = {"training": "main_rate", "holdout": "control_rate", "excess": "risk", "lower95": "risk_lower",
             "upper95": "risk_upper"}  # fmt: skip
    out = []
    for release, entry, f in _per_set_worst(results[results["family"] == "attacks"], names, "upper95"):
        note = "main vs control success rate; excess: anonymeter's risk, worst set"
        out.append([*release, f"{entry}: attack risk (%)", *_figures(f, PERCENT), note])
    return out


def _dcr_rows(results: pd.DataFrame) -> list[list]:
    names = {"training": "closer_to_training", "lower95": "closer_to_training_lower",
             "upper95": "closer_to_training_upper"}  # fmt: skip
    out = []
    for release, entry, f in _per_set_worst(results[results["family"] == "distance"], names, "upper95"):
        shifted = {"training": f["training"], "holdout": 0.5, "excess": f["training"] - 0.5}
        shifted |= {"lower95": f["lower95"] - 0.5, "upper95": f["upper95"] - 0.5}
        note = "holdout: 50 % = no memorisation; excess and interval: share − 50 %, worst set"
        out.append([*release, f"{entry}: share closer to training (%)", *_figures(shifted, PERCENT), note])
    return out


def excess_summary(results: pd.DataFrame) -> pd.DataFrame:
    """Per release and risk figure: training and holdout figures, the excess with its interval and
    the verdict (columns :data:`EXCESS_COLUMNS`; empty when no dataset has a holdout)."""
    found = _baseline_rows(results) + _attack_rows(results) + _dcr_rows(results)
    frame = pd.DataFrame(found, columns=EXCESS_COLUMNS)
    return frame.sort_values(RELEASE, kind="stable").reset_index(drop=True)


def plot_training_vs_holdout(points: pd.DataFrame, title: str) -> Figure:
    """Training against holdout figure, one point per setting (mean over sets): points above the
    diagonal are settings where the synthetic data reveal more about the training records than
    about records they never saw."""
    fig = Figure(figsize=(4.6, 4.0), layout="constrained")
    ax = fig.subplots()
    ax.scatter(points["holdout"], points["training"], color="#d95f02", s=22)
    both = pd.concat([points["holdout"], points["training"]]).dropna()
    low, high = (float(both.min()), float(both.max())) if len(both) else (0.0, 1.0)
    ax.plot([low, high], [low, high], color="0.5", linestyle="--", linewidth=1, label="no excess")
    ax.set_xlabel("with holdout records")
    ax.set_ylabel("with training records")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, frameon=False)
    return fig


def baseline_figures(results: pd.DataFrame) -> list[str]:
    """A training-vs-holdout plot per release and baseline measure (every setting a point)."""
    out = []
    for fig in BASELINE_FIGURES:
        rows = results[(results["measure"] == fig.measure) & (results["family"] == fig.family)]
        rows = rows[param_columns(rows[["params"]], BASELINE)[BASELINE].notna().to_numpy(dtype=bool)]
        by_release: dict[tuple, list[dict[str, float]]] = {}
        for release, _, figures in _settings(rows):
            by_release.setdefault(release, []).append(figures)
        for (dataset, source, rep), found in by_release.items():
            name = f"{dataset} / {source}" + (f" #{rep}" if rep else "")
            caption = f"{fig.title} of {name}: training vs holdout, one point per setting"
            points = pd.DataFrame(found) * fig.scale
            out.append(figure_html(caption, plot_training_vs_holdout, points, f"{fig.title}: {name}"))
    return out


def excess_section(results: pd.DataFrame) -> str:
    """The first screen's excess-risk table with its verdicts and the training-vs-holdout plots
    ("" when no dataset has a holdout)."""
    table = excess_summary(results)
    if table.empty:
        return ""
    releases = zip(table["dataset"], table["source"], table["repetition"], strict=True)
    shown = table.assign(release=[f"{d} / {s}" + (f" #{r}" if r else "") for d, s, r in releases])
    shown = shown[["release", "figure", "training", "holdout", "excess", "lower95", "upper95", "verdict", "note"]]
    return (
        '<section id="excess"><h2>Excess risk: what does the synthesis add over its holdout baseline?</h2>'
        + table_html(shown)
        + "<p>Every figure is a percentage of records; the excess and its interval are percentage points. "
        "Each risk figure is computed with the training records (those the synthetic data were made "
        "from) and with holdout records of the same population on equal footing; the excess is their "
        "difference, its 95 % interval from relabelling training and holdout records (docs/baselines.md). "
        "An interval above 0 means the synthesis adds risk; one covering 0 means no excess is detected "
        "with a holdout of this size, not that there is none.</p>" + "".join(baseline_figures(results)) + "</section>"
    )
