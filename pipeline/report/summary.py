"""The report's first screen: per release, the headline risk and utility and whether they pass.

One row per release (dataset, synthetic source, repetition) and headline measure, read from
the rows the measures emit (never recomputed):

=====================  =========================================================  ============
headline (unit)        value                                                      rule of thumb
=====================  =========================================================  ============
repU (%)               synthpop's replicated uniques (max over sets, key sets)    ≤ 5 %
DiSCO (%)              synthpop's attribute disclosure (max over sets, targets)   ≤ 5 %
identification risk    ``file_risk_at_max`` (max over sets and scenarios) as a %  ≤ 5 %
at r* (%)              of records, with the scenario's maximising radius r*
identification risk,   with a holdout, instead: training − holdout file risk      interval
excess over holdout    (mean over sets) at the radius with the largest excess,    above 0
(pp)                   r* beside it; the records left out of the matching counted
S_pMSE (utility_gen;   ``utility_gen``: mean over sets (worst setting)            ≤ 10
ratio)
S_pMSE (tables, worst; ``utility_tab``/``utility_tables``: mean over sets, worst  ≤ 10
ratio)                 table
=====================  =========================================================  ============

One unit per kind of measure: every risk figure is a percentage of records (the identification
risk's share of records is shown times 100), S_pMSE a plain ratio (pMSE over its expectation
under a correct synthesis model: 1 is ideal).

A task's nightly gate on the measure (``gates: [{measure: repU, above: 3}]``) replaces the
rule of thumb, with the gate's statistic (max or mean over sets).  A value above its threshold
is marked *attention*, else *pass*.  The rules of thumb: repU and DiSCO as percentages of the
original records that a release would expose (5 % is a common upper bound for a public
release); identification risk as the share of records an intruder matches correctly at r*
(Hornby & Hu); S_pMSE below 10 as synthpop's guide for a synthesis model that captures the
data (Raab, Nowok & Dibben).  They are starting points for a decision, not a verdict.

A figure that is high *by construction* says so beside its status (``explanation``), read from
the measure's flag rows of the worst setting (:data:`EXPLAINED_BY`; the measure decides, the
report only words it): keys released unchanged (``same_key_counts``: repU = UiO), keys and
target released unchanged (``same_key_target_counts``: DiSCO = Dorig), and synthpop's
prior-knowledge flags (``check_2way``: a key's level nearly fixes the target's, as when the
target recodes a key; ``check_1way``: one target level holds most disclosive records).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pandas as pd

from pipeline.evaluation.comparison import ADDS_RISK, Comparison
from pipeline.gates import GATE_GROUP, gate_value
from pipeline.measures import holdout_views
from pipeline.report.baselines import footing_settings, largest
from pipeline.report.markup import number_text
from pipeline.results import per_set
from pipeline.risk.idrisk.plots import r_star, risk_points
from pipeline.row_params import of_kind, value_text

RELEASE = ["dataset", "source", "repetition"]
SUMMARY_COLUMNS = [
    "dataset", "source", "repetition", "headline", "value", "threshold", "basis", "status", "explanation", "note"
]  # fmt: skip


@dataclass(frozen=True)
class Headline:
    """One headline measure: its rows, how sets and settings combine, its rule of thumb (in the
    rows' unit) and how its rows' values are shown (times ``scale``, in ``unit``)."""

    title: str
    measure: str
    family: str
    statistic: str  # over the synthetic sets: "max" or "mean"
    rule: float
    types: tuple[str, ...] = ()  # task measure types the rows must come from (empty: any)
    scale: float = 1.0  # a share shown as a percentage: 100
    unit: str = "%"


HEADLINES = (
    Headline("repU (%)", "repU", "disclosure", "max", 5.0),
    Headline("DiSCO (%)", "DiSCO", "disclosure", "max", 5.0),
    Headline("identification risk at r* (%)", "file_risk_at_max", "identification_risk", "max", 0.05, scale=100.0),
    Headline("S_pMSE (utility_gen; ratio)", "S_pMSE", "utility", "mean", 10.0, ("utility_gen",), unit=""),
    Headline(
        "S_pMSE (tables, worst; ratio)", "S_pMSE", "utility", "mean", 10.0, ("utility_tab", "utility_tables"), unit=""
    ),
)


@dataclass(frozen=True)
class Explanation:
    """A flag row a measure emits per synthetic set (non-zero: raised) and what it says of a
    headline's figure; ``text`` is formatted with ``sets`` ("every synthetic set", "2 of 5
    synthetic sets") and ``largest`` (the flag's largest value). A fact about how the figure is
    made is shown whatever the status (``always``); a warning only beside *attention*."""

    flag: str
    text: str
    always: bool = False


#: per headline measure, the flags that explain a high figure, in the order they are shown
EXPLAINED_BY = {
    "repU": (
        Explanation(
            "same_key_counts",
            "keys released unchanged (the original's count in every key combination, {sets}): "
            "repU = UiO by construction",
            always=True,
        ),
    ),
    "DiSCO": (
        Explanation(
            "same_key_target_counts",
            "keys and target released unchanged (the original's count in every key and target combination, "
            "{sets}): DiSCO = Dorig by construction",
            always=True,
        ),
        Explanation(
            "check_2way",
            "prior knowledge (synthpop's check_2way, {sets}): up to {largest:g} key/target level pairs in which "
            "the key's level nearly fixes the target's, as when the target recodes a key: much of DiSCO is "
            "known without the release",
        ),
        Explanation(
            "check_1way",
            "prior knowledge (synthpop's check_1way, {sets}): one target level holds most disclosive records",
        ),
    ),
}


def _gate(manifest: dict[str, Any], h: Headline) -> dict[str, Any] | None:
    for g in manifest["task_spec"].get("gates") or []:
        on_own_rows = g.get("summary") is None and g.get("baseline") is None  # not on an interval bound
        if (
            on_own_rows
            and g["measure"] == h.measure
            and g.get("above") is not None
            and g.get("family") in (None, h.family)
        ):
            return g
    return None


def _entries_of(manifest: dict[str, Any], types: tuple[str, ...]) -> set[str]:
    return {m.get("name") or m["type"] for m in manifest["task_spec"]["measures"] if m["type"] in types}


def _value(rows: pd.DataFrame, statistic: str) -> tuple[float, str, tuple[Any, ...]]:
    """Per gate key (:data:`~pipeline.gates.GATE_GROUP`: measure entry and params within the
    release) the gate value (:func:`~pipeline.gates.gate_value`, as the nightly gates); the worst
    (largest) value, the display text of its setting and its gate key."""
    groups = list(rows.groupby(GATE_GROUP, sort=False))
    values = pd.Series([gate_value(part, statistic) for _, part in groups], dtype=float)
    key, part = groups[values.idxmax()]
    name, setting = key[GATE_GROUP.index("measure_name")], part["setting"].iloc[0]
    return float(values.max()), f"worst: {name}" + (f" [{setting}]" if setting else ""), key


#: the flag rows of one setting of one release: its measure entry and params
FLAG_GROUP = [*RELEASE, "measure_name", "params"]


def _explanation(
    flags: dict[tuple[Any, ...], pd.DataFrame], measure: str, key: tuple[Any, ...], attention: bool
) -> str:
    """What the measure's flag rows (:data:`EXPLAINED_BY`) of the worst setting ``key`` (a
    :data:`FLAG_GROUP` key) say of the figure: each raised flag's text (warnings only with
    ``attention``), "" when none is raised."""
    rows = flags.get(key)
    if rows is None:
        return ""
    out = []
    for e in (e for e in EXPLAINED_BY.get(measure, ()) if e.always or attention):
        values = rows.loc[rows["measure"] == e.flag, "value"]
        raised = int((values > 0).sum())
        if raised:
            sets = "every synthetic set" if raised == len(values) else f"{raised} of {len(values)} synthetic sets"
            out.append(e.text.format(sets=sets, largest=float(values.max())))
    return "; ".join(out)


def _radius_note(best: pd.DataFrame, points: pd.DataFrame, key: tuple[Any, ...]) -> tuple[str, bool]:
    """Each scenario's radius as text — a swept one's maximising radius r* (``best``: :func:`r_star`
    of the results), a fixed one's radius (``points``: :func:`risk_points`, scenarios without an
    r* row) — and whether any r* is at the edge of its grid (the ``r_star_at_boundary`` rows)."""
    best = best[(best["dataset"] == key[0]) & (best["source"] == key[1]) & (best["repetition"] == key[2])]
    notes, edge = [], False
    for _, row in best.iterrows():
        radius = ", ".join(f"{v}={r:g}" for v, r in row["r_star"]) if isinstance(row["r_star"], tuple) else "?"
        at_edge = row["at_boundary"] is True
        edge |= at_edge
        warn = " (at the edge of the radius grid: widen radius_grid)" if at_edge else ""
        notes.append(f"{value_text(row['scenario'])}: r* {radius}{warn}")
    swept = set(zip(best["measure_name"], best["scenario"], strict=True))
    mine = points[(points["dataset"] == key[0]) & (points["source"] == key[1]) & (points["repetition"] == key[2])]
    for _, row in mine.drop_duplicates(["measure_name", "scenario"]).iterrows():
        if (row["measure_name"], row["scenario"]) not in swept:
            notes.append(f"{value_text(row['scenario'])}: fixed radius {row['radius']}")
    return "; ".join(notes), edge


IDRISK = "identification_risk"
#: the identification-risk headline of a release with a holdout: the excess, not the figure at r*
IDRISK_EXCESS = "identification risk, excess over holdout (pp)"


def _left_out(own: pd.DataFrame, key: tuple[Any, ...]) -> str:
    """The records identification risk left out of the matching in a release (the measure's
    ``excluded_share`` rows, per scenario), as text ("" when none)."""
    rows = own[(own["measure"] == "excluded_share") & (own["family"] == IDRISK)]
    rows = rows[(rows["dataset"] == key[0]) & (rows["source"] == key[1]) & (rows["repetition"] == key[2])]
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


def _idrisk_excess(results: pd.DataFrame, best: pd.DataFrame) -> dict[tuple[Any, ...], tuple[Comparison, str]]:
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
        mine = best[
            (best["dataset"] == release[0]) & (best["source"] == release[1]) & (best["repetition"] == release[2])
        ]
        for _, row in mine.iterrows():
            at = [
                (s, x)
                for s, u, x in settings
                if dict(u).get("scenario") == row["scenario"] and _at_radius(u, row["r_star"])
            ]
            for s, x in at:
                same = x is c
                note += (
                    "; file risk largest there too (r*)"
                    if same
                    else f"; file risk largest at r* ({s}): {_comparison_text(x)}"
                )
        out[release] = (c, note)
    return out


def release_summary(results: pd.DataFrame, manifest: dict[str, Any]) -> pd.DataFrame:
    """The headline measures of every release with threshold, basis and pass/attention
    (columns :data:`SUMMARY_COLUMNS`)."""
    own = of_kind(results)  # the measures' own figures, not their baselines and summaries over sets
    rows = per_set(own[own["source"] != ""])
    flag_names = {e.flag for explanations in EXPLAINED_BY.values() for e in explanations}
    flags = dict(list(rows[rows["measure"].isin(flag_names)].groupby(FLAG_GROUP, sort=False)))
    best, points = r_star(own), risk_points(own)  # once, not per release (a study has thousands)
    excess = _idrisk_excess(results, best)
    out = []
    for h in HEADLINES:
        sub = rows[(rows["measure"] == h.measure) & (rows["family"] == h.family)]
        if h.types:
            sub = sub[sub["measure_name"].isin(_entries_of(manifest, h.types))]
        gate = _gate(manifest, h)
        statistic = gate.get("statistic", "max") if gate else h.statistic
        threshold = float(gate["above"]) if gate else h.rule
        shown = f"{threshold * h.scale:g}" + (f" {h.unit}" if h.unit else "")
        basis = f"gate: {statistic} above {shown}" if gate else f"rule of thumb: {statistic} ≤ {shown}"
        if gate and h.scale != 1:
            basis += f" (the task's {threshold:g} as a share)"
        for key, part in sub.groupby(RELEASE, sort=False):
            value, worst, group = _value(part, statistic)
            note, edge = _radius_note(best, points, key) if h.family == "identification_risk" else (worst, False)
            status = "attention" if value > threshold or edge else "pass"
            name, params = group[GATE_GROUP.index("measure_name")], group[GATE_GROUP.index("params")]
            why = _explanation(flags, h.measure, (*key, name, params), status == "attention")
            if h.family == IDRISK:
                left_out = _left_out(own, key)
                note = "; ".join(x for x in (note, left_out) if x)
            if h.family == IDRISK and key in excess:
                c, excess_note = excess[key]
                status = "attention" if c.verdict == ADDS_RISK else "pass"
                basis = "holdout baseline: attention when the 95 % interval is above 0"
                note = "; ".join(x for x in (excess_note, left_out) if x)
                out.append([*key, IDRISK_EXCESS, c.difference.value * 100, 0.0, basis, status, "", note])
                continue
            out.append([*key, h.title, value * h.scale, threshold * h.scale, basis, status, why, note])
    frame = pd.DataFrame(out, columns=SUMMARY_COLUMNS)
    return frame.sort_values(RELEASE, kind="stable").reset_index(drop=True)
