"""The ``same_key_counts`` / ``same_key_target_counts`` rows: whether a synthetic set has the
original's records in every key group (then repU = UiO by construction) and in every key group
and target level (then DiSCO = Dorig), as with keys and target released unchanged."""

from __future__ import annotations

import pandas as pd
import pytest

from pipeline.risk.disclosure import disclosure

ORIGINAL = pd.DataFrame(
    {
        "sex": pd.Categorical(list("FFFFMMMMMMFM")),
        "age": [1.0, 1, 2, 3, 1, 1, 2, 2, 2, 3, 2, 4],
        "t": pd.Categorical(list("aababccccaab")),
    }
)


def _flags(synthetic: list[pd.DataFrame]) -> pd.DataFrame:
    rows = disclosure(ORIGINAL, synthetic, keys=["sex", "age"], target="t").tidy()
    flags = rows[rows["measure"].isin(["same_key_counts", "same_key_target_counts"])]
    return flags.pivot_table(index="synthetic", columns="measure", values="value")


def test_keys_released_unchanged_make_repu_equal_uio():
    kept = ORIGINAL.assign(t=pd.Categorical(list("bbbbbbcccaaa"), categories=["a", "b", "c"]))  # target redrawn
    shuffled = kept.sample(frac=1.0, random_state=1).reset_index(drop=True)  # same key counts, any order
    changed = kept.assign(age=[1.0, 1, 2, 3, 1, 1, 2, 2, 2, 3, 2, 3])  # one key value changed
    res = disclosure(ORIGINAL, [kept, shuffled, changed], keys=["sex", "age"], target="t")
    flags = _flags([kept, shuffled, changed])
    assert flags["same_key_counts"].tolist() == [1.0, 1.0, 0.0]
    assert flags["same_key_target_counts"].tolist() == [0.0, 0.0, 0.0]
    assert res.ident["repU"].iloc[:2].tolist() == pytest.approx([res.ident["UiO"].iloc[0]] * 2)
    assert res.ident["repU"].iloc[2] != pytest.approx(res.ident["UiO"].iloc[0])


def test_keys_and_target_released_unchanged_make_disco_equal_dorig():
    res = disclosure(ORIGINAL, [ORIGINAL.copy()], keys=["sex", "age"], target="t")
    flags = _flags([ORIGINAL.copy()])
    assert flags.loc["1"].tolist() == [1.0, 1.0]
    assert res.attrib["DiSCO"].iloc[0] == pytest.approx(res.attrib["Dorig"].iloc[0])
    assert res.to_dict()["same_counts"] == {"same_key_counts": [True], "same_key_target_counts": [True]}
