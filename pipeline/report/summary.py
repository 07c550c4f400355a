"""The report's first screen: per release, the headline risk and utility and whether they pass.

One row per release (dataset, synthetic source, repetition) and headline, read from the rows the
measures emit (never recomputed). The headlines are the families' own: each measure declares
its :class:`~pipeline.evaluation.reporting.Headline` s (label, row measure, statistic over the
synthetic sets, threshold and goal, unit, the flag rows that explain a high figure, and a
family's details per release), read here through the registry for the measure types the rows
carry (:func:`pipeline.measures.headlines`). The bundled families declare:

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

A task's nightly gate on the measure (``gates: [{measure: repU, above: 3}]``; ``below`` for a
figure whose goal is to be high) replaces the rule of thumb, with the gate's statistic (max or
mean over sets). A value on the wrong side of its threshold is marked *attention*, else *pass*.
The rules of thumb: repU and DiSCO as percentages of the original records that a release would
expose (5 % is a common upper bound for a public release); identification risk as the share of
records an intruder matches correctly at r* (Hornby & Hu); S_pMSE below 10 as synthpop's guide
for a synthesis model that captures the data (Raab, Nowok & Dibben). They are starting points
for a decision, not a verdict.

``by_threshold`` says whether a line is judged against its threshold (rule of thumb or gate) or,
as a family's detail decided (identification risk's excess over the holdout), otherwise: the
verdict line of a release (:mod:`pipeline.report.verdicts`) names only the former as headlines.

A figure that is high *by construction* says so beside its status (``explanation``), read from
the measure's flag rows of the worst setting (the headline's ``explained_by``; the measure
decides, the report only words it): keys released unchanged (``same_key_counts``: repU = UiO),
keys and target released unchanged (``same_key_target_counts``: DiSCO = Dorig), and synthpop's
prior-knowledge flags (``check_2way``: a key's level nearly fixes the target's, as when the
target recodes a key; ``check_1way``: one target level holds most disclosive records).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from pipeline.evaluation.holdout_rows import RELEASE
from pipeline.evaluation.reporting import Headline
from pipeline.gates import GATE_GROUP, gate_value
from pipeline.measures import headlines
from pipeline.results import per_set
from pipeline.row_params import of_kind

SUMMARY_COLUMNS = [
    "dataset", "source", "repetition", "headline", "value", "threshold", "basis", "status", "explanation", "note",
    "by_threshold",
]  # fmt: skip
#: the flag rows of one setting of one release: its measure entry and params
FLAG_GROUP = [*RELEASE, "measure_name", "params"]


def _gate(manifest: Mapping[str, Any], h: Headline, family: str) -> dict[str, Any] | None:
    """The task's gate on the headline's own rows, with a threshold on the side its goal judges."""
    side = "above" if h.goal == "minimize" else "below"
    for g in manifest["task_spec"].get("gates") or []:
        on_own_rows = g.get("summary") is None and g.get("baseline") is None  # not on an interval bound
        if on_own_rows and g["measure"] == h.measure and g.get(side) is not None and g.get("family") in (None, family):
            return g
    return None


def _value(rows: pd.DataFrame, statistic: str, goal: str) -> tuple[float, str, tuple[Any, ...]]:
    """Per gate key (:data:`~pipeline.gates.GATE_GROUP`: measure entry and params within the
    release) the gate value (:func:`~pipeline.gates.gate_value`, as the nightly gates); the worst
    value (the largest when lower is better, else the smallest), the display text of its setting
    and its gate key."""
    groups = list(rows.groupby(GATE_GROUP, sort=False))
    values = pd.Series([gate_value(part, statistic) for _, part in groups], dtype=float)
    at = values.idxmax() if goal == "minimize" else values.idxmin()
    key, part = groups[at]
    name, setting = key[GATE_GROUP.index("measure_name")], part["setting"].iloc[0]
    return float(values[at]), f"worst: {name}" + (f" [{setting}]" if setting else ""), key


def _explanation(h: Headline, flags: dict[tuple[Any, ...], pd.DataFrame], key: tuple[Any, ...], attention: bool) -> str:
    """What the measure's flag rows (the headline's ``explained_by``) of the worst setting ``key``
    (a :data:`FLAG_GROUP` key) say of the figure: each raised flag's text (warnings only with
    ``attention``), "" when none is raised."""
    rows = flags.get(key)
    if rows is None:
        return ""
    out = []
    for e in (e for e in h.explained_by if e.always or attention):
        values = rows.loc[rows["measure"] == e.flag, "value"]
        raised = int((values > 0).sum())
        if raised:
            sets = "every synthetic set" if raised == len(values) else f"{raised} of {len(values)} synthetic sets"
            out.append(e.text.format(sets=sets, largest=float(values.max())))
    return "; ".join(out)


def _basis(h: Headline, gate: dict[str, Any] | None, statistic: str, threshold: float) -> str:
    shown = f"{threshold * h.scale:g}" + (f" {h.unit}" if h.unit else "")
    if gate:
        basis = f"gate: {statistic} {'above' if h.goal == 'minimize' else 'below'} {shown}"
        return basis + (f" (the task's {threshold:g} as a share)" if h.scale != 1 else "")
    return f"rule of thumb: {statistic} {'≤' if h.goal == 'minimize' else '≥'} {shown}"


def release_summary(results: pd.DataFrame, manifest: Mapping[str, Any]) -> pd.DataFrame:
    """The headlines of every release with threshold, basis and pass/attention (columns
    :data:`SUMMARY_COLUMNS`), in the order the registry lists the measures declaring them."""
    own = of_kind(results)  # the measures' own figures, not their baselines and summaries over sets
    rows = per_set(own[own["source"] != ""])
    declared = headlines(rows["type"].dropna())
    flag_names = {e.flag for h, _, _ in declared for e in h.explained_by}
    flags = dict(list(rows[rows["measure"].isin(flag_names)].groupby(FLAG_GROUP, sort=False)))
    out = []
    for h, family, types in declared:
        sub = rows[(rows["measure"] == h.measure) & rows["type"].isin(types)]
        if sub.empty:
            continue
        details = h.detail_function()
        detail = details(own, results) if details else {}
        gate = _gate(manifest, h, family)
        statistic = gate.get("statistic", "max") if gate else h.statistic
        threshold = float(gate["above" if h.goal == "minimize" else "below"]) if gate else h.threshold
        basis = _basis(h, gate, statistic, threshold)
        for key, part in sub.groupby(RELEASE, sort=False):
            value, worst, group = _value(part, statistic, h.goal)
            extra = detail.get(key)
            if extra is not None and extra.judged is not None:
                label, judged, bound, how = extra.judged
                status = "attention" if extra.attention else "pass"
                out.append([*key, label, judged, bound, how, status, "", extra.note, False])
                continue
            beyond = value > threshold if h.goal == "minimize" else value < threshold
            status = "attention" if beyond or (extra is not None and extra.attention) else "pass"
            name, params = group[GATE_GROUP.index("measure_name")], group[GATE_GROUP.index("params")]
            why = _explanation(h, flags, (*key, name, params), status == "attention")
            note = extra.note if extra is not None else worst
            out.append([*key, h.label, value * h.scale, threshold * h.scale, basis, status, why, note, True])
    frame = pd.DataFrame(out, columns=SUMMARY_COLUMNS)
    return frame.sort_values(RELEASE, kind="stable").reset_index(drop=True)
