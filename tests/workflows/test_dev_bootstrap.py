"""Issue 23, item 2: ``python3 dev.py demo`` on a fresh clone installs quickly — with uv when it is
on PATH, else with venv and pip (no pip self-upgrade).

The commands dev.py would run are recorded instead of run (a real install is the CI stage
``.ci/fresh-clone-demo.sh``)."""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def dev(tmp_path, monkeypatch):
    """dev.py as a module, its .venv in ``tmp_path``, its commands recorded in ``dev.commands``."""
    spec = importlib.util.spec_from_file_location("dev_bootstrap_under_test", ROOT / "dev.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    venv_dir = tmp_path / ".venv"
    monkeypatch.setattr(module, "VENV", venv_dir)
    monkeypatch.setattr(module, "BIN", venv_dir / "bin")
    module.commands = []

    def make_python() -> None:
        (venv_dir / "bin").mkdir(parents=True, exist_ok=True)
        (venv_dir / "bin" / "python").write_text("")

    def run(cmd: list[Any], **kwargs: Any) -> subprocess.CompletedProcess:
        args = [str(c) for c in cmd]
        module.commands.append(args)
        if args[1:2] == ["venv"]:
            make_python()
        return subprocess.CompletedProcess(args, 0, stdout="")

    class Builder:
        def __init__(self, with_pip: bool) -> None:
            module.commands.append(["venv.EnvBuilder", f"with_pip={with_pip}"])

        def create(self, path: Path) -> None:
            make_python()

    monkeypatch.setattr(module.subprocess, "run", run)
    monkeypatch.setattr(module.venv, "EnvBuilder", Builder)
    return module


def test_with_uv_on_path_uv_makes_the_environment_and_installs(dev, monkeypatch):
    monkeypatch.setattr(dev.shutil, "which", lambda name: "/opt/uv/bin/uv" if name == "uv" else None)
    dev.ensure_env("")
    assert dev.commands[0][:2] == ["/opt/uv/bin/uv", "venv"]
    install = dev.commands[1]
    assert install[:3] == ["/opt/uv/bin/uv", "pip", "install"]
    assert install[-2:] == ["-e", "."] and "--compile-bytecode" in install
    assert len(dev.commands) == 2
    # installed once: the stamp holds pyproject.toml's hash, so a second call installs nothing
    dev.ensure_env("")
    assert len(dev.commands) == 2


def test_without_uv_venv_and_pip_install_without_upgrading_pip(dev, monkeypatch):
    monkeypatch.setattr(dev.shutil, "which", lambda name: None)
    dev.ensure_env("test,cluster")
    assert dev.commands[0] == ["venv.EnvBuilder", "with_pip=True"]
    pip = [c for c in dev.commands if c[1:4] == ["-m", "pip", "install"]]
    assert len(pip) == 1, dev.commands
    assert "--upgrade" not in pip[0]
    assert pip[0][-2:] == ["-e", ".[test,cluster]"]
