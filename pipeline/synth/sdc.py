"""Statistical disclosure control of the ground-truth variables before margins are counted.

Steps (applied in the order given, each recorded):

* :class:`TopBottomCoding` - values below ``bottom`` become ``bottom``, above ``top`` become
  ``top`` (synthpop ``sdc(bottom.top.coding=)``); special missing codes are left untouched.
* :class:`Categorise` - a numeric variable becomes intervals ``[a, b)`` (the last closed), from
  explicit ``breaks`` or, like synthpop's ``numtocat.syn``, from ``groups`` quantile (type 7,
  duplicates removed; "equal" widths if that gives <= 2 groups) or equal-width breaks. Special
  missing codes become their own levels; NA stays NA.
* :class:`MergeLevels` - synthpop ``mergelevels.syn``: levels with fewer than ``min_count``
  records are lumped into one level (appended last); if that level is itself still small it
  absorbs the smallest remaining level. Or explicit groups ``{new: [old, ...]}``.

IPF works on categories only, so after the steps every variable must be a factor; a numeric
variable without a categorise step is an error.

Step records hold the rule and its effect on the levels (labels and breaks), never counts or
record values. Breaks computed from the data (quantile/equal) are data-derived values (the
extreme breaks are the minimum and maximum): prefer explicit breaks, or top/bottom-code first.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, model_validator

from pipeline.data.schema import Schema
from pipeline.errors import ParameterError
from pipeline.rcompat import as_character, cut_index, cut_labels, quantile7, seq_length_out, seq_probs

if TYPE_CHECKING:  # the settings models are part of a task file: loading one imports no Dask
    from pipeline.evaluation.data import Frame
    from pipeline.evaluation.execution import Executor


class TopBottomCoding(BaseModel):
    """Top/bottom coding of a numeric variable."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    step: Literal["top_bottom_coding"] = "top_bottom_coding"
    variable: str
    bottom: float | None = None
    top: float | None = None
    exclude: tuple[float, ...] | None = Field(
        default=None, description="codes left untouched (default: the variable's special missing codes)"
    )

    @model_validator(mode="after")
    def _check(self) -> TopBottomCoding:
        if self.bottom is None and self.top is None:
            raise ValueError(f"top_bottom_coding of {self.variable!r}: give bottom and/or top")
        if self.bottom is not None and self.top is not None and self.bottom > self.top:
            raise ValueError(f"top_bottom_coding of {self.variable!r}: bottom must be <= top")
        return self


class Categorise(BaseModel):
    """Numeric variable -> interval categories."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    step: Literal["categorise"] = "categorise"
    variable: str
    breaks: tuple[float, ...] | None = None
    groups: int = Field(default=5, ge=2)
    style: Literal["quantile", "equal"] = "quantile"

    @model_validator(mode="after")
    def _check(self) -> Categorise:
        if self.breaks is not None:
            b = np.asarray(self.breaks, dtype=float)
            if b.size < 2 or not np.all(np.isfinite(b)) or np.any(np.diff(b) <= 0):
                raise ValueError(
                    f"categorise {self.variable!r}: breaks must be >= 2 finite, strictly increasing values"
                )
        return self


class MergeLevels(BaseModel):
    """Merge small (or listed) levels of a factor."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    step: Literal["merge_levels"] = "merge_levels"
    variable: str
    min_count: int = Field(default=10, ge=1)
    new_label: str = "Other"
    include_na: bool = False
    groups: dict[str, tuple[str, ...]] | None = None


SdcStep = Annotated[TopBottomCoding | Categorise | MergeLevels, Field(discriminator="step")]


def interval_labels(breaks: Sequence[float]) -> tuple[str, ...]:
    """Labels of a categorise step: ``[a,b)``, the last ``[a,b]``.

    The same R rule as synthpop's grouping (:func:`pipeline.rcompat.cut_labels`), with one
    deliberate difference: ``dig.lab = 3``, the default of R's ``cut()``, where synthpop's
    ``group_num``/``numtocat.syn`` pass 8. The step is specified (docs/synthesis.md) as plain
    ``cut(right = FALSE, include.lowest = TRUE)`` on breaks the user usually chooses, so its
    released labels are what that call prints (``[25,1e+03)``); digits are added only where
    neighbouring labels would otherwise be equal.
    """
    return tuple(cut_labels(breaks, dig_lab=3))


