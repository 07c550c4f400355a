"""Aligned key blocks: records that must meet their kind across data sets (same keys in the original
and every synthetic set) brought into one block, by a Dask shuffle or a balanced exchange of pieces."""

from __future__ import annotations

import contextlib
import math
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd

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
from pipeline.evaluation._dask_compat import as_dask, concat_frames, counted_as
from pipeline.evaluation.data import EvalData, Frame
from pipeline.evaluation.primitives.deferred import Deferred
from pipeline.evaluation.primitives.layout import Layout


class KeyBlocking:
    """The executor's key-block primitives (mixed into :class:`~pipeline.evaluation.execution.Executor`)."""

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
            return Blocks(frames[0], frames[1:], None, along=tuple(self.compute(*along)))
        layout = None if n_blocks is not None else self._layout_of(data, keys)
        if layout is not None:
            aligned = self._laid_out_blocks(layout, data, keys, with_row_id)
            return Blocks(aligned.original, aligned.synthetic, aligned, along=tuple(self.compute(*along)))
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
            return Blocks(whole[0], whole[1:], aligned, along=values)
        # row ids count the records of each partition: on this executor's client, where persisted data live
        on_client = self.client.as_current() if self.client is not None else contextlib.nullcontext()
        with dask.config.set({"dataframe.shuffle.method": self.shuffle}), on_client:
            aligned = KeyBlocks(keys, n_blocks).partition(data.original, list(data.synthetic), with_row_id)
        return Blocks(aligned.original, aligned.synthetic, aligned, along=values)

    def _layout_of(self, data: EvalData, keys: list[str]) -> Layout | None:
        """The layout whose partitions are the key blocks of ``keys`` over ``data`` (partition-local),
        if the data were laid out (:meth:`~pipeline.evaluation.primitives.layout.Layouts.lay_out`):
        the task's layout when ``keys`` contain its key, else a layout by ``keys`` made now, once,
        for this and later measures (a measure that needs another layout pays for it once)."""
        layout = self._layout_for(data.frames, keys)
        laid_out = {s for made in self._layouts for s in made.sources}
        # only data sets laid out before (the task's inputs): frames derived on the way (samples,
        # relabelled footings) take the measure's own blocks rather than a layout kept for the run
        if layout is None and all(isinstance(f, dd.DataFrame) and counted_as(f) in laid_out for f in data.frames):
            layout = self.lay_out(EvalData(data.frames, data.schema), keys, reason=f"a measure keyed on {keys}")
        return layout

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
        frames = [as_dask(f) for f in data.frames]
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
                    joined.append(dask.delayed(concat_frames, pure=False)(by_block[b]))
            aligned.append(dd.from_delayed(joined, meta=meta, verify_meta=False))
            pieces.append(by_block)
        return Blocks(
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


@dataclass(frozen=True)
class _Pieces:
    """Balanced key blocks as their pieces (:meth:`KeyBlocking._balanced_blocks`): per data set and
    block the delayed pieces of every partition, in partition order, and the worker thread each
    block is made on (None: anywhere)."""

    pieces: list[list[list[Any]]]
    places: list[str | None]


@dataclass(frozen=True)
class Blocks:
    """The original and the synthetic sets in aligned key blocks (see :meth:`KeyBlocking.key_blocks`)."""

    original: Frame
    synthetic: list[Frame]
    aligned: AlignedBlocks | None
    #: balanced blocks: the pieces, so that a kernel's task joins them itself (no task per block
    #: and data set that only concatenates, and one hop less before every kernel)
    pieces: _Pieces | None = None
    #: the values of ``key_blocks(..., along=...)``
    along: tuple = ()

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
    return kernel(*[concat_frames(p) for p in pieces], **kwargs)


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
