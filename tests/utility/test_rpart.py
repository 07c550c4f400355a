"""The rpart port on small cases whose trees are known."""

from __future__ import annotations

import numpy as np

from pipeline.rmodels.rpart import _mysort, fit_rpart


def test_split_that_keeps_the_majority_class_is_pruned():
    # spec §5.2: level A 40x0/10x1, level B 30x0/20x1 -> rpart returns the root only
    x = np.array([[1.0]] * 50 + [[2.0]] * 50)
    y = np.array([0] * 40 + [1] * 10 + [0] * 30 + [1] * 20)
    fit = fit_rpart(x, np.array([2]), y, cp=0.0, minbucket=5)
    assert fit.n_nodes == 1
    np.testing.assert_allclose(fit.prob, 0.3)
    # cp < 0 keeps it
    assert fit_rpart(x, np.array([2]), y, cp=-1.0, minbucket=5).n_nodes == 3


def test_numeric_split_and_leaf_probabilities():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(400, 1))
    y = (x[:, 0] > 0.3).astype(int)
    fit = fit_rpart(x, np.array([0]), y, cp=1e-3, minbucket=5)
    assert fit.n_leaves == 2
    np.testing.assert_array_equal(fit.prob, y.astype(float))


def test_minsplit_defaults_follow_rpart_control():
    # 14 records < minsplit = 3 * minbucket = 15: no split at all
    x = np.arange(14, dtype=float)[:, None]
    y = np.array([0] * 7 + [1] * 7)
    assert fit_rpart(x, np.array([0]), y, cp=0.0, minbucket=5).n_nodes == 1
    assert fit_rpart(x, np.array([0]), y, cp=0.0, minbucket=5, minsplit=10).n_nodes == 3


def test_mysort_sorts_and_carries_indices():
    rng = np.random.default_rng(1)
    x = rng.integers(0, 20, 500).astype(float)
    idx = np.arange(500, dtype=np.int64)
    xs = x.copy()
    _mysort(xs, idx)
    np.testing.assert_array_equal(xs, np.sort(x))
    np.testing.assert_array_equal(x[idx], xs)
