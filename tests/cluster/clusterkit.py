"""Helpers for the real-cluster tests: CLI runs, result comparison, Dask processes started by hand, scaled data."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "cluster_configs"
#: a small task touching several measures and a grid; every cluster test runs it and compares
TASK = Path(__file__).with_name("cluster_task.yaml")
#: an in-process LocalCluster: the reference every other cluster must reproduce exactly
REFERENCE_CLUSTER = {"type": "local", "n_workers": 2, "processes": False}


def cli_command(task: Path, out: Path, cluster: Path) -> list[str]:
    """The ``sdc-pipeline run`` command line (for tests that watch the run while it goes)."""
    return [
        sys.executable,
        "-m",
        "pipeline.cli",
        "run",
        str(task),
        "--out",
        str(out),
        "--cluster",
        str(cluster),
        "--no-report",
    ]


def run_cli(task: Path, out: Path, cluster: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    """``sdc-pipeline run TASK --out OUT --cluster CLUSTER --no-report`` in a fresh process."""
    return subprocess.run(cli_command(task, out, cluster), capture_output=True, text=True, timeout=timeout, cwd=ROOT)


def comparable(results: pd.DataFrame) -> pd.DataFrame:
    """A run's results without what differs between runs (the run id)."""
    return results.drop(columns="run_id").reset_index(drop=True)


def assert_same_results(out_dir: Path, reference: pd.DataFrame) -> None:
    """The run in ``out_dir`` produced exactly the reference table (same rows, same values)."""
    got = comparable(pd.read_parquet(out_dir / "results.parquet"))
    pd.testing.assert_frame_equal(got, reference, check_exact=True)


def manifest(out_dir: Path) -> dict:
    return json.loads((out_dir / "manifest.json").read_text(encoding="utf-8"))


def write_yaml(path: Path, data: dict) -> Path:
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


class DaskProcesses:
    """``dask scheduler`` and ``dask worker`` processes started (and stopped) by a test."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.procs: list[subprocess.Popen] = []
        self.scheduler: subprocess.Popen | None = None

    def _start(self, args: list[str], name: str) -> subprocess.Popen:
        log = (self.folder / f"{name}-{len(self.procs)}.log").open("w")
        proc = subprocess.Popen([sys.executable, "-m", *args], stdout=log, stderr=subprocess.STDOUT, cwd=self.folder)
        self.procs.append(proc)
        return proc

    def start_scheduler(self, extra: list[str] = (), timeout: float = 60) -> str:
        """Start a scheduler on loopback (a free port); return its address."""
        sched_file = self.folder / f"scheduler-{len(self.procs)}.json"
        args = ["distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard"]
        self.scheduler = self._start([*args, "--scheduler-file", str(sched_file), *extra], "scheduler")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if sched_file.exists() and sched_file.stat().st_size:
                return json.loads(sched_file.read_text())["address"]
            if self.scheduler.poll() is not None:
                break
            time.sleep(0.1)
        raise RuntimeError(f"dask scheduler did not start; see {self.folder}/scheduler-*.log")

    def start_workers(self, address: str, n: int, nanny: bool = True, extra: list[str] = ()) -> None:
        """``n`` single-threaded workers: one ``dask worker --nworkers n`` (nanny) or n separate processes."""
        base = ["distributed.cli.dask_worker", address, "--nthreads", "1", "--no-dashboard", *extra]
        if nanny:
            self._start([*base, "--nworkers", str(n)], "workers")
        else:
            for _ in range(n):
                self._start([*base, "--no-nanny"], "worker")

    def kill_scheduler(self) -> None:
        assert self.scheduler is not None
        self.scheduler.send_signal(signal.SIGKILL)
        self.scheduler.wait(30)

    def close(self) -> None:
        """Stop what was started: workers first (they shut down cleanly), then the scheduler."""
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)


def process_ancestors(pid: int) -> list[str]:
    """Names of the parent processes of ``pid`` (nearest first)."""
    import psutil

    names = []
    proc = psutil.Process(pid).parent()
    while proc is not None:
        names.append(proc.name())
        proc = proc.parent()
    return names


def wait_until_gone(pids: list[int], timeout: float = 60) -> list[int]:
    """Wait for processes to exit; return those still running after ``timeout``."""
    import psutil

    deadline = time.monotonic() + timeout
    alive = list(pids)
    while alive and time.monotonic() < deadline:
        alive = [p for p in alive if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
        time.sleep(0.2)
    return alive
