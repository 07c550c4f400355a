"""The one data boundary of every measure: :class:`EvalData`.

:func:`as_eval_data` alone accepts what users pass — pandas frames, Dask frames or
:class:`~pipeline.data.dataset.Dataset` objects — and returns the original and the m
synthetic sets cast to one :class:`~pipeline.data.schema.Schema`, with synthpop's ``cont.na``
codes merged into it.  A schema is inferred only for pandas input without one; Dask input
and Datasets carry theirs (or must be given one).  Measures never look at frame types or
dtypes again: they ask the schema what a variable is, and the
:class:`~pipeline.evaluation.execution.Executor` how to compute.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import dask.dataframe as dd
import pandas as pd

from pipeline.data.dataset import Dataset
from pipeline.data.schema import Schema, cast_series
from pipeline.errors import CompatibilityError, DataError, ParameterError
from pipeline.rcompat import normalise_cont_na

Frame = pd.DataFrame | dd.DataFrame


#: the index :func:`source_name` gives the holdout
HOLDOUT = -1


def source_name(index: int) -> str:
    """How messages name data set ``index`` (0 = original, 1.. = synthetic sets, -1 = holdout)."""
    if index == HOLDOUT:
        return "the holdout"
    return "the original data" if index == 0 else f"synthetic set {index}"


@dataclass(frozen=True)
class EvalData:
    """The original and the synthetic sets of one evaluation, cast to one schema.

    Attributes
    ----------
    frames : tuple of frames
        Original first, then synthetic sets 1..m; pandas or Dask frames (which one is the
        executor's business, not the measure's), columns as in the original.
    schema : Schema
        Kinds, factor levels and special missing codes (``cont.na`` merged in).
    holdout : frame or None
        Records of the same population that the synthesiser never saw, cast to the same schema:
        the control a risk figure of the original (the training records) is compared with.
    synthesised : frozenset of str or None
        The variables the synthesis made (synthpop's method vector is not ``""`` for them), when
        it is known — the pipeline made the sets; ``None`` for files (every variable is then
        taken as synthesised unless a measure is told otherwise).
    """

    frames: tuple[Frame, ...]
    schema: Schema
    holdout: Frame | None = None
    synthesised: frozenset[str] | None = None

    @property
    def original(self) -> Frame:
        return self.frames[0]

    @property
    def synthetic(self) -> tuple[Frame, ...]:
        return self.frames[1:]

    @property
    def m(self) -> int:
        """Number of synthetic sets."""
        return len(self.frames) - 1

    @property
    def columns(self) -> tuple[str, ...]:
        """Variables of the original in data order (synthpop orders keys by it)."""
        return tuple(str(c) for c in self.original.columns)

    def require(self, variables: Sequence[str], what: str = "variable") -> None:
        """Fail before any work when a variable is missing from the original or a synthetic set.

        Raises
        ------
        ParameterError
            A variable is not in the original (the message lists what it has).
        CompatibilityError
            A variable is in the original but not in a synthetic set.
        """
        missing = [v for v in dict.fromkeys(variables) if v not in self.schema]
        if missing:
            raise ParameterError(
                f"{what}(s) {', '.join(map(repr, missing))} not found in the original data; "
                f"it has: {', '.join(self.schema.names)}"
            )
        others = [(i, f) for i, f in enumerate(self.synthetic, start=1)]
        if self.holdout is not None:
            others.append((HOLDOUT, self.holdout))
        for i, f in others:
            absent = [v for v in dict.fromkeys(variables) if v not in f.columns]
            if absent:
                raise CompatibilityError(
                    f"{what}(s) {', '.join(map(repr, absent))} are in the original but not in {source_name(i)}"
                )

    def kept(self, names: Sequence[str], declared: Sequence[str] | None = None) -> list[str]:
        """The variables among ``names`` the synthesis kept unchanged (synthpop's method ``""``):
        ``declared`` when the user gave them (``not_synthesised``), else those the pipeline's own
        synthesis did not make (:attr:`synthesised`), else none (files: taken as synthesised)."""
        if declared is not None:
            return list(declared)
        if self.synthesised is None:
            return []
        return [v for v in names if v not in self.synthesised]

    def select(self, variables: Sequence[str]) -> EvalData:
        """The same data restricted to ``variables`` (in the order given)."""
        self.require(variables)
        cols = list(dict.fromkeys(variables))
        holdout = self.holdout[cols] if self.holdout is not None else None
        return EvalData(tuple(f[cols] for f in self.frames), self.schema.select(cols), holdout, self.synthesised)

    def with_original(self, original: Frame) -> EvalData:
        """The synthetic sets against another original (a holdout footing's training or control
        records), without a holdout; what the synthesis made is unchanged."""
        return EvalData((original, *self.synthetic), self.schema, None, self.synthesised)

    def with_frames(self, frames: Sequence[Frame]) -> EvalData:
        """The same schema (and holdout) over other frames (the executor's in-memory or blocked copies)."""
        return EvalData(tuple(frames), self.schema, self.holdout, self.synthesised)


def _unwrap(obj: Any, index: int) -> tuple[Frame, Schema | None]:
    if isinstance(obj, Dataset):
        return obj.frame, obj.schema
    if isinstance(obj, (pd.DataFrame, dd.DataFrame)):
        return obj, None
    raise ParameterError(
        f"{source_name(index)} must be a pandas or Dask DataFrame or a Dataset, got {type(obj).__name__}"
    )


def _synthetic_list(synthetic: Any) -> list[Any]:
    if isinstance(synthetic, (pd.DataFrame, dd.DataFrame, Dataset)):
        return [synthetic]
    if synthetic is None:
        return []
    return list(synthetic)


def as_eval_data(
    original: Any,
    synthetic: Any = (),
    schema: Schema | None = None,
    cont_na: Mapping[str, Any] | None = None,
    *,
    require_synthetic: bool = True,
    compatibility: Literal["strict", "align"] = "strict",
    holdout: Any = None,
    synthesised: Collection[str] | None = None,
) -> EvalData:
    """Check and cast a measure's inputs: the only place that accepts frames or Datasets.

    Parameters
    ----------
    original : pandas/Dask DataFrame or Dataset
    synthetic : frame, Dataset, a sequence of them, or a synthesis result
        The m synthetic sets (row order and columns as produced; extra columns are kept).  A
        result that knows which variables it synthesised (a partial synthesis, synthpop's
        ``synds`` object) gives its sets and ``synthesised``.
    schema : Schema, optional
        Default: the original Dataset's schema; for a pandas frame without one it is inferred
        (:meth:`Schema.infer`) — the only inference in the package.  Dask frames need one.
    cont_na : mapping variable -> code(s), optional
        synthpop's special missing codes, merged into (and overriding) the schema's.
    require_synthetic : bool
        Whether at least one synthetic set is required.
    compatibility : {"strict", "align"}
        As a task's sources: ``strict`` (default) casts every synthetic set to the original's
        schema, so a factor level the original lacks (``M`` for ``Male``) is an error;
        ``align`` first aligns the sets with the original, each read with its own schema
        (carried, else inferred): union of factor levels, common variables
        (:func:`~pipeline.data.compare.align_synthetic`).
    holdout : pandas/Dask DataFrame or Dataset, optional
        Records of the same population the synthesiser never saw (a withheld sample, a later
        wave), checked and cast exactly as the original: the same variables, kinds and levels.
    synthesised : collection of str, optional
        The variables the synthesis made, when known (:attr:`EvalData.synthesised`).

    Raises
    ------
    ParameterError
        Inputs of the wrong type, no synthetic set, a Dask frame without a schema, duplicated
        column names, or ``cont_na`` naming an unknown or non-numeric variable.
    DataError, CompatibilityError
        A value that does not fit the schema (in the original, resp. a synthetic set).
    """
    if isinstance(getattr(synthetic, "synthesised", None), frozenset):  # a synthesis result
        synthesised = synthesised if synthesised is not None else synthetic.synthesised
        synthetic = synthetic.synthetic
    orig, carried = _unwrap(original, 0)
    sets = [_unwrap(s, i) for i, s in enumerate(_synthetic_list(synthetic), start=1)]
    control = _unwrap(holdout, HOLDOUT)[0] if holdout is not None else None
    if require_synthetic and not sets:
        raise ParameterError("synthetic must hold at least one synthetic data set")
    checked = [(i, f) for i, f in enumerate([orig, *(s for s, _ in sets)])]
    if control is not None:
        checked.append((HOLDOUT, control))
    for i, f in checked:
        cols = [str(c) for c in f.columns]
        dupes = sorted({c for c in cols if cols.count(c) > 1})
        if dupes:
            raise ParameterError(f"{source_name(i)}: duplicated column name(s) {', '.join(map(repr, dupes))}")
    schema = schema or carried
    if schema is None:
        if isinstance(orig, dd.DataFrame):
            raise ParameterError("a Dask original needs a schema (pass schema=, or a Dataset)")
        schema = Schema.infer(orig)
    if compatibility == "align":
        orig, schema, sets = _aligned(orig, schema, sets)
    elif compatibility != "strict":
        raise ParameterError(f"compatibility must be 'strict' or 'align', got {compatibility!r}")
    schema = schema.select([c for c in schema.names if c in orig.columns])
    codes = normalise_cont_na(cont_na)
    if codes:
        unknown = [v for v in codes if v not in schema]
        if unknown:
            raise ParameterError(f"cont_na: variable(s) {unknown} are not in the original data")
        not_numeric = [v for v in codes if not schema[v].is_numeric]
        if not_numeric:
            raise ParameterError(f"cont_na: variable(s) {not_numeric} are not numeric")
        schema = schema.with_missing_codes(codes)
    frames = [_cast(f, schema, i) for i, f in enumerate([orig, *(s for s, _ in sets)])]
    if control is not None:
        missing = [c for c in schema.names if c not in control.columns]
        if missing:
            raise CompatibilityError(
                f"{source_name(HOLDOUT)}: variable(s) {', '.join(map(repr, missing))} of the original are missing"
            )
        control = _cast(control[list(schema.names)], schema, HOLDOUT)
    return EvalData(tuple(frames), schema, control, None if synthesised is None else frozenset(synthesised))


def _dataset(frame: Frame, schema: Schema | None, index: int) -> Dataset:
    if isinstance(frame, dd.DataFrame):
        if schema is None:
            raise ParameterError(f"{source_name(index)}: a Dask frame needs a schema to be aligned (pass a Dataset)")
        return Dataset(source_name(index), _cast(frame, schema, index), schema, source_name(index))
    return Dataset.from_pandas(frame, schema or Schema.infer(frame), name=source_name(index))


def _aligned(
    orig: Frame, schema: Schema, sets: list[tuple[Frame, Schema | None]]
) -> tuple[Frame, Schema, list[tuple[Frame, Schema | None]]]:
    """The original and the sets, each read with its own schema, aligned as a task's
    ``compatibility: align`` source is (union of levels, common variables)."""
    from pipeline.data.compare import align_synthetic

    original = _dataset(orig, schema.select([c for c in schema.names if c in orig.columns]), 0)
    synthetic = [_dataset(f, s, i) for i, (f, s) in enumerate(sets, start=1)]
    original, synthetic, _ = align_synthetic(original, synthetic, "align")
    return original.frame, original.schema, [(d.frame, d.schema) for d in synthetic]


def _fits(dtype: Any, var: Any) -> bool:
    if var.is_factor:
        return isinstance(dtype, pd.CategoricalDtype) and [str(c) for c in dtype.categories] == list(var.levels)
    if var.is_numeric:
        return dtype == "float64"
    return True


def _cast_frame(frame: pd.DataFrame, schema: Schema, index: int) -> pd.DataFrame:
    out = {}
    for name in frame.columns:
        s = frame[name]
        if name not in schema or _fits(s.dtype, schema[name]):
            out[name] = s
            continue
        try:
            out[name] = cast_series(s, schema[name], source_name(index))
        except DataError as e:
            raise (DataError if index in (0, HOLDOUT) else CompatibilityError)(str(e)) from None
    return pd.DataFrame(out, index=frame.index)


def _cast(frame: Frame, schema: Schema, index: int) -> Frame:
    """Cast the columns whose dtype differs from the schema's in-memory form (lazily for Dask)."""
    # the dtypes at once: a Dask frame's column is a new collection (a millisecond each)
    if all(c not in schema or _fits(t, schema[c]) for c, t in frame.dtypes.items()):
        return frame
    if isinstance(frame, pd.DataFrame):
        return _cast_frame(frame.reset_index(drop=True), schema, index)
    meta = (
        _cast_frame(frame._meta, schema, index)
        if len(frame._meta)
        else pd.DataFrame(
            {c: pd.Series(dtype=schema[c].dtype if c in schema else frame._meta[c].dtype) for c in frame.columns}
        )
    )
    return frame.map_partitions(_cast_frame, schema, index, meta=meta)
