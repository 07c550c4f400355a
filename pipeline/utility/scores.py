"""Statistics of propensity scores and of weighted score distributions.

Shared by ``utility_gen`` (one score per stacked record, optionally with frequency weights)
and ``utility_tab`` (one score per table cell, weighted by the cell counts):

* ``ks_statistic`` — two-sample Kolmogorov–Smirnov D (R ``ks.test(...)$statistic``);
* ``wilcoxon_w`` — R ``wilcox.test(x, y)$statistic`` (rank sum of ``x`` with mid-ranks minus
  ``n_x (n_x + 1) / 2``).

Both are computed from the distinct score values and the weights of the two groups at each
value, so replicated vectors never need to be built.
"""

from __future__ import annotations

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


def propensity_stats(score: np.ndarray, t: np.ndarray, c: float, weights: np.ndarray | None = None) -> dict[str, float]:
    """pMSE, SPECKS, PO50 (threshold 0.5) and U of propensity scores.

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
    w = np.ones(len(score)) if weights is None else np.asarray(weights, dtype=float)
    n_total = float(w.sum())
    ok = ~np.isnan(score)
    s, tt, ww = score[ok], t[ok], w[ok]
    pmse = float(np.sum(ww * (s - c) ** 2) / n_total)
    syn = tt == 1
    correct = (syn & (s > 0.5)) | (~syn & (s <= 0.5))
    po50 = float(np.sum(ww[correct]) / n_total * 100 - 50)
    wx = np.where(syn, ww, 0.0)
    wy = np.where(syn, 0.0, ww)
    return {
        "pMSE": pmse,
        "SPECKS": ks_statistic(s, wx, wy),
        "PO50": po50,
        "U": wilcoxon_w(s, wx, wy),
    }
