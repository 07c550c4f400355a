"""The shared R ports (pipeline.rcompat) pinned on values R prints.

Expected strings come from R's rules (``formatReal``/``scientific`` in src/main/format.c with
15 digits and scipen = 0, ``cut.default``, ``quantile.default``, ``classInt``) and, where
marked, from output of real R sessions: the R reference JSONs (R 4.2.2) and R-devel threads.
"""

from __future__ import annotations

import struct

import numpy as np
import pandas as pd
import pytest

from pipeline.errors import ParameterError
from pipeline.rcompat import (
    as_character,
    as_character_array,
    class_breaks,
    cut_index,
    cut_labels,
    normalise_cont_na,
    quantile7,
    seq_length_out,
    seq_probs,
)

R_NA_REAL = struct.unpack("<d", struct.pack("<Q", 0x7FF00000000007A2))[0]  # R's NA_real_ (payload 1954)

AS_CHARACTER = [
    # small numbers: fixed notation, trailing zeros dropped
    (57.0, "57"),
    (-8.0, "-8"),
    (0.1, "0.1"),
    (2.5, "2.5"),
    (1234.5678, "1234.5678"),
    (-0.001, "-0.001"),
    (20000.0, "20000"),
    (123456.0, "123456"),
    (100000.1, "100000.1"),
    # scientific only when narrower: 1e+05 (5 chars) beats 100000 (6); 0.0001 (6) loses to 1e-04 (5)
    (100000.0, "1e+05"),
    (1e-4, "1e-04"),
    (1e-5, "1e-05"),
    (-1e-4, "-1e-04"),
    (1.5e-5, "1.5e-05"),
    (0.0001234, "0.0001234"),  # 9 chars either way: a tie goes to fixed
    (1e15, "1e+15"),
    (1e100, "1e+100"),
    (1.5e-100, "1.5e-100"),
    (1.7976931348623157e308, "1.79769313486232e+308"),
    # 15 significant digits, no 17-digit fallback although these do not round-trip
    (0.1 + 0.2, "0.3"),
    (1 / 3, "0.333333333333333"),
    (2 / 3, "0.666666666666667"),
    (0.1234567890123456789, "0.123456789012346"),
    (1.2345678901234567e23, "1.23456789012346e+23"),
    (7.999999999999999111822, "8"),  # R-devel, 2025-09-25: as.character(...) returns "8"
    # fixed notation prints every integer digit of the double, beyond the 15th
    (1234567890123456.0, "1234567890123456"),  # R-devel, 2013-10-02 (real R output)
    (5180000000000003.0, "5.18e+15"),  # same thread: 15 digits are 5.18, and 5.18e+15 is narrower
    (2.0**53, "9007199254740992"),
    (2.0**62, "4611686018427387904"),
    (123456789012345678.0, "123456789012345680"),
    (1.2345678901234568e17, "123456789012345680"),
    (-1.2345678901234568e17, "-123456789012345680"),
    # zero and non-finite values
    (0.0, "0"),
    (-0.0, "0"),
    (float("nan"), "NaN"),
    (float("inf"), "Inf"),
    (float("-inf"), "-Inf"),
    (R_NA_REAL, "NA"),
    (None, "NA"),
    (pd.NA, "NA"),
]


@pytest.mark.parametrize(("value", "label"), AS_CHARACTER)
def test_as_character_follows_r(value: float | None, label: str) -> None:
    assert as_character(value) == label


def test_as_character_array_is_elementwise() -> None:
    values = [v for v, _ in AS_CHARACTER if v is not None and v is not pd.NA]
    assert as_character_array(np.array(values)) == [as_character(v) for v in values]
    assert as_character_array([]) == []


def test_as_character_large_magnitudes_print_the_double_not_its_15_digit_rounding() -> None:
    # the dropped binning copy printed the 15-digit rounding in fixed notation ("1234567890123460");
    # R's EncodeRealDrop0 sprintf()s the double itself with 0 decimals
    rng = np.random.default_rng(2024)
    x = np.floor(rng.uniform(1e15, 1e17, 500))
    labels = as_character_array(x)
    assert any("e" not in lab and lab != f"{float(f'{v:.14e}'):.0f}" for v, lab in zip(x, labels, strict=True))
    for v, lab in zip(x, labels, strict=True):
        if "e" in lab:  # few significant digits: scientific, which is the 15-digit value
            assert float(lab) == float(f"{v:.14e}")
        else:
            assert lab == f"{v:.0f}"


