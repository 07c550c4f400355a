"""One key-block layout per task: the data sets laid out once, block-wise measures partition-local on it.

A :class:`Layout` holds every data set of a task (the original, the synthetic sets, the holdout)
cut into the same balanced key blocks of a *layout key* — the coarsest key common to the task's
block-wise measures — and kept in cluster memory: block ``b`` of every data set is partition
``b`` of its laid-out frame, on the same worker.  Records with equal layout keys are in one
block, so any key that contains the layout key (equal or finer) has each of its cells inside one
block too: a measure keyed on it runs on the laid-out partitions as they are (it refines within
a block, which its kernel does anyway), with no counting pass, no cut and no movement of records.

A measure whose keys do not contain a layout's key needs another layout: once a task has laid
out its data (:meth:`Layouts.lay_out`), such a measure lays them out by its own keys, once — the
layout is kept for the measures after it — and the executor's :meth:`Layouts.layouts` lists every
layout made and for which keys, which the run's manifest records.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import dask.dataframe as dd

from pipeline.blocks import BLOCK_COLUMN, ROW_COLUMN, AlignedBlocks, KeyBlocks
from pipeline.evaluation._dask_compat import as_dask, concat_frames, counted_as
from pipeline.evaluation.data import EvalData, Frame


@dataclass(frozen=True)
class Layout:
    """Data sets laid out in aligned balanced key blocks, kept on the workers.

    Attributes
    ----------
    keys : tuple of str
        The layout key: records with equal values of these variables are in one block.
    sources : tuple of str
        The data sets laid out, by the name of the collection each reads (a selection of a data
        set's columns reads the same collection, so it finds its layout).
    frames : tuple of dask.dataframe.DataFrame
        Per source, its records in ``blocks`` partitions (block ``b`` = partition ``b``), records
        of a block in their data set's order, with ``__row__`` (the record's position in its
        data set) and ``__block__`` (the hash of its layout key).
    blocks : int
    reason : str
        Why the layout was made (the task's common key, or the measure that needed it).
    """

    keys: tuple[str, ...]
    sources: tuple[str, ...]
    frames: tuple[dd.DataFrame, ...]
    blocks: int
    reason: str

    def serves(self, frames: Sequence[Frame], keys: Sequence[str]) -> bool:
        """Whether blocks of ``keys`` over ``frames`` can be this layout's partitions: every frame
        reads a laid-out data set, has no column the layout lacks, and ``keys`` contain the layout key."""
        if not set(self.keys) <= set(keys):
            return False
        for f in frames:
            if not isinstance(f, dd.DataFrame) or counted_as(f) not in self.sources:
                return False
            if not set(f.columns) <= set(self.frames[self.sources.index(counted_as(f))].columns):
                return False
        return True

    def select(self, frame: dd.DataFrame, with_row_id: bool, with_block: bool = True) -> dd.DataFrame:
        """The laid-out partitions of the data set ``frame`` reads, with ``frame``'s columns (and
        ``__row__``, ``__block__`` when asked)."""
        laid_out = self.frames[self.sources.index(counted_as(frame))]
        extra = [*([ROW_COLUMN] if with_row_id else []), *([BLOCK_COLUMN] if with_block else [])]
        return laid_out[[*frame.columns, *extra]]

    def describe(self) -> dict[str, Any]:
        """The manifest's entry (names and counts only)."""
        return {"keys": list(self.keys), "data_sets": len(self.sources), "blocks": self.blocks, "reason": self.reason}


