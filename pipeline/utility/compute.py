"""The utility measures' evaluations, composed from kernels and executor primitives.

* :func:`evaluate_tab`, :func:`evaluate_tables` — the table counts of
  :mod:`pipeline.utility.tab` (a kernel per partition, an exact integer combine) and their
  statistics.
* :func:`evaluate_synds` — ``utility_synds``: every fit an independent task.
* ``utility_gen``'s evaluation is :func:`pipeline.utility.gen.evaluate_gen` (beside its fitting
  rounds).

``utility_synds`` (synthpop 1.2-1)
----------------------------------
``utility_synds``: synthpop 1.2-1's ``utility.synds`` (several propensity models per call).

The utility of each synthetic set is the propensity MSE ``pMSE = sum (p - c)^2 / N`` of a
model telling the original (``t = 0``, stacked first) from the set (``t = 1``), with
``c`` = the synthetic share, for every method asked for (``"logit"``: all interactions up to
``maxorder + 1``, R's glm; ``"cart"``: rpart with ``cp = 1e-4``; ``"poly"``: polspline's
polyclass with penalty 0, :mod:`pipeline.rmodels.polyclass`).  Options, as in 1.2-1:

* ``deviance``: a deviance statistic per method and set (deviance / N) and its df (logit: the
  model's non-aliased parameters minus 1; cart: ``2 x nodes - 1``);
* ``null_utility``: the pairwise null — set ``j`` (``t = 0``) against set ``ind``
  (``t = 1``) for every ordered pair, the m x m matrix per method, and ``Mean diff`` /
  ``Mean ratio`` of the mean utility against the mean off-diagonal null value;
* ``syn_only``: only the synthesised variables (``synthesised`` names them);
* ``all_comb``: the m sets stacked and compared with the original once.

Every fit (method x set, or method x ordered pair) is an independent task
(:meth:`~pipeline.evaluation.execution.Executor.map_frame_tasks`): on a cluster each data
set is assembled on a worker, never on the client.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from pipeline import notices
from pipeline.errors import ParameterError
from pipeline.evaluation.data import EvalData
from pipeline.evaluation.execution import Executor
from pipeline.utility.params import (
    Kind,
    UtilitySyndsParams,
    UtilityTablesParams,
    UtilityTabParams,
    check_table_variables,
    compared_variables,
    synds_synthesised,
    synds_variables,
    variable_kinds,
)
from pipeline.utility.result import UtilitySyndsResult, UtilityTablesResult, UtilityTabResult
from pipeline.utility.synds_model import FitSettings, fit_comparison, has_missing
from pipeline.utility.tab import build_table_variables, count_tables, table_statistics


def _pair_results(
    tabs: list[list[np.ndarray]], k: int, k_syn: bool
) -> tuple[pd.DataFrame, np.ndarray, list[np.ndarray], list[np.ndarray]]:
    obs = tabs[0][k]
    rows, syns, zs = [], [], []
    for i in range(1, len(tabs)):
        stats, z = table_statistics(obs, tabs[i][k], k_syn)
        rows.append(stats)
        syns.append(tabs[i][k])
        zs.append(z)
    frame = pd.DataFrame(rows, index=pd.Index(range(1, len(tabs)), name="synthetic"))
    return frame, obs, syns, zs


def evaluate_tab(params: UtilityTabParams, data: EvalData, executor: Executor) -> UtilityTabResult:
    """Table utility of one table (synthpop's ``utility.tab``) of ``data`` (``cont_na`` merged).

    Two passes over every data set: value counts (binning and levels), then the table counts.
    """
    names = list(params.vars)
    data = executor.prepare(data.select(names))
    tvars, notes = build_table_variables(data, executor, names, params.ngroups, params.use_na, "utility_tab")
    size = math.prod(tv.size for tv in tvars)
    if size > params.max_table:
        raise ParameterError(
            f"utility_tab: the table of {', '.join(names)} has {size} cells, more than max_table = {params.max_table:g}"
        )
    tabs = count_tables(data, executor, tvars, [list(range(len(tvars)))])
    n1 = int(tabs[0][0].sum())
    if size > n1 / 2:
        notes.append(
            f"utility_tab: {size} cells from {n1} original records; results from sparse tables may be unreliable"
        )
    for n in notes:
        notices.warn(n, stacklevel=3)
    stats, obs, syns, zs = _pair_results(tabs, 0, params.k_syn)
    return UtilityTabResult(
        vars=tuple(names),
        k_syn=params.k_syn,
        stats=stats,
        tab_obs=obs,
        tab_syn=tuple(syns),
        tab_zdiff=tuple(zs),
        levels=tuple(tv.labels for tv in tvars),
        notes=tuple(notes),
        breaks=tuple(tv.binning.breaks if tv.binning is not None else None for tv in tvars),
    )


def _var_label_prefix(positions: Sequence[int]) -> list[str]:
    width = len(str(max(positions)))
    return [str(p).zfill(width) for p in positions]


def evaluate_tables(params: UtilityTablesParams, data: EvalData, executor: Executor) -> UtilityTablesResult:
    """Table utility of every low-order combination of variables (synthpop's ``utility.tables``).

    ``data`` has ``cont_na`` merged.  All tables are counted in one pass over each data set;
    numeric variables are binned once.  ``max_table`` is forwarded to every table (synthpop
    1.9-2 does not forward it, spec §5.3.6).  When there are more than ``maxtables``
    combinations a random sample (``seed``) is used.
    """
    names = compared_variables(params.vars, data)
    check_table_variables(names, params.tables, params.third_var)
    data.require(names)
    # synthpop labels (and orders) the variables by their position in the synthetic data
    syn_cols = [str(c) for c in data.synthetic[0].columns]
    positions = [syn_cols.index(n) + 1 for n in names]
    order = np.argsort(positions, kind="stable")
    names = [names[i] for i in order]
    positions = [positions[i] for i in order]
    labels = [f"{p}.{n}" for p, n in zip(_var_label_prefix(positions), names, strict=True)]
    combos = list(combinations(range(len(names)), params.order))
    sampled = False
    if len(combos) > params.maxtables:
        rng = np.random.default_rng(params.seed)
        sel = np.sort(rng.choice(len(combos), size=params.maxtables, replace=False))
        combos = [combos[i] for i in sel]
        sampled = True
    data = executor.prepare(data.select(names))
    tvars, notes = build_table_variables(data, executor, names, params.ngroups, params.use_na, "utility_tables")
    for sub in combos:
        size = math.prod(tvars[j].size for j in sub)
        if size > params.max_table:
            raise ParameterError(
                f"utility_tables: the table of {', '.join(names[j] for j in sub)} has {size} cells, "
                f"more than max_table = {params.max_table:g}"
            )
    for n in notes:
        notices.warn(n, stacklevel=3)
    tabs = count_tables(data, executor, tvars, combos)
    combo_labels = [":".join(labels[j] for j in sub) for sub in combos]
    rows = []
    means = []
    worst_tables_all = []
    for ci, sub in enumerate(combos):
        stats, obs, syns, _ = _pair_results(tabs, ci, params.k_syn)
        means.append(stats.mean())
        worst_tables_all.append({"tab_obs": obs, "tab_syn": syns, "levels": [tvars[j].labels for j in sub]})
        for i, row in stats.iterrows():
            for name, value in row.items():
                rows.append((str(i), combo_labels[ci], name, float(value)))
    per_set = pd.DataFrame(rows, columns=["synthetic", "combination", "measure", "value"])
    mean_frame = pd.DataFrame(means, index=pd.Index(combo_labels, name="combination"))
    tabs_frame = mean_frame[params.stats_wanted]
    val = mean_frame[params.plot_stat]
    nw = min(len(val), params.nworst)
    worst_idx = np.argsort(-val.to_numpy(), kind="stable")[:nw]
    worst = val.iloc[worst_idx]
    worst_tables = {combo_labels[i]: worst_tables_all[i] for i in worst_idx}
    scores = {}
    for j, lab in enumerate(labels):
        hit = np.array([j in sub for sub in combos])
        scores[lab] = float(val[hit].mean()) if hit.any() else float("nan")
    var_scores = pd.Series(scores).sort_values(ascending=False, kind="stable")
    third = None
    if params.tables == "threeway":
        third = str(var_scores.index[0]) if params.third_var is None else labels[names.index(params.third_var)]
    return UtilityTablesResult(
        tables=params.tables,
        tabs=tabs_frame,
        per_set=per_set,
        plot_stat=params.plot_stat,
        labels=tuple(labels),
        combinations=tuple(tuple(labels[j] for j in sub) for sub in combos),
        combination_vars=tuple(tuple(names[j] for j in sub) for sub in combos),
        var_scores=var_scores,
        third_var=third,
        worst=worst,
        worst_tables=worst_tables,
        values=val,
        sampled=sampled,
    )


def _fit_task(
    kinds: Sequence[Kind],
    settings: FitSettings,
    frames: Sequence[pd.DataFrame],
    n_original: int,
    fill_from: tuple[int, ...],
    method: str,
    want_scores: bool,
) -> dict[str, Any]:
    """One fit on a worker: fill when ``frames[i]`` has missing values for some i in ``fill_from``; then the model."""
    names = [k.name for k in kinds]
    fill = has_missing([frames[i] for i in fill_from], names)
    return fit_comparison(kinds, settings, frames, n_original, fill, method, want_scores)


def evaluate_synds(params: UtilitySyndsParams, data: EvalData, executor: Executor) -> UtilitySyndsResult:
    """Evaluate ``utility_synds`` on ``data`` (checked) with ``executor``."""
    names = synds_variables(params, data)
    synthesised = synds_synthesised(params, data)
    kinds = variable_kinds(data.schema, names)
    dropped = len(names) < len(data.columns)
    # no executor.prepare: every fit reads whole data sets, assembled on a worker (never on the client)
    data = data.select(names)
    settings = FitSettings(
        params.maxorder, params.cp, params.minbucket, params.minsplit, params.maxdepth, params.r_fill_quirk
    )
    m = data.m
    methods = list(params.method)
    # 1.2-1 fills when the original has missing values; a set with missing values where the
    # original has none is filled too (R's glm would fail there, its rpart route by surrogates)
    main = [(0, *range(1, m + 1))] if params.all_comb else [(0, i) for i in range(1, m + 1)]
    jobs = [(sets, 1, tuple(range(len(sets))), meth, True) for sets in main for meth in methods]
    pairs = [(j, ind) for j in range(1, m + 1) for ind in range(1, m + 1)] if params.null_utility else []
    # null (1.2-1's null.compute): set j labelled 0, set ind labelled 1, filled when set j has missing values
    jobs += [((j, ind), 1, (0, 1), meth, False) for j, ind in pairs for meth in methods]
    results = executor.map_frame_tasks(_fit_task, jobs, data.frames, (kinds, settings))
    main_res = results[: len(main) * len(methods)]
    null_res = results[len(main) * len(methods) :]
    rownames = ["syn.comb"] if params.all_comb else [f"syn={i}" for i in range(1, m + 1)]
    m0 = len(rownames)
    util = pd.DataFrame(
        {meth: [main_res[i * len(methods) + k]["pMSE"] for i in range(m0)] for k, meth in enumerate(methods)},
        index=rownames,
    )
    dev = None
    if params.deviance:
        cols: dict[str, list[float]] = {}
        for k, meth in enumerate(methods):
            cols[f"{meth} Stat"] = [main_res[i * len(methods) + k]["stat"] for i in range(m0)]
            cols[f"{meth} DF"] = [float(main_res[i * len(methods) + k]["df"]) for i in range(m0)]
        dev = pd.DataFrame(cols, index=rownames)
    null = None
    if params.null_utility:
        null = {meth: np.zeros((m, m)) for meth in methods}
        for p_idx, (j, ind) in enumerate(pairs):
            for k, meth in enumerate(methods):
                null[meth][ind - 1, j - 1] = null_res[p_idx * len(methods) + k]["pMSE"]
    scores = np.stack(
        [np.column_stack([main_res[i * len(methods) + k]["scores"] for k in range(len(methods))]) for i in range(m0)],
        axis=2,
    )
    notes = []
    if params.syn_only and dropped:
        notes.append("Non-synthesized variables not used in computing the utility.")
    if not params.syn_only and synthesised is not None and set(names) - set(synthesised):
        notes.append("NOTE: Non-synthesized variables also used in computing the utility.")
    for label, res in zip(_job_labels(main, pairs, methods), results, strict=True):
        notes += [f"{label}: {message}" for message in dict.fromkeys(res["messages"])]
    return UtilitySyndsResult(
        method=tuple(methods),
        utility_raw=util,
        deviance_raw=dev,
        null_raw=null,
        ind_propensity_scores=scores,
        variables=tuple(names),
        model_columns=tuple(main_res[0]["columns"]),
        all_comb=params.all_comb,
        notes=tuple(notes),
        settings={
            "cp": params.cp,
            "maxorder": params.maxorder,
            "minbucket": params.minbucket,
            "minsplit": params.minsplit,
            "maxdepth": params.maxdepth,
            "r_fill_quirk": params.r_fill_quirk,
        },
    )


def _job_labels(main: Sequence[tuple[int, ...]], pairs: Sequence[tuple[int, int]], methods: Sequence[str]) -> list[str]:
    """How notes name each fit, in job order (comparisons with the original, then null pairs)."""
    labels = [
        f"{meth}, {'all sets stacked' if len(sets) > 2 else f'synthetic set {sets[1]}'}"
        for sets in main
        for meth in methods
    ]
    labels += [f"{meth}, null pair (set {j} vs set {ind})" for j, ind in pairs for meth in methods]
    return labels
