"""The one executor of every measure: where and how the work runs.

An :class:`Executor` is created by the runner with its Dask client (or by the synthpop-named
functions with the current client, if any).  It alone decides

* **in memory or on key blocks** — one threshold for every family
  (:data:`IN_MEMORY_ROWS` records in the largest data set): small data run their kernels on
  pandas frames directly (Dask adds about a second per operation on two cores), large data run
  them per partition or per key block;
* block sizing and the shuffle method;
* **partition size** — small partitions of the same data set are merged (consecutive ones, up
  to about :attr:`Executor.block_rows` records) when the data are put in cluster memory
  (:meth:`Executor.persist`, :meth:`Executor.prepare`): every pass then runs one task per
  ~block of records instead of one per input file, which decides the cost of the Dask path
  (per-task overhead, not the kernels, dominated with 250,000-record partitions).  Which
  partitions merge depends only on their record counts and ``block_rows`` — never on the
  workers — and merging keeps the records in order;

and offers the primitives measures compose their pure pandas/numpy kernels with:
:meth:`Executor.map_reduce` (a kernel per partition, an exact combine),
:meth:`Executor.map_reduce_partials` + :meth:`Executor.merge_buckets` (partial aggregation in
one pass: per-partition results kept on the workers, split by a key hash and merged per
bucket — a shuffle of partial results, never of records),
:meth:`Executor.key_blocks` / :meth:`Blocks.map` (aligned key blocks of the original and the
synthetic sets; :meth:`Executor.derived_key_blocks`: of frames derived per partition, such
as counts), :meth:`Executor.keep_rows` (records selected by position),
:meth:`Executor.partitions` + :meth:`Executor.compute` (rounds of an iterative fit such as
IRLS: each round one map-combine over persisted partitions),
:meth:`Executor.map_tasks` (independent fits as tasks) and :meth:`Executor.memory`.

Measure modules never import Dask and never ask which kind of frame they hold.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import operator
import sys
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import psutil
from dask.dataframe.dask_expr._collection import new_collection
from dask.dataframe.dask_expr._expr import Projection
from dask.dataframe.dask_expr.io.io import FromGraph
from dask.dataframe.dispatch import concat as dask_concat
from dask.delayed import Delayed

from pipeline.blocks import (
    BLOCK_COLUMN,
    ROW_COLUMN,
    AlignedBlocks,
    KeyBlocks,
    balanced_blocks,
    key_loads,
    keyed_partition,
    split_by_block,
    sum_key_loads,
)
from pipeline.errors import ParameterError
from pipeline.evaluation.data import EvalData, Frame
from pipeline.evaluation.policy import BLOCK_ROWS, IN_MEMORY_ROWS, Policy

#: at most this many stored partitions (of about ``block_rows`` records each) go to one task of
#: :meth:`Executor.map_reduce_partials` with ``per_worker``: bounds the kernel's memory
PER_WORKER_PARTITIONS = 4


@dataclass(frozen=True)
class Deferred:
    """A value the executor computes later (so that several are computed in one pass)."""

    value: Any


class Executor:
    """Runs measure kernels in memory or over Dask partitions and key blocks.

    Parameters
    ----------
    client : distributed.Client, optional
        The cluster to use; None runs Dask work on the current client if one is active, else
        on Dask's local threaded scheduler.
    policy : {"auto", "memory", "blocks"}
        ``auto``: in memory when the largest data set has at most ``in_memory_rows`` records,
        else on partitions/key blocks.  ``memory`` / ``blocks`` force one path (tests,
        benchmarks, and users who know their data).
    in_memory_rows : int
    block_rows : int
        Target records per key block and per merged partition (:meth:`coalesce`).
    shuffle : {"tasks", "p2p"}
        Dask's shuffle method for key blocks.
    """

    def __init__(
        self,
        client: Any = None,
        *,
        policy: Policy = "auto",
        in_memory_rows: int = IN_MEMORY_ROWS,
        block_rows: int = BLOCK_ROWS,
        shuffle: Literal["tasks", "p2p"] = "tasks",
    ) -> None:
        if policy not in ("auto", "memory", "blocks"):
            raise ParameterError(f"executor policy must be 'auto', 'memory' or 'blocks', got {policy!r}")
        self.client = client
        self.policy = policy
        self.in_memory_rows = int(in_memory_rows)
        self.block_rows = int(block_rows)
        self.shuffle = shuffle
        # records per partition of the Dask frames counted so far, by collection name (a name
        # identifies a graph, hence its data)
        self._lengths: dict[str, tuple[int, ...]] = {}
        # persisted data sets brought to the driver (index 0..n-1), by their stored partitions:
        # every unit evaluated in memory on the same inputs selects its columns from one transfer
        self._collected: dict[tuple[str, ...], pd.DataFrame] = {}
        self._collecting = threading.Lock()

    @classmethod
    def current(cls, **kw: Any) -> Executor:
        """An executor on the active Dask client, if any (the package's only ``get_client``)."""
        if "distributed" not in sys.modules:  # no client can be active: spare loading distributed
            return cls(None, **kw)
        try:
            from distributed import get_client

            return cls(get_client(), **kw)
        except (ImportError, ValueError):
            return cls(None, **kw)

    # ---- policy -----------------------------------------------------------------------------
    def rows(self, data: EvalData) -> tuple[int, ...]:
        """Number of records of every data set (one pass over persisted or in-memory frames)."""
        return tuple(sum(n) for n in self.partition_rows(*data.frames))

    def partition_rows(self, *frames: Frame) -> list[tuple[int, ...]]:
        """Records in every partition of each frame (a pandas frame is one partition).

        One pass over the Dask frames not counted before; counts are remembered by collection
        name (a selection of columns shares them with its frame), so asking again (e.g.
        :meth:`rows` and then :meth:`prepare`, or a measure's columns of persisted inputs)
        costs nothing.
        """
        todo = {_counted_as(f): f for f in frames if isinstance(f, dd.DataFrame)}
        todo = {name: f for name, f in todo.items() if name not in self._lengths}
        lazy = [dask.delayed(tuple)([dask.delayed(len)(p) for p in f.to_delayed()]) for f in todo.values()]
        for name, counts in zip(todo, self.compute(*lazy), strict=True):
            self._lengths[name] = tuple(int(n) for n in counts)
        return [(len(f),) if isinstance(f, pd.DataFrame) else self._lengths[_counted_as(f)] for f in frames]

    def in_memory(self, data: EvalData) -> bool:
        """Whether ``data`` is evaluated in memory (the one place that decides)."""
        if self.policy != "auto":
            return self.policy == "memory"
        if all(isinstance(f, pd.DataFrame) for f in data.frames):
            return max(len(f) for f in data.frames) <= self.in_memory_rows or self.client is None
        return max(self.rows(data)) <= self.in_memory_rows

    def prepare(self, data: EvalData) -> EvalData:
        """``data`` in the form the policy chose: pandas frames, or Dask frames.

        Dask frames with small partitions are merged (:meth:`coalesce`) and those merged are
        kept in cluster memory (every later pass then reads the merged partitions; merging
        lazily would repeat the transfer and concatenation in every pass).  Frames that
        :meth:`persist` already merged pass unchanged.
        """
        if self.in_memory(data):
            return self.collect(data)
        frames = [_as_dask(f) for f in data.frames]
        merged = self.coalesce(*frames)
        return data.with_frames(self._wait(self._persist_merged(frames, merged)))

    def collect(self, data: EvalData) -> EvalData:
        """``data`` as pandas frames (one transfer from the cluster), index 0..n-1.

        A persisted data set (a run's inputs, or a selection of their columns) is transferred
        whole the first time and kept by the executor: later collections of the same data —
        the checks and evaluations of every unit on the same inputs — take their columns from
        it instead of transferring (and the cluster serialising) the records again.
        """
        lazy = [f for f in data.frames if isinstance(f, dd.DataFrame)]
        got = iter(self._collect_frames(lazy))
        frames = [next(got) if isinstance(f, dd.DataFrame) else f.reset_index(drop=True) for f in data.frames]
        return data.with_frames(frames)

    def _collect_frames(self, frames: Sequence[dd.DataFrame]) -> list[pd.DataFrame]:
        """Dask frames as pandas frames (index 0..n-1); persisted ones gathered once and kept."""
        stored = [_stored_keys(f) for f in frames]
        with self._collecting:  # units collecting at the same time share one transfer
            todo = {k: _stored_frame(f) for f, k in zip(frames, stored, strict=True) if k and k not in self._collected}
            others = [f for f, k in zip(frames, stored, strict=True) if not k]
            got = iter(self.compute(*todo.values(), *others))
            for k in todo:
                self._collected[k] = next(got).reset_index(drop=True)
            kept = dict(self._collected)
        return [
            kept[k][list(f.columns)] if k else next(got).reset_index(drop=True)
            for f, k in zip(frames, stored, strict=True)
        ]

    @staticmethod
    def is_lazy(data: EvalData) -> bool:
        """Whether ``data`` (after :meth:`prepare`) is on the cluster."""
        return any(isinstance(f, dd.DataFrame) for f in data.frames)

    # ---- primitives -------------------------------------------------------------------------
    def compute(self, *values: Any) -> list[Any]:
        """Compute lazy values (Dask collections, delayed, :class:`Deferred`) together."""
        unwrapped = [v.value if isinstance(v, Deferred) else v for v in values]
        if not any(dask.is_dask_collection(v) for v in unwrapped):
            return unwrapped
        if self.client is None:
            return list(dask.compute(*unwrapped))
        # a Dask frame is fetched as its partitions and joined here: computing the frame itself
        # first gathers every partition on one worker, a second transfer of the whole result
        frames = [isinstance(v, (dd.DataFrame, dd.Series)) for v in unwrapped]
        parts = [v.to_delayed() if is_frame else [v] for v, is_frame in zip(unwrapped, frames, strict=True)]
        flat = [p for ps in parts for p in ps]
        got = iter(self._fetch_as_done(flat) if any(frames) else self.client.compute(flat, sync=True))
        values = [[next(got) for _ in ps] for ps in parts]
        return [_concat_frames(v) if is_frame else v[0] for v, is_frame in zip(values, frames, strict=True)]

    def _fetch_as_done(self, lazy: Sequence[Any]) -> list[Any]:
        """Values of ``lazy`` computed on the cluster, each brought here as soon as it is done
        (a gather of all waits for the last one, then moves every result at once: the
        partitions of a result frame would all cross after the last kernel)."""
        from distributed import as_completed

        futures = self.client.compute(list(lazy))
        where: dict[Any, list[int]] = {}
        for i, f in enumerate(futures):  # the same value asked twice is one key
            where.setdefault(f.key, []).append(i)
        unique = list({f.key: f for f in futures}.values())
        out: list[Any] = [None] * len(futures)
        with self.client.as_current():  # as_completed uses the current client, not necessarily this one
            for future, value in as_completed(unique, with_results=True):
                for i in where[future.key]:
                    out[i] = value
        return out

    def persist(self, *frames: Frame, merge: bool = True) -> list[Frame]:
        """Keep Dask frames in cluster memory (pandas frames pass through), returned once there.

        With ``merge`` (data sets, e.g. a run's inputs), small partitions are merged after the
        first persist (:meth:`coalesce`), so every measure reads the merged partitions; each
        unmerged partition is released as soon as its merged one exists (unless the caller
        holds it).  Frames whose partitions must stay as they are (aligned key blocks) are
        persisted with ``merge=False``.
        """
        kept = self._wait(self._persist(frames))
        if not merge:
            return kept
        submitted = self._persist_merged(kept, self.coalesce(*kept))
        del kept  # from here only the merge tasks hold the unmerged partitions
        return self._wait(submitted)

    def coalesce(self, *frames: Frame) -> list[Frame]:
        """Frames with consecutive small partitions merged to about :attr:`block_rows` records (lazy).

        A Dask frame of ``P`` partitions and ``n`` records gets ``G = ceil(n / block_rows)``
        partitions when ``G < P``: partition ``i`` joins group ``floor(G * c_i / n)``, ``c_i``
        the position of its middle record, so the groups are consecutive, keep the records in
        order and hold about ``n / G`` records each (at most one input partition more).  The
        grouping depends only on the partitions' record counts (:meth:`partition_rows`) and
        ``block_rows`` — not on the workers — so the same data and executor always give the
        same partitions.  Frames that would not change, pandas frames and other values are
        returned as they are.
        """
        lazy = [f for f in frames if isinstance(f, dd.DataFrame)]
        lengths = dict(zip((_counted_as(f) for f in lazy), self.partition_rows(*lazy), strict=True))
        out = []
        for f in frames:
            counts = lengths[_counted_as(f)] if isinstance(f, dd.DataFrame) else ()
            groups = _merge_groups(counts, self.block_rows) if counts else None
            if groups is None:
                out.append(f)
                continue
            parts = f.to_delayed()
            merged = [dask.delayed(_concat_frames)(parts[g.start : g.stop]) for g in groups]
            divisions = None
            if f.known_divisions:
                divisions = (*(f.divisions[g.start] for g in groups), f.divisions[-1])
            frame = dd.from_delayed(merged, meta=f._meta, divisions=divisions, verify_meta=False)
            self._lengths[_counted_as(frame)] = tuple(sum(counts[g.start : g.stop]) for g in groups)
            out.append(frame)
        return out

    def _persist_merged(self, before: Sequence[Frame], after: Sequence[Frame]) -> list[Frame]:
        """``after``, its frames that differ from ``before`` (merged by :meth:`coalesce`) submitted to persist."""
        changed = [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a is not b]
        out = list(after)
        for i, kept in zip(changed, self._persist([after[i] for i in changed]), strict=True):
            self._lengths[_counted_as(kept)] = self._lengths[_counted_as(after[i])]
            out[i] = kept
        return out

    def _persist(self, frames: Sequence[Any]) -> list[Any]:
        """Dask collections submitted for persisting (see :meth:`_wait`); other values pass through.

        A frame that reads persisted partitions only (persisted data or a selection of their
        columns) passes through too: persisting it again would copy the records on the workers
        and give a new collection whose partitions are counted again, a round trip each.
        """
        lazy = [f for f in frames if dask.is_dask_collection(f) and not _is_persisted(f)]
        if not lazy:
            return list(frames)
        done = iter(self.client.persist(lazy) if self.client is not None else dask.persist(*lazy))
        return [next(done) if dask.is_dask_collection(f) and not _is_persisted(f) else f for f in frames]

    def _wait(self, values: list[Any]) -> list[Any]:
        """``values`` once the persisted Dask collections among them are on the cluster."""
        lazy = [v for v in values if dask.is_dask_collection(v)]
        if self.client is not None and lazy:
            from distributed import wait

            with self.client.as_current():  # wait() uses the current client, not necessarily this one
                wait(lazy)
        return values

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
        stored, columns = _stored_parts(frame)
        # the futures of a persisted frame's partitions, and which workers hold them
        held = [next(iter(p.dask.values())) for p in stored] if _stored_keys(frame) and self.client is not None else []
        futures = bool(held) and all(map(_is_future, held))
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
        handles = [p for ps in partials for p in ps if _is_future(p)]
        if not handles:
            return [list(ps) for ps in partials]
        got = iter(self.client.gather(handles))
        return [[next(got) if _is_future(p) else p for p in ps] for ps in partials]

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
        if not any(dask.is_dask_collection(p) or _is_future(p) for ps in partials for p in ps):
            pieces = [[split(p) for p in ps] for ps in partials]
            return [merge(*[[piece[b] for piece in ps] for ps in pieces]) for b in range(n_buckets)]
        if self.client is not None and all(_is_future(p) for ps in partials for p in ps):
            return self._merge_kept_buckets(partials, split, n_buckets, merge)
        cut = dask.delayed(split, nout=n_buckets, pure=False)
        pieces = [[cut(p) for p in ps] for ps in partials]
        together = dask.delayed(merge, pure=False)
        return self.compute(*[together(*[[piece[b] for piece in ps] for ps in pieces]) for b in range(n_buckets)])

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

    def partitions(self, frame: Frame) -> list[Any]:
        """The partitions of a (persisted) frame as handles for :meth:`map_combine` rounds."""
        if isinstance(frame, pd.DataFrame):
            return [frame]
        stored, columns = _stored_parts(frame)
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

    def map_tasks(self, fn: Callable[..., Any], jobs: Sequence[tuple], shared: Sequence[Any] = ()) -> list[Any]:
        """``[fn(*shared, *job) for job in jobs]``, as parallel tasks when a cluster is there.

        ``shared`` objects (e.g. the prepared data) are sent to the cluster once, not per job.
        """
        if self.client is None or len(jobs) < 2:
            return [fn(*shared, *job) for job in jobs]
        handles = [self._sent(s) for s in shared]
        return self.compute(*[dask.delayed(fn)(*handles, *job) for job in jobs])

    def _sent(self, value: Any) -> Any:
        """``value`` on the cluster (scattered: a graph embedding a data set is slow to send and
        makes Dask warn about its size), else as a delayed value."""
        if self.client is None:
            return dask.delayed(value, traverse=False)
        return self.client.scatter([value], hash=False)[0]

    def map_frame_tasks(
        self, fn: Callable[..., Any], jobs: Sequence[tuple], frames: Sequence[Frame], shared: Sequence[Any] = ()
    ) -> list[Any]:
        """``[fn(*shared, [frames[i] for i in job[0]], *job[1:]) for job in jobs]`` as parallel tasks.

        Each job names the data sets it reads (``job[0]``, indices into ``frames``).  Dask
        frames are assembled into one pandas frame per data set **on a worker** (once, shared
        by every job that reads it), so independent fits over many data sets or pairs of them
        never gather records on the client; pandas frames are sent to the cluster once.
        """
        if self.client is None and not any(dask.is_dask_collection(f) for f in frames):
            return [fn(*shared, [frames[i] for i in job[0]], *job[1:]) for job in jobs]
        whole = [
            dask.delayed(_concat_parts)(*_stored_parts(f)) if dask.is_dask_collection(f) else self._sent(f)
            for f in frames
        ]
        handles = [self._sent(s) for s in shared]
        return self.compute(*[dask.delayed(fn)(*handles, [whole[i] for i in job[0]], *job[1:]) for job in jobs])

    def key_blocks(
        self,
        data: EvalData,
        keys: Sequence[str],
        n_blocks: int | None = None,
        with_row_id: bool = False,
        balanced: bool = False,
        along: Sequence[Any] = (),
    ) -> Blocks:
        """Co-partition the original and the synthetic sets by a stable hash of ``keys``.

        In memory the whole data are one block; otherwise ``n_blocks`` (default: one per
        :attr:`block_rows` records of the largest set) aligned Dask partitions.  Column
        ``__block__`` holds the key hash — 0 when the data form one block: in memory, or
        when ``n_blocks`` is 1 (then each data set's partitions are simply concatenated into
        its block, without hashing or shuffling).  ``with_row_id`` adds ``__row__`` (each
        record's position in its own data set, for row-aligned partially synthetic data).

        ``balanced``: count the records of every key over all data sets first and deal the keys
        to blocks largest first (:func:`~pipeline.blocks.balanced_blocks`), for kernels whose
        cost grows with the records of a block (identification risk); the counting pass keeps
        each partition's key hashes on its worker and the blocks are made by an exchange of
        the partitions' pieces, not a Dask shuffle (:meth:`_balanced_blocks`).  The default
        number of blocks is then a multiple of the workers' threads, so equal blocks keep every
        worker busy to the end.

        ``along``: lazy values (:class:`Deferred`, e.g. a measure's checks of the same data)
        computed with the blocks' counting pass where there is one (one round trip less), else
        at once; their values are :attr:`Blocks.along`.
        """
        keys = list(keys)
        for f in data.frames:
            missing = [k for k in keys if k not in f.columns]
            if missing:
                raise ParameterError(f"key(s) {missing} not among the columns {list(f.columns)}")
        if not self.is_lazy(data):
            frames = []
            for f in data.frames:
                out = f.assign(**{BLOCK_COLUMN: np.zeros(len(f), dtype=np.int64)})
                if with_row_id:
                    out[ROW_COLUMN] = np.arange(len(f), dtype=np.int64)
                frames.append(out)
            return Blocks(self, frames[0], frames[1:], None, along=tuple(self.compute(*along)))
        if n_blocks is None:
            n_blocks = max(1, math.ceil(max(self.rows(data)) / self.block_rows))
            if balanced and n_blocks > 1:
                n_blocks = self.threads() * math.ceil(n_blocks / self.threads())
        if balanced and n_blocks > 1:
            return self._balanced_blocks(data, keys, n_blocks, with_row_id, along)
        values = tuple(self.compute(*along))
        if n_blocks == 1:
            whole = [_one_block(f, with_row_id) for f in data.frames]
            aligned = AlignedBlocks(KeyBlocks(keys, 1), whole[0], whole[1:])
            return Blocks(self, whole[0], whole[1:], aligned, along=values)
        # row ids count the records of each partition: on this executor's client, where persisted data live
        on_client = self.client.as_current() if self.client is not None else contextlib.nullcontext()
        with dask.config.set({"dataframe.shuffle.method": self.shuffle}), on_client:
            aligned = KeyBlocks(keys, n_blocks).partition(data.original, list(data.synthetic), with_row_id)
        return Blocks(self, aligned.original, aligned.synthetic, aligned, along=values)

    def _balanced_blocks(
        self, data: EvalData, keys: list[str], n_blocks: int, with_row_id: bool, along: Sequence[Any] = ()
    ) -> Blocks:
        """Balanced key blocks by an exchange of the records' pieces (no Dask shuffle).

        One pass hashes every partition's keys once and keeps the result on its worker
        (:func:`~pipeline.blocks.keyed_partition`) while only the records per key (taken on that
        worker, :func:`~pipeline.blocks.key_loads`) are combined and come to the driver;
        the keys are dealt to blocks (:func:`~pipeline.blocks.balanced_blocks`); each kept
        partition is then cut into its pieces of every block (one task per partition,
        :func:`~pipeline.blocks.split_by_block`) and a block of a data set is the concatenation
        of its pieces in partition order (one task per block), so only the selected columns
        move, once.
        """
        frames = [_as_dask(f) for f in data.frames]
        partials, combined = self.map_reduce_partials(
            frames, keyed_partition, sum_key_loads, keys, summary=key_loads, along=along
        )
        assignment = balanced_blocks(sum_key_loads(combined[: len(frames)]), n_blocks).sort_index()
        # the table goes to the cluster once, not with every task
        hashes = dask.delayed(assignment.index.to_numpy(dtype=np.int64), traverse=False)
        blocks = dask.delayed(assignment.to_numpy(dtype=np.int64), traverse=False)
        cut = dask.delayed(split_by_block, nout=n_blocks, pure=False)
        # block b is made (and so, by data locality, its kernel runs) on worker thread b mod T:
        # the blocks are equal, so every thread gets the same work; left to the scheduler, the
        # blocks followed their pieces and one worker could get twice the blocks of another
        slots = [w for w, k in sorted(self.client.nthreads().items()) for _ in range(k)] if self.client else [None]
        places = [slots[b % len(slots)] for b in range(n_blocks)]
        aligned, pieces = [], []
        for f, parts, counts in zip(frames, partials, self.partition_rows(*frames), strict=True):
            offsets = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64).tolist()
            firsts = offsets if with_row_id else [None] * len(parts)
            cuts = [cut(p, hashes, blocks, n_blocks, o) for p, o in zip(parts, firsts, strict=True)]
            meta = f._meta.assign(**{ROW_COLUMN: np.int64(0)}) if with_row_id else f._meta
            meta = meta.assign(**{BLOCK_COLUMN: np.int64(0)})
            by_block = [[piece[b] for piece in cuts] for b in range(n_blocks)]
            joined = []
            for b, slot in enumerate(places):
                with _placed(slot):
                    joined.append(dask.delayed(_concat_frames, pure=False)(by_block[b]))
            aligned.append(dd.from_delayed(joined, meta=meta, verify_meta=False))
            pieces.append(by_block)
        return Blocks(
            self,
            aligned[0],
            aligned[1:],
            AlignedBlocks(KeyBlocks(keys, n_blocks), aligned[0], aligned[1:]),
            _Pieces(pieces, places),
            tuple(combined[len(frames) :]),
        )

    def derived_key_blocks(
        self,
        data: EvalData,
        keys: Sequence[str],
        derive: Callable[..., pd.DataFrame],
        meta: pd.DataFrame,
        *args: Any,
        with_row_id: bool = False,
    ) -> Blocks:
        """Key blocks of frames derived from the records partition by partition.

        ``derive(partition, *args)`` turns the records of one partition of any data set into a
        pandas frame that keeps the ``keys`` columns: the records' category codes, or counts
        per key combination (then only the counts, not the records, travel in the shuffle).
        The derived frames are co-partitioned as in :meth:`key_blocks`, so rows with equal
        ``keys`` of every data set meet in one block; when ``derive`` reduces, a key
        combination may have rows from several partitions, which the block kernel merges.

        Blocks are sized by derived rows (:attr:`block_rows` per block of the largest set); on
        the cluster the derived frames are persisted first (they are read to size the blocks,
        then by the shuffle).  In memory the whole data are one block, as in :meth:`key_blocks`.
        ``meta`` is ``derive``'s output without rows; ``with_row_id`` numbers the derived rows
        of each data set (its records' positions when ``derive`` keeps one row per record).
        """
        if self.is_lazy(data):
            frames = self.persist(*[f.map_partitions(derive, *args, meta=meta) for f in data.frames], merge=False)
        else:
            frames = [derive(f, *args) for f in data.frames]
        return self.key_blocks(data.with_frames(frames), keys, with_row_id=with_row_id)

    def keep_rows(self, frame: Frame, keep: np.ndarray) -> Frame:
        """The records of ``frame`` at the positions where ``keep`` is True (lazy stays lazy).

        ``keep`` is a boolean array over all records of ``frame`` in order (e.g. flags found on
        key blocks with ``__row__``); a Dask frame is filtered partition by partition, each
        partition receiving only its own slice of ``keep`` (its records are counted once, on
        this executor's cluster).
        """
        if isinstance(frame, pd.DataFrame):
            return frame[keep]
        bounds = np.concatenate([[0], np.cumsum(self.partition_rows(frame)[0])]).astype(np.int64)
        parts = [
            dask.delayed(_keep_part)(part, keep[a:b])
            for part, a, b in zip(frame.to_delayed(), bounds[:-1], bounds[1:], strict=True)
        ]
        return dd.from_delayed(parts, meta=frame._meta, verify_meta=False)

    def threads(self) -> int:
        """Worker threads of the cluster (1 without a client)."""
        if self.client is None:
            return 1
        return max(1, int(sum(self.client.nthreads().values())))

    def memory(self) -> int:
        """Bytes the computation may use: the workers' memory limits, else this machine's free memory."""
        if self.client is not None:
            workers = self.client.scheduler_info()["workers"].values()
            total = int(sum(w.get("memory_limit", 0) or 0 for w in workers))
            if total:
                return total
        return int(psutil.virtual_memory().available)


