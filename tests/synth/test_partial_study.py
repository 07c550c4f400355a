"""The partial synthesiser in a study of many repetitions: the models are fitted once per process
for the same original and settings (any seed or m), and a cart step whose predictors are kept
finds every record's node once; both give exactly the sets a fresh fit, node by node, gives."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from synth_helpers import MEMORY, partial_params

from pipeline.data.dataset import Dataset
from pipeline.synth.partial import syn
from pipeline.synth.partial.syn import plan_synthesis, prepare, synthesise_partial, synthetic_set


@pytest.fixture
def fits(monkeypatch) -> list[int]:
    """An empty model cache, and the number of records of every model fit made."""
    monkeypatch.setattr(syn, "_fitted", type(syn._fitted)())
    calls: list[int] = []
    real = syn.prepare

    def counting(frame, schema, plan, params):
        calls.append(len(frame))
        return real(frame, schema, plan, params)

    monkeypatch.setattr(syn, "prepare", counting)
    return calls


def test_repetitions_fit_once_and_make_the_sets_of_a_fresh_fit(cedata, fits):
    first = synthesise_partial(cedata, partial_params(method={"Income": "cart"}, m=2, seed=1), MEMORY)
    again = synthesise_partial(cedata, partial_params(method={"Income": "cart"}, m=3, seed=2), MEMORY)
    assert fits == [5571]  # another seed and m: the same models
    syn._fitted.clear()
    fresh = synthesise_partial(cedata, partial_params(method={"Income": "cart"}, m=3, seed=2), MEMORY)
    assert fits == [5571, 5571]
    for a, b in zip(again.synthetic, fresh.synthetic, strict=True):
        pd.testing.assert_frame_equal(a, b)
    assert not first.synthetic[0]["Income"].equals(again.synthetic[0]["Income"])
    assert again.tree_sizes == fresh.tree_sizes == first.tree_sizes


def test_other_settings_or_records_are_fitted_again(cedata, fits):
    synthesise_partial(cedata, partial_params(method={"Income": "cart"}, m=1, seed=1), MEMORY)
    synthesise_partial(cedata, partial_params(method={"Income": "cart"}, m=1, seed=1, cart_minbucket=10), MEMORY)
    synthesise_partial(cedata, partial_params(method={"Income": "cart", "Tenure": "cart"}, m=1, seed=1), MEMORY)
    frame = cedata.to_pandas()
    frame.loc[0, "Income"] += 1.0  # one record differs
    changed = Dataset.from_pandas(frame, cedata.schema)
    synthesise_partial(changed, partial_params(method={"Income": "cart"}, m=1, seed=1), MEMORY)
    assert len(fits) == 4
    synthesise_partial(cedata, partial_params(method={"Income": "cart"}, m=1, seed=9), MEMORY)
    assert len(fits) == 4 and len(syn._fitted) == 4
    syn._fitted.clear()


def test_nodes_of_kept_predictors_are_found_once_with_the_same_sets(cedata):
    frame = cedata.to_pandas()
    params = partial_params(method={"Expenditure": "cart", "Income": "cart"}, m=1, seed=3)
    prepared = prepare(frame, cedata.schema, plan_synthesis(cedata.schema, params), params)
    expenditure, income = prepared.steps
    # Expenditure's predictors are kept; Income's include the synthesised Expenditure
    assert "Expenditure" not in expenditure.predictors and "Expenditure" in income.predictors
    assert income.nodes is None
    x = np.column_stack([prepared.columns[p] for p in expenditure.predictors])
    np.testing.assert_array_equal(expenditure.nodes, expenditure.tree.leaves(x))
    per_set = replace(prepared, steps=tuple(replace(s, nodes=None) for s in prepared.steps))
    for i in range(3):
        pd.testing.assert_frame_equal(synthetic_set(prepared, 11, i), synthetic_set(per_set, 11, i))
