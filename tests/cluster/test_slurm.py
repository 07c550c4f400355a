"""Workers as real Slurm jobs (dask-jobqueue) on the single-node Slurm of ``.ci/slurm-setup.sh``.

The configs are ``cluster_configs/slurm.yaml`` adapted as a user would (partition, interface
``lo``, this interpreter, small jobs); the results must equal an in-process LocalCluster run and
every job must be gone from the queue afterwards.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import yaml
from clusterkit import CONFIGS, TASK, assert_same_results, cli_command, manifest, process_ancestors, write_yaml

pytestmark = pytest.mark.slow

SETUP = "run .ci/slurm-setup.sh (as root) to install and start a single-node Slurm"


def _slurm(*args: str) -> str:
    return subprocess.run(list(args), capture_output=True, text=True, timeout=30, check=True).stdout


@pytest.fixture(scope="module")
def partition() -> str:
    """The default partition of a working Slurm with an idle node (skips when there is none)."""
    pytest.importorskip("dask_jobqueue", reason="dask-jobqueue is not installed (sdc-pipeline[cluster])")
    if shutil.which("sbatch") is None or shutil.which("squeue") is None:
        pytest.skip(f"Slurm commands are not installed; {SETUP}")
    try:
        rows = _slurm("sinfo", "-h", "-o", "%P %T").split()
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as e:
        pytest.skip(f"Slurm is not running ({e}); {SETUP}")
    pairs = list(zip(rows[::2], rows[1::2], strict=True))
    usable = [p.rstrip("*") for p, state in pairs if p.endswith("*") and state in ("idle", "mixed")]
    if not usable:
        pytest.skip(f"no idle node in the default Slurm partition ({pairs}); {SETUP}")
    return usable[0]


def site_config(tmp_path: Path, partition: str, **changes) -> dict:
    """cluster_configs/slurm.yaml adapted to this machine, as docs/clusters.md tells a user to."""
    cfg = yaml.safe_load((CONFIGS / "slurm.yaml").read_text(encoding="utf-8"))
    cfg.update(
        queue=partition,
        interface="lo",  # the single node talks to itself on loopback
        python=sys.executable,  # the workers run in this environment (same file system)
        cores=1,
        memory="1GiB",
        walltime="00:15:00",
        job_name=f"sdc-{uuid.uuid4().hex[:8]}",  # tell this test's jobs from any other
        log_directory=str(tmp_path / "slurm-logs"),
        timeout_s=180,
    )
    cfg.update(changes)
    return cfg


def queued(job_name: str) -> dict[str, str]:
    """job id -> state of the queued/running jobs with this name."""
    out = _slurm("squeue", "-h", "-n", job_name, "-o", "%i %T")
    return dict(line.split() for line in out.splitlines() if line.strip())


def final_state(job_id: str) -> str:
    out = _slurm("scontrol", "-o", "show", "job", job_id)
    return next(f.split("=", 1)[1] for f in out.split() if f.startswith("JobState="))


def wait_until_dequeued(job_name: str, timeout: float = 60) -> dict[str, str]:
    deadline = time.monotonic() + timeout
    while (left := queued(job_name)) and time.monotonic() < deadline:
        time.sleep(0.5)
    return left


def test_workers_are_slurm_jobs_and_are_cancelled_on_close(tmp_path, partition):
    from pipeline.cluster import connect

    cfg = site_config(tmp_path, partition, adaptive=None, jobs=2, wait_for_workers=2)
    with connect(cfg) as client:
        where = client.run(lambda: (os.environ.get("SLURM_JOB_ID"), os.environ.get("SLURM_JOB_PARTITION"), os.getpid()))
        jobs = queued(cfg["job_name"])
        job_ids = {job for job, _, _ in where.values()}
        assert len(where) == 2 and len(job_ids) == 2, where
        assert all(part == partition for _, part, _ in where.values())
        assert {jobs[j] for j in job_ids} == {"RUNNING"}
        # each worker process descends from Slurm's step daemon, not from this process
        assert all("slurmstepd" in process_ancestors(pid) for _, _, pid in where.values())
    assert wait_until_dequeued(cfg["job_name"]) == {}
    assert {final_state(j) for j in job_ids} <= {"CANCELLED", "COMPLETED"}


def test_task_on_slurm_equals_local_and_cleans_up(tmp_path, partition, reference_results):
    cfg = write_yaml(tmp_path / "slurm.yaml", site_config(tmp_path, partition))
    name = yaml.safe_load(cfg.read_text())["job_name"]
    out = tmp_path / "run"
    seen: dict[str, str] = {}
    with (tmp_path / "cli.log").open("w+") as log:
        proc = subprocess.Popen(cli_command(TASK, out, cfg), stdout=log, stderr=subprocess.STDOUT)
        while proc.poll() is None:
            for job, state in queued(name).items():
                if seen.get(job) != "RUNNING":
                    seen[job] = state
            time.sleep(0.5)
    assert proc.returncode == 0, (tmp_path / "cli.log").read_text()
    assert "RUNNING" in seen.values(), f"no worker job was seen running: {seen}"
    assert_same_results(out, reference_results)
    assert manifest(out)["cluster"]["type"] == "slurm"
    assert wait_until_dequeued(name) == {}
    assert {final_state(j) for j in seen} <= {"CANCELLED", "COMPLETED"}


def test_unusable_partition_is_a_clear_error(tmp_path, partition):
    cfg = write_yaml(tmp_path / "slurm.yaml", site_config(tmp_path, partition, queue="no-such-partition", timeout_s=15))
    proc = subprocess.run(cli_command(TASK, tmp_path / "run", cfg), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2
    assert "error: slurm cluster: 1 worker(s) did not connect within 15 s" in proc.stderr
    assert not (tmp_path / "run" / "results.parquet").exists()


def test_slurm_cluster_accepts_only_this_runs_credentials(tmp_path, partition):
    """TLS by default: the scheduler refuses another run's credentials and plain TCP; the workers'
    copy of the key (in shared_temp_directory) is readable by the owner only and removed at the end."""
    from distributed import Client
    from distributed.security import Security

    from pipeline.cluster import connect

    credentials = tmp_path / "credentials"
    credentials.mkdir()
    cfg = site_config(
        tmp_path, partition, adaptive=None, jobs=1, wait_for_workers=1, shared_temp_directory=str(credentials)
    )
    with connect(cfg) as client:
        address = client.scheduler.address
        assert address.startswith("tls://")
        assert client.submit(sum, [1, 2]).result() == 3
        copies = [p for p in credentials.rglob("*") if p.is_file()]
        assert copies and {p.stat().st_mode & 0o777 for p in copies} == {0o600}
        with pytest.raises((OSError, TimeoutError)):
            Client(address, security=Security.temporary(), timeout=5)
        with pytest.raises((OSError, TimeoutError)):
            Client(address.replace("tls://", "tcp://"), timeout=5)
    assert wait_until_dequeued(cfg["job_name"]) == {}
    assert [p for p in credentials.rglob("*") if p.is_file()] == []
