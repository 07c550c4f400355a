"""Key blocks: co-partition the original and the synthetic sets by their key values.

Every record gets a stable 64-bit hash of its key values (the factor *labels* and the numeric
values, never category codes) in column ``__block__``.  Every data set is shuffled on that
hash into the same number ``n_blocks`` of partitions — the *blocks* — so block ``b`` of the
original and block ``b`` of every synthetic set hold exactly the records with the same key
values (many key combinations per block, each combination whole, blocks of similar size).  A per-block kernel
(a pure pandas/numpy function) then runs on aligned partitions, one Dask task each, and the
block results are combined (usually summed).

Balanced blocks (:meth:`~pipeline.evaluation.execution.Executor.key_blocks` with
``balanced``): every partition is reduced to its records' key hashes and the records per key
(:func:`keyed_partition`, kept on its worker); the keys are dealt to the blocks largest first,
each to the block with the fewest records so far (:func:`balanced_blocks`; ties by the key hash
and the lowest block), so heavy-tailed keys (a capital city) do not leave one block twice the
size of another; each kept partition is then cut into its pieces of every block
(:func:`split_by_block`) and a block is the concatenation of its pieces — an exchange of the
compared columns only, with no second hashing and no Dask shuffle.  The assignment depends only
on the counts and ``n_blocks``.

The hash is pandas' SipHash with its fixed key (``pd.util.hash_pandas_object``), so it does
not depend on the process, the run, the worker count or the input partitioning.  Because a
kernel always receives whole blocks, its output is independent of how the input was
partitioned as long as the kernel's combine is exact (integer counts; sort before any
floating-point reduction).

Examples
--------
>>> kb = KeyBlocks(["sex", "agegr"], n_blocks=8)
>>> blocks = kb.partition(original, [syn1, syn2])          # doctest: +SKIP
>>> counts = blocks.map(count_kernel, meta=meta).compute()   # doctest: +SKIP
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import dask.dataframe as dd
import numpy as np
import pandas as pd

from pipeline.errors import ParameterError

BLOCK_COLUMN = "__block__"
ROW_COLUMN = "__row__"


def _hash_keys(frame: pd.DataFrame, keys: Sequence[str]) -> np.ndarray:
    """uint64 hash of each record's key values, by value (labels), not by category code."""
    parts = []
    for k in keys:
        s = frame[k]
        if isinstance(s.dtype, pd.CategoricalDtype):
            # hash the labels so two frames with different level orders agree; pandas hashes a
            # categorical of string labels by its labels already (NA as None), other labels as objects
            if not pd.api.types.is_string_dtype(s.cat.categories.dtype):
                s = s.astype(object).where(s.notna(), None)
        elif pd.api.types.is_numeric_dtype(s.dtype):
            s = s.astype("float64")
        else:
            s = s.astype(object).where(s.notna(), None)
        parts.append(pd.util.hash_pandas_object(s.reset_index(drop=True), index=False).to_numpy())
    if not parts:
        return np.zeros(len(frame), dtype=np.uint64)
    h = parts[0]
    for p in parts[1:]:
        # order-dependent combination (boost::hash_combine style, in uint64 arithmetic)
        h = h ^ (p + np.uint64(0x9E3779B97F4A7C15) + (h << np.uint64(6)) + (h >> np.uint64(2)))
    return h


def key_hash(frame: pd.DataFrame, keys: Sequence[str]) -> np.ndarray:
    """Stable int64 hash of every record's key values (equal keys, equal hash; any process)."""
    return _hash_keys(frame, keys).view(np.int64)


def block_ids(frame: pd.DataFrame, keys: Sequence[str], n_blocks: int) -> np.ndarray:
    """A block number (0 .. n_blocks-1) per record for in-memory (pandas) blocking."""
    return (_hash_keys(frame, keys) % np.uint64(n_blocks)).astype(np.int64)


@dataclass(frozen=True)
class KeyedPartition:
    """One partition's records and their key hashes, kept on its worker between the count of the
    records per key (:func:`sum_key_loads`) and the cut into blocks (:func:`split_by_block`).

    Attributes
    ----------
    frame : DataFrame
        The partition's records (the compared columns).
    codes : ndarray of int64
        Per record, the index of its key hash in ``hashes``.
    hashes : ndarray of int64
        The partition's distinct key hashes (:func:`key_hash`).
    counts : ndarray of int64
        Records per distinct key hash.
    """

    frame: pd.DataFrame
    codes: np.ndarray
    hashes: np.ndarray
    counts: np.ndarray


