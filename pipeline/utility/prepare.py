"""Data preparation of ``utility_gen`` (synthpop 1.9-2, spec §2.2) as a reusable plan.

The plan is computed from one pass of per-set summaries (missing values, ranges, special
codes, level counts: :func:`profile_sets`, a kernel per partition with an exact combine), then
applied partition by partition (:meth:`GenPlan.encode`), so the same preparation serves data
in memory and data on the cluster.

Prepared predictors, in synthpop's column order:

* every compared variable (after dropping those constant in the original and the first
  synthetic set): factors (and character columns, and numerics binned with ``ngroups``) as
  integer codes into the variable's *global* labels, numerics as values (missing and special
  codes replaced by 0);
* then, for each numeric variable in turn, ``<name>_NA`` (1 = missing) and
  ``<name>_cna_<j>`` (1 = the j-th special code).

The level order of a factor in a comparison of data set A (labelled synthetic) with B
(labelled original) is R's ``rbind(A, B)``: A's used levels, its NA level, then B's levels
not in A (:meth:`GenPlan.stacked_levels`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from pipeline.errors import ParameterError
from pipeline.evaluation.data import EvalData
from pipeline.evaluation.execution import Executor
from pipeline.rmodels.glm import CodedRecords
from pipeline.utility.binning import Binning, make_binning


@dataclass(frozen=True)
class GenColumn:
    """One prepared predictor.

    Attributes
    ----------
    name : str
        Column name (the variable's, or ``<var>_NA`` / ``<var>_cna_<j>``).
    source : str
        The original variable it is made from.
    role : {"factor", "character", "binned", "numeric", "na", "cna"}
    labels : tuple or None
        Global level labels of a factor-like column (``None`` inside = the NA level, last).
    ordered : bool
        Ordered factor (polynomial contrasts in the logit model, numeric codes in CART).
    codes : tuple of float
        Special missing codes of a numeric column (replaced by 0) or the code of a ``cna``
        indicator.
    binning : Binning or None
    """

    name: str
    source: str
    role: str
    labels: tuple[str | None, ...] | None = None
    ordered: bool = False
    codes: tuple[float, ...] = ()
    binning: Binning | None = None

    @property
    def is_factor(self) -> bool:
        return self.labels is not None

    def encode(self, s: pd.Series) -> np.ndarray:
        """The prepared column for one partition of the source variable."""
        if self.role == "factor":
            codes = np.asarray(s.cat.codes, dtype=np.int64)
        elif self.role == "character":
            levels = [lv for lv in self.labels or () if lv is not None]
            codes = np.asarray(pd.Categorical(s.astype(object).where(s.notna(), None), categories=levels).codes)
        elif self.role == "binned":
            codes = self.binning.assign(s.to_numpy(dtype=float, na_value=np.nan))
        else:
            x = s.to_numpy(dtype=float, na_value=np.nan)
            if self.role == "na":
                return np.isnan(x).astype(float)
            if self.role == "cna":
                return (x == self.codes[0]).astype(float)
            special = np.isnan(x)
            for c in self.codes:
                special |= x == c
            return np.where(special, 0.0, x)
        codes = codes.astype(np.int64)
        return np.where(codes < 0, len(self.labels) - 1, codes)


def _profile_kernel(
    part: pd.DataFrame,
    factor_like: Sequence[str],
    numeric: Sequence[str],
    count_values: bool,
    codes: dict[str, tuple[float, ...]],
) -> dict:
    out: dict[str, Any] = {
        "n": len(part),
        "na": part.isna().sum().to_dict(),
        "vc": {},
        "min": {},
        "max": {},
        "codes": {},
    }
    for name in factor_like:
        out["vc"][name] = part[name].value_counts(dropna=True)
    for name in numeric:
        x = part[name].to_numpy(dtype=float, na_value=np.nan)
        ok = x[~np.isnan(x)]
        out["min"][name] = float(ok.min()) if len(ok) else np.inf
        out["max"][name] = float(ok.max()) if len(ok) else -np.inf
        if count_values:
            out["vc"][name] = part[name].value_counts(dropna=True)
        out["codes"][name] = np.array([int(np.sum(x == c)) for c in codes.get(name, ())], dtype=np.int64)
    return out


def _combine_profiles(parts: Sequence[dict]) -> dict:
    out: dict[str, Any] = {"n": 0, "na": {}, "vc": {}, "min": {}, "max": {}, "codes": {}}
    for p in parts:
        out["n"] += p["n"]
        for k, v in p["na"].items():
            out["na"][k] = out["na"].get(k, 0) + int(v)
        for k, v in p["vc"].items():
            out["vc"][k] = v if k not in out["vc"] else out["vc"][k].add(v, fill_value=0)
        for k, v in p["min"].items():
            out["min"][k] = min(out["min"].get(k, np.inf), v)
        for k, v in p["max"].items():
            out["max"][k] = max(out["max"].get(k, -np.inf), v)
        for k, v in p["codes"].items():
            out["codes"][k] = v if k not in out["codes"] else out["codes"][k] + v
    return out


def profile_sets(
    data: EvalData,
    executor: Executor,
    names: Sequence[str],
    count_numeric_values: bool,
    codes: dict[str, tuple[float, ...]],
) -> list[dict]:
    """Per data set (original first): records, missing counts, ranges, value counts, special codes.

    One exact map-reduce per data set, all computed together.  Value counts are kept for the
    factor and character variables, and for the numeric ones when ``count_numeric_values``.
    """
    schema = data.schema
    factor_like = [n for n in names if not schema[n].is_numeric]
    numeric = [n for n in names if schema[n].is_numeric]
    lazy = [
        executor.map_reduce(
            f[list(names)], _profile_kernel, _combine_profiles, factor_like, numeric, count_numeric_values, codes
        )
        for f in data.frames
    ]
    return executor.compute(*lazy)


@dataclass(frozen=True)
class GenPlan:
    """The prepared predictors and, per data set, how often each level is used.

    ``level_counts[i][col]`` counts the records of data set ``i`` (0 = original, then the
    synthetic sets) at each global level of factor column ``col``.
    """

    columns: tuple[GenColumn, ...]
    level_counts: tuple[dict[str, np.ndarray], ...]
    n_rows: tuple[int, ...]
    vars: tuple[str, ...]
    dropped: tuple[str, ...]
    notes: tuple[str, ...]

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    def encode(self, part: pd.DataFrame) -> pd.DataFrame:
        """Prepared columns of one partition (same index)."""
        data = {c.name: c.encode(part[c.source]) for c in self.columns}
        return pd.DataFrame(data, index=part.index)

    def coded(self, part: pd.DataFrame) -> CodedRecords:
        """The prepared predictors of one partition as the logit kernels read them (no labels)."""
        factors = [c for c in self.columns if c.is_factor]
        numerics = [c for c in self.columns if not c.is_factor]
        codes = np.empty((len(part), len(factors)), dtype=np.int32)
        for j, c in enumerate(factors):
            codes[:, j] = c.encode(part[c.source])
        values = np.empty((len(part), len(numerics)), dtype=np.float64)
        for j, c in enumerate(numerics):
            values[:, j] = c.encode(part[c.source])
        return CodedRecords(codes, values)

    def stacked_levels(self, col: GenColumn, a: int, b: int) -> tuple[tuple[str | None, ...], np.ndarray, bool]:
        """Levels of ``col`` in ``rbind(A, B)`` and the global-code -> stacked-index lookup.

        Returns the labels, the lookup (-1 for unused global levels) and whether the factor
        stays ordered.  When a level is empty in the stacked data (only an NA level can be),
        synthpop rebuilds the factor from its labels: levels sorted by code point, unordered.
        """
        labels = col.labels or ()
        na_index = len(labels) - 1 if labels and labels[-1] is None else None
        ca, cb = self.level_counts[a][col.name], self.level_counts[b][col.name]
        regular = [i for i in range(len(labels)) if i != na_index]

        def used(counts: np.ndarray) -> list[int]:
            return [i for i in regular if counts[i] > 0] + ([na_index] if na_index is not None else [])

        order = list(dict.fromkeys(used(ca) + used(cb)))
        ordered = col.ordered
        if na_index is not None and ca[na_index] + cb[na_index] == 0:
            order = sorted((i for i in order if i != na_index), key=lambda i: str(labels[i]).encode("utf-8"))
            ordered = False
        lookup = np.full(len(labels), -1, dtype=np.int64)
        lookup[order] = np.arange(len(order))
        return tuple(labels[i] for i in order), lookup, ordered


def build_plan(
    data: EvalData,
    executor: Executor,
    names: Sequence[str],
    ngroups: int | None,
    cont_na: dict[str, tuple[float, ...]],
    where: str = "utility_gen",
) -> GenPlan:
    """Apply synthpop's preparation rules (spec §2.2 steps 2 and 4–8) to ``names``."""
    schema = data.schema
    profiles = profile_sets(data, executor, names, ngroups is not None, cont_na)
    orig = profiles[0]
    notes: list[str] = []
    # cont.na codes must occur in the original (step 2)
    for name, codes in cont_na.items():
        if name not in names:
            continue
        for code, present in zip(codes, orig["codes"][name], strict=True):
            if present == 0:
                raise ParameterError(
                    f"{where}: the special missing code {code:g} given in cont_na for {name!r} does not occur in the "
                    "original data"
                )
    # drop variables with at most one distinct non-missing value over the original and the first
    # synthetic set together (step 5; synthpop also drops a variable that is constant within each
    # set at different values, which would hide a perfect separation, spec §6 U3)
    keep, dropped = [], []
    for name in names:
        if _n_distinct_pooled((orig, profiles[1]), name, schema[name].is_numeric) <= 1:
            dropped.append(name)
        else:
            keep.append(name)
    if dropped:
        notes.append(
            f"{where}: variable(s) {', '.join(dropped)} have a single value or only missing values in the original "
            "and the synthetic data and are left out"
        )
    if not keep:
        raise ParameterError(f"{where}: every variable is constant in both the original and the synthetic data")
    columns: list[GenColumn] = []
    indicators: list[GenColumn] = []
    for name in keep:
        var = schema[name]
        has_na = any(p["na"].get(name, 0) > 0 for p in profiles)
        if var.is_numeric and ngroups is not None:
            codes = cont_na.get(name, ())
            pooled = pd.concat([p["vc"][name] for p in profiles]).groupby(level=0).sum()
            pooled = pooled[~pooled.index.isin(codes)].sort_index()
            binning = make_binning(pooled.index.to_numpy(dtype=float), pooled.to_numpy(dtype=float), ngroups, codes)
            labels = binning.levels + ((None,) if has_na else ())
            columns.append(GenColumn(name, name, "binned", labels, binning=binning))
        elif var.is_numeric:
            codes = cont_na.get(name, ())
            columns.append(GenColumn(name, name, "numeric", codes=codes))
            if has_na:
                indicators.append(GenColumn(f"{name}_NA", name, "na"))
            for j, code in enumerate(codes, start=1):
                indicators.append(GenColumn(f"{name}_cna_{j}", name, "cna", codes=(code,)))
        elif var.kind == "character":
            values = sorted({str(v) for p in profiles for v in p["vc"][name].index}, key=lambda s: s.encode("utf-8"))
            columns.append(GenColumn(name, name, "character", tuple(values) + ((None,) if has_na else ())))
        else:
            labels = tuple(var.levels or ()) + ((None,) if has_na else ())
            columns.append(GenColumn(name, name, "factor", labels, ordered=var.ordered))
        if has_na and orig["na"].get(name, 0) == 0:
            notes.append(
                f"{where}: {name!r} has missing values in synthetic data only; they get an NA level/indicator "
                "(synthpop drops those records from the logit fit and routes them by surrogate splits in CART)"
            )
    all_columns = tuple(columns + indicators)
    level_counts = tuple(_level_counts(p, all_columns) for p in profiles)
    return GenPlan(
        columns=all_columns,
        level_counts=level_counts,
        n_rows=tuple(int(p["n"]) for p in profiles),
        vars=tuple(keep),
        dropped=tuple(dropped),
        notes=tuple(notes),
    )


def _n_distinct_pooled(profiles: Sequence[dict], name: str, numeric: bool) -> int:
    """Distinct non-missing values of ``name`` over the profiled data sets (2 means "several")."""
    if numeric:
        lo = min(p["min"][name] for p in profiles)
        hi = max(p["max"][name] for p in profiles)
        return 0 if lo > hi else (1 if lo == hi else 2)
    used: set = set()
    for p in profiles:
        vc = p["vc"][name]
        used |= {str(k) for k, v in vc.items() if v > 0}
    return len(used)


def _level_counts(profile: dict, columns: Sequence[GenColumn]) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for col in columns:
        if not col.is_factor:
            continue
        labels = col.labels or ()
        counts = np.zeros(len(labels), dtype=np.int64)
        vc = profile["vc"][col.source]
        if col.role == "binned":
            codes = col.binning.assign(vc.index.to_numpy(dtype=float))
            ok = codes >= 0
            np.add.at(counts, codes[ok], vc.to_numpy()[ok].astype(np.int64))
        else:
            pos = {lab: i for i, lab in enumerate(labels) if lab is not None}
            for lab, cnt in vc.items():
                counts[pos[str(lab)]] += int(cnt)
        if labels and labels[-1] is None:
            counts[-1] = int(profile["na"].get(col.source, 0))
        out[col.name] = counts
    return out
