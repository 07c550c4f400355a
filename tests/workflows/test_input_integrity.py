"""Issue 25, items 4 and 8: the original given as its own synthetic set, an original of one
record, negative seeds and absurd repetition counts are refused by ``validate`` (exit 2, one
line), and a one-cell table gives NaN statistics instead of a ZeroDivisionError."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from workflow_task_files import COPY_TASK

from pipeline.blocks import key_hash
from pipeline.cli import main
from pipeline.datasets import demo_path
from pipeline.run.integrity import COPY_SHARE, copy_share
from pipeline.utility.tab import table_statistics


def _original() -> pd.DataFrame:
    return pd.read_csv(demo_path("sd2011_subset.csv")).head(400)


def _validate(tmp_path: Path, synthetic: pd.DataFrame, control: bool = False, original: pd.DataFrame | None = None):
    (original if original is not None else _original()).to_csv(tmp_path / "orig.csv", index=False)
    synthetic.to_csv(tmp_path / "syn.csv", index=False)
    task = tmp_path / "t.yaml"
    task.write_text(COPY_TASK.format(file="syn.csv", control=", control: true" if control else ""))
    return CliRunner().invoke(main, ["validate", str(task)])


def test_the_original_as_its_own_synthetic_set_is_refused(tmp_path: Path) -> None:
    out = _validate(tmp_path, _original())
    assert out.exit_code == 2
    assert "source 's': synthetic set 1" in out.output and "is a copy of the original (the same records)" in out.output
    assert "control: true" in out.output
    assert "Traceback" not in out.output


def test_a_shuffled_copy_is_refused(tmp_path: Path) -> None:
    out = _validate(tmp_path, _original().sample(frac=1.0, random_state=3))
    assert out.exit_code == 2
    assert "(the same records in another order)" in out.output


def test_a_copy_with_a_few_values_changed_is_refused_naming_the_share(tmp_path: Path) -> None:
    near = _original()
    near.loc[:1, "income"] = near.loc[:1, "income"] + 1  # 2 of 400 records changed: 99.5 % unchanged
    out = _validate(tmp_path, near)
    assert out.exit_code == 2
    assert "(99.50% of its records unchanged, row by row)" in out.output


def test_a_deliberate_control_and_a_real_synthesis_pass(tmp_path: Path) -> None:
    assert _validate(tmp_path, _original(), control=True).exit_code == 0
    synthetic = _original().sample(frac=1.0, random_state=5).reset_index(drop=True)
    synthetic["income"] = _original()["income"]  # the records broken up: few equal an original record
    out = _validate(tmp_path, synthetic)
    assert out.exit_code == 0, out.output


def test_copy_share_rules() -> None:
    frame = _original()
    h = key_hash(frame, list(frame.columns))
    assert copy_share(h, h) == (True, 1.0)
    assert copy_share(h, h[::-1])[0] and copy_share(h, h[::-1])[1] < COPY_SHARE
    assert copy_share(h, h[:-1]) == (False, 0.0)  # another size: never row by row
    # whole numbers and floats of the same value are the same record
    as_float = frame.astype({"age": "float64"})
    assert np.array_equal(key_hash(as_float, list(as_float.columns)), h)


def test_an_original_of_one_record_is_refused(tmp_path: Path) -> None:
    orig = _original()
    out = _validate(tmp_path, orig.iloc[[0]], original=orig.iloc[[0]])
    assert out.exit_code == 2
    assert "dataset 'sd': the original" in out.output and "has 1 record(s); at least 2 are needed" in out.output


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("seed: -1", "seed: Input should be greater than or equal to 0"),
        ("repetitions: 1000000000", "repetitions: Input should be less than or equal to 10000"),
    ],
)
def test_negative_seed_and_absurd_repetitions_are_refused_at_load(tmp_path: Path, line: str, expected: str) -> None:
    task = tmp_path / "t.yaml"
    body = "datasets:\n  - name: sd\n    original: {demo: sd2011_subset}\nmeasures:\n  - type: profile\n"
    task.write_text(f"name: t\n{line}\n{body}")
    out = CliRunner().invoke(main, ["validate", str(task)])
    assert out.exit_code == 2
    assert "line 2: " + expected in out.output


def test_absurd_m_is_refused_at_load(tmp_path: Path) -> None:
    task = tmp_path / "t.yaml"
    task.write_text(
        "name: t\ndatasets:\n  - name: sd\n    original: {demo: sd2011_subset}\n    synthetic:\n      - name: m\n"
        "        synthesise: {variables: [sex, agegr], m: 100000000000000000000}\nmeasures:\n  - type: profile\n"
    )
    out = CliRunner().invoke(main, ["validate", str(task)])
    assert out.exit_code == 2
    assert "line 7: dataset 'sd' source 'm': synthesise: m: " in out.output


def test_a_one_cell_table_has_nan_standardised_statistics() -> None:
    stats, _ = table_statistics(np.array([5.0]), np.array([5.0]))
    assert stats["df"] == 0.0
    for name in ("S_VW", "S_FT", "S_JSD", "S_G", "S_WMabsDD", "S_pMSE"):
        assert math.isnan(stats[name]), name
    assert stats["VW"] == 0.0 and stats["pMSE"] == 0.0
