"""An existing ``dask scheduler`` + ``dask worker`` on loopback, reached over mutual TLS.

The connection and error checks are quick; running the whole cluster task is marked slow.

Certificates (a throw-away CA, and a node and a client certificate it signs) are made with the
openssl command; the config is ``cluster_configs/scheduler.yaml`` with its address changed and
its relative ``certs/...`` paths kept (they are relative to the config file).
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from clusterkit import CONFIGS, TASK, DaskProcesses, comparable, write_yaml

NEW_KEY = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
EXT = "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n"


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def make_ca(folder: Path, name: str) -> None:
    """A self-signed CA ``<name>.pem`` / ``<name>-key.pem`` (EC P-256, valid one day)."""
    files = ["-keyout", f"{name}-key.pem", "-out", f"{name}.pem"]
    _openssl("req", "-x509", *NEW_KEY, *files, "-days", "1", "-subj", f"/CN={name}", cwd=folder)


def make_cert(folder: Path, name: str, ca: str) -> None:
    """``<name>.pem`` / ``<name>-key.pem`` signed by CA ``ca``, for 127.0.0.1 (server and client use)."""
    (folder / "ext.cnf").write_text(EXT)
    _openssl("req", *NEW_KEY, "-keyout", f"{name}-key.pem", "-out", f"{name}.csr", "-subj", f"/CN={name}", cwd=folder)
    signer = ["-CA", f"{ca}.pem", "-CAkey", f"{ca}-key.pem", "-CAcreateserial"]
    _openssl(
        "x509",
        "-req",
        "-in",
        f"{name}.csr",
        *signer,
        "-out",
        f"{name}.pem",
        "-days",
        "1",
        "-extfile",
        "ext.cnf",
        cwd=folder,
    )


@pytest.fixture(scope="module")
def tls_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """(tls:// address, folder with certs/) of a scheduler and two workers that require TLS."""
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is needed to make test certificates")
    base = tmp_path_factory.mktemp("tls")
    certs = base / "certs"
    certs.mkdir()
    make_ca(certs, "ca")
    make_cert(certs, "node", "ca")
    make_cert(certs, "client", "ca")
    make_ca(certs, "other-ca")
    make_cert(certs, "stranger", "other-ca")
    node = [
        f"--tls-ca-file={certs / 'ca.pem'}",
        f"--tls-cert={certs / 'node.pem'}",
        f"--tls-key={certs / 'node-key.pem'}",
    ]
    procs = DaskProcesses(base)
    try:
        address = procs.start_scheduler(["--protocol", "tls", *node])
        procs.start_workers(address, 2, extra=node)
        yield address, base
    finally:
        procs.close()


def scheduler_config(folder: Path, address: str, **tls: str) -> Path:
    """cluster_configs/scheduler.yaml with this address (and optionally other certificates)."""
    cfg = yaml.safe_load((CONFIGS / "scheduler.yaml").read_text(encoding="utf-8"))
    assert cfg["tls"] == {"ca_file": "certs/ca.pem", "cert": "certs/client.pem", "key": "certs/client-key.pem"}
    cfg.update(address=address, timeout_s=20)
    cfg["tls"].update(tls)
    return write_yaml(folder / f"scheduler-{len(tls)}.yaml", cfg)


def test_work_runs_over_tls(tls_cluster):
    import dask.array as da

    from pipeline.cluster import connect

    address, folder = tls_cluster
    with connect(scheduler_config(folder, address)) as client:
        client.wait_for_workers(2, timeout=60)
        assert client.scheduler.address == address
        assert all(w.startswith("tls://127.0.0.1:") for w in client.scheduler_info()["workers"])
        assert int(da.arange(100_000, chunks=10_000).sum().compute()) == 4_999_950_000


@pytest.mark.slow
def test_task_on_tls_scheduler_equals_local(tls_cluster, reference_results, tmp_path):
    from pipeline.runner import run_task
    from pipeline.tasks import load_task

    address, folder = tls_cluster
    config = scheduler_config(folder, address)
    outcome = run_task(load_task(TASK), cluster=config, out_dir=tmp_path / "run", progress=False, report=False)
    assert comparable(outcome.results).equals(reference_results)
    assert outcome.manifest["cluster"]["tls"] == {"ca_file": "ca.pem", "cert": "client.pem", "key": "client-key.pem"}


def test_certificate_from_another_ca_is_refused(tls_cluster):
    from pipeline.cluster import connect
    from pipeline.errors import TaskError

    address, folder = tls_cluster
    config = scheduler_config(folder, address, cert="certs/stranger.pem", key="certs/stranger-key.pem")
    cfg = {**yaml.safe_load(config.read_text()), "timeout_s": 3}
    cfg["tls"] = {k: str(folder / v) for k, v in cfg["tls"].items()}
    with pytest.raises(TaskError, match=f"cannot reach the Dask scheduler at {address}"), connect(cfg):
        pass


def test_missing_certificate_is_named(tls_cluster):
    from pipeline.cluster import connect
    from pipeline.errors import TaskError

    address, folder = tls_cluster
    config = scheduler_config(folder, address, cert="certs/absent.pem")
    with pytest.raises(TaskError, match=r"tls\.cert file not found: .*certs/absent\.pem"), connect(config):
        pass
