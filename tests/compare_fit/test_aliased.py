"""Aliased coefficients (R's NA) in ``compare_fit``: the lm/glm fits pivot as R's ``dqrdc2`` and
report NaN; synthpop's combining rules and comparison then leave them out.

No public reference holds an aliased fit (R would need to be run on these data), so each case is
checked against the same model fitted without the aliased column (R's pivoting makes the other
coefficients exactly those of that fit) and the lack-of-fit test against its formula over the
remaining coefficients.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from pipeline.compare_fit import compare_fit_synds
from pipeline.data.schema import Schema, Variable
from pipeline.evaluation.execution import Executor

MEMORY = Executor(policy="memory")
LEVELS = ("a", "b", "c")


def data(n: int, seed: int, with_c: bool = True) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x = rng.choice(list(LEVELS if with_c else LEVELS[:2]), size=n)
    z = rng.normal(size=n)
    eta = 0.3 + 0.8 * z + (x == "b") - 0.5 * (x == "c")
    y = (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(int)
    return pd.DataFrame({"y": y.astype(float), "w": eta + rng.normal(size=n), "x": pd.Categorical(x, LEVELS),
                         "z": z, "z2": 2.0 * z - 1.0})  # fmt: skip


SCHEMA = Schema((Variable("y", "numeric"), Variable("w", "numeric"), Variable("x", "factor", LEVELS),
                 Variable("z", "numeric"), Variable("z2", "numeric")))  # fmt: skip


@pytest.mark.parametrize(("model", "response"), [("lm", "w"), ("glm", "y")])
def test_a_level_absent_from_a_set_gives_nan_and_is_left_out(model: str, response: str) -> None:
    family = {"family": "binomial"} if model == "glm" else {}
    orig, syns = data(600, 1), [data(600, 2, with_c=False), data(600, 3)]
    res = compare_fit_synds(f"{response} ~ x + z", orig, syns, fitting_function=model, schema=SCHEMA,
                            executor=MEMORY, **family)  # fmt: skip
    names = list(res.names)
    xc = names.index("xc")
    assert np.isnan(res.fits[0].coefficients[xc]) and np.isnan(res.fits[0].se[xc])
    # the others: the fit of set 1 with the level dropped from its schema (no column at all)
    two = Schema((Variable("y", "numeric"), Variable("w", "numeric"), Variable("x", "factor", LEVELS[:2]),
                  Variable("z", "numeric"), Variable("z2", "numeric")))  # fmt: skip
    set1 = syns[0].assign(x=pd.Categorical(syns[0]["x"].astype(str), LEVELS[:2]))
    alone = compare_fit_synds(f"{response} ~ x + z", set1, [set1], fitting_function=model, schema=two,
                              executor=MEMORY, **family)  # fmt: skip
    keep = [i for i in range(len(names)) if i != xc]
    np.testing.assert_allclose(res.fits[0].coefficients[keep], alone.original.coefficients, rtol=1e-10)
    np.testing.assert_allclose(res.fits[0].se[keep], alone.original.se, rtol=1e-10)
    # combining: the mean over the sets that have it (synthpop's mean(na.rm = TRUE))
    assert res.summary.qbar[xc] == pytest.approx(res.fits[1].coefficients[xc], rel=1e-14)
    assert np.isnan(res.summary.b[xc])  # var() without na.rm
    # comparison: every coefficient has a difference here (set 2 has xc), so the test keeps all
    assert res.comparison.lof_excluded == 0


def test_collinear_numeric_is_aliased_after_its_partner_as_r_pivots() -> None:
    orig, syns = data(500, 4), [data(500, 5), data(500, 6)]
    res = compare_fit_synds("w ~ x + z + z2", orig, syns, fitting_function="lm", schema=SCHEMA, executor=MEMORY)
    plain = compare_fit_synds("w ~ x + z", orig, syns, fitting_function="lm", schema=SCHEMA, executor=MEMORY)
    z2 = list(res.names).index("z2")
    for fit, ref in zip((res.original, *res.fits), (plain.original, *plain.fits), strict=True):
        assert np.isnan(fit.coefficients[z2])  # z2 = 2 z - 1 comes after z and the intercept: aliased
        np.testing.assert_allclose(np.delete(fit.coefficients, z2), ref.coefficients, rtol=1e-9)
        np.testing.assert_allclose(np.delete(fit.se, z2), ref.se, rtol=1e-9)
        assert fit.df_residual == ref.df_residual
    c, p = res.comparison, plain.comparison
    assert c.lof_excluded == 1 and c.lof_df == p.lof_df
    assert c.lack_of_fit == pytest.approx(p.lack_of_fit, rel=1e-8)
    assert c.mean_ci_overlap == pytest.approx(p.mean_ci_overlap, rel=1e-9)
    rows = res.tidy()
    assert rows.loc[rows["measure"] == "lof_excluded", "value"].tolist() == [1.0]
    assert rows.loc[(rows["measure"] == "coef") & rows["params"].str.contains('"z2"'), "value"].isna().all()


def test_lack_of_fit_over_the_remaining_coefficients_by_hand() -> None:
    orig, syns = data(600, 7), [data(600, 8, with_c=False)]  # m = 1: xc has no synthetic estimate
    res = compare_fit_synds("w ~ x + z", orig, syns, fitting_function="lm", schema=SCHEMA, executor=MEMORY)
    c = res.comparison
    xc = list(res.names).index("xc")
    assert np.isnan(c.diff[xc]) and np.isnan(c.ci_overlap[xc]) and c.lof_excluded == 1
    keep = np.isfinite(c.diff)
    v = res.original.vcov[np.ix_(keep, keep)] * res.n / res.k / 1
    want = float(c.diff[keep] @ np.linalg.solve(v, c.diff[keep]))
    assert c.lack_of_fit == pytest.approx(want, rel=1e-9)
    assert c.lof_pvalue == pytest.approx(1 - stats.chi2.cdf(want, keep.sum()), rel=1e-9)
    assert c.mean_ci_overlap == pytest.approx(np.mean(c.ci_overlap[keep]), rel=1e-14)