def keyed_partition(frame: pd.DataFrame, keys: Sequence[str]) -> KeyedPartition:
    """The :class:`KeyedPartition` of one partition (its key values hashed once)."""
    codes, hashes = pd.factorize(key_hash(frame, keys))
    counts = np.bincount(codes, minlength=len(hashes))
    return KeyedPartition(frame, codes.astype(np.int64), np.asarray(hashes, dtype=np.int64), counts.astype(np.int64))


def key_loads(part: KeyedPartition) -> pd.Series:
    """Records per key hash of one kept partition (taken on its worker: the records stay there)."""
    return pd.Series(part.counts, index=part.hashes)


def sum_key_loads(parts: Sequence[KeyedPartition | pd.Series]) -> pd.Series:
    """Records per key hash (sorted by hash) of :class:`KeyedPartition` s or of such sums: exact."""
    return sum_key_counts([key_loads(p) if isinstance(p, KeyedPartition) else p for p in parts])


def sum_key_counts(parts: Sequence[pd.Series]) -> pd.Series:
    """Exact sum of records per key hash over partitions and data sets."""
    if not parts:
        return pd.Series(dtype=np.int64)
    return pd.concat(list(parts)).groupby(level=0, sort=True).sum().astype(np.int64)


def balanced_blocks(loads: pd.Series, n_blocks: int) -> pd.Series:
    """Block of every key hash: keys dealt largest first to the least-loaded block.

    ``loads`` holds the records per key hash (:func:`sum_key_loads`).  Keys are taken by
    decreasing count, ties by increasing hash (the stable key hash), each to the block with
    the fewest records so far (ties: the lowest block number): the greedy
    largest-processing-time rule, whose largest block is at most 4/3 of the optimum.  The
    result depends only on the counts and ``n_blocks`` (not on workers or partitions).
    """
    hashes = loads.index.to_numpy(dtype=np.int64)
    counts = loads.to_numpy(dtype=np.int64)
    order = np.lexsort((hashes, -counts))
    block = np.empty(len(hashes), dtype=np.int64)
    heap = [(0, b) for b in range(n_blocks)]
    for k in order.tolist():
        load, b = heapq.heappop(heap)
        block[k] = b
        heapq.heappush(heap, (load + int(counts[k]), b))
    return pd.Series(block, index=hashes)


def split_by_block(
    part: KeyedPartition, hashes: np.ndarray, blocks: np.ndarray, n_blocks: int, offset: int | None
) -> list[pd.DataFrame]:
    """A kept partition cut into its records of every block (``n_blocks`` frames, in record order).

    ``hashes`` (sorted) and ``blocks`` give the block of every key hash of the data
    (:func:`balanced_blocks`).  Each piece has the partition's columns, ``__row__`` (the
    record's position in its data set: ``offset`` plus its position in the partition) when
    ``offset`` is given, and ``__block__`` (the key hash), as :meth:`KeyBlocks.partition` gives.
    """
    at = np.minimum(np.searchsorted(hashes, part.hashes), max(len(hashes) - 1, 0))
    if len(part.hashes) and (len(hashes) == 0 or (hashes[at] != part.hashes).any()):
        raise ParameterError("internal error: a key of the data was not counted for the balanced blocks")
    small = np.int16 if n_blocks <= np.iinfo(np.int16).max else np.int64  # a radix sort for few blocks
    block = blocks[at].astype(small)[part.codes] if len(part.hashes) else np.zeros(0, dtype=small)
    order = np.argsort(block, kind="stable")
    ends = np.searchsorted(block[order], np.arange(n_blocks + 1), side="left")
    ordered = part.frame.take(order)
    ordered.index = pd.RangeIndex(len(ordered))
    if offset is not None:
        ordered[ROW_COLUMN] = offset + order.astype(np.int64)
    ordered[BLOCK_COLUMN] = part.hashes[part.codes[order]]
    return [ordered.iloc[ends[b] : ends[b + 1]] for b in range(n_blocks)]


