"""synthpop's ``multi.compare``: one variable in the original and the synthetic data, within each
group of the ``by`` variables.

synthpop draws it (ggplot2 facets, one panel per group); here the numbers behind its panels are
computed and drawn:

* the groups: every combination of the ``by`` variables' values present in the original or a
  compared synthetic set, a missing value a level of its own (synthpop's ``addNA``); a numeric
  ``by`` variable is a factor of its values, as ``addNA`` makes it;
* a factor ``var`` (or a numeric one with fewer than 6 distinct original values, made a factor of
  the values in the original and the synthetic data, synthpop's rule): counts of each level and
  NA per group and source, and their percentages within the group and source (the bars of
  ``barplot.position = "fill"``);
* a numeric ``var``: histogram counts per group and source on bins shared by every panel (the
  range of the original and the compared sets together, as ggplot2's shared scale), and
  ggplot2's ``density`` (count / width / counted values); the schema's special missing codes
  (``cont.na``) and NA are columns of their own (``miss.<code>``, ``miss.NA``), where synthpop's
  plot would draw a code as a value and drop NA.

The pooled synthetic sets (``msel = None``) are one source whose counts are the pooled counts
divided by m (as ``compare``), so that they read on the original's scale.

Two passes over every data set (distinct values and range; counts of (group, column) codes),
exact integer sums, so the result does not depend on the partitioning.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from pipeline.errors import ParameterError
from pipeline.evaluation.data import EvalData
from pipeline.evaluation.public import coarsened_levels
from pipeline.rcompat import as_character, format_breaks, pretty
from pipeline.utility.compare import FEW_VALUES
from pipeline.utility.params import MultiCompareParams
from pipeline.utility.result import MultiCompareResult

if TYPE_CHECKING:
    from pipeline.evaluation.execution import Executor

#: ggplot2's fuzz of its bin edges (``bins()``: 1e-8 of the median bin width)
GGPLOT_FUZZ = 1e-8
#: ggplot2 refuses more histogram bins than this
MAX_BINS = 1_000_000


@dataclass(frozen=True)
class Coding:
    """How one variable becomes codes ``0..size-1``: factor codes, the index of a value among
    ``values``, or a histogram bin (then the special ``codes``); the last code is NA."""

    name: str
    kind: str  # "factor", "values" or "histogram"
    n_levels: int = 0
    values: tuple[float, ...] = ()
    breaks: tuple[float, ...] = ()
    codes: tuple[float, ...] = ()

    @property
    def size(self) -> int:
        """Number of codes, NA included."""
        if self.kind == "factor":
            return self.n_levels + 1
        if self.kind == "values":
            return len(self.values) + 1
        return max(len(self.breaks) - 1, 0) + len(self.codes) + 1

    def encode(self, s: pd.Series) -> np.ndarray:
        """The code of every record (int64)."""
        if self.kind == "factor":
            codes = s.cat.codes.to_numpy().astype(np.int64)
            return np.where(codes < 0, self.n_levels, codes)
        v = s.to_numpy(dtype=float)
        missing = np.isnan(v)
        out = np.full(len(v), self.size - 1, dtype=np.int64)
        if self.kind == "values":
            out[~missing] = np.searchsorted(self.values, v[~missing])
            return out
        nbins = max(len(self.breaks) - 1, 0)
        for j, c in enumerate(self.codes):
            out[v == c] = nbins + j
        counted = ~missing & ~np.isin(v, self.codes)
        if counted.any():
            out[counted] = _bin_index(v[counted], np.asarray(self.breaks))
        return out


def _bin_index(values: np.ndarray, breaks: np.ndarray) -> np.ndarray:
    """ggplot2's ``bin_cut``: right-closed bins, the first closed, edges moved by its fuzz."""
    fuzz = GGPLOT_FUZZ * float(np.median(np.diff(breaks)))
    fuzzy = breaks + np.concatenate([[-fuzz], np.full(len(breaks) - 1, fuzz)])
    return np.searchsorted(fuzzy, values, side="left") - 1


def ggplot_width_breaks(lo: float, hi: float, width: float) -> np.ndarray:
    """ggplot2's ``bin_breaks_width(c(lo, hi), width)`` with neither ``center`` nor ``boundary``:
    edges on the lattice ``width / 2 + k * width`` covering ``[lo, hi]`` (R's ``seq(by =)``)."""
    boundary = width / 2
    origin = boundary + np.floor((lo - boundary) / width) * width
    max_x = hi + (1 - 1e-08) * width
    if (max_x - origin) / width > MAX_BINS:
        raise ParameterError(f"multi_compare: binwidth {width} gives more than {MAX_BINS} histogram bins")
    n = int((max_x - origin) / width + 1e-10)
    breaks = np.minimum(origin + np.arange(n + 1) * width, max_x)
    return breaks if len(breaks) > 1 else np.array([origin, origin + width])


