"""The table kernels of ``utility_tab`` and ``utility_tables`` (synthpop 1.9-2): coding, counting, statistics.

For the variables of a table the original and each synthetic set are cross-tabulated over all
level combinations (numeric variables binned as synthpop's ``group_num``); the statistics
compare the synthetic counts ``s_j`` with the counts expected from the original ``r o_j``
over the non-empty cells (spec §3).  Counting is a kernel per partition with an exact
combine (integer counts, summed), so the tables do not depend on the partitioning.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from pipeline.evaluation.data import EvalData
from pipeline.evaluation.execution import Executor
from pipeline.utility.binning import Binning, make_binning
from pipeline.utility.prepare import profile_sets
from pipeline.utility.scores import ks_statistic, wilcoxon_w


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
    # a one-cell table has no degree of freedom: the standardised statistics are NaN (0/0), as in R
    with np.errstate(divide="ignore", invalid="ignore"):
        zdiff = (s_all - o_all * cc / (1 - cc)) / np.sqrt((s_all + o_all) * cc)
        S_FT = float(np.divide(FT, df))
        S_VW = float(np.divide(VW, df))
        pMSE = VW * cc * (1 - cc) ** 2 / N
        ptabd = td / np.sum(td)
        ptabs = ts / np.sum(ts)
        phalf = (ptabd + ptabs) * 0.5
        jsd = float(
            np.sum((ptabd * np.log2(ptabd / phalf))[ptabd > 0]) / 2
            + np.sum((ptabs * np.log2(ptabs / phalf))[ptabs > 0]) / 2
        )
        S_JSD = float(np.divide(jsd * 2 * N, df)) / math.log(2)
        okc = (ts > 1e-8) & (td > 1e-8)
        sok, dok = ts[okc], td[okc]
        dfG = len(dok) if k_syn else len(dok) - 1
        G = float(2 * np.sum(sok * np.log(sok / np.sum(sok) / dok * np.sum(dok))))
        S_G = float(np.divide(G, dfG))
        score = ts / (ts + td)
        SPECKS = ks_statistic(score, ts, td)
        U = wilcoxon_w(score, ts, td)
        predsyn = ptabs > ptabd
        PO50 = float((np.sum(ts[predsyn]) + np.sum(td[~predsyn])) / (np.sum(ts) + np.sum(td)) * 100 - 50)
        MabsDD = float(np.sum(np.abs(diff)) / np.sum(ts))
        WMabsDD = float(np.sum(np.abs(diff) / np.sqrt(expect)) / math.sqrt(2 / math.pi))
        S_WMabsDD = float(np.divide(WMabsDD, df))
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


# ---------------------------------------------------------------------------------------------
# utility_tables
# ---------------------------------------------------------------------------------------------
