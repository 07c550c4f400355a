"""synthpop's ``compare.synds``: per variable, the distribution in the original and in the pooled
synthetic sets (bar data of its plots) and the one-way table utility (``utility.tab``).

* factors: ``table(x, useNA = "always")``, the NA column kept only when the original has
  missing values; a numeric variable with fewer than 6 distinct original values is a factor of
  those values (synthpop's rule);
* numeric: ``hist(breaks = breaks)`` on the original and pooled synthetic values together,
  missing values and ``cont.na`` codes left out, then one ``miss.<code>`` column per code
  present and ``miss.NA`` when the original has missing values;
* values are percentages of all records, or counts (the pooled synthetic counts divided by m);
* ``tab.utility``: per variable, the mean over the m sets of ``utility.tab(vars = <var>)``.

The rows (what is written) show a level or value held by fewer than 10 original records as
``level <i> (<10 records)``; histogram labels are R's ``pretty`` breaks, rounded outward from the
data's range, never a record's value unless it happens to be a round number.

Two passes over every data set (distinct values and ranges; the counts), exact integer sums.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from pipeline.evaluation.public import coarsened_levels
from pipeline.rcompat import as_character, format_breaks, hist_counts, pretty
from pipeline.utility.params import UtilityCompareParams, UtilityTabParams, compared_variables
from pipeline.utility.result import UtilityCompareResult

if TYPE_CHECKING:
    from pipeline.evaluation.data import EvalData
    from pipeline.evaluation.execution import Executor

#: synthpop treats a numeric variable with fewer distinct original values than this as a factor
FEW_VALUES = 6


@dataclass(frozen=True)
class ColumnPlan:
    """How one variable is tabulated: ``levels`` (factor codes, or the few numeric values) or
    ``breaks`` (histogram), the special codes of a numeric one, and whether NA gets a column."""

    name: str
    kind: str  # "factor", "values" (few numeric values) or "histogram"
    n_levels: int = 0
    values: tuple[float, ...] = ()
    breaks: tuple[float, ...] = ()
    codes: tuple[float, ...] = ()
    with_na: bool = False


def _facts_kernel(part: pd.DataFrame, numerics: Sequence[str], codes: dict[str, tuple[float, ...]]) -> dict[str, Any]:
    """Per numeric variable: up to 6 distinct values, the range without NA and codes, the codes
    present; per variable whether a value is missing."""
    out: dict[str, Any] = {"na": {c: bool(part[c].isna().any()) for c in part.columns}, "num": {}}
    for c in numerics:
        v = part[c].to_numpy(dtype=float)
        v = v[~np.isnan(v)]
        special = np.isin(v, codes.get(c, ()))
        kept = v[~special]
        out["num"][c] = (
            np.unique(v)[:FEW_VALUES],
            (float(kept.min()), float(kept.max())) if kept.size else None,
            tuple(np.unique(v[special]).tolist()),
        )
    return out


def _merge_facts(parts: Sequence[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"na": {}, "num": {}}
    for c in parts[0]["na"]:
        out["na"][c] = any(p["na"][c] for p in parts)
    for c in parts[0]["num"]:
        distinct = np.unique(np.concatenate([p["num"][c][0] for p in parts]))[:FEW_VALUES]
        ranges = [p["num"][c][1] for p in parts if p["num"][c][1] is not None]
        span = (min(r[0] for r in ranges), max(r[1] for r in ranges)) if ranges else None
        present = tuple(sorted({x for p in parts for x in p["num"][c][2]}))
        out["num"][c] = (distinct, span, present)
    return out


def _count_kernel(part: pd.DataFrame, plans: Sequence[ColumnPlan]) -> list[np.ndarray]:
    """Per variable, the counts of its columns (levels or bins, then codes, then NA)."""
    out = []
    for plan in plans:
        s = part[plan.name]
        if plan.kind == "factor":
            codes = s.cat.codes.to_numpy().astype(np.int64)
            counts = np.bincount(np.where(codes < 0, plan.n_levels, codes), minlength=plan.n_levels + 1)
            out.append(counts if plan.with_na else counts[:-1])
            continue
        v = s.to_numpy(dtype=float)
        missing = np.isnan(v)
        if plan.kind == "values":
            present = v[~missing]
            idx = np.searchsorted(plan.values, present)
            # a synthetic value the original lacks has no column (synthpop rbinds by position)
            found = np.asarray((*plan.values, np.nan))[np.minimum(idx, len(plan.values))] == present
            counts = np.bincount(idx[found], minlength=len(plan.values))
            out.append(np.concatenate([counts, [missing.sum()]]) if plan.with_na else counts)
            continue
        special = np.isin(v, plan.codes)
        counts = hist_counts(v[~missing & ~special], np.asarray(plan.breaks))
        by_code = [int(np.sum(v == c)) for c in plan.codes]
        out.append(np.concatenate([counts, by_code, [missing.sum()] if plan.with_na else []]).astype(np.int64))
    return out


def _sum_counts(parts: Sequence[list[np.ndarray]]) -> list[np.ndarray]:
    return [np.sum([p[i] for p in parts], axis=0) for i in range(len(parts[0]))]


def _plan(name: str, data: EvalData, facts: list[dict[str, Any]], breaks: int) -> tuple[ColumnPlan, list[str | None]]:
    """The plan of one variable and its column labels (``None``: the NA column)."""
    v = data.schema[name]
    with_na = facts[0]["na"][name]
    if v.is_factor:
        levels = list(v.levels or ())
        return ColumnPlan(name, "factor", len(levels), with_na=with_na), [*levels, *([None] if with_na else [])]
    distinct, _, _ = facts[0]["num"][name]
    if len(distinct) < FEW_VALUES:
        labels = [as_character(float(x)) for x in distinct]
        plan = ColumnPlan(name, "values", values=tuple(float(x) for x in distinct), with_na=with_na)
        return plan, [*labels, *([None] if with_na else [])]
    spans = [f["num"][name][1] for f in facts if f["num"][name][1] is not None]
    lo, hi = min(s[0] for s in spans), max(s[1] for s in spans)
    edges = pretty(lo, hi, breaks, min_n=1)
    codes = tuple(sorted({c for f in facts for c in f["num"][name][2]}))
    labels = format_breaks(edges[:-1]) + [f"miss.{as_character(c)}" for c in codes] + (["miss.NA"] if with_na else [])
    return ColumnPlan(name, "histogram", breaks=tuple(edges), codes=codes, with_na=with_na), labels


def evaluate_compare(params: UtilityCompareParams, data: EvalData, executor: Executor) -> UtilityCompareResult:
    """``compare.synds`` of ``data`` (``cont_na`` merged into its schema)."""
    from pipeline.utility.compute import evaluate_tab

    names = compared_variables(params.vars, data)
    data = executor.prepare(data.select(names))
    numerics = [n for n in names if not data.schema[n].is_factor]
    codes = {n: tuple(data.schema[n].missing_codes) for n in numerics}
    facts = executor.compute(*[executor.map_reduce(f, _facts_kernel, _merge_facts, numerics, codes)
                               for f in data.frames])  # fmt: skip
    planned = [_plan(n, data, facts, params.breaks) for n in names]
    plans = [p for p, _ in planned]
    counts = executor.compute(*[executor.map_reduce(f, _count_kernel, _sum_counts, plans) for f in data.frames])
    rows = executor.rows(data)
    m = data.m
    tables, written = {}, {}
    for i, (plan, labels) in enumerate(planned):
        obs = counts[0][i].astype(float)
        if plan.kind != "histogram":  # factor levels and few numeric values: rare ones are not written
            shown = coarsened_levels(labels, obs)
            written[plan.name] = tuple(shown.get(str(lab), lab) for lab in labels)
        syn = np.sum([c[i] for c in counts[1:]], axis=0).astype(float)
        if params.stat == "percents":
            obs, syn = obs * 100 / rows[0], syn * 100 / sum(rows[1:])
        else:
            syn = syn / m
        tables[plan.name] = (tuple(labels), obs, syn)
    stats = params.stats
    utility = pd.DataFrame(index=pd.Index(names, name="variable"), columns=stats, dtype=float)
    for n in names:
        tab = evaluate_tab(UtilityTabParams(vars=[n], ngroups=params.ngroups), data, executor)
        utility.loc[n] = tab.stats[stats].mean(axis=0).to_numpy(dtype=float)
    kinds = {p.name: ("numeric" if p.kind == "histogram" else "factor") for p in plans}
    breaks = {p.name: p.breaks for p in plans if p.kind == "histogram"}
    return UtilityCompareResult(params.stat, tuple(names), tables, utility, kinds, breaks, m, written)
