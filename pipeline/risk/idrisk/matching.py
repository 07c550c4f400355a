"""Per-block kernel: c_i and T_i of every target record for every synthetic set and radius.

A block (pandas) holds whole key blocks of the original and of every synthetic set (see
:meth:`~pipeline.evaluation.execution.Executor.key_blocks`); in memory it is the whole data.
Everything here is vectorised over records and key combinations; the only Python loops run
over synthetic sets, continuous dimensions and radius values.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numba
import numpy as np
import pandas as pd

from pipeline.blocks import ROW_COLUMN
from pipeline.risk.idrisk.counting import BoxIndex, _count_3d_blocks, group_slices, query_visit_order
from pipeline.risk.idrisk.plan import MatchPlan


@numba.njit(cache=True, nogil=True)
def _combine(combined, codes, width):  # pragma: no cover - compiled
    """Mixed-radix step ``combined * width + codes`` (-1 where either is missing)."""
    out = np.empty(combined.shape[0], dtype=np.int64)
    for i in range(combined.shape[0]):
        out[i] = -1 if combined[i] < 0 or codes[i] < 0 else combined[i] * width + codes[i]
    return out


def _column_codes(series: Sequence[pd.Series]) -> tuple[list[np.ndarray], int]:
    """Codes of one variable in several frames over one shared vocabulary of values (-1 = missing)."""
    if all(isinstance(s.dtype, pd.CategoricalDtype) for s in series):
        cats = [s.cat.categories for s in series]
        vocab = cats[0]
        for c in cats[1:]:
            if not c.equals(vocab):
                vocab = vocab.append(c.difference(vocab, sort=False))
        out = []
        for s, c in zip(series, cats, strict=True):
            codes = s.cat.codes.to_numpy().astype(np.int64)
            if not c.equals(vocab):
                mapping = vocab.get_indexer(c).astype(np.int64)
                codes = np.where(codes >= 0, mapping[np.maximum(codes, 0)], -1)
            out.append(codes)
        return out, len(vocab)
    values = [s.to_numpy() for s in series]
    if all(np.issubdtype(v.dtype, np.number) for v in values):
        joined = np.concatenate([v.astype(np.float64) + 0.0 for v in values])  # -0.0 == 0.0, as in R
    else:
        joined = np.concatenate([np.asarray(v, dtype=object) for v in values])
    codes, uniques = pd.factorize(joined, use_na_sentinel=True)
    codes = codes.astype(np.int64)
    bounds = np.cumsum([0] + [len(v) for v in values])
    return [codes[bounds[k] : bounds[k + 1]] for k in range(len(values))], len(uniques)


def group_codes(columns: Sequence[str], frames: Sequence[pd.DataFrame]) -> tuple[list[np.ndarray], int]:
    """Key-block id of every record of every frame (shared ids; -1 if a key value is missing).

    Returns the ids per frame and the number of ids (the mixed-radix codes themselves when
    they are no more than the records, else renumbered densely).
    """
    sizes = [len(f) for f in frames]
    if not columns:
        return [np.zeros(n, dtype=np.int64) for n in sizes], 1
    combined: list[np.ndarray] | None = None
    card = 1
    for col in columns:
        codes, n_values = _column_codes([f[col] for f in frames])
        if combined is None:
            combined, card = codes, n_values
            continue
        if card * max(n_values, 1) >= 2**62:  # keep the mixed-radix code inside int64
            combined, card = _compact(combined)
        width = max(n_values, 1)
        combined = [_combine(a, b, width) for a, b in zip(combined, codes, strict=True)]
        card *= width
    assert combined is not None
    if card > max(sum(sizes), 1):
        return _compact(combined)
    return combined, card


def _compact(keys: list[np.ndarray]) -> tuple[list[np.ndarray], int]:
    """Renumber non-negative keys 0..G-1 consistently over all frames."""
    lengths = np.cumsum([0] + [len(k) for k in keys])
    allk = np.concatenate(keys) if keys else np.zeros(0, dtype=np.int64)
    valid = allk >= 0
    ids = np.full(len(allk), -1, dtype=np.int64)
    codes, uniques = pd.factorize(allk[valid])
    ids[valid] = codes
    return [ids[lengths[k] : lengths[k + 1]] for k in range(len(keys))], max(len(uniques), 1)


def box_bounds(plan: MatchPlan, x: np.ndarray, radii: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Interval ``(lo, hi)`` per record and continuous variable, exactly as the package does it.

    The half-width is ``rho = r * x`` (percentage) or ``r``; it is computed once and the bounds
    are ``x - rho`` and ``x + rho`` in float64 (never ``x * (1 - r)``, which rounds differently).
    With ``euclidean`` every known continuous variable uses ``R_K = sqrt(sum_known rho^2)`` and
    every synthesised one ``R_S = sqrt(R_K + sum_syn rho^2)`` — R_K enters unsquared, as in the
    package's C++.
    """
    with np.errstate(invalid="ignore"):  # non-finite x (na_action="no_match") gives NaN bounds: no match
        return _box_bounds(plan, x, radii)


