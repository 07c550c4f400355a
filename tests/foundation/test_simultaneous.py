"""Simultaneous intervals over a figure's settings (evaluation.comparison.simultaneous_bounds): the
max-t critical value from the relabellings, and the false-positive rate of judging the worst of
several settings."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from pipeline.evaluation.comparison import simultaneous_bounds, simultaneous_quantile
from pipeline.evaluation.intervals import shift_interval


def _correlated(rng: np.random.Generator, rows: int, settings: int, rho: float) -> np.ndarray:
    shared = rng.standard_normal((rows, 1))
    return np.sqrt(rho) * shared + np.sqrt(1 - rho) * rng.standard_normal((rows, settings))


def test_one_setting_keeps_its_own_t_interval():
    spread = np.random.default_rng(1).standard_normal(20)
    ((lower, upper),) = simultaneous_bounds([0.3], spread[:, None])
    assert (lower, upper) == pytest.approx(shift_interval(0.3, spread), rel=1e-15)


def test_the_critical_value_lies_between_one_setting_and_bonferroni():
    rng = np.random.default_rng(2)
    df = 199
    t, bonferroni = stats.t.ppf(0.975, df), stats.t.ppf(1 - 0.025 / 5, df)
    independent = simultaneous_quantile(rng.standard_normal((200, 5)))
    # Šidák's value for 5 independent settings: (1 - 0.05)^(1/5) two-sided
    assert independent == pytest.approx(stats.t.ppf(0.5 + 0.5 * 0.95 ** (1 / 5), df), abs=0.03)
    assert independent <= bonferroni
    nested = simultaneous_quantile(_correlated(rng, 200, 5, 0.98))
    assert t < nested < independent - 0.2
    # the same spread gives the same value (a seeded Monte Carlo): results do not depend on workers
    spread = rng.standard_normal((20, 3))
    assert simultaneous_quantile(spread) == simultaneous_quantile(spread.copy())


def test_the_worst_of_five_settings_holds_the_level_and_the_old_rule_does_not():
    """A null with five correlated settings, 20 relabellings each: how often the largest setting's
    interval lies above 0 (nominal 2.5 %)."""
    rng = np.random.default_rng(3)
    reps, above_each, above_together = 400, 0, 0
    for _ in range(reps):
        draws = _correlated(rng, 21, 5, 0.5)  # the observed excess and 20 relabellings
        observed, spread = draws[0], draws[1:]
        together = simultaneous_bounds(observed.tolist(), spread)
        above_together += max(lower for lower, _ in together) > 0
        above_each += max(shift_interval(v, spread[:, s])[0] for s, v in enumerate(observed)) > 0
    assert above_each / reps > 0.06  # the worst of five judged alone: about 3 times the level
    assert above_together / reps <= 0.025 + 0.02  # binomial slack of 400 (one-sided 95 %)


def test_settings_without_a_spread_get_no_interval_or_their_own():
    spread = np.column_stack([np.arange(10.0), np.full(10, np.nan), np.ones(10)])
    bounds = simultaneous_bounds([1.0, 1.0, 1.0], spread)
    assert bounds[0] == pytest.approx(shift_interval(1.0, spread[:, 0]))  # the only one with a spread
    assert all(np.isnan(bounds[1]))
    assert bounds[2] == (1.0, 1.0)
