"""Row roles are columns of the results table (issue 33 item 1): a history written before them
(roles as params keys ``baseline``/``summary``/``ci``, summaries under synthetic "mean") reads with
them, so gates and ``sdc-pipeline history`` work on old and new runs alike."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from click.testing import CliRunner

from pipeline.cli import main
from pipeline.evaluation.base import canonical_json
from pipeline.nightly import check_gates
from pipeline.results import RESULT_COLUMNS, ROLE_COLUMNS, with_role_columns
from pipeline.store import ResultsStore
from pipeline.tasks import GateSpec

P = {"keys": ["a", "b"], "target": "t"}


def _rows(upper: float, old: bool) -> pd.DataFrame:
    """One repU entry with two sets, its baseline rows and summaries, in the old or the new layout."""
    found = [("1", "repU", 3.0, "observed", None, None), ("2", "repU", 5.0, "observed", None, None)]
    found += [("1", "repU", 2.0, "training", None, None), ("1", "repU", 1.0, "holdout", None, None)]
    found += [("1", "repU", 1.0, "excess", None, None), ("1", "DiSCO", 0.5, "residual", None, None)]
    found += [("all", "repU", 1.0, "excess", "mean", None), ("all", "repU", upper, "excess", "upper95", "permutation")]
    found += [("all", "repU", 4.0, "observed", "mean", None), ("all", "repU", 9.0, "observed", "upper95", "t")]
    out = []
    for synthetic, measure, value, role, summary, method in found:
        params, row = dict(P), {"role": role, "summary": summary, "method": method}
        if old:
            old_role = {"observed": None, "residual": "normalised_excess"}.get(role, role)
            params |= {k: v for k, v in (("baseline", old_role), ("summary", summary), ("ci", method)) if v}
            synthetic = "mean" if synthetic == "all" else synthetic
            row = {}
        out.append({"task": "t", "run_id": "old" if old else "new", "dataset": "d", "source": "s", "repetition": 0,
                    "family": "disclosure", "type": "disclosure", "measure_name": "disclosure", "setting": "x",
                    "params": canonical_json(params), "synthetic": synthetic, "measure": measure, "value": value,
                    **row})  # fmt: skip
    frame = pd.DataFrame(out)
    return frame if old else frame[RESULT_COLUMNS]


def test_old_rows_read_with_their_roles_as_columns_and_the_values_untouched():
    old, new = _rows(2.0, old=True), _rows(2.0, old=False)
    converted = with_role_columns(old)
    assert not any(json.loads(p).keys() & {"baseline", "summary", "ci"} for p in converted["params"])
    same = [c for c in RESULT_COLUMNS if c != "run_id"]
    pd.testing.assert_frame_equal(converted[same], new[same], check_dtype=False)
    assert with_role_columns(new) is new  # a new table is left as it is


def test_gates_and_the_history_command_work_on_an_old_and_a_new_run(tmp_path):
    store = ResultsStore(tmp_path / "history")
    store.append(_rows(2.0, old=True), {"task": "t", "run_id": "old", "started_utc": "2026-11-01T00:00:00"})
    store.append(_rows(3.5, old=False), {"task": "t", "run_id": "new", "started_utc": "2026-11-02T00:00:00"})
    runs = store.runs("t")
    previous, current = (store.read_run(p) for p in runs["path"])
    assert list(previous.columns) == RESULT_COLUMNS and set(previous["role"]) == set(current["role"])
    # the old run's excess bound is found at the same gate key as the new one's: the rise is measured
    gate = GateSpec(measure="repU", baseline="excess", summary="upper95", rise_above=1.0)
    (check,) = check_gates(current, previous, [gate])
    assert (check.previous, check.value, check.failed) == (2.0, 3.5, True)
    (own,) = check_gates(current, previous, [GateSpec(measure="repU", above=4.0)])
    assert (own.value, own.previous) == (5.0, 5.0)  # the measure's own rows, not the summaries over sets
    (renamed,) = check_gates(current, previous, [GateSpec(measure="DiSCO", baseline="normalised_excess", above=1)])
    assert renamed.previous == pytest.approx(0.5)  # the old name of the residual still selects it
    both = store.query("t")
    assert both.groupby("run_date").size().tolist() == [10, 10]
    assert both[list(ROLE_COLUMNS)].isna().sum().to_dict() == {"role": 0, "summary": 12, "method": 16}
    shown = CliRunner().invoke(main, ["history", str(tmp_path / "history"), "--measure", "repU", "--csv"])
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    assert lines[0].endswith("measure,role,summary,method,value") and len(lines) == 1 + 18
    assert sum(",excess,upper95,permutation," in line for line in lines) == 2
