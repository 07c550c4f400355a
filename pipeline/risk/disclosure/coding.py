"""Category coders: one shared dictionary of category labels per variable.

Every variable used as a key or a target becomes integer codes into one list of labels that
is the same for the original and every synthetic set, so tables of the different data sets
align by label (synthpop aligns by sorted position, which can misalign rows).  A coder is
built once from aggregate value counts (:func:`value_counts` per partition, merged exactly
by :func:`merge_value_counts`, summarised per data set as :class:`ColumnStats`) and then
encodes any partition with vectorised numpy.  Whether a variable is categorical comes from
the schema, never from dtypes.

What becomes a category (spec §3.3–3.4):

* a factor (or text) value is its label; missing is the category ``"Missing"`` (a genuine
  level called "Missing" merges with it, as in synthpop);
* a numeric value, without grouping, is the R label of the value (15 significant digits),
  with grouping the classInt interval that contains it; special missing codes (``cont.na``)
  keep a category of their own.

A coder also remembers the level order R would give each data set's factor (``r_levels``):
it decides ties in the one-way check, and for a single key which key values synthpop
counts as "present in the synthetic data".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np
import pandas as pd

from pipeline import notices
from pipeline.data.schema import Variable
from pipeline.errors import DataError, ParameterError
from pipeline.evaluation.data import source_name
from pipeline.rcompat import BinStyle, class_breaks
from pipeline.rcompat import as_character as r_number_label
from pipeline.rcompat import as_character_array as r_number_labels
from pipeline.rcompat import cut_index as bin_index
from pipeline.rcompat import cut_labels as interval_labels

if TYPE_CHECKING:
    from pipeline.risk.disclosure.kernel import JointCounts

MISSING = "Missing"


# ---- value counts ---------------------------------------------------------------------------
@dataclass(frozen=True)
class ColumnStats:
    """What one variable looks like in one data set: aggregate counts only.

    Attributes
    ----------
    categorical : bool
        A factor or a character variable (else numeric), from the schema.
    declared : tuple of str or None
        A factor's schema levels, in order; None for text and numbers.
    counts : pandas.Series
        Observed value -> number of records (labels for categorical, floats for numeric),
        missing values excluded.
    n_missing : int
    n : int
        Number of records.
    """

    categorical: bool
    declared: tuple[str, ...] | None
    counts: pd.Series
    n_missing: int
    n: int


def value_counts(
    frame: pd.DataFrame, variables: Sequence[str], factors: Sequence[str], weights: np.ndarray | None = None
) -> dict[str, pd.Series]:
    """Value counts (missing included) of ``variables`` in one partition (the map step).

    ``factors``: the variables that are factors in the schema (categorical columns);
    ``weights``: records per row (rows that are counted combinations of values), default one.
    """
    out = {}
    for v in variables:
        s = frame[v]
        if v in factors:  # count the codes: -1 (missing) first
            categories = s.array.categories
            codes = s.array.codes.astype(np.int64) + 1
            counts = np.bincount(codes, weights, minlength=len(categories) + 1).astype(np.int64)
            out[v] = pd.Series(counts, index=pd.Index([np.nan, *categories.astype(object)], dtype=object))
        elif weights is None:
            out[v] = s.value_counts(dropna=False, sort=False)
        else:  # a hash numbering of the values (missing included) and a weighted count
            codes, uniques = pd.factorize(s.to_numpy(), use_na_sentinel=False)
            out[v] = pd.Series(np.bincount(codes, weights, minlength=len(uniques)).astype(np.int64), index=uniques)
    return out


def merge_value_counts(parts: Sequence[dict[str, pd.Series]]) -> dict[str, pd.Series]:
    """The value counts of several partitions as one (integer sums: exact, in any grouping)."""
    if len(parts) == 1:
        return parts[0]
    return {v: pd.concat([p[v] for p in parts]).groupby(level=0, dropna=False, sort=False).sum() for v in parts[0]}


def column_stats(counts: pd.Series, variable: Variable) -> ColumnStats:
    """:class:`ColumnStats` of one variable from its merged value counts."""
    na = counts.index.isna()
    observed = counts[~na]
    observed = observed[observed > 0]
    values = observed.to_numpy(dtype=np.int64)
    if variable.is_numeric:
        observed = pd.Series(values, index=observed.index.astype("float64")).sort_index()
    else:
        observed = pd.Series(values, index=pd.Index([str(x) for x in observed.index], dtype=object))
    declared = tuple(variable.levels or ()) if variable.is_factor else None
    return ColumnStats(not variable.is_numeric, declared, observed, int(counts[na].sum()), int(counts.sum()))


@dataclass(frozen=True)
class Coder:
    """Codes of one variable, shared by the original and every synthetic set.

    Attributes
    ----------
    name : str
    mode : {"factor", "text", "values", "bins"}
        Factor levels, text labels, distinct numeric values, or numeric intervals.
    labels : tuple of str
        Code -> category label.
    missing : int
        Code of the ``"Missing"`` category.
    values, value_codes : numpy arrays
        ("values") sorted distinct numbers and the code of each.
    lookup : numpy array or None
        ("values", whole numbers in a moderate range) code of ``values[0] + i`` at ``i``
        (-1 where no value): a direct table look-up instead of a binary search.
    breaks : numpy array
        ("bins") interval break points.
    special, special_codes : tuple
        ("bins") special missing codes and their category codes.
    r_levels : tuple of tuple of int
        Per data set (0 = original), the codes of the levels of R's factor, in R's order.
    """

    name: str
    mode: Literal["factor", "text", "values", "bins"]
    labels: tuple[str, ...]
    missing: int
    r_levels: tuple[tuple[int, ...], ...]
    values: np.ndarray | None = None
    value_codes: np.ndarray | None = None
    lookup: np.ndarray | None = None
    breaks: np.ndarray | None = None
    special: tuple[float, ...] = ()
    special_codes: tuple[int, ...] = ()

    @property
    def size(self) -> int:
        return len(self.labels)

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(np.int16 if self.size < np.iinfo(np.int16).max else np.int32)

    def code_of(self, label: str) -> int | None:
        try:
            return self.labels.index(label)
        except ValueError:
            return None

    def encode(self, s: pd.Series) -> np.ndarray:
        """Codes of the values of one column (any partition of any data set)."""
        if self.mode in ("factor", "text"):
            return self._encode_labels(s)
        x = s.to_numpy(dtype=np.float64, na_value=np.nan)
        out = np.full(len(x), self.missing, dtype=self.dtype)
        present = ~np.isnan(x)
        if self.mode == "values":
            assert self.values is not None and self.value_codes is not None
            xs = x[present]
            if self.lookup is not None:
                offset = xs - self.values[0]
                index = offset.astype(np.int64)
                inside = (index == offset) & (index >= 0) & (index < len(self.lookup))
                codes = self.lookup[np.where(inside, index, 0)]
                ok = inside & (codes >= 0)
            else:
                pos = np.searchsorted(self.values, xs).clip(0, len(self.values) - 1)
                codes = self.value_codes[pos]
                ok = self.values[pos] == xs
            if not ok.all():
                raise DataError(f"variable {self.name!r}: the data changed while being coded")
            out[present] = codes
            return out
        assert self.breaks is not None
        special = present & np.isin(x, self.special)
        regular = present & ~special
        out[regular] = bin_index(x[regular], self.breaks)
        if special.any():
            lookup = dict(zip(self.special, self.special_codes, strict=True))
            out[special] = pd.Series(x[special]).map(lookup).to_numpy()
        return out

    def _encode_labels(self, s: pd.Series) -> np.ndarray:
        if self.mode == "factor":  # a categorical column: map its categories once
            index = {lab: i for i, lab in enumerate(self.labels)}
            lookup = np.array([index.get(str(c), -1) for c in s.array.categories], dtype=np.int64)
            codes = s.array.codes
            mapped = np.where(codes < 0, self.missing, lookup[codes] if len(lookup) else -1)
        else:  # text: its labels, as in the value counts
            text = s.astype("string")
            codes = pd.Categorical(text, categories=list(self.labels)).codes
            mapped = np.where(text.isna().to_numpy(), self.missing, codes)
        if (mapped < 0).any():
            raise DataError(f"variable {self.name!r}: a value has no category (the data changed while being coded)")
        return mapped.astype(self.dtype)


def _r_order(observed: Sequence[str], declared: Sequence[str] | None, has_missing: bool) -> list[str]:
    """Levels of R's factor for one data set, after synthpop's Missing recoding.

    A variable with missing values is re-made with ``factor(as.character(x))``: its levels
    become the sorted observed labels (code-point order, R under ``LC_COLLATE=C``).
    """
    if has_missing:
        return sorted({*observed, MISSING})
    return list(declared) if declared is not None else list(observed)


def factor_coder(name: str, stats: Sequence[ColumnStats]) -> Coder:
    """Coder of a factor or text variable: labels of the original first, then new ones.

    A factor's labels start with its schema levels (declared, observed or not); text labels
    are the observed values, sorted.
    """
    seen: dict[str, None] = {}  # insertion-ordered set: a list's `in` made 100,000 levels quadratic
    for st in stats:
        seen.update(dict.fromkeys(st.declared if st.declared is not None else sorted(st.counts.index)))
        seen.update(dict.fromkeys(st.counts.index))
    seen.setdefault(MISSING)
    labels = list(seen)
    index = {lab: i for i, lab in enumerate(labels)}
    r_levels = []
    for st in stats:
        declared = st.declared if st.declared is not None else sorted(st.counts.index)  # R: factor() sorts text
        observed = [lab for lab in declared if lab in st.counts.index]
        r_levels.append(tuple(index[lab] for lab in _r_order(observed, declared, st.n_missing > 0)))
    mode = "factor" if stats[0].declared is not None else "text"
    return Coder(name, mode, tuple(labels), index[MISSING], tuple(r_levels))


#: largest span of whole numbers coded by a direct look-up table (the table travels with every task)
LOOKUP_SPAN = 1 << 20


def value_coder(name: str, stats: Sequence[ColumnStats]) -> Coder:
    """Coder of a numeric variable without grouping: one category per R label of a value."""
    values = np.unique(np.concatenate([st.counts.index.to_numpy(dtype=np.float64) for st in stats]))
    value_labels = r_number_labels(values)
    labels = list(dict.fromkeys(value_labels))  # numeric order; equal 15-digit labels share a category
    index = {lab: i for i, lab in enumerate(labels)}
    labels.append(MISSING)
    codes = np.array([index[lab] for lab in value_labels], dtype=np.int64)
    index[MISSING] = len(labels) - 1
    r_levels = []
    for st in stats:
        seen = [labels[c] for c in np.unique(codes[np.searchsorted(values, st.counts.index.to_numpy(np.float64))])]
        r_levels.append(tuple(index[lab] for lab in _r_order(seen, seen, st.n_missing > 0)))
    lookup = None
    if len(values) and np.all(values == np.round(values)) and values[-1] - values[0] < LOOKUP_SPAN:
        lookup = np.full(int(values[-1] - values[0]) + 1, -1, dtype=np.int32)
        lookup[(values - values[0]).astype(np.int64)] = codes
    return Coder(
        name, "values", tuple(labels), index[MISSING], tuple(r_levels), values=values, value_codes=codes, lookup=lookup
    )


def bin_coder(
    name: str, stats: Sequence[ColumnStats], ngroups: int, special: Sequence[float], style: BinStyle
) -> Coder:
    """Coder of a grouped numeric variable (synthpop ``group_num``, spec §3.3).

    Break points come from the original values pooled with the values of *all* synthetic
    sets (special codes left out); special codes get categories after the intervals.  If
    the original would have fewer than 3 categories, the grouping is redone with equal
    widths, as synthpop does.
    """
    pooled = pd.concat([st.counts for st in stats]).groupby(level=0).sum()
    pooled = pooled[~pooled.index.isin(special)]
    if len(pooled) < 2:
        raise ParameterError(
            f"ngroups for {name!r}: cannot group a variable with fewer than two distinct non-missing values"
        )
    values, counts = pooled.index.to_numpy(dtype=np.float64), pooled.to_numpy(dtype=np.int64)
    breaks = class_breaks(values, counts, ngroups, style)
    if len(breaks) - 1 + len(special) < 3:
        breaks = class_breaks(values, counts, ngroups, "equal")
        if len(breaks) - 1 + len(special) < 3:
            notices.warn(f"only {len(breaks) - 1 + len(special)} groups produced for {name!r}", stacklevel=3)
    intervals = interval_labels(breaks)
    special_labels = [r_number_label(c) for c in special]
    labels = [*intervals, *special_labels, MISSING]
    index = {lab: i for i, lab in enumerate(labels)}
    declared = [*intervals, *special_labels]
    r_levels = []
    for st in stats:
        x = st.counts.index.to_numpy(dtype=np.float64)
        is_special = np.isin(x, special)
        seen = {special_labels[list(special).index(v)] for v in x[is_special]}
        seen |= {intervals[i] for i in np.unique(bin_index(x[~is_special], breaks))}
        observed = [lab for lab in declared if lab in seen]
        r_levels.append(tuple(index[lab] for lab in _r_order(observed, declared, st.n_missing > 0)))
    return Coder(
        name,
        "bins",
        tuple(labels),
        index[MISSING],
        tuple(r_levels),
        breaks=breaks,
        special=tuple(special),
        special_codes=tuple(index[lab] for lab in special_labels),
    )


def build_coders(
    stats: Sequence[Mapping[str, ColumnStats]],
    variables: Sequence[str],
    ngroups: Mapping[str, int | None],
    cont_na: Mapping[str, tuple[float, ...]],
    style: BinStyle = "quantile",
    allow_all_missing: bool = False,
) -> dict[str, Coder]:
    """One coder per variable from the value counts of every data set.

    Raises
    ------
    ParameterError
        A variable has only missing values, or a special missing code of a key or the
        target does not occur in the original (synthpop's check, applied to every code).
    """
    coders = {}
    for name in variables:
        per_set = [s[name] for s in stats]
        for i, st in enumerate(per_set):
            if st.n_missing == st.n and not allow_all_missing:
                raise ParameterError(f"variable {name!r} has only missing values in {source_name(i)}")
        codes = cont_na.get(name, ())
        absent = [c for c in codes if c not in per_set[0].counts.index]
        if absent:
            raise ParameterError(
                f"cont_na: code(s) {[r_number_label(c) for c in absent]} of {name!r} do not occur in the original data"
            )
        n = ngroups.get(name)
        if per_set[0].categorical:
            if n:
                notices.warn(f"ngroups for {name!r} ignored: it is not numeric", stacklevel=2)
            coders[name] = factor_coder(name, per_set)
        elif n:
            coders[name] = bin_coder(name, per_set, n, codes, style)
        else:
            coders[name] = value_coder(name, per_set)
    return coders


def encode_frame(frame: pd.DataFrame, coders: Mapping[str, Coder]) -> pd.DataFrame:
    """The codes of every coded column of one partition."""
    return pd.DataFrame({name: c.encode(frame[name]) for name, c in coders.items()}, index=frame.index)


def encode_joint(joint: JointCounts, coders: Mapping[str, Coder]) -> pd.DataFrame:
    """The codes of every coded variable of one partition's :class:`JointCounts` (a frame of
    :func:`joint_codes`)."""
    return pd.DataFrame(joint_codes(joint, coders))


def joint_codes(joint: JointCounts, coders: Mapping[str, Coder]) -> dict[str, np.ndarray]:
    """The codes of every coded variable of one partition's :class:`JointCounts`, by variable.

    Each coder encodes only the values the partition has (a few per variable), and the
    combinations' local codes are mapped through that table: no value is looked up per row.
    """
    out = {}
    for name, coder in coders.items():
        i = joint.variables.index(name)
        codes, values = joint.codes[i], joint.values[i]
        # a count and np.take rather than fancy indexing: no conversion of the codes to intp
        present = np.flatnonzero(np.bincount(codes, minlength=len(values)))
        table = np.full(len(values), coder.missing, dtype=coder.dtype)
        table[present] = coder.encode(values.iloc[present].reset_index(drop=True))
        out[name] = np.take(table, codes)
    return out


def encoded_meta(coders: Mapping[str, Coder]) -> pd.DataFrame:
    return pd.DataFrame({name: pd.Series(dtype=c.dtype) for name, c in coders.items()})
