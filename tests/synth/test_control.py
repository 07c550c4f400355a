"""Margin disclosure control: V1/V2/V3 on the worked example and as properties."""

from __future__ import annotations

import numpy as np
import pytest
from synth_helpers import example_tables

from pipeline.errors import ParameterError
from pipeline.synth import adjust_total, coarsen, control_margins, sdc_small


@pytest.mark.parametrize(
    ("variant", "rounding", "key"),
    [
        ("V1", "nearest", "V1_small_to_L_minus_1"),
        ("V2", "nearest", "V2_nearest"),
        ("V2", "up", "V2_up"),
        ("V3", "nearest", "V3_nearest_shift"),
    ],
)
def test_worked_example_margins(example: dict, variant: str, rounding: str, key: str) -> None:
    gt = example_tables(example, "margins")
    out = control_margins(gt, example["n"], variant, example["limit"], rounding=rounding)
    for t in out.tables:
        np.testing.assert_allclose(t.counts.ravel(), example[key][t.name.replace(":", "")], rtol=0, atol=1e-12)
    if variant == "V3":
        deltas = example[key]["delta"]
        assert [t.adjustment for t in out.totals] == pytest.approx([deltas[k] for k in ("AB", "AC", "BC")])
        assert all(abs(t.moved) < 1e-9 for t in out.totals)
    if variant == "V2" and rounding == "nearest":
        assert [t.moved for t in out.totals] == [-2, 3, -2]


@pytest.mark.parametrize("limit", [1, 3, 5, 10, 11])
@pytest.mark.parametrize("rounding", ["nearest", "up", "down"])
def test_coarsened_counts_are_multiples_of_limit(limit: int, rounding: str) -> None:
    counts = np.random.default_rng(limit).integers(0, 200, size=(7, 9)).astype(float)
    counts[0, :4] = [0, 1, limit - 1 if limit > 1 else 0, limit]
    out = coarsen(counts, limit, rounding)
    assert np.all(out % limit == 0)
    assert np.all((out == 0) == (counts == 0))  # zeros kept, nothing else becomes 0
    assert np.all(out[counts > 0] >= limit)
    err = out - counts
    lo, hi = {"nearest": (-limit / 2, limit - 1), "up": (0, limit - 1), "down": (-(limit - 1), limit - 1)}[rounding]
    assert err[counts > 0].min() >= lo and err[counts > 0].max() <= hi


def test_ties_half_even_and_half_up() -> None:
    x = np.array([15, 25, 35, 5, 4])
    assert coarsen(x, 10).tolist() == [20, 20, 40, 10, 10]
    assert coarsen(x, 10, ties="half_up").tolist() == [20, 30, 40, 10, 10]


def test_v1_and_shift() -> None:
    assert sdc_small(np.array([0, 1, 9, 10, 11]), 10).tolist() == [0, 9, 9, 10, 11]
    assert sdc_small(np.array([0, 3]), 10, small_value=5).tolist() == [0, 5]
    v, delta = adjust_total(np.array([20.0, 0.0, 10.0, 10.0]), 37)
    assert delta == 1 and v.tolist() == [19, 0, 9, 9]
    v, factor = adjust_total(np.array([20.0, 20.0]), 30, "scale")
    assert factor == 0.75 and v.sum() == 30


@pytest.mark.parametrize("limit", [0, -5, 2.5, True])
def test_bad_limit(example: dict, limit) -> None:
    with pytest.raises(ParameterError, match="limit"):
        control_margins(example_tables(example, "margins"), 77, "V2", limit)


def test_rows_and_dict(example: dict) -> None:
    out = control_margins(example_tables(example, "margins"), 77, "V3", 5)
    rows = out.rows()
    assert {r.params["margin"] for r in rows} == {"A:B", "A:C", "B:C"}
    assert {r.measure for r in rows} == {
        "margin_total_released",
        "margin_total_moved",
        "margin_total_moved_rel",
        "margin_adjust_shift",
    }
    d = out.to_dict()
    assert d["variant"] == "V3" and len(d["totals"]) == 3
