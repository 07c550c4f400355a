"""Issue 35, item 3: a run folder's lock dies with its run. A child the run forked while it held
the lock (the report's drawing processes) does not keep it; a lock still held by a process a dead
run left is recognised and taken over; the drawing processes die with the run."""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipeline.lock import exclusive

REPO = Path(__file__).resolve().parents[2]

HOLD_AND_FORK = """
import os, sys, time
from pathlib import Path
from pipeline.lock import exclusive
with exclusive(Path(sys.argv[1]), "run folder"):
    child = os.fork()
    if child == 0:
        time.sleep(60)
        os._exit(0)
    print(child, flush=True)
    time.sleep(60)
"""

ORPHAN_HOLDER = """
import fcntl, json, os, socket, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
os.pwrite(fd, json.dumps({"pid": int(sys.argv[2]), "host": socket.gethostname(), "started": "then"}).encode(), 0)
print("ready", flush=True)
time.sleep(60)
"""

DRAWING = """
import os, time
import matplotlib.figure
from pipeline.evaluation.reporting import Figure
from pipeline.report import markup

def slow(seconds):
    time.sleep(seconds)
    return matplotlib.figure.Figure(figsize=(1, 1))

print(os.getpid(), flush=True)
markup._draw([Figure("a", slow, (0,)), Figure("b", slow, (60,)), Figure("c", slow, (60,))])
"""


def _python(code: str, *args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE, text=True, env=env)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (exited, not yet reaped by its new parent) is not alive
    state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] if Path(f"/proc/{pid}").exists() else "X"
    return state not in ("Z", "X")


def test_a_forked_child_does_not_keep_the_lock_of_a_killed_run(tmp_path: Path) -> None:
    lock = tmp_path / "lock"
    holder = _python(HOLD_AND_FORK, str(lock))
    child = int(holder.stdout.readline())
    try:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
        with exclusive(lock, "run folder") as took:  # at once: the child closed its copy
            assert took
    finally:
        os.kill(child, signal.SIGKILL)


def test_a_lock_held_for_a_dead_run_is_taken_over(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()
    lock = tmp_path / "lock"
    orphan = _python(ORPHAN_HOLDER, str(lock), str(gone.pid))
    assert orphan.stdout.readline().strip() == "ready"
    try:
        with caplog.at_level(logging.WARNING), exclusive(lock, "run folder") as took:
            assert took
            assert json.loads(lock.read_text())["pid"] == os.getpid()
        assert f"PID {gone.pid} on {socket.gethostname()}" in caplog.text
        # a live holder is still respected
        live = _python(ORPHAN_HOLDER, str(lock), str(os.getppid()))
        assert live.stdout.readline().strip() == "ready"
        with pytest.raises(Exception, match="in use by another run"), exclusive(lock, "run folder"):
            pass
        live.kill()
        live.wait()
    finally:
        orphan.kill()
        orphan.wait()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
def test_drawing_processes_die_with_a_killed_run() -> None:
    run = _python(DRAWING)
    pid = int(run.stdout.readline())
    deadline = time.monotonic() + 30
    children: list[int] = []
    while len(children) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
        out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True).stdout
        children = [int(p) for p in out.split()]
    assert len(children) >= 2
    time.sleep(1)  # let them start drawing
    run.send_signal(signal.SIGKILL)
    run.wait()
    deadline = time.monotonic() + 10
    while any(_alive(c) for c in children) and time.monotonic() < deadline:
        time.sleep(0.2)
    survivors = [c for c in children if _alive(c)]
    for c in survivors:
        os.kill(c, signal.SIGKILL)
    assert not survivors


def _session_processes(sid: int) -> list[int]:
    out = subprocess.run(["ps", "-o", "pid=", "--sid", str(sid)], capture_output=True, text=True).stdout
    return [int(p) for p in out.split() if _alive(int(p))]


@pytest.mark.slow
def test_a_run_killed_while_it_works_leaves_no_process_and_a_folder_the_next_run_takes(tmp_path: Path) -> None:
    """kill -9 of a run on a local cluster of worker processes while its units run: after 10 s
    no process of its session is left, and the same command runs into the folder at once."""
    sys.path.insert(0, str(Path(__file__).parent))
    from workflow_task_files import small_task

    task, _ = small_task(tmp_path, "killed", synth=True)
    out = tmp_path / "out"
    command = [sys.executable, "-m", "pipeline.cli", "run", str(task), "--out", str(out), "--no-report"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    run = subprocess.Popen(command, env=env, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    # the synthesis is cached (a unit finished), the measure unit runs or is about to
    while not list((out / ".units").glob("synthesis/*/*.json")) and run.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert run.poll() is None, run.stderr.read()
    run.send_signal(signal.SIGKILL)
    run.wait()
    time.sleep(10)
    assert _session_processes(run.pid) == []
    again = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert (out / "manifest.json").is_file() and not list(out.rglob("*sdc-tmp*"))
