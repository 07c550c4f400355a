"""``utility_tab`` and ``utility_tables``: synthpop's table-based utility (synthpop 1.9-2).

For the variables of a table the original and each synthetic set are cross-tabulated over all
level combinations (numeric variables binned as synthpop's ``group_num``); the statistics
compare the synthetic counts ``s_j`` with the counts expected from the original ``r o_j``
over the non-empty cells (spec §3).  Counting is a kernel per partition with an exact
combine (integer counts, summed), so the tables do not depend on the partitioning.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from pipeline.errors import ParameterError
from pipeline.evaluation.base import Result, Row
from pipeline.evaluation.data import EvalData
from pipeline.evaluation.execution import Executor
from pipeline.evaluation.public import LevelCounts
from pipeline.utility.binning import Binning, make_binning
from pipeline.utility.params import (
    TAB_STATS,
    UtilityTablesParams,
    UtilityTabParams,
    check_table_variables,
    compared_variables,
)
from pipeline.utility.prepare import profile_sets
from pipeline.utility.scores import ks_statistic, wilcoxon_w

__all__ = ["TAB_STATS", "UtilityTabResult", "UtilityTablesResult", "evaluate_tab", "evaluate_tables"]


# ---------------------------------------------------------------------------------------------
# coding variables into table levels
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TableVariable:
    """How one variable becomes a table dimension.

    Attributes
    ----------
    name : str
    labels : tuple
        Level labels in table order; ``None`` is the NA category (last, when present).
    binning : Binning or None
        For numeric variables.
    na_category : bool
        Whether missing values form a category (else records with a missing value are left out).
    """

    name: str
    labels: tuple[str | None, ...]
    binning: Binning | None = None
    na_category: bool = False
    character_levels: tuple[str, ...] | None = field(default=None)

    @property
    def size(self) -> int:
        return len(self.labels)

    def codes(self, s: pd.Series) -> np.ndarray:
        """0-based level of every record; -1 where the record is left out of the table."""
        if self.binning is not None:
            codes = self.binning.assign(s.to_numpy(dtype=float, na_value=np.nan))
        elif self.character_levels is not None:
            cat = pd.Categorical(s.astype(object).where(s.notna(), None), categories=list(self.character_levels))
            codes = np.asarray(cat.codes, dtype=np.int64)
        else:
            codes = np.asarray(s.cat.codes, dtype=np.int64)
        if self.na_category:
            codes = np.where(codes < 0, self.size - 1, codes)
        return codes


def build_table_variables(
    data: EvalData, executor: Executor, names: Sequence[str], ngroups: int, use_na: bool, where: str
) -> tuple[list[TableVariable], list[str]]:
    """Binning and level sets of ``names`` (one pass over every data set for the counts needed)."""
    schema = data.schema
    numeric = [n for n in names if schema[n].is_numeric]
    character = [n for n in names if schema[n].kind == "character"]
    profiles = profile_sets(data, executor, names, count_numeric_values=True, codes={})
    counts = {(n, i): p["vc"][n] for n in numeric + character for i, p in enumerate(profiles)}
    na_flags = [{n: p["na"].get(n, 0) > 0 for n in names} for p in profiles]
    notes: list[str] = []
    out = []
    for n in names:
        orig_na = na_flags[0][n]
        syn_na = any(flags[n] for flags in na_flags[1:])
        na_cat = use_na and (orig_na or syn_na)
        if use_na and syn_na and not orig_na:
            notes.append(
                f"{where}: {n!r} has missing values in synthetic data only; they form an NA category "
                "(synthpop stops on the dimension mismatch)"
            )
        if n in numeric:
            codes = schema[n].missing_codes
            pooled = pd.concat([counts[(n, i)] for i in range(len(profiles))]).groupby(level=0).sum()
            pooled = pooled[~pooled.index.isin(codes)].sort_index()
            values = pooled.index.to_numpy(dtype=float)
            cnts = pooled.to_numpy(dtype=float)
            binning = make_binning(values, cnts, ngroups, codes)
            orig_levels = _binned_levels_used(binning, counts[(n, 0)])
            if orig_levels < 3:
                binning = make_binning(values, cnts, ngroups, codes, style="equal")
                if _binned_levels_used(binning, counts[(n, 0)]) < 3:
                    notes.append(f"{where}: numeric variable {n!r} has fewer than 3 groups even with equal-width bins")
            labels: tuple[str | None, ...] = binning.levels
            tv = TableVariable(n, labels + ((None,) if na_cat else ()), binning=binning, na_category=na_cat)
        elif n in character:
            levels = tuple(sorted(str(x) for x in counts[(n, 0)].index))
            tv = TableVariable(n, levels + ((None,) if na_cat else ()), na_category=na_cat, character_levels=levels)
        else:
            levels = tuple(schema[n].levels or ())
            tv = TableVariable(n, levels + ((None,) if na_cat else ()), na_category=na_cat)
        out.append(tv)
    return out, notes


def _binned_levels_used(binning: Binning, orig_counts: pd.Series) -> int:
    """Number of levels of the original's binned factor (R ``nlevels`` after ``factor()``)."""
    values = orig_counts.index.to_numpy(dtype=float)
    codes = binning.assign(values)
    return len(np.unique(codes[codes >= 0]))


