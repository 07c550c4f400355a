"""Map-reduce primitives: a kernel per partition and an exact combine, partials kept on the workers
and merged per bucket (a shuffle of partial results, never of records)."""

from __future__ import annotations

import operator
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import dask
import dask.dataframe as dd
import pandas as pd

from pipeline.evaluation._dask_compat import is_future, stored_keys, stored_parts
from pipeline.evaluation.data import Frame
from pipeline.evaluation.primitives.deferred import Deferred

#: at most this many stored partitions (of about ``block_rows`` records each) go to one task of
#: :meth:`Partials.map_reduce_partials` with ``per_worker``: bounds the kernel's memory
PER_WORKER_PARTITIONS = 4


class Partials:
    """The executor's map-reduce primitives (mixed into :class:`~pipeline.evaluation.execution.Executor`)."""

    def map_reduce(
        self,
        frame: Frame,
        kernel: Callable[..., Any],
        combine: Callable[[Sequence[Any]], Any],
        *args: Any,
        split_every: int = 8,
        **kwargs: Any,
    ) -> Deferred:
        """``combine([kernel(partition, *args, **kwargs) for every partition])``, deferred.

        A pandas frame is one partition and is computed at once.  ``combine`` must be exact
        (integer sums, or float sums in partition order) so the result does not depend on the
        partitioning.  On persisted data (or a selection of its columns) each partition is one
        task that reads the stored partition, selects the columns and runs the kernel.
        """
        if isinstance(frame, pd.DataFrame):
            return Deferred(combine([kernel(frame, *args, **kwargs)]))
        return Deferred(_combine_tree(_partition_tasks(frame, kernel, args, kwargs), combine, split_every))

    def map_reduce_partials(
        self,
        frames: Sequence[Frame],
        kernel: Callable[..., Any],
        combine: Callable[[Sequence[Any]], Any],
        *args: Any,
        summary: Callable[[Any], Any] | None = None,
        split_every: int = 8,
        per_worker: bool = False,
        along: Sequence[Any] = (),
    ) -> tuple[list[list[Any]], list[Any]]:
        """:meth:`map_reduce` of every frame that also keeps the per-partition results (the partials).

        One computation (one pass over the records) gives, per frame, ``kernel(partition,
        *args)`` of every partition, kept where it was computed — on the cluster as handles
        (futures) for :meth:`merge_buckets`, in memory as the values — and the combination
        (exact, as in :meth:`map_reduce`) of their ``summary`` (default: the partials
        themselves), brought to the driver.  On the cluster each summary is taken on the worker
        that holds its partial, so only the summaries move to the combining tasks (a partial
        that holds records or counts stays where it is).  Dropping the handles releases the
        partials.

        With ``per_worker`` (for a kernel whose partials are smaller the more records it sees
        at once, e.g. counts of combinations) the kernel takes a list of partitions: on the
        cluster the stored partitions of a persisted frame that are on the same worker, in
        order (one task on that worker: one partial per worker and frame, as a database's
        per-thread pre-aggregation; at most :data:`PER_WORKER_PARTITIONS` partitions a task),
        else one partition (a pandas frame: itself).  Which
        partitions go together depends on where they are, so the partials must combine
        exactly in any grouping.

        ``along``: other lazy values (e.g. a measure's checks of the same data) computed in the
        same pass; their values follow the combinations in the returned list.
        """
        tasks = [
            [kernel([f] if per_worker else f, *args)]
            if isinstance(f, pd.DataFrame)
            else self._partials_tasks(f, kernel, args, per_worker)
            for f in frames
        ]
        roots = []
        for t in tasks:
            if not dask.is_dask_collection(t[0]):
                roots.append(combine([summary(p) for p in t] if summary is not None else t))
                continue
            small = [dask.delayed(summary, pure=True)(p) for p in t] if summary is not None else t
            roots.append(_combine_tree(small, combine, split_every))
        roots.extend(v.value if isinstance(v, Deferred) else v for v in along)
        lazy = [t for ts in tasks for t in ts if dask.is_dask_collection(t)]
        lazy_roots = [r for r in roots if dask.is_dask_collection(r)]
        if not lazy:
            return tasks, [*roots[: len(frames)], *self.compute(*roots[len(frames) :])]
        if self.client is None:  # the local scheduler: the partials are values in this process
            kept, combined = dask.compute(lazy, lazy_roots)
        else:  # one graph: each partial is computed once, kept as a future and combined
            futures = self.client.compute([*lazy, *lazy_roots])
            kept, combined = futures[: len(lazy)], self.client.gather(futures[len(lazy) :])
        kept_iter, combined_iter = iter(kept), iter(combined)
        partials = [[next(kept_iter) if dask.is_dask_collection(t) else t for t in ts] for ts in tasks]
        return partials, [next(combined_iter) if dask.is_dask_collection(r) else r for r in roots]

    def _partials_tasks(
        self, frame: dd.DataFrame, kernel: Callable[..., Any], args: tuple, per_worker: bool
    ) -> list[Any]:
        """The tasks of :meth:`map_reduce_partials` for one Dask frame: one per partition, or with
        ``per_worker`` one per worker holding stored partitions of it (see there)."""
        if not per_worker:
            return _partition_tasks(frame, kernel, args, {})
        stored, columns = stored_parts(frame)
        # the futures of a persisted frame's partitions, and which workers hold them
        held = [next(iter(p.dask.values())) for p in stored] if stored_keys(frame) and self.client is not None else []
        futures = bool(held) and all(map(is_future, held))
        where = self.client.who_has(held) if futures else {}
        groups: dict[Any, list[list[Any]]] = {}
        for i, p in enumerate(stored):  # in partition order
            holder = _holder(where, held[i].key) if futures else None
            runs = groups.setdefault(i if holder is None else holder, [[]])
            if len(runs[-1]) == PER_WORKER_PARTITIONS:
                runs.append([])
            runs[-1].append(p)
        name = getattr(kernel, "__name__", "kernel")
        task = dask.delayed(_on_group, pure=False)
        return [
            task(g, columns, kernel, args, dask_key_name=f"{name}-{uuid.uuid4().hex}")
            for runs in groups.values()
            for g in runs
        ]

    def gather(self, partials: Sequence[Sequence[Any]]) -> list[list[Any]]:
        """Partials kept by :meth:`map_reduce_partials` brought to the driver (values pass through)."""
        handles = [p for ps in partials for p in ps if is_future(p)]
        if not handles:
            return [list(ps) for ps in partials]
        got = iter(self.client.gather(handles))
        return [[next(got) if is_future(p) else p for p in ps] for ps in partials]

    def merge_buckets(
        self,
        partials: Sequence[Sequence[Any]],
        split: Callable[..., Sequence[Any]],
        n_buckets: int,
        merge: Callable[..., Any],
    ) -> list[Any]:
        """Partials split by bucket and merged per bucket: a shuffle of partial results, not of records.

        ``split(partial)`` cuts one partial (e.g. counts of one partition) into
        ``n_buckets`` pieces (e.g. by a hash of the keys); bucket ``b`` is then
        ``merge(pieces_0, pieces_1, ...)``, ``pieces_i`` the ``b``-th pieces of the partials of
        data set ``i`` in partition order.  Returns the merged value of every bucket, in bucket
        order (computed; on the cluster one task per partial and one per bucket, in parallel).
        """
        if not any(dask.is_dask_collection(p) or is_future(p) for ps in partials for p in ps):
            pieces = [[split(p) for p in ps] for ps in partials]
            return [merge(*[[piece[b] for piece in ps] for ps in pieces]) for b in range(n_buckets)]
        if self.client is not None and all(is_future(p) for ps in partials for p in ps):
            return self._merge_kept_buckets(partials, split, n_buckets, merge)
        cut = dask.delayed(split, nout=n_buckets, pure=False)
        pieces = [[cut(p) for p in ps] for ps in partials]
        together = dask.delayed(merge, pure=False)
        return self.compute(*[together(*[[piece[b] for piece in ps] for ps in pieces]) for b in range(n_buckets)])

    def map_aligned(self, partials: Sequence[Sequence[Any]], merge: Callable[..., Any]) -> list[Any]:
        """``merge(partials[0][b], partials[1][b], ...)`` for every partition ``b``, in order.

        For partials of data sets laid out in aligned key blocks
        (:meth:`~pipeline.evaluation.execution.Executor.laid_out`: partition ``b`` of every data
        set holds the same key cells): each block's partials are merged on the worker that holds
        the first of them (the layout keeps a block's partitions together), so only the merged
        results move.  Values (in memory) are merged here.
        """
        blocks = list(zip(*partials, strict=True))
        if self.client is None or not any(is_future(p) for block in blocks for p in block):
            return self.compute(*[dask.delayed(merge, pure=False)(*block) for block in blocks])
        where = self.client.who_has([p for block in blocks for p in block if is_future(p)])
        merged = []
        for block in blocks:
            holder = _holder(where, block[0].key) if is_future(block[0]) else None
            here = {} if holder is None else dict(workers=[holder], allow_other_workers=True)
            merged.append(self.client.submit(merge, *block, pure=False, **here))
        return self.client.gather(merged)

    def _merge_kept_buckets(
        self,
        partials: Sequence[Sequence[Any]],
        split: Callable[..., Sequence[Any]],
        n_buckets: int,
        merge: Callable[..., Any],
    ) -> list[Any]:
        """:meth:`merge_buckets` of partials kept on the workers: each is cut, and its pieces
        taken out of the cut, on the worker that holds it, so only the pieces move to the
        merges (a piece taken elsewhere would move the whole cut partial there first)."""
        client = self.client
        where = client.who_has([p for ps in partials for p in ps])
        pieces = []
        for ps in partials:
            per_set = []
            for p in ps:
                holder = _holder(where, p.key)
                here = {} if holder is None else dict(workers=[holder], allow_other_workers=True)
                cut = client.submit(split, p, pure=False, **here)
                per_set.append([client.submit(operator.getitem, cut, b, pure=False, **here) for b in range(n_buckets)])
            pieces.append(per_set)
        merged = [
            client.submit(merge, *[[piece[b] for piece in ps] for ps in pieces], pure=False) for b in range(n_buckets)
        ]
        return client.gather(merged)


