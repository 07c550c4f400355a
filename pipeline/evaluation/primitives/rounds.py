"""Primitives of iterative fits: partition handles, one map-combine per round, data kept for every
round, and folds of query partitions over reference partitions."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import dask
import numpy as np
import pandas as pd

from pipeline.evaluation._dask_compat import stored_parts
from pipeline.evaluation.data import Frame
from pipeline.evaluation.primitives.deferred import Deferred


class Rounds:
    """The executor's primitives of iterative fits (mixed into :class:`~pipeline.evaluation.execution.Executor`)."""

    def partitions(self, frame: Frame) -> list[Any]:
        """The partitions of a (persisted) frame as handles for :meth:`map_combine` rounds."""
        if isinstance(frame, pd.DataFrame):
            return [frame]
        stored, columns = stored_parts(frame)
        if columns is None:
            return stored
        return [dask.delayed(_select_columns, pure=False)(p, columns) for p in stored]

    def map_combine(
        self,
        parts: Sequence[Any],
        kernel: Callable[..., Any],
        combine: Callable[[Sequence[Any]], Any],
        per_part: Sequence[tuple] | None = None,
        *args: Any,
    ) -> Deferred:
        """One round of an iterative fit: ``combine([kernel(p, *per_part[i], *args)])`` over handles.

        ``per_part`` gives extra positional arguments per partition (e.g. a label draw).
        """
        extra = per_part or [()] * len(parts)
        if all(isinstance(p, pd.DataFrame) for p in parts):
            return Deferred(combine([kernel(p, *e, *args) for p, e in zip(parts, extra, strict=True)]))
        tasks = [dask.delayed(kernel)(p, *e, *args) for p, e in zip(parts, extra, strict=True)]
        return Deferred(dask.delayed(combine)(tasks))

    def map_partitions(
        self, parts: Sequence[Any], kernel: Callable[..., Any], per_part: Sequence[tuple] | None = None, *args: Any
    ) -> list[Any]:
        """``[kernel(p, *per_part[i], *args)]`` over partition handles, kept where the data are.

        For data that every round of an iterative fit reads (e.g. records encoded and merged
        once): on the cluster the results are persisted and returned as new handles for
        :meth:`map_combine`; pandas partitions are transformed at once.
        """
        extra = per_part or [()] * len(parts)
        if all(isinstance(p, pd.DataFrame) for p in parts):
            return [kernel(p, *e, *args) for p, e in zip(parts, extra, strict=True)]
        return self.persist(*[dask.delayed(kernel)(p, *e, *args) for p, e in zip(parts, extra, strict=True)])

    def map_fold(
        self,
        queries: Frame,
        references: Frame,
        prepare: Callable[..., Any],
        step: Callable[..., Any],
        finish: Callable[[Any], Any],
        *args: Any,
        reference_rows: int | None = None,
    ) -> Deferred:
        """For every partition of ``queries``, a fold over the partitions of ``references``.

        Each reference partition is prepared once, ``prepare(partition, offset, *args)`` (offset:
        the position of its first record in ``references``, so kernels can name records
        globally); each query partition folds ``state = step(state, query_partition, prepared,
        *args)`` from ``state = None`` over the prepared reference partitions in order, then
        ``finish(state)``.  The deferred value is the list of finished states in query-partition
        order: query partitions run in parallel, each carrying its running state (e.g. the best
        neighbours so far) from one reference partition to the next.

        ``reference_rows``: consecutive reference partitions are first joined into blocks of up
        to that many records (a partition is never split), so each query meets fewer, larger
        prepared blocks: the steps grow with (query partitions × reference blocks).
        """
        sizes = self.partition_rows(references)[0]
        groups = _consecutive_groups(sizes, reference_rows)
        offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        q_parts, r_parts = self.partitions(queries), self.partitions(references)
        if all(isinstance(p, pd.DataFrame) for p in (*q_parts, *r_parts)):
            blocks = [_joined([r_parts[i] for i in g]) for g in groups]
            prepared = [prepare(b, int(offsets[g[0]]), *args) for b, g in zip(blocks, groups, strict=True)]
            out = []
            for q in q_parts:
                state = None
                for r in prepared:
                    state = step(state, q, r, *args)
                out.append(finish(state))
            return Deferred(out)
        lazy_prepare, lazy_step = dask.delayed(prepare), dask.delayed(step)
        blocks = [r_parts[g[0]] if len(g) == 1 else dask.delayed(_joined)([r_parts[i] for i in g]) for g in groups]
        prepared = [lazy_prepare(b, int(offsets[g[0]]), *args) for b, g in zip(blocks, groups, strict=True)]
        finished = []
        for q in q_parts:
            state = None
            for r in prepared:
                state = lazy_step(state, q, r, *args)
            finished.append(dask.delayed(finish)(state))
        return Deferred(dask.delayed(list)(finished))


def _select_columns(part: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """``part[columns]`` (a stored partition's selected columns, as the projection gives them)."""
    return part[columns]


def _consecutive_groups(sizes: Sequence[int], limit: int | None) -> list[list[int]]:
    """Partition indices joined in order into groups of at most ``limit`` records (a partition
    larger than the limit stays alone; no limit: one group per partition)."""
    if limit is None:
        return [[i] for i in range(len(sizes))]
    groups: list[list[int]] = []
    total = 0
    for i, n in enumerate(sizes):
        if groups and total + n <= limit:
            groups[-1].append(i)
            total += n
        else:
            groups.append([i])
            total = n
    return groups


def _joined(parts: Sequence[pd.DataFrame]) -> pd.DataFrame:
    return parts[0] if len(parts) == 1 else pd.concat(parts, ignore_index=True)
