"""IPF against synthpop syn.ipf (R references) and the spec's worked example (mipfp)."""

from __future__ import annotations

import numpy as np
import pytest
from synth_helpers import example_tables, r_array, reference_case

from pipeline.errors import ParameterError
from pipeline.synth import MarginTable, fit_ipf


@pytest.mark.parametrize("case", ["IPF01", "IPF02", "IPF03"])
def test_syn_ipf_fitted_prob(case: str) -> None:
    ref = reference_case(case)
    res = ref["result"]
    names = res["obs_table"]["dimnames_names"]
    levels = [tuple(lv) for lv in res["obs_table"]["dimnames"]]
    tables, total = _reference_margins(ref)
    # margins.data = observed + priorn / cells: check our prior against R's before fitting
    args = ref["args"]
    fit = fit_ipf(tables, total, priorn=args["priorn"], tol=args.get("tol", 1e-3), tol_type="absolute")
    assert fit.layout.names == tuple(names)
    assert fit.layout.levels == tuple(levels)
    np.testing.assert_allclose(fit.probabilities(), r_array(res["fitted_prob"]), rtol=0, atol=1e-9)
    assert fit.report.converged is res["converged"]
    assert fit.report.iterations == res["iterations"]
    np.testing.assert_allclose(fit.report.stopping, res["evol.stp.crit"][: res["iterations"]], rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose([m.max_abs_dev for m in fit.report.margins], res["error.margins"], rtol=0, atol=1e-9)
    for m, data in zip(fit.report.margins, res["margins.data"], strict=True):
        assert m.released_total + m.prior_added == pytest.approx(sum(data["data"]), rel=1e-12)
    assert fit.report.scale == "counts"


CASES = [
    ("GT", "margins"),
    ("V2_nearest", "V2_nearest"),
    ("V3_nearest_shift", "V3_nearest_shift"),
    ("V1", "V1_small_to_L_minus_1"),
]


@pytest.mark.parametrize(("name", "key"), CASES)
@pytest.mark.parametrize("engine", ["dense", "sparse"])
def test_worked_example_ipf(example: dict, name: str, key: str, engine: str) -> None:
    expected = example["ipf"]["expected_counts_77p"][name]
    for tol, cycles in ((1e-3, "tol_1e-3_cycles"), (1e-10, "tol_1e-10_cycles")):
        fit = fit_ipf(example_tables(example, key), 77, priorn=0, tol=tol, tol_type="absolute", engine=engine)
        assert fit.report.iterations == expected[cycles]
        assert fit.report.converged
    np.testing.assert_allclose(77 * fit.probabilities().ravel(), expected["values"], atol=1e-3 + 1e-12)


def test_worked_example_diagnostics(example: dict) -> None:
    fit = fit_ipf(example_tables(example, "V2_nearest"), 77, priorn=0, tol=1e-10, tol_type="absolute")
    err = example["ipf"]["expected_counts_77p"]["V2_nearest"]["error_margins_prob_scale"]
    assert fit.report.scale == "probabilities"
    np.testing.assert_allclose(
        [m.max_abs_dev for m in fit.report.margins], [err[k] for k in ("AB", "AC", "BC")], atol=1e-7
    )
    # incompatible margins: flagged, still a stable fit whose last margin (BC) is matched exactly
    assert not fit.report.compatibility.compatible
    assert fit.report.compatibility.max_total_diff == 5
    assert any("not mutually compatible" in w for w in fit.report.warnings)
    bc = fit.fitted_margins[2].counts.ravel()
    np.testing.assert_allclose(bc, [20.533, 10.267, 5.133, 15.4, 15.4, 10.267], atol=1e-3)
    np.testing.assert_allclose(fit.fitted_margins[0].counts.ravel(), [25.53, 10.66, 10.41, 30.41], atol=1e-2)
    assert fit.report.margins[2].max_abs_dev_n < 1e-9


def test_worked_example_first_cycle(example: dict) -> None:
    fit = fit_ipf(example_tables(example, "V2_nearest"), 77, priorn=0, tol=1e-300, max_iter=1, tol_type="absolute")
    assert not fit.report.converged
    after = example["ipf"]["first_cycle_V2_prob_scale"]["after_BC"]
    np.testing.assert_allclose(fit.probabilities().ravel(), after, atol=1e-5)


def test_worked_example_prior_order_and_chain(example: dict) -> None:
    e = example["ipf"]["expected_counts_77p"]
    fit = fit_ipf(example_tables(example, "V2_nearest"), 77, priorn=1, tol=1e-3, tol_type="absolute")
    np.testing.assert_allclose(77 * fit.probabilities().ravel(), e["V2_nearest_priorn1_tol1e-3"], atol=1e-3 + 1e-12)
    layout = fit.layout
    reordered = example_tables(example, "V2_nearest", order=("BC", "AC", "AB"))
    fit = fit_ipf(reordered, 77, layout=layout, priorn=0, tol=1e-10, tol_type="absolute")
    assert fit.report.order == ("B:C", "A:C", "A:B")
    np.testing.assert_allclose(77 * fit.probabilities().ravel(), e["V2_nearest_order_BC_AC_AB"], atol=1e-3 + 1e-12)
    chain = example["ipf"]["chain_AB_BC_V2"]
    fit = fit_ipf(
        example_tables(example, "V2_nearest", order=("AB", "BC")), 77, priorn=0, tol=1e-10, tol_type="absolute"
    )
    assert fit.report.iterations == chain["cycles"]
    np.testing.assert_allclose(77 * fit.probabilities().ravel(), chain["values_77p"], atol=1e-3 + 1e-12)


def test_group_size_does_not_change_the_fit(example: dict) -> None:
    """One margin per pass (mipfp's literal schedule) and one pass per cycle agree to rounding."""
    tables = example_tables(example, "V3_nearest_shift")
    one = fit_ipf(tables, 77, priorn=0, tol=1e-10, tol_type="absolute", group_cells=1)
    all_ = fit_ipf(tables, 77, priorn=0, tol=1e-10, tol_type="absolute")
    assert one.report.passes_per_cycle == 3 and all_.report.passes_per_cycle == 1
    assert one.report.iterations == all_.report.iterations
    np.testing.assert_allclose(one.probabilities(), all_.probabilities(), rtol=1e-13, atol=0)


def _reference_margins(ref: dict) -> tuple[list[MarginTable], float]:
    res = ref["result"]
    obs = r_array(res["obs_table"])
    names = res["obs_table"]["dimnames_names"]
    levels = [tuple(lv) for lv in res["obs_table"]["dimnames"]]
    tables = []
    for m in res["margins"]:
        axes = [a - 1 for a in m]
        counts = obs.sum(axis=tuple(i for i in range(obs.ndim) if i not in axes))
        tables.append(MarginTable(tuple(names[a] for a in axes), tuple(levels[a] for a in axes), counts))
    return tables, float(obs.sum())


@pytest.mark.parametrize("engine", ["dense", "sparse"])
def test_syn_ipf_structzero_mode_reproduces_ipf04(engine: str) -> None:
    """structzero_mode="syn.ipf": all-ones start, prior in every margin cell, zeros after the fit."""
    ref = reference_case("IPF04")
    res = ref["result"]
    tables, n = _reference_margins(ref)
    zeros = [z["cells"] for z in ref["args"]["structzero"]]
    fit = fit_ipf(
        tables, n, priorn=1, structural_zeros=zeros, structzero_mode="syn.ipf", tol=1e-3, tol_type="absolute",
        engine=engine,
    )  # fmt: skip
    p = fit.probabilities()
    np.testing.assert_allclose(p, r_array(res["fitted_prob"]), rtol=0, atol=1e-12)
    assert p[0, 2:4, :].sum() == 0 and p[0, :, 3].sum() == 0
    assert fit.report.iterations == res["iterations"]
    np.testing.assert_allclose(fit.report.stopping, res["evol.stp.crit"], rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose([m.max_abs_dev for m in fit.report.margins], res["error.margins"], rtol=0, atol=1e-9)
    # the ground truth has counts in the zero cells: R warns, so do we
    assert any("structural_zeros contradict margin 'agegr:marital'" in w for w in fit.report.warnings)


def test_default_structzero_mode_refuses_counts_in_zero_cells_and_differs_from_syn_ipf() -> None:
    """The default ("seed") refuses released counts inside zero cells; on margins without such
    counts it fits a table whose margins respect the zeros, which syn.ipf's post-fit zeroing does not."""
    ref = reference_case("IPF04")
    tables, n = _reference_margins(ref)
    zeros = [z["cells"] for z in ref["args"]["structzero"]]
    with pytest.raises(ParameterError, match="structural_zeros contradict margin 'agegr:marital'"):
        fit_ipf(tables, n, priorn=1, structural_zeros=zeros, tol=1e-3, tol_type="absolute")
    cleaned = []
    for t in tables:
        c = t.counts.copy()
        if t.variables == ("agegr", "marital"):
            c[0, 2:4] = 0
        if t.variables == ("agegr", "edu"):
            c[0, 3] = 0
        cleaned.append(t.with_counts(c))
    total = cleaned[0].counts.sum()
    cleaned[2] = cleaned[2].with_counts(cleaned[2].counts * total / cleaned[2].counts.sum())
    seed = fit_ipf(cleaned, total, priorn=1, structural_zeros=zeros, tol=1e-10, tol_type="absolute")
    post = fit_ipf(cleaned, total, priorn=1, structural_zeros=zeros, structzero_mode="syn.ipf", tol=1e-10,
                   tol_type="absolute")  # fmt: skip
    assert seed.report.margins[0].max_abs_dev_n < post.report.margins[0].max_abs_dev_n
    assert 1e-9 < np.abs(seed.probabilities() - post.probabilities()).max() < 1e-2
