"""The DP trade-off plot: utility and risk against epsilon beside the coarsened variants."""

from __future__ import annotations

import pandas as pd

from pipeline.report.markup import blocks_html
from pipeline.synth.section import dp_tradeoff_section


def _rows(source: str, family: str, measure: str, values: list[float], name: str) -> list[dict]:
    return [
        {"dataset": "d", "source": source, "repetition": 0, "family": family, "measure_name": name,
         "synthetic": str(i + 1), "measure": measure, "value": v}
        for i, v in enumerate(values)
    ]  # fmt: skip


def _results(with_dp: bool) -> pd.DataFrame:
    rows = _rows("V2", "synthesis", "n", [100.0], "synthesise")
    rows += _rows("V2", "utility", "S_pMSE", [2.0, 4.0], "utility_tables")
    rows += _rows("V2", "disclosure", "repU", [0.3, 0.3], "disclosure")
    rows += _rows("V2", "disclosure", "UiO", [9.0], "disclosure")  # not a trade-off measure
    if with_dp:
        for src, eps, u in (("dp1", 1.0, 20.0), ("dp8", 8.0, 3.0)):
            rows += [
                {**r, "synthetic": "original"} for r in _rows(src, "synthesis", "dp_epsilon_spent", [eps], "synthesise")
            ]
            rows += _rows(src, "utility", "S_pMSE", [u, u + 2], "utility_tables")
            rows += _rows(src, "disclosure", "repU", [0.05, 0.07], "disclosure")
    return pd.DataFrame(rows)


def test_one_figure_per_dataset_with_dp_releases_and_none_without() -> None:
    html = [blocks_html([b]) for b in dp_tradeoff_section(_results(with_dp=True))]
    assert len(html) == 1
    assert "utility and risk of DP margins against epsilon" in html[0]
    assert html[0].count("<img") == 1
    assert dp_tradeoff_section(_results(with_dp=False)) == []