def _table_kernel(part: pd.DataFrame, tvars: Sequence[TableVariable], subsets: Sequence[Sequence[int]]) -> list:
    codes = [tv.codes(part[tv.name]) for tv in tvars]
    out = []
    for sub in subsets:
        dims = [tvars[j].size for j in sub]
        flat = np.zeros(len(part), dtype=np.int64)
        keep = np.ones(len(part), dtype=bool)
        stride = 1
        for j, d in zip(sub, dims, strict=True):  # first variable varies fastest (R order)
            keep &= codes[j] >= 0
            flat += codes[j] * stride
            stride *= d
        out.append(np.bincount(flat[keep], minlength=stride).astype(np.int64))
    return out


def _sum_lists(parts: Sequence[list]) -> list:
    parts = [p for p in parts if p is not None]
    return [np.sum([p[k] for p in parts], axis=0) for k in range(len(parts[0]))]


def count_tables(
    data: EvalData, executor: Executor, tvars: Sequence[TableVariable], subsets: Sequence[Sequence[int]]
) -> list[list[np.ndarray]]:
    """Tables (as arrays shaped by the subsets' level counts) of every data set and subset."""
    lazy = [executor.map_reduce(f, _table_kernel, _sum_lists, tvars, subsets) for f in data.frames]
    results = executor.compute(*lazy)
    out = []
    for res in results:
        tabs = []
        for sub, flat in zip(subsets, res, strict=True):
            dims = tuple(tvars[j].size for j in sub)
            tabs.append(np.asarray(flat).reshape(dims, order="F"))
        out.append(tabs)
    return out


