"""Results of the utility measures (synthpop-shaped, with tidy rows whose params name the table).

* :class:`UtilityTabResult` — ``utility.tab``; :class:`UtilityTablesResult` — ``utility.tables``;
* :class:`UtilitySyndsResult` — synthpop 1.2-1's ``utility.synds`` (prints as R does);
* ``utility.gen``'s :class:`~pipeline.utility.gen.UtilityGenResult` is still defined beside its
  fitting code in :mod:`pipeline.utility.gen`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from pipeline.evaluation.base import Result, Row
from pipeline.evaluation.public import LevelCounts


def _set_rows(stats: pd.DataFrame, params: dict[str, Any]) -> list[Row]:
    """A row per synthetic set and statistic, then the means over the sets (synthetic ``"mean"``)."""
    rows = [Row(str(i), str(name), float(v), params) for i, row in stats.iterrows() for name, v in row.items()]
    rows += [Row("mean", str(name), float(stats[name].mean()), params) for name in stats.columns]
    return rows


@dataclass(frozen=True)
class UtilityTabResult(Result):
    """Output of :func:`~pipeline.utility.api.utility_tab` (synthpop's ``utility.tab``).

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
            "stats": {c: [float(v) for v in self.stats[c]] for c in self.stats.columns},
            "levels": [list(lv) for lv in self.levels],
            "tab_obs": self.tab_obs.tolist(),
            "tab_syn": [t.tolist() for t in self.tab_syn],
            "notes": list(self.notes),
        }


