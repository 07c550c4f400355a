"""Runs survive lost workers; a lost scheduler fails clearly, writes nothing, and the re-run resumes.

The work is a sweep (key_blocks at three ``n_blocks``, one unit at a time) over SD2011 scaled to
a million records per data set, so each unit's key-block shuffle takes seconds.  Workers and
the scheduler are real processes (``dask scheduler``/``dask worker``) that the tests kill with
SIGKILL in the middle of a unit's shuffle.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pandas as pd
import pytest
from clusterkit import (
    REFERENCE_CLUSTER,
    DaskProcesses,
    assert_same_results,
    cli_command,
    comparable,
    manifest,
    write_yaml,
)

from pipeline.datasets.scaled import write_scaled_sd2011

pytestmark = pytest.mark.slow

ROWS = 1_000_000
SWEEP = {
    "name": "fault_sweep",
    "seed": 3,
    "concurrency": 1,
    # a million rows is at the executor's in-memory threshold: force the key-block path the test kills
    "execution": {"policy": "blocks"},
    "datasets": [
        {
            "name": "big",
            "original": {"path": "original", "schema": "sd2011.schema.json"},
            "synthetic": [{"name": "cart", "paths": ["syn1", "syn2"], "schema": "sd2011.schema.json"}],
        }
    ],
    "measures": [
        {"type": "key_blocks", "params": {"keys": ["sex", "age", "edu", "marital", "region"]}},
    ],
}
N_BLOCKS = [8, 16, 32]


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sweep task file beside its scaled data."""
    folder = write_scaled_sd2011(tmp_path_factory.mktemp("scaled"), ROWS)
    spec = {**SWEEP, "measures": [{**SWEEP["measures"][0], "grid": {"n_blocks": N_BLOCKS}}]}
    return write_yaml(folder / "sweep.yaml", spec)


@pytest.fixture(scope="module")
def undisturbed(sweep: Path, tmp_path_factory: pytest.TempPathFactory) -> pd.DataFrame:
    from pipeline.runner import run_task
    from pipeline.tasks import load_task

    out = tmp_path_factory.mktemp("undisturbed")
    return comparable(run_task(load_task(sweep), cluster=REFERENCE_CLUSTER, out_dir=out, progress=False).results)


def finished_units(out: Path) -> int:
    """Units whose result is in the run folder's cache: a unit's rows and summary are named by its
    fingerprint, the summary written last (the folder's owner record and its inputs-checked record
    are JSON files of no unit)."""
    return len([p for p in (out / ".units").glob("*.json") if p.with_suffix(".parquet").exists()])


class Saboteur(threading.Thread):
    """Kills a worker (or the scheduler) once ``after_units`` units are done and a shuffle is running."""

    def __init__(self, address: str, out: Path, after_units: int, kill) -> None:
        super().__init__(daemon=True)
        self.address, self.out, self.after_units, self.kill = address, out, after_units, kill
        self.victim: str | None = None
        self.results_existed = False
        self.error: BaseException | None = None

    def run(self) -> None:
        from distributed import Client

        try:
            with Client(self.address, set_as_default=False, timeout=30) as mon:
                while self.victim is None:
                    busy = mon.run_on_scheduler(
                        lambda dask_scheduler: sorted(
                            ts.processing_on.address
                            for ts in dask_scheduler.tasks.values()
                            if ts.state == "processing" and "shuffle" in str(ts.key)
                        )
                    )
                    if busy and finished_units(self.out) >= self.after_units:
                        self.results_existed = (self.out / "results.parquet").exists()
                        pids = mon.run(os.getpid, workers=[busy[0]])
                        self.victim = busy[0]
                        self.kill(pids[busy[0]])
                    time.sleep(0.05)
        except BaseException as e:  # reported by the test
            self.error = e


def scheduler_yaml(folder: Path, address: str, timeout_s: float = 30) -> Path:
    return write_yaml(folder / "scheduler.yaml", {"type": "scheduler", "address": address, "timeout_s": timeout_s})


@pytest.mark.parametrize("nanny", [True, False], ids=["restarted-by-nanny", "gone-for-good"])
def test_run_survives_a_killed_worker(nanny, sweep, undisturbed, dask_processes, tmp_path):
    address = dask_processes.start_scheduler()
    dask_processes.start_workers(address, 2, nanny=nanny)
    cfg = scheduler_yaml(tmp_path, address)
    out = tmp_path / "run"
    saboteur = Saboteur(address, out, after_units=1, kill=lambda pid: os.kill(pid, signal.SIGKILL))
    saboteur.start()
    proc = subprocess.run(cli_command(sweep, out, cfg), capture_output=True, text=True, timeout=900)
    saboteur.join(5)
    assert saboteur.error is None, saboteur.error
    assert saboteur.victim is not None, "no worker was killed: the run ended before a unit's shuffle was seen"
    assert not saboteur.results_existed
    assert proc.returncode == 0, proc.stderr
    assert_same_results(out, undisturbed)
    assert not any(u["cached"] for u in manifest(out)["units"].values())
    from distributed import Client

    with Client(address, set_as_default=False) as mon:
        workers = set(mon.scheduler_info()["workers"])
    assert saboteur.victim not in workers
    assert len(workers) == (2 if nanny else 1)


def test_lost_scheduler_fails_clearly_and_the_rerun_resumes(sweep, undisturbed, tmp_path):
    first = DaskProcesses(tmp_path / "first")
    (tmp_path / "first").mkdir()
    out = tmp_path / "run"
    try:
        address = first.start_scheduler()
        first.start_workers(address, 2)
        saboteur = Saboteur(address, out, after_units=1, kill=lambda _pid: first.kill_scheduler())
        saboteur.start()
        cfg = scheduler_yaml(tmp_path, address, timeout_s=5)
        proc = subprocess.run(cli_command(sweep, out, cfg), capture_output=True, text=True, timeout=900)
        saboteur.join(5)
    finally:
        first.close()
    assert saboteur.victim is not None, "the scheduler was not killed: the run ended before a unit's shuffle"
    assert proc.returncode == 2, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith(f"error: lost the connection to the Dask scheduler at {address} (scheduler cluster)")
    assert "run the same command again to resume" in last
    # nothing of the failed run but the cache of finished units
    assert sorted(p.name for p in out.iterdir()) == [".units"]
    cached = finished_units(out)
    assert 1 <= cached < len(N_BLOCKS)

    second = DaskProcesses(tmp_path / "second")
    (tmp_path / "second").mkdir()
    try:
        address = second.start_scheduler()
        second.start_workers(address, 2)
        proc = subprocess.run(
            cli_command(sweep, out, scheduler_yaml(tmp_path, address)), capture_output=True, text=True, timeout=900
        )
    finally:
        second.close()
    assert proc.returncode == 0, proc.stderr
    assert_same_results(out, undisturbed)
    assert sum(u["cached"] for u in manifest(out)["units"].values()) == cached
