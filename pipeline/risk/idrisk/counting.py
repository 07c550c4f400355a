"""Exact counting of candidate points inside per-query boxes, block by block, without O(n²).

The matching problem of identification risk is, for every target record ``i``: how many
synthetic records ``j`` share ``i``'s key block (the categorical values) and lie inside ``i``'s
box, one interval per continuous variable?  The boxes differ per record (a percentage radius
scales with the true value), so this is orthogonal range *counting* with arbitrary boxes.
Counting by enumerating matches costs Σ c_i, which grows quadratically with the data size, so
everything here counts without enumerating.

Positions instead of values
    Per continuous dimension the candidate points are sorted by (block, value) once.  A
    query's interval then becomes a half-open range ``[a, b)`` of positions in that order,
    found by a (galloping) binary search inside the query's block slice whose side encodes the
    strictness: open ``lo < v < hi`` gives ``a`` = first position with ``v > lo`` and ``b`` =
    first position with ``v >= hi``; closed swaps the sides.  The float64 comparisons are thus
    reproduced exactly, boundaries included, and a range never leaves its block, so blocks
    need no loop: they are just slices of one array.

One dimension
    ``c = b - a``.
Two dimensions
    An offline sweep over the first dimension's order with a Fenwick tree (over a bitmap) of
    the second dimension's positions (:func:`_sweep_2d`, compiled with numba).  Several
    second-dimension ranges per query are answered in the same sweep: cheap radius grids.
Three dimensions, block by block
    :func:`_count_3d_blocks` (what the matching uses): each key block's values are copied out,
    sorted (:func:`_argsort_float`) and counted by :func:`_count_3d_ranks` on the block's own
    arrays, every radius row reusing the sorts; small blocks compare every pair.
    :func:`_count_3d_ranks` is a segment tree over the dense ranks of the block's dimension with
    the fewest distinct values: a query's range of ranks splits into a few canonical nodes (age
    in years with a 10 % radius uses five levels), and per node a sweep over the second
    dimension with the bitmap Fenwick tree over the third counts the node's points.
Three or more, global index (:meth:`BoxIndex.count`)
    Divide and conquer over the first dimension (CDQ), all chunks of a level at once, each
    level a problem in one dimension fewer, down to a compiled three-dimensional divide and
    conquer that carries the chunk ids (:func:`_count_3d`): O(n log^(d-1) n).

The radius-independent parts (sort orders, sorted values, block slices) live in
:class:`BoxIndex` and are reused for every radius of a sweep.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def _stable_group_sort(order, order_groups, n_groups):  # pragma: no cover - compiled
    """Reorder ``order`` stably by its groups ``order_groups`` (``groups[order]``, gathered by
    the caller: one sequential pass instead of two random ones; a counting sort); also the
    group starts."""
    starts = np.zeros(n_groups + 1, dtype=np.int64)
    for k in range(order.shape[0]):
        starts[order_groups[k] + 1] += 1
    for g in range(n_groups):
        starts[g + 1] += starts[g]
    fill = starts[:-1].copy()
    out = np.empty_like(order)
    for k in range(order.shape[0]):
        g = order_groups[k]
        out[fill[g]] = order[k]
        fill[g] += 1
    return out, starts


@numba.njit(cache=True, nogil=True, inline="always")
def _before(value, key, right):  # pragma: no cover - compiled
    return value <= key if right else value < key


@numba.njit(cache=True, nogil=True, inline="always")
def _gallop(sorted_values, first, last, key, right, prev):  # pragma: no cover - compiled
    """First position in ``[first, last)`` whose value is ``> key`` (``right``) or ``>= key``
    (``last`` if none), galloping from the earlier answer ``prev``: O(log distance)."""
    p = min(max(prev, first), last)
    if p < last and _before(sorted_values[p], key, right):
        lo = p + 1  # the answer is > p: gallop right
        hi = last
        step = 1
        while lo + step - 1 < last:
            probe = lo + step - 1
            if _before(sorted_values[probe], key, right):
                lo = probe + 1
                step *= 2
            else:
                hi = probe
                break
    else:
        hi = p  # the answer is <= p: gallop left
        lo = first
        step = 1
        while hi - step >= first:
            probe = hi - step
            if _before(sorted_values[probe], key, right):
                lo = probe + 1
                break
            hi = probe
            step *= 2
    while lo < hi:
        mid = (lo + hi) >> 1
        if _before(sorted_values[mid], key, right):
            lo = mid + 1
        else:
            hi = mid
    return lo


@numba.njit(cache=True, nogil=True)
def _block_search(sorted_values, starts, groups, keys, right):  # pragma: no cover - compiled
    """Position of each ``keys[t]`` inside its block ``g = groups[t]``'s slice
    ``sorted_values[starts[g]:starts[g+1]]``: the first element ``> key`` (``right``) or
    ``>= key``, as a global position.

    Each key is found by a galloping search from the previous answer: with the queries listed
    by (block, centre) (the caller gathers them so, see :func:`query_visit_order`) consecutive
    keys are close, memory is read in order and each search costs O(log distance); any order
    is still answered correctly.
    """
    out = np.empty(keys.shape[0], dtype=np.int64)
    prev = 0
    for t in range(keys.shape[0]):
        g = groups[t]
        prev = _gallop(sorted_values, starts[g], starts[g + 1], keys[t], right, prev)
        out[t] = prev
    return out


@numba.njit(cache=True, nogil=True, inline="always")
def _popcount(x):  # pragma: no cover - compiled
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return (x * np.uint64(0x0101010101010101)) >> np.uint64(56)


@numba.njit(cache=True, nogil=True, inline="always")
def _prefix(tree, bits, p):  # pragma: no cover - compiled
    """Number of inserted positions < p: a Fenwick tree over 64-position words plus a popcount
    inside the word (positions are distinct, so one bit per position suffices)."""
    word = p >> 6
    total = np.int64(_popcount(bits[word] & ((np.uint64(1) << np.uint64(p & 63)) - np.uint64(1))))
    while word > 0:
        total += tree[word]
        word -= word & -word
    return total


@numba.njit(cache=True, nogil=True)
def _sweep_2d(ypos, kx_hi, kx_lo, ky_hi, ky_lo):  # pragma: no cover - compiled
    """``out[i, j]`` = number of points at x-positions ``[kx_lo[i], kx_hi[i])`` whose
    y-position lies in ``[ky_lo[i, j], ky_hi[i, j])``.

    ``ypos[k]`` is the (distinct) y-position of the point at x-position k.  Query events (``+``
    at ``kx_hi``, ``-`` at ``kx_lo``) are bucketed by x-position (a counting sort), their y
    bounds copied in event order (so the sweep reads memory sequentially), the points are
    inserted in x order, and each event reads its counts when exactly the points before its
    x-position are inserted.  The structure is a bitmap of inserted y-positions with a Fenwick
    tree over its 64-bit words: small enough to stay in cache.
    """
    n = ypos.shape[0]
    q = kx_hi.shape[0]
    n_j = ky_hi.shape[1]
    start = np.zeros(n + 2, dtype=np.int64)
    for i in range(q):
        start[kx_hi[i] + 1] += 1
        start[kx_lo[i] + 1] += 1
    for k in range(n + 1):
        start[k + 1] += start[k]
    fill = start.copy()
    event = np.empty(2 * q, dtype=np.int64)
    for i in range(q):
        event[fill[kx_hi[i]]] = i
        fill[kx_hi[i]] += 1
        event[fill[kx_lo[i]]] = -i - 1
        fill[kx_lo[i]] += 1
    bounds = np.empty((2 * q, 2 * n_j), dtype=np.int64)
    for e in range(2 * q):
        i = event[e] if event[e] >= 0 else -event[e] - 1
        for j in range(n_j):
            bounds[e, j] = ky_hi[i, j]
            bounds[e, n_j + j] = ky_lo[i, j]
    n_words = (n >> 6) + 1
    tree = np.zeros(n_words + 1, dtype=np.int64)
    bits = np.zeros(n_words, dtype=np.uint64)
    found = np.empty((2 * q, n_j), dtype=np.int64)
    for k in range(n + 1):
        for e in range(start[k], start[k + 1]):
            for j in range(n_j):
                found[e, j] = _prefix(tree, bits, bounds[e, j]) - _prefix(tree, bits, bounds[e, n_j + j])
        if k < n:
            y = ypos[k]
            bits[y >> 6] |= np.uint64(1) << np.uint64(y & 63)
            word = (y >> 6) + 1
            while word <= n_words:
                tree[word] += 1
                word += word & -word
    out = np.zeros((q, n_j), dtype=np.int64)
    for e in range(2 * q):
        code = event[e]
        if code >= 0:
            for j in range(n_j):
                out[code, j] += found[e, j]
        else:
            for j in range(n_j):
                out[-code - 1, j] -= found[e, j]
    return out


@numba.njit(cache=True, nogil=True, inline="always")
def _toggle(tree, bits, p, delta):  # pragma: no cover - compiled
    """Insert (``delta`` = 1) or remove (-1) position p in the bitmap and its word Fenwick tree."""
    word = p >> 6
    bits[word] ^= np.uint64(1) << np.uint64(p & 63)
    word += 1
    while word < tree.shape[0]:
        tree[word] += delta
        word += word & -word


@numba.njit(cache=True, nogil=True)
def _count_3d(point_groups, point_pos, groups, a, b, m):  # pragma: no cover - compiled
    """Three-dimensional box counts: ``out[i]`` = number of points of block ``groups[i]`` with
    ``a[i, k] <= point_pos[:, k] < b[i, k]`` for k = 0, 1, 2 (coordinates: integers below m,
    distinct per dimension).

    Every query becomes four signed corner events, one-sided in the first two dimensions
    (``x < b0`` +, ``x < a0`` -, times ``y < b1`` +, ``y < a1`` -), each asking how many points
    before it in x and y have a third coordinate in ``[a2, b2)``.  Events are sorted by x (a
    counting sort; a corner before a point of equal x, the test being strict) and then merge
    sorted by y bottom-up (divide and conquer over x): in the merge of two neighbouring
    chunks, the points of the left chunk that precede a corner of the right chunk in y are
    exactly the points inserted into a bitmap Fenwick tree over the third coordinate when the
    corner is reached; for positions s < t in x order there is exactly one such merge.  The
    block is folded into y (``block * m + y``), so the two y corners of a query cancel every
    point of another block.  Event data travel with the merge (sequential memory), and a
    chunk pair with no point on the left or no corner on the right skips the tree.
    O((n + q) log(n + q) log m) time, O(n + q + m) memory.
    """
    n = point_pos.shape[0]
    q = groups.shape[0]
    out = np.zeros(q, dtype=np.int64)
    live = np.empty(q, dtype=np.int64)  # queries with a non-empty box, ordered by a1 (local updates)
    n_live = 0
    fill = np.zeros(m + 2, dtype=np.int64)
    for i in range(q):
        if a[i, 0] < b[i, 0] and a[i, 1] < b[i, 1] and a[i, 2] < b[i, 2]:
            fill[a[i, 1] + 1] += 1
            n_live += 1
    if n == 0 or n_live == 0:
        return out
    for k in range(m + 1):
        fill[k + 1] += fill[k]
    for i in range(q):
        if a[i, 0] < b[i, 0] and a[i, 1] < b[i, 1] and a[i, 2] < b[i, 2]:
            live[fill[a[i, 1]]] = i
            fill[a[i, 1]] += 1
    n_ev = n + 4 * n_live  # events 0..n-1: points; n + 4t + c: corner c of live query t
    start = np.zeros(2 * m + 2, dtype=np.int64)
    for j in range(n):
        start[2 * point_pos[j, 0] + 2] += 1
    for t in range(n_live):
        start[2 * b[live[t], 0] + 1] += 2
        start[2 * a[live[t], 0] + 1] += 2
    for k in range(2 * m + 1):
        start[k + 1] += start[k]
    ev = np.empty(n_ev, dtype=np.int64)
    for j in range(n):
        x = 2 * point_pos[j, 0] + 1
        ev[start[x]] = j
        start[x] += 1
    for t in range(n_live):
        for c in range(4):
            x = 2 * (b[live[t], 0] if (c & 1) == 0 else a[live[t], 0])
            ev[start[x]] = n + 4 * t + c
            start[x] += 1
    points_before = np.zeros(n_ev + 1, dtype=np.int64)
    key = np.empty(n_ev, dtype=np.int64)  # 2 * (block * m + y), + 1 for a point: a corner first on ties
    z_lo = np.empty(n_ev, dtype=np.int64)  # a point's third coordinate, or a corner's a2
    z_hi = np.empty(n_ev, dtype=np.int64)  # a corner's b2
    for s in range(n_ev):
        e = ev[s]
        if e < n:
            points_before[s + 1] = points_before[s] + 1
            key[s] = 2 * (point_groups[e] * m + point_pos[e, 1]) + 1
            z_lo[s] = point_pos[e, 2]
            z_hi[s] = 0
        else:
            points_before[s + 1] = points_before[s]
            k = e - n
            i = live[k >> 2]
            key[s] = 2 * (groups[i] * m + (b[i, 1] if (k & 2) == 0 else a[i, 1]))
            z_lo[s] = a[i, 2]
            z_hi[s] = b[i, 2]
    acc = np.zeros(n_live, dtype=np.int64)
    ev2, key2, z_lo2, z_hi2 = np.empty_like(ev), np.empty_like(key), np.empty_like(z_lo), np.empty_like(z_hi)
    tree = np.zeros((m >> 6) + 2, dtype=np.int64)
    bits = np.zeros((m >> 6) + 1, dtype=np.uint64)
    width = 1
    while width < n_ev:
        for lo in range(0, n_ev, 2 * width):
            mid = min(lo + width, n_ev)
            hi = min(lo + 2 * width, n_ev)
            active = points_before[mid] > points_before[lo] and hi - mid > points_before[hi] - points_before[mid]
            i = lo
            j = mid
            for o in range(lo, hi):
                if j >= hi or (i < mid and key[i] < key[j]):
                    s = i
                    i += 1
                    if active and ev[s] < n:
                        _toggle(tree, bits, z_lo[s], 1)
                else:
                    s = j
                    j += 1
                    if active and ev[s] >= n:
                        k = ev[s] - n
                        found = _prefix(tree, bits, z_hi[s]) - _prefix(tree, bits, z_lo[s])
                        acc[k >> 2] += found if ((k & 1) ^ ((k >> 1) & 1)) == 0 else -found
                ev2[o] = ev[s]
                key2[o] = key[s]
                z_lo2[o] = z_lo[s]
                z_hi2[o] = z_hi[s]
            if active:
                for s in range(lo, mid):
                    if ev[s] < n:
                        _toggle(tree, bits, z_lo[s], -1)
        ev, ev2 = ev2, ev
        key, key2 = key2, key
        z_lo, z_lo2 = z_lo2, z_lo
        z_hi, z_hi2 = z_hi2, z_hi
        width *= 2
    for t in range(n_live):
        out[live[t]] = acc[t]
    return out


@numba.njit(cache=True, nogil=True)
def _count_3d_ranks(x_by_y, z_by_y, n_ranks, xa, xb, box):  # pragma: no cover - compiled
    """Three-dimensional box counts over a segment tree of x ranks: ``out[i]`` = number of
    points with ``xa[i] <= x rank < xb[i]``, ``box[i, 0] <= y < box[i, 1]`` and
    ``box[i, 2] <= z < box[i, 3]``.

    ``x_by_y[k]`` / ``z_by_y[k]`` are the x rank (in ``[0, n_ranks)``, ties share a rank) and
    the z position (distinct) of the point at y position k.  Each query's x range splits into
    the O(log length) canonical nodes of a segment tree over the ranks (bottom-up, level by
    level; only queries with nodes left stay active, their data carried along in y order so
    that memory is read nearly sequentially).  Per level the points are bucketed by node in
    y order and the query events (``-`` at ``box[i, 0]``, ``+`` at ``box[i, 1]``) by (node, y)
    with two counting sorts; per node a sweep over y inserts points into a bitmap Fenwick tree
    over z and each event reads its z range.  Points below every open query are skipped, and
    the tree is emptied whenever no query is open (only inserted points are removed).  A range
    of ``l`` ranks touches levels up to log2(l) only, so a dimension with few distinct values
    per block (age in years) costs a few levels: O((n + q) L + q log(l) log n) time for the L
    levels used, O(n + q + n_ranks) memory.
    """
    n = x_by_y.shape[0]
    q = xa.shape[0]
    out = np.zeros(q, dtype=np.int64)
    size = 1
    while size < n_ranks:
        size *= 2
    # live queries in order of their lower y bound: slot u holds query qid[u], its tree
    # indices [left, right) at the current level and its y and z ranges
    by_y = np.zeros(n + 2, dtype=np.int64)
    n_act = 0
    for i in range(q):
        if xa[i] < xb[i] and box[i, 0] < box[i, 1] and box[i, 2] < box[i, 3]:
            by_y[box[i, 0] + 1] += 1
            n_act += 1
    if n == 0 or n_act == 0:
        return out
    for k in range(n + 1):
        by_y[k + 1] += by_y[k]
    qid = np.empty(n_act, dtype=np.int64)
    left = np.empty(n_act, dtype=np.int64)
    right = np.empty(n_act, dtype=np.int64)
    rng = np.empty((n_act, 4), dtype=np.int64)
    for i in range(q):
        if xa[i] < xb[i] and box[i, 0] < box[i, 1] and box[i, 2] < box[i, 3]:
            u = by_y[box[i, 0]]
            by_y[box[i, 0]] += 1
            qid[u] = i
            left[u] = xa[i] + size
            right[u] = xb[i] + size
            for c in range(4):
                rng[u, c] = box[i, c]
    acc = np.zeros(n_act, dtype=np.int64)
    n_words = (n >> 6) + 1
    tree = np.zeros(n_words + 1, dtype=np.int64)
    bits = np.zeros(n_words, dtype=np.uint64)
    inserted = np.empty(n, dtype=np.int64)
    pt_y = np.empty(n, dtype=np.int64)
    pt_z = np.empty(n, dtype=np.int64)
    h = 0
    while n_act > 0:
        width = size >> h  # nodes of this level: tree indices width .. 2 * width - 1
        # events of this level, code 4 * u + 2 * side + plus, sorted by y then (stably) by node
        n_ev = 0
        by_y[:] = 0
        for u in range(n_act):
            sides = (left[u] & 1) + (right[u] & 1)
            if sides:
                n_ev += 2 * sides
                by_y[rng[u, 0] + 1] += sides
                by_y[rng[u, 1] + 1] += sides
        for k in range(n + 1):
            by_y[k + 1] += by_y[k]
        ev_y = np.empty(n_ev, dtype=np.int64)
        ev_start = np.zeros(width + 1, dtype=np.int64)
        for u in range(n_act):
            for side in range(2):
                tree_index = left[u] if side == 0 else right[u] - 1
                if (left[u] if side == 0 else right[u]) & 1:
                    ev_start[tree_index - width + 1] += 2
                    for plus in range(2):
                        y = rng[u, plus]
                        ev_y[by_y[y]] = 4 * u + 2 * side + plus
                        by_y[y] += 1
        for j in range(width):
            ev_start[j + 1] += ev_start[j]
        fill = ev_start[:-1].copy()
        ev = np.empty(n_ev, dtype=np.int64)
        for e in range(n_ev):
            code = ev_y[e]
            u = code >> 2
            j = (left[u] if (code & 2) == 0 else right[u] - 1) - width
            ev[fill[j]] = code
            fill[j] += 1
        pt_start = np.zeros(width + 1, dtype=np.int64)
        for k in range(n):
            pt_start[(x_by_y[k] >> h) + 1] += 1
        for j in range(width):
            pt_start[j + 1] += pt_start[j]
        fill = pt_start[:-1].copy()
        for k in range(n):
            j = x_by_y[k] >> h
            pt_y[fill[j]] = k
            pt_z[fill[j]] = z_by_y[k]
            fill[j] += 1
        for j in range(width):
            if ev_start[j] == ev_start[j + 1]:
                continue
            p = pt_start[j]
            p_end = pt_start[j + 1]
            n_open = 0
            top = 0
            for e in range(ev_start[j], ev_start[j + 1]):
                code = ev[e]
                u = code >> 2
                plus = code & 1
                y = rng[u, plus]
                if n_open == 0:  # a '-' event: nothing below it matters any more
                    for s in range(top):
                        _toggle(tree, bits, inserted[s], -1)
                    top = 0
                    while p < p_end and pt_y[p] < y:
                        p += 1
                    n_open = 1
                    continue
                while p < p_end and pt_y[p] < y:
                    _toggle(tree, bits, pt_z[p], 1)
                    inserted[top] = pt_z[p]
                    top += 1
                    p += 1
                found = _prefix(tree, bits, rng[u, 3]) - _prefix(tree, bits, rng[u, 2])
                if plus:
                    acc[u] += found
                    n_open -= 1
                else:
                    acc[u] -= found
                    n_open += 1
            for s in range(top):
                _toggle(tree, bits, inserted[s], -1)
        kept = 0
        for u in range(n_act):
            lo = left[u] + (left[u] & 1)
            hi = right[u] - (right[u] & 1)
            if (lo >> 1) < (hi >> 1):
                qid[kept] = qid[u]
                left[kept] = lo >> 1
                right[kept] = hi >> 1
                acc[kept] = acc[u]
                for c in range(4):
                    rng[kept, c] = rng[u, c]
                kept += 1
            else:
                out[qid[u]] = acc[u]
        n_act = kept
        h += 1
    return out


#: below this many values a comparison sort beats the radix passes' histogram set-up
RADIX_MIN = 256
_DIGIT_BITS = 11
_N_DIGITS = 6  # 6 x 11 bits cover the 64 bits of a float64 key


@numba.njit(cache=True, nogil=True)
def _argsort_float(values):  # pragma: no cover - compiled
    """Indices that sort the float64 ``values`` (no NaN) in increasing order; equal values in
    any order.

    A least-significant-digit radix sort of the bit patterns mapped to unsigned integers of the
    same order (sign bit flipped for positives, all bits for negatives): 11-bit digits, all six
    histograms in one pass, a digit shared by every value skipped (whole numbers leave the low
    mantissa digits constant).  Short inputs use ``np.argsort``.
    """
    n = values.shape[0]
    if n < RADIX_MIN:
        return np.argsort(values)
    sign = np.uint64(1) << np.uint64(63)
    mask = np.uint64((1 << _DIGIT_BITS) - 1)
    keys = np.empty(n, dtype=np.uint64)
    counts = np.zeros((_N_DIGITS, (1 << _DIGIT_BITS) + 1), dtype=np.int64)
    bits = values.view(np.uint64)
    for i in range(n):
        u = bits[i]
        u = ~u if u & sign else u | sign
        keys[i] = u
        for p in range(_N_DIGITS):
            counts[p, ((u >> np.uint64(p * _DIGIT_BITS)) & mask) + 1] += 1
    order = np.arange(n)
    keys2 = np.empty_like(keys)
    order2 = np.empty_like(order)
    for p in range(_N_DIGITS):
        shift = np.uint64(p * _DIGIT_BITS)
        if counts[p].max() == n:  # one digit value for all: this pass would not move anything
            continue
        start = counts[p]
        for b in range(1 << _DIGIT_BITS):
            start[b + 1] += start[b]
        for i in range(n):
            b = (keys[i] >> shift) & mask
            keys2[start[b]] = keys[i]
            order2[start[b]] = order[i]
            start[b] += 1
        keys, keys2 = keys2, keys
        order, order2 = order2, order
    return order


#: blocks with at most this many (query, point) pairs are counted by comparing every pair: below
#: it the tree's set-up (sorts, ranks, per-level buckets) costs more than the comparisons
SMALL_BLOCK_PAIRS = 4096

#: radius rows of a block go through one segment-tree sweep together, as up to this many
#: (radius row, query) boxes: the points are bucketed per level and inserted per node once for
#: all of them instead of once per radius row; the bound keeps the sweep's arrays (about 100
#: bytes a box) near 100 MB
STACKED_BOXES = 1 << 20


@numba.njit(cache=True, nogil=True, inline="always")
def _half_widths(x, radii, percentage, euclidean, known, known_order, syn_order, out):  # pragma: no cover - compiled
    """Half-width of every dimension of one query, with the arithmetic (and order of the
    additions) of :func:`~pipeline.risk.idrisk.matching.box_bounds`, so the float64 bounds are
    identical."""
    d = x.shape[0]
    for k in range(d):
        out[k] = radii[k] * x[k] if percentage else radii[k]
    if euclidean:
        r_known = 0.0
        for k in known_order:
            r_known = r_known + out[k] * out[k]
        r_known = np.sqrt(r_known)
        r_syn = r_known
        for k in syn_order:
            r_syn = r_syn + out[k] * out[k]
        r_syn = np.sqrt(r_syn)
        for k in range(d):
            out[k] = r_known if known[k] else r_syn


@numba.njit(cache=True, nogil=True)
def _count_3d_blocks(
    q_order,
    q_starts,
    q_values,
    p_order,
    p_starts,
    p_values,
    radii,
    percentage,
    euclidean,
    known_order,
    syn_order,
    closed,
    max_boxes=STACKED_BOXES,
):  # pragma: no cover - compiled
    """Three-dimensional box counts block by block: ``out[c, i]`` = number of points of query
    i's block inside its box for radius row ``radii[c]`` (open ``lo < v < hi`` or closed;
    half-widths as :func:`_half_widths`, with ``euclidean`` pooling the known dimensions
    ``known_order`` and the synthesised ``syn_order`` in those orders).

    ``q_order``/``q_starts`` and ``p_order``/``p_starts`` list the queries and the points of
    every block (:func:`group_slices`).  A block's values are copied out once and every radius
    row reuses its sorts: everything a block touches stays in cache, and no array of the size
    of the data is allocated.  A block with few (query, point) pairs
    (:data:`SMALL_BLOCK_PAIRS`) compares every pair; a larger one sorts each dimension of its
    points, turns every box into position ranges (binary searches, the side giving the
    strictness, so the float64 comparisons are reproduced exactly) and counts them with the
    segment-tree sweep :func:`_count_3d_ranks` over the ranks of its dimension with the fewest
    distinct values — the boxes of as many consecutive radius rows as fit ``max_boxes`` in one
    sweep (:data:`STACKED_BOXES`), so a radius grid buckets and inserts the block's points once
    per level and node, not once per radius row.
    """
    d = 3
    known = np.zeros(d, dtype=np.bool_)
    for k in known_order:
        known[k] = True
    n_radii = radii.shape[0]
    out = np.zeros((n_radii, q_order.shape[0]), dtype=np.int64)
    half = np.empty(d, dtype=np.float64)
    for g in range(q_starts.shape[0] - 1):
        q0, q1 = q_starts[g], q_starts[g + 1]
        p0, p1 = p_starts[g], p_starts[g + 1]
        nq, n = q1 - q0, p1 - p0
        if nq == 0 or n == 0:
            continue
        qv = np.empty((nq, d), dtype=np.float64)
        for t in range(nq):
            for k in range(d):
                qv[t, k] = q_values[q_order[q0 + t], k]
        pv = np.empty((d, n), dtype=np.float64)
        for j in range(n):
            for k in range(d):
                pv[k, j] = p_values[p_order[p0 + j], k]
        if nq * n <= SMALL_BLOCK_PAIRS:
            for c in range(n_radii):
                for t in range(nq):
                    _half_widths(qv[t], radii[c], percentage, euclidean, known, known_order, syn_order, half)
                    found = 0
                    for j in range(n):
                        inside = True
                        for k in range(d):
                            v = pv[k, j]
                            lo = qv[t, k] - half[k]
                            hi = qv[t, k] + half[k]
                            if (v < lo or v > hi) if closed else (v <= lo or v >= hi):
                                inside = False
                                break
                        found += inside
                    out[c, q_order[q0 + t]] = found
            continue
        sorted_values = np.empty((d, n), dtype=np.float64)
        pos = np.empty((d, n), dtype=np.int64)
        distinct = np.ones(d, dtype=np.int64)
        for k in range(d):
            order = _argsort_float(pv[k])
            for r in range(n):
                sorted_values[k, r] = pv[k, order[r]]
                pos[k, order[r]] = r
                if r and sorted_values[k, r] != sorted_values[k, r - 1]:
                    distinct[k] += 1
        x = np.argmin(distinct)
        y = 1 if x == 0 else 0
        z = 1 if x == 2 else 2
        n_x = distinct[x]
        x_values = np.empty(n_x, dtype=np.float64)  # the distinct x values: value i has rank i
        rank = np.empty(n, dtype=np.int64)  # rank of the x value at each x position
        r = -1
        for p in range(n):
            if p == 0 or sorted_values[x, p] != sorted_values[x, p - 1]:
                r += 1
                x_values[r] = sorted_values[x, p]
            rank[p] = r
        x_by_y = np.empty(n, dtype=np.int64)
        z_by_y = np.empty(n, dtype=np.int64)
        for j in range(n):
            x_by_y[pos[y, j]] = rank[pos[x, j]]
            z_by_y[pos[y, j]] = pos[z, j]
        # queries in order of their centre in each dimension: consecutive bounds are close, so
        # each search gallops a short way from the previous answer
        by_centre = np.empty((d, nq), dtype=np.int64)
        for k in range(d):
            by_centre[k] = _argsort_float(qv[:, k].copy())
        halves = np.empty((nq, d), dtype=np.float64)
        ranges = np.empty((nq, 2 * d), dtype=np.int64)  # [a, b) per dimension; x: a range of ranks
        # consecutive radius rows stacked as the boxes of one sweep (row c0 + r: boxes r*nq ...)
        rows = max(1, min(n_radii, max_boxes // nq))
        xa = np.empty(rows * nq, dtype=np.int64)
        xb = np.empty(rows * nq, dtype=np.int64)
        box = np.empty((rows * nq, 4), dtype=np.int64)
        for c0 in range(0, n_radii, rows):
            c1 = min(n_radii, c0 + rows)
            for c in range(c0, c1):
                for t in range(nq):
                    _half_widths(qv[t], radii[c], percentage, euclidean, known, known_order, syn_order, halves[t])
                for k in range(d):
                    # x: a range of positions starts and ends at value changes, so it is the range of
                    # ranks found among the distinct values
                    searched = x_values if k == x else sorted_values[k]
                    a = 0
                    b = 0
                    for t in by_centre[k]:
                        a = _gallop(searched, 0, searched.shape[0], qv[t, k] - halves[t, k], not closed, a)
                        b = _gallop(searched, 0, searched.shape[0], qv[t, k] + halves[t, k], closed, b)
                        ranges[t, 2 * k] = a
                        ranges[t, 2 * k + 1] = b
                at = (c - c0) * nq
                for t in range(nq):
                    xa[at + t] = ranges[t, 2 * x]
                    xb[at + t] = ranges[t, 2 * x + 1]
                    box[at + t, 0] = ranges[t, 2 * y]
                    box[at + t, 1] = ranges[t, 2 * y + 1]
                    box[at + t, 2] = ranges[t, 2 * z]
                    box[at + t, 3] = ranges[t, 2 * z + 1]
            m = (c1 - c0) * nq
            found = _count_3d_ranks(x_by_y, z_by_y, n_x, xa[:m], xb[:m], box[:m])
            for c in range(c0, c1):
                for t in range(nq):
                    out[c, q_order[q0 + t]] = found[(c - c0) * nq + t]
    return out


def group_slices(groups: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices of the records listed block by block (each block in record order) and the start
    of every block in that list: a counting sort, O(n + n_groups)."""
    groups = np.ascontiguousarray(groups, dtype=np.int64)
    return _stable_group_sort(np.arange(len(groups), dtype=np.int64), groups, int(n_groups))