# ---------------------------------------------------------------------------------------------
# pass 1: distinct values, range, codes present
# ---------------------------------------------------------------------------------------------


def _facts_kernel(
    part: pd.DataFrame, numerics: Sequence[str], var: str, codes: tuple[float, ...], limit: int
) -> dict[str, Any]:
    """Per numeric variable its smallest ``limit`` distinct values (NA and, for ``var``, its
    special codes left out of the range only); ``var``'s range without them and the codes present."""
    out: dict[str, Any] = {"distinct": {}, "span": None, "codes": ()}
    for c in numerics:
        v = part[c].to_numpy(dtype=float)
        out["distinct"][c] = np.unique(v[~np.isnan(v)])[:limit]
        if c == var:
            v = v[~np.isnan(v)]
            special = np.isin(v, codes)
            kept = v[~special]
            out["span"] = (float(kept.min()), float(kept.max())) if kept.size else None
            out["codes"] = tuple(np.unique(v[special]).tolist())
    return out


def _merge_facts(parts: Sequence[dict[str, Any]], limit: int) -> dict[str, Any]:
    spans = [p["span"] for p in parts if p["span"] is not None]
    return {
        "distinct": {
            c: np.unique(np.concatenate([p["distinct"][c] for p in parts]))[:limit] for c in parts[0]["distinct"]
        },
        "span": (min(s[0] for s in spans), max(s[1] for s in spans)) if spans else None,
        "codes": tuple(sorted({x for p in parts for x in p["codes"]})),
    }


# ---------------------------------------------------------------------------------------------
# pass 2: counts of (group, column) codes
# ---------------------------------------------------------------------------------------------


def _count_kernel(part: pd.DataFrame, by: Sequence[Coding], var: Coding) -> tuple[np.ndarray, np.ndarray]:
    """The distinct (group, column) codes of the partition and their counts."""
    flat = np.zeros(len(part), dtype=np.int64)
    for coding in by:
        flat = flat * coding.size + coding.encode(part[coding.name])
    flat = flat * var.size + var.encode(part[var.name])
    keys, counts = np.unique(flat, return_counts=True)
    return keys, counts.astype(np.int64)


