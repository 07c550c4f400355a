#!/usr/bin/env python3
"""Bootstrap and run: needs only Python >= 3.11.

    python3 dev.py demo    create .venv, install sdc-pipeline, run tasks/demo.yaml on a LocalCluster
    python3 dev.py test    create .venv, install sdc-pipeline with test extras, run the test suite (every core)
    python3 dev.py slow    the slow scale/cluster tests (pytest -m slow)

Extra arguments after the command go to the underlying tool (sdc-pipeline run / pytest).
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if sys.platform == "win32" else "bin")


def ensure_env(extras: str) -> None:
    """Create .venv and (re)install the project when pyproject.toml or the extras changed.

    With ``uv`` on PATH it makes the environment and installs (much faster); otherwise the
    standard library's venv and pip do (pip's own version is good enough for an editable
    install: no self-upgrade).
    """
    if sys.version_info < (3, 11):  # noqa: UP036 - dev.py runs before any environment exists
        sys.exit(f"sdc-pipeline needs Python >= 3.11, this is {sys.version.split()[0]}")
    uv = shutil.which("uv")
    if not (BIN / "python").exists():
        print("creating .venv ...", flush=True)
        if uv:
            subprocess.run([uv, "venv", "-q", "--python", sys.executable, VENV], check=True)
        else:
            venv.EnvBuilder(with_pip=True).create(VENV)
    stamp = VENV / f".installed-{extras or 'base'}"
    want = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if stamp.exists() and stamp.read_text() == want:
        return
    print(f"installing sdc-pipeline{f'[{extras}]' if extras else ''} into .venv ...", flush=True)
    target = f".[{extras}]" if extras else "."
    if uv:
        install = [uv, "pip", "install", "-q", "--compile-bytecode", "--python", BIN / "python", "-e", target]
        subprocess.run(install, cwd=ROOT, check=True)
    else:
        python = str(BIN / "python")
        if subprocess.run([python, "-m", "pip", "--version"], capture_output=True).returncode != 0:
            subprocess.run([python, "-m", "ensurepip", "-q"], check=True)  # a .venv made by uv has no pip
        subprocess.run([python, "-m", "pip", "install", "-q", "-e", target], cwd=ROOT, check=True)
    stamp.write_text(want)


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("demo", "test", "slow"):
        print(__doc__)
        return 2
    cmd, rest = argv[0], argv[1:]
    if cmd == "demo":
        ensure_env("")
        return subprocess.run([BIN / "sdc-pipeline", "run", "tasks/demo.yaml", *rest], cwd=ROOT).returncode
    ensure_env("test,cluster")
    marker = ["-m", "slow"] if cmd == "slow" else []
    if cmd == "test" and not any(a == "-n" or a.startswith(("-n", "--numprocesses")) for a in rest):
        # the suite is CPU-bound: one pytest process per core (pass -n 1 for a single process)
        marker = ["-n", "auto"]
        print("running the suite on every core (pytest -n auto; `python3 dev.py test -n 1` for one process)")
    return subprocess.run([BIN / "python", "-m", "pytest", *marker, *rest], cwd=ROOT).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