class Layouts:
    """The executor's layout primitive (mixed into :class:`~pipeline.evaluation.execution.Executor`)."""

    client: Any
    _layouts: list[Layout]
    _laying_out: threading.Lock

    def lay_out(self, data: EvalData, keys: Sequence[str], reason: str = "the task's common key") -> Layout | None:
        """Lay out the original, the synthetic sets and the holdout of ``data`` by ``keys``, once.

        Balanced blocks as :meth:`~pipeline.evaluation.execution.Executor.key_blocks` makes them
        (``balanced=True``: the keys counted over every data set and dealt largest first, the
        number of blocks a multiple of the worker threads), of every column of ``data``, persisted
        where they were made.  A layout already made for the same data sets and keys is returned
        as it is.  None when the policy evaluates ``data`` in memory (they are one block there).
        """
        if self.in_memory(data):
            return None
        frames = [*data.frames, *([] if data.holdout is None else [data.holdout])]
        keys = tuple(keys)
        with self._laying_out:  # units asking at once make one layout
            for made in self._layouts:
                if made.keys == keys and made.serves(frames, keys):
                    return made
            frames = [as_dask(f) for f in frames]
            n_blocks = max(1, math.ceil(max(self.rows(EvalData(tuple(frames), data.schema))) / self.block_rows))
            n_blocks = self.threads() * math.ceil(n_blocks / self.threads())
            blocks = self._balanced_blocks(EvalData(tuple(frames), data.schema), list(keys), n_blocks, True)
            laid_out = self._placed_blocks(blocks) if self.client is not None else None
            if laid_out is None:
                laid_out = self.persist(blocks.original, *blocks.synthetic, merge=False)
            layout = Layout(keys, tuple(counted_as(f) for f in frames), tuple(laid_out), n_blocks, reason)
            self._layouts.append(layout)
            return layout

    def _placed_blocks(self, blocks: Any) -> list[dd.DataFrame] | None:
        """Balanced :class:`~pipeline.evaluation.primitives.key_blocks.Blocks` (typed ``Any``: that
        module imports this one) kept on the workers, block ``b`` of every data set on the worker
        thread ``b`` mod T chosen for it, so that block-by-block work moves nothing.

        The pieces are cut where their partitions are (no restriction: data locality), then each
        block is joined on its worker (a restriction, not a preference: Dask drops the placement
        annotations of a persisted frame's graph, which left both blocks of a data set on the worker
        that read it).  None without pieces (the data were one block)."""
        if blocks.pieces is None:
            return None
        per_set = blocks.pieces.pieces
        cuts = self.client.compute([p for blocks_of in per_set for pieces in blocks_of for p in pieces])
        got = iter(cuts)
        placed = []
        for frame, blocks_of in zip([blocks.original, *blocks.synthetic], per_set, strict=True):
            futures = []
            for pieces, slot in zip(blocks_of, blocks.pieces.places, strict=True):
                mine = [next(got) for _ in pieces]
                where = {"workers": [slot], "allow_other_workers": False} if slot else {}
                futures.append(self.client.submit(concat_frames, mine, pure=False, **where))
            placed.append(dd.from_delayed(futures, meta=frame._meta, verify_meta=False))
        # persisted as the run's data are (stored partitions; each read where its block is)
        return self.persist(*placed, merge=False)

    def _layout_for(self, frames: Sequence[Frame], keys: Sequence[str]) -> Layout | None:
        """A layout whose partitions are key blocks of ``keys`` over ``frames`` (the coarsest
        first, so every measure of a task shares the task's layout), or None."""
        fitting = [made for made in self._layouts if made.serves(frames, keys)]
        return min(fitting, key=lambda made: len(made.keys)) if fitting else None

    def laid_out(self, data: EvalData, keys: Sequence[str]) -> EvalData | None:
        """``data`` as a layout's partitions (partition ``b`` of every data set = block ``b``, on one
        worker; the same columns) when one serves key blocks of ``keys`` over it, else None: a
        kernel run per partition then sees every record of a key cell of ``keys``, so per-partition
        results of the data sets combine block by block
        (:meth:`~pipeline.evaluation.execution.Executor.map_aligned`), with no shuffle."""
        layout = self._layout_for(data.frames, keys) if keys else None
        if layout is None:
            return None
        return data.with_frames([layout.select(f, with_row_id=False, with_block=False) for f in data.frames])

    def layouts(self) -> list[dict[str, Any]]:
        """Every layout made on this executor, in order (for the run's manifest)."""
        return [made.describe() for made in self._layouts]

    def _laid_out_blocks(self, layout: Layout, data: EvalData, keys: Sequence[str], with_row_id: bool) -> AlignedBlocks:
        """The aligned key blocks of ``keys`` over ``data`` that ``layout``'s partitions are
        (partition-local: a selection of the kept partitions' columns, nothing moves)."""
        original, *synthetic = [layout.select(f, with_row_id) for f in data.frames]
        return AlignedBlocks(KeyBlocks(list(keys), layout.blocks), original, synthetic)