def _sum_counts(parts: Sequence[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    keys, inverse = np.unique(np.concatenate([k for k, _ in parts]), return_inverse=True)
    return keys, np.bincount(inverse, weights=np.concatenate([c for _, c in parts]), minlength=len(keys)).astype(
        np.int64
    )


# ---------------------------------------------------------------------------------------------
# the codings
# ---------------------------------------------------------------------------------------------


def _values_or_refuse(name: str, facts: Sequence[dict[str, Any]], limit: int, what: str) -> np.ndarray:
    values = np.unique(np.concatenate([f["distinct"][name] for f in facts]))
    if len(values) > limit:
        raise ParameterError(
            f"multi_compare: {what} {name!r} has more than {limit} distinct values in the compared data"
        )
    return values


def _by_coding(name: str, data: EvalData, facts: Sequence[dict[str, Any]], limit: int) -> tuple[Coding, list]:
    """A ``by`` variable's coding and the labels of its codes (``None``: NA)."""
    v = data.schema[name]
    if v.is_factor:
        levels = list(v.levels or ())
        return Coding(name, "factor", len(levels)), [*levels, None]
    values = _values_or_refuse(name, facts, limit, "by variable")
    return Coding(name, "values", values=tuple(values.tolist())), [*(as_character(x) for x in values), None]


def _var_coding(params: MultiCompareParams, data: EvalData, facts: Sequence[dict[str, Any]]) -> tuple[Coding, list]:
    """``var``'s coding and the labels of its codes (``None``: NA; histogram bins by their lower
    edge, ``miss.<code>`` for a special code)."""
    name = params.var
    v = data.schema[name]
    if v.is_factor:
        levels = list(v.levels or ())
        return Coding(name, "factor", len(levels)), [*levels, None]
    if len(facts[0]["distinct"][name]) < FEW_VALUES:  # synthpop: a factor of the values of all sets
        values = _values_or_refuse(name, facts, params.max_groups, "var")
        return Coding(name, "values", values=tuple(values.tolist())), [*(as_character(x) for x in values), None]
    spans = [f["span"] for f in facts if f["span"] is not None]
    codes = tuple(sorted({c for f in facts for c in f["codes"]}))
    if not spans:
        edges = np.array([], dtype=float)
    else:
        lo, hi = min(s[0] for s in spans), max(s[1] for s in spans)
        edges = ggplot_width_breaks(lo, hi, params.binwidth) if params.binwidth else pretty(lo, hi, params.bins, 1)
    labels = [*(format_breaks(edges[:-1]) if len(edges) else []), *(f"miss.{as_character(c)}" for c in codes), None]
    return Coding(name, "histogram", breaks=tuple(edges.tolist()), codes=codes), labels


@dataclass(frozen=True)
class Counted:
    """The codings and, per data set, the distinct (group, column) codes and their counts."""

    by: list[tuple[Coding, list]]
    var: Coding
    var_labels: list
    counted: list[tuple[np.ndarray, np.ndarray]]
    present: np.ndarray  # the groups present in any data set (flat codes, sorted)


def count_groups(params: MultiCompareParams, frames: EvalData, executor: Executor) -> Counted:
    """The two passes over every frame of ``frames``: the codings, then the counts.

    Raises
    ------
    ParameterError
        More groups than ``max_groups`` (or a numeric ``by`` variable with more values).
    """
    names = [*params.by, params.var]
    chosen = executor.prepare(frames.select(names))
    numerics = [n for n in names if not chosen.schema[n].is_factor]
    codes = tuple(chosen.schema[params.var].missing_codes) if params.var in numerics else ()
    limit = params.max_groups + 1
    merge = partial(_merge_facts, limit=limit)
    facts = executor.compute(
        *[executor.map_reduce(f, _facts_kernel, merge, numerics, params.var, codes, limit) for f in chosen.frames]
    )
    by_planned = [_by_coding(b, chosen, facts, params.max_groups) for b in params.by]
    var_coding, var_labels = _var_coding(params, chosen, facts)
    by_codings = [c for c, _ in by_planned]
    if float(np.prod([c.size for c in by_codings], dtype=float)) * var_coding.size >= 2.0**62:
        raise ParameterError("multi_compare: too many combinations of the by variables' values to count")
    counted = executor.compute(
        *[executor.map_reduce(f, _count_kernel, _sum_counts, by_codings, var_coding) for f in chosen.frames]
    )
    present = np.unique(np.concatenate([keys // var_coding.size for keys, _ in counted]))
    if len(present) > params.max_groups:
        raise ParameterError(
            f"multi_compare: {', '.join(params.by)} form {len(present)} groups in the compared data, more than "
            f"max_groups = {params.max_groups}; choose fewer or coarser by variables or raise max_groups"
        )
    return Counted(by_planned, var_coding, var_labels, counted, present)


def evaluate_multi_compare(params: MultiCompareParams, data: EvalData, executor: Executor) -> MultiCompareResult:
    """``multi.compare`` of ``data`` (``cont_na`` merged into its schema)."""
    sets = params.msel or list(range(1, data.m + 1))
    c = count_groups(params, EvalData((data.original, *(data.frames[i] for i in sets)), data.schema), executor)
    by_planned, var_coding, var_labels, counted, present = c.by, c.var, c.var_labels, c.counted, c.present
    sizes = [coding.size for coding, _ in by_planned]
    ncols = var_coding.size
    table = np.zeros((len(counted), len(present), ncols), dtype=np.int64)
    for s, (keys, counts) in enumerate(counted):
        table[s, np.searchsorted(present, keys // ncols), keys % ncols] = counts
    group_codes = np.stack(np.unravel_index(present, sizes), axis=1) if len(present) else np.zeros((0, len(sizes)))
    groups = [tuple(by_planned[j][1][int(k)] for j, k in enumerate(row)) for row in group_codes]
    # the written labels: a by level or var value held by 1-9 original records is coarsened
    written_by = []
    for j, (_, labels) in enumerate(by_planned):
        marginal = np.zeros(len(labels))
        np.add.at(marginal, group_codes[:, j].astype(int), table[0].sum(axis=1))
        written_by.append(coarsened_levels(labels, marginal))
    written_var = coarsened_levels(var_labels, table[0].sum(axis=0)) if var_coding.kind != "histogram" else {}
    if params.msel is None:
        sources = ("original", "mean")
        table = np.stack([table[0], table[1:].sum(axis=0)]).astype(float)
        table[1] /= data.m
    else:
        sources = ("original", *(str(i) for i in sets))
        table = table.astype(float)
    keep = [i for i in range(ncols) if i < ncols - 1 or table[:, :, i].any()]  # NA column only when held
    return MultiCompareResult(
        var=params.var,
        by=tuple(params.by),
        kind="numeric" if var_coding.kind == "histogram" else "factor",
        groups=tuple(groups),
        categories=tuple(var_labels[i] for i in keep),
        sources=sources,
        counts=table[:, :, keep],
        breaks=var_coding.breaks,
        m=data.m,
        written_groups=tuple(tuple(written_by[j].get(str(lab), lab) for j, lab in enumerate(g)) for g in groups),
        written_categories=tuple(written_var.get(str(var_labels[i]), var_labels[i]) for i in keep),
    )
