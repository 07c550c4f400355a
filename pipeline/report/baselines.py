"""The first screen's excess risk: each risk figure against its holdout, in the one comparison
language of :mod:`pipeline.evaluation.comparison` (docs/baselines.md).

Which rows form a comparison is declared by each measure (its ``holdout_view``, read through the
registry by the rows' ``type``); the report renames nothing. Per release (dataset, synthetic
source, repetition) and figure, one line of :data:`EXCESS_COLUMNS`, each column one quantity:

* ``training`` / ``holdout`` — the figure with the training records and with holdout records
  (mean over the synthetic sets; for the share closer to training, the share expected without
  memorisation);
* ``difference`` with ``difference_lower95`` / ``difference_upper95`` — training − holdout and its
  95 % interval (``method``: ``permutation`` for equal-footing baselines, ``wilson`` for the
  attacks' rates and the share); the verdict is on it;
* ``residual`` with its interval — :func:`~pipeline.evaluation.comparison.residual`, the share of
  what the holdout leaves to be learnt that the release reveals (anonymeter's risk for the
  attacks; NaN where the figure has no ceiling);
* ``verdict`` (:data:`~pipeline.evaluation.comparison.VERDICTS`) and ``detectable``, the smallest
  difference the interval's width lets the data detect (80 % power).

Over m synthetic sets, the line is the **mean over sets** with its interval (equal-footing
baselines: the permutation interval of the mean excess; rates and shares:
:meth:`Comparison.over_sets <pipeline.evaluation.comparison.Comparison.over_sets>`), never the
worst set judged as if it were the only one. Equal-footing figures with several settings (targets,
scenarios, radii) show the setting with the largest upper bound and count those above 0; their
intervals are simultaneous over the settings (method ``max-t``,
:func:`~pipeline.evaluation.comparison.simultaneous_bounds`), so that choice is allowed for.

Every figure is shown as a percentage of records, the differences in percentage points.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure as MatplotlibFigure

from pipeline.evaluation.comparison import (
    ADDS_RISK,
    BELOW,
    NO_EXCESS,
    NO_INTERVAL,
    Compared,
    Comparison,
    Interval,
    Rate,
)
from pipeline.evaluation.holdout_rows import RELEASE, footing_settings, largest
from pipeline.evaluation.reporting import Block, Figure, Markup, Table, number_text
from pipeline.measures import holdout_views
from pipeline.results import per_set
from pipeline.row_params import of_kind, param_columns, unit_groups

__all__ = ["ADDS_RISK", "BELOW", "EXCESS_COLUMNS", "NO_EXCESS", "NO_INTERVAL", "excess_summary"]

#: the figures of a comparison, in the order of the table's columns
FIGURES = ["training", "holdout", "difference", "difference_lower95", "difference_upper95", "residual",
           "residual_lower95", "residual_upper95"]  # fmt: skip
EXCESS_COLUMNS = [*RELEASE, "figure", "sets", *FIGURES, "method", "verdict", "detectable", "note"]
VERDICT_COLUMNS = [*RELEASE, "verdict", "driven_by"]


def _figures(c: Comparison, scale: float) -> list[Any]:
    """The table's figures of one comparison (times ``scale``), its method, verdict and detectable."""
    r = c.residual or Interval(math.nan, math.nan, math.nan, c.difference.method)
    values = [c.training, c.holdout, *(c.difference.value, c.difference.lower, c.difference.upper)]
    values += [r.value, r.lower, r.upper]
    return [*(v * scale for v in values), c.difference.method, c.verdict, c.difference.detectable * scale]


def _views(results: pd.DataFrame) -> Iterator[tuple[Compared, pd.DataFrame]]:
    """Each declared figure with the rows of its measure type (the family's own type only)."""
    for kind, view in holdout_views(results["type"].dropna()).items():
        rows = results[results["type"] == kind]
        for compared in view:
            yield compared, rows


def _footing_lines(compared: Compared, rows: pd.DataFrame) -> list[list[Any]]:
    by_release: dict[tuple, list[tuple[str, Comparison]]] = {}
    for release, setting, _, comparison in footing_settings(rows, compared):
        by_release.setdefault(release, []).append((setting, comparison))
    out = []
    for release, found in by_release.items():
        setting, c = found[largest(c for _, c in found)]
        above = sum(c.verdict == ADDS_RISK for _, c in found)
        note = f"{above} of {len(found)} settings with an interval above 0" + (f"; shown: {setting}" if setting else "")
        out.append([*release, compared.title, c.sets, *_figures(c, compared.scale), note])
    return out


