"""The package's one access to Dask internals (private dask-expr modules, futures, the concat dispatch).

Persisted data are read by the executor's primitives through their stored partitions (one task
per partition, with the column selection in it) rather than through the collection's graph,
which needs the expression classes of dask-expr (``Projection``, ``FromGraph``) — a private API
that changes between Dask releases.  Every use of it is here, so a Dask upgrade touches this
module only.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import dask.dataframe as dd
import pandas as pd
from dask.dataframe.dask_expr._collection import new_collection
from dask.dataframe.dask_expr._expr import Projection
from dask.dataframe.dask_expr.io.io import FromGraph
from dask.dataframe.dispatch import concat as dask_concat
from dask.delayed import Delayed

from pipeline.evaluation.data import Frame


def stored_parts(frame: dd.DataFrame) -> tuple[list[Any], list[str] | None]:
    """Handles of the partitions a frame reads, and the columns it selects from them.

    For persisted data (or a selection of their columns) the handles are the stored
    partitions themselves (futures on a cluster), so a task reading one has no alias or
    selection task before it; the columns are None when the frame has all columns.  Any other
    frame: its own partitions (:meth:`dask.dataframe.DataFrame.to_delayed`) and None.
    """
    expr, projected = frame.expr, False
    while isinstance(expr, Projection):
        expr, projected = expr.frame, True
    if not isinstance(expr, FromGraph) or not isinstance(frame, dd.DataFrame):
        return list(frame.to_delayed()), None
    layer = expr.operand("layer")
    parts = [Delayed(key, {key: layer[key]}) for key in expr.operand("keys")]
    columns = list(frame.columns)
    return parts, (columns if projected and columns != list(expr._meta.columns) else None)


def stored_keys(frame: dd.DataFrame) -> tuple[str, ...]:
    """Keys of the stored partitions a persisted frame (or a selection of its columns) reads; empty otherwise."""
    expr = frame.expr
    while isinstance(expr, Projection):
        expr = expr.frame
    return tuple(str(k) for k in expr.operand("keys")) if isinstance(expr, FromGraph) else ()


def is_persisted(frame: Any) -> bool:
    """Whether a Dask frame reads partitions held on the cluster only (futures of persisted data,
    or a selection of their columns)."""
    if not isinstance(frame, dd.DataFrame) or not stored_keys(frame):
        return False
    return all(is_future(next(iter(p.dask.values()))) for p in stored_parts(frame)[0])


def stored_frame(frame: dd.DataFrame) -> dd.DataFrame:
    """The persisted frame, all columns, that ``frame`` selects from."""
    expr = frame.expr
    while isinstance(expr, Projection):
        expr = expr.frame
    return new_collection(expr)


def is_future(value: Any) -> bool:
    """Whether ``value`` is a distributed future (a partial kept on the cluster)."""
    if "distributed" not in sys.modules:  # no future without it: spare loading it
        return False
    try:
        from distributed import Future
    except ImportError:
        return False
    return isinstance(value, Future)


def counted_as(frame: dd.DataFrame) -> str:
    """Name of the collection whose partition lengths ``frame`` has (selecting columns keeps them)."""
    expr = frame.expr
    while isinstance(expr, Projection):
        expr = expr.frame
    return expr._name


def concat_frames(parts: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """Consecutive partitions as one (records in order, index kept; categoricals unioned as Dask does)."""
    return parts[0] if len(parts) == 1 else dask_concat(list(parts))


def as_dask(frame: Frame) -> dd.DataFrame:
    return dd.from_pandas(frame, npartitions=1, sort=False) if isinstance(frame, pd.DataFrame) else frame