@dataclass(frozen=True)
class Bins:
    """How a numeric variable was categorised, and how values are re-created from its levels.

    Levels are the intervals (``labels``) followed by one level per special missing code.
    """

    variable: str
    kind: str
    breaks: tuple[float, ...]
    labels: tuple[str, ...]
    codes: tuple[float, ...]

    @property
    def code_labels(self) -> tuple[str, ...]:
        return tuple(as_character(c) for c in self.codes)

    @property
    def levels(self) -> tuple[str, ...]:
        return self.labels + self.code_labels

    def _integer_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        b = np.asarray(self.breaks)
        lo = np.ceil(b[:-1])
        hi = np.ceil(b[1:]) - 1
        hi[-1] = np.floor(b[-1])
        return lo, hi

    def check(self) -> None:
        """An integer variable needs at least one integer in every interval."""
        if self.kind == "integer":
            lo, hi = self._integer_bounds()
            if np.any(hi < lo):
                raise ParameterError(
                    f"categorise {self.variable!r}: an interval of this integer variable contains no integer; "
                    "choose other breaks"
                )

    def values(self, level_codes: np.ndarray, rng: np.random.Generator, mode: str) -> np.ndarray:
        """Numbers for records given their level codes (-1 = NA), drawn without any original value.

        ``mode="uniform"``: uniform within the interval (integers: uniform over the integers in
        it); ``"midpoint"``: the interval's midpoint (integers: rounded down). Special-code levels
        give the code; NA gives NaN.
        """
        codes = np.asarray(level_codes, dtype=np.int64)
        k = len(self.labels)
        out = np.full(codes.size, np.nan)
        interval = (codes >= 0) & (codes < k)
        idx = codes[interval]
        b = np.asarray(self.breaks)
        if self.kind == "integer":
            lo, hi = self._integer_bounds()
            if mode == "uniform":
                out[interval] = rng.integers(lo[idx].astype(np.int64), hi[idx].astype(np.int64) + 1)
            else:
                out[interval] = np.floor((lo[idx] + hi[idx]) / 2)
        elif mode == "uniform":
            out[interval] = b[idx] + rng.random(idx.size) * (b[idx + 1] - b[idx])
        else:
            out[interval] = (b[idx] + b[idx + 1]) / 2
        special = codes >= k
        out[special] = np.asarray(self.codes, dtype=float)[codes[special] - k] if self.codes else np.nan
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"breaks": list(self.breaks), "labels": list(self.labels), "codes": list(self.codes)}


@dataclass(frozen=True, eq=False)
class SdcTransform:
    """The resolved SDC steps as a pure function of one partition of the ground truth.

    Each operation is a module-level function of one column with plain arguments (so the
    transform can be sent to workers); calling the transform gives the synthesised variables
    as categoricals whose categories are the resolved levels (missing = NaN).
    """

    names: tuple[str, ...]
    ops: tuple[tuple[str, Callable[..., pd.Series], dict[str, Any]], ...] = ()

    def then(self, variable: str, func: Callable[..., pd.Series], **kwargs: Any) -> SdcTransform:
        """This transform followed by ``func(column, **kwargs)`` on ``variable``."""
        return SdcTransform(self.names, (*self.ops, (variable, func, kwargs)))

    def column(self, part: pd.DataFrame, variable: str) -> pd.Series:
        """One variable of a partition after the steps on it."""
        s = part[variable]
        for var, func, kwargs in self.ops:
            if var == variable:
                s = func(s, **kwargs)
        return s

    def __call__(self, part: pd.DataFrame) -> pd.DataFrame:
        changed = dict.fromkeys(var for var, _, _ in self.ops)
        return part[list(self.names)].assign(**{v: self.column(part, v) for v in changed})


