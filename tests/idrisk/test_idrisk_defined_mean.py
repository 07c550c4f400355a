"""The rows' mean over synthetic sets (computed alone for every bootstrap replicate) is the mean
that :func:`summarise` reports, undefined values ignored."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pipeline.risk.idrisk.result import defined_mean, summarise


@pytest.mark.parametrize(
    "values",
    [
        np.array([0.25]),
        np.array([0.1, 0.2, 0.7, 0.3]),
        np.array([math.nan, 0.5, 0.25]),
        np.arange(20) / 7.0,
    ],
)
def test_defined_mean_is_the_summary_mean(values):
    assert defined_mean(values) == summarise(values)["mean"]


def test_defined_mean_of_only_undefined_values_is_undefined():
    assert math.isnan(defined_mean(np.array([math.nan, math.nan])))
    assert math.isnan(summarise(np.array([math.nan]))["mean"])
