"""A task's key-block layout (:mod:`pipeline.run.layout`): the data laid out once by the key its
block-wise measures share, the same rows as in memory, and the layouts made in the manifest."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from pipeline.datasets import load_demo
from pipeline.evaluation.primitives.layout import Layouts
from pipeline.runner import run_task
from pipeline.tasks import load_task

COLS = ["dataset", "source", "repetition", "family", "measure_name", "params", "synthetic", "measure", "value"]


def _task(folder: Path, policy: str) -> str:
    return f"""
name: layout
seed: 5
execution: {{policy: {policy}, block_rows: 300}}
datasets:
  - name: ce
    original: {{path: {folder}/training.parquet, schema: {folder}/ce.schema.json}}
    holdout: {folder}/holdout.parquet
    synthetic:
      - {{name: s, paths: [{folder}/syn.parquet]}}
measures:
  - type: dcr
    params: {{vars: [Urban, Marital, Tenure, Income], block_on: [Urban, Marital], baseline_records: 200}}
  - type: dcr
    params: {{vars: [Urban, Educ, Income], block_on: [Urban], baseline_records: 200}}
"""


def test_a_task_lays_its_data_out_once_and_gives_the_rows_of_memory(tmp_path, monkeypatch):
    served: list[list[str]] = []  # the key blocks the layout's partitions were used as
    _laid_out_blocks = Layouts._laid_out_blocks

    def spy(self, layout, data, keys, with_row_id):
        served.append(list(keys))
        return _laid_out_blocks(self, layout, data, keys, with_row_id)

    monkeypatch.setattr(Layouts, "_laid_out_blocks", spy)
    cedata = load_demo("cedata").to_pandas().reset_index(drop=True)
    order = np.random.default_rng(4).permutation(len(cedata))
    for name, rows in zip(("training", "holdout", "syn"), np.array_split(order, 3), strict=True):
        cedata.iloc[np.sort(rows)].to_parquet(tmp_path / f"{name}.parquet", index=False)
    (tmp_path / "ce.schema.json").write_text(json.dumps(load_demo("cedata").schema.to_dict()))
    cluster = tmp_path / "local.yaml"
    cluster.write_text("type: local\nn_workers: 2\nthreads_per_worker: 1\nprocesses: false\n")
    outcomes = {}
    for policy in ("memory", "blocks"):
        task_file = tmp_path / f"{policy}.yaml"
        task_file.write_text(_task(tmp_path, policy))
        outcomes[policy] = run_task(
            load_task(task_file), cluster=str(cluster), out_dir=tmp_path / policy, progress=False, report=False
        )
    pd.testing.assert_frame_equal(
        outcomes["blocks"].results[COLS].reset_index(drop=True), outcomes["memory"].results[COLS].reset_index(drop=True)
    )
    assert outcomes["memory"].manifest["layouts"] == []
    # the nearest-neighbour searches of both measures ran partition-local (the finer one refining)
    assert sorted(map(tuple, served)) == [("Urban",), ("Urban",), ("Urban", "Marital"), ("Urban", "Marital")]
    # both measures contain Urban: one layout of the original, the synthetic set and the holdout
    (layout,) = outcomes["blocks"].manifest["layouts"]
    assert layout["keys"] == ["Urban"] and layout["data_sets"] == 3 and layout["blocks"] >= 2
    written = json.loads(next((tmp_path / "blocks").rglob("manifest.json")).read_text())
    assert written["layouts"] == [layout]
