"""utility_tab against synthpop 1.9-2 (reference/utility_tab, vendored in tests/reference): every statistic to 1e-9."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.utility import TAB_STATS, utility_tab

from .helpers import case_data, load, r_array, r_values, ref_files

CASES = ref_files("utility_tab")


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_utility_tab_matches_synthpop(path):
    ref = load(path)
    orig, syns, schema = case_data(ref)
    args = ref["args"]
    res = utility_tab(
        orig, syns, args["vars"], ngroups=args.get("ngroups", 5), cont_na=args.get("cont.na"), schema=schema
    )
    expected = ref["result"]
    assert res.m == expected["m"]
    for stat in (*TAB_STATS, "nempty"):
        np.testing.assert_allclose(res[stat], r_values(expected[stat]), rtol=1e-9, atol=0, err_msg=stat)
    # the tables themselves, with synthpop's level labels (None = the NA level)
    np.testing.assert_array_equal(res.tab_obs, r_array(expected["tab.obs"]))
    assert [list(lv) for lv in res.levels] == expected["tab.obs"]["dimnames"]
    for got, exp in zip(res.tab_syn, expected["tab.syn"], strict=True):
        np.testing.assert_array_equal(got, r_array(exp))
    for got, exp in zip(res.tab_zdiff, expected["tab.zdiff"], strict=True):
        np.testing.assert_allclose(got, r_array(exp), rtol=1e-9, equal_nan=True)
