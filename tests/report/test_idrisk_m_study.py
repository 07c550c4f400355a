"""The Hornby & Hu task files and Fig. 10's points of a repeated study (per-repetition means)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from pipeline.risk.idrisk.plots import boxplot_points
from pipeline.runner import validate_task
from pipeline.tasks import SynthesisUnit, load_task

TASKS = Path(__file__).resolve().parents[2] / "tasks"


def test_repeated_source_gives_one_point_per_repetition_single_source_one_per_set():
    joined = pd.DataFrame(
        {
            "source": ["m10"] * 4 + ["once"] * 2,
            "repetition": [0, 0, 1, 1, 0, 0],
            "utility": [1.0, 3.0, 5.0, 7.0, 0.5, 0.7],
            "risk": [10.0, 20.0, 30.0, 50.0, 1.0, 2.0],
        }
    )
    points = boxplot_points(joined)
    got = points.sort_values(["source", "utility"]).reset_index(drop=True)
    want = pd.DataFrame(
        {"source": ["m10", "m10", "once", "once"], "utility": [2.0, 6.0, 0.5, 0.7], "risk": [15.0, 40.0, 1.0, 2.0]}
    )
    pd.testing.assert_frame_equal(got, want)


def test_hornby_hu_tasks_validate_without_synthesising(tmp_path):
    units = validate_task(load_task(TASKS / "hornby_hu.yaml"))
    syntheses = [u for u in units if isinstance(u, SynthesisUnit)]
    assert [(u.dataset, u.source) for u in syntheses] == [
        ("cedata", "s1_income"), ("cedata", "s2_income_tenure"), ("cedata", "s3_income_expenditure"),
        ("cedata", "s4_income_expenditure_tenure"), ("cedata_holdout", "s1_income"),
    ]  # fmt: skip
    assert all(u.params.m == 20 for u in syntheses)
    text = (TASKS / "hornby_hu_m_study.yaml").read_text(encoding="utf-8")
    assert load_task(TASKS / "hornby_hu_m_study.yaml").spec.repetitions == 100
    small = tmp_path / "m_study.yaml"
    small.write_text(text.replace("repetitions: 100", "repetitions: 4"), encoding="utf-8")
    m_study = validate_task(load_task(small))
    syntheses = [u for u in m_study if isinstance(u, SynthesisUnit)]
    assert sorted({(u.source, u.params.m) for u in syntheses}) == [("m1", 1), ("m10", 10), ("m20", 20)]
    assert len({u.params.seed for u in syntheses}) == 3 * 4  # every synthesis has its own seed
    assert len(m_study) == 12 + 2 * 12  # + identification risk and utility per synthesis