@dataclass(frozen=True)
class _Pieces:
    """Balanced key blocks as their pieces (:meth:`Executor._balanced_blocks`): per data set and
    block the delayed pieces of every partition, in partition order, and the worker thread each
    block is made on (None: anywhere)."""

    pieces: list[list[list[Any]]]
    places: list[str | None]


@dataclass(frozen=True)
class Blocks:
    """The original and the synthetic sets in aligned key blocks (see :meth:`Executor.key_blocks`)."""

    executor: Executor
    original: Frame
    synthetic: list[Frame]
    aligned: AlignedBlocks | None
    #: balanced blocks: the pieces, so that a kernel's task joins them itself (no task per block
    #: and data set that only concatenates, and one hop less before every kernel)
    pieces: _Pieces | None = None
    #: the values of ``key_blocks(..., along=...)``
    along: tuple = ()

    def persist(self) -> Blocks:
        """Keep the shuffled blocks on the cluster (reused by several kernels)."""
        if self.aligned is None:
            return self
        orig, *syns = self.executor.persist(self.original, *self.synthetic, merge=False)
        return Blocks(self.executor, orig, list(syns), AlignedBlocks(self.aligned.key_blocks, orig, list(syns)))

    def map(
        self,
        kernel: Callable[..., pd.DataFrame],
        meta: pd.DataFrame,
        *,
        synthetic: Sequence[int] | None = None,
        **kwargs: Any,
    ) -> Deferred:
        """``kernel(original_block, *synthetic_blocks, **kwargs)`` per aligned block, concatenated.

        The kernel returns a pandas frame like ``meta``; the deferred value is the
        concatenation of all blocks' frames (sort before any order-dependent reduction).
        """
        chosen = self.synthetic if synthetic is None else [self.synthetic[i] for i in synthetic]
        if self.aligned is None:
            return Deferred(kernel(self.original, *chosen, **kwargs))
        if self.pieces is None:
            return Deferred(self.aligned.map(kernel, meta, synthetic=synthetic, **kwargs))
        sets = [0, *(1 + i for i in (range(len(self.synthetic)) if synthetic is None else synthetic))]
        task = dask.delayed(_on_pieces, pure=False)
        name = getattr(kernel, "__name__", "kernel")
        out = []
        for b, slot in enumerate(self.pieces.places):
            with _placed(slot):
                joined = [self.pieces.pieces[i][b] for i in sets]
                out.append(task(kernel, joined, kwargs, dask_key_name=f"{name}-{uuid.uuid4().hex}"))
        return Deferred(dd.from_delayed(out, meta=meta, verify_meta=False))


