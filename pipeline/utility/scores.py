"""Statistics of propensity scores and of weighted score distributions.

Shared by ``utility_gen`` (one score per stacked record, optionally with frequency weights)
and ``utility_tab`` (one score per table cell, weighted by the cell counts):

* ``ks_statistic`` — two-sample Kolmogorov–Smirnov D (R ``ks.test(...)$statistic``);
* ``wilcoxon_w`` — R ``wilcox.test(x, y)$statistic`` (rank sum of ``x`` with mid-ranks minus
  ``n_x (n_x + 1) / 2``).

Both are computed from the distinct score values and the weights of the two groups at each
value, so replicated vectors never need to be built.

``utility_gen``'s statistics (pMSE, PO50, SPECKS, U) come from :class:`ScoreTable` pieces, so
the scores of records on a cluster never travel to the driver: each partition groups its
scores by value and keeps them where they are; the tables are cut at common splitter values
into buckets (equal scores always fall in the same bucket); each bucket is merged from all
partitions and ranked on a worker (:func:`rank_bucket`), and the driver adds the buckets up in
order (:func:`combine_buckets`).  With integer record weights every sum of U is exact, and
SPECKS is evaluated at the same points with the same operations as in memory, so the numbers
do not depend on the partitioning: in memory the scores form one table and one bucket.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numba as nb
import numpy as np


def _grouped(scores: np.ndarray, w_x: np.ndarray, w_y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Weights of x and y at each distinct score value (sorted increasingly)."""
    values, inverse = np.unique(scores, return_inverse=True)
    gx = np.bincount(inverse, weights=w_x, minlength=len(values))
    gy = np.bincount(inverse, weights=w_y, minlength=len(values))
    return gx, gy


def ks_statistic(scores: np.ndarray, w_x: np.ndarray, w_y: np.ndarray) -> float:
    """Two-sample KS D between the scores weighted by ``w_x`` and by ``w_y``."""
    gx, gy = _grouped(scores, w_x, w_y)
    nx, ny = gx.sum(), gy.sum()
    if nx == 0 or ny == 0:
        return float("nan")
    return float(np.max(np.abs(np.cumsum(gx) / nx - np.cumsum(gy) / ny)))


def wilcoxon_w(scores: np.ndarray, w_x: np.ndarray, w_y: np.ndarray) -> float:
    """Mann–Whitney W of group x versus group y with mid-ranks for ties."""
    gx, gy = _grouped(scores, w_x, w_y)
    tot = gx + gy
    below = np.cumsum(tot) - tot
    midrank = below + (tot + 1) / 2
    nx = gx.sum()
    return float(np.sum(gx * midrank) - nx * (nx + 1) / 2)


