"""The one executor of every measure: where and how the work runs.

An :class:`Executor` is created by the runner with its Dask client (or by the synthpop-named
functions with the current client, if any).  It alone decides

* **in memory or on key blocks** — by predicted cost (:mod:`pipeline.evaluation.cost`): the
  executor a unit gets (:meth:`Executor.for_measure`) carries its measure's measured cost per
  million records on each path, and ``policy: auto`` picks the path predicted faster for the
  data's records, the worker threads and the memory per worker (Dask adds a fixed driver cost
  per call that small data do not repay); a measure without a measured cost is decided by one
  threshold (:data:`IN_MEMORY_ROWS` records in the largest data set);
* block sizing and the shuffle method;
* **partition size** — small partitions of the same data set are merged (consecutive ones, up
  to about :attr:`Executor.block_rows` records) when the data are put in cluster memory
  (:meth:`Executor.persist`, :meth:`Executor.prepare`): every pass then runs one task per
  ~block of records instead of one per input file, which decides the cost of the Dask path
  (per-task overhead, not the kernels, dominated with 250,000-record partitions).  Which
  partitions merge depends only on their record counts and ``block_rows`` — never on the
  workers — and merging keeps the records in order;

and offers the primitives measures compose their pure pandas/numpy kernels with, one module
per kind of work in :mod:`pipeline.evaluation.primitives` (mixed into :class:`Executor`):
``partials`` (:meth:`Executor.map_reduce`; partials kept on the workers and merged by key bucket
or, on a layout, block by block), ``key_blocks`` (aligned key blocks, :class:`Blocks`),
``layout`` (the task's key-block layout, made once and kept on the workers), ``rounds``
(iterative fits, folds), ``tasks`` (independent fits) and ``records`` (records by position).
Private Dask access is in :mod:`pipeline.evaluation._dask_compat` only.

Measure modules never import Dask and never ask which kind of frame they hold.
"""

from __future__ import annotations

import copy
import itertools
import math
import sys
import threading
from collections.abc import Sequence
from typing import Any, Literal

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import psutil

from pipeline.errors import ParameterError
from pipeline.evaluation._dask_compat import (
    as_dask,
    concat_frames,
    counted_as,
    is_persisted,
    stored_frame,
    stored_keys,
)
from pipeline.evaluation.cost import COSTS, PathCost, choose_path
from pipeline.evaluation.data import EvalData, Frame
from pipeline.evaluation.policy import BLOCK_ROWS, IN_MEMORY_ROWS, Policy
from pipeline.evaluation.primitives.deferred import Deferred
from pipeline.evaluation.primitives.key_blocks import Blocks, KeyBlocking
from pipeline.evaluation.primitives.layout import Layout, Layouts
from pipeline.evaluation.primitives.partials import PER_WORKER_PARTITIONS, Partials
from pipeline.evaluation.primitives.records import Records
from pipeline.evaluation.primitives.rounds import Rounds, _consecutive_groups
from pipeline.evaluation.primitives.tasks import Tasks

# names measures and tests import from here
__all__ = ["PER_WORKER_PARTITIONS", "Blocks", "Deferred", "Executor", "_consecutive_groups"]