def _placed(slot: str | None) -> contextlib.AbstractContextManager:
    """Tasks made inside run on worker ``slot`` (other workers allowed), or anywhere for None."""
    return dask.annotate(workers=[slot], allow_other_workers=True) if slot else contextlib.nullcontext()


def _on_pieces(kernel: Callable[..., pd.DataFrame], pieces: Sequence[Sequence[pd.DataFrame]], kwargs: dict) -> Any:
    """``kernel`` of one balanced block: each data set's pieces joined in partition order, in the kernel's task."""
    return kernel(*[_concat_frames(p) for p in pieces], **kwargs)


def _keep_part(part: pd.DataFrame, keep: np.ndarray) -> pd.DataFrame:
    """The records of one partition where its slice of the keep flags is True."""
    return part[keep]


def _stored_parts(frame: dd.DataFrame) -> tuple[list[Any], list[str] | None]:
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


def _stored_keys(frame: dd.DataFrame) -> tuple[str, ...]:
    """Keys of the stored partitions a persisted frame (or a selection of its columns) reads; empty otherwise."""
    expr = frame.expr
    while isinstance(expr, Projection):
        expr = expr.frame
    return tuple(str(k) for k in expr.operand("keys")) if isinstance(expr, FromGraph) else ()


def _is_persisted(frame: Any) -> bool:
    """Whether a Dask frame reads partitions held on the cluster only (futures of persisted data,
    or a selection of their columns)."""
    if not isinstance(frame, dd.DataFrame) or not _stored_keys(frame):
        return False
    return all(_is_future(next(iter(p.dask.values()))) for p in _stored_parts(frame)[0])


