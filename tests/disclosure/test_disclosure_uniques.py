"""replicated_uniques() and remove_uniques() against a direct count by value."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pipeline.datasets import load_demo, load_demo_synthetic
from pipeline.evaluation.base import TIDY_COLUMNS
from pipeline.risk.disclosure.uniques import ROWS, remove_uniques, replicated_uniques


@pytest.fixture(scope="module")
def data() -> tuple[pd.DataFrame, list[pd.DataFrame]]:
    return load_demo("sd2011_subset").to_pandas(), [s.to_pandas() for s in load_demo_synthetic("sd2011_cart")[:2]]


def _direct(original: pd.DataFrame, synthetic: pd.DataFrame, keys: list[str]):
    """Uniqueness by a plain group-by of the key values (missing values compare equal)."""
    both = pd.concat([original[keys].assign(_src=0), synthetic[keys].assign(_src=1)], ignore_index=True)
    group = both.groupby(keys, dropna=False, observed=True).ngroup()
    orig_counts = group[both["_src"] == 0].value_counts()
    syn_group = group[both["_src"] == 1].reset_index(drop=True)
    syn_counts = syn_group.value_counts()
    in_orig = syn_group.map(orig_counts).fillna(0)
    syn_unique = syn_group.map(syn_counts).eq(1)
    return (
        int((orig_counts == 1).sum()),
        int((syn_counts == 1).sum()),
        (syn_unique & (in_orig > 0)).to_numpy(),
        (syn_unique & (in_orig == 1)).to_numpy(),
    )


@pytest.mark.parametrize("keys", [["sex", "age", "edu", "income"], ["agegr"], ["sex", "placesize", "depress"]])
def test_replicated_uniques_by_value(data, keys) -> None:
    original, synthetic = data
    res = replicated_uniques(original, synthetic, keys)
    assert res.n == len(original) and res.k == (len(synthetic[0]), len(synthetic[1]))
    for j, syn in enumerate(synthetic):
        n_orig, n_syn, syn_u, rep_u = _direct(original, syn, keys)
        np.testing.assert_array_equal(res.synU_rm[j], syn_u)
        np.testing.assert_array_equal(res.repU_rm[j], rep_u)
        tab = res.res_tab[j]
        assert list(tab.index) == list(ROWS)
        assert tab["Number"].tolist() == [n_orig, n_syn, int(syn_u.sum()), int(rep_u.sum())]
        assert tab["from total"].tolist() == [len(original)] + [len(syn)] * 3
        np.testing.assert_allclose(tab["%"], tab["Number"] / tab["from total"] * 100)


def test_all_variables_by_default_and_tidy(data) -> None:
    original, synthetic = data
    res = replicated_uniques(original, synthetic[0])
    assert res.keys == tuple(original.columns)
    tidy = res.tidy()
    assert list(tidy.columns) == TIDY_COLUMNS
    assert set(tidy["setting"]) == {"keys=" + "+".join(original.columns)}
    assert set(tidy["measure"]) >= {"Replicated uniques %", "Original (number)"}


@pytest.mark.parametrize(("option", "flags"), [("rm_uniques_in_orig", "synU_rm"), ("rm_replicated_uniques", "repU_rm")])
def test_remove_uniques(data, option, flags) -> None:
    original, synthetic = data
    keys = ["sex", "age", "edu", "marital"]
    out = remove_uniques(original, synthetic, keys, **{option: True})
    for kept, removed, syn, expected in zip(
        out.synthetic, out.removed, synthetic, getattr(out.uniques, flags), strict=True
    ):
        np.testing.assert_array_equal(removed, expected)
        pd.testing.assert_frame_equal(kept, syn[~removed])
        assert list(kept.columns) == list(syn.columns)
    assert out.n_removed == [int(f.sum()) for f in getattr(out.uniques, flags)]
    if option == "rm_uniques_in_orig":  # a superset of the replicated uniques
        assert all((r <= s).all() for r, s in zip(out.uniques.repU_rm, out.uniques.synU_rm, strict=True))
