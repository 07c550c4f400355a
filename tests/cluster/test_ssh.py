"""Dask's SSHCluster against a real sshd on localhost (``.ci/ssh-setup.sh``, a throw-away key)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from clusterkit import TASK, assert_same_results, manifest, process_ancestors, run_cli, wait_until_gone, write_yaml

pytestmark = pytest.mark.slow

SSH_DIR = Path(os.environ.get("SDC_SSH_DIR", "/var/lib/sdc-ci-ssh"))
PORT = int(os.environ.get("SDC_SSH_PORT", "2222"))
KEY = SSH_DIR / "id_ed25519"
SETUP = "run .ci/ssh-setup.sh (as root) to start an sshd on 127.0.0.1:2222 with a throw-away key"


@pytest.fixture(scope="module")
def ssh_config() -> dict:
    """An ``ssh`` cluster config for two workers on localhost (skips when sshd is not set up)."""
    pytest.importorskip("asyncssh", reason="asyncssh is not installed (needed by distributed.SSHCluster)")
    if not KEY.exists():
        pytest.skip(f"no throw-away key at {KEY}; {SETUP}")
    probe = subprocess.run(
        ["ssh", "-q", "-i", str(KEY), "-p", str(PORT), "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no",
         "-o", "UserKnownHostsFile=/dev/null", "-o", "ConnectTimeout=5", "127.0.0.1", "true"],
        capture_output=True, timeout=30, check=False,
    )  # fmt: skip
    if probe.returncode != 0:
        pytest.skip(f"cannot log in to 127.0.0.1:{PORT} with {KEY}; {SETUP}")
    return {
        "type": "ssh",
        # the first host runs the scheduler, every further host runs worker_options["n_workers"] workers
        "hosts": ["127.0.0.1", "127.0.0.1"],
        # a throw-away host key: host-key checking off (do not do this on a real network)
        "connect_options": {"port": PORT, "client_keys": [str(KEY)], "known_hosts": None},
        "worker_options": {"n_workers": 2, "nthreads": 1},
        "scheduler_options": {"port": 0, "dashboard_address": ":0"},
        "remote_python": sys.executable,
    }


def test_workers_are_started_over_ssh_and_stopped_on_close(ssh_config):
    from pipeline.cluster import connect

    with connect(ssh_config) as client:
        client.wait_for_workers(2, timeout=60)
        pids = list(client.run(os.getpid).values())
        assert len(pids) == 2
        # started by the sshd (a login session), not by this process
        assert all("sshd" in process_ancestors(pid) for pid in pids)
    assert wait_until_gone(pids) == []


def test_task_over_ssh_equals_local(tmp_path, ssh_config, reference_results):
    cfg = write_yaml(tmp_path / "ssh.yaml", ssh_config)
    out = tmp_path / "run"
    proc = run_cli(TASK, out, cfg)
    assert proc.returncode == 0, proc.stderr
    assert_same_results(out, reference_results)
    assert manifest(out)["cluster"]["type"] == "ssh"


def test_refused_login_is_a_clear_error(tmp_path, ssh_config):
    from pipeline.cluster import connect
    from pipeline.errors import TaskError

    other_key = tmp_path / "not_authorised"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other_key)], check=True)
    cfg = {**ssh_config, "connect_options": {**ssh_config["connect_options"], "client_keys": [str(other_key)]}}
    refused = r"ssh cluster: cannot start Dask on 127\.0\.0\.1, 127\.0\.0\.1: \w+"
    with pytest.raises(TaskError, match=refused), connect(cfg):
        pass


def _credential_folders() -> set[Path]:
    from pipeline.cluster_tls import REMOTE_ROOT

    return set(Path(REMOTE_ROOT).glob("sdc-pipeline-tls-*"))


def test_ssh_cluster_accepts_only_this_runs_credentials(ssh_config):
    """TLS by default: the scheduler refuses a client with other credentials and plain TCP; the
    remote copy of the run's key is private, never on a command line, and removed at the end."""
    from distributed import Client
    from distributed.security import Security

    from pipeline.cluster import connect

    before = _credential_folders()
    with connect(ssh_config) as client:
        client.wait_for_workers(2, timeout=60)
        address = client.scheduler.address
        assert address.startswith("tls://")
        assert client.submit(sum, [1, 2]).result() == 3
        (folder,) = _credential_folders() - before
        assert folder.stat().st_mode & 0o777 == 0o700
        assert sorted(p.name for p in folder.iterdir()) == ["ca.pem", "credentials.pem"]
        assert {p.stat().st_mode & 0o777 for p in folder.iterdir()} == {0o600}
        pids = list(client.run(os.getpid).values())
        spawned = [*pids, *client.run(os.getppid).values(), client.run_on_scheduler(os.getpid)]
        for pid in spawned:  # workers, their nannies' dask_spec process, the scheduler
            assert b"PRIVATE KEY" not in Path(f"/proc/{pid}/cmdline").read_bytes()
        # valid TLS with another run's certificate: the handshake is refused
        with pytest.raises((OSError, TimeoutError)):
            Client(address, security=Security.temporary(), timeout=5)
        # no TLS at all
        with pytest.raises((OSError, TimeoutError)):
            Client(address.replace("tls://", "tcp://"), timeout=5)
    assert _credential_folders() - before == set()
    assert wait_until_gone(pids) == []


def test_insecure_ssh_cluster_is_plain_tcp(ssh_config):
    from pipeline.cluster import connect

    before = _credential_folders()
    with connect({**ssh_config, "insecure": True}) as client:
        client.wait_for_workers(2, timeout=60)
        assert client.scheduler.address.startswith("tcp://")
        assert _credential_folders() == before
