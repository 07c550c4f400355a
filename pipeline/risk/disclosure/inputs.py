"""Input handling shared by every disclosure function.

Accepts pandas frames, Dask frames or :class:`~pipeline.data.dataset.Dataset` objects, checks
that the variables exist, casts them to the schema's in-memory form, and gathers the
per-variable value counts (aggregates only) that the category coders are built from.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd

from pipeline.data.schema import Schema, cast_series
from pipeline.errors import CompatibilityError, DataError, ParameterError

Frame = pd.DataFrame | dd.DataFrame


@dataclass(frozen=True)
class Inputs:
    """The original and the synthetic sets restricted to the variables a measure uses.

    Attributes
    ----------
    original, synthetic
        pandas frames (``lazy`` False) or Dask frames (``lazy`` True) with the used columns.
    columns : tuple of str
        All column names of the original, in data order (synthpop orders keys by it).
    schema : Schema or None
        The schema the data were cast to (None: kinds taken from the dtypes).
    lazy : bool
        Whether the Dask (key-block) path is used.
    """

    original: Frame
    synthetic: tuple[Frame, ...]
    columns: tuple[str, ...]
    schema: Schema | None
    lazy: bool

    @property
    def frames(self) -> tuple[Frame, ...]:
        return (self.original, *self.synthetic)

    def in_memory(self) -> Inputs:
        """The same inputs computed into pandas frames (one transfer from the cluster)."""
        if not self.lazy:
            return self
        frames = [f.reset_index(drop=True) for f in dask.compute(*self.frames)]
        return Inputs(frames[0], tuple(frames[1:]), self.columns, self.schema, False)


def _is_frame(obj: Any) -> bool:
    return isinstance(obj, (pd.DataFrame, dd.DataFrame))


def _is_dataset(obj: Any) -> bool:
    """A :class:`~pipeline.data.dataset.Dataset` (or anything with a frame and a schema)."""
    return not _is_frame(obj) and _is_frame(getattr(obj, "frame", None)) and isinstance(getattr(obj, "schema", None),
                                                                                       Schema)


def unwrap(obj: Any, what: str) -> tuple[Frame, Schema | None]:
    """A frame and the schema it carries (a Dataset carries one, a frame does not)."""
    if _is_dataset(obj):
        return obj.frame, obj.schema
    if not _is_frame(obj):
        raise ParameterError(f"{what} must be a pandas or Dask DataFrame or a Dataset, got {type(obj).__name__}")
    return obj, None


def first_frame(synthetic: Any) -> Frame:
    """The frame of the first synthetic set."""
    sets = synthetic_list(synthetic)
    if not sets:
        raise ParameterError("synthetic must hold at least one synthetic data set")
    return unwrap(sets[0], "synthetic set 1")[0]


def synthetic_list(synthetic: Any) -> list[Any]:
    """One synthetic set (frame or Dataset) or a sequence of them, as a list."""
    if _is_frame(synthetic) or _is_dataset(synthetic):
        return [synthetic]
    return list(synthetic)


def source_name(index: int) -> str:
    """How messages name data set ``index`` (0 = original, 1.. = synthetic sets)."""
    return "the original data" if index == 0 else f"synthetic set {index}"


Engine = Literal["auto", "pandas", "dask"]
#: with engine "auto", Dask inputs of at most this many records per data set are computed in memory
IN_MEMORY_ROWS = 1_000_000


def prepare_inputs(
    original: Any, synthetic: Any, variables: Sequence[str], schema: Schema | None = None, engine: Engine = "auto"
) -> Inputs:
    """Check and restrict the inputs to ``variables``, and choose where to compute.

    ``engine="pandas"`` computes everything in memory, ``"dask"`` on key blocks.  ``"auto"``
    uses key blocks for Dask input unless every data set has a single partition; pandas input
    stays in memory.  (With "auto", :meth:`Inputs.in_memory` is used later for Dask input of
    at most :data:`IN_MEMORY_ROWS` records per set, once the value counts are known.)

    Raises
    ------
    ParameterError
        A variable is not in the original, or the inputs are not frames.
    CompatibilityError
        A variable is missing from a synthetic set or does not fit the schema there.
    """
    orig, carried = unwrap(original, "original")
    syn_list = synthetic_list(synthetic)
    if not syn_list:
        raise ParameterError("synthetic must hold at least one synthetic data set")
    syns = [unwrap(s, f"synthetic set {i + 1}")[0] for i, s in enumerate(syn_list)]
    schema = schema or carried
    columns = tuple(str(c) for c in orig.columns)
    missing = [v for v in variables if v not in columns]
    if missing:
        raise ParameterError(f"variable(s) {missing} not found in the original data; it has: {list(columns)}")
    for i, s in enumerate(syns, start=1):
        absent = [v for v in variables if v not in s.columns]
        if absent:
            raise CompatibilityError(f"variable(s) {absent} are in the original but not in synthetic set {i}")
    if schema is not None:
        unknown = [v for v in variables if v not in schema]
        if unknown:
            raise ParameterError(f"variable(s) {unknown} are not described by the schema")

    if engine not in ("auto", "pandas", "dask"):
        raise ParameterError(f"engine must be 'auto', 'pandas' or 'dask', got {engine!r}")
    frames = [orig, *syns]
    cols = list(variables)
    if engine == "auto":
        lazy = any(isinstance(f, dd.DataFrame) and f.npartitions > 1 for f in frames)
    else:
        lazy = engine == "dask"
    if lazy:
        frames = [f if isinstance(f, dd.DataFrame) else dd.from_pandas(f, npartitions=1, sort=False) for f in frames]
        frames = [_cast_lazy(f[cols], schema, i) for i, f in enumerate(frames)]
    else:
        frames = [f.compute() if isinstance(f, dd.DataFrame) else f for f in frames]
        frames = [_cast(f[cols].reset_index(drop=True), schema, i) for i, f in enumerate(frames)]
    return Inputs(frames[0], tuple(frames[1:]), columns, schema, lazy)


def _cast(frame: pd.DataFrame, schema: Schema | None, index: int) -> pd.DataFrame:
    """Cast the columns whose dtype differs from the schema's in-memory form."""
    if schema is None:
        return frame
    out = {}
    for name in frame.columns:
        var = schema[name]
        s = frame[name]
        if _fits(s.dtype, var):
            out[name] = s
            continue
        try:
            out[name] = cast_series(s, var, source_name(index))
        except DataError as e:
            raise (DataError if index == 0 else CompatibilityError)(str(e)) from None
    return pd.DataFrame(out, index=frame.index)


