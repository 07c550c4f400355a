"""Binomial rates with Wilson intervals and anonymeter's residual risk, shared by the DCR share and
the attacks (anonymeter 1.1.0, ``anonymeter.stats.confidence``; our own code).

Every function takes counts and returns floats: no record value is involved.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scipy.special import ndtri


@dataclass(frozen=True)
class Rate:
    """A rate with a symmetric error: ``value +- error`` is the interval before bounding to [0, 1]."""

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

    anonymeter reports the centre as the success rate (it moves the observed share towards 0.5
    by ``z^2 / (n + z^2)``, negligible at hundreds of attacks).  No attack (``trials == 0``):
    rate NaN.  ``successes`` is clipped to ``[0, trials]`` so the variance is never negative.
    """
    if trials <= 0:
        return Rate(math.nan, math.nan)
    s = min(max(successes, 0), trials)
    z = float(
        ndtri(0.5 * (1.0 + confidence))
    )  # the normal quantile (scipy.stats.norm.ppf, without loading scipy.stats)
    z2 = z * z
    denominator = trials + z2
    centre = (s + 0.5 * z2) / denominator
    error = (z / denominator) * math.sqrt(s * (trials - s) / trials + 0.25 * z2)
    return Rate(centre, error)


def residual_risk(main: Rate, control: Rate) -> Rate:
    """anonymeter's risk ``(main - control) / (1 - control)`` with the error propagated to first order.

    The Wilson centre of the control rate is below 1 for any finite number of attacks, so the
    division is always defined (anonymeter issue 32's failure came from an error term; here the
    variance is clipped at 0 by :func:`wilson`).  The value may be negative (the control attack
    did better); :attr:`Rate.lower`/:attr:`Rate.upper` bound the interval to [0, 1] and
    :func:`bounded` the value, as anonymeter reports them.
    """
    if math.isnan(main.value) or math.isnan(control.value):
        return Rate(math.nan, math.nan)
    room = 1.0 - control.value
    value = (main.value - control.value) / room
    d_main = 1.0 / abs(room)
    d_control = (main.value - 1.0) / room**2
    return Rate(value, math.hypot(main.error * d_main, control.error * d_control))


def bounded(value: float) -> float:
    """``value`` bounded to [0, 1] (NaN stays NaN)."""
    return value if math.isnan(value) else min(max(value, 0.0), 1.0)