def test_as_character_digit_count_uses_r_long_double_scaling() -> None:
    # 6316.233132053595 is 6316.23313205359|49998884... : exact rounding keeps 15 digits, but R
    # scales by 1e11 in long double (x86-64), gets ...359.5 and rounds it to even -> 14 digits
    if np.finfo(np.longdouble).nmant < 63:
        pytest.skip("R's long double arithmetic is x86-64 extended precision")
    assert as_character(6316.233132053595) == "6316.2331320536"


def test_quantile7_matches_numpy_linear_on_expanded_sample() -> None:
    rng = np.random.default_rng(7)
    probs = np.concatenate([[0, 1, 0.5, 0.25, 0.75, 1 / 3], rng.uniform(0, 1, 50)])
    for _ in range(20):
        values = np.unique(np.round(rng.normal(0, 100, rng.integers(2, 30)), 2))
        counts = rng.integers(1, 6, values.size)
        expected = np.quantile(np.repeat(values, counts), probs, method="linear")
        np.testing.assert_allclose(quantile7(values, counts, probs), expected, rtol=1e-14, atol=1e-12)


def test_quantile7_edges() -> None:
    values, counts = np.array([-3.0, 1.5, 8.0]), np.array([2, 1, 4])
    q = quantile7(values, counts, [0.0, 1.0])
    assert q.tolist() == [-3.0, 8.0]  # probs 0 and 1 are the exact extremes
    assert quantile7(np.array([4.25]), np.array([7]), [0, 0.3, 1]).tolist() == [4.25, 4.25, 4.25]
    assert quantile7(np.array([4.25]), np.array([1]), [0.5]).tolist() == [4.25]
    # R: quantile(c(1, 2, 2, 3, 7, 7, 7, 10, 12, 40), c(.1, .5, .9)) -> 1.9, 7, 14.8
    x = np.array([1.0, 2, 3, 7, 10, 12, 40])
    np.testing.assert_allclose(quantile7(x, np.array([1, 2, 1, 3, 1, 1, 1]), [0.1, 0.5, 0.9]), [1.9, 7, 14.8])
    with pytest.raises(ParameterError):
        quantile7(np.array([]), np.array([], dtype=np.int64), [0.5])


def test_seq_helpers_are_r_seq() -> None:
    assert seq_probs(4).tolist() == [0, 0.25, 0.5, 0.75, 1]
    assert seq_probs(3)[-1] == 1.0
    b = seq_length_out(0.0, 0.7, 4)
    assert b[0] == 0.0 and b[-1] == 0.7  # 0 + 3 * (0.7 / 3) would be 0.7000000000000001
    np.testing.assert_allclose(b, [0, 0.7 / 3, 1.4 / 3, 0.7])


def test_class_breaks_quantile_equal_and_ties() -> None:
    x, ones = np.arange(1.0, 11), np.ones(10, dtype=np.int64)
    np.testing.assert_allclose(class_breaks(x, ones, 4, "quantile"), [1, 3.25, 5.5, 7.75, 10])
    assert class_breaks(x, ones, 3, "equal").tolist() == [1, 4, 7, 10]
    # ties: the median of eight 1s, one 2 and one 9 is 1, so the duplicated break is dropped
    assert class_breaks(np.array([1.0, 2, 9]), np.array([8, 1, 1]), 2, "quantile").tolist() == [1, 9]
    # heavy ties, quantile style: quantiles 0, 0, 5, 15 -> unique
    v, c = np.array([0.0, 5, 10, 15]), np.array([60, 20, 10, 10])
    assert class_breaks(v, c, 3, "quantile").tolist() == [0, 5, 15]
    # equal style ignores the counts and keeps the exact extremes
    assert class_breaks(v, c, 3, "equal").tolist() == [0, 5, 10, 15]
    assert class_breaks(np.array([0.0, 0.1, 0.7]), np.ones(3, np.int64), 2, "equal")[-1] == 0.7
    # at most n distinct values: each is a class, ends padded by half the mean gap
    np.testing.assert_allclose(
        class_breaks(np.array([1.0, 2, 4]), np.ones(3, np.int64), 3, "quantile"), [0.25, 1.5, 3, 4.75]
    )
    np.testing.assert_allclose(
        class_breaks(np.array([1.0, 2, 4]), np.ones(3, np.int64), 5, "equal"), [0.25, 1.5, 3, 4.75]
    )