def _own_sets(rows: pd.DataFrame, measures: list[str]) -> Iterator[tuple[tuple, str, pd.DataFrame]]:
    """Per release, measure entry and params: the entry's name (with the params in which its
    settings differ) and the measure's own per-set rows, wide (a column per row measure, a row
    per synthetic set)."""
    own = param_columns(per_set(of_kind(rows[rows["measure"].isin(measures)])))
    for (*release, entry), label, part in unit_groups(own, [*RELEASE, "measure_name"]):
        wide = part.pivot_table(index="synthetic", columns="measure", values="value", sort=False)
        yield tuple(release), f"{entry} [{label}]" if label else entry, wide


def _bounds(name: str) -> list[str]:
    return [name, f"{name}_lower", f"{name}_upper"]


def _rate(v: pd.Series, name: str) -> Rate:
    return Rate(float(v[name]), (float(v[f"{name}_upper"]) - float(v[f"{name}_lower"])) / 2)


def _rates_lines(compared: Compared, rows: pd.DataFrame) -> list[list[Any]]:
    """The attacks' rates: per set, main (training) against control (holdout) rate and the residual
    the measure reports; the mean over sets judged."""
    assert compared.holdout is not None and compared.residual is not None
    names = [*_bounds(compared.training), *_bounds(compared.holdout), *_bounds(compared.residual)]
    extra = _bounds("baseline_rate")
    out = []
    for release, entry, part in _own_sets(rows, names + extra):
        if not set(names) <= set(part.columns):
            continue
        per = [
            Comparison(
                float(v[compared.training]),
                float(v[compared.holdout]),
                Interval.of_rates(_rate(v, compared.training), _rate(v, compared.holdout)),
                Interval(*(float(v[n]) for n in _bounds(compared.residual)), compared.method),
            )
            for _, v in part.iterrows()
        ]
        c = Comparison.over_sets(per)
        note = "main (training) vs control (holdout) success rate; residual: anonymeter's risk"
        if set(extra) <= set(part.columns):
            mean = part[extra].mean()
            note += f"; random-guess baseline {_pct(mean.iloc[0])} [{_pct(mean.iloc[1])}, {_pct(mean.iloc[2])}]"
        out.append([*release, f"{entry}: {compared.title}", c.sets, *_figures(c, compared.scale), note])
    return out


def _pct(share: float) -> str:
    return f"{number_text(100 * share)} %"


def _share_lines(compared: Compared, rows: pd.DataFrame) -> list[list[Any]]:
    """A share against the share expected without memorisation (``compared.null``)."""
    names = _bounds(compared.training)
    out = []
    for release, entry, part in _own_sets(rows, names):
        if not set(names) <= set(part.columns):
            continue
        null = compared.null
        per = [
            Comparison(share, null, Interval(share - null, lower - null, upper - null, compared.method))
            for share, lower, upper in part[names].itertuples(index=False)
        ]
        c = Comparison.over_sets(per)
        note = f"holdout: the {number_text(100 * null)} % expected when the synthesis memorises nothing"
        out.append([*release, f"{entry}: {compared.title}", c.sets, *_figures(c, compared.scale), note])
    return out


LINES = {"footing": _footing_lines, "rates": _rates_lines, "share": _share_lines}


def excess_summary(results: pd.DataFrame) -> pd.DataFrame:
    """Per release and risk figure: the comparison with its holdout and the verdict (columns
    :data:`EXCESS_COLUMNS`; empty when no dataset has a holdout)."""
    found = [line for compared, rows in _views(results) for line in LINES[compared.view](compared, rows)]
    frame = pd.DataFrame(found, columns=EXCESS_COLUMNS)
    return frame.sort_values(RELEASE, kind="stable").reset_index(drop=True)


def release_verdicts(table: pd.DataFrame) -> pd.DataFrame:
    """One verdict per release (columns :data:`VERDICT_COLUMNS`) and the figures that drive it: the
    synthesis adds risk when any figure is above its holdout (those figures named); no excess
    detected when none is and some has an interval (the smallest detectable differences named);
    below the holdout when every figure with an interval is below it."""
    out = []
    for release, part in table.groupby(RELEASE, sort=False):
        judged = part[part["verdict"] != NO_INTERVAL]
        above = part[part["verdict"] == ADDS_RISK]
        if len(above):
            verdict, driven = (
                ADDS_RISK,
                [f"{f} (+{number_text(d)})" for f, d in zip(above["figure"], above["difference"], strict=True)],
            )
        elif judged.empty:
            verdict, driven = NO_INTERVAL, []
        elif (judged["verdict"] == BELOW).all():
            verdict, driven = BELOW, list(judged["figure"])
        else:
            verdict = NO_EXCESS
            driven = [
                f"{f} (detectable ≥ {number_text(d)})"
                for f, d in zip(judged["figure"], judged["detectable"], strict=True)
            ]
        out.append([*release, verdict, "; ".join(driven)])
    return pd.DataFrame(out, columns=VERDICT_COLUMNS)


