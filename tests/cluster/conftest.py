"""Fixtures of the real-cluster tests (helpers in clusterkit.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from clusterkit import REFERENCE_CLUSTER, TASK, DaskProcesses, comparable


@pytest.fixture(scope="session")
def reference_results(tmp_path_factory: pytest.TempPathFactory) -> pd.DataFrame:
    """The cluster task's results on an in-process LocalCluster."""
    from pipeline.runner import run_task
    from pipeline.tasks import load_task

    out = tmp_path_factory.mktemp("reference")
    outcome = run_task(load_task(TASK), cluster=REFERENCE_CLUSTER, out_dir=out, progress=False, report=False)
    return comparable(outcome.results)


@pytest.fixture
def dask_processes(tmp_path: Path) -> Iterator[DaskProcesses]:
    folder = tmp_path / "dask"
    folder.mkdir()
    procs = DaskProcesses(folder)
    try:
        yield procs
    finally:
        procs.close()
