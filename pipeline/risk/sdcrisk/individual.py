"""Individual, global and household re-identification risk (sdcMicro ``indivRisk``,
``measure_risk``), as pure numpy kernels over frequencies.

The individual risk is Benedetti–Franconi's with sample frequency ``fk`` and population estimate
``Fk`` (the weight sum), ``pk = fk / Fk``; without weights it is ``1 / fk`` (sdcMicro's
``survey = FALSE``, what ``measure_risk`` uses when no weight is given).
"""

from __future__ import annotations

import numpy as np


def individual_risk(fk: np.ndarray, Fk: np.ndarray, weighted: bool = True, method: str = "approx") -> np.ndarray:
    """Benedetti–Franconi risk of each combination (or record) with frequencies ``fk``, ``Fk``.

    Parameters
    ----------
    fk, Fk : array
        Sample frequency and weight sum (after the missing-value matching).
    weighted : bool
        False gives ``1 / fk`` (sdcMicro ``indivRisk(survey = FALSE)``).
    method : {"approx", "exact"}
        sdcMicro's two formulas; "exact" is the alternating series of the paper.
    """
    fk = np.asarray(fk, dtype=float)
    if not weighted:
        return 1.0 / fk
    pk = fk / np.asarray(Fk, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # pk = 1 (weights summing to the count) is replaced by 1 / fk below
        ratio = pk / (1.0 - pk)
        one = ratio * np.log(1.0 / pk)
        two = ratio - ratio**2 * np.log(1.0 / pk)
        more = pk / (fk - (1.0 - pk)) if method == "approx" else _exact_more(fk, pk)
    risk = np.where(fk == 1, one, np.where(fk == 2, two, np.where(fk > 2, more, 0.0)))
    # a combination whose weights sum to its count is the population: risk 1 / fk
    return np.where(fk == np.asarray(Fk, dtype=float), 1.0 / fk, risk)


def _exact_more(fk: np.ndarray, pk: np.ndarray) -> np.ndarray:
    """sdcMicro's exact formula for ``fk > 2``: ``(pk/(1-pk))^fk * (A * (1 + BB) + (-1)^fk log pk)``
    with ``BB = sum_{m=0}^{fk-3} (-1)^(m+1) prod_{i<=m} B_i``; one vectorised step per term (the
    loop runs over ``m``, up to the largest ``fk``, not over records)."""
    out = np.zeros_like(pk)
    big = fk > 2
    f, p = fk[big], pk[big]
    a = (p ** (1 - f) - 1) / (f - 1)
    bb = np.zeros_like(p)
    b = np.ones_like(p)
    for m in range(int(f.max()) - 2 if f.size else 0):
        active = m <= f - 3
        step = (f - 1 - m) ** 2 / ((m + 1) * (f - 2 - m)) * (p ** (m + 2 - f) - 1) / (p ** (m + 1 - f) - 1)
        b = np.where(active, b * step, b)
        bb = np.where(active, bb + (-1) ** (m + 1) * b, bb)
    out[big] = (p / (1 - p)) ** f * (a * (1 + bb) + (-1) ** f * np.log(p))
    return out


def global_risk(risk: np.ndarray, counts: np.ndarray | None = None) -> dict[str, float]:
    """Expected re-identifications (the sum of the risks), the global risk (their mean) and its
    percent; ``counts`` gives each risk's number of records (default 1 each)."""
    n = np.ones(len(risk)) if counts is None else np.asarray(counts, dtype=float)
    er = float(np.nansum(np.asarray(risk, dtype=float) * n))
    mean = er / float(n.sum())
    return {"global_risk_ER": er, "global_risk": mean, "global_risk_pct": 100.0 * mean}


def risk_threshold(risk: np.ndarray, max_global_risk: float = 0.01, counts: np.ndarray | None = None) -> float:
    """The individual-risk threshold whose release keeps the global risk below ``max_global_risk``
    (sdcMicro's ``measure_threshold``, micro-Argus 4.1 eq. 17); NaN where sdcMicro gives NA (the
    file is already safe, or the threshold is the smallest risk itself).

    Records are taken from the highest risk down; at each new risk value ``r`` after ``j``
    records, the threshold is ``r`` once ``(sum of the remaining risks) + r * j`` falls below
    ``max_global_risk * n``; none found gives 0.  ``counts`` gives each risk's number of
    records (default 1 each).
    """
    r = np.asarray(risk, dtype=float)
    n = np.ones(len(r)) if counts is None else np.asarray(counts, dtype=float)
    values, inverse = np.unique(r, return_inverse=True)
    values, per_value = values[::-1], np.bincount(inverse, weights=n)[::-1]
    er = max_global_risk * n.sum()
    total = float(np.sum(r * n))
    if total < er:
        return float("nan")
    before = np.cumsum(per_value) - per_value  # records with a higher risk
    remaining = total - (np.cumsum(values * per_value) - values * per_value)
    found = np.flatnonzero((remaining + values * before < er)[1:]) + 1
    if found.size == 0:
        return 0.0 if values[-1] != 0.0 else float("nan")
    return float(values[found[0]])


def household_risk(risk: np.ndarray, household: np.ndarray, counts: np.ndarray | None = None) -> np.ndarray:
    """Each record's household risk: ``1 - prod(1 - r)`` over the records of its household
    (``counts``: rows standing for several records of one household with one risk)."""
    codes, inverse = np.unique(household, return_inverse=True)
    order = np.argsort(inverse, kind="stable")
    starts = np.searchsorted(inverse[order], np.arange(len(codes)))
    safe_each = 1.0 - np.asarray(risk, dtype=float)
    if counts is not None:
        safe_each = safe_each ** np.asarray(counts, dtype=float)
    # a product in record order within each household, as R's prod()
    safe = np.multiply.reduceat(safe_each[order], starts)
    return (1.0 - safe)[inverse]


def kanon_violations(frequency: np.ndarray, k: float) -> int:
    """Records whose (sample ``fk`` or population ``Fk``) frequency is below ``k``
    (sdcMicro ``kAnon_violations``; k rounded as there)."""
    return int(np.sum(np.asarray(frequency) < round(k)))


__all__ = ["global_risk", "household_risk", "individual_risk", "kanon_violations", "risk_threshold"]
