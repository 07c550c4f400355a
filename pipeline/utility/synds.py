"""``utility_synds``: synthpop 1.2-1's ``utility.synds`` (several propensity models per call).

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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import Field, field_validator, model_validator

from pipeline.data.schema import Schema
from pipeline.errors import ParameterError
from pipeline.evaluation.base import Measure, Params, Result, Row
from pipeline.evaluation.data import EvalData, as_eval_data
from pipeline.evaluation.execution import Executor
from pipeline.utility.synds_model import FitSettings, Kind, fit_comparison, has_missing


class UtilitySyndsParams(Params):
    """Parameters of ``utility_synds`` (synthpop 1.2-1's ``utility.synds``; R names are aliases).

    ``vars`` (not in 1.2-1, whose users restrict the data first) selects the compared
    variables in data order; ``synthesised`` names the synthesised variables (synthpop reads
    them from the synthesis' method vector) and is needed by ``syn_only``.  ``minbucket``,
    ``minsplit`` and ``maxdepth`` are the ``rpart.control`` arguments 1.2-1 forwards through
    ``...``.  ``r_fill_quirk`` reproduces 1.2-1's ``fill.NA``, which drops every factor when
    only factors have missing values.
    """

    method: list[Literal["cart", "logit", "poly"]] = Field(default_factory=lambda: ["cart"], min_length=1)
    cp: float = Field(1e-4, ge=0)
    maxorder: int = Field(1, ge=0, le=4)
    deviance: bool = False
    null_utility: bool = Field(False, alias="null.utility")
    syn_only: bool = Field(False, alias="syn.only")
    all_comb: bool = Field(False, alias="all.comb")
    synthesised: list[str] | None = None
    vars: list[str] | None = Field(None, min_length=1)
    minbucket: int | None = Field(None, ge=1)
    minsplit: int | None = Field(None, ge=1)
    maxdepth: int = Field(30, ge=1, le=30)
    r_fill_quirk: bool = False

    @field_validator("method", mode="before")
    @classmethod
    def _one_or_several(cls, v: Any) -> Any:
        return [v] if isinstance(v, str) else v

    @field_validator("method")
    @classmethod
    def _distinct(cls, v: list[str]) -> list[str]:
        if len(set(v)) != len(v):
            raise ValueError(f"each method may be named once, got {v}")
        return v

    @model_validator(mode="after")
    def _syn_only_needs_synthesised(self) -> UtilitySyndsParams:
        if self.syn_only and not self.synthesised:
            raise ValueError(
                "syn_only = true needs 'synthesised', the variables the synthesis synthesised "
                "(synthpop reads them from the synthesis' method vector)"
            )
        return self

    def variables(self) -> list[str]:
        return list(dict.fromkeys([*(self.vars or []), *(self.synthesised or [])]))


@dataclass(frozen=True)
class UtilitySyndsResult(Result):
    """Output of :func:`utility_synds`, shaped like synthpop 1.2-1's ``utility.synds`` object.

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
            return {str(c): [None if not np.isfinite(v) else float(v) for v in f[c]] for c in f.columns} | {
                "rows": [str(i) for i in f.index]
            }

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


# ---------------------------------------------------------------------------------------------
# the evaluation
# ---------------------------------------------------------------------------------------------
def compared_variables(params: UtilitySyndsParams, data: EvalData) -> list[str]:
    """The variables of the model data, in data order (``syn_only``: the synthesised ones)."""
    names = [c for c in data.columns if params.vars is None or c in params.vars]
    if params.syn_only:
        synthesised = set(params.synthesised or [])
        names = [c for c in names if c in synthesised]
        if not names:
            raise ParameterError("utility_synds: syn_only = true leaves no synthesised variable to compare")
    return names


def _kinds(schema: Schema, names: Sequence[str]) -> list[Kind]:
    out = []
    for name in names:
        v = schema[name]
        if v.is_factor:
            out.append(Kind(name, tuple(v.levels or ()), v.ordered))
        elif v.kind == "character":
            raise ParameterError(
                f"utility_synds: variable {name!r} is a character variable; declare it a factor in the schema"
            )
        else:
            out.append(Kind(name, None))
    return out


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
    names = compared_variables(params, data)
    kinds = _kinds(data.schema, names)
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
    if not params.syn_only and params.synthesised is not None and set(names) - set(params.synthesised):
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


class UtilitySyndsMeasure(Measure):
    """Propensity utility with several models per call (synthpop 1.2-1's ``utility.synds``)."""

    type = "utility_synds"
    family = "utility"
    params_model = UtilitySyndsParams
    description = "synthpop 1.2-1 utility.synds(): pMSE of cart/logit/poly models, deviance, pairwise null"
    params: UtilitySyndsParams

    def check(self, data: EvalData) -> None:
        super().check(data)
        if self.params.null_utility and data.m == 1:
            raise ParameterError("utility_synds: null_utility needs m > 1 synthetic data sets (the null pairs them)")
        _kinds(data.schema, compared_variables(self.params, data))

    def evaluate(self, data: EvalData, executor: Executor) -> UtilitySyndsResult:
        return evaluate_synds(self.params, data, executor)


def utility_synds(
    original: Any,
    synthetic: Any,
    method: str | Sequence[str] = "cart",
    *,
    schema: Schema | None = None,
    executor: Executor | None = None,
    **kwargs: Any,
) -> UtilitySyndsResult:
    """synthpop 1.2-1's ``utility.synds``: propensity utility of ``synthetic`` against ``original``.

    Parameters
    ----------
    original : DataFrame or Dataset
    synthetic : frame, Dataset or a sequence of them (the m synthetic sets)
    method : str or sequence of {"cart", "logit", "poly"}
    schema : Schema, optional
    executor : Executor, optional
    **kwargs
        Any other field of :class:`UtilitySyndsParams` (``cp``, ``maxorder``, ``deviance``,
        ``null_utility``, ``syn_only``, ``all_comb``, ``synthesised``, ``vars``, ...).

    Returns
    -------
    UtilitySyndsResult
        ``print(result)`` shows it as synthpop 1.2-1 does.
    """
    params: Mapping[str, Any] = {"method": method, **kwargs}
    return UtilitySyndsMeasure(params).run(as_eval_data(original, synthetic, schema), executor or Executor.current())