@dataclass(frozen=True)
class KeyBlocks:
    """Partitioning of records into blocks by a stable hash of ``keys``.

    Parameters
    ----------
    keys : sequence of str
        Key columns (categorical or numeric). Records with equal key values always share a
        block.
    n_blocks : int
        Number of blocks; also the number of Dask partitions after :meth:`partition`.
    """

    keys: tuple[str, ...]
    n_blocks: int

    def __init__(self, keys: Sequence[str], n_blocks: int) -> None:
        if isinstance(keys, str):
            keys = [keys]
        if len(set(keys)) != len(keys):
            raise ParameterError(f"duplicated key(s) in {list(keys)}")
        if int(n_blocks) < 1:
            raise ParameterError(f"n_blocks must be >= 1, got {n_blocks}")
        object.__setattr__(self, "keys", tuple(keys))
        object.__setattr__(self, "n_blocks", int(n_blocks))

    def assign(self, frame: pd.DataFrame) -> pd.DataFrame:
        """``frame`` with the key hash in column ``__block__`` (pandas, one partition)."""
        missing = [k for k in self.keys if k not in frame.columns]
        if missing:
            raise ParameterError(f"key(s) {missing} not among the columns {list(frame.columns)}")
        return frame.assign(**{BLOCK_COLUMN: key_hash(frame, self.keys)})

    def _shuffle(self, frame: dd.DataFrame | pd.DataFrame, with_row_id: bool) -> dd.DataFrame:
        if isinstance(frame, pd.DataFrame):
            frame = dd.from_pandas(frame, npartitions=1, sort=False)
        if with_row_id:
            frame = add_row_id(frame)
        meta = frame._meta.assign(**{BLOCK_COLUMN: np.int64(0)})
        # row order inside a partition is not deterministic: kernels must not depend on it; the
        # shuffle hashes the key hash by value, so equal keys of all frames land in equal partitions
        tagged = frame.map_partitions(self.assign, meta=meta)
        return tagged.shuffle(on=BLOCK_COLUMN, npartitions=self.n_blocks)

    def partition(
        self,
        original: dd.DataFrame | pd.DataFrame,
        synthetic: Sequence[dd.DataFrame | pd.DataFrame],
        with_row_id: bool = False,
    ) -> AlignedBlocks:
        """Shuffle the original and every synthetic set into aligned blocks.

        Parameters
        ----------
        original, synthetic
            pandas or Dask frames with the key columns.
        with_row_id : bool
            Add column ``__row__`` with each record's 0-based position in its own data set
            before shuffling (for row-aligned, partially synthetic data).
        """
        orig = self._shuffle(original, with_row_id)
        syns = [self._shuffle(s, with_row_id) for s in synthetic]
        return AlignedBlocks(self, orig, syns)


def add_row_id(frame: dd.DataFrame) -> dd.DataFrame:
    """Add ``__row__``: each record's global 0-based position (stable for any partitioning)."""
    lengths = frame.map_partitions(len).compute()
    offsets = np.concatenate([[0], np.cumsum(lengths.to_numpy())[:-1]])

    def _with_row(part: pd.DataFrame, offset: int) -> pd.DataFrame:
        return part.assign(**{ROW_COLUMN: np.arange(offset, offset + len(part), dtype=np.int64)})

    parts = frame.to_delayed()
    import dask

    meta = frame._meta.assign(**{ROW_COLUMN: np.int64(0)})
    return dd.from_delayed(
        [dask.delayed(_with_row)(p, int(o)) for p, o in zip(parts, offsets, strict=True)], meta=meta, verify_meta=False
    )


@dataclass(frozen=True)
class AlignedBlocks:
    """The original and m synthetic sets, shuffled so that partition p holds the same blocks."""

    key_blocks: KeyBlocks
    original: dd.DataFrame
    synthetic: list[dd.DataFrame]

    def persist(self) -> AlignedBlocks:
        """Persist the shuffled frames on the cluster (reuse them for several measures)."""
        import dask

        orig, *syns = dask.persist(self.original, *self.synthetic)
        return AlignedBlocks(self.key_blocks, orig, list(syns))

    def map(
        self,
        kernel: Callable[..., pd.DataFrame],
        meta: pd.DataFrame | dict[str, Any],
        *,
        synthetic: Sequence[int] | None = None,
        **kwargs: Any,
    ) -> dd.DataFrame:
        """Run ``kernel(original_block, *synthetic_blocks, **kwargs)`` on every aligned partition.

        ``synthetic`` selects which synthetic sets are passed (default all).  The kernel
        receives pandas frames holding whole blocks (column ``__block__`` included) and returns
        a pandas frame matching ``meta``.
        """
        chosen = self.synthetic if synthetic is None else [self.synthetic[i] for i in synthetic]
        return dd.map_partitions(
            kernel, self.original, *chosen, meta=meta, align_dataframes=False, enforce_metadata=False, **kwargs
        )
