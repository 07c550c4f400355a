"""Normalise the inputs of the utility measures: pandas or Dask frames, or Datasets, plus a schema.

A measure receives ``original`` and ``synthetic`` (one frame or a list) as pandas DataFrames,
Dask DataFrames or :class:`pipeline.data.dataset.Dataset` objects (anything with ``frame`` and
``schema`` attributes).  This module returns the frames, the schema (with the special missing
codes asked for by ``cont_na`` merged in) and whether the data are distributed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import dask.dataframe as dd
import pandas as pd

from pipeline.data.schema import Schema
from pipeline.errors import ParameterError

Frame = pd.DataFrame | dd.DataFrame


@dataclass(frozen=True)
class Inputs:
    """The original and synthetic frames with their shared schema."""

    original: Frame
    synthetic: list[Frame]
    schema: Schema

    @property
    def m(self) -> int:
        return len(self.synthetic)

    @property
    def is_dask(self) -> bool:
        return isinstance(self.original, dd.DataFrame) or any(isinstance(s, dd.DataFrame) for s in self.synthetic)


def _unwrap(obj: Any, what: str) -> tuple[Frame, Schema | None]:
    if isinstance(obj, (pd.DataFrame, dd.DataFrame)):
        return obj, None
    frame = getattr(obj, "frame", None)
    schema = getattr(obj, "schema", None)
    if isinstance(frame, (pd.DataFrame, dd.DataFrame)) and isinstance(schema, Schema):
        return frame, schema
    raise ParameterError(f"{what} must be a pandas or Dask DataFrame or a Dataset, got {type(obj).__name__}")


def normalise_cont_na(cont_na: Mapping[str, Any] | None) -> dict[str, tuple[float, ...]]:
    """``cont_na`` as ``{variable: (code, ...)}`` (a single code may be given without a list)."""
    out: dict[str, tuple[float, ...]] = {}
    for name, codes in (cont_na or {}).items():
        seq = codes if isinstance(codes, (list, tuple)) else [codes]
        try:
            vals = tuple(dict.fromkeys(float(c) for c in seq if c is not None))
        except (TypeError, ValueError):
            raise ParameterError(f"cont_na for {name!r} must be numeric code(s)") from None
        out[str(name)] = vals
    return out


def collect_inputs(
    original: Any,
    synthetic: Any,
    schema: Schema | None = None,
    cont_na: Mapping[str, Any] | None = None,
) -> Inputs:
    """Unwrap frames, find the schema and merge ``cont_na`` into it.

    Parameters
    ----------
    original : DataFrame, dask DataFrame or Dataset
    synthetic : one of those, or a list of them (the m synthetic sets)
    schema : Schema, optional
        Required for Dask frames given without a Dataset; inferred from a pandas original
        otherwise.
    cont_na : mapping, optional
        Special missing codes by numeric variable (synthpop ``cont.na``); they replace the
        schema's codes for the variables named.
    """
    orig, orig_schema = _unwrap(original, "original")
    syn_list = list(synthetic) if isinstance(synthetic, (list, tuple)) else [synthetic]
    if not syn_list:
        raise ParameterError("synthetic must hold at least one synthetic data set")
    syns = []
    for i, s in enumerate(syn_list):
        frame, _ = _unwrap(s, f"synthetic[{i}]")
        syns.append(frame)
    schema = schema or orig_schema
    if schema is None:
        if isinstance(orig, dd.DataFrame):
            raise ParameterError("a schema is needed for Dask frames (pass schema= or Dataset objects)")
        schema = Schema.infer(orig)
        orig = schema.apply(orig, "original")
        syns = [schema.apply(s, f"synthetic[{i}]") if isinstance(s, pd.DataFrame) else s for i, s in enumerate(syns)]
    codes = normalise_cont_na(cont_na)
    if codes:
        unknown = [n for n in codes if n not in schema]
        if unknown:
            raise ParameterError(f"cont_na names variable(s) {unknown} that are not in the data")
        not_numeric = [n for n in codes if not schema[n].is_numeric]
        if not_numeric:
            raise ParameterError(f"cont_na is for numeric variables only; {not_numeric} are not numeric")
        schema = schema.with_missing_codes({k: list(v) for k, v in codes.items()})
    return Inputs(orig, syns, schema)


def resolve_vars(vars: Sequence[str | int] | str | None, inputs: Inputs, where: str) -> list[str]:
    """Variable names to compare: ``vars`` (names or 0-based positions) or all synthetic columns."""
    syn_cols = [str(c) for c in inputs.synthetic[0].columns]
    orig_cols = [str(c) for c in inputs.original.columns]
    if vars is None:
        names = syn_cols
        missing = [n for n in names if n not in orig_cols]
        if missing:
            raise ParameterError(f"{where}: synthetic variable(s) {missing} are not in the original data")
    else:
        seq = [vars] if isinstance(vars, (str, int)) else list(vars)
        names = []
        for v in seq:
            if isinstance(v, int) and not isinstance(v, bool):
                if not 0 <= v < len(orig_cols):
                    raise ParameterError(f"{where}: variable position {v} is outside 0..{len(orig_cols) - 1}")
                names.append(orig_cols[v])
            else:
                names.append(str(v))
        names = list(dict.fromkeys(names))
        for label, cols in (("original", orig_cols), ("synthetic", syn_cols)):
            missing = [n for n in names if n not in cols]
            if missing:
                raise ParameterError(f"{where}: vars {missing} not found in the {label} data")
    for i, s in enumerate(inputs.synthetic[1:], start=2):
        missing = [n for n in names if n not in s.columns]
        if missing:
            raise ParameterError(f"{where}: vars {missing} not found in synthetic set {i}")
    inputs.schema.require(names, "variable", where)
    if not names:
        raise ParameterError(f"{where}: no variables to compare")
    return names
