"""synthpop's ``remove.lindep.syn``: the predictors a model may use.

Before every model synthpop drops predictors (numeric codes: factors by their level index)
whose variance is at most ``eps = 1e-5``, or whose correlation with the response's codes is at
least ``maxcor = 0.99999`` (signed, not absolute), and then, while the correlation matrix of
the rest is near singular (smallest / largest eigenvalue < ``eps``), the predictor with the
largest weight in the eigenvector of the smallest eigenvalue.
"""

from __future__ import annotations

import numpy as np

EPS = 1e-5
MAXCOR = 0.99999


def lindep_keep(x: np.ndarray, y: np.ndarray, eps: float = EPS, maxcor: float = MAXCOR) -> np.ndarray:
    """Which columns of ``x`` (records x predictors, numeric codes) to keep for response ``y``."""
    p = x.shape[1]
    if p == 0:
        return np.zeros(0, dtype=bool)
    with np.errstate(invalid="ignore", divide="ignore"):
        var = np.var(x, axis=0, ddof=1)
        keep = var > eps  # NaN (a missing value) -> False, as R's keep[is.na(keep)] <- FALSE
        xc = x - x.mean(axis=0)
        yc = y - y.mean()
        cor = (xc * yc[:, None]).sum(axis=0) / np.sqrt((xc**2).sum(axis=0) * (yc**2).sum())
    keep &= cor < maxcor  # NaN (constant y) -> False
    while keep.sum() > 1:
        idx = np.flatnonzero(keep)
        values, vectors = np.linalg.eigh(np.corrcoef(x[:, idx], rowvar=False))
        if values[0] / values[-1] >= eps:
            break
        keep[idx[int(np.argmax(np.abs(vectors[:, 0])))]] = False
    return keep
