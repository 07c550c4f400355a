"""synthpop's combining rules (``summary.fit.synds``) and comparison (``compare.fit.synds``).

Pure functions of the fitted coefficients and covariances; where synthpop's code and its
vignette differ, the code is followed (docs/compare_fit.md lists each point):

* the standardised difference divides by the *original's* standard error;
* ``coef.syn`` of the comparison takes its variance from the original's covariance
  (``real.varcov``), not from the synthetic fits, and without the ``k / n`` factor;
* the chi-square lack-of-fit test uses ``V = real.varcov * n / (k m)`` whether or not the
  synthesis was proper, with ``MASS::ginv`` (singular values below ``sqrt(eps)`` times the
  largest dropped, while the degrees of freedom stay the number of coefficients);
* for incomplete synthesis it is Hotelling's T² on the between-synthesis variance, with
  ``F(ncoef, m - ncoef)``, and none when ``m < ncoef``;
* population inference for incomplete synthesis with ``m = 1`` proceeds as if complete (and
  the comparison then uses the complete-synthesis test);
* an aliased coefficient (R's NA) is NaN in its fit; the means over the sets leave it out where
  it is NaN (synthpop's ``mcoefvar``: ``mean(na.rm = TRUE)``), the between-set variance is NaN
  when a set lacks it (``var`` without ``na.rm``), and the lack-of-fit test and the means of the
  comparison take only the coefficients whose difference is defined (synthpop's test runs over
  the coefficients of the original's fit, which leaves out those aliased there).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from pipeline.rmodels.regression import FittedModel, ginv


@dataclass(frozen=True)
class Combined:
    """The combining-rule quantities and synthpop's summary table (one row per coefficient)."""

    qbar: np.ndarray
    ubar: np.ndarray
    b: np.ndarray  # NaN for m = 1
    se: np.ndarray
    z: np.ndarray
    p: np.ndarray
    incomplete: bool


@dataclass(frozen=True)
class Comparison:
    """``compare.fit.synds``'s tables and statistics."""

    obs: FittedModel
    syn_se: np.ndarray
    syn_z: np.ndarray
    diff: np.ndarray
    std_diff: np.ndarray
    ci_overlap: np.ndarray
    lack_of_fit: float | None
    lof_pvalue: float | None
    lof_test: str  # "chi-square", "hotelling" or "none"
    lof_df: tuple[int, ...]
    lof_rank: int
    incomplete: bool
    #: coefficients left out of the lack-of-fit test (aliased in the original or a synthetic set)
    lof_excluded: int = 0

    @property
    def mean_ci_overlap(self) -> float:
        """Mean over the coefficients with an overlap (an aliased one has none)."""
        return float(np.nanmean(self.ci_overlap)) if np.isfinite(self.ci_overlap).any() else float("nan")

    @property
    def mean_abs_std_diff(self) -> float:
        """Mean over the coefficients with a standardised difference."""
        return float(np.nanmean(np.abs(self.std_diff))) if np.isfinite(self.std_diff).any() else float("nan")


def combine(
    fits: list[FittedModel],
    n: int,
    k: int,
    population_inference: bool,
    incomplete: bool,
    proper: bool,
    variances: np.ndarray | None = None,
) -> Combined:
    """``summary.fit.synds``: ``variances`` is ``diag(real.varcov)`` when given (the comparison),
    else the mean of the synthetic variances times ``k / n``."""
    m = len(fits)
    coef = np.vstack([f.coefficients for f in fits])
    var = np.vstack([f.se**2 for f in fits])
    qbar, ubar = _mean_present(coef), _mean_present(var)
    b = coef.var(axis=0, ddof=1) if m > 1 else np.full(coef.shape[1], np.nan)
    vars_ = ubar * k / n if variances is None else variances
    if population_inference and incomplete and m == 1:
        incomplete = False  # synthpop: "calculations proceed as if all variables had been synthesised"
    if not population_inference:
        total = vars_
    elif incomplete:
        total = b / m + vars_
    else:
        total = vars_ * (1 + (n / k + 1) / m) if proper else vars_ * (1 + n / k / m)
    se = np.sqrt(total)
    z = qbar / se
    return Combined(qbar, ubar, b, se, z, 2 * stats.norm.cdf(-np.abs(z)), incomplete)


def _mean_present(values: np.ndarray) -> np.ndarray:
    """Column means over the non-NaN entries (NaN where there is none): R's ``mean(na.rm = TRUE)``."""
    present = ~np.isnan(values)
    count = present.sum(axis=0)
    total = np.where(present, values, 0.0).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / count, np.nan)


def overlap_ci(syn: np.ndarray, syn_se: np.ndarray, obs: np.ndarray, obs_se: np.ndarray, level: float) -> np.ndarray:
    """Karr et al.'s interval overlap (synthpop ``overlap.CI``), negative when the intervals are apart."""
    c = stats.norm.ppf(1 - (1 - level) / 2)
    syn_lo, syn_hi = syn - c * syn_se, syn + c * syn_se
    obs_lo, obs_hi = obs - c * obs_se, obs + c * obs_se
    width = np.minimum(obs_hi, syn_hi) - np.maximum(obs_lo, syn_lo)
    return 0.5 * (width / (obs_hi - obs_lo) + width / (syn_hi - syn_lo))


def compare(
    fits: list[FittedModel],
    original: FittedModel,
    n: int,
    k: int,
    population_inference: bool,
    incomplete: bool,
    proper: bool,
    ci_level: float,
) -> Comparison:
    """``compare.fit.synds`` of the synthetic fits against the fit to the original."""
    m = len(fits)
    real_varcov = original.vcov
    syn = combine(fits, n, k, population_inference, incomplete, proper, np.diag(real_varcov))
    obs_se = original.se
    diff = syn.qbar - original.coefficients
    overlap = overlap_ci(syn.qbar, syn.se, original.coefficients, obs_se, ci_level)
    coefs = np.vstack([f.coefficients for f in fits])
    used = np.isfinite(diff) & np.isfinite(np.diag(real_varcov))  # aliased coefficients are left out
    if syn.incomplete:  # the between-set variance needs every set's estimate
        used &= np.isfinite(coefs).all(axis=0)
    ncoef = int(used.sum())
    d = diff[used]
    lof, pvalue, test, df, rank = None, None, "none", (), 0
    if syn.incomplete:
        coef = coefs[:, used]
        if 0 < ncoef <= m:
            qb = coef - coef.mean(axis=0)
            inv, rank = ginv(qb.T @ qb / (m - 1) / m)
            lof = float(d @ inv @ d) * (m - ncoef) / ncoef / (m - 1)
            pvalue = float(1 - stats.f.cdf(lof, ncoef, m - ncoef)) if m > ncoef else float("nan")
            test, df = "hotelling", (ncoef, m - ncoef)
    elif ncoef:
        inv, rank = ginv(real_varcov[np.ix_(used, used)] * n / k / m)
        lof = float(d @ inv @ d)
        pvalue = float(1 - stats.chi2.cdf(lof, ncoef))
        test, df = "chi-square", (ncoef,)
    return Comparison(original, syn.se, syn.qbar / syn.se, diff, diff / obs_se, overlap, lof, pvalue, test, df, rank,
                      syn.incomplete, len(diff) - ncoef)  # fmt: skip