# ---------------------------------------------------------------------------------------------
# statistics of one pair of tables
# ---------------------------------------------------------------------------------------------
def table_statistics(
    tab_obs: np.ndarray, tab_syn: np.ndarray, k_syn: bool = False
) -> tuple[dict[str, float], np.ndarray]:
    """Every statistic of synthpop's ``utility.tab`` for one original/synthetic table pair.

    Returns the statistics (``TAB_STATS`` plus ``nempty``) and the table of z-scores.
    """
    o_all = tab_obs.astype(float)
    s_all = tab_syn.astype(float)
    both = (o_all + s_all).ravel(order="F")
    keep = both > 0
    td = o_all.ravel(order="F")[keep]
    ts = s_all.ravel(order="F")[keep]
    nempty = int(np.sum(both == 0))
    K = len(td)
    df = K if k_syn else K - 1
    N = float(np.sum(ts + td))
    cc = float(np.sum(ts)) / N
    sumos = ts + td
    expect = sumos * cc
    diff = ts - td * cc / (1 - cc)
    VW = float(np.sum(diff**2 / expect))
    FT = float(4 * np.sum((np.sqrt(ts) - np.sqrt(cc / (1 - cc) * td)) ** 2))
    with np.errstate(divide="ignore", invalid="ignore"):
        zdiff = (s_all - o_all * cc / (1 - cc)) / np.sqrt((s_all + o_all) * cc)
        S_FT = FT / df
        S_VW = VW / df
        pMSE = VW * cc * (1 - cc) ** 2 / N
        ptabd = td / np.sum(td)
        ptabs = ts / np.sum(ts)
        phalf = (ptabd + ptabs) * 0.5
        jsd = float(
            np.sum((ptabd * np.log2(ptabd / phalf))[ptabd > 0]) / 2
            + np.sum((ptabs * np.log2(ptabs / phalf))[ptabs > 0]) / 2
        )
        S_JSD = jsd * 2 * N / df / math.log(2)
        okc = (ts > 1e-8) & (td > 1e-8)
        sok, dok = ts[okc], td[okc]
        dfG = len(dok) if k_syn else len(dok) - 1
        G = float(2 * np.sum(sok * np.log(sok / np.sum(sok) / dok * np.sum(dok))))
        S_G = G / dfG
        score = ts / (ts + td)
        SPECKS = ks_statistic(score, ts, td)
        U = wilcoxon_w(score, ts, td)
        predsyn = ptabs > ptabd
        PO50 = float((np.sum(ts[predsyn]) + np.sum(td[~predsyn])) / (np.sum(ts) + np.sum(td)) * 100 - 50)
        MabsDD = float(np.sum(np.abs(diff)) / np.sum(ts))
        WMabsDD = float(np.sum(np.abs(diff) / np.sqrt(expect)) / math.sqrt(2 / math.pi))
        S_WMabsDD = WMabsDD / df
        dBhatt = float(np.sqrt(1 - np.sum(np.sqrt(ptabd * ptabs))))
    stats = {
        "VW": VW, "FT": FT, "JSD": jsd, "SPECKS": SPECKS, "WMabsDD": WMabsDD, "U": U, "G": G, "pMSE": pMSE,
        "PO50": PO50, "MabsDD": MabsDD, "dBhatt": dBhatt, "S_VW": S_VW, "S_FT": S_FT, "S_JSD": S_JSD,
        "S_WMabsDD": S_WMabsDD, "S_G": S_G, "S_pMSE": S_VW, "df": float(df), "dfG": float(dfG),
        "nempty": float(nempty),
    }  # fmt: skip
    return {k: float(v) for k, v in stats.items()}, zdiff


# ---------------------------------------------------------------------------------------------
# results
# ---------------------------------------------------------------------------------------------
def _set_rows(stats: pd.DataFrame, params: dict[str, Any]) -> list[Row]:
    """A row per synthetic set and statistic, then the means over the sets (synthetic ``"mean"``)."""
    rows = [Row(str(i), str(name), float(v), params) for i, row in stats.iterrows() for name, v in row.items()]
    rows += [Row("mean", str(name), float(stats[name].mean()), params) for name in stats.columns]
    return rows


@dataclass(frozen=True)
class UtilityTabResult(Result):
    """Output of :func:`~pipeline.utility.measure.utility_tab` (synthpop's ``utility.tab``).

    Attributes
    ----------
    vars : tuple of str
        Variables of the table, in the order given.
    stats : DataFrame
        One row per synthetic set (index ``1..m``), one column per statistic (``TAB_STATS``
        plus ``nempty``).
    tab_obs, tab_syn, tab_zdiff
        The original table, the m synthetic tables and the m tables of z-scores, as numpy
        arrays with one axis per variable (levels in ``levels`` order).
    levels : tuple of tuples
        Level labels of each axis; ``None`` is the NA category.
    notes : tuple of str
        Warnings raised while forming the tables (sparse tables, NA only in synthetic data...).
    """

    vars: tuple[str, ...]
    k_syn: bool
    stats: pd.DataFrame
    tab_obs: np.ndarray
    tab_syn: tuple[np.ndarray, ...]
    tab_zdiff: tuple[np.ndarray, ...]
    levels: tuple[tuple[str | None, ...], ...]
    notes: tuple[str, ...] = ()
    #: per axis, the breaks of a binned numeric variable (else None)
    breaks: tuple[np.ndarray | None, ...] = ()

    @property
    def m(self) -> int:
        return len(self.tab_syn)

    def level_counts(self) -> list[LevelCounts]:
        """Each axis's labels with the original table's margin (records counted in the table)."""
        axes = range(self.tab_obs.ndim)
        return [
            LevelCounts(
                var,
                tuple(self.levels[a]),
                tuple(self.tab_obs.sum(axis=tuple(b for b in axes if b != a)).tolist()),
                self.breaks[a] if self.breaks else None,
            )
            for a, var in zip(axes, self.vars, strict=True)
        ]

    def __getitem__(self, stat: str) -> np.ndarray:
        """The statistic ``stat`` for each synthetic set (e.g. ``result["S_pMSE"]``)."""
        return self.stats[stat].to_numpy()

    def rows(self) -> list[Row]:
        """Every statistic per set and its mean, with params ``{"vars": [...]}``."""
        return _set_rows(self.stats, {"vars": list(self.vars)})

    def to_dict(self) -> dict[str, Any]:
        return {
            "measure": "utility.tab",
            "vars": list(self.vars),
            "m": self.m,
            "k_syn": self.k_syn,
            "stats": {c: [_json_float(v) for v in self.stats[c]] for c in self.stats.columns},
            "levels": [list(lv) for lv in self.levels],
            "tab_obs": self.tab_obs.tolist(),
            "tab_syn": [t.tolist() for t in self.tab_syn],
            "notes": list(self.notes),
        }