def _stored_frame(frame: dd.DataFrame) -> dd.DataFrame:
    """The persisted frame, all columns, that ``frame`` selects from."""
    expr = frame.expr
    while isinstance(expr, Projection):
        expr = expr.frame
    return new_collection(expr)


def _partition_tasks(frame: dd.DataFrame, kernel: Callable[..., Any], args: tuple, kwargs: dict[str, Any]) -> list[Any]:
    """``kernel(partition, *args, **kwargs)`` of every partition of a Dask frame, as delayed tasks.

    On persisted data (or a selection of its columns) each is one task that reads the stored
    partition, selects the columns and runs the kernel.
    """
    stored, columns = _stored_parts(frame)
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


def _is_future(value: Any) -> bool:
    """Whether ``value`` is a distributed future (a partial kept on the cluster)."""
    if "distributed" not in sys.modules:  # no future without it: spare loading it
        return False
    try:
        from distributed import Future
    except ImportError:
        return False
    return isinstance(value, Future)


def _select_columns(part: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """``part[columns]`` (a stored partition's selected columns, as the projection gives them)."""
    return part[columns]


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


def _counted_as(frame: dd.DataFrame) -> str:
    """Name of the collection whose partition lengths ``frame`` has (selecting columns keeps them)."""
    expr = frame.expr
    while isinstance(expr, Projection):
        expr = expr.frame
    return expr._name


def _merge_groups(lengths: Sequence[int], target: int) -> list[range] | None:
    """Consecutive groups of partitions of about ``target`` records (see :meth:`Executor.coalesce`).

    None when merging would not reduce the number of partitions.
    """
    n, parts = int(sum(lengths)), len(lengths)
    n_groups = max(1, math.ceil(n / target))
    if n_groups >= parts:
        return None
    counts = np.asarray(lengths, dtype=np.int64)
    starts = np.cumsum(counts) - counts
    # group of each partition by the position of its middle record (integer arithmetic: exact)
    group = (2 * starts + counts) * n_groups // max(2 * n, 1)
    edges = [0, *(np.flatnonzero(np.diff(group)) + 1).tolist(), parts]
    return [range(a, b) for a, b in itertools.pairwise(edges)]


def _concat_frames(parts: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """Consecutive partitions as one (records in order, index kept; categoricals unioned as Dask does)."""
    return parts[0] if len(parts) == 1 else dask_concat(list(parts))


def _block_columns(frame: pd.DataFrame, with_row_id: bool) -> pd.DataFrame:
    """A data set's one partition as its key block: index 0..n-1, ``__row__``, ``__block__`` 0."""
    frame = frame.reset_index(drop=True)
    if with_row_id:
        frame[ROW_COLUMN] = np.arange(len(frame), dtype=np.int64)
    frame[BLOCK_COLUMN] = np.zeros(len(frame), dtype=np.int64)
    return frame


def _one_block(frame: dd.DataFrame, with_row_id: bool) -> dd.DataFrame:
    """A data set as one key block: its partitions concatenated in order (no hash, no shuffle)."""
    meta = frame._meta.assign(**{ROW_COLUMN: np.int64(0)}) if with_row_id else frame._meta
    meta = meta.assign(**{BLOCK_COLUMN: np.int64(0)})
    # a Dask expression, not delayed: it keeps the persisted partitions it reads alive
    return frame.repartition(npartitions=1).map_partitions(_block_columns, with_row_id, meta=meta)


def _concat_parts(parts: Sequence[pd.DataFrame], columns: list[str] | None = None) -> pd.DataFrame:
    """The partitions of one data set as one pandas frame (index 0..n-1; ``columns`` only if given), on a worker."""
    if not parts:
        return pd.DataFrame()
    return pd.concat([p if columns is None else p[columns] for p in parts], ignore_index=True)


def _as_dask(frame: Frame) -> dd.DataFrame:
    return dd.from_pandas(frame, npartitions=1, sort=False) if isinstance(frame, pd.DataFrame) else frame


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