class Executor(Partials, KeyBlocking, Layouts, Rounds, Tasks, Records):
    """Runs measure kernels in memory or over Dask partitions and key blocks.

    Parameters
    ----------
    client : distributed.Client, optional
        The cluster to use; None runs Dask work on the current client if one is active, else
        on Dask's local threaded scheduler.
    policy : {"auto", "memory", "blocks"}
        ``auto``: the path predicted faster from the measure's measured cost
        (:func:`~pipeline.evaluation.cost.choose_path`; :meth:`for_measure`), or without one, in
        memory when the largest data set has at most ``in_memory_rows`` records.  ``memory`` /
        ``blocks`` force one path (tests, benchmarks, and users who know their data).
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
        # the task's key-block layouts (:meth:`lay_out`), made once and kept on the workers
        self._layouts: list[Layout] = []
        self._laying_out = threading.Lock()
        #: the measured cost of the measure this executor serves (:meth:`for_measure`)
        self.cost: PathCost | None = None

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

    def for_measure(self, measure_type: str) -> Executor:
        """This executor deciding for a measure of ``measure_type``: the same client, settings and
        shared state (counts, collected inputs, layouts), with the measure's measured cost
        (:data:`~pipeline.evaluation.cost.COSTS`; None: decided by ``in_memory_rows``)."""
        cost = COSTS.get(measure_type)
        if cost is self.cost:
            return self
        made = copy.copy(self)  # attributes are shared by reference: one cache, one list of layouts
        made.cost = cost
        return made

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
        todo = {counted_as(f): f for f in frames if isinstance(f, dd.DataFrame)}
        todo = {name: f for name, f in todo.items() if name not in self._lengths}
        lazy = [dask.delayed(tuple)([dask.delayed(len)(p) for p in f.to_delayed()]) for f in todo.values()]
        for name, counts in zip(todo, self.compute(*lazy), strict=True):
            self._lengths[name] = tuple(int(n) for n in counts)
        return [(len(f),) if isinstance(f, pd.DataFrame) else self._lengths[counted_as(f)] for f in frames]

    def in_memory(self, data: EvalData) -> bool:
        """Whether ``data`` is evaluated in memory (the one place that decides)."""
        if self.policy != "auto":
            return self.policy == "memory"
        if self.client is None and all(isinstance(f, pd.DataFrame) for f in data.frames):
            return True
        frames = (*data.frames, *([] if data.holdout is None else [data.holdout]))
        if self.cost is None:
            if all(isinstance(f, pd.DataFrame) for f in frames):
                return max(len(f) for f in data.frames) <= self.in_memory_rows
            return max(self.rows(data)) <= self.in_memory_rows
        records = sum(sum(n) for n in self.partition_rows(*frames))
        return choose_path(records, self.threads(), self.worker_memory(), self.cost) == "memory"

    def prepare(self, data: EvalData, *, holdout: bool = False) -> EvalData:
        """``data`` in the form the policy chose: pandas frames, or Dask frames.

        Dask frames with small partitions are merged (:meth:`coalesce`) and those merged are
        kept in cluster memory (every later pass then reads the merged partitions; merging
        lazily would repeat the transfer and concatenation in every pass).  Frames that
        :meth:`persist` already merged pass unchanged.

        ``holdout``: prepare the holdout as well, decided with the other frames (for a measure
        that reads it); otherwise it is left as it is (measures that do not read it pay nothing).
        """
        if holdout and data.holdout is not None:
            both = self.prepare(EvalData((*data.frames, data.holdout), data.schema))
            return EvalData(both.frames[:-1], data.schema, both.frames[-1], data.synthesised)
        if self.in_memory(data):
            return self.collect(data)
        frames = [as_dask(f) for f in data.frames]
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
        stored = [stored_keys(f) for f in frames]
        with self._collecting:  # units collecting at the same time share one transfer
            todo = {k: stored_frame(f) for f, k in zip(frames, stored, strict=True) if k and k not in self._collected}
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
        return [concat_frames(v) if is_frame else v[0] for v, is_frame in zip(values, frames, strict=True)]

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
        lengths = dict(zip((counted_as(f) for f in lazy), self.partition_rows(*lazy), strict=True))
        out = []
        for f in frames:
            counts = lengths[counted_as(f)] if isinstance(f, dd.DataFrame) else ()
            groups = _merge_groups(counts, self.block_rows) if counts else None
            if groups is None:
                out.append(f)
                continue
            parts = f.to_delayed()
            merged = [dask.delayed(concat_frames)(parts[g.start : g.stop]) for g in groups]
            divisions = None
            if f.known_divisions:
                divisions = (*(f.divisions[g.start] for g in groups), f.divisions[-1])
            frame = dd.from_delayed(merged, meta=f._meta, divisions=divisions, verify_meta=False)
            self._lengths[counted_as(frame)] = tuple(sum(counts[g.start : g.stop]) for g in groups)
            out.append(frame)
        return out

    def _persist_merged(self, before: Sequence[Frame], after: Sequence[Frame]) -> list[Frame]:
        """``after``, its frames that differ from ``before`` (merged by :meth:`coalesce`) submitted to persist."""
        changed = [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a is not b]
        out = list(after)
        for i, kept in zip(changed, self._persist([after[i] for i in changed]), strict=True):
            self._lengths[counted_as(kept)] = self._lengths[counted_as(after[i])]
            out[i] = kept
        return out

    def _persist(self, frames: Sequence[Any]) -> list[Any]:
        """Dask collections submitted for persisting (see :meth:`_wait`); other values pass through.

        A frame that reads persisted partitions only (persisted data or a selection of their
        columns) passes through too: persisting it again would copy the records on the workers
        and give a new collection whose partitions are counted again, a round trip each.
        """
        lazy = [f for f in frames if dask.is_dask_collection(f) and not is_persisted(f)]
        if not lazy:
            return list(frames)
        done = iter(self.client.persist(lazy) if self.client is not None else dask.persist(*lazy))
        return [next(done) if dask.is_dask_collection(f) and not is_persisted(f) else f for f in frames]

    def _wait(self, values: list[Any]) -> list[Any]:
        """``values`` once the persisted Dask collections among them are on the cluster."""
        lazy = [v for v in values if dask.is_dask_collection(v)]
        if self.client is not None and lazy:
            from distributed import wait

            with self.client.as_current():  # wait() uses the current client, not necessarily this one
                wait(lazy)
        return values

    def threads(self) -> int:
        """Worker threads of the cluster (1 without a client)."""
        if self.client is None:
            return 1
        return max(1, int(sum(self.client.nthreads().values())))

    def worker_memory(self) -> int:
        """Bytes one worker may hold: the smallest worker memory limit, else this machine's free memory."""
        if self.client is not None:
            limits = [w.get("memory_limit", 0) or 0 for w in self.client.scheduler_info()["workers"].values()]
            if limits and min(limits):
                return int(min(limits))
        return int(psutil.virtual_memory().available)

    def memory(self) -> int:
        """Bytes the computation may use: the workers' memory limits, else this machine's free memory."""
        if self.client is not None:
            workers = self.client.scheduler_info()["workers"].values()
            total = int(sum(w.get("memory_limit", 0) or 0 for w in workers))
            if total:
                return total
        return int(psutil.virtual_memory().available)


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
