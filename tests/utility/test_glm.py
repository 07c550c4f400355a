"""The IRLS pieces: R's aliasing rule, the Gram/QR switch, R's term order and contrasts."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pipeline.data.schema import Schema, Variable
from pipeline.rmodels.design import Design, Predictor, contr_poly, n_params, r_power_terms
from pipeline.rmodels.glm import IRLS, dqrdc2_kept
from pipeline.utility import utility_gen, utility_tab


def test_dqrdc2_moves_dependent_columns():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(50, 3))
    design = np.column_stack([np.ones(50), x[:, 0], np.zeros(50), x[:, 0] + 2.0, x[:, 1], x[:, 2]])
    r = np.linalg.qr(design, mode="r")
    # column 2 is zero, column 3 = 2 * intercept + column 1
    np.testing.assert_array_equal(dqrdc2_kept(r), [0, 1, 4, 5])


def test_gram_start_defers_to_qr_when_undecidable():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(40, 2))
    design = np.column_stack([np.ones(40), x, x[:, 0] - x[:, 1]])  # an exact non-zero dependence
    state = IRLS(4)
    g = design.T @ design
    state._start_from_gram(g, design.T @ np.ones(40))
    assert state.force_qr and state.kept is None and state.beta is None
    clean = IRLS(3)
    clean._start_from_gram(g[:3, :3], (design.T @ np.ones(40))[:3])
    assert not clean.force_qr and list(clean.kept) == [0, 1, 2] and clean.iteration == 1


def test_saturated_logit_with_a_nonzero_aliased_column_equals_the_table_pmse():
    # level b3 only occurs with a2, so column a2:b3 equals column b3 (aliased, not zero)
    schema = Schema((Variable("A", "factor", ("a1", "a2")), Variable("B", "factor", ("b1", "b2", "b3"))))
    cells = [("a1", "b1"), ("a1", "b2"), ("a2", "b1"), ("a2", "b2"), ("a2", "b3")]

    def frame(counts):
        return schema.apply(pd.DataFrame([c for c, k in zip(cells, counts, strict=True) for _ in range(k)],
                                         columns=["A", "B"]))  # fmt: skip

    orig, syn = frame([30, 20, 25, 15, 10]), frame([25, 28, 20, 12, 15])
    res = utility_gen(orig, syn, method="logit", maxorder=1, schema=schema)
    fit = res.fits[0]
    names = list(fit.names)
    assert np.isnan(fit.coefficients[names.index("Aa2:Bb3")])
    assert res["df"][0] == 4 and fit.converged
    tab = utility_tab(orig, syn, ["A", "B"], schema=schema)
    assert res["pMSE"][0] == pytest.approx(tab["pMSE"][0], rel=1e-9)


def test_r_term_order_and_names():
    assert r_power_terms(3, 2) == [(0,), (1,), (2,), (0, 1), (0, 2), (1, 2)]
    assert r_power_terms(4, 3)[-4:] == [(0, 1, 2), (0, 1, 3), (0, 2, 3), (1, 2, 3)]
    design = Design.build([Predictor("sex", ("M", "F")), Predictor("age"), Predictor("ed", ("p", "s", None))], 1)
    assert design.names == (
        "(Intercept)", "sexF", "age", "eds", "edNA", "sexF:age", "sexF:eds", "sexF:edNA", "age:eds", "age:edNA"
    )  # fmt: skip
    assert n_params([2, 2, 3], 1) == design.n_columns


def test_contr_poly_matches_r():
    # R: contr.poly(3)
    np.testing.assert_allclose(contr_poly(3), [[-0.7071068, 0.4082483], [0, -0.8164966], [0.7071068, 0.4082483]],
                               atol=1e-7)  # fmt: skip
    ordered = Predictor("lvl", ("lo", "mid", "hi"), ordered=True)
    assert ordered.basis()[1] == ["lvl.L", "lvl.Q"]
