"""One comparison language for every holdout comparison: the residual, the interval, the verdict.

A holdout comparison puts a figure computed with the **training** records (those the synthetic
data were made from) beside the same figure computed with **holdout** records of the same
population that the synthesis never saw. Whatever the measure (repU, DiSCO and file risk by
equal footing, :mod:`pipeline.evaluation.baseline`; the attacks' main and control rates; the
share of synthetic records closer to a training than to a holdout record), it is said in the
same words, modelled on anonymeter's ``EvaluationResults``:

* the **difference** ``training − holdout``, the excess the synthesis adds, with a 95 %
  :class:`Interval`;
* the **residual** ``scale · (training − holdout) / (scale − holdout)`` (:func:`residual`;
  anonymeter's risk ``(main − control) / (1 − control)`` for a rate): the share of what the
  holdout leaves to be learnt that the synthetic data reveal, where a figure has a ceiling;
* the **verdict** on the difference's interval (:func:`verdict`): above the holdout ("the
  synthesis adds risk"), below it, or no excess detected at this size — with the smallest excess
  the data could detect (:attr:`Interval.detectable`);
* over m synthetic sets, the verdict is on the **mean over sets** (:meth:`Comparison.over_sets`),
  never on the worst set judged as if it were the only one;
* over the S settings of one figure (targets, scenarios, radii), the report shows the setting
  with the largest excess: its interval is **simultaneous** (:func:`simultaneous_bounds`, method
  ``max-t``), wide enough that all S intervals cover their true values together, so choosing the
  worst setting does not raise the rate of false "adds risk" verdicts.

The rows of the results table say which part of a comparison they hold in three columns
(:data:`ROLES`, :data:`SUMMARIES`, :data:`METHODS`): ``role`` (the measure's own figure, or its
training / holdout figure, excess or residual), ``summary`` (a mean, sd or interval bound over
synthetic sets, or none: one set's value) and ``method`` (how an interval bound was drawn).

A measure declares which of its rows form a comparison by its :attr:`Measure.holdout_view
<pipeline.evaluation.base.Measure.holdout_view>`: a tuple of :class:`Compared` (the report reads
nothing else to build its excess table).

Every function takes aggregates (counts, rates, figures) and returns floats: no record value.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

#: the coverage of every interval
LEVEL = 0.95
#: the power at which :attr:`Interval.detectable` is stated
POWER = 0.80

#: ``role`` of a row: what part of a comparison its value is
OBSERVED, TRAINING, HOLDOUT, EXCESS, RESIDUAL = "observed", "training", "holdout", "excess", "residual"
ROLES = (OBSERVED, TRAINING, HOLDOUT, EXCESS, RESIDUAL)
#: ``summary`` of a row over synthetic sets (None: one set's value)
SUMMARIES = ("mean", "sd", "lower95", "upper95")
#: ``method`` of an interval bound
T, PERMUTATION, BOOTSTRAP, WILSON, MAX_T = "t", "permutation", "bootstrap", "wilson", "max-t"
METHODS = (T, PERMUTATION, BOOTSTRAP, WILSON, MAX_T)
#: how the intervals of a figure's several settings are drawn: ``simultaneous`` (max-t over the
#: settings, :func:`simultaneous_bounds`) or ``each`` (every setting's own interval, as if it were
#: the only one: the rule before issue 32, kept for comparison)
Settings = Literal["simultaneous", "each"]
#: normal draws behind :func:`simultaneous_quantile` (Monte Carlo standard error ≈ 0.01 on a value near 2.5)
SIMULTANEOUS_DRAWS = 20_000
#: ``synthetic`` of the summary rows over every synthetic set (a measure's own rows may use "mean"
#: for its own average over sets, as synthpop does: the two are never confused)
ALL_SETS = "all"

#: the verdicts on an excess interval
ADDS_RISK = "the synthesis adds risk"
NO_EXCESS = "no excess detected at this size"
BELOW = "below the holdout"
NO_INTERVAL = "no interval"
VERDICTS = (ADDS_RISK, NO_EXCESS, BELOW, NO_INTERVAL)


def _z(p: float) -> float:
    """The normal quantile: scipy.stats.norm.ppf's own function (scipy.special), imported on first
    use so that importing the contract (every command's start) loads no scipy."""
    from scipy.special import ndtri

    return float(ndtri(p))


def simultaneous_quantile(spread: Sequence[Sequence[float]], level: float = LEVEL) -> float:
    """The critical value ``c`` of simultaneous intervals ``value_s ± c · sd_s`` over S settings.

    ``spread`` holds one row per random relabelling of training and holdout records and one
    column per setting: the settings' statistics on the same relabellings, so their correlation is
    the correlation of the settings' sampling errors (nested radii, targets of the same records).
    ``c`` is the ``level`` quantile of ``max_s |T_s|`` for a multivariate t vector with the
    columns' correlation and ``R − 1`` degrees of freedom (Hothorn, Bretz & Westfall's max-t, the
    normal approximation :func:`~pipeline.evaluation.intervals.shift_interval` already makes for
    one setting), computed by a seeded Monte Carlo: the same ``spread`` always gives the same
    ``c``. With one setting it is the t quantile of that interval; it never exceeds Bonferroni's
    ``t(1 − (1 − level) / 2S)``, which it approaches when the settings are uncorrelated.

    A permutation quantile of the maximum itself would need at least 40 relabellings for a
    one-sided 2.5 % (each costs two evaluations); the max-t takes its dependence from the
    relabellings the interval already draws.
    """
    import numpy as np
    from scipy.special import stdtrit

    r = np.asarray(spread, dtype=np.float64)
    r = r[np.isfinite(r).all(axis=1)]
    df = len(r) - 1
    if df < 1:
        return math.nan
    settings = r.shape[1]
    tail = (1.0 - level) / 2
    if settings == 1:
        return float(stdtrit(df, 1.0 - tail))
    bonferroni = float(stdtrit(df, 1.0 - tail / settings))
    sd = r.std(axis=0, ddof=1)
    if df < 2 or not (sd > 0).all():
        return bonferroni
    values, vectors = np.linalg.eigh(np.corrcoef(r, rowvar=False))
    root = vectors * np.sqrt(np.clip(values, 0.0, None))
    rng = np.random.default_rng(settings)
    z = rng.standard_normal((SIMULTANEOUS_DRAWS, settings)) @ root.T
    t = np.abs(z) / np.sqrt(rng.chisquare(df, SIMULTANEOUS_DRAWS) / df)[:, None]
    return min(float(np.quantile(t.max(axis=1), level)), bonferroni)


def simultaneous_bounds(
    values: Sequence[float], spread: Sequence[Sequence[float]], level: float = LEVEL
) -> list[tuple[float, float]]:
    """Per setting, ``value ± c · sd``: ``sd`` the standard deviation of its column of ``spread``
    (relabellings × settings), ``c`` :func:`simultaneous_quantile` over the settings with a spread.

    A setting alone (the only one with a spread) keeps :func:`~pipeline.evaluation.intervals.shift_interval`'s
    t interval; NaN bounds for a setting with fewer than 2 finite relabelled values or no value.
    """
    import numpy as np
    from scipy.special import stdtrit

    r = np.asarray(spread, dtype=np.float64).reshape(-1, len(values))
    finite = np.isfinite(r)
    counts = finite.sum(axis=0)
    sd = np.array([np.std(r[finite[:, s], s], ddof=1) if counts[s] >= 2 else math.nan for s in range(len(values))])
    family = np.flatnonzero((counts >= 2) & (sd > 0))
    c = simultaneous_quantile(r[:, family], level) if len(family) > 1 else math.nan
    tail = (1.0 - level) / 2
    out = []
    for s, value in enumerate(values):
        if counts[s] < 2 or not math.isfinite(value):
            out.append((math.nan, math.nan))
            continue
        if s in family and len(family) > 1:
            # too few relabellings finite in every setting at once: Bonferroni over the family
            k = c if math.isfinite(c) else float(stdtrit(counts[s] - 1, 1.0 - tail / len(family)))
        else:
            k = float(stdtrit(counts[s] - 1, 1.0 - tail))
        out.append((value - k * sd[s], value + k * sd[s]))
    return out


def residual(training: float, holdout: float, scale: float = 1.0) -> float:
    """The one residual: ``scale · (training − holdout) / (scale − holdout)`` (NaN when the holdout
    figure is at the ceiling ``scale``).

    For rates (``scale`` 1) it is anonymeter's risk ``(main − control) / (1 − control)``; for a
    percentage ``scale`` is 100. It may be negative (the holdout figure is the larger).
    """
    return scale * (training - holdout) / (scale - holdout) if scale != holdout else math.nan


@dataclass(frozen=True)
class Rate:
    """A rate with a symmetric error: ``value ± error`` is the interval before bounding to [0, 1]."""

    value: float
    error: float

    @property
    def lower(self) -> float:
        return min(max(self.value - self.error, 0.0), 1.0)

    @property
    def upper(self) -> float:
        return min(max(self.value + self.error, 0.0), 1.0)


def wilson(successes: int, trials: int, confidence: float) -> Rate:
    """Wilson score interval of a binomial rate: its centre ``(s + z^2/2) / (n + z^2)`` and half-width.

    anonymeter (1.1.0, ``anonymeter.stats.confidence``; our own code) reports the centre as the
    success rate (it moves the observed share towards 0.5 by ``z^2 / (n + z^2)``, negligible at
    hundreds of attacks).  No attack (``trials == 0``): rate NaN.  ``successes`` is clipped to
    ``[0, trials]`` so the variance is never negative.
    """
    if trials <= 0:
        return Rate(math.nan, math.nan)
    s = min(max(successes, 0), trials)
    z = _z(0.5 * (1.0 + confidence))
    z2 = z * z
    denominator = trials + z2
    centre = (s + 0.5 * z2) / denominator
    error = (z / denominator) * math.sqrt(s * (trials - s) / trials + 0.25 * z2)
    return Rate(centre, error)


def residual_rate(main: Rate, control: Rate) -> Rate:
    """:func:`residual` of two rates with the error propagated to first order (anonymeter's risk).

    The Wilson centre of the control rate is below 1 for any finite number of attacks, so the
    division is always defined.  The value may be negative (the control attack did better);
    :attr:`Rate.lower`/:attr:`Rate.upper` bound the interval to [0, 1] and :func:`bounded` the
    value, as anonymeter reports them.
    """
    if math.isnan(main.value) or math.isnan(control.value):
        return Rate(math.nan, math.nan)
    room = 1.0 - control.value
    d_main = 1.0 / abs(room)
    d_control = (main.value - 1.0) / room**2
    return Rate(residual(main.value, control.value), math.hypot(main.error * d_main, control.error * d_control))


def bounded(value: float) -> float:
    """``value`` bounded to [0, 1] (NaN stays NaN)."""
    return value if math.isnan(value) else min(max(value, 0.0), 1.0)


def verdict(lower: float, upper: float) -> str:
    """The verdict on an excess interval: above 0 adds risk, below 0 is below the holdout,
    covering 0 detects no excess at this size (a larger holdout narrows the interval)."""
    if math.isnan(lower) or math.isnan(upper):
        return NO_INTERVAL
    if lower > 0:
        return ADDS_RISK
    return BELOW if upper < 0 else NO_EXCESS


@dataclass(frozen=True)
class Interval:
    """A value with its 95 % interval and how the interval was drawn (:data:`METHODS`)."""

    value: float
    lower: float
    upper: float
    method: str

    @property
    def verdict(self) -> str:
        return verdict(self.lower, self.upper)

    @property
    def detectable(self) -> float:
        """The smallest excess detected with probability :data:`POWER` at this interval's width:
        ``(z(0.975) + z(0.80)) · se`` with ``se`` the half-width over ``z(0.975)`` (≈ 1.43 times
        the half-width; NaN without an interval)."""
        half = (self.upper - self.lower) / 2
        z = _z(0.5 + LEVEL / 2)
        return half / z * (z + _z(POWER)) if math.isfinite(half) else math.nan

    @classmethod
    def of_rates(cls, main: Rate, control: Rate) -> Interval:
        """The difference of two independent rates with the normal interval of their errors."""
        return cls.around(main.value - control.value, math.hypot(main.error, control.error), WILSON)

    @classmethod
    def around(cls, value: float, half: float, method: str) -> Interval:
        return cls(value, value - half, value + half, method)


@dataclass(frozen=True)
class Comparison:
    """One figure against its holdout: the two figures, the difference with its interval (the
    verdict is on it) and, where the figure has a ceiling, the residual with its interval."""

    training: float
    holdout: float
    difference: Interval
    residual: Interval | None = None
    sets: int = 1

    @property
    def verdict(self) -> str:
        return self.difference.verdict

    @classmethod
    def over_sets(cls, per_set: Sequence[Comparison]) -> Comparison:
        """The comparison of the mean over m synthetic sets — what a verdict over m sets judges,
        instead of the worst set as if it were the only one.

        Each interval's half-width is averaged: the standard error of a mean of m estimates is at
        most the mean of their standard errors, whatever their correlation (the sets share the
        training and holdout records), so the interval keeps at least its coverage.
        """
        if len(per_set) == 1:
            return per_set[0]
        return cls(
            _mean([c.training for c in per_set]),
            _mean([c.holdout for c in per_set]),
            _mean_interval([c.difference for c in per_set]),
            None if any(c.residual is None for c in per_set) else _mean_interval([c.residual for c in per_set]),
            len(per_set),
        )


def _mean(values: Sequence[float]) -> float:
    finite = [v for v in values if math.isfinite(v)]
    return math.fsum(finite) / len(finite) if finite else math.nan


def _mean_interval(intervals: Sequence[Interval | None]) -> Interval:
    given = [i for i in intervals if i is not None]
    return Interval(
        _mean([i.value for i in given]),
        math.fsum(i.lower for i in given) / len(given),
        math.fsum(i.upper for i in given) / len(given),
        given[0].method,
    )


#: how a measure's rows hold a comparison: ``footing`` — holdout-baseline rows (``role``
#: training/holdout/excess/residual) from :mod:`pipeline.evaluation.baseline`; ``rates`` — each
#: set's own rows of a training and a holdout rate (``<measure>_lower``/``_upper`` the bounds);
#: ``share`` — each set's own share of records closer to training than to holdout, against ``null``
View = Literal["footing", "rates", "share"]


@dataclass(frozen=True)
class Compared:
    """One figure of a measure's holdout view (:attr:`Measure.holdout_view
    <pipeline.evaluation.base.Measure.holdout_view>`).

    Attributes
    ----------
    title : str
        What the report calls it, with its unit.
    training : str
        The row measure of the figure with training records (``footing``: the baseline measure).
    view : {"footing", "rates", "share"}
        How the rows hold the comparison (:data:`View`).
    holdout : str, optional
        ``rates``: the row measure of the holdout (control) rate.
    residual : str, optional
        ``rates``: the row measure of the residual the measure reports itself (bounds
        ``<residual>_lower``/``_upper``).
    null : float
        ``share``: the share expected when the synthesis memorises nothing.
    scale : float
        The values are shown times this (a share as a percentage: 100).
    method : str
        ``rates``/``share``: how the measure's own interval bounds were drawn (:data:`METHODS`).
    """

    title: str
    training: str
    view: View
    holdout: str | None = None
    residual: str | None = None
    null: float = 0.5
    scale: float = 1.0
    method: str = WILSON