def euclidean_orders(plan: MatchPlan) -> tuple[list[int], list[int]]:
    """Continuous dimensions of the known and of the synthesised variables, in the order of the
    known/syn lists: the order in which the package accumulates the squared half-widths."""
    known = [k for k, is_known in enumerate(plan.continuous_known) if is_known]
    syn = [k for k, is_known in enumerate(plan.continuous_known) if not is_known]
    return (
        sorted(known, key=lambda k: plan.known.index(plan.continuous[k])),
        sorted(syn, key=lambda k: plan.synthesised.index(plan.continuous[k])),
    )


def _box_bounds(plan: MatchPlan, x: np.ndarray, radii: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    rho = radii[None, :] * x if plan.percentage else np.broadcast_to(radii[None, :], x.shape)
    if plan.euclidean:
        order_known, order_syn = euclidean_orders(plan)
        known, syn = sorted(order_known), sorted(order_syn)
        r_known = np.zeros(len(x))
        for k in order_known:
            r_known = r_known + rho[:, k] * rho[:, k]
        r_known = np.sqrt(r_known)
        r_syn = r_known.copy()
        for k in order_syn:
            r_syn = r_syn + rho[:, k] * rho[:, k]
        r_syn = np.sqrt(r_syn)
        half = np.empty_like(x)
        for k in known:
            half[:, k] = r_known
        for k in syn:
            half[:, k] = r_syn
    else:
        half = rho
    return x - half, x + half


def _inside(plan: MatchPlan, y: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    if plan.closed:
        return np.all((y >= lo) & (y <= hi), axis=1)
    return np.all((y > lo) & (y < hi), axis=1)


def _continuous_values(frame: pd.DataFrame, plan: MatchPlan) -> np.ndarray:
    if not plan.continuous:
        return np.empty((len(frame), 0), dtype=np.float64)
    return np.column_stack([frame[v].to_numpy(dtype=np.float64, na_value=np.nan) for v in plan.continuous])


class SetMatcher:
    """Everything about one synthetic set in one partition that does not depend on the radius.

    Built once per (partition, synthetic set); :meth:`counts` then evaluates any number of
    radius combinations, reusing the candidate index and the query orders.
    """

    def __init__(
        self,
        plan: MatchPlan,
        query_groups: np.ndarray,
        query_values: np.ndarray,
        query_valid: np.ndarray,
        visit: list[np.ndarray],
        cand_groups: np.ndarray,
        cand_values: np.ndarray,
        n_groups: int,
        own: np.ndarray,
    ) -> None:
        self.plan = plan
        self.n = len(query_groups)
        self.qi = np.flatnonzero(query_valid)  # queries that can match anything
        every_query = len(self.qi) == self.n
        self.qg = query_groups if every_query else query_groups[self.qi]
        self.qx = query_values if every_query else query_values[self.qi]
        self.visit = visit
        cand_valid = (cand_groups >= 0) & np.all(np.isfinite(cand_values), axis=1)
        every_cand = bool(cand_valid.all())
        self.d = cand_values.shape[1]
        self.index: BoxIndex | None = None
        if self.d == 3:  # counted block by block (no global index): both sides listed by block
            self.cand_values = cand_values if every_cand else cand_values[cand_valid]
            self.query_slices = group_slices(self.qg, n_groups)
            self.cand_slices = group_slices(cand_groups if every_cand else cand_groups[cand_valid], n_groups)
        else:
            self.index = (
                BoxIndex(cand_groups, cand_values, n_groups)
                if every_cand
                else BoxIndex(cand_groups[cand_valid], cand_values[cand_valid], n_groups)
            )
        # the target's own synthetic row: present in this partition, same key block, no NaN
        if len(cand_groups):
            own_row = np.where(own >= 0, own, 0)
            own_ok = (own >= 0) & (cand_groups[own_row] == query_groups)
            if not every_query:
                own_ok &= query_valid
            if not every_cand:
                own_ok &= cand_valid[own_row]
            self.own_ok = own_ok
            self.own_values = cand_values[own_row]
        else:
            self.own_ok = np.zeros(self.n, dtype=bool)
            self.own_values = np.full(query_values.shape, np.nan)
        self.query_values = query_values

    def counts(self, combos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """c (int64) and T (bool), both shape (n_combos, n), for radius rows ``combos`` (K, d)."""
        plan, d = self.plan, self.d
        k_combos = max(len(combos), 1)
        if self.index is not None and d == 0:
            counts = np.broadcast_to(self.index.count_exact(self.qg), (k_combos, len(self.qi)))
            return self._scatter(counts), np.repeat(self.own_ok[None, :], k_combos, axis=0)
        t = self._own_matches(combos)
        if self.index is None:
            return self._scatter(self._counts_3d(combos)), t
        if d == 2 and not plan.euclidean:
            return self._scatter(self._counts_2d_grid(combos)), t
        counts = np.empty((k_combos, len(self.qi)), dtype=np.int64)
        cache: dict[tuple[int, float], tuple[np.ndarray, np.ndarray]] = {}
        for k, radii in enumerate(combos):
            if plan.euclidean:
                lo, hi = box_bounds(plan, self.qx, radii)
                a, b = self.index.bounds(self.qg, lo, hi, plan.closed, self.visit)
            else:
                a = np.empty((len(self.qi), d), dtype=np.int64)
                b = np.empty((len(self.qi), d), dtype=np.int64)
                for dim in range(d):
                    a[:, dim], b[:, dim] = self._dim_bounds(dim, float(radii[dim]), cache)
            counts[k] = self.index.count(a, b)
        return self._scatter(counts), t

    def _counts_3d(self, combos: np.ndarray) -> np.ndarray:
        """Three continuous dimensions, every radius row in one pass over the key blocks
        (:func:`~pipeline.risk.idrisk.counting._count_3d_blocks`: each block sorted once)."""
        order_known, order_syn = euclidean_orders(self.plan)
        return _count_3d_blocks(
            *self.query_slices,
            np.ascontiguousarray(self.qx, dtype=np.float64),
            *self.cand_slices,
            np.ascontiguousarray(self.cand_values, dtype=np.float64),
            np.ascontiguousarray(combos, dtype=np.float64),
            self.plan.percentage,
            self.plan.euclidean,
            np.array(order_known, dtype=np.int64),
            np.array(order_syn, dtype=np.int64),
            self.plan.closed,
        )

    def _scatter(self, counts: np.ndarray) -> np.ndarray:
        """Counts of the valid queries -> counts of all records (0 for the others)."""
        if len(self.qi) == self.n:
            return np.ascontiguousarray(counts, dtype=np.int64)
        c = np.zeros((counts.shape[0], self.n), dtype=np.int64)
        c[:, self.qi] = counts
        return c

    def _own_matches(self, combos: np.ndarray) -> np.ndarray:
        """T per combination: the own synthetic row lies in the box.  Without the Euclidean
        option each dimension's test depends on its own radius only and is computed once per
        (dimension, radius)."""
        t = np.empty((len(combos), self.n), dtype=bool)
        if self.plan.euclidean:
            for k, radii in enumerate(combos):
                lo, hi = box_bounds(self.plan, self.query_values, radii)
                t[k] = self.own_ok & _inside(self.plan, self.own_values, lo, hi)
            return t
        per_dim: dict[tuple[int, float], np.ndarray] = {}
        for k, radii in enumerate(combos):
            t[k] = self.own_ok
            for dim, r in enumerate(radii):
                key = (dim, float(r))
                if key not in per_dim:
                    x = self.query_values[:, dim : dim + 1]
                    rho = r * x if self.plan.percentage else np.full(x.shape, r)
                    with np.errstate(invalid="ignore"):  # non-finite x: NaN bounds, no match
                        per_dim[key] = _inside(self.plan, self.own_values[:, dim : dim + 1], x - rho, x + rho)
                t[k] &= per_dim[key]
        return t

    def _dim_bounds(
        self, dim: int, r: float, cache: dict[tuple[int, float], tuple[np.ndarray, np.ndarray]]
    ) -> tuple[np.ndarray, np.ndarray]:
        """Position range of every query in one dimension for radius r (cached per (dim, r))."""
        key = (dim, r)
        if key not in cache:
            x = self.qx[:, dim]
            rho = r * x if self.plan.percentage else np.full(len(x), r)
            cache[key] = self.index.bound_dim(dim, self.qg, x - rho, x + rho, self.plan.closed, self.visit[dim])
        return cache[key]

    def _counts_2d_grid(self, combos: np.ndarray) -> np.ndarray:
        """Two continuous dimensions, any set of radius pairs: one sweep per distinct x radius.

        The dimension with fewer distinct radii is swept; all radii of the other dimension are
        answered in the same sweep (several y-ranges per query), so a 6 x 6 grid costs six
        sweeps, and the bounds are computed once per (dimension, radius).
        """
        distinct = [np.unique(combos[:, dim]) for dim in range(2)]
        xd = 0 if len(distinct[0]) <= len(distinct[1]) else 1
        yd = 1 - xd
        cache: dict[tuple[int, float], tuple[np.ndarray, np.ndarray]] = {}
        stacked: dict[tuple[float, ...], tuple[np.ndarray, np.ndarray]] = {}
        out = np.zeros((len(combos), len(self.qi)), dtype=np.int64)
        for rx in distinct[xd]:
            rows = np.flatnonzero(combos[:, xd] == rx)
            ry = tuple(float(r) for r in combos[rows, yd])
            if ry not in stacked:  # a product grid has the same y radii for every x radius
                ranges = [self._dim_bounds(yd, r, cache) for r in ry]
                stacked[ry] = (np.column_stack([a for a, _ in ranges]), np.column_stack([b for _, b in ranges]))
            ax, bx = self._dim_bounds(xd, float(rx), cache)
            out[rows] = self.index.count_2d_many(ax, bx, *stacked[ry], x_dim=xd).T
        return out


def partition_counts(
    original: pd.DataFrame,
    synthetic: Sequence[pd.DataFrame],
    plan: MatchPlan,
    combos: np.ndarray,
) -> list[tuple[np.ndarray, np.ndarray]]:
    """c and T (each shape (n_combos, n_original_rows)) for every synthetic set of a key block.

    Records are matched to their own synthetic row by ``__row__`` (each record's position in
    its own data set, see :meth:`~pipeline.evaluation.execution.Executor.key_blocks`).
    """
    groups, n_groups = group_codes(plan.categorical, [original, *synthetic])
    q_groups = groups[0]
    x = _continuous_values(original, plan)
    q_valid = (q_groups >= 0) & np.all(np.isfinite(x), axis=1)
    # the per-dimension search orders of the global index (three dimensions go block by block)
    d = x.shape[1]
    visit = [] if d == 3 else [query_visit_order(q_groups[q_valid], x[q_valid, k], n_groups) for k in range(d)]
    out = []
    for s, frame in enumerate(synthetic):
        matcher = SetMatcher(
            plan,
            q_groups,
            x,
            q_valid,
            visit,
            groups[s + 1],
            _continuous_values(frame, plan),
            n_groups,
            _own_rows(original, frame),
        )
        out.append(matcher.counts(combos))
    return out


@numba.njit(cache=True, nogil=True)
def _sorted_or_order(rows):  # pragma: no cover - compiled
    """Identity if ``rows`` increase (usual: blocks keep each data set's record order), else an argsort."""
    for k in range(1, rows.shape[0]):
        if rows[k] <= rows[k - 1]:
            return np.argsort(rows, kind="mergesort")
    return np.arange(rows.shape[0])


@numba.njit(cache=True, nogil=True)
def _match_rows(rows, syn_rows):  # pragma: no cover - compiled
    """Position in ``syn_rows`` of each value of ``rows`` (-1 if absent; values distinct): a merge
    of the two row lists in increasing order."""
    qo = _sorted_or_order(rows)
    so = _sorted_or_order(syn_rows)
    out = np.full(rows.shape[0], -1, dtype=np.int64)
    j = 0
    for k in range(rows.shape[0]):
        r = rows[qo[k]]
        while j < so.shape[0] and syn_rows[so[j]] < r:
            j += 1
        if j < so.shape[0] and syn_rows[so[j]] == r:
            out[qo[k]] = so[j]
    return out


def _own_rows(original: pd.DataFrame, synthetic: pd.DataFrame) -> np.ndarray:
    """Position in ``synthetic`` of each original record's own synthetic row (-1: not in this block)."""
    return _match_rows(original[ROW_COLUMN].to_numpy(dtype=np.int64), synthetic[ROW_COLUMN].to_numpy(dtype=np.int64))


def histogram(c: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct (c, T) pairs and how many records have each: the sufficient statistics of every
    file-level measure, summable across partitions."""
    tally = np.bincount(c.astype(np.int64) * 2 + t.astype(np.int64))
    values = np.flatnonzero(tally)
    return values // 2, (values % 2).astype(bool), tally[values].astype(np.int64)


def expected_risk(c_values: np.ndarray, t_values: np.ndarray, counts: np.ndarray) -> float:
    """Σ_i T_i / c_i from a (c, T, count) histogram, correctly rounded (so independent of the
    order in which partitions were combined)."""
    keep = t_values & (c_values > 0)
    return math.fsum((counts[keep] / c_values[keep]).tolist())