def block_order(groups: np.ndarray, values: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices sorting records by (block, value), and the start of every block in that order."""
    by_value = np.argsort(values).astype(np.int64)  # ties in any order: only (block, value) matters
    return _stable_group_sort(by_value, groups[by_value], n_groups)


class BoxIndex:
    """Radius-independent index of candidate points: per dimension, their (block, value) order.

    Parameters
    ----------
    groups : ndarray of int, shape (n,)
        Key-block id of every candidate point, in ``[0, n_groups)``.
    values : ndarray of float64, shape (n, d)
        Continuous coordinates of the candidate points (no NaN).
    n_groups : int
        Number of block ids (queries may use any id below it, including ones without points).
    """

    def __init__(self, groups: np.ndarray, values: np.ndarray, n_groups: int) -> None:
        self.groups = np.ascontiguousarray(groups, dtype=np.int64)
        values = np.asarray(values, dtype=np.float64)
        self.n, self.d = values.shape
        self.n_groups = int(n_groups)
        self.sorted_values: list[np.ndarray] = []
        self.starts: list[np.ndarray] = []
        self.positions = np.empty((self.n, self.d), dtype=np.int64)  # position of each point per dim
        for k in range(self.d):
            order, starts = block_order(self.groups, values[:, k], self.n_groups)
            self.sorted_values.append(np.ascontiguousarray(values[order, k]))
            self.starts.append(starts)
            self.positions[order, k] = np.arange(self.n, dtype=np.int64)
        if self.d == 0:
            self.group_sizes = np.bincount(self.groups, minlength=self.n_groups)
        self._ypos: dict[int, np.ndarray] = {}

    def ypos(self, x_dim: int) -> np.ndarray:
        """Position in the other dimension of each point, listed in ``x_dim`` order (2-D only)."""
        if x_dim not in self._ypos:
            x_order = np.empty(self.n, dtype=np.int64)
            x_order[self.positions[:, x_dim]] = np.arange(self.n, dtype=np.int64)
            self._ypos[x_dim] = np.ascontiguousarray(self.positions[x_order, 1 - x_dim])
        return self._ypos[x_dim]

    def bounds(
        self, groups: np.ndarray, lo: np.ndarray, hi: np.ndarray, closed: bool, visit: list[np.ndarray]
    ) -> tuple[np.ndarray, np.ndarray]:
        """Position ranges ``[a, b)``, shape (q, d), of the float boxes ``lo``/``hi`` (shape (q, d)).

        ``visit[k]`` is an order of the queries for the searches of dimension k (any
        permutation is correct; :func:`query_visit_order` is fastest).
        """
        a = np.empty(lo.shape, dtype=np.int64)
        b = np.empty(hi.shape, dtype=np.int64)
        for k in range(self.d):
            a[:, k], b[:, k] = self.bound_dim(k, groups, lo[:, k], hi[:, k], closed, visit[k])
        return a, b

    def bound_dim(
        self, k: int, groups: np.ndarray, lo: np.ndarray, hi: np.ndarray, closed: bool, visit: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Position range ``[a, b)`` in dimension ``k`` of the intervals ``lo``/``hi`` (1-D)."""
        sv, st = self.sorted_values[k], self.starts[k]
        g = np.asarray(groups, dtype=np.int64)[visit]
        a = np.empty(len(visit), dtype=np.int64)
        b = np.empty(len(visit), dtype=np.int64)
        a[visit] = _block_search(sv, st, g, np.asarray(lo, dtype=np.float64)[visit], not closed)
        b[visit] = _block_search(sv, st, g, np.asarray(hi, dtype=np.float64)[visit], closed)
        return a, b

    def count_exact(self, groups: np.ndarray) -> np.ndarray:
        """Number of points in each query's block (no continuous dimension)."""
        return self.group_sizes[np.asarray(groups, dtype=np.int64)].astype(np.int64)

    def count(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Number of points with ``a[:, k] <= position_k < b[:, k]`` in every dimension k."""
        a = np.minimum(a, b)  # an empty range stays empty and inclusion-exclusion stays exact
        if self.d == 1:
            return (b[:, 0] - a[:, 0]).astype(np.int64)
        if self.d == 2:
            return self.count_2d_many(a[:, 0], b[:, 0], a[:, 1:2], b[:, 1:2])[:, 0]
        a = np.ascontiguousarray(a, dtype=np.int64)
        b = np.ascontiguousarray(b, dtype=np.int64)
        zero = np.zeros(self.n, dtype=np.int64)
        return _count_cdq(zero, self.positions, np.zeros(len(a), dtype=np.int64), a, b, self.n + 1)

    def count_2d_many(
        self, ax: np.ndarray, bx: np.ndarray, ay: np.ndarray, by: np.ndarray, x_dim: int = 0
    ) -> np.ndarray:
        """Two dimensions, one range in ``x_dim`` and J ranges in the other dimension per query
        (``ay``/``by`` of shape (q, J)): counts of shape (q, J)."""
        ax = np.minimum(ax, bx)
        ay = np.minimum(ay, by)
        return _sweep_2d(
            self.ypos(x_dim),
            np.ascontiguousarray(bx, dtype=np.int64),
            np.ascontiguousarray(ax, dtype=np.int64),
            np.ascontiguousarray(by, dtype=np.int64),
            np.ascontiguousarray(ay, dtype=np.int64),
        )


def query_visit_order(groups: np.ndarray, centres: np.ndarray, n_groups: int) -> np.ndarray:
    """Order of queries by (block, centre): their bounds are then nearly sorted, so the binary
    searches of :meth:`BoxIndex.bounds` touch memory almost sequentially."""
    return block_order(np.ascontiguousarray(groups, dtype=np.int64), centres, n_groups)[0]


def _count_cdq(
    point_groups: np.ndarray, point_pos: np.ndarray, groups: np.ndarray, a: np.ndarray, b: np.ndarray, m: int
) -> np.ndarray:
    """Box counts in d >= 3 dimensions by divide and conquer over the first dimension.

    The first-dimension range ``[a0, b0)`` is split into two one-sided corners (``< b0`` with
    sign +, ``< a0`` with sign -).  Points and corners are sorted by (sub-block, first
    coordinate), a corner before a point of equal value (the test is strict).  A point counts
    for a corner iff it comes earlier in that order within the same sub-block; for positions
    p < q there is exactly one level at which p lies in the left and q in the right half of
    the same aligned chunk of size 2^(level+1).  Each level is one sub-problem in the remaining
    dimensions, with the chunk folded into the sub-block id, solved recursively down to three
    dimensions (:func:`_count_3d`).  The level loop has log2(n) iterations; nothing loops over
    records or blocks in Python.
    """
    q = len(groups)
    if point_pos.shape[1] == 3:
        return _count_3d(*(np.ascontiguousarray(v, dtype=np.int64) for v in (point_groups, point_pos, groups, a, b)), m)
    n = len(point_groups)
    counts = np.zeros(q, dtype=np.int64)
    if n == 0 or q == 0:
        return counts
    ev_group = np.concatenate([point_groups, groups, groups])
    ev_value = np.concatenate([point_pos[:, 0], b[:, 0], a[:, 0]])
    ev_is_point = np.concatenate([np.ones(n, dtype=bool), np.zeros(2 * q, dtype=bool)])
    order = np.lexsort((ev_is_point, ev_value, ev_group))
    grp = ev_group[order]
    is_point = ev_is_point[order]
    positions = np.arange(len(order), dtype=np.int64)
    levels = max(1, int(np.ceil(np.log2(len(order)))))
    for level in range(levels):
        in_right = ((positions >> level) & 1).astype(bool)
        take = is_point != in_right  # points of left halves, corners of right halves
        if not (take & is_point).any() or not (take & ~is_point).any():
            continue
        sel_grp = grp[take]
        sel_chunk = positions[take] >> (level + 1)
        change = np.ones(len(sel_grp), dtype=bool)
        change[1:] = (sel_grp[1:] != sel_grp[:-1]) | (sel_chunk[1:] != sel_chunk[:-1])
        sub_group = np.cumsum(change) - 1  # compact (block, chunk) id, increasing along the order
        sel_is_point = is_point[take]
        sel_source = order[take]
        p_idx = sel_source[sel_is_point]
        corner = sel_source[~sel_is_point] - n  # 0..q-1 upper corners, q..2q-1 lower corners
        query = corner % q
        sign = np.where(corner < q, 1, -1)
        sub = _count_cdq(
            sub_group[sel_is_point], point_pos[p_idx, 1:], sub_group[~sel_is_point], a[query, 1:], b[query, 1:], m
        )
        counts += np.bincount(query, weights=sign * sub, minlength=q).round().astype(np.int64)
    return counts
