"""Every shipped cluster config loads, and Slurm settings reach the job script (no scheduler needed)."""

from __future__ import annotations

import pytest
from clusterkit import CONFIGS

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