def plot_training_vs_holdout(points: pd.DataFrame, title: str) -> MatplotlibFigure:
    """Training against holdout figure, one point per setting (mean over sets): points above the
    diagonal are settings where the synthetic data reveal more about the training records than
    about records they never saw."""
    fig = MatplotlibFigure(figsize=(4.6, 4.0), layout="constrained")
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


def baseline_figures(results: pd.DataFrame) -> list[Figure]:
    """A training-vs-holdout plot per release and equal-footing figure (every setting a point)."""
    out = []
    for compared, rows in _views(results):
        if compared.view != "footing":
            continue
        by_release: dict[tuple, list[dict[str, float]]] = {}
        for release, _, _, c in footing_settings(rows, compared):
            by_release.setdefault(release, []).append({"training": c.training, "holdout": c.holdout})
        for (dataset, source, rep), found in by_release.items():
            name = f"{dataset} / {source}" + (f" #{rep}" if rep else "")
            caption = f"{compared.title} of {name}: training vs holdout, one point per setting"
            points = pd.DataFrame(found) * compared.scale
            out.append(Figure(caption, plot_training_vs_holdout, (points, f"{compared.title}: {name}")))
    return out


def _release_text(table: pd.DataFrame) -> list[str]:
    releases = zip(table["dataset"], table["source"], table["repetition"], strict=True)
    return [f"{d} / {s}" + (f" #{r}" if r else "") for d, s, r in releases]


def _interval_text(value: float, lower: float, upper: float) -> str:
    if np.isnan(value):
        return "–"
    bounds = "" if np.isnan(lower) else f" [{number_text(lower)}, {number_text(upper)}]"
    return number_text(value) + bounds


EXCESS_HEADING = "Excess risk: what does the synthesis add over its holdout baseline?"


def excess_section(results: pd.DataFrame, table: pd.DataFrame | None = None) -> list[Block]:
    """The first screen's excess-risk table with its verdicts and the training-vs-holdout plots
    (none when no dataset has a holdout); ``table``: :func:`excess_summary` of ``results`` when the
    caller has it (the verdict line per release, above the summary, is made from it:
    :mod:`pipeline.report.verdicts`)."""
    table = excess_summary(results) if table is None else table
    if table.empty:
        return []
    shown = pd.DataFrame(
        {
            "release": _release_text(table),
            "figure": table["figure"],
            "sets": table["sets"],
            "training (%)": table["training"],
            "holdout (%)": table["holdout"],
            "difference (pp) [95 %]": [
                _interval_text(*v)
                for v in table[["difference", "difference_lower95", "difference_upper95"]].itertuples(index=False)
            ],
            "residual (%) [95 %]": [
                _interval_text(*v)
                for v in table[["residual", "residual_lower95", "residual_upper95"]].itertuples(index=False)
            ],
            "interval": table["method"],
            "verdict": table["verdict"],
            "smallest detectable (pp)": table["detectable"],
            "note": table["note"],
        }
    )
    return [
        Markup(f'<section id="excess"><h2>{EXCESS_HEADING}</h2>'),
        Table(shown, text_columns=("release", "figure", "note")),
        Markup(
            "<p>Training and holdout are percentages of records: each risk figure computed with the training "
            "records (those the synthetic data were made from) and with holdout records of the same population "
            "(docs/baselines.md). The difference (percentage points) is training − holdout with its 95 % interval "
            "(permutation: from relabelling training and holdout records; max-t: the same, simultaneous over the "
            "figure's settings, so that showing the setting with the largest excess does not raise the rate of "
            "false verdicts; wilson: from the two rates' binomial intervals); the verdict is on it: above 0, the "
            "synthesis adds risk; below 0, below the holdout; "
            "covering 0, no excess is detected with a holdout of this size — not that there is none: the smallest "
            "detectable difference is the one such an interval would detect 4 times in 5. The residual is the "
            "share of what the holdout leaves to be learnt that the release reveals (anonymeter's risk for the "
            "attacks). With several synthetic sets every line is their mean, judged once.</p>"
        ),
        *baseline_figures(results),
        Markup("</section>"),
    ]