@dataclass(frozen=True, eq=False)
class SdcResult:
    """The SDC steps resolved on the ground truth: every variable categorical.

    Attributes
    ----------
    transform : SdcTransform
        Turns a partition of the ground truth into the variables as categoricals whose
        categories are ``levels[var]`` (missing = NaN).
    levels : dict
        Non-NA levels of each variable, in order.
    bins : dict
        :class:`Bins` of each categorised numeric variable.
    records : tuple of dict
        One JSON-ready record per step (rule and effect on levels; no counts, no values).
    schema : Schema
        The input schema of the variables (kinds, missing codes), for the output.
    """

    transform: SdcTransform
    levels: dict[str, tuple[str, ...]]
    bins: dict[str, Bins]
    records: tuple[dict[str, Any], ...]
    schema: Schema


def _value_counts(part: pd.DataFrame, transform: SdcTransform, variable: str, codes: tuple[float, ...]) -> pd.Series:
    """Counts of the distinct non-missing values of a numeric variable (special codes excluded)."""
    s = transform.column(part, variable)
    return s[~s.isin(list(codes)) & s.notna()].value_counts()


def _sum_value_counts(parts: Sequence[pd.Series]) -> pd.Series:
    if not parts:
        return pd.Series(dtype="int64")
    return pd.concat(parts).groupby(level=0).sum()


def _outside(
    part: pd.DataFrame, transform: SdcTransform, variable: str, lo: float, hi: float, codes: tuple[float, ...]
) -> int:
    """Records of a partition outside [lo, hi] (missing values and special codes are not)."""
    x = transform.column(part, variable).to_numpy(dtype=float, na_value=np.nan)
    return int((~np.isnan(x) & ((x < lo) | (x > hi)) & ~np.isin(x, codes)).sum())


def _level_counts(part: pd.DataFrame, transform: SdcTransform, variable: str, n_levels: int) -> np.ndarray:
    """Records per level of a factor in a partition: position 0 is NA, then the levels in order."""
    codes = transform.column(part, variable).cat.codes.to_numpy().astype(np.int64)
    return np.bincount(codes + 1, minlength=n_levels + 1)


def _sum(parts: Sequence[Any]) -> Any:
    return sum(parts[1:], parts[0]) if parts else 0


def _data_breaks(vc: pd.Series, step: Categorise) -> tuple[float, ...]:
    """Breaks from the value counts of a variable (quantile type 7 or equal widths, as numtocat.syn)."""
    if len(vc) == 0:
        raise ParameterError(f"categorise {step.variable!r}: no non-missing values to compute breaks from")
    vc = vc.sort_index()
    values, counts = vc.index.to_numpy(dtype=float), vc.to_numpy()
    n = step.groups

    def equal() -> np.ndarray:
        return seq_length_out(values[0], values[-1], n + 1)

    if step.style == "quantile":
        breaks = np.unique(quantile7(values, counts, seq_probs(n)))
        if breaks.size <= 3:  # numtocat.syn: retry with equal widths when <= 2 groups
            breaks = np.unique(equal())
    else:
        breaks = np.unique(equal())
    if breaks.size < 2:
        raise ParameterError(f"categorise {step.variable!r}: all values are equal; give explicit breaks")
    return tuple(float(b) for b in breaks)


def _cut(s: pd.Series, breaks: tuple[float, ...], labels: tuple[str, ...], codes: tuple[float, ...]) -> pd.Series:
    x = s.to_numpy(dtype=float, na_value=np.nan)
    out = cut_index(x, np.asarray(breaks))
    for j, c in enumerate(codes):
        out[x == c] = len(labels) + j
    cats = list(labels) + [as_character(c) for c in codes]
    return pd.Series(pd.Categorical.from_codes(out, categories=cats), index=s.index, name=s.name)


def _clip(s: pd.Series, bottom: float | None, top: float | None, exclude: tuple[float, ...]) -> pd.Series:
    keep = s.isin(list(exclude)) if exclude else s.isna()
    if bottom is not None:
        s = s.mask((s < bottom) & ~keep, bottom)
    if top is not None:
        s = s.mask((s > top) & ~keep, top)
    return s


