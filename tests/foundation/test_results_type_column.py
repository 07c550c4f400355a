"""The results table's ``type`` column (the task's measure type) and histories stored before it."""

from __future__ import annotations

import pandas as pd

from pipeline.results import RESULT_COLUMNS
from pipeline.store import ResultsStore


def _results(with_type: bool) -> pd.DataFrame:
    rows = [
        {
            "task": "t",
            "run_id": "r",
            "dataset": "d",
            "source": "s",
            "repetition": 0,
            "family": "disclosure",
            "type": "disclosure",
            "measure_name": "disclosure_agegr",
            "setting": "",
            "params": '{"keys":["sex"],"target":"ls"}',
            "synthetic": "1",
            "measure": "repU",
            "value": 1.5,
        }
    ]
    frame = pd.DataFrame(rows, columns=RESULT_COLUMNS)
    return frame if with_type else frame.drop(columns="type")


def test_type_is_a_result_column_beside_family_and_measure_name() -> None:
    assert RESULT_COLUMNS.index("type") == RESULT_COLUMNS.index("family") + 1
    assert RESULT_COLUMNS.index("measure_name") == RESULT_COLUMNS.index("type") + 1


def test_history_stored_before_the_type_column_still_reads(tmp_path) -> None:
    store = ResultsStore(tmp_path / "history")
    store.append(_results(with_type=False), {"task": "t", "run_id": "old", "started_utc": "2026-11-01T00:00:00"})
    store.append(_results(with_type=True), {"task": "t", "run_id": "new", "started_utc": "2026-11-02T00:00:00"})
    old, new = (store.read_run(r.path) for r in store.runs("t").itertuples())
    assert list(old.columns) == list(new.columns) == RESULT_COLUMNS
    assert old["type"].isna().all() and new["type"].tolist() == ["disclosure"]
    assert old.drop(columns="type").equals(new.drop(columns="type").assign(run_id=old["run_id"]))
    assert store.query("t")["type"].tolist() == [None, "disclosure"]
