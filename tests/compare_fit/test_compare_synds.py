"""``compare`` (synthpop's ``compare.synds``) against synthpop 1.9-2: CF11-CF13.

The tables are counts or percentages of records (exact up to the division: 1e-12 relative);
``tab.utility`` is the mean over the m sets of ``utility.tab`` per variable, whose statistics
the utility_tab references already pin (1e-8 relative here).
"""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.evaluation.execution import Executor
from pipeline.utility.api import compare_synds
from tests.compare_fit.test_reference import case, inputs, matrix

CASES = ["CF11", "CF12", "CF13"]


def run(case_id: str):
    d = case(case_id)
    schema, orig, syns = inputs(case_id)
    args = d["args"]
    return compare_synds(
        orig, list(syns), schema=schema, vars=args.get("vars"), stat=args.get("stat", "percents"),
        breaks=args.get("breaks", 20), ngroups=args.get("ngroups", 5),
        utility_stats=args.get("utility.stats", ["pMSE", "S_pMSE", "df"]), cont_na=d["synds"].get("cont.na"),
        executor=Executor(policy="memory"),
    )  # fmt: skip


@pytest.mark.parametrize("case_id", CASES)
def test_tables_and_utility(case_id: str) -> None:
    ref = case(case_id)["result"]
    got = run(case_id)
    assert list(got.vars) == ref["vars"]
    assert got.kinds == ref["variable_kind"]
    for name, table in ref["tables"].items():
        labels, obs, syn = got.tables[name]
        assert list(labels) == table["dimnames"][1], name
        want = matrix(table)
        np.testing.assert_allclose(obs, want[0], rtol=1e-12, err_msg=name)
        np.testing.assert_allclose(syn, want[1], rtol=1e-12, err_msg=name)
    for name, edges in ref["histogram_breaks"].items():
        np.testing.assert_array_equal(got.breaks[name], edges)
    tab = matrix(ref["tab.utility"])
    stats = ref["tab.utility"]["dimnames"][1]
    np.testing.assert_allclose(got.tab_utility[stats].to_numpy(), tab, rtol=1e-8, atol=1e-14)
