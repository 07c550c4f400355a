"""A task's key-block layout (:mod:`pipeline.run.layout`): the data laid out once by the key its
block-wise measures share, the same rows as in memory, and the layouts made in the manifest."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from pipeline.datasets import load_demo
from pipeline.evaluation.cost import COSTS, PathCost
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


def _inputs(folder: Path) -> Path:
    """The CEdata split in training, holdout and a synthetic set; the local cluster file."""
    cedata = load_demo("cedata").to_pandas().reset_index(drop=True)
    order = np.random.default_rng(4).permutation(len(cedata))
    for name, rows in zip(("training", "holdout", "syn"), np.array_split(order, 3), strict=True):
        cedata.iloc[np.sort(rows)].to_parquet(folder / f"{name}.parquet", index=False)
    (folder / "ce.schema.json").write_text(json.dumps(load_demo("cedata").schema.to_dict()))
    cluster = folder / "local.yaml"
    cluster.write_text("type: local\nn_workers: 2\nthreads_per_worker: 1\nprocesses: false\n")
    return cluster


def _run(folder: Path, cluster: Path, policy: str, name: str | None = None):
    task_file = folder / f"{name or policy}.yaml"
    task_file.write_text(_task(folder, policy))
    return run_task(
        load_task(task_file), cluster=str(cluster), out_dir=folder / (name or policy), progress=False, report=False
    )


def test_a_task_lays_its_data_out_once_and_gives_the_rows_of_memory(tmp_path, monkeypatch):
    served: list[list[str]] = []  # the key blocks the layout's partitions were used as
    _laid_out_blocks = Layouts._laid_out_blocks

    def spy(self, layout, data, keys, with_row_id):
        served.append(list(keys))
        return _laid_out_blocks(self, layout, data, keys, with_row_id)

    monkeypatch.setattr(Layouts, "_laid_out_blocks", spy)
    cluster = _inputs(tmp_path)
    outcomes = {policy: _run(tmp_path, cluster, policy) for policy in ("memory", "blocks")}
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


#: dcr's cost per million records when the cluster pays at any size (no fixed cost, cheap workers)
#: and when it never does (a driver cost per call no task of this size repays)
CLUSTER_PAYS = PathCost(memory=100.0, driver_fixed=0.0, driver=0.0, workers_fixed=0.0, workers=1.0, memory_bytes=100)
MEMORY_PAYS = PathCost(memory=1.0, driver_fixed=100.0, driver=0.0, workers_fixed=0.0, workers=1.0, memory_bytes=100)


def test_policy_auto_follows_the_measured_cost(tmp_path, monkeypatch):
    """``policy: auto`` runs dcr where its cost says (on the layout when the cluster pays, in memory
    otherwise, with no layout), the same rows either way."""
    cluster = _inputs(tmp_path)
    memory = _run(tmp_path, cluster, "memory")
    for name, cost, layouts in (("cluster_pays", CLUSTER_PAYS, 1), ("memory_pays", MEMORY_PAYS, 0)):
        monkeypatch.setitem(COSTS, "dcr", cost)
        auto = _run(tmp_path, cluster, "auto", name)
        pd.testing.assert_frame_equal(
            auto.results[COLS].reset_index(drop=True), memory.results[COLS].reset_index(drop=True)
        )
        assert len(auto.manifest["layouts"]) == layouts, name
