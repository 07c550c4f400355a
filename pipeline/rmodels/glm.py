"""Logistic regression by IRLS that reproduces R's ``glm.fit`` (binomial, logit link).

The iteration is R's: start from ``mustart = (w y + 0.5) / (w + 1)``; at each step solve the
weighted least-squares problem of the working response; stop when
``|dev - dev_old| / (|dev| + 0.1) < epsilon`` (``glm.control``: ``epsilon = 1e-8``) or after
``maxit`` steps; R's thresholds in the logit link (``|eta| > 30``) are kept, so separated data
converge the way R does instead of diverging.

Distributed form: the stacked records are split into partitions (Dask) or handled as one
partition (pandas).  Every pass over the partitions evaluates the current coefficients and
returns, per partition, the deviance and the pieces of the next least-squares problem, which
are summed:

* the first pass returns the R factor of ``sqrt(W) [X | z]`` (a tall-skinny QR, combined by
  stacking and re-factorising).  R's ``glm.fit`` decides here which columns are aliased: a
  pivoted QR (LINPACK ``dqrdc2``) moves a column to the end when its norm after projection
  on the previous columns falls below ``1e-11`` times its original norm (``min(1e-7,
  epsilon / 1000)``).  The same rule is applied to the combined R factor, which has the same
  column norms and projections as ``sqrt(W) X``, so the same columns are dropped, in the
  same order;
* the later passes return ``X'WX`` and ``X'W(z - X beta)`` for the kept columns (Newton's
  increment form, which converges to the same fixed point as R's solution of the normal
  equations); if ``X'WX`` is not numerically positive definite (separation), that pass is
  redone with the QR form.

The records reach the kernels as integer level codes and numeric values
(:class:`CodedRecords`); no design matrix is built for the ``gram`` and ``scores`` passes.  A
design row is ``sum_s D_s(c) m_s(x)``: ``c`` is the record's cell (its combination of factor
codes), ``D_s(c)`` the sparse factor part of the columns whose terms hold the numeric subset
``s`` (a factor contributes one contrast row, a term the products of its variables' entries),
``m_s(x)`` the product of the record's values over ``s`` (1 for the empty subset).  Two
compiled passes use this, whichever costs less for the partition (:meth:`ModelSpec.cells_pay`):

* by cells (:func:`_pass_cells`): per record only ``w m_a m_b`` and ``w z m_a`` are added to
  its cell, and each cell's factor parts give its share of ``X'WX`` and ``X'Wz`` once — with
  few cells (register-like factors) the work per record does not grow with the design;
* record by record (:func:`_pass_records`): the weighted outer product of the row's non-zero
  entries (many cells).

Identical records may also be merged first, with their number as a frequency weight
(:meth:`CodedRecords.compressed`: exact, decided by hashing a prefix of the records, then one
pass that stops as soon as merging cannot pay).

Predicted probabilities are ``linkinv(eta)`` with ``eta = sum_s gamma_s(c) m_s(x)``,
``gamma_s(c)`` the coefficients times ``D_s(c)`` summed in column order: both passes compute it
with the same operations, so identical records get identical scores whatever the partition
and the pass (ties matter for SPECKS and U).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import cache, cached_property
from typing import Any

import numba as nb
import numpy as np
import pandas as pd
import scipy.linalg as sla
from threadpoolctl import ThreadpoolController

from pipeline.rmodels.design import Design

EPS = np.finfo(float).eps
THRESH = 30.0
LABEL = "__t__"
WEIGHT = "__w__"
FREQ = "__f__"
CHUNK_ROWS = 65_536
#: records per block of the compiled sums (two-level summation)
SUM_BLOCK = 1024
#: most memory the per-cell sums of a pass may take (else the pass goes record by record)
CELL_BYTES = 256 * 2**20
#: records whose distinct share :meth:`CodedRecords.compressed` counts first, and the share above
#: which it merges nothing (with a continuous predictor nearly every record is distinct)
PROBE_ROWS = 65_536
PROBE_DISTINCT = 0.9


# ---------------------------------------------------------------------------------------------
# R's binomial family with logit link (src/library/stats/src/family.c)
# ---------------------------------------------------------------------------------------------
def mu_eta(eta: np.ndarray) -> np.ndarray:
    e = np.exp(np.clip(eta, -THRESH, THRESH))
    out = e / ((1 + e) * (1 + e))
    return np.where((eta > THRESH) | (eta < -THRESH), EPS, out)


@cache
def _blas_controller() -> ThreadpoolController:
    return ThreadpoolController()


@contextmanager
def single_threaded_blas() -> Iterator[None]:
    """The BLAS on one thread: the matrices of a fit are small, and one Dask task runs per core
    (a multi-threaded BLAS only spins against the other tasks)."""
    with _blas_controller().limit(limits=1, user_api="blas"):
        yield


# ---------------------------------------------------------------------------------------------
# the records a kernel reads, and the model specification
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CodedRecords:
    """Stacked records as the IRLS kernels read them (one partition, or all records in memory).

    Attributes
    ----------
    codes : ndarray
        ``(n, factors)`` int32: the level code of each factor predictor, in predictor order
        (codes of the prepared data; a :class:`ModelSpec` maps them to the stacked levels).
    values : ndarray
        ``(n, numerics)`` float64: the numeric predictors, in predictor order.
    y : ndarray or None
        The response (1 synthetic, 0 original); ``None`` when a pass is given the labels
        (the records of one data set, labelled by the comparison they are in).
    freq : ndarray or None
        Number of identical records merged into each (``None``: 1).
    prior : ndarray or None
        R's prior weights (synthpop's ``aggregate``; ``None``: 1).
    """

    codes: np.ndarray
    values: np.ndarray
    y: np.ndarray | None = None
    freq: np.ndarray | None = None
    prior: np.ndarray | None = None

    def __len__(self) -> int:
        return self.codes.shape[0]

    @property
    def weights(self) -> np.ndarray | None:
        """Record weights of the scores (prior times frequency), ``None`` when every record counts once."""
        if self.freq is None and self.prior is None:
            return None
        if self.freq is None or self.prior is None:
            return self.freq if self.prior is None else self.prior
        return self.freq * self.prior

    @cached_property
    def cells(self) -> tuple[np.ndarray, np.ndarray]:
        """The cell of each record (its combination of factor codes) and the first record of each cell.

        Cells are numbered by their mixed-radix code when the product of the codes' ranges is
        small (a linear pass), else in order of first appearance (hashing, as :meth:`compressed`).
        """
        n, n_factors = self.codes.shape
        if n == 0 or n_factors == 0:
            return np.zeros(n, dtype=np.int64), np.zeros(min(n, 1), dtype=np.int64)
        # column by column: numpy's max along axis 0 of an (n, 3) int32 array is ten times slower
        sizes = np.array([self.codes[:, j].max() for j in range(n_factors)], dtype=np.int64) + 1
        if math.prod(sizes.tolist()) <= 4 * n + 65_536:
            return _radix_cells(self.codes, sizes)
        none = np.empty((n, 0))
        cell, first, _ = _distinct_rows(self.codes, none, none, n)
        return cell, first

    @property
    def n_cells(self) -> int:
        return len(self.cells[1])

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, spec: ModelSpec) -> CodedRecords:
        """The records of a frame with the predictors of ``spec`` (level codes or values), ``__t__``
        and optionally ``__w__`` (prior) and ``__f__`` (frequency) columns."""
        n = len(frame)
        fac = [c for c, lk in zip(spec.columns, spec.lookups, strict=True) if lk is not None]
        num = [c for c, lk in zip(spec.columns, spec.lookups, strict=True) if lk is None]
        codes = np.empty((n, len(fac)), dtype=np.int32)
        for j, c in enumerate(fac):
            codes[:, j] = frame[c].to_numpy()
        values = np.empty((n, len(num)), dtype=np.float64)
        for j, c in enumerate(num):
            values[:, j] = frame[c].to_numpy(dtype=float)
        optional = [frame[c].to_numpy(dtype=float) if c in frame.columns else None for c in (FREQ, WEIGHT)]
        return cls(codes, values, frame[LABEL].to_numpy(dtype=float), *optional)

    def with_labels(self, y: np.ndarray) -> CodedRecords:
        return replace(self, y=np.asarray(y, dtype=float))

    def compressed(self, max_ratio: float = 0.5) -> CodedRecords:
        """Identical records (predictors, response and prior weight) merged, their number in ``freq``.

        Identical records have identical scores and contributions, so the fit on the distinct
        records with frequency weights follows exactly the same iterates (only the order of the
        floating-point sums changes).  The records are hashed and counted in one linear pass that
        stops as soon as more than ``max_ratio`` of them are distinct: then nothing is merged
        (real data with a continuous variable).  Before it, the first :data:`PROBE_ROWS` records
        are counted alone: when more than :data:`PROBE_DISTINCT` of them are distinct, nothing is
        merged either, at the cost of a few milliseconds instead of half a pass (the choice
        changes the order of the sums only, and depends on the records alone).
        """
        n = len(self)
        if n == 0 or self.freq is not None:
            return self
        probe = min(n, PROBE_ROWS)
        if probe < n:
            limit = int(max(max_ratio, PROBE_DISTINCT) * probe)
            if _distinct_rows(self.codes[:probe], self.values[:probe], self._keys(probe), limit)[2] < 0:
                return self
        group, first, n_groups = _distinct_rows(self.codes, self.values, self._keys(n), int(max_ratio * n))
        if n_groups < 0:
            return self
        freq = np.bincount(group, minlength=n_groups).astype(float)
        return CodedRecords(
            np.ascontiguousarray(self.codes[first]),
            np.ascontiguousarray(self.values[first]),
            None if self.y is None else self.y[first],
            freq,
            None if self.prior is None else self.prior[first],
        )

    def _keys(self, n: int) -> np.ndarray:
        """The response and prior weight of the first ``n`` records (what merging compares besides the predictors)."""
        keys = np.empty((n, 2), dtype=np.float64)
        keys[:, 0] = 0.0 if self.y is None else self.y[:n]
        keys[:, 1] = 1.0 if self.prior is None else self.prior[:n]
        return keys

    @staticmethod
    def concat(parts: Sequence[CodedRecords]) -> CodedRecords:
        """Records of several parts, stacked in order."""

        def cat(get: Any) -> np.ndarray | None:
            if all(get(p) is None for p in parts):
                return None
            return np.concatenate([np.ones(len(p)) if get(p) is None else get(p) for p in parts])

        return CodedRecords(
            np.concatenate([p.codes for p in parts]),
            np.concatenate([p.values for p in parts]),
            None if any(p.y is None for p in parts) else np.concatenate([p.y for p in parts]),
            cat(lambda p: p.freq),
            cat(lambda p: p.prior),
        )


@dataclass(frozen=True)
class ModelSpec:
    """What a kernel needs to build design rows from coded records.

    Attributes
    ----------
    design : Design
    columns : tuple of str
        Column of a prepared frame holding each predictor (:meth:`CodedRecords.from_frame`).
    lookups : tuple
        For a factor predictor, an int array mapping the prepared (global) level code to the
        level index in the stacked data; ``None`` for numeric predictors.
    """

    design: Design
    columns: tuple[str, ...]
    lookups: tuple[np.ndarray | None, ...]

    @cached_property
    def layout(self) -> tuple[np.ndarray, ...]:
        """The design as flat arrays for the compiled kernels (see :func:`_expand_row`)."""
        preds = self.design.predictors
        info = np.zeros((len(preds), 4), dtype=np.int64)
        lookup, levptr, cidx, cval, ncols, vptr = [], [0], [], [], [], [0]
        n_fac = n_num = 0
        for v, (p, lk) in enumerate(zip(preds, self.lookups, strict=True)):
            contrast, names = p.basis()
            ncols.append(len(names))
            if contrast is None:
                info[v] = (0, n_num, 0, 0)
                n_num += 1
                vptr.append(vptr[-1] + 1)
                continue
            info[v] = (1, n_fac, len(lookup), len(levptr) - 1)
            n_fac += 1
            lookup.extend(np.asarray(lk, dtype=np.int64).tolist())
            for row in contrast:
                nz = np.flatnonzero(row)
                cidx.extend(nz.tolist())
                cval.extend(row[nz].tolist())
                levptr.append(len(cidx))
            vptr.append(vptr[-1] + max(int(np.count_nonzero(contrast, axis=1).max(initial=0)), 1))
        terms = self.design.terms
        tptr = np.cumsum([0] + [len(t) for t in terms])
        tvars = np.array([v for t in terms for v in t], dtype=np.int64)
        tstart = np.array([start for start, _ in self.design.blocks], dtype=np.int64)
        max_row = 1 + sum(int(np.prod([vptr[v + 1] - vptr[v] for v in t])) for t in terms)
        # the numeric variables of each term (as value columns): the term's entries are its factor
        # part times their product (a monomial); the empty set (subset 0) for factor-only terms
        subsets: dict[tuple[int, ...], int] = {(): 0}
        tsub = [subsets.setdefault(tuple(int(info[v, 1]) for v in t if info[v, 0] == 0), len(subsets))
                for t in terms]  # fmt: skip
        svars = [c for s in subsets for c in s]
        sptr = np.cumsum([0] + [len(s) for s in subsets])
        n_sub = len(subsets)
        # the products of two subsets' monomials a cell accumulates, numbered (a <= b, row by row)
        pairs = np.zeros((n_sub, n_sub), dtype=np.int64)
        upper = np.triu_indices(n_sub)
        pairs[upper] = np.arange(len(upper[0]))
        pairs = np.maximum(pairs, pairs.T)
        return (
            info,
            np.asarray(lookup, dtype=np.int64),
            np.asarray(levptr, dtype=np.int64),
            np.asarray(cidx, dtype=np.int64),
            np.asarray(cval, dtype=np.float64),
            np.asarray(ncols, dtype=np.int64),
            np.asarray(vptr, dtype=np.int64),
            tptr.astype(np.int64),
            tvars,
            tstart,
            np.array([max_row, max(len(t) for t in terms) if terms else 1], dtype=np.int64),
            np.asarray(tsub, dtype=np.int64),
            sptr.astype(np.int64),
            np.asarray(svars, dtype=np.int64),
            pairs,
        )

    def cells_pay(self, n_records: int, n_cells: int) -> bool:
        """Whether a pass through the cells (:func:`_pass_cells`) costs less than record by record.

        Per record, the cells cost the products of pairs of numeric subsets (and a random access
        to the record's cell), the records the outer product of the row's entries; per cell, the
        cells pay that outer product and two expansions of the row once.
        """
        n_entries = self.layout[10][0]
        n_sub = self.layout[14].shape[0]
        per_row = n_entries * (n_entries + 1) // 2 + 2 * n_entries
        by_cells = n_records * (n_sub * (n_sub + 3) // 2 + 16) + n_cells * (per_row + 2 * n_entries)
        return by_cells < n_records * per_row and n_cells * n_sub * (n_sub + 4) * 8 <= CELL_BYTES

    def matrix(self, part: CodedRecords, start: int, stop: int) -> np.ndarray:
        """The model matrix (Fortran order) of records ``start:stop``."""
        cols = []
        i_fac = i_num = 0
        for lookup in self.lookups:
            if lookup is None:
                cols.append(part.values[start:stop, i_num])
                i_num += 1
            else:
                cols.append(lookup[part.codes[start:stop, i_fac]])
                i_fac += 1
        return self.design.matrix(cols)


def draw_labels(label_spec: Any, n: int, default: np.ndarray | None) -> np.ndarray:
    """The response of a partition: stored labels, given labels, or a seeded random relabelling.

    ``label_spec`` is ``None`` (use ``default``), a label for every record (float), an array,
    ``("perm", seed_seq, n_ones)`` (a uniformly random choice of ``n_ones`` records labelled 1)
    or ``("bernoulli", seed_seq)``.
    """
    if label_spec is None:
        if default is None:
            raise ValueError("the records carry no labels and none were given")
        return default
    if isinstance(label_spec, float):
        return np.full(n, label_spec)
    if isinstance(label_spec, np.ndarray):
        return label_spec
    kind, seed = label_spec[0], label_spec[1]
    rng = np.random.default_rng(seed)
    if kind == "perm":
        out = np.zeros(n, dtype=float)
        out[rng.choice(n, size=int(label_spec[2]), replace=False)] = 1.0
        return out
    return rng.integers(0, 2, size=n).astype(float)


# ---------------------------------------------------------------------------------------------
# compiled kernels: duplicate detection, design rows, one IRLS pass
# ---------------------------------------------------------------------------------------------
@nb.njit(cache=True, nogil=True, inline="always")
def _mix(x):  # pragma: no cover - compiled
    """splitmix64's finaliser: every input bit reaches every output bit."""
    x ^= x >> np.uint64(30)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


@nb.njit(cache=True, nogil=True)
def _distinct_rows(codes, values, keys, max_groups):  # pragma: no cover - compiled
    """Group of every row (identical rows share one), the first row of each group, their number.

    Open addressing on a 64-bit hash of the row's bits; the number is -1 as soon as there are
    more than ``max_groups`` distinct rows.
    """
    n = codes.shape[0]
    size = 1
    while size < 2 * max(max_groups, 1):
        size *= 2
    mask = np.uint64(size - 1)
    table = np.full(size, -1, dtype=np.int64)
    group = np.empty(n, dtype=np.int64)
    first = np.empty(max_groups, dtype=np.int64)
    vbits = values.view(np.uint64)
    kbits = keys.view(np.uint64)
    n_groups = 0
    for i in range(n):
        h = np.uint64(0x9E3779B97F4A7C15)
        for j in range(codes.shape[1]):
            h = _mix(h ^ np.uint64(codes[i, j]))
        for j in range(vbits.shape[1]):
            h = _mix(h ^ vbits[i, j])
        for j in range(kbits.shape[1]):
            h = _mix(h ^ kbits[i, j])
        slot = h & mask
        while True:
            g = table[slot]
            if g < 0:
                if n_groups == max_groups:
                    return group, first, -1
                table[slot] = n_groups
                first[n_groups] = i
                group[i] = n_groups
                n_groups += 1
                break
            r = first[g]
            same = True
            for j in range(codes.shape[1]):
                same = same and codes[i, j] == codes[r, j]
            for j in range(vbits.shape[1]):
                same = same and vbits[i, j] == vbits[r, j]
            for j in range(kbits.shape[1]):
                same = same and kbits[i, j] == kbits[r, j]
            if same:
                group[i] = g
                break
            slot = (slot + np.uint64(1)) & mask
    return group, first[:n_groups], n_groups


@nb.njit(cache=True, nogil=True)
def _radix_cells(codes, sizes):  # pragma: no cover - compiled
    """The cell of every row by its mixed-radix code (cells numbered by increasing code) and the first row of each.

    ``sizes[j]`` exceeds every code of column ``j``; the codes run row-major as
    ``np.ravel_multi_index`` numbers them.
    """
    n, k = codes.shape
    n_keys = 1
    for j in range(k):
        n_keys *= sizes[j]
    table = np.zeros(n_keys, dtype=np.int64)
    cell = np.empty(n, dtype=np.int64)
    for i in range(n):
        key = 0
        for j in range(k):
            key = key * sizes[j] + codes[i, j]
        cell[i] = key
        table[key] = 1
    n_cells = 0
    for key in range(n_keys):
        if table[key]:
            table[key] = n_cells
            n_cells += 1
    first = np.full(n_cells, -1, dtype=np.int64)
    for i in range(n):
        c = table[cell[i]]
        cell[i] = c
        if first[c] < 0:
            first[c] = i
    return cell, first


@nb.njit(cache=True, nogil=True)
def _row_workspace(layout):  # pragma: no cover - compiled
    """The scratch arrays :func:`_factor_row` fills, sized from the design ``layout``."""
    max_row = layout[10][0]
    return (
        np.empty(layout[6][-1], dtype=np.int64),
        np.empty(layout[6][-1], dtype=np.float64),
        np.empty(layout[0].shape[0], dtype=np.int64),
        np.empty(layout[10][1], dtype=np.int64),
        np.empty(max_row, dtype=np.int64),
        np.empty(max_row, dtype=np.float64),
        np.empty(max_row, dtype=np.int64),
    )


@nb.njit(cache=True, nogil=True, inline="always")
def _factor_row(i, codes, layout, vidx, vval, vcnt, radix, oidx, oval, osub):  # pragma: no cover - compiled
    """The entries of design row ``i`` with every numeric variable set to 1: their number.

    ``oidx`` gets the columns (increasing), ``oval`` the products of the factors' contrast
    entries, ``osub`` the numeric subset of the entry's term (the design value is ``oval``
    times that subset's monomial, :func:`_monomials`).  A factor's entries are its contrast
    row at the record's stacked level; a term's entries are the products of its variables'
    entries (first variable varying fastest, products taken left to right as
    :meth:`Design.matrix` does).  The entries depend on the factor codes only, so every record
    of a cell (:attr:`CodedRecords.cells`) has the same.
    """
    info, lookup, levptr, cidx, cval, ncols, vptr, tptr, tvars, tstart, _, tsub = layout[:12]
    for v in range(info.shape[0]):
        base = vptr[v]
        if info[v, 0] == 1:
            lev = lookup[info[v, 2] + codes[i, info[v, 1]]]
            a = levptr[info[v, 3] + lev]
            b = levptr[info[v, 3] + lev + 1]
            for e in range(a, b):
                vidx[base + e - a] = cidx[e]
                vval[base + e - a] = cval[e]
            vcnt[v] = b - a
        else:
            vidx[base] = 0
            vval[base] = 1.0
            vcnt[v] = 1
    oidx[0] = 0
    oval[0] = 1.0
    osub[0] = 0
    k = 1
    for t in range(tstart.shape[0]):
        a = tptr[t]
        b = tptr[t + 1]
        empty = False
        for q in range(a, b):
            radix[q - a] = 0
            if vcnt[tvars[q]] == 0:
                empty = True
        if empty:
            continue
        while True:
            col = tstart[t]
            stride = 1
            val = 1.0
            for q in range(a, b):
                v = tvars[q]
                e = vptr[v] + radix[q - a]
                col += vidx[e] * stride
                stride *= ncols[v]
                val = vval[e] if q == a else val * vval[e]
            oidx[k] = col
            oval[k] = val
            osub[k] = tsub[t]
            k += 1
            q = a
            while q < b:
                radix[q - a] += 1
                if radix[q - a] < vcnt[tvars[q]]:
                    break
                radix[q - a] = 0
                q += 1
            if q == b:
                break
    return k


@nb.njit(cache=True, nogil=True, inline="always")
def _monomials(i, values, layout, m):  # pragma: no cover - compiled
    """The product of record ``i``'s values over each numeric subset of the terms (1 for the empty one)."""
    sptr, svars = layout[12], layout[13]
    m[0] = 1.0
    for s in range(1, m.shape[0]):
        prod = values[i, svars[sptr[s]]]
        for q in range(sptr[s] + 1, sptr[s + 1]):
            prod *= values[i, svars[q]]
        m[s] = prod
    return m


@nb.njit(cache=True, nogil=True, inline="always")
def _gammas(k, oidx, oval, osub, beta, gam):  # pragma: no cover - compiled
    """``gam[s]``: the coefficients times factor parts of the entries of numeric subset ``s``, in column order."""
    gam[:] = 0.0
    for e in range(k):
        b = beta[oidx[e]]
        if b != 0.0:
            gam[osub[e]] += oval[e] * b


@nb.njit(cache=True, nogil=True, inline="always")
def _eta(gam, m):  # pragma: no cover - compiled
    """``eta = sum_s gam[s] m[s]``: the same operations for a record on its own or in its cell."""
    eta = 0.0
    for s in range(m.shape[0]):
        eta += gam[s] * m[s]
    return eta


@nb.njit(cache=True, nogil=True, inline="always")
def _record_terms(eta, yi, w0, f, start):  # pragma: no cover - compiled
    """A record's fitted probability, deviance, IRLS weight and working residual (plus ``eta`` at the start).

    R's ``linkinv`` and ``mu.eta`` share one ``exp(eta)`` (the same values as computing it twice).
    """
    if eta < -THRESH or eta > THRESH:
        tmp = EPS if eta < -THRESH else 1 / EPS
        me = EPS
    else:
        tmp = math.exp(eta)
        me = tmp / ((1 + tmp) * (1 + tmp))
    mu = tmp / (1 + tmp)
    dev = f * 2 * w0 * (-math.log(mu) if yi > 0 else -math.log(1 - mu))
    ww = f * w0 * me * me / (mu * (1 - mu))
    resid = (yi - mu) / me
    if start:
        resid += eta
    return mu, dev, ww, resid


@nb.njit(cache=True, nogil=True, inline="always")
def _start_eta(yi, w0):  # pragma: no cover - compiled
    """R's starting ``eta`` from ``mustart = (w y + 0.5) / (w + 1)``."""
    mu = (w0 * yi + 0.5) / (w0 + 1)
    return math.log(mu / (1 - mu))


@nb.njit(cache=True, nogil=True)
def _pass_records(codes, values, y, freq, prior, layout, beta, pos, gram, g, s, eta_out, mu_out):  # pragma: no cover
    """One IRLS pass record by record; returns the deviance.

    ``beta`` holds the coefficients on every design column (0 for aliased ones; empty: R's
    starting values), ``pos`` the position of each column among the kept ones (-1: aliased).
    With ``gram`` the pass adds ``X'WX`` (upper triangle) to ``g`` and ``X'W(z - X beta)``
    (``X'Wz`` at the start) to ``s``, from the row's non-zero entries only; otherwise it
    stores eta.  The fitted probabilities go to ``mu_out`` unless it is empty.
    """
    n = codes.shape[0]
    max_row = layout[10][0]
    vidx, vval, vcnt, radix, oidx, oval, osub = _row_workspace(layout)
    m = np.empty(layout[14].shape[0])
    gam = np.empty(m.shape[0])
    kidx = np.empty(max_row, dtype=np.int64)
    kval = np.empty(max_row, dtype=np.float64)
    start = beta.shape[0] == 0
    # sums in two levels (blocks of records, then the blocks), as accurate as a blocked BLAS
    dev, dev_block = 0.0, 0.0
    g_block = np.zeros_like(g)
    s_block = np.zeros_like(s)
    for i in range(n):
        if i % SUM_BLOCK == 0 and i > 0:
            dev += dev_block
            dev_block = 0.0
            if gram:
                _flush(g, s, g_block, s_block)
        k = _factor_row(i, codes, layout, vidx, vval, vcnt, radix, oidx, oval, osub)
        _monomials(i, values, layout, m)
        w0 = 1.0 if prior.shape[0] == 0 else prior[i]
        f = 1.0 if freq.shape[0] == 0 else freq[i]
        if start:
            eta = _start_eta(y[i], w0)
        else:
            _gammas(k, oidx, oval, osub, beta, gam)
            eta = _eta(gam, m)
        mu, dev_i, ww, resid = _record_terms(eta, y[i], w0, f, start)
        dev_block += dev_i
        if mu_out.shape[0]:
            mu_out[i] = mu
        if not gram:
            eta_out[i] = eta
            continue
        kk = 0
        for e in range(k):
            p = pos[oidx[e]]
            x = oval[e] * m[osub[e]]
            if p >= 0 and x != 0.0:
                kidx[kk] = p
                kval[kk] = x
                kk += 1
        for a in range(kk):
            wa = ww * kval[a]
            s_block[kidx[a]] += wa * resid
            for b2 in range(a, kk):
                g_block[kidx[a], kidx[b2]] += wa * kval[b2]
    if gram:
        _flush(g, s, g_block, s_block)
    return dev + dev_block


@nb.njit(cache=True, nogil=True)
def _pass_cells(codes, values, y, freq, prior, layout, beta, pos, gram, g, s, eta_out, mu_out, cell,
                first):  # pragma: no cover  # fmt: skip
    """:func:`_pass_records` through the cells: the same deviance, scores and (up to rounding) sums.

    Within a cell (``cell[i]``: the cell of record ``i``, ``first[c]``: a record of cell ``c``)
    the factor parts of the design row are fixed, so a row is ``sum_s D_s m_s(x)`` over the
    numeric subsets ``s``.  Per record the pass adds ``w m_a m_b`` (every pair of subsets) and
    ``w z m_a`` to its cell; then each cell's ``X'WX`` and ``X'Wz`` follow from its factor parts:
    ``sum_ab D_a D_b' M_ab`` and ``sum_a D_a T_a``.  The records' work no longer grows with the
    number of design columns.  Sums in two levels: per cell over blocks of records, then per
    block of cells.  A cell's sums are one row (the pairs in ``layout[14]``'s order, then the
    ``T_a``), so a record updates one short stretch of memory.
    """
    n = codes.shape[0]
    n_cells = first.shape[0]
    pairs = layout[14]
    n_sub = pairs.shape[0]
    n_pair = n_sub * (n_sub + 1) // 2
    vidx, vval, vcnt, radix, oidx, oval, osub = _row_workspace(layout)
    m = np.empty(n_sub)
    start = beta.shape[0] == 0
    gam = np.zeros((n_cells, n_sub))
    if not start:
        for c in range(n_cells):
            k = _factor_row(first[c], codes, layout, vidx, vval, vcnt, radix, oidx, oval, osub)
            _gammas(k, oidx, oval, osub, beta, gam[c])
    acc = np.zeros((n_cells if gram else 0, n_pair + n_sub))
    acc_block = np.zeros_like(acc)
    touched = np.zeros(acc.shape[0], dtype=np.bool_)
    touched_list = np.empty(min(SUM_BLOCK, acc.shape[0]), dtype=np.int64)
    n_touched = 0
    # at R's start without weights a record's terms depend on its label alone: computed once per label
    by_label = start and prior.shape[0] == 0 and freq.shape[0] == 0
    eta0, eta1 = _start_eta(0.0, 1.0), _start_eta(1.0, 1.0)
    terms0, terms1 = _record_terms(eta0, 0.0, 1.0, 1.0, True), _record_terms(eta1, 1.0, 1.0, 1.0, True)
    dev, dev_block = 0.0, 0.0
    for i in range(n):
        if i % SUM_BLOCK == 0 and i > 0:
            dev += dev_block
            dev_block = 0.0
            n_touched = _flush_cells(acc, acc_block, touched, touched_list, n_touched)
        c = cell[i]
        _monomials(i, values, layout, m)
        if by_label and (y[i] == 0.0 or y[i] == 1.0):
            eta = eta1 if y[i] == 1.0 else eta0
            mu, dev_i, ww, resid = terms1 if y[i] == 1.0 else terms0
        else:
            w0 = 1.0 if prior.shape[0] == 0 else prior[i]
            f = 1.0 if freq.shape[0] == 0 else freq[i]
            eta = _start_eta(y[i], w0) if start else _eta(gam[c], m)
            mu, dev_i, ww, resid = _record_terms(eta, y[i], w0, f, start)
        dev_block += dev_i
        if mu_out.shape[0]:
            mu_out[i] = mu
        if not gram:
            eta_out[i] = eta
            continue
        if not touched[c]:
            touched[c] = True
            touched_list[n_touched] = c
            n_touched += 1
        row = acc_block[c]
        j = 0  # pairs[a, b] for a <= b, row by row: consecutive
        for a in range(n_sub):
            wa = ww * m[a]
            if m[a] != 0.0:
                row[n_pair + a] += wa * resid
                for b2 in range(a, n_sub):
                    if m[b2] != 0.0:
                        row[j] += wa * m[b2]
                    j += 1
            else:
                j += n_sub - a
    if not gram:
        return dev + dev_block
    _flush_cells(acc, acc_block, touched, touched_list, n_touched)
    g_block = np.zeros_like(g)
    s_block = np.zeros_like(s)
    for c in range(n_cells):
        if c % SUM_BLOCK == 0 and c > 0:
            _flush(g, s, g_block, s_block)
        k = _factor_row(first[c], codes, layout, vidx, vval, vcnt, radix, oidx, oval, osub)
        for a in range(k):
            pa = pos[oidx[a]]
            if pa < 0:
                continue
            s_block[pa] += oval[a] * acc[c, n_pair + osub[a]]
            for b2 in range(a, k):
                pb = pos[oidx[b2]]
                if pb >= 0:
                    g_block[pa, pb] += oval[a] * oval[b2] * acc[c, pairs[osub[a], osub[b2]]]
    _flush(g, s, g_block, s_block)
    return dev + dev_block


@nb.njit(cache=True, nogil=True)
def _flush_cells(acc, acc_block, touched, touched_list, n_touched):  # pragma: no cover - compiled
    """Add the block sums of the cells a block of records touched to their totals and clear them; 0."""
    for q in range(n_touched):
        c = touched_list[q]
        touched[c] = False
        for j in range(acc.shape[1]):
            acc[c, j] += acc_block[c, j]
            acc_block[c, j] = 0.0
    return 0


@nb.njit(cache=True, nogil=True)
def _flush(g, s, g_block, s_block):  # pragma: no cover - compiled
    """Add a block's sums (upper triangle) to the totals and clear them."""
    for a in range(g.shape[0]):
        s[a] += s_block[a]
        s_block[a] = 0.0
        for b in range(a, g.shape[0]):
            g[a, b] += g_block[a, b]
            g_block[a, b] = 0.0


@nb.njit(cache=True, nogil=True)
def _residual_kernel(codes, values, y, freq, prior, layout, cols, coef, rr, xr):  # pragma: no cover - compiled
    """Residuals of design columns ``cols`` on other columns at R's starting weights.

    Column ``cols[q]`` minus the combination ``coef[q]`` of the design columns: adds the
    weighted sum of squares to ``rr[q]`` and ``X'W r`` (every column) to ``xr[q]``.
    """
    n = codes.shape[0]
    vidx, vval, vcnt, radix, oidx, oval, osub = _row_workspace(layout)
    m = np.empty(layout[14].shape[0])
    for i in range(n):
        k = _factor_row(i, codes, layout, vidx, vval, vcnt, radix, oidx, oval, osub)
        _monomials(i, values, layout, m)
        for e in range(k):
            oval[e] *= m[osub[e]]
        w0 = 1.0 if prior.shape[0] == 0 else prior[i]
        f = 1.0 if freq.shape[0] == 0 else freq[i]
        _, _, ww, _ = _record_terms(_start_eta(y[i], w0), y[i], w0, f, True)
        for q in range(cols.shape[0]):
            r = 0.0
            for e in range(k):
                if oidx[e] == cols[q]:
                    r += oval[e]
                r -= oval[e] * coef[q, oidx[e]]
            rr[q] += ww * r * r
            for e in range(k):
                xr[q, oidx[e]] += ww * oval[e] * r


_NONE = np.empty(0)
_NONE2 = np.empty((0, 0))


def logit_pass(
    part: pd.DataFrame | CodedRecords,
    spec: ModelSpec,
    mode: str,
    beta: np.ndarray | None,
    kept: np.ndarray | None,
    label_spec: Any = None,
    mu_out: np.ndarray | None = None,
) -> dict[str, Any]:
    """One IRLS pass over a partition.

    Parameters
    ----------
    part : CodedRecords or DataFrame
        The records (a frame is read by :meth:`CodedRecords.from_frame`).
    mode : {"qr", "gram", "scores", "alias"}
        ``qr``: deviance and the R factor of ``sqrt(W)[X | z]``; ``gram``: deviance,
        ``X'WX`` and ``X'W(z - X beta)`` on the kept columns; ``scores``: fitted
        probabilities, responses and record weights; ``alias``: at R's starting weights, the
        weighted sum of squares ``rr`` and ``X'W r`` (``xr``) of the residuals ``r`` of
        columns ``kept`` on the combinations ``beta`` (one row each) of the design columns.
    beta : ndarray or None
        Current coefficients on the kept columns (``None``: R's starting values).
    kept : ndarray or None
        Indices of the non-aliased design columns (``None``: all).
    label_spec
        Labels redrawn for this partition (:func:`draw_labels`).
    mu_out : ndarray, optional
        With ``gram``: an array of one value per record that gets the fitted probabilities, and
        the result the items of ``scores`` besides the sums (the same values a ``scores`` pass
        at these coefficients gives, so a fit in memory needs no pass after its last step).

    Records may carry prior weights (R's ``weights``, synthpop's ``aggregate``) and frequency
    weights (merged identical records).  ``gram`` and ``scores`` run one compiled loop over
    the records, expanding each design row from its codes (no design matrix); ``qr`` builds
    the design chunk by chunk, with the BLAS single-threaded (one Dask task per core).
    """
    rec = part if isinstance(part, CodedRecords) else CodedRecords.from_frame(part, spec)
    y = draw_labels(label_spec, len(rec), rec.y)
    p = spec.design.n_columns
    freq = _NONE if rec.freq is None else rec.freq
    prior = _NONE if rec.prior is None else rec.prior
    if mode == "alias":
        rr, xr = np.zeros(len(kept)), np.zeros((len(kept), p))
        _residual_kernel(rec.codes, rec.values, y, freq, prior, spec.layout, np.asarray(kept), beta, rr, xr)
        return {"rr": rr, "xr": xr}
    cols = np.arange(p) if kept is None else np.asarray(kept)
    pos = np.full(p, -1, dtype=np.int64)
    pos[cols] = np.arange(len(cols))
    beta_full = _NONE
    if beta is not None:
        beta_full = np.zeros(p)
        beta_full[cols] = beta
    out: dict[str, Any] = {"n": float(len(rec)) if rec.freq is None else float(np.sum(rec.freq))}
    if mode == "gram":
        g = np.zeros((len(cols), len(cols)))
        s = np.zeros(len(cols))
        out["dev"] = _pass(rec, spec, y, beta_full, pos, g, s, _NONE, _NONE if mu_out is None else mu_out)
        out["g"], out["s"] = np.triu(g) + np.triu(g, 1).T, s
        return out if mu_out is None else _with_scores(out, mu_out, y, rec)
    eta = np.empty(len(rec))
    mu = np.empty(len(rec))
    out["dev"] = _pass(rec, spec, y, beta_full, pos, _NONE2, _NONE, eta, mu)
    if mode == "scores":
        return _with_scores(out, mu, y, rec)
    with single_threaded_blas():
        out["r"] = _qr_pass(rec, spec, cols, y, eta, mu)
    return out


def _with_scores(out: dict[str, Any], mu: np.ndarray, y: np.ndarray, rec: CodedRecords) -> dict[str, Any]:
    """``out`` with a ``scores`` pass's items: fitted probabilities, responses, record weights, extremes."""
    out["mu"] = mu
    out["y"] = y.astype(np.int8)
    out["w"] = rec.weights
    out["mu_min"], out["mu_max"] = float(mu.min(initial=1.0)), float(mu.max(initial=0.0))
    return out


def _pass(rec: CodedRecords, spec: ModelSpec, y: np.ndarray, beta: np.ndarray, pos: np.ndarray, g: np.ndarray,
          s: np.ndarray, eta: np.ndarray, mu: np.ndarray) -> float:  # fmt: skip
    """One compiled IRLS pass (sums when ``g`` is not empty, else scores): through the cells when cheaper.

    The fitted probabilities go to ``mu`` unless it is empty (in a ``gram`` pass too).

    The two kernels compute ``eta`` with the same operations from the same inputs, so the
    scores do not depend on the choice (which depends on the partition); the sums differ in
    rounding only.
    """
    freq = _NONE if rec.freq is None else rec.freq
    prior = _NONE if rec.prior is None else rec.prior
    args = (rec.codes, rec.values, y, freq, prior, spec.layout, beta, pos, g.shape[0] > 0, g, s, eta, mu)
    if spec.cells_pay(len(rec), rec.n_cells):
        return _pass_cells(*args, *rec.cells)
    return _pass_records(*args)


def _qr_pass(rec: CodedRecords, spec: ModelSpec, cols: np.ndarray, y: np.ndarray, eta: np.ndarray,
             mu: np.ndarray) -> np.ndarray:  # fmt: skip
    """The R factor of ``sqrt(W) [X | z]`` (a QR per chunk of records, stacked and re-factorised)."""
    n = len(rec)
    w = (np.ones(n) if rec.freq is None else rec.freq) * (np.ones(n) if rec.prior is None else rec.prior)
    me = mu_eta(eta)
    sw = np.sqrt(w * me * me / (mu * (1 - mu)))
    z = (eta + (y - mu) / me) * sw
    rs = []
    for start in range(0, n, CHUNK_ROWS):
        stop = min(n, start + CHUNK_ROWS)
        x = spec.matrix(rec, start, stop)
        aug = np.empty((stop - start, len(cols) + 1), order="F")
        aug[:, :-1] = x[:, cols] * sw[start:stop, None]
        aug[:, -1] = z[start:stop]
        rs.append(sla.qr(aug, mode="r", overwrite_a=True, check_finite=False)[0][: len(cols) + 1])
    return _stack_r(rs, len(cols) + 1)


def _stack_r(rs: Sequence[np.ndarray], width: int) -> np.ndarray:
    if not rs:
        return np.zeros((0, width))
    if len(rs) == 1:
        return rs[0]
    return sla.qr(np.vstack(rs), mode="r", check_finite=False)[0][:width]


def combine_passes(results: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Sum (or stack and re-factorise) the per-partition results of a ``gram``, ``qr`` or ``alias`` pass."""
    results = [r for r in results if r is not None]
    if "rr" in results[0]:
        return {k: np.sum([r[k] for r in results], axis=0) for k in ("rr", "xr")}
    out: dict[str, Any] = {"n": float(sum(r["n"] for r in results)), "dev": float(np.sum([r["dev"] for r in results]))}
    first = results[0]
    if "r" in first:
        width = max(r["r"].shape[1] for r in results)
        with single_threaded_blas():
            out["r"] = _stack_r([r["r"] for r in results if r["r"].shape[0]], width)
    else:
        out["g"] = np.sum([r["g"] for r in results], axis=0)
        out["s"] = np.sum([r["s"] for r in results], axis=0)
    return out


# ---------------------------------------------------------------------------------------------
# R's pivoting rule (LINPACK dqrdc2) on the combined R factor
# ---------------------------------------------------------------------------------------------
def dqrdc2_kept(r: np.ndarray, tol: float = 1e-11) -> np.ndarray:
    """Columns that ``dqrdc2`` keeps (in their original order) for a matrix with this R factor.

    A column is moved to the end (aliased) when the norm of its part orthogonal to the
    columns kept before it is below ``tol`` times its original norm.  Orthogonal
    transformations preserve these norms, so the R factor of ``sqrt(W) X`` decides exactly
    as the full matrix would.
    """
    a = np.array(r, dtype=float, order="F")
    nrow, p = a.shape
    orig = np.linalg.norm(a, axis=0)
    ref = np.where(orig == 0, 1.0, orig)
    kept: list[int] = []
    row = 0
    for j in range(p):
        col = a[row:, j]
        norm = float(np.linalg.norm(col))
        if norm < ref[j] * tol or row >= nrow:
            continue
        # Householder reflection of this column applied to the columns after it
        v = col.copy()
        v[0] += np.copysign(norm, v[0]) if v[0] != 0 else norm
        vnorm2 = float(v @ v)
        if vnorm2 > 0 and j + 1 < p:
            rest = a[row:, j + 1 :]
            rest -= np.outer(v, (v @ rest) * (2.0 / vnorm2))
        kept.append(j)
        row += 1
    return np.asarray(kept, dtype=np.int64)


# ---------------------------------------------------------------------------------------------
# the iteration as a state machine (so many fits can share Dask rounds)
# ---------------------------------------------------------------------------------------------
#: a logit coefficient this large (odds ratio e^8, about 3000) in a separated fit is running off
SEPARATING_COEFFICIENT = 8.0


@dataclass
class LogitFit:
    """Result of one IRLS fit, with R's ``glm`` names where they exist."""

    names: tuple[str, ...]
    coefficients: np.ndarray  # NaN for aliased columns (R: NA)
    deviance: float
    null_deviance: float
    iter: int
    converged: bool
    rank: int
    fitted_extreme: bool  # fitted probabilities within 1e-8 of 0 or 1: (quasi-)separation
    #: the coefficients still ran off when the deviance had stopped changing (:attr:`IRLS.diverging`):
    #: the likelihood has no maximum (quasi-separation)
    diverging: bool = False
    #: the model term of each coefficient: its variables joined by ``:`` (no level labels)
    terms: tuple[str, ...] = ()

    @property
    def separated(self) -> bool:
        """Complete or quasi-complete separation: fitted probabilities numerically 0 or 1, or
        coefficients running off (where R's ``glm.fit`` may stop at ``maxit`` with |β| ~ 1e15)."""
        return self.fitted_extreme or self.diverging

    def separating_terms(self, size: float = SEPARATING_COEFFICIENT) -> list[str]:
        """The terms whose coefficients ran off in a separated fit (|coefficient| >= ``size``,
        largest first; else the term of the largest): the variables whose cells the other data
        set lacks. Terms, not coefficient names: those carry level labels."""
        if not self.terms:
            return []
        size_of = np.nan_to_num(np.abs(self.coefficients), nan=0.0)
        size_of[[t == "(Intercept)" for t in self.terms]] = 0.0
        order = [i for i in np.argsort(-size_of, kind="stable") if size_of[i] >= size] or [int(np.argmax(size_of))]
        return list(dict.fromkeys(self.terms[i] for i in order))

    def to_dict(self) -> dict[str, Any]:
        return {
            "converged": self.converged,
            "iter": self.iter,
            "deviance": self.deviance,
            "null_deviance": self.null_deviance,
            "rank": self.rank,
            "fitted_probabilities_0_or_1": self.fitted_extreme,
            "coefficients_diverging": self.diverging,
            "coefficients": {
                n: (None if np.isnan(c) else float(c)) for n, c in zip(self.names, self.coefficients, strict=True)
            },
        }


@nb.njit(cache=True, nogil=True)
def _gram_pivots(g):  # pragma: no cover - compiled
    """``dqrdc2``'s column scan on ``X'WX``: each column kept (1), zero (0) or undecided (2).

    A column is kept when its squared norm after projection on the columns kept before it
    exceeds ``1e-8`` of its own; ``before[j]`` counts the columns kept before column ``j``;
    ``chol`` (leading block) is the upper Cholesky factor of the kept columns.
    """
    p = g.shape[0]
    status = np.zeros(p, dtype=np.int64)
    before = np.zeros(p, dtype=np.int64)
    kept = np.empty(p, dtype=np.int64)
    chol = np.zeros((p, p))
    v = np.empty(p)
    k = 0
    for j in range(p):
        before[j] = k
        gjj = g[j, j]
        if gjj == 0:
            continue
        d = gjj
        for a in range(k):  # v = chol^-T g[kept, j]
            acc = g[kept[a], j]
            for b in range(a):
                acc -= chol[b, a] * v[b]
            v[a] = acc / chol[a, a]
            d -= v[a] * v[a]
        if d <= 1e-8 * gjj:
            status[j] = 2
            continue
        for a in range(k):
            chol[a, k] = v[a]
        chol[k, k] = math.sqrt(d)
        kept[k] = j
        status[j] = 1
        k += 1
    return status, before, chol


#: a column whose weighted residual norm on the columns kept before it is below this fraction of
#: its own norm (computed from the data, after one refinement) is aliased without a QR pass
#: (R's ``dqrdc2`` drops below 1e-11)
ALIAS_RATIO = 1e-12


@dataclass(frozen=True)
class AliasCheck:
    """Columns the start's ``X'WX`` could not decide, each assumed aliased, to verify on the data.

    ``coef[q]`` combines the columns kept before ``columns[q]`` (``sizes[q]`` of ``kept``) to
    project it (corrected semi-normal equations: computed from ``X'WX``, refined once from the
    residuals).  ``g``, ``s`` and ``chol`` are the start pass's Gram, ``X'Wz`` and the Cholesky
    factor of the kept columns.
    """

    columns: np.ndarray
    coef: np.ndarray
    sizes: tuple[int, ...]
    kept: np.ndarray
    chol: np.ndarray
    g: np.ndarray
    s: np.ndarray
    refined: bool = False

    def solve(self, q: int, rhs: np.ndarray) -> np.ndarray:
        """``G^-1 rhs`` on the columns kept before ``columns[q]``."""
        rk = self.chol[: self.sizes[q], : self.sizes[q]]
        return sla.solve_triangular(rk, sla.solve_triangular(rk, rhs, trans="T", check_finite=False),
                                    check_finite=False)  # fmt: skip


#: a fit is diverging when the coefficient that moved most in the last step (relative to its size)
#: moved by more than this share of its previous step: near a maximum Newton's steps shrink
#: quadratically (1e-1, 1e-3, 1e-7, ...), where the likelihood has none (separation) the separated
#: coefficient keeps moving by about +1 on the logit scale per step
DIVERGING_RATIO = 0.5


@dataclass
class IRLS:
    """R's ``glm.fit`` iteration driven by pass results (see module docstring)."""

    p: int
    maxit: int = 200
    epsilon: float = 1e-8
    kept: np.ndarray | None = None
    beta: np.ndarray | None = None
    dev_old: float = float("nan")
    iteration: int = 0
    converged: bool = False
    finished: bool = False
    force_qr: bool = False
    redo: bool = False
    history: list[float] = field(default_factory=list)
    check: AliasCheck | None = None
    #: the last two Newton steps (β_k − β_{k−1}, β_{k−1} − β_{k−2}) on the same columns
    steps: tuple[np.ndarray, ...] = ()

    def request(self) -> tuple[str, np.ndarray | None, np.ndarray | None]:
        """The next pass: (mode, beta on kept columns, kept columns); ``alias``: (mode, coef, columns)."""
        if self.finished:
            return "scores", self.beta, self.kept
        if self.check is not None:
            return "alias", self.check.coef, self.check.columns
        if self.force_qr:
            return "qr", self.beta, self.kept
        return "gram", self.beta, self.kept

    def feed(self, res: dict[str, Any]) -> None:
        """Advance with the combined result of the requested pass."""
        if "rr" in res:
            self._verify_aliased(res["rr"], res["xr"])
            return
        if self.beta is None:  # the pass at R's starting values
            self.dev_old = res["dev"]
        elif self.redo:  # the same coefficients again, in QR form
            self.redo = False
        else:
            dev = res["dev"]
            self.history.append(dev)
            if abs(dev - self.dev_old) / (abs(dev) + 0.1) < self.epsilon:
                self.converged = True
                self.finished = True
                return
            if self.iteration >= self.maxit:
                self.finished = True
                return
            self.dev_old = dev
        if "r" in res:
            self._solve_qr(res["r"])
        elif self.beta is None:
            self._start_from_gram(res["g"], res["s"])
        else:
            self._solve_gram(res["g"], res["s"])

    def _start_from_gram(self, g: np.ndarray, s: np.ndarray) -> None:
        """First step from ``X'WX`` when R's aliasing decision is clear from it.

        Columns are examined in order as ``dqrdc2`` does: a zero column is aliased; a column
        whose squared norm after projection on the kept columns exceeds ``1e-8`` of its own
        is kept (far above R's ``1e-11`` on the norm, and far above the rounding of a Gram
        matrix).  Anything in between cannot be decided from ``X'WX`` (an exact dependence
        shows there as ~1e-16 relative, not 0): such columns are assumed aliased and the
        assumption is verified on the data (:class:`AliasCheck`, ``alias`` passes); where it
        fails, the pass is redone as a QR (``force_qr``).
        """
        status, before, chol_full = _gram_pivots(g)
        kept = [int(j) for j in np.flatnonzero(status == 1)]
        undecided = [(int(j), int(before[j])) for j in np.flatnonzero(status == 2)]
        chol = chol_full[: len(kept), : len(kept)]
        if undecided:
            self.force_qr = True
            cols = np.array([j for j, _ in undecided], dtype=np.int64)
            check = AliasCheck(cols, np.zeros((len(cols), self.p)), tuple(k for _, k in undecided),
                               np.asarray(kept, dtype=np.int64), chol, g, s)  # fmt: skip
            for q, (j, k) in enumerate(undecided):
                check.coef[q, kept[:k]] = check.solve(q, g[kept[:k], j])
            self.check = check
            return
        self._start_with(np.asarray(kept, dtype=np.int64), g, s)

    def _start_with(self, kept: np.ndarray, g: np.ndarray, s: np.ndarray) -> None:
        self.kept = kept
        self.beta = np.zeros(len(kept))
        self._solve_gram(g[np.ix_(kept, kept)], s[kept])
        if self.force_qr:  # the Newton system itself was ill-conditioned
            self.kept, self.beta, self.redo = None, None, False

    def _verify_aliased(self, rr: np.ndarray, xr: np.ndarray) -> None:
        """Decide the undecided columns from their residuals: all aliased, another refinement, or a QR."""
        check = self.check
        norms = np.diag(check.g)[check.columns]
        if np.all(np.sqrt(np.maximum(rr, 0.0) / norms) < ALIAS_RATIO):
            self.check, self.force_qr = None, False
            self._start_with(check.kept, check.g, check.s)
        elif not check.refined:
            coef = check.coef.copy()
            for q, k in enumerate(check.sizes):
                idx = check.kept[:k]
                coef[q, idx] += check.solve(q, xr[q, idx])
            self.check = replace(check, coef=coef, refined=True)
        else:
            self.check = None  # a column R may keep: the QR pass decides

    def _solve_qr(self, r: np.ndarray) -> None:
        width = r.shape[1] - 1
        rx, qty = r[:width, :width], r[:width, width]
        if self.kept is None:
            kept_local = dqrdc2_kept(rx)
            self.kept = kept_local
            rx = rx[:, kept_local]
        beta, *_ = np.linalg.lstsq(rx, qty, rcond=None)
        self._step_to(beta)
        self.iteration += 1
        self.force_qr = False

    def _solve_gram(self, g: np.ndarray, s: np.ndarray) -> None:
        d = np.sqrt(np.diag(g))
        if not np.all(d > 0):
            self.force_qr = self.redo = True
            return
        scaled = g / d[:, None] / d[None, :]
        try:
            factor = sla.cho_factor(scaled, check_finite=False)
            delta = sla.cho_solve(factor, s / d, check_finite=False) / d
        except (np.linalg.LinAlgError, ValueError):
            self.force_qr = self.redo = True
            return
        if not np.all(np.isfinite(delta)) or np.linalg.cond(scaled) > 1e12:
            self.force_qr = self.redo = True
            return
        self._step_to(self.beta + delta)
        self.iteration += 1

    def _step_to(self, beta: np.ndarray) -> None:
        old = self.beta
        same_columns = old is not None and old.shape == beta.shape
        self.steps = (beta - old, *self.steps[:1]) if same_columns else ()
        self.beta = beta

    @property
    def diverging(self) -> bool:
        """Whether the coefficients run off instead of converging (:data:`DIVERGING_RATIO`)."""
        if len(self.steps) < 2 or not self.steps[0].size:
            return False
        last, previous = self.steps
        moved = np.abs(last) / (np.abs(self.beta) + 1.0)
        j = int(np.argmax(moved))
        return bool(moved[j] > 1e-6 and abs(last[j]) > DIVERGING_RATIO * abs(previous[j]))

    def coefficients(self) -> np.ndarray:
        out = np.full(self.p, np.nan)
        out[self.kept] = self.beta
        return out


def null_deviance(w1: float, w0: float) -> float:
    """Deviance of the intercept-only model: weight ``w1`` of records labelled 1, ``w0`` labelled 0."""
    p = w1 / (w1 + w0)
    return float(-2 * (w1 * np.log(p) + w0 * np.log(1 - p))) if 0 < p < 1 else 0.0