def _fits(dtype: Any, var: Any) -> bool:
    if var.is_factor:
        return isinstance(dtype, pd.CategoricalDtype)
    if var.is_numeric:
        return pd.api.types.is_numeric_dtype(dtype) and not isinstance(dtype, pd.CategoricalDtype)
    return True


def _cast_lazy(frame: dd.DataFrame, schema: Schema | None, index: int) -> dd.DataFrame:
    if schema is None or all(_fits(frame._meta[c].dtype, schema[c]) for c in frame.columns):
        return frame
    meta = pd.DataFrame({c: pd.Series(dtype=schema[c].dtype if not _fits(frame._meta[c].dtype, schema[c])
                                      else frame._meta[c].dtype) for c in frame.columns})
    return frame.map_partitions(_cast, schema, index, meta=meta)


# ---- value counts ---------------------------------------------------------------------------
@dataclass(frozen=True)
class ColumnStats:
    """What one variable looks like in one data set: aggregate counts only.

    Attributes
    ----------
    categorical : bool
        Factor-like (categorical, text, boolean) rather than numeric.
    declared : tuple of str or None
        The levels a categorical column declares (its categories), in order; None for text.
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


def _is_categorical(dtype: Any) -> bool:
    return not pd.api.types.is_numeric_dtype(dtype) or pd.api.types.is_bool_dtype(dtype) \
        or isinstance(dtype, pd.CategoricalDtype)


def _stats(counts: pd.Series, dtype: Any, n: int) -> ColumnStats:
    categorical = _is_categorical(dtype)
    na = counts.index.isna()
    n_missing = int(counts[na].sum())
    observed = counts[~na]
    observed = observed[observed > 0]
    declared = tuple(str(c) for c in dtype.categories) if isinstance(dtype, pd.CategoricalDtype) else None
    if categorical:
        labels = observed.index.astype("string").tolist() if not isinstance(dtype, pd.CategoricalDtype) \
            else [str(x) for x in observed.index]
        if len(set(labels)) != len(labels):
            raise CompatibilityError("two different values share one label; the levels cannot be aligned by label")
        observed = pd.Series(observed.to_numpy(dtype=np.int64), index=pd.Index(labels, dtype=object))
    else:
        observed = pd.Series(observed.to_numpy(dtype=np.int64), index=observed.index.astype("float64")).sort_index()
    return ColumnStats(categorical, declared, observed, n_missing, n)


def partition_counts(frame: pd.DataFrame, variables: Sequence[str]) -> dict[str, pd.Series]:
    """Value counts (missing included) of ``variables`` in one partition, labels as plain values."""
    out = {}
    for v in variables:
        s = frame[v]
        if isinstance(s.dtype, pd.CategoricalDtype):  # count the codes: -1 (missing) first
            counts = np.bincount(s.cat.codes.to_numpy().astype(np.int64) + 1, minlength=len(s.cat.categories) + 1)
            out[v] = pd.Series(counts, index=pd.Index([np.nan, *s.cat.categories.astype(object)], dtype=object))
        else:
            out[v] = s.value_counts(dropna=False, sort=False)
    return out


def _merge_counts(parts: Sequence[dict[str, pd.Series]], variable: str) -> pd.Series:
    series = [p[variable] for p in parts]
    if len(series) == 1:
        return series[0]
    return pd.concat(series).groupby(level=0, dropna=False, sort=False).sum()


def gather_stats(inputs: Inputs, variables: Sequence[str]) -> list[dict[str, ColumnStats]]:
    """Value counts of ``variables`` in every data set (one task per partition, one computation)."""
    frames = inputs.frames
    if inputs.lazy:
        tasks = [[dask.delayed(partition_counts)(p, list(variables)) for p in f.to_delayed()] for f in frames]
        per_frame = dask.compute(*tasks)
    else:
        per_frame = [[partition_counts(f, variables)] for f in frames]
    out: list[dict[str, ColumnStats]] = []
    for i, (f, parts) in enumerate(zip(frames, per_frame, strict=True)):
        row = {}
        for v in variables:
            counts = _merge_counts(parts, v)
            try:
                row[v] = _stats(counts, f[v].dtype, int(counts.sum()))
            except CompatibilityError as e:
                raise CompatibilityError(f"{source_name(i)}: variable {v!r}: {e}") from None
        out.append(row)
    return out