@dataclass(frozen=True)
class UtilityTablesResult(Result):
    """Output of :func:`~pipeline.utility.api.utility_tables` (synthpop's ``utility.tables``).

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
            "tabs": {k: {c: float(v) for c, v in row.items()} for k, row in self.tabs.iterrows()},
            "var_scores": {k: float(v) for k, v in self.var_scores.items()},
            "third_var": self.third_var,
            "worst": {k: float(v) for k, v in self.worst.items()},
            "sampled": self.sampled,
        }


@dataclass(frozen=True)
class UtilitySyndsResult(Result):
    """Output of :func:`~pipeline.utility.api.utility_synds`, shaped like synthpop 1.2-1's ``utility.synds`` object.

    Attributes
    ----------
    method : tuple of str
    utility_raw : DataFrame
        pMSE, rows ``syn=1..m`` (or ``syn.comb``), one column per method.
    deviance_raw : DataFrame or None
        Columns ``<method> Stat`` and ``<method> DF``.
    null_raw : dict method -> ndarray (m x m) or None
        Entry ``[ind, j]``: set ``j`` (t = 0) against set ``ind`` (t = 1).
    ind_propensity_scores : ndarray (records x methods x comparisons)
        The fitted propensities (kept in memory only: never written to a run folder).
    variables : tuple of str
        The compared variables; ``model_columns`` the model data's columns (comparison 1).
    """

    method: tuple[str, ...]
    utility_raw: pd.DataFrame
    deviance_raw: pd.DataFrame | None
    null_raw: dict[str, np.ndarray] | None
    ind_propensity_scores: np.ndarray
    variables: tuple[str, ...]
    model_columns: tuple[str, ...]
    all_comb: bool
    notes: tuple[str, ...] = ()
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def utility_summary(self) -> pd.DataFrame:
        """Mean and SD of the pMSE per method (SD is NaN for one comparison)."""
        return _mean_sd(self.utility_raw)

    @property
    def deviance_summary(self) -> pd.DataFrame | None:
        """Mean and SD of the deviance statistic per method."""
        if self.deviance_raw is None:
            return None
        stats = self.deviance_raw[[f"{m} Stat" for m in self.method]]
        return _mean_sd(stats.set_axis(list(self.method), axis=1))

    @property
    def nullstats_summary(self) -> pd.DataFrame | None:
        """``Mean diff`` and ``Mean ratio``: mean pMSE against the mean off-diagonal null pMSE."""
        if self.null_raw is None:
            return None
        mean_util = self.utility_raw.mean()
        out = {}
        for meth in self.method:
            null = self.null_raw[meth]
            off = null[~np.eye(len(null), dtype=bool)]
            # R: mean(c(lower.tri values, upper.tri values)) in that order
            tri = np.concatenate([null[np.tril_indices(len(null), -1)], null[np.triu_indices(len(null), 1)]])
            mean_null = float(np.mean(tri)) if len(off) else float("nan")
            out[meth] = [mean_util[meth] - mean_null, mean_util[meth] / mean_null]
        return pd.DataFrame.from_dict(out, orient="index", columns=["Mean diff", "Mean ratio"])

    def rows(self) -> list[Row]:
        """Per set ("1".."m"; "mean" for ``all_comb``) and method: ``pMSE``, ``deviance``,
        ``deviance_df``; means and SDs ("mean"); the pairwise null (``null_pMSE`` of set ``ind``
        with ``against`` = j) and its ``null_mean_diff`` / ``null_mean_ratio``."""
        rows: list[Row] = []
        per_set = [("pMSE", self.utility_raw, "")]
        if self.deviance_raw is not None:
            per_set += [("deviance", self.deviance_raw, " Stat"), ("deviance_df", self.deviance_raw, " DF")]
        for meth in self.method:
            p = {"method": meth, "all_comb": True} if self.all_comb else {"method": meth}
            for name, frame, suffix in per_set:
                col = frame[meth + suffix].to_numpy(dtype=float)
                if self.all_comb:
                    rows.append(Row("mean", name, float(col[0]), p))
                    continue
                rows += [Row(str(i), name, float(v), p) for i, v in enumerate(col, start=1)]
                if name != "deviance_df":
                    rows.append(Row("mean", name, float(np.mean(col)), p))
                    if len(col) > 1:
                        rows.append(Row("mean", f"{name}_sd", float(np.std(col, ddof=1)), p))
            if self.null_raw is not None:
                null = self.null_raw[meth]
                for ind in range(len(null)):
                    rows += [
                        Row(str(ind + 1), "null_pMSE", float(null[ind, j]), {"method": meth, "against": j + 1})
                        for j in range(len(null))
                        if j != ind
                    ]
                summary = self.nullstats_summary
                rows.append(Row("mean", "null_mean_diff", float(summary.loc[meth, "Mean diff"]), p))
                rows.append(Row("mean", "null_mean_ratio", float(summary.loc[meth, "Mean ratio"]), p))
        return rows

    def to_dict(self) -> dict[str, Any]:
        def frame(f: pd.DataFrame | None) -> dict | None:
            if f is None:
                return None
            return {str(c): [float(v) for v in f[c]] for c in f.columns} | {"rows": [str(i) for i in f.index]}

        return {
            "measure": "utility.synds (synthpop 1.2-1)",
            "method": list(self.method),
            "variables": list(self.variables),
            "model_columns": list(self.model_columns),
            "all_comb": self.all_comb,
            "utility.summary": frame(self.utility_summary),
            "utility.raw": frame(self.utility_raw),
            "deviance.summary": frame(self.deviance_summary),
            "deviance.raw": frame(self.deviance_raw),
            "nullstats.summary": frame(self.nullstats_summary),
            "nullstats.raw": None
            if self.null_raw is None
            else {f"{k}.null": v.tolist() for k, v in self.null_raw.items()},
            "notes": list(self.notes),
            "settings": self.settings,
        }

    def __str__(self) -> str:
        """The print method of synthpop 1.2-1 (method, utility, deviance and null summaries)."""
        parts = ["", "Method:", "($method)", " ".join(self.method) + " ", ""]
        parts += ["Mean and SD of propensity score utility value: ", "($utility.summary)"]
        parts.append(format_r_matrix(self.utility_summary))
        if self.deviance_summary is not None:
            parts += ["", "Mean and SD of propensity deviance statistics: ", "($deviance.summary)"]
            parts.append(format_r_matrix(self.deviance_summary))
        if self.nullstats_summary is not None:
            parts += ["", "Null distribution statistics: ", "($nullstats.summary)"]
            parts.append(format_r_matrix(self.nullstats_summary))
        return "\n".join(parts)


def _mean_sd(raw: pd.DataFrame) -> pd.DataFrame:
    sd = raw.std(ddof=1) if len(raw) > 1 else pd.Series(np.nan, index=raw.columns)
    return pd.DataFrame({"Mean": raw.mean(), "SD": sd})


def _significant(v: float, digits: int) -> tuple[int, int]:
    """The fewest significant digits (<= ``digits``) showing ``v`` as it shows with ``digits``, and its exponent."""
    full = float(f"{v:.{digits - 1}e}")
    for s in range(1, digits + 1):
        if float(f"{v:.{s - 1}e}") == full:
            return s, int(f"{full:e}".split("e")[1])
    return digits, int(f"{full:e}".split("e")[1])


def _r_column(values: np.ndarray, digits: int = 7) -> list[str]:
    """R's common format of a numeric column (``formatReal`` with 7 significant digits)."""
    finite = values[np.isfinite(values)]
    special = {True: "Inf", False: "-Inf"}
    if len(finite) == 0:
        return ["NA" if np.isnan(v) else special[bool(v > 0)] for v in values]
    sig_exp = [_significant(float(v), digits) if v != 0 else (1, 0) for v in finite]
    sig = max(s for s, _ in sig_exp)
    decimals = max(0, *(s - 1 - e for s, e in sig_exp))
    int_digits = max(1, *(e + 1 for _, e in sig_exp))
    fixed_width = int_digits + (decimals + 1 if decimals else 0)
    sci_width = sig + 5 if sig > 1 else 5
    out = []
    for v in values:
        if not np.isfinite(v):
            out.append("NA" if np.isnan(v) else special[bool(v > 0)])
        elif fixed_width <= sci_width:
            out.append(f"{v:.{decimals}f}")
        else:
            out.append(f"{v:.{sig - 1}e}")
    return out


