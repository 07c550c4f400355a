from pathlib import Path

import pytest

from pipeline.cluster import connect, kubernetes_spec, load_cluster_config, local_size, slurm_cluster_kwargs
from pipeline.errors import TaskError

CONFIGS = Path(__file__).resolve().parents[2] / "cluster_configs"


@pytest.mark.parametrize("name", ["local", "slurm", "kubernetes", "scheduler"])
def test_shipped_configs_are_valid(name):
    assert load_cluster_config(CONFIGS / f"{name}.yaml").type == name


def test_local_auto_size_uses_machine():
    n, mem = local_size(load_cluster_config(None))
    assert n >= 1 and mem.endswith("MiB")


def test_slurm_job_script_has_site_settings():
    pytest.importorskip("dask_jobqueue")
    from dask_jobqueue.slurm import SLURMJob

    cfg = load_cluster_config(
        {
            **{"type": "slurm"},
            "queue": "compute",
            "account": "stats",
            "memory": "8GiB",
            "walltime": "02:00:00",
            "job_extra_directives": ["--qos=normal"],
        }
    )
    kw = slurm_cluster_kwargs(cfg)
    script = SLURMJob(
        scheduler="tcp://127.0.0.1:8786", name="w", **{k: v for k, v in kw.items() if k != "scheduler_options"}
    ).job_script()
    for line in ("#SBATCH -p compute", "#SBATCH -A stats", "#SBATCH -t 02:00:00", "#SBATCH --qos=normal"):
        assert line in script


def test_kubernetes_spec_is_a_daskcluster():
    pytest.importorskip("dask_kubernetes")
    spec = kubernetes_spec(load_cluster_config(CONFIGS / "kubernetes.yaml"))
    assert spec["kind"] == "DaskCluster" and spec["spec"]["worker"]["replicas"] == 2
    container = spec["spec"]["worker"]["spec"]["containers"][0]
    assert container["resources"]["limits"]["memory"] == "4Gi"


@pytest.mark.parametrize(
    "cfg, message",
    [
        ({"type": "local", "workers": 2}, "workers: unknown setting; did you mean 'n_workers'"),
        ({"type": "slurm", "cores": 0}, "cores: Input should be greater than or equal to 1"),
        ({"type": "scheduler"}, "address: Field required"),
        ({"type": "mesos"}, "unknown cluster type 'mesos'"),
        ({"n_workers": 2}, "expected a mapping with a 'type'"),
    ],
)
def test_invalid_configs(cfg, message):
    with pytest.raises(TaskError, match=message):
        load_cluster_config(cfg)


def test_unreachable_scheduler_is_a_clear_error():
    with (
        pytest.raises(TaskError, match=r"cannot reach the Dask scheduler at tcp://127\.0\.0\.1:1"),
        connect({"type": "scheduler", "address": "tcp://127.0.0.1:1", "timeout_s": 1}),
    ):
        pass
