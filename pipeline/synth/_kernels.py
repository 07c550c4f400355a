"""Numba kernels of the IPF engines: one streaming pass over the fitted table.

A *pass* visits every cell once and can, in the same sweep,

* ``apply``   multiply the cell by a factor ``G`` that depends on a few variables only,
* ``acc``     add the (updated) cell to an accumulator ``M`` over a few variables (a margin),
* ``crit``    take ``max |X - prev|`` and ``max |X|`` (mipfp's stopping rule),
* ``save``    copy the cell into ``prev`` (the table at the start of the next cycle).

The cells are cut into *slabs* of a fixed number of cells (a function of the table and the
margins only). Each slab accumulates into its own row of ``parts`` and reports its own maxima;
the caller sums the rows in slab order. The result is therefore bit-for-bit the same whatever
the number of threads, and the same for a table held in one array or in slab-aligned blocks.

Each kernel is compiled twice: threaded (``prange`` over slabs) for tables of several slabs,
and serial for one slab, where starting threads would cost more than the pass (and a lot more
when the cores are busy).

Index arithmetic: the table is C-ordered with shape ``(lead..., tail...)``. For an axis set S,
the position of a cell in the S-array is ``sum(digit_a * stride_a)``; it is split into a
*head* part (lead axes, recomputed once per outer row) and a *tail* part (tail axes, looked
up in a precomputed array of length ``T``), so the inner loop is two gathers and a scatter.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(cache=True, inline="always")
def _head(o, lead, g_head, m_head):
    gh = 0
    mh = 0
    rem = o
    for ax in range(lead.size - 1, -1, -1):
        d = rem % lead[ax]
        rem //= lead[ax]
        gh += d * g_head[ax]
        mh += d * m_head[ax]
    return gh, mh


def _dense_pass(
    x, prev, cell0, slab, tail_size, lead, g, g_head, g_tail, parts, m_head, m_tail, m_run, apply, acc, crit, save
):
    """One pass over ``x`` = global cells ``[cell0, cell0 + x.size)``; ``cell0 % slab == 0``.

    ``m_run`` is the length of the runs of consecutive cells that share an accumulator cell
    (the trailing axes outside the accumulator); such a run is summed in a register and added
    once, which avoids a chain of read-modify-writes on one address.

    Returns an array ``(n_slabs, 2)``: per slab ``max |x - prev|`` and ``max |x|`` (zeros
    unless ``crit``). ``parts[s]`` receives slab s's accumulator when ``acc``.
    """
    n = x.size
    n_slabs = (n + slab - 1) // slab
    out = np.zeros((n_slabs, 2))
    for s in prange(n_slabs):
        start = cell0 + s * slab
        stop = min(cell0 + n, start + slab)
        mp = parts[s]
        cmax = 0.0
        xmax = 0.0
        for o in range(start // tail_size, (stop - 1) // tail_size + 1):
            gh, mh = _head(o, lead, g_head, m_head)
            t_start = max(0, start - o * tail_size)
            t_end = min(tail_size, stop - o * tail_size)
            base = o * tail_size - cell0
            plain = not crit and not save
            if m_run >= 8:  # sum each run in a register
                t = t_start
                while t < t_end:
                    r_end = min(t_end, (t // m_run + 1) * m_run)
                    run = 0.0
                    if apply and plain:
                        for u in range(t, r_end):
                            v = x[base + u] * g[gh + g_tail[u]]
                            x[base + u] = v
                            run += v
                    elif plain:
                        for u in range(t, r_end):
                            run += x[base + u]
                    else:
                        for u in range(t, r_end):
                            v = x[base + u]
                            if apply:
                                v = v * g[gh + g_tail[u]]
                                x[base + u] = v
                            run += v
                            if crit:
                                cmax = max(cmax, abs(v - prev[base + u]))
                                xmax = max(xmax, abs(v))
                            if save:
                                prev[base + u] = v
                    if acc:
                        mp[mh + m_tail[t]] += run
                    t = r_end
            elif apply and acc and plain:
                for u in range(t_start, t_end):
                    v = x[base + u] * g[gh + g_tail[u]]
                    x[base + u] = v
                    mp[mh + m_tail[u]] += v
            elif acc and plain:
                for u in range(t_start, t_end):
                    mp[mh + m_tail[u]] += x[base + u]
            else:
                for u in range(t_start, t_end):
                    v = x[base + u]
                    if apply:
                        v = v * g[gh + g_tail[u]]
                        x[base + u] = v
                    if acc:
                        mp[mh + m_tail[u]] += v
                    if crit:
                        cmax = max(cmax, abs(v - prev[base + u]))
                        xmax = max(xmax, abs(v))
                    if save:
                        prev[base + u] = v
        out[s, 0] = cmax
        out[s, 1] = xmax
    return out


def _sparse_pass(codes, x, prev, slab, g, g_axes, g_strides, parts, m_axes, m_strides, apply, acc, crit, save):
    """The same pass over a list of cells given by their level ``codes`` (one row per cell).

    ``g_axes``/``g_strides`` (and ``m_*``) give, for the factor (accumulator), which columns of
    ``codes`` enter its index and with which stride.
    """
    n = x.size
    n_slabs = (n + slab - 1) // slab
    out = np.zeros((n_slabs, 2))
    for s in prange(n_slabs):
        start = s * slab
        stop = min(n, start + slab)
        mp = parts[s]
        cmax = 0.0
        xmax = 0.0
        for i in range(start, stop):
            v = x[i]
            if apply:
                gi = 0
                for k in range(g_axes.size):
                    gi += np.int64(codes[i, g_axes[k]]) * g_strides[k]
                v = v * g[gi]
                x[i] = v
            if acc:
                mi = 0
                for k in range(m_axes.size):
                    mi += np.int64(codes[i, m_axes[k]]) * m_strides[k]
                mp[mi] += v
            if crit:
                d = abs(v - prev[i])
                if d > cmax:
                    cmax = d
                if abs(v) > xmax:
                    xmax = abs(v)
            if save:
                prev[i] = v
        out[s, 0] = cmax
        out[s, 1] = xmax
    return out


dense_pass_parallel = njit(parallel=True, cache=True)(_dense_pass)
dense_pass_serial = njit(cache=True)(_dense_pass)
sparse_pass_parallel = njit(parallel=True, cache=True)(_sparse_pass)
sparse_pass_serial = njit(cache=True)(_sparse_pass)