def format_r_matrix(frame: pd.DataFrame) -> str:
    """A numeric matrix as R prints it: row names left-aligned, columns right-aligned."""
    cols = [_r_column(frame[c].to_numpy(dtype=float)) for c in frame.columns]
    rnames = [str(i) for i in frame.index]
    rw = max(len(r) for r in rnames)
    widths = [max(len(str(c)), *(len(s) for s in col)) for c, col in zip(frame.columns, cols, strict=True)]
    lines = [" " * rw + "".join(" " + str(c).rjust(w) for c, w in zip(frame.columns, widths, strict=True))]
    for i, r in enumerate(rnames):
        lines.append(r.ljust(rw) + "".join(" " + col[i].rjust(w) for col, w in zip(cols, widths, strict=True)))
    return "\n".join(lines)


@dataclass(frozen=True)
class UtilityCompareResult(Result):
    """Output of :func:`~pipeline.utility.api.compare_synds` (synthpop's ``compare.synds``).

    Attributes
    ----------
    stat : {"percents", "counts"}
    vars : tuple of str
    tables : dict
        Per variable ``(labels, observed, synthetic)``: the column labels (``None`` = NA) and
        the values of the original and of the pooled synthetic sets.
    tab_utility : DataFrame
        One row per variable, one column per utility statistic (mean over the m sets).
    kinds : dict
        ``"factor"`` or ``"numeric"`` (histogram) per variable.
    breaks : dict
        The histogram breaks of each numeric variable.
    m : int
    written : dict
        Per factor-like variable, the labels the rows carry (rare levels coarsened).
    """

    stat: str
    vars: tuple[str, ...]
    tables: dict[str, tuple[tuple[str | None, ...], np.ndarray, np.ndarray]]
    tab_utility: pd.DataFrame
    kinds: dict[str, str]
    breaks: dict[str, tuple[float, ...]]
    m: int
    written: dict[str, tuple[str | None, ...]] = field(default_factory=dict)

    def rows(self) -> list[Row]:
        measure = "percent" if self.stat == "percents" else "count"
        out = []
        for name, (labels, obs, syn) in self.tables.items():
            for label, o, s in zip(self.written.get(name, labels), obs, syn, strict=True):
                p = {"variable": name, "category": "NA" if label is None else label}
                out += [Row("original", measure, float(o), p), Row("mean", measure, float(s), p)]
        for name, stats in self.tab_utility.iterrows():
            out += [Row("mean", str(k), float(v), {"variable": str(name)}) for k, v in stats.items()]
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "stat": self.stat,
            "m": self.m,
            "vars": list(self.vars),
            "kinds": dict(self.kinds),
            "tab_utility": {str(v): {str(k): float(x) for k, x in r.items()} for v, r in self.tab_utility.iterrows()},
        }


