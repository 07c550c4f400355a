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


# ---- security (issue 25) ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "cfg, message",
    [
        (
            {"type": "scheduler", "address": "tcp://10.1.2.3:8786"},
            "tcp:// to 10.1.2.3 sends the data unencrypted .* or set 'insecure: true'",
        ),
        ({"type": "scheduler", "address": "tcp://hpc-login:8786"}, "tcp:// to hpc-login sends the data unencrypted"),
        ({"type": "scheduler", "address": "tls://10.1.2.3:8786"}, "a tls:// scheduler needs a 'tls' section"),
    ],
)
def test_unencrypted_remote_schedulers_are_refused(cfg, message):
    with pytest.raises(TaskError, match=message):
        load_cluster_config(cfg)


@pytest.mark.parametrize("address", ["tcp://127.0.0.1:8786", "tcp://localhost:8786", "tcp://[::1]:8786"])
def test_loopback_and_declared_insecure_schedulers_are_accepted(address):
    assert load_cluster_config({"type": "scheduler", "address": address}).address == address
    remote = {"type": "scheduler", "address": "tcp://10.1.2.3:8786", "insecure": True}
    assert load_cluster_config(remote).insecure


def test_described_configs_hold_no_secret():
    """What a manifest and the history store of a cluster config: planted secrets are redacted."""
    import json

    from pipeline.cluster import REDACTED, describe

    ssh = load_cluster_config(
        {
            "type": "ssh",
            "hosts": ["a", "b"],
            "connect_options": {"username": "ana", "password": "PLANTED-pw", "passphrase": "PLANTED-pp"},
            "worker_options": {"nthreads": 2, "api_token": "PLANTED-tok"},
        }
    )
    k8s = load_cluster_config({"type": "kubernetes", "env": {"DB_URL": "PLANTED-env", "MODE": "x"}})
    for cfg in (ssh, k8s):
        text = json.dumps(describe(cfg))
        assert "PLANTED" not in text
    assert describe(ssh)["connect_options"] == {"username": "ana", "password": REDACTED, "passphrase": REDACTED}
    assert describe(ssh)["worker_options"] == {"nthreads": 2, "api_token": REDACTED}
    assert describe(k8s)["env"] == {"DB_URL": REDACTED, "MODE": REDACTED}


def test_local_cluster_refuses_clients_without_the_runs_credentials():
    """Another process that finds the scheduler's port can neither connect in the clear nor with
    credentials of its own; the dashboard is off and nothing listens beyond loopback."""
    import psutil
    from distributed import Client
    from distributed.security import Security

    with connect({"type": "local", "n_workers": 1}) as client:
        address = client.scheduler.address
        assert address.startswith("tls://127.0.0.1:")
        assert client.submit(sum, [1, 2]).result() == 3
        for security in (None, Security.temporary()):
            with pytest.raises((OSError, TypeError)):
                Client(address.replace("tls://", "tcp://") if security is None else address, security=security,
                       timeout=2)  # fmt: skip
        listening = [c.laddr.ip for c in psutil.Process().net_connections(kind="tcp") if c.status == "LISTEN"]
        assert listening and set(listening) <= {"127.0.0.1"}


def test_worker_log_is_private_and_refuses_a_planted_symlink(tmp_path, monkeypatch):
    import os
    import stat

    from pipeline.worker_log import open_private_log, worker_log_path

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    log = worker_log_path()
    assert log == tmp_path / "state" / "sdc-pipeline" / "workers.log"
    with open_private_log(log) as f:
        f.write("x\n")
    assert stat.S_IMODE(log.stat().st_mode) == 0o600 and stat.S_IMODE(log.parent.stat().st_mode) == 0o700
    log.unlink()
    target = tmp_path / "elsewhere.txt"
    target.write_text("theirs")
    os.symlink(target, log)
    with pytest.raises(OSError):
        open_private_log(log)
    assert target.read_text() == "theirs"


def test_described_tls_section_keeps_the_certificate_file_names():
    from pipeline.cluster import describe

    cfg = load_cluster_config(CONFIGS / "scheduler.yaml")
    assert describe(cfg)["tls"] == {"ca_file": "ca.pem", "cert": "client.pem", "key": "client-key.pem"}


def test_local_workers_start_with_the_mmap_threshold_and_a_configured_one_is_kept():
    """Local worker processes get glibc's mmap threshold before they start (Dask's trim threshold
    alone would make every array over 128 KiB a fresh mmap); a user's own setting wins."""
    import os

    import dask

    from pipeline.cluster import WORKER_MMAP_THRESHOLD, worker_malloc_config

    def environ() -> tuple[str | None, str | None]:
        return os.environ.get("MALLOC_MMAP_THRESHOLD_"), os.environ.get("MALLOC_TRIM_THRESHOLD_")

    with connect({"type": "local", "n_workers": 1}) as client:
        assert list(client.run(environ).values()) == [(str(WORKER_MMAP_THRESHOLD), "65536")]
    with dask.config.set({"distributed.nanny.pre-spawn-environ.MALLOC_MMAP_THRESHOLD_": 4096}):
        assert worker_malloc_config() == {}