def _json_float(v: float) -> float | str | None:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    if isinstance(v, float) and math.isinf(v):
        return "Inf" if v > 0 else "-Inf"
    return float(v)


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
        warnings.warn(n, stacklevel=3)
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


# ---------------------------------------------------------------------------------------------
# utility_tables
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class UtilityTablesResult(Result):
    """Output of :func:`~pipeline.utility.measure.utility_tables` (synthpop's ``utility.tables``).

    Attributes
    ----------
    tables : {"oneway", "twoway", "threeway"}
    tabs : DataFrame
        One row per variable combination (labelled ``"01.sex:02.age"``), one column per
        statistic in ``tab_stats``, each the mean over the m synthetic sets.
    per_set : DataFrame
        Every statistic for every combination and synthetic set (long form).
    plot_stat : str
        The statistic plotted.
    labels : tuple of str
        Variable labels ``"<zero-padded position>.<name>"``.
    combinations : tuple of tuples
        The labels of each combination's variables.
    combination_vars : tuple of tuples
        The names of each combination's variables (the ``vars`` of its rows).
    var_scores : Series
        Mean plotted value over the combinations containing each variable, decreasing.
    third_var : str or None
        Three-way only: the label of the variable held fixed in the plot.
    worst : Series
        The ``nworst`` combinations with the largest plotted value.
    worst_tables : dict
        Original and synthetic tables of the worst combinations.
    values : Series
        Mean of ``plot_stat`` over the m sets for each combination (the plotted value).
    """

    tables: str
    tabs: pd.DataFrame
    per_set: pd.DataFrame
    plot_stat: str
    labels: tuple[str, ...]
    combinations: tuple[tuple[str, ...], ...]
    combination_vars: tuple[tuple[str, ...], ...]
    var_scores: pd.Series
    third_var: str | None
    worst: pd.Series
    worst_tables: dict[str, dict[str, Any]]
    values: pd.Series
    sampled: bool = False

    def rows(self) -> list[Row]:
        """Every statistic of every table per set and its mean, with params ``{"vars": [a, b]}``."""
        names = {":".join(c): list(v) for c, v in zip(self.combinations, self.combination_vars, strict=True)}
        per_set = self.per_set
        rows = [
            Row(s, m, float(v), {"vars": names[c]})
            for s, c, m, v in zip(per_set["synthetic"], per_set["combination"], per_set["measure"], per_set["value"],
                                  strict=True)
        ]  # fmt: skip
        mean = per_set.groupby(["combination", "measure"], sort=False)["value"].mean()
        rows += [Row("mean", m, float(v), {"vars": names[c]}) for (c, m), v in mean.items()]
        return rows

    def to_dict(self) -> dict[str, Any]:
        return {
            "measure": "utility.tables",
            "tables": self.tables,
            "plot_stat": self.plot_stat,
            "tabs": {k: {c: _json_float(v) for c, v in row.items()} for k, row in self.tabs.iterrows()},
            "var_scores": {k: _json_float(v) for k, v in self.var_scores.items()},
            "third_var": self.third_var,
            "worst": {k: _json_float(v) for k, v in self.worst.items()},
            "sampled": self.sampled,
        }


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
        warnings.warn(n, stacklevel=3)
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