def _recode(s: pd.Series, mapping: np.ndarray, categories: list[str], na_code: int) -> pd.Series:
    old = s.cat.codes.to_numpy().astype(np.int64)
    new = np.where(old < 0, na_code, mapping[np.maximum(old, 0)])
    return pd.Series(pd.Categorical.from_codes(new, categories=categories), index=s.index, name=s.name)


def _merge_plan(step: MergeLevels, levels: tuple[str, ...], counts: dict[str | None, int]) -> tuple[dict, dict]:
    """(old label -> new label) and the step record for a merge of small levels."""
    if step.groups is not None:
        mapping: dict[str | None, str] = {}
        for new, olds in step.groups.items():
            for old in olds:
                key = None if (old == "NA" and step.include_na and old not in levels) else old
                if key not in levels and not (key is None and step.include_na):
                    raise ParameterError(f"merge_levels {step.variable!r}: {old!r} is not one of its levels")
                mapping[key] = new
        return mapping, {"groups": {k: list(v) for k, v in step.groups.items()}}
    candidates: list[str | None] = list(levels) + ([None] if step.include_na and counts.get(None, 0) else [])
    small = [lv for lv in candidates if counts.get(lv, 0) < step.min_count]
    if not small:
        return {}, {"merged": [], "into": None}
    if step.new_label in levels and step.new_label not in small:
        raise ParameterError(f"merge_levels {step.variable!r}: new_label {step.new_label!r} is already a level")
    lumped = sum(counts.get(lv, 0) for lv in small)
    rest = [lv for lv in candidates if lv not in small]
    if lumped < step.min_count and rest:
        # as mergelevels.syn: a still-small lumped level absorbs the smallest remaining level (ties: the last)
        smallest = min(reversed(rest), key=lambda lv: counts.get(lv, 0))
        small.append(smallest)
    mapping = dict.fromkeys(small, step.new_label)
    return mapping, {"merged": ["NA" if lv is None else lv for lv in small], "into": step.new_label}


