"""Issue 35, item 5: no open HTTP endpoint. Without a dashboard asked for, the scheduler of every
cluster kind serves its health check only, on loopback (Slurm: the login node's), and its
workers' HTTP servers listen on loopback; a dashboard asked for by port alone listens on
loopback; a request for a page it does not serve prints no traceback."""

from __future__ import annotations

import os
import stat
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from pipeline.cluster import connect, dashboard_address, kubernetes_spec, load_cluster_config, slurm_cluster_kwargs


def _http_addresses(scheduler) -> list[tuple[str, int]]:
    return [sock.getsockname()[:2] for sock in scheduler.http_server._sockets.values()]


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def test_dashboard_addresses() -> None:
    assert dashboard_address(None) == "127.0.0.1:0"
    assert dashboard_address("8787") == dashboard_address(":8787") == "127.0.0.1:8787"
    assert dashboard_address("0.0.0.0:8787") == "0.0.0.0:8787"  # every interface: said in the config


def test_local_scheduler_serves_the_health_check_only_and_no_traceback(capfd: pytest.CaptureFixture) -> None:
    with connect({"type": "local", "n_workers": 1, "processes": False}) as client:
        ((host, port),) = _http_addresses(client.cluster.scheduler)
        assert host == "127.0.0.1"
        assert _status(f"http://127.0.0.1:{port}/health") == 200
        for page in ("/info/main/workers.html", "/json/counts.json", "/metrics", "/info/worker/x.html"):
            assert _status(f"http://127.0.0.1:{port}{page}") == 404, page
    assert "Traceback" not in capfd.readouterr().err


@pytest.fixture
def fake_sbatch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in (("sbatch", "echo 'Submitted batch job 42'"), ("scancel", "true"), ("squeue", "true")):
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(stat.S_IRWXU)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return tmp_path


def test_slurm_scheduler_has_no_open_endpoint(fake_sbatch: Path) -> None:
    pytest.importorskip("dask_jobqueue")
    config = {"type": "slurm", "jobs": 0, "wait_for_workers": 0, "shared_temp_directory": str(fake_sbatch)}
    with connect(config) as client:
        scheduler = client.cluster.scheduler
        ((host, port),) = _http_addresses(scheduler)
        assert host == "127.0.0.1"
        assert _status(f"http://127.0.0.1:{port}/info/main/workers.html") == 404
    kw = slurm_cluster_kwargs(load_cluster_config(config))
    assert kw["worker_extra_args"][-3:] == ["--no-dashboard", "--dashboard-address", "127.0.0.1:0"]
    asked = slurm_cluster_kwargs(load_cluster_config({**config, "dashboard_address": "8787"}))
    assert asked["scheduler_options"]["dashboard_address"] == "127.0.0.1:8787"
    assert "--no-dashboard" not in asked["worker_extra_args"]


def test_kubernetes_pods_serve_the_health_check_only_unless_asked() -> None:
    pytest.importorskip("dask_kubernetes")
    spec = kubernetes_spec(load_cluster_config({"type": "kubernetes"}))
    (scheduler,) = spec["spec"]["scheduler"]["spec"]["containers"]
    assert "--no-dashboard" in scheduler["args"]
    env = {e["name"]: e["value"] for e in scheduler["env"]}
    assert env["DASK_DISTRIBUTED__SCHEDULER__HTTP__ROUTES"] == '["distributed.http.health"]'
    spec = kubernetes_spec(load_cluster_config({"type": "kubernetes", "dashboard": True}))
    (scheduler,) = spec["spec"]["scheduler"]["spec"]["containers"]
    assert "--no-dashboard" not in scheduler["args"] and not scheduler.get("env")