def _partition_tasks(frame: dd.DataFrame, kernel: Callable[..., Any], args: tuple, kwargs: dict[str, Any]) -> list[Any]:
    """``kernel(partition, *args, **kwargs)`` of every partition of a Dask frame, as delayed tasks.

    On persisted data (or a selection of its columns) each is one task that reads the stored
    partition, selects the columns and runs the kernel.
    """
    stored, columns = stored_parts(frame)
    if columns is None:
        return [dask.delayed(kernel)(p, *args, **kwargs) for p in stored]
    # one task per partition: the selection runs inside the kernel's task, named after the kernel
    name = getattr(kernel, "__name__", "kernel")
    task = dask.delayed(_on_columns, pure=False)
    return [task(p, columns, kernel, args, kwargs, dask_key_name=f"{name}-{uuid.uuid4().hex}") for p in stored]


def _combine_tree(parts: list[Any], combine: Callable[[Sequence[Any]], Any], split_every: int) -> Any:
    """``combine`` of delayed ``parts`` as a tree of at most ``split_every`` per node (in order)."""
    while len(parts) > 1:
        parts = [dask.delayed(combine)(parts[i : i + split_every]) for i in range(0, len(parts), split_every)]
    return parts[0] if parts else combine([])


def _on_columns(
    part: pd.DataFrame, columns: list[str], kernel: Callable[..., Any], args: tuple, kwargs: dict[str, Any]
) -> Any:
    """``kernel(part[columns], *args, **kwargs)``: a map-reduce's selection and kernel in one task."""
    return kernel(part[columns], *args, **kwargs)


def _holder(where: Mapping[Any, Any], key: Any) -> str | None:
    """The worker a stored result is counted as being on (``Client.who_has``; with several
    copies the first by address, so the choice does not depend on the order they were made)."""
    holders = where.get(key)
    return min(holders) if holders else None


def _on_group(parts: list[pd.DataFrame], columns: list[str] | None, kernel: Callable[..., Any], args: tuple) -> Any:
    """``kernel`` of a list of stored partitions (their ``columns``)."""
    return kernel([p if columns is None else p[columns] for p in parts], *args)