@dataclass(frozen=True)
class MultiCompareResult(Result):
    """Output of :func:`~pipeline.utility.api.multi_compare` (synthpop's ``multi.compare``).

    Attributes
    ----------
    var : str
    by : tuple of str
    kind : {"factor", "numeric"}
        ``"numeric"``: histogram bins (then ``miss.<code>`` and NA columns).
    groups : tuple of tuples
        Per group, the value of each ``by`` variable (``None`` = NA), in the variables' level
        (or value) order, NA last.
    categories : tuple
        The columns: levels or values of ``var`` (``None`` = NA), or the histogram bins' lower
        edges and the special codes.
    sources : tuple of str
        ``"original"``, then ``"mean"`` (the pooled synthetic sets) or the selected sets' numbers.
    counts : ndarray, shape (sources, groups, categories)
        Records per source, group and column; the pooled sets' counts are divided by m.
    breaks : tuple of float
        The histogram's edges (empty for a factor).
    m : int
    written_groups, written_categories
        The labels the rows carry (a value held by 1-9 original records coarsened).
    """

    var: str
    by: tuple[str, ...]
    kind: str
    groups: tuple[tuple[str | None, ...], ...]
    categories: tuple[str | None, ...]
    sources: tuple[str, ...]
    counts: np.ndarray
    breaks: tuple[float, ...]
    m: int
    written_groups: tuple[tuple[str | None, ...], ...] = ()
    written_categories: tuple[str | None, ...] = ()

    @property
    def records(self) -> np.ndarray:
        """Records per source and group, shape (sources, groups) (synthpop prints the original's)."""
        return self.counts.sum(axis=2)

    @property
    def percents(self) -> np.ndarray:
        """Percentage of each column within its source and group (the bars of ``barplot.position
        = "fill"``); NaN where a group has no record of that source."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return 100 * self.counts / self.records[:, :, None]

    @property
    def density(self) -> np.ndarray:
        """ggplot2's histogram ``density`` per bin: count / bin width / the group's counted values
        (NA and special codes not counted); shape (sources, groups, bins)."""
        nbins = max(len(self.breaks) - 1, 0)
        hist = self.counts[:, :, :nbins]
        with np.errstate(invalid="ignore", divide="ignore"):
            return hist / np.diff(self.breaks) / hist.sum(axis=2, keepdims=True)

    def frame(self) -> pd.DataFrame:
        """The table in long form: one row per source, group and column, with the ``by``
        variables, ``source``, ``category``, ``count`` and ``percent`` (true labels: for the
        Python session, never written)."""
        ns, ng, nc = self.counts.shape
        s, g, c = (a.ravel() for a in np.indices((ns, ng, nc)))
        out = pd.DataFrame({b: [self.groups[i][j] for i in g] for j, b in enumerate(self.by)})
        out["source"] = [self.sources[i] for i in s]
        out["category"] = [self.categories[i] for i in c]
        out["count"] = self.counts.ravel()
        out["percent"] = self.percents.ravel()
        return out

    def rows(self) -> list[Row]:
        groups = self.written_groups or self.groups
        categories = self.written_categories or self.categories
        nbins = max(len(self.breaks) - 1, 0) if self.kind == "numeric" else 0
        percents, density = self.percents, self.density if nbins else None
        out = []
        for gi, group in enumerate(groups):
            where = {b: "NA" if v is None else v for b, v in zip(self.by, group, strict=True)}
            head = {"variable": self.var, "by": list(self.by), "group": where}
            for si, source in enumerate(self.sources):
                out.append(Row(source, "group_records", float(self.records[si, gi]), head))
                held = self.records[si, gi] > 0  # shares of an empty group are not written
                for ci, category in enumerate(categories):
                    p = {**head, "category": "NA" if category is None else category}
                    out.append(Row(source, "count", float(self.counts[si, gi, ci]), p))
                    if held:
                        out.append(Row(source, "percent", float(percents[si, gi, ci]), p))
                    if held and density is not None and ci < nbins:
                        out.append(Row(source, "density", float(density[si, gi, ci]), p))
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "var": self.var,
            "by": list(self.by),
            "kind": self.kind,
            "m": self.m,
            "sources": list(self.sources),
            "groups": len(self.groups),
            "breaks": [float(x) for x in self.breaks],
        }