@nb.njit(cache=True, nogil=True)
def _merge_counts(sx: np.ndarray, sy: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # pragma: no cover
    """The distinct values of two sorted arrays (no NaN), increasing, and how often each array holds each."""
    nx, ny = sx.shape[0], sy.shape[0]
    values = np.empty(nx + ny)
    wx = np.empty(nx + ny)
    wy = np.empty(nx + ny)
    i = j = k = 0
    while i < nx or j < ny:
        v = sx[i] if j == ny or (i < nx and sx[i] <= sy[j]) else sy[j]
        i0, j0 = i, j
        while i < nx and sx[i] == v:
            i += 1
        while j < ny and sy[j] == v:
            j += 1
        values[k], wx[k], wy[k] = v, i - i0, j - j0
        k += 1
    return values[:k], wx[:k], wy[:k]


@dataclass(frozen=True)
class ScoreTable:
    """Propensity scores of some records grouped by value, with the sums pMSE and PO50 need.

    Attributes
    ----------
    values : ndarray
        The distinct non-missing scores, increasing.
    wx, wy : ndarray
        Weight of the synthetic (``t = 1``) and of the original records at each value.
    total : float
        Weight of all records (missing scores included).
    sq : float
        Sum of ``w (score - c)^2``.
    correct : float
        Weight of the records classified correctly at threshold 0.5.
    """

    values: np.ndarray
    wx: np.ndarray
    wy: np.ndarray
    total: float
    sq: float
    correct: float

    @classmethod
    def from_scores(cls, score: np.ndarray, t: np.ndarray, c: float, weights: np.ndarray | None = None) -> ScoreTable:
        """The table of the scores ``score`` of records labelled ``t`` (1 synthetic), weighted by ``weights``."""
        ok = ~np.isnan(score)
        every = bool(ok.all())
        s, tt = (score, t) if every else (score[ok], t[ok])
        syn = tt == 1
        correct = (syn & (s > 0.5)) | (~syn & (s <= 0.5))
        if weights is None:  # every record counts once: the two groups' scores sorted alone and merged
            sx, sy = s[syn], s[~syn]
            sx.sort()
            sy.sort()
            values, wx, wy = _merge_counts(sx, sy)
            d = s - c
            d *= d  # (s - c) ** 2 without a second temporary: the same products
            return cls(values, wx, wy, float(len(score)), float(np.sum(d)), float(np.count_nonzero(correct)))
        w = np.asarray(weights, dtype=float)
        ww = w if every else w[ok]
        values, inverse = np.unique(s, return_inverse=True)
        wx = np.bincount(inverse, weights=np.where(syn, ww, 0.0), minlength=len(values))
        wy = np.bincount(inverse, weights=np.where(syn, 0.0, ww), minlength=len(values))
        return cls(values, wx, wy, float(w.sum()), float(np.sum(ww * (s - c) ** 2)), float(np.sum(ww[correct])))

    def sample(self, k: int) -> np.ndarray:
        """``k`` scores at evenly spaced weights of the records (candidate bucket splitters)."""
        if k <= 0:
            return self.values[:0]
        cum = np.cumsum(self.wx + self.wy)
        if not len(cum) or cum[-1] <= 0:
            return self.values[:0]
        at = np.searchsorted(cum, np.linspace(0, cum[-1], k + 2)[1:-1], side="left")
        return self.values[np.minimum(at, len(cum) - 1)]

    def bucket(self, splitters: np.ndarray, b: int) -> ScoreTable:
        """The scores in bucket ``b``: above ``splitters[b - 1]``, at most ``splitters[b]``."""
        cuts = np.searchsorted(self.values, splitters, side="right")
        lo = 0 if b == 0 else cuts[b - 1]
        hi = len(self.values) if b == len(splitters) else cuts[b]
        return ScoreTable(self.values[lo:hi], self.wx[lo:hi], self.wy[lo:hi], 0.0, 0.0, 0.0)

    @staticmethod
    def merge(tables: Sequence[ScoreTable]) -> ScoreTable:
        """One table of the records of several (sums in the order given)."""
        if len(tables) == 1:
            return tables[0]
        values, inverse = np.unique(np.concatenate([t.values for t in tables]), return_inverse=True)
        return ScoreTable(
            values,
            np.bincount(inverse, weights=np.concatenate([t.wx for t in tables]), minlength=len(values)),
            np.bincount(inverse, weights=np.concatenate([t.wy for t in tables]), minlength=len(values)),
            float(sum(t.total for t in tables)),
            float(sum(t.sq for t in tables)),
            float(sum(t.correct for t in tables)),
        )


@dataclass(frozen=True)
class ScoreSummary:
    """The sums of some score tables, their smallest and largest score, and candidate bucket splitters."""

    nx: float
    ny: float
    total: float
    sq: float
    correct: float
    lo: float
    hi: float
    samples: np.ndarray

    @classmethod
    def of(cls, tables: Sequence[ScoreTable], k: int = 64) -> ScoreSummary:
        """Summary of ``tables`` (or of summaries: see :meth:`merge`)."""
        return cls(
            float(sum(t.wx.sum() for t in tables)),
            float(sum(t.wy.sum() for t in tables)),
            float(sum(t.total for t in tables)),
            float(sum(t.sq for t in tables)),
            float(sum(t.correct for t in tables)),
            min((float(t.values[0]) for t in tables if len(t.values)), default=np.inf),
            max((float(t.values[-1]) for t in tables if len(t.values)), default=-np.inf),
            np.concatenate([t.sample(k) for t in tables]) if tables else np.empty(0),
        )

    @staticmethod
    def merge(parts: Sequence[ScoreSummary]) -> ScoreSummary:
        return ScoreSummary(
            float(sum(p.nx for p in parts)),
            float(sum(p.ny for p in parts)),
            float(sum(p.total for p in parts)),
            float(sum(p.sq for p in parts)),
            float(sum(p.correct for p in parts)),
            min(p.lo for p in parts),
            max(p.hi for p in parts),
            np.concatenate([p.samples for p in parts]),
        )

    def splitters(self, n_buckets: int) -> np.ndarray:
        """At most ``n_buckets - 1`` distinct scores cutting the records into similar buckets."""
        if n_buckets <= 1 or not len(self.samples):
            return self.samples[:0]
        pooled = np.sort(self.samples)
        at = np.linspace(0, len(pooled) - 1, n_buckets + 1)[1:-1].round().astype(np.int64)
        return np.unique(pooled[at])


@dataclass(frozen=True)
class BucketRanks:
    """What one bucket contributes to U and SPECKS (see :func:`rank_bucket`)."""

    wx: float
    wy: float
    u: float
    ks_points: np.ndarray  # (k, 2): cumulative (x, y) weights within the bucket at the extreme points


def rank_bucket(tables: Sequence[ScoreTable], nx: float, ny: float) -> BucketRanks:
    """U within a bucket, its weights, and the points where the KS distance may be largest.

    ``u`` sums, over the synthetic records of the bucket, the original records of the bucket
    below them plus half those tied with them.  The KS distance ``|Cx/nx - Cy/ny|`` at a value
    is ``(OX + lx)/nx - (OY + ly)/ny`` with the bucket's offsets ``OX, OY`` and its cumulative
    weights ``lx, ly``, so within the bucket its largest and smallest values are where
    ``lx ny - ly nx`` is (exact integers with integer weights); those points are kept, ties
    included.
    """
    t = ScoreTable.merge(tables) if tables else ScoreTable(np.empty(0), np.empty(0), np.empty(0), 0.0, 0.0, 0.0)
    if not len(t.values):
        return BucketRanks(0.0, 0.0, 0.0, np.empty((0, 2)))
    integral = float(nx).is_integer() and float(ny).is_integer()
    cx, cy, integral, u, points = _integral_ranks(t.wx, t.wy, int(nx) if integral else -1, int(ny) if integral else -1)
    if not integral:
        u = float(np.sum(t.wx * (cy - t.wy)) + np.sum(t.wx * t.wy) / 2)
        key = cx * ny - cy * nx
        pick = (key == key.max()) | (key == key.min())
        points = np.column_stack([cx[pick], cy[pick]])
    return BucketRanks(float(cx[-1]), float(cy[-1]), u, points)


@nb.njit(cache=True, nogil=True)
def _integral_ranks(wx, wy, nx, ny):  # pragma: no cover - compiled
    """:func:`rank_bucket`'s sums in two passes when every weight is whole (``nx``, ``ny`` -1: they are not).

    Returns the cumulative weights (``np.cumsum``'s sequential sums), whether they are all whole,
    and then U and the extreme points of ``cx ny - cy nx`` (in integers).  With whole weights
    every term and partial sum of U is an integer or a half below 2^53, so any order of the sums
    gives the same U.
    """
    n = wx.shape[0]
    cx = np.empty(n)
    cy = np.empty(n)
    integral = nx >= 0 and ny >= 0
    sx = sy = 0.0
    for i in range(n):
        sx += wx[i]
        sy += wy[i]
        cx[i] = sx
        cy[i] = sy
        integral = integral and sx == np.rint(sx) and sy == np.rint(sy)
    if not integral:
        return cx, cy, False, 0.0, np.empty((0, 2))
    below = half = 0.0
    keys = np.empty(n, dtype=np.int64)
    for i in range(n):
        below += wx[i] * (cy[i] - wy[i])
        half += wx[i] * wy[i]
        keys[i] = np.int64(cx[i]) * ny - np.int64(cy[i]) * nx
    pick = (keys == keys.max()) | (keys == keys.min())
    points = np.empty((np.count_nonzero(pick), 2))
    k = 0
    for i in range(n):
        if pick[i]:
            points[k, 0] = cx[i]
            points[k, 1] = cy[i]
            k += 1
    return cx, cy, True, below + half / 2, points


def combine_buckets(buckets: Sequence[BucketRanks], nx: float, ny: float) -> tuple[float, float]:
    """U and SPECKS of the buckets, in increasing order of their scores."""
    u, ks = 0.0, 0.0
    ox = oy = 0.0
    for b in buckets:
        u += b.u + b.wx * oy
        if len(b.ks_points):
            ks = max(ks, float(np.max(np.abs((ox + b.ks_points[:, 0]) / nx - (oy + b.ks_points[:, 1]) / ny))))
        ox += b.wx
        oy += b.wy
    return u, (ks if nx > 0 and ny > 0 else float("nan"))


def score_statistics(summary: ScoreSummary, buckets: Sequence[BucketRanks]) -> dict[str, float]:
    """pMSE, SPECKS, PO50 (threshold 0.5) and U from the summary and the ranked buckets."""
    u, ks = combine_buckets(buckets, summary.nx, summary.ny)
    return {
        "pMSE": summary.sq / summary.total,
        "SPECKS": ks,
        "PO50": summary.correct / summary.total * 100 - 50,
        "U": u,
    }


#: a score within this share of min(c, 1 - c) of 0 or 1 is a separated record's (odds 10^4 times the base)
SEPARATED_SCORE = 1e-4


def separated_records(table: ScoreTable, c: float) -> tuple[float, float]:
    """Weight of the records whose score is numerically 0 or 1 (records of one data set alone in
    cells of the design the other lacks: a separated logit fit) and their sum of ``(score - c)^2``,
    the part of pMSE's numerator they make."""
    tol = SEPARATED_SCORE * min(c, 1 - c)
    at = (table.values <= tol) | (table.values >= 1 - tol)
    w = table.wx[at] + table.wy[at]
    return float(w.sum()), float(np.sum(w * (table.values[at] - c) ** 2))


def propensity_stats(score: np.ndarray, t: np.ndarray, c: float, weights: np.ndarray | None = None) -> dict[str, float]:
    """pMSE, SPECKS, PO50 (threshold 0.5) and U of propensity scores (in memory: one bucket).

    Parameters
    ----------
    score : ndarray
        Predicted probability that each stacked record is synthetic (NaN = no prediction).
    t : ndarray
        1 for synthetic records, 0 for original ones.
    c : float
        The share of synthetic records (0.5 with ``k_syn``).
    weights : ndarray, optional
        Frequency weights (``aggregate=TRUE``); records otherwise count once.
    """
    table = ScoreTable.from_scores(score, t, c, weights)
    summary = ScoreSummary.of([table], k=0)
    separated, separated_sq = separated_records(table, c)
    stats = score_statistics(summary, [rank_bucket([table], summary.nx, summary.ny)])
    return {**stats, "separated": separated, "separated_sq": separated_sq, "total": summary.total}
