"""Every shipped cluster config loads, and Slurm settings reach the job script (no scheduler needed)."""

from __future__ import annotations

import contextlib
from types import SimpleNamespace

import pytest
from clusterkit import CONFIGS

import pipeline.cluster as cluster_module
from pipeline.cluster import connect, load_cluster_config, slurm_cluster_kwargs
from pipeline.errors import TaskError


@pytest.mark.parametrize("path", sorted(CONFIGS.glob("*.yaml")), ids=lambda p: p.stem)
def test_shipped_config_loads(path):
    assert load_cluster_config(path).type == path.stem


def test_relative_certificates_are_relative_to_the_config_file():
    cfg = load_cluster_config(CONFIGS / "scheduler.yaml")
    assert cfg.tls.ca_file == str(CONFIGS / "certs" / "ca.pem")


def test_slurm_job_script_runs_the_configured_worker(tmp_path):
    pytest.importorskip("dask_jobqueue")
    from dask_jobqueue.slurm import SLURMJob

    settings = {"job_name": "sdc-eval", "python": "/opt/env/bin/python", "interface": "lo", "cores": 4}
    settings.update(processes=2, memory="8GiB", job_script_prologue=["module load python"])
    cfg = load_cluster_config({"type": "slurm", **settings})
    kw = {k: v for k, v in slurm_cluster_kwargs(cfg).items() if k != "scheduler_options"}
    script = SLURMJob(scheduler="tcp://127.0.0.1:8786", **kw).job_script()
    assert "#SBATCH -J sdc-eval" in script
    assert "#SBATCH --cpus-per-task=4" in script
    assert "module load python" in script
    assert "/opt/env/bin/python -m distributed.cli.dask_worker tcp://127.0.0.1:8786" in script
    for option in ("--nworkers 2", "--nthreads 2", "--memory-limit 4.00GiB", "--interface lo"):
        assert option in script


def test_slurm_without_sbatch_is_a_clear_error(monkeypatch, tmp_path):
    pytest.importorskip("dask_jobqueue")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(TaskError, match="'sbatch' is not on PATH"), connect({"type": "slurm"}):
        pass


class _StuckCluster:
    """A cluster whose close fails the way SpecCluster's does with a job still starting."""

    def __init__(self):
        self.workers = {"sdc-0": SimpleNamespace(job_id="4711"), "sdc-1": SimpleNamespace(job_id=None)}

    def close(self):
        raise AssertionError("Status.created")


def test_a_failing_cluster_close_does_not_replace_the_error(caplog, monkeypatch):
    calls = []
    monkeypatch.setattr(cluster_module.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(cluster_module.subprocess, "run", lambda cmd, **kw: calls.append(cmd))
    message = "slurm cluster: 1 worker(s) did not connect within 15 s"
    with pytest.raises(TaskError, match="did not connect within 15 s"), contextlib.ExitStack() as stack:
        stack.callback(cluster_module.close_cluster, _StuckCluster(), "slurm", cancel=cluster_module._scancel)
        raise TaskError(message)
    assert "slurm cluster: closing it failed (AssertionError: Status.created)" in caplog.text
    assert calls == [["scancel", "4711"]]  # the jobs are still released, only those with an id