def apply_sdc(
    frame: Frame,
    schema: Schema,
    variables: Sequence[str],
    steps: Sequence[SdcStep] = (),
    executor: Executor | None = None,
) -> SdcResult:
    """Resolve SDC steps on the chosen variables and categorise everything for the margins.

    The steps that depend on the data (breaks from the values, merging small levels, the check
    of explicit breaks) read aggregates only — value counts — computed by the executor over
    the partitions; the result's :attr:`~SdcResult.transform` applies the resolved steps to
    any partition.

    Parameters
    ----------
    frame : frame
        Ground truth in the schema's in-memory form.
    schema : Schema
    variables : sequence of str
        Variables to synthesise (factors, or numerics with a categorise step).
    steps : sequence of SdcStep
        Applied in order.
    executor : Executor, optional
        Computes the aggregates (default: :meth:`Executor.current`).

    Raises
    ------
    ParameterError
        Unknown variable, a step on a variable of the wrong kind, values outside explicit
        breaks, or a numeric variable left without bins.
    """
    names = list(variables)
    if not names:
        raise ParameterError("variables: choose at least one variable to synthesise")
    if len(set(names)) != len(names):
        raise ParameterError(f"variables: duplicated variable(s) in {names}")
    missing = [v for v in names if v not in schema]
    if missing:
        raise ParameterError(f"variables: {', '.join(map(repr, missing))} not in the data ({', '.join(schema.names)})")
    from pipeline.evaluation.execution import Executor

    executor = executor or Executor.current()
    sub = schema.select(names)
    transform = SdcTransform(tuple(names))
    state: dict[str, str] = {}
    levels: dict[str, tuple[str, ...]] = {}
    for v in sub:
        if v.kind == "character":
            raise ParameterError(f"variables: {v.name!r} is a character variable; IPF needs factors or binned numbers")
        state[v.name] = "factor" if v.is_factor else "numeric"
        if v.is_factor:
            levels[v.name] = tuple(v.levels or ())
    bins: dict[str, Bins] = {}
    records: list[dict[str, Any]] = []
    for step in steps:
        var = step.variable
        if var not in state:
            raise ParameterError(f"sdc step {step.step}: {var!r} is not one of the synthesised variables ({names})")
        codes = sub[var].missing_codes
        if isinstance(step, TopBottomCoding):
            if state[var] != "numeric":
                raise ParameterError(
                    f"top_bottom_coding: {var!r} is not a numeric variable (or is already categorised)"
                )
            exclude = tuple(codes if step.exclude is None else step.exclude)
            transform = transform.then(var, _clip, bottom=step.bottom, top=step.top, exclude=exclude)
            records.append(
                {"step": step.step, "variable": var, "bottom": step.bottom, "top": step.top, "exclude": list(exclude)}
            )
        elif isinstance(step, Categorise):
            if state[var] != "numeric":
                raise ParameterError(f"categorise: {var!r} is not a numeric variable (or is already categorised)")
            if step.breaks is None:
                (vc,) = executor.compute(
                    executor.map_reduce(frame, _value_counts, _sum_value_counts, transform, var, codes)
                )
                breaks = _data_breaks(vc, step)
            else:
                breaks = step.breaks
            (outside,) = executor.compute(
                executor.map_reduce(frame, _outside, _sum, transform, var, breaks[0], breaks[-1], codes)
            )
            if outside:
                raise ParameterError(
                    f"categorise {var!r}: {outside} record(s) lie outside the breaks [{breaks[0]:g}, {breaks[-1]:g}]; "
                    "widen the breaks or add a top_bottom_coding step first"
                )
            b = Bins(var, sub[var].kind, tuple(float(x) for x in breaks), interval_labels(breaks), tuple(codes))
            b.check()
            transform = transform.then(var, _cut, breaks=b.breaks, labels=b.labels, codes=b.codes)
            bins[var], levels[var], state[var] = b, b.levels, "binned"
            records.append(
                {
                    "step": step.step,
                    "variable": var,
                    "breaks": list(b.breaks),
                    "labels": list(b.levels),
                    "from_data": step.breaks is None,
                    "style": "fixed" if step.breaks is not None else step.style,
                }
            )
        else:
            if state[var] != "factor":
                raise ParameterError(
                    f"merge_levels: {var!r} is not a factor (merge bins of a numeric variable by choosing wider breaks)"
                )
            counts: dict[str | None, int] = {}
            if step.groups is None:
                (per_level,) = executor.compute(
                    executor.map_reduce(frame, _level_counts, _sum, transform, var, len(levels[var]))
                )
                counts = {
                    None: int(per_level[0]),
                    **{lv: int(c) for lv, c in zip(levels[var], per_level[1:], strict=True)},
                }
            mapping, effect = _merge_plan(step, levels[var], counts)
            if step.groups is None:  # lumped small levels go last (fct_lump)
                new_levels = [lv for lv in levels[var] if lv not in mapping] + ([step.new_label] if mapping else [])
            else:  # an explicit group takes the place of its first member
                new_levels = list(dict.fromkeys([mapping.get(lv, lv) for lv in levels[var]] + list(mapping.values())))
            remap = np.array([new_levels.index(mapping.get(lv, lv)) for lv in levels[var]], dtype=np.int64)
            na_code = new_levels.index(mapping[None]) if None in mapping else -1
            transform = transform.then(var, _recode, mapping=remap, categories=new_levels, na_code=na_code)
            levels[var] = tuple(new_levels)
            records.append(
                {
                    "step": step.step,
                    "variable": var,
                    "min_count": step.min_count,
                    "include_na": step.include_na,
                    **effect,
                    "levels": new_levels,
                }
            )
    unbinned = [v for v in names if state[v] == "numeric"]
    if unbinned:
        raise ParameterError(
            f"variables {', '.join(map(repr, unbinned))} are numeric without bins: IPF needs categories, "
            "add a categorise step (breaks) for each"
        )
    return SdcResult(transform, levels, bins, tuple(records), sub)