@pytest.mark.parametrize(
    ("values", "n", "style"),
    [
        (np.array([3.0]), 2, "quantile"),
        (np.array([]), 2, "quantile"),
        (np.array([1.0, 2, 3]), 1, "quantile"),
        (np.array([1.0, 2, 3]), 2, "jenks"),
    ],
)
def test_class_breaks_rejects(values: np.ndarray, n: int, style: str) -> None:
    with pytest.raises(ParameterError):
        class_breaks(values, np.ones(values.size, np.int64), n, style)


def test_cut_labels_like_r() -> None:
    # labels of real R runs (reference T03, income with ngroups = 5, dig.lab = 8)
    assert cut_labels([100, 850, 1200, 1500, 2000, 16000]) == [
        "[100,850)",
        "[850,1200)",
        "[1200,1500)",
        "[1500,2000)",
        "[2000,16000]",
    ]
    assert cut_labels([1, 3, 7.333333333, 11]) == ["[1,3)", "[3,7.3333333)", "[7.3333333,11]"]
    assert cut_labels([-8.5, -1, 3.25]) == ["[-8.5,-1)", "[-1,3.25]"]
    assert cut_labels([3.0, 1.0, 2.0]) == ["[1,2)", "[2,3]"]  # R sorts the breaks
    assert cut_labels([-0.0, 1.0]) == ["[0,1]"]  # R formats 0 + breaks: no "-0"
    # formatC(digits = 8) switches to scientific notation like C's %g
    assert cut_labels([0, 123456789, 2e8]) == ["[0,1.2345679e+08)", "[1.2345679e+08,2e+08]"]
    assert cut_labels([1e-5, 0.5]) == ["[1e-05,0.5]"]


def test_cut_labels_dig_lab() -> None:
    # cut()'s own default dig.lab = 3: R prints "[25,1e+03]"
    assert cut_labels([16, 25, 1000], dig_lab=3) == ["[16,25)", "[25,1e+03]"]
    # digits rise one at a time until neighbours differ: 3 gives 1e+03 twice, 4 is enough
    assert cut_labels([0, 1000.5, 1000.7], dig_lab=3) == ["[0,1000)", "[1000,1001]"]
    assert cut_labels([1, 1.000000001, 2]) == ["[1,1.000000001)", "[1.000000001,2]"]
    # up to max(12, dig.lab) digits, then R gives up and numbers the ranges
    assert cut_labels([1, 1 + 1e-13, 2]) == ["Range_1", "Range_2"]
    assert cut_labels([1, 1 + 1e-13, 2], dig_lab=14) == ["[1,1.0000000000001)", "[1.0000000000001,2]"]
    with pytest.raises(ParameterError):
        cut_labels([1.0, 1.0, 2.0])
    with pytest.raises(ParameterError):
        cut_labels([1.0])


def test_cut_index_left_closed_last_closed() -> None:
    breaks = np.array([0.0, 10, 20, 30])
    x = np.array([0, 5, 10, 19.999, 20, 30, -0.1, 30.1, np.nan])
    assert cut_index(x, breaks).tolist() == [0, 0, 1, 1, 2, 2, -1, -1, -1]
    assert cut_index(np.array([]), breaks).tolist() == []


def test_normalise_cont_na() -> None:
    assert normalise_cont_na(None) == {}
    assert normalise_cont_na({"income": -8}) == {"income": (-8.0,)}
    assert normalise_cont_na({"income": [-8, -9, -8.0], "age": (np.int64(99),)}) == {
        "income": (-8.0, -9.0),
        "age": (99.0,),
    }
    assert normalise_cont_na({"income": [None, -8]}) == {"income": (-8.0,)}  # NA adds no code
    assert normalise_cont_na({"income": []}) == {"income": ()}
    assert normalise_cont_na({"income": np.array([-8.0, -9.0])}) == {"income": (-8.0, -9.0)}


@pytest.mark.parametrize(
    "bad",
    [
        [-8],
        "income",
        {"income": "-8"},
        {"income": True},
        {"income": float("nan")},
        {"income": [-8, float("inf")]},
        {"income": [[-8]]},
    ],
)
def test_normalise_cont_na_rejects(bad: object) -> None:
    with pytest.raises(ParameterError, match="cont_na"):
        normalise_cont_na(bad)  # type: ignore[arg-type]
