"""The rpart trees syn.cart fits: equal to R's node for node (partial_syn_trees.json)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from reference import reference_path

from pipeline.data.schema import Schema
from pipeline.rmodels.rpart import LEFT, RIGHT, fit_rpart, fit_tree

TREES = json.loads(reference_path("reference/partial_syn/partial_syn_trees.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def cedata() -> pd.DataFrame:
    """CEdata read with the schema the R trees were fitted with (factors: integer codes)."""
    schema = Schema.from_json(reference_path("data/cedata_syn.schema.json"))
    return schema.apply(pd.read_csv(reference_path("data/cedata.csv"), dtype=str), "cedata")


def _design(frame: pd.DataFrame, names: list[str]) -> tuple[np.ndarray, np.ndarray]:
    cols, ncat = [], []
    for v in names:
        s = frame[v]
        if isinstance(s.dtype, pd.CategoricalDtype):
            cols.append(s.cat.codes.to_numpy() + 1.0)
            ncat.append(len(s.cat.categories))
        else:
            cols.append(s.to_numpy(dtype=float))
            ncat.append(0)
    return np.column_stack(cols), np.array(ncat)


@pytest.fixture(scope="module", params=["Income", "Expenditure"])
def fitted(request, cedata):
    ref = TREES["result"][request.param]
    x, ncat = _design(cedata, ref["predictors"])
    ctl = ref["control"]
    assert ctl["minsplit"] == 3 * ctl["minbucket"]
    tree = fit_tree(x, ncat, cedata[request.param].to_numpy(dtype=float), "anova", cp=ctl["cp"],
                    minbucket=ctl["minbucket"])  # fmt: skip
    return ref, tree


def test_tree_nodes_sizes_and_deviances_equal_r(fitted):
    ref, tree = fitted
    frame = pd.DataFrame(ref["frame"]["data"]).sort_values("node")
    assert len(tree.node) == ref["n_nodes"] and int(tree.is_leaf.sum()) == ref["n_leaves"]
    np.testing.assert_array_equal(tree.node, frame["node"])
    np.testing.assert_array_equal(tree.n, frame["n"])
    np.testing.assert_allclose(tree.dev, frame["dev"], rtol=1e-13)
    np.testing.assert_allclose(tree.complexity, frame["complexity"], rtol=1e-9, atol=1e-15)
    names = ref["predictors"]
    var = np.where(tree.is_leaf, "<leaf>", np.array(names, dtype=object)[np.maximum(tree.var, 0)])
    np.testing.assert_array_equal(var, frame["var"])
    np.testing.assert_array_equal((tree.sur_var >= 0).sum(axis=1), frame["nsurrogate"])


def test_primary_splits_equal_r(fitted):
    ref, tree = fitted
    pos = {int(k): i for i, k in enumerate(tree.node)}
    names = ref["predictors"]
    for s in ref["primary_splits"]:
        i = pos[s["node"]]
        assert names[tree.var[i]] == s["var"]
        if "threshold" in s:
            assert tree.split[i] == s["threshold"]
            assert tree.csplit[i, 0] == s["ncat"]  # -1: x < threshold goes left
        else:
            want = {"left": LEFT, "right": RIGHT, "not present": 0}
            np.testing.assert_array_equal(tree.csplit[i, : s["ncat"]], [want[d] for d in s["direction"]])


def test_leaf_of_every_record_equals_r(fitted, cedata):
    ref, tree = fitted
    np.testing.assert_array_equal(tree.where, ref["where_node"])
    # predicting the training rows walks them to the same leaves
    x, _ = _design(cedata, ref["predictors"])
    np.testing.assert_array_equal(tree.leaves(x), ref["where_node"])


def test_two_class_tree_equals_the_utility_port(cedata):
    """The k-class gini path with k = 2 and surrogates grows the tree of fit_rpart (the utility
    measures' adapter, R-verified by the G04 references), which computes no surrogates."""
    x, ncat = _design(cedata, ["Age", "Urban", "Tenure", "Educ", "Expenditure", "Marital"])
    y = (cedata["Income"].to_numpy() > cedata["Income"].median()).astype(int)
    ours = fit_tree(x, ncat, y, "class", n_classes=2, cp=1e-3, minbucket=5)
    theirs = fit_rpart(x, ncat, y, cp=1e-3, minbucket=5)
    assert len(ours.node) == theirs.n_nodes
    np.testing.assert_array_equal(ours.where, theirs.leaf)
    np.testing.assert_allclose(ours.class_prob(ours.where)[:, 1], theirs.prob, rtol=1e-14)


def test_multiclass_tree_is_pure_where_it_can_be():
    """Five classes fully determined by one factor: the tree separates them exactly (Gray-code
    search over level groupings), with class probabilities 1 in every leaf."""
    rng = np.random.default_rng(3)
    f = rng.integers(1, 6, size=400)
    noise = rng.normal(size=400)
    x = np.column_stack([noise, f.astype(float)])
    tree = fit_tree(x, np.array([0, 5]), f - 1, "class", n_classes=5, cp=0.0, minbucket=5)
    prob = tree.class_prob(tree.where)
    np.testing.assert_array_equal(prob.argmax(axis=1), f - 1)
    np.testing.assert_allclose(prob.max(axis=1), 1.0)
    assert int(tree.is_leaf.sum()) == 5


def test_missing_split_values_follow_the_surrogate():
    """x2 copies x1's order: a record missing x1 reaches the same leaf through x2's surrogate
    split; with both missing it goes the majority way."""
    rng = np.random.default_rng(1)
    x1 = rng.normal(size=600)
    x2 = 3 * x1 + 1
    y = np.where(x1 > 0.3, 10.0, 0.0) + rng.normal(scale=0.1, size=600)
    x = np.column_stack([x1, x2])
    tree = fit_tree(x, np.array([0, 0]), y, "anova", cp=0.01, minbucket=5)
    assert tree.var[0] == 0 and tree.sur_var[0, 0] == 1
    missing = x.copy()
    missing[:, 0] = np.nan
    np.testing.assert_array_equal(tree.leaves(missing), tree.leaves(x))
    both = np.full_like(x, np.nan)
    left, right = tree.n[tree.node == 2][0], tree.n[tree.node == 3][0]
    major = 2 if left > right else 3
    ends = tree.leaves(both)
    assert all(k >> (int(k).bit_length() - 2) == major for k in ends)  # all in the larger child's subtree
