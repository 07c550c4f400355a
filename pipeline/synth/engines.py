"""Storage of the table being fitted by IPF, and streaming passes over it.

Three engines share one interface (:meth:`run` a pass, :meth:`divide`, :attr:`n_cells`,
:meth:`slab_sums`, :meth:`slab_values`, :meth:`codes`, :meth:`dense`):

* :class:`DenseEngine` - every cell of the full cross-classification in one float64 array
  (plus the previous cycle's copy for mipfp's stopping rule): 16 bytes per cell.
* :class:`DaskEngine` - the full table as a chunked ``dask.array`` on the cluster, blocks of
  whole slabs, bit-for-bit the dense engine's fit (for tables that should live on workers).
* :class:`SparseEngine` - only the cells that can be non-zero (the *support*), each with its
  level codes: ``16 + p`` bytes per support cell (``p`` variables; ``16 + 2p`` beyond 256 levels).

Passes are slab-parallel numba kernels (:mod:`pipeline.synth._kernels`); the slab size is a
function of the accumulator size only, so every result is identical for any thread count.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from pipeline.evaluation.execution import Executor

SLAB_CELLS = 1 << 20
"""Cells per slab of a pass; also the fixed cell-index range of the two-stage sampler."""

PART_CELLS = 1 << 16
"""Accumulator size up to which a slab has SLAB_CELLS cells (larger ones get longer slabs)."""

MIN_TAIL = 256
"""Shortest inner run of the dense kernel (product of the trailing axis sizes)."""


def slab_size(acc_cells: int) -> int:
    """Slab length for an accumulator of ``acc_cells`` cells (bounds ``parts`` to 0.5 B/cell)."""
    ratio = max(1, math.ceil(acc_cells / PART_CELLS))
    return SLAB_CELLS * (1 << (ratio - 1).bit_length())


def c_strides(shape: Sequence[int]) -> list[int]:
    """C-order strides (in elements) of an array of ``shape``."""
    out = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        out[i] = out[i + 1] * int(shape[i + 1])
    return out


@dataclass(frozen=True)
class Factor:
    """A multiplicative update that depends on the variables ``axes`` only."""

    axes: tuple[int, ...]
    values: np.ndarray


@dataclass(frozen=True)
class PassResult:
    """What one pass returns: the accumulated margin (if asked) and the stopping-rule maxima."""

    margin: np.ndarray | None
    max_change: float
    max_value: float


@dataclass(frozen=True)
class _PassPlan:
    """Kernel arguments of one pass that depend on the table layout only."""

    g: np.ndarray
    g_head: np.ndarray
    g_tail: np.ndarray
    m_head: np.ndarray
    m_tail: np.ndarray
    m_size: int
    m_run: int
    slab: int


def _dense_kernel(tail_size, lead, x, prev, cell0, plan: _PassPlan, parts, apply, acc, crit, save, parallel: bool):
    from pipeline.synth import _kernels  # numba: loaded by the first pass, not by validating a task

    kernel = _kernels.dense_pass_parallel if parallel else _kernels.dense_pass_serial
    return kernel(
        x, prev, cell0, plan.slab, tail_size, lead, plan.g, plan.g_head, plan.g_tail, parts,
        plan.m_head, plan.m_tail, plan.m_run, apply, acc, crit, save,
    )  # fmt: skip


class _DenseLayout:
    """Index arithmetic of a full C-ordered table (shared by the dense and the Dask engine)."""

    def __init__(self, shape: Sequence[int]) -> None:
        self.shape = tuple(int(k) for k in shape)
        self.n_cells = math.prod(self.shape)
        split, tail = len(self.shape), 1
        while split > 0 and tail < MIN_TAIL:
            split -= 1
            tail *= self.shape[split]
        self._split = split
        self._tail = tail
        self._lead = np.asarray(self.shape[:split], dtype=np.int64)
        self._index_cache: dict[tuple[int, ...], tuple[np.ndarray, np.ndarray, int, int]] = {}

    def _index(self, axes: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, int, int]:
        """Head strides (lead axes), tail offsets, size of the sub-array over ``axes``, and the
        run length of consecutive cells with the same sub-array index (within the tail)."""
        if axes not in self._index_cache:
            sub = [self.shape[a] for a in axes]
            stride = dict(zip(axes, c_strides(sub), strict=True))
            head = np.array([stride.get(a, 0) for a in range(self._split)], dtype=np.int64)
            tail_axes = range(self._split, len(self.shape))
            tail_shape = [self.shape[a] for a in tail_axes]
            tail = np.zeros(self._tail, dtype=np.int64)
            if tail_shape:
                digits = np.indices(tail_shape).reshape(len(tail_shape), -1)
                for row, a in zip(digits, tail_axes, strict=True):
                    tail += row * stride.get(a, 0)
            run = 1
            for a in range(len(self.shape) - 1, self._split - 1, -1):
                if a in axes:
                    break
                run *= self.shape[a]
            self._index_cache[axes] = (head, tail, math.prod(sub), run)
        return self._index_cache[axes]

    def _plan(self, apply: Factor | None, acc: tuple[int, ...] | None) -> _PassPlan:
        g_head, g_tail, _, _ = self._index(apply.axes if apply else ())
        g = np.ascontiguousarray(apply.values, dtype=np.float64).ravel() if apply else np.ones(1)
        m_head, m_tail, m_size, m_run = self._index(acc if acc is not None else ())
        m_size = m_size if acc is not None else 1
        return _PassPlan(g, g_head, g_tail, m_head, m_tail, m_size, m_run, slab_size(m_size))

    def _kernel(self, x, prev, cell0, plan: _PassPlan, parts, apply, acc, crit, save, parallel: bool) -> np.ndarray:
        return _dense_kernel(self._tail, self._lead, x, prev, cell0, plan, parts, apply, acc, crit, save, parallel)

    def _margin(self, parts: np.ndarray, acc: tuple[int, ...] | None) -> np.ndarray | None:
        return parts.sum(axis=0).reshape([self.shape[a] for a in acc]) if acc is not None else None

    def codes(self, flat: np.ndarray) -> np.ndarray:
        """Level codes (records x variables) of flat cell indices."""
        return np.stack(np.unravel_index(flat, self.shape), axis=1) if flat.size else np.zeros((0, len(self.shape)))


class DenseEngine(_DenseLayout):
    """The full table as one C-ordered float64 array, initialised to ones.

    Parameters
    ----------
    shape : sequence of int
        Number of levels of each variable.
    """

    kind = "dense"
    bytes_per_cell = 16

    def __init__(self, shape: Sequence[int]) -> None:
        super().__init__(shape)
        self.x = np.ones(self.n_cells)
        self.prev = np.empty(0)

    def run(
        self, apply: Factor | None = None, acc: tuple[int, ...] | None = None, crit: bool = False, save: bool = False
    ) -> PassResult:
        """One pass: ``x *= apply``; accumulate the margin over ``acc``; stopping-rule maxima."""
        if save and self.prev.size == 0:
            self.prev = np.empty_like(self.x)
        plan = self._plan(apply, acc)
        n_slabs = -(-self.n_cells // plan.slab)
        parts = np.zeros((n_slabs, plan.m_size))
        prev = self.prev if (crit or save) else self.x
        maxima = self._kernel(
            self.x, prev, 0, plan, parts, apply is not None, acc is not None, crit, save, parallel=n_slabs > 1
        )
        return PassResult(self._margin(parts, acc), float(maxima[:, 0].max()), float(maxima[:, 1].max()))

    def divide(self, value: float) -> None:
        """Divide every cell by ``value`` (normalisation)."""
        self.x /= value

    def slab_sums(self) -> np.ndarray:
        """Sum of the table over each fixed range of SLAB_CELLS cells (pairwise, per range)."""
        n_ranges = -(-self.n_cells // SLAB_CELLS)
        return np.array([self.x[r * SLAB_CELLS : (r + 1) * SLAB_CELLS].sum() for r in range(n_ranges)])

    def slab_values(self, r: int) -> tuple[np.ndarray, np.ndarray]:
        """Values of range ``r`` and the flat cell index of each."""
        lo = r * SLAB_CELLS
        vals = self.x[lo : lo + SLAB_CELLS]
        return vals, np.arange(lo, lo + vals.size, dtype=np.int64)

    def dense(self) -> np.ndarray:
        """The fitted table in its full shape."""
        return self.x.reshape(self.shape)


def _block_pass(tail_size: int, lead: np.ndarray, x, prev, cell0: int, plan: _PassPlan, apply, acc, crit, save):
    """A pass over one block of the Dask engine: new blocks (never mutates its inputs), partials, maxima."""
    # the kernel writes x (and prev) in place: work on copies, and on copies of read-only buffers
    # (dask's initial ones, or arrays received from another process), which numba cannot type as writable
    x = x.copy() if (apply or not x.flags.writeable) else x
    if prev is None:
        prev = np.empty_like(x) if save else x
    elif save or not prev.flags.writeable:
        prev = prev.copy()  # crit reads the old values before save overwrites them
    parts = np.zeros((-(-x.size // plan.slab), plan.m_size))
    maxima = _dense_kernel(tail_size, lead, x, prev, cell0, plan, parts, apply, acc, crit, save, parallel=False)
    return x, prev, parts, maxima


def _range_sums(x: np.ndarray) -> np.ndarray:
    return np.array([x[i : i + SLAB_CELLS].sum() for i in range(0, x.size, SLAB_CELLS)])


class DaskEngine(_DenseLayout):
    """The full table as a chunked ``dask.array`` held by the cluster (blocks of whole slabs).

    Each pass maps the same kernel over the blocks (one task per block) and concatenates the
    per-slab partial margins in slab order, so the fit is bit-for-bit that of
    :class:`DenseEngine`, whatever the block size and the number of workers. Blocks are
    replaced, not updated in place, so a pass briefly holds the old and the new table.

    Parameters
    ----------
    shape : sequence of int
    chunk_cells : int
        Target cells per block (rounded to a multiple of the longest slab).
    max_acc_cells : int
        Largest accumulator any pass will use (fixes the longest slab).
    executor : Executor
        Whose cluster holds the table and computes the passes.
    """

    kind = "dask"
    bytes_per_cell = 32

    def __init__(self, shape: Sequence[int], chunk_cells: int, max_acc_cells: int, executor: Executor) -> None:
        import dask.array as da

        super().__init__(shape)
        unit = slab_size(max_acc_cells)
        self.block = max(1, int(chunk_cells) // unit) * unit
        self.executor = executor
        (self.x,) = executor.persist(da.ones(self.n_cells, chunks=self.block, dtype=np.float64), merge=False)
        self.prev = None

    def run(
        self, apply: Factor | None = None, acc: tuple[int, ...] | None = None, crit: bool = False, save: bool = False
    ) -> PassResult:
        """Same contract as :meth:`DenseEngine.run`."""
        import dask
        import dask.array as da

        plan = self._plan(apply, acc)
        xs = self.x.to_delayed().ravel()
        prevs = self.prev.to_delayed().ravel() if self.prev is not None else [None] * len(xs)
        call = dask.delayed(_block_pass, nout=4, pure=True)
        outs = [
            call(self._tail, self._lead, xb, pb, i * self.block, plan, apply is not None, acc is not None, crit, save)
            for i, (xb, pb) in enumerate(zip(xs, prevs, strict=True))
        ]
        sizes = self.x.chunks[0]
        new_x = da.concatenate([da.from_delayed(o[0], (n,), np.float64) for o, n in zip(outs, sizes, strict=True)])
        new_prev = da.concatenate([da.from_delayed(o[1], (n,), np.float64) for o, n in zip(outs, sizes, strict=True)])
        keep = ([new_x] if apply else []) + ([new_prev] if save else [])
        # the new table and the per-block margins in one graph on the executor's cluster
        kept = self.executor.persist(*keep, *[o[2] for o in outs], *[o[3] for o in outs], merge=False)
        arrays, rest = kept[: len(keep)], self.executor.compute(*kept[len(keep) :])
        parts, maxima = rest[: len(outs)], rest[len(outs) :]
        if apply:
            self.x = arrays.pop(0)
        if save:
            self.prev = arrays.pop(0)
        maxima = np.concatenate(maxima)
        return PassResult(
            self._margin(np.concatenate(parts), acc), float(maxima[:, 0].max()), float(maxima[:, 1].max())
        )

    def divide(self, value: float) -> None:
        (self.x,) = self.executor.persist(self.x / value, merge=False)

    def slab_sums(self) -> np.ndarray:
        """Same ranges and summation as :meth:`DenseEngine.slab_sums` (blocks hold whole ranges)."""
        import dask

        sums = [dask.delayed(_range_sums)(b) for b in self.x.to_delayed().ravel()]
        return np.concatenate(self.executor.compute(*sums))

    def slab_values(self, r: int) -> tuple[np.ndarray, np.ndarray]:
        lo = r * SLAB_CELLS
        (vals,) = self.executor.compute(self.x[lo : lo + SLAB_CELLS])
        return vals, np.arange(lo, lo + vals.size, dtype=np.int64)

    def dense(self) -> np.ndarray:
        (x,) = self.executor.compute(self.x)
        return x.reshape(self.shape)


class SparseEngine:
    """The support cells only, as rows of level codes (sorted by flat cell index), each with a value.

    Parameters
    ----------
    shape : sequence of int
        Number of levels of each variable.
    codes : ndarray (n_support, p)
        Level codes of the support cells, in increasing flat-index order.
    """

    kind = "sparse"

    def __init__(self, shape: Sequence[int], codes: np.ndarray) -> None:
        self.shape = tuple(int(k) for k in shape)
        self.full_cells = math.prod(self.shape)
        self.codes_ = np.ascontiguousarray(codes)
        self.n_cells = int(codes.shape[0])
        self.bytes_per_cell = 16 + self.codes_.dtype.itemsize * len(self.shape)
        self.x = np.ones(self.n_cells)
        self.prev = np.empty(0)

    def _index(self, axes: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, int]:
        sub = [self.shape[a] for a in axes]
        return np.asarray(axes, dtype=np.int64), np.asarray(c_strides(sub), dtype=np.int64), math.prod(sub)

    def run(
        self, apply: Factor | None = None, acc: tuple[int, ...] | None = None, crit: bool = False, save: bool = False
    ) -> PassResult:
        """Same contract as :meth:`DenseEngine.run`."""
        if save and self.prev.size == 0:
            self.prev = np.empty_like(self.x)
        g_axes, g_strides, _ = self._index(apply.axes if apply else ())
        g = np.ascontiguousarray(apply.values, dtype=np.float64).ravel() if apply else np.ones(1)
        m_axes, m_strides, m_size = self._index(acc if acc is not None else ())
        slab = slab_size(m_size if acc is not None else 1)
        n_slabs = max(1, -(-self.n_cells // slab))
        parts = np.zeros((n_slabs, m_size if acc is not None else 1))
        from pipeline.synth import _kernels

        kernel = _kernels.sparse_pass_parallel if n_slabs > 1 else _kernels.sparse_pass_serial
        maxima = kernel(
            self.codes_,
            self.x,
            self.prev if (crit or save) else self.x,
            slab,
            g,
            g_axes,
            g_strides,
            parts,
            m_axes,
            m_strides,
            apply is not None,
            acc is not None,
            crit,
            save,
        )
        margin = parts.sum(axis=0).reshape([self.shape[a] for a in acc]) if acc is not None else None
        return PassResult(margin, float(maxima[:, 0].max(initial=0.0)), float(maxima[:, 1].max(initial=0.0)))

    def divide(self, value: float) -> None:
        self.x /= value

    def slab_sums(self) -> np.ndarray:
        n_ranges = max(1, -(-self.n_cells // SLAB_CELLS))
        return np.array([self.x[r * SLAB_CELLS : (r + 1) * SLAB_CELLS].sum() for r in range(n_ranges)])

    def slab_values(self, r: int) -> tuple[np.ndarray, np.ndarray]:
        """Values of range ``r`` and the support position of each."""
        lo = r * SLAB_CELLS
        vals = self.x[lo : lo + SLAB_CELLS]
        return vals, np.arange(lo, lo + vals.size, dtype=np.int64)

    def codes(self, positions: np.ndarray) -> np.ndarray:
        return self.codes_[positions]

    def dense(self) -> np.ndarray:
        out = np.zeros(self.shape)
        if self.n_cells:
            out[tuple(self.codes_.T.astype(np.int64))] = self.x
        return out


def enumerate_support(
    shape: Sequence[int],
    margin_axes: Sequence[tuple[int, ...]],
    positive: Sequence[np.ndarray],
    excluded: Sequence[tuple[tuple[int, ...], np.ndarray]],
    max_cells: int,
) -> np.ndarray | None:
    """Cells all of whose margin projections are positive and that are not excluded.

    Built by successive joins: add one variable at a time and keep the partial cells that
    every margin (and exclusion) lying within the variables so far allows.

    Parameters
    ----------
    shape : sequence of int
    margin_axes : sequence of tuple of int
        Sorted axes of each margin.
    positive : sequence of bool ndarray
        Per margin, which of its cells are positive (shape = the margin's).
    excluded : sequence of (axes, bool ndarray)
        Structural-zero sets: a cell is excluded when its projection on ``axes`` is True.
    max_cells : int
        Give up (return ``None``) as soon as the support of the first variables exceeds this
        many cells.

    Returns
    -------
    ndarray (n_support, p) of uint8/uint16, or None
        Codes in increasing flat-index order.
    """
    p = len(shape)
    dtype = np.uint8 if max(shape) <= 256 else np.uint16
    checks = [*zip(margin_axes, positive, strict=True), *((a, ~e) for a, e in excluded)]
    cur = np.zeros((1, 0), dtype=dtype)
    for v in range(p):
        k = shape[v]
        rows = max(1, (1 << 22) // k)  # expand in chunks so that only the pruned cells accumulate
        kept = []
        for lo in range(0, cur.shape[0], rows):
            part = cur[lo : lo + rows]
            nxt = np.empty((part.shape[0] * k, v + 1), dtype=dtype)
            nxt[:, :v] = np.repeat(part, k, axis=0)
            nxt[:, v] = np.tile(np.arange(k, dtype=dtype), part.shape[0])
            keep = np.ones(nxt.shape[0], dtype=bool)
            for axes, allowed in checks:
                if axes and axes[-1] == v:
                    keep &= allowed[tuple(nxt[:, a].astype(np.int64) for a in axes)]
            kept.append(nxt[keep])
            if sum(len(c) for c in kept) > max_cells:
                return None
        cur = np.concatenate(kept) if kept else np.zeros((0, v + 1), dtype=dtype)
    return cur
