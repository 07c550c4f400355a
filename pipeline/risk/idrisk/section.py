"""The identification-risk family's part of the report: its section (Hornby & Hu's Figs. 6-10 from
the rows) and the details of its headline — each scenario's radius r* (attention when it is at the
edge of its grid), the records left out of the matching, and with a holdout the release judged on
its excess over the holdout instead of the figure at r*. Fed by tidy rows only (aggregates)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pandas as pd

from pipeline.evaluation.comparison import ADDS_RISK, Comparison
from pipeline.evaluation.holdout_rows import RELEASE, footing_settings, largest
from pipeline.evaluation.reporting import Block, Figure, HeadlineDetail, Paragraph, ReportedRun, number_text
from pipeline.measures import holdout_views
from pipeline.risk.idrisk.plots import (
    IDRISK_RUN,
    boxplot_points,
    plot_2d_boxplot,
    plot_risk_at_max_radius,
    plot_risk_by_radius,
    plot_utility_risk,
    r_star,
    risk_by_radius,
    risk_points,
    utility_points,
)
from pipeline.row_params import unit_groups, value_text

IDRISK = "identification_risk"
#: the headline of a release with a holdout: the excess, not the figure at r*
IDRISK_EXCESS = "identification risk, excess over holdout (pp)"


def identification_risk_section(results: pd.DataFrame, run: ReportedRun) -> list[Block]:
    """Risk by radius (r* marked), risk at the maximising radius, and the utility–risk plots."""
    every = run.results
    utility_gen = list(dict.fromkeys(every.loc[every["type"] == "utility_gen", "measure_name"]))
    return identification_risk_figures(every, utility_gen)


def _title(dataset: str, source: str, rep: int, name: str, unit: str) -> str:
    return f"{name}: {dataset} / {source}" + (f" (repetition {rep})" if rep else "") + (f" [{unit}]" if unit else "")


def identification_risk_figures(results: pd.DataFrame, utility_gen: list[str]) -> list[Block]:
    """Figs. 6-10 of the run's identification-risk rows (``utility_gen``: the measure names of the
    run's utility_gen entries, for the utility axis of Figs. 8-10)."""
    out: list[Block] = []
    # one Fig. 6 per source and measure entry: a repeated study (the m-study: 3 sources x 100+
    # repetitions) would otherwise draw hundreds of near-identical sweeps and spend most of the
    # report's time on them; the other repetitions' sweeps and r* stay in the results table
    drawn: set[tuple[Any, ...]] = set()
    not_drawn = 0
    for (dataset, source, rep, name), unit, sub in unit_groups(risk_by_radius(results), IDRISK_RUN):
        swept = sub.groupby("scenario", sort=False)["radius"].nunique()
        sub = sub[sub["scenario"].isin(swept.index[swept > 1])]
        if sub.empty:
            continue
        if (dataset, source, name, unit) in drawn:
            not_drawn += 1
            continue
        drawn.add((dataset, source, name, unit))
        title = _title(dataset, source, rep, name, unit)
        caption = f"{title}: risk across synthetic sets for each radius, r* marked (Hornby & Hu Fig. 6)"
        out.append(Figure(caption, plot_risk_by_radius, (sub,), {"title": title}))
    if not_drawn:
        out.append(
            Paragraph(
                f"Fig. 6 is drawn for the first repetition of each source; the radius sweeps of {not_drawn} "
                "further repetitions (and each one's r*) are rows of the results table (measures file_risk, r_star)."
            )
        )
    best = risk_points(results)
    if best.empty:
        return out
    labelled = pd.concat(
        [
            part.assign(
                scenario=[f"{dataset}/{source}: {sc}" + (f" [{unit}]" if unit else "") for sc in part["scenario"]]
            )
            for (dataset, source, _), unit, part in unit_groups(best, ["dataset", "source", "measure_name"])
        ]
    )
    out.append(
        Figure(
            "Identification risk per scenario at its maximising radius (Hornby & Hu Fig. 7)",
            plot_risk_at_max_radius,
            (labelled,),
        )
    )
    joined = labelled.merge(utility_points(results, utility_gen), on=["dataset", "source", "repetition", "synthetic"])
    if joined.empty:
        out.append(Paragraph("Utility–risk plots need a utility_gen measure on the same data and sources."))
        return out
    label = "S_pMSE (lower = more useful)"
    out.append(
        Figure(
            "Utility–risk trade-off: one point per synthetic set at the maximising "
            "radius; rectangles span the quartiles of both axes (Hornby & Hu Figs. 8–9)",
            plot_utility_risk,
            (joined[["scenario", "utility", "risk"]],),
            {"utility_label": label},
        )
    )
    out.append(
        Figure(
            "2D boxplot per synthetic source: interquartile rectangles and min–max "
            "whiskers of utility and risk; a repeated source has one point per repetition, the "
            "mean over its m sets (Hornby & Hu Fig. 10)",
            plot_2d_boxplot,
            (boxplot_points(joined),),
            {"group": "source", "utility_label": label},
        )
    )
    return out


# ---- the headline's details ---------------------------------------------------------------------


