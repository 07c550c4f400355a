"""The worked examples of spec §14 (hand-computed, confirmed with synthpop 1.9-2)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from disclosure_refs import r_per_key_binding

from pipeline.risk.disclosure import disclosure, multi_disclosure

MEASURES = [
    "UiO",
    "UiS",
    "UiOiS",
    "repU",
    "Dorig",
    "Dsyn",
    "iS",
    "DiS",
    "DiSCO",
    "DiSDiO",
    "max_denom",
    "mean_denom",
    "baseCAPd",
    "CAPd",
    "CAPs",
    "DCAP",
    "TCAP",
]
ROWS = ["original", "synthetic", "Dorig", "Dsyn", "iS", "DiS", "DiSCO", "DiSDiO"]


def _frame(**cols) -> pd.DataFrame:
    out = {}
    for name, values in cols.items():
        if all(isinstance(v, (int, float)) for v in values):
            out[name] = pd.Series(values, dtype="float64")
        else:
            out[name] = pd.Categorical(values)
    return pd.DataFrame(out)


@pytest.fixture(scope="module")
def example1() -> tuple[pd.DataFrame, pd.DataFrame]:
    gt = _frame(sex=list("FFFFMMMMMMFM"), age=[1, 1, 2, 3, 1, 1, 2, 2, 2, 3, 2, 4], t=list("aababccccaab"))
    sd = _frame(sex=list("FFFFMMMMMM"), age=[1, 1, 2, 3, 1, 1, 2, 3, 3, 5], t=list("abaacccbba"))
    return gt, sd


@pytest.fixture(scope="module")
def example2() -> tuple[pd.DataFrame, pd.DataFrame]:
    gt = _frame(
        region=list("NNNNNSSSSSNS"),
        agegrp=["Y", "Y", "Y", "O", "O", "Y", "Y", "O", "O", None, None, "O"],
        smoke=["no"] * 5 + ["yes", "no", "no", "no", "yes", None, None],
    )
    sd = _frame(
        region=list("NNNNNNSSSSNS"),
        agegrp=["Y", "Y", "Y", "Y", "O", "O", "Y", "Y", "O", None, None, "O"],
        smoke=["no"] * 6 + ["yes", "yes", "no", "yes", None, "no"],
    )
    return gt, sd


def _values(res, row: int = 1) -> list[float]:
    return res.measures().loc[row, MEASURES].tolist()


def _assert(res, expected: dict[str, float], row: int = 1) -> None:
    got = res.measures().loc[row]
    for name, value in expected.items():
        assert got[name] == pytest.approx(value, abs=1e-9, nan_ok=True), name


def _nex(res, column: str) -> list[int]:
    return res.Nexclusions[0].loc[ROWS, column].tolist()


def test_example_1a_defaults(example1) -> None:
    res = disclosure(*example1, ["sex", "age"], "t")
    _assert(
        res,
        {
            "UiO": 300 / 12,
            "UiS": 40,
            "UiOiS": 200 / 12,
            "repU": 100 / 12,
            "Dorig": 800 / 12,
            "Dsyn": 80,
            "iS": 1100 / 12,
            "DiS": 75,
            "DiSCO": 50,
            "DiSDiO": 400 / 12,
            "max_denom": 3,
            "mean_denom": 1.5,
            "baseCAPd": 100 * 50 / 144,
            "CAPd": 1000 / 12,
            "CAPs": 90,
            "DCAP": 700 / 12,
            "TCAP": 600 / 11,
        },
    )
    assert res.check_1way == (None,) and res.check_2way == (None,) and res.check1 == res.check2 == ""
    assert _nex(res, "remaining") == [12, 10, 8, 8, 11, 9, 6, 4]
    assert res.short().to_numpy().round(2).tolist() == [[25.0, 66.67], [8.33, 50.0]]


def test_example_1b_not_targetlev(example1) -> None:
    res = disclosure(*example1, ["sex", "age"], "t", not_targetlev="c")
    _assert(
        res,
        {
            "UiO": 400 / 12,
            "UiS": 30,
            "UiOiS": 25,
            "repU": 100 / 12,
            "Dorig": 500 / 12,
            "Dsyn": 50,
            "iS": 700 / 12,
            "DiS": 500 / 12,
            "DiSCO": 200 / 12,
            "DiSDiO": 100 / 12,
            "max_denom": 1,
            "mean_denom": 1,
            "baseCAPd": 100 * 50 / 144,
            "CAPd": 700 / 12,
            "CAPs": 60,
            "DCAP": 25,
            "TCAP": 200 / 6,
        },
    )
    assert _nex(res, "excluded target") == [4, 3, 3, 3, 4, 4, 4, 3]
    assert _nex(res, "remaining") == [8, 7, 5, 5, 7, 5, 2, 1]


def test_example_1c_over_denom_lim(example1) -> None:
    res = disclosure(*example1, ["sex", "age"], "t", denom_lim=1, exclude_ov_denom_lim=True)
    _assert(
        res,
        {
            "UiO": 25,
            "UiS": 40,
            "UiOiS": 200 / 12,
            "repU": 100 / 12,
            "Dorig": 25,
            "Dsyn": 40,
            "iS": 50,
            "DiS": 50,
            "DiSCO": 25,
            "DiSDiO": 100 / 12,
            "max_denom": 1,
            "mean_denom": 1,
            "CAPd": 500 / 12,
            "CAPs": 50,
            "DCAP": 200 / 12,
            "TCAP": 100,
        },
    )
    assert _nex(res, "over denom_lim") == [5, 4, 5, 4, 5, 3, 3, 3]
    assert _nex(res, "remaining") == [7, 6, 3, 4, 6, 6, 3, 1]


def test_example_1d_two_syntheses_and_multi(example1) -> None:
    gt, sd = example1
    res = disclosure(gt, [sd, gt], ["sex", "age"], "t")
    assert _values(res, 1) == _values(disclosure(gt, sd, ["sex", "age"], "t"), 1)
    _assert(
        res,
        {
            "UiO": 25,
            "UiS": 25,
            "UiOiS": 25,
            "repU": 25,
            "Dorig": 800 / 12,
            "Dsyn": 800 / 12,
            "iS": 100,
            "DiS": 800 / 12,
            "DiSCO": 800 / 12,
            "DiSDiO": 800 / 12,
            "max_denom": 3,
            "mean_denom": 1.6,
            "CAPd": 1000 / 12,
            "CAPs": 1000 / 12,
            "DCAP": 1000 / 12,
            "TCAP": 800 / 12,
        },
        row=2,
    )
    multi = multi_disclosure(gt, [sd, gt], ["sex", "age"], targets=["t"])
    row = multi.attrib_table.iloc[0]
    assert row["attrib_orig"] == pytest.approx(800 / 12) and row["attrib_syn"] == pytest.approx(700 / 12)
    assert multi.ident_orig["t"] == pytest.approx(25)
    # synthpop reports repU of synthesis 1 only (8.3333); the mean over both sets is 16.6667
    assert multi.ident_syn["t"] == pytest.approx(200 / 12)


def test_example_2a_missing_values_are_a_category(example2) -> None:
    res = disclosure(*example2, ["region", "agegrp"], "smoke")
    _assert(
        res,
        {
            "UiO": 200 / 12,
            "UiS": 200 / 12,
            "UiOiS": 200 / 12,
            "repU": 200 / 12,
            "Dorig": 700 / 12,
            "Dsyn": 100,
            "iS": 100,
            "DiS": 100,
            "DiSCO": 1000 / 12,
            "DiSDiO": 700 / 12,
            "max_denom": 3,
            "mean_denom": 10 / 6,
            "baseCAPd": 100 * 72 / 144,
            "CAPd": 100 * (3 + 2 + 1 + 5 / 3 + 1 + 1) / 12,
            "CAPs": 100,
            "DCAP": 1000 / 12,
            "TCAP": 1000 / 12,
        },
    )
    assert res.check_1way == (None,) and res.check_2way == (None,)


def test_example_2b_flags(example2) -> None:
    res = disclosure(*example2, ["region", "agegrp"], "smoke", thresh_1way=(5, 60), thresh_2way=(2, 80))
    one = res.check_1way[0]
    assert one.to_dict(orient="records") == [
        {
            "Level": "no",
            "All": 12,
            "PctLevelAll": pytest.approx(800 / 12),
            "totalDisclosive": 10,
            "nLevelDis": 7,
            "PctLevelDis": 70.0,
        }
    ]
    assert res.check1 == "Check  smoke  level  no"
    two = res.check_2way[0]
    # "no|Y" has exactly 80 %: not reported (strict >)
    assert two[["target_key_levs", "npairs", "key", "key_target_total", "key_total"]].values.tolist() == [
        ["no|N", 3, "region", 5, 6]
    ]
    assert two["PctTargetKeyLevel"].iloc[0] == pytest.approx(500 / 6)
    assert res.check2 == "1 pairs need checks"


def test_example_2c_usekeysNA_false(example2) -> None:
    res = disclosure(*example2, ["region", "agegrp"], "smoke", usekeysNA=False)
    _assert(
        res,
        {
            "UiO": 0,
            "UiS": 0,
            "UiOiS": 0,
            "repU": 0,
            "Dorig": 500 / 12,
            "Dsyn": 1000 / 12,
            "iS": 1000 / 12,
            "DiS": 1000 / 12,
            "DiSCO": 800 / 12,
            "DiSDiO": 500 / 12,
            "max_denom": 3,
            "mean_denom": 2,
            "CAPd": 100 * 23 / 36,
            "CAPs": 1000 / 12,
            "DCAP": 800 / 12,
            "TCAP": 80,
        },
    )
    assert _nex(res, "missing in  keys") == [2] * 8


def test_example_2d_usetargetNA_false(example2) -> None:
    res = disclosure(*example2, ["region", "agegrp"], "smoke", usetargetNA=False)
    _assert(
        res,
        {
            "UiO": 100 / 12,
            "UiS": 100 / 12,
            "UiOiS": 100 / 12,
            "repU": 100 / 12,
            "Dorig": 50,
            "Dsyn": 1100 / 12,
            "iS": 1000 / 12,
            "DiS": 1000 / 12,
            "DiSCO": 75,
            "DiSDiO": 50,
            "max_denom": 3,
            "mean_denom": 1.8,
            "CAPd": 75,
            "CAPs": 1100 / 12,
            "DCAP": 75,
            "TCAP": 90,
        },
    )
    assert _nex(res, "missing target") == [2, 1, 1, 1, 2, 2, 1, 1]


def test_example_2e_exclusion_triples(example2) -> None:
    res = disclosure(
        *example2,
        ["region", "agegrp"],
        "smoke",
        exclude_keys=["region"],
        exclude_keylevs=["N"],
        exclude_targetlevs=["no"],
    )
    _assert(
        res,
        {
            "UiO": 200 / 12,
            "UiS": 200 / 12,
            "UiOiS": 200 / 12,
            "repU": 200 / 12,
            "Dorig": 200 / 12,
            "Dsyn": 50,
            "iS": 700 / 12,
            "DiS": 700 / 12,
            "DiSCO": 500 / 12,
            "DiSDiO": 200 / 12,
            "max_denom": 2,
            "mean_denom": 1.25,
            "CAPd": 100 * 14 / 36,
            "CAPs": 50,
            "DCAP": 500 / 12,
            "TCAP": 500 / 7,
        },
    )
    assert _nex(res, "set to exclude") == [5, 6, 5, 6, 5, 5, 5, 5]


def test_example_3_per_key_options_bound_by_name() -> None:
    """synthpop applies usekeysNA = FALSE to k3 instead of k2 and reports 0 (spec §3.2)."""
    data = _frame(k1=list("aabb"), k2=["x", "y", None, "y"], k3=list("ppqq"), t=list("uvuv"))
    res = disclosure(data, data, ["k2", "k3", "k1"], "t", usekeysNA=[False, True, True])
    assert res.keys == ("k1", "k2", "k3")
    assert res.Nexclusions[0].loc["original", "missing in  keys"] == 1
    assert res.Nexclusions[0].loc["synthetic", "missing in  keys"] == 1
    by_mapping = disclosure(data, data, ["k2", "k3", "k1"], "t", usekeysNA={"k2": False})
    assert by_mapping.measures().equals(res.measures())
    # the reference tests' emulation of synthpop's binding reproduces R's 0
    as_r, misbound = r_per_key_binding(
        {"keys": ["k2", "k3", "k1"], "usekeysNA": [False, True, True]}, list(data.columns)
    )
    assert misbound == ["usekeysNA"] and as_r["usekeysNA"] == {"k1": True, "k2": True, "k3": False}
    r_like = disclosure(data, data, target="t", **as_r)
    assert r_like.Nexclusions[0].loc[["original", "synthetic"], "missing in  keys"].tolist() == [0, 0]


def test_invariants_when_synthetic_equals_original(example2) -> None:
    gt, _ = example2
    res = disclosure(gt, gt, ["region", "agegrp"], "smoke").measures().iloc[0]
    assert res["repU"] == res["UiOiS"] == res["UiO"] == res["UiS"]
    assert res["iS"] == 100
    assert res["DiSCO"] == res["DiSDiO"] == res["Dorig"] == res["Dsyn"]
    assert res["DCAP"] == pytest.approx(res["CAPd"])


def test_ordering_of_attribute_measures(example1) -> None:
    row = disclosure(*example1, ["sex", "age"], "t").measures().iloc[0]
    assert row["DiSDiO"] <= row["DiSCO"] <= row["DiS"] <= row["iS"] <= 100
    assert row["DiSDiO"] <= row["Dorig"]
    assert np.isfinite(row[MEASURES].to_numpy(dtype=float)).all()
