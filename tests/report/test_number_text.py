"""Issue 23 (5): numbers in the report read as numbers: counts and totals of 10,000 and more as
whole numbers with separators (a margin total of 28,155 stored as 28154.999… read 2.815e+04)."""

from __future__ import annotations

import math

import pandas as pd

from pipeline.report.markup import number_text, table_html


def test_large_numbers_read_as_whole_numbers_with_separators() -> None:
    assert number_text(28154.999999999996) == "28,155"
    assert number_text(28155.0) == "28,155"
    assert number_text(-1234567.4) == "-1,234,567"
    assert number_text(9999.4) == "9999"  # below 10,000: 4 significant digits as before
    assert number_text(0.012344) == "0.01234"
    assert number_text(1e-15) == "0"
    assert number_text(math.nan) == "NA"
    assert number_text(3e20) == "3e+20"


def test_tables_use_the_same_rule() -> None:
    html = table_html(pd.DataFrame({"margin": ["sex:agegr"], "released_total": [28154.999999999996]}))
    assert "<td>28,155</td>" in html and "e+04" not in html