def _mine(rows: pd.DataFrame, release: tuple[Any, ...]) -> pd.DataFrame:
    return rows[(rows["dataset"] == release[0]) & (rows["source"] == release[1]) & (rows["repetition"] == release[2])]


def _radius_note(best: pd.DataFrame, points: pd.DataFrame, release: tuple[Any, ...]) -> tuple[str, bool]:
    """Each scenario's radius as text — a swept one's maximising radius r* (``best``: :func:`r_star`
    of the results), a fixed one's radius (``points``: :func:`risk_points`, scenarios without an
    r* row) — and whether any r* is at the edge of its grid (the ``r_star_at_boundary`` rows)."""
    best = _mine(best, release)
    notes, edge = [], False
    for _, row in best.iterrows():
        radius = ", ".join(f"{v}={r:g}" for v, r in row["r_star"]) if isinstance(row["r_star"], tuple) else "?"
        at_edge = row["at_boundary"] is True
        edge |= at_edge
        warn = " (at the edge of the radius grid: widen radius_grid)" if at_edge else ""
        notes.append(f"{value_text(row['scenario'])}: r* {radius}{warn}")
    swept = set(zip(best["measure_name"], best["scenario"], strict=True))
    for _, row in _mine(points, release).drop_duplicates(["measure_name", "scenario"]).iterrows():
        if (row["measure_name"], row["scenario"]) not in swept:
            notes.append(f"{value_text(row['scenario'])}: fixed radius {row['radius']}")
    return "; ".join(notes), edge


def _left_out(own: pd.DataFrame, release: tuple[Any, ...]) -> str:
    """The records identification risk left out of the matching in a release (the measure's
    ``excluded_share`` rows, per scenario), as text ("" when none)."""
    rows = _mine(own[(own["measure"] == "excluded_share") & (own["family"] == IDRISK)], release)
    shares = {value_text(json.loads(p).get("scenario")): v for p, v in zip(rows["params"], rows["value"], strict=True)}
    found = [f"{number_text(100 * v)} % in {name}" for name, v in shares.items() if v > 0]
    return (
        "records left out of the matching (a missing value in a matched variable): " + ", ".join(found) if found else ""
    )


def _at_radius(unit: Any, best: Any) -> bool:
    """Whether a setting's params (``scenario``, ``radius``) hold r*'s radius for every reported variable."""
    radius = dict(unit).get("radius") if unit else None
    if not isinstance(best, tuple) or radius is None:
        return False
    combo = dict(radius)
    return all(v in combo and combo[v] == r for v, r in best)


def _comparison_text(c: Comparison) -> str:
    d = c.difference
    return (
        f"training {number_text(100 * c.training)} %, holdout {number_text(100 * c.holdout)} %, "
        f"difference {number_text(100 * d.value)} pp [{number_text(100 * d.lower)}, {number_text(100 * d.upper)}]"
    )


def _excess(results: pd.DataFrame, best: pd.DataFrame) -> dict[tuple[Any, ...], tuple[Comparison, str]]:
    """Per release with a holdout: the identification-risk comparison with the largest excess and a
    note naming its setting and the radius that maximises file risk (r*) with its comparison."""
    view = holdout_views(results["type"].dropna()).get(IDRISK, ())
    found: dict[tuple[Any, ...], list[tuple[str, Any, Comparison]]] = {}
    for compared in view:
        for release, setting, unit, c in footing_settings(results[results["type"] == IDRISK], compared):
            found.setdefault(release, []).append((setting, unit, c))
    out = {}
    for release, settings in found.items():
        setting, _, c = settings[largest(c for _, _, c in settings)]
        note = f"largest excess at {setting or 'the one setting'}: {_comparison_text(c)}, {c.verdict}"
        for _, row in _mine(best, release).iterrows():
            at = [
                (s, x)
                for s, u, x in settings
                if dict(u).get("scenario") == row["scenario"] and _at_radius(u, row["r_star"])
            ]
            for s, x in at:
                note += (
                    "; file risk largest there too (r*)"
                    if x is c
                    else f"; file risk largest at r* ({s}): {_comparison_text(x)}"
                )
        out[release] = (c, note)
    return out


def headline_details(own: pd.DataFrame, results: pd.DataFrame) -> Mapping[tuple[Any, ...], HeadlineDetail]:
    """Per release with identification-risk rows: the radius note (attention when r* is at the edge
    of its grid) and the records left out; with a holdout, the release judged on its excess."""
    best, points = r_star(own), risk_points(own)  # once, not per release (a study has thousands)
    excess = _excess(results, best)
    out = {}
    mine = own[own["family"] == IDRISK]
    for release, _ in mine.groupby(RELEASE, sort=False):
        left_out = _left_out(own, release)
        if release in excess:
            c, note = excess[release]
            basis = "holdout baseline: attention when the 95 % interval is above 0"
            out[release] = HeadlineDetail(
                "; ".join(x for x in (note, left_out) if x),
                attention=c.verdict == ADDS_RISK,
                judged=(IDRISK_EXCESS, c.difference.value * 100, 0.0, basis),
            )
            continue
        note, edge = _radius_note(best, points, release)
        out[release] = HeadlineDetail("; ".join(x for x in (note, left_out) if x), attention=edge)
    return out
