"""The scaling model's bytes across a constrained link (issue 34, docs/scaling.md check b).

A scheduler with the driver and ``--workers`` Dask workers, each in a network namespace of its
own, joined by veth pairs to a bridge in a hub namespace (loopback only: nothing leaves the
machine); every endpoint's veth sends through ``tc netem rate 1gbit delay 0.5ms`` (or, where the
kernel has no netem, ``tbf rate 1gbit``: the bandwidth limit without the delay, said so in the
output).  The driver lays the register out as a run does (the register tasks' common key) and
runs the block-wise measures on the layout; for each phase it prints the bytes that crossed the
links (the veths' transmit counters: every byte a process sent, headers and control included),
the bytes Dask wrote answering data requests (the workers' transfer logs) and the model's
bytes (:data:`MODEL`, bytes per record measured on loopback by ``benchmarks/bench_policy.py``,
times the records), and whether the links' bytes are within 20 % of the model's.

Bounded (every process under a timeout), cleaned up even on failure or Ctrl-C (processes ended
by their PID, the namespaces deleted with their links), skipped with the reason where it cannot
run (not root, no network namespaces, no veth).

``--loopback`` runs the same phases on a local cluster without namespaces and prints the bytes per
record the workers wrote: the model's figures (:data:`MODEL`).

Usage (as root)::

    .venv/bin/python benchmarks/check_netem.py --rows 1000000 --workers 2
    .venv/bin/python benchmarks/check_netem.py --rows 1000000 --loopback   # the model's bytes
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness import TRANSFER_LOG, bench_client, bytes_sent

ROOT = Path(__file__).resolve().parents[1]

#: bytes the workers write per record (every data set's records counted) by phase, measured on
#: loopback: ``check_netem.py --rows 200000 --loopback``, 2 workers, 2026-12-07 23:59 UTC, load 20
#: (docs/scaling.md)
MODEL: dict[str, float] = {
    "layout": 26.1,
    "disclosure": 120.8,
    "identification_risk": 0.1,
}
#: link limits (netem; tbf where the kernel lacks netem)
RATE, DELAY = "1gbit", "0.5ms"
PORT = 8786
#: seconds any one process or phase may take
TIMEOUT = 900


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check, timeout=30)


class Network:
    """The namespaces, bridge and shaped veths; :meth:`close` removes them (idempotent)."""

    def __init__(self, tag: str, workers: int) -> None:
        self.hub = f"{tag}-hub"
        self.ends = [f"{tag}-s", *(f"{tag}-w{i}" for i in range(1, workers + 1))]
        self.address = {ns: f"10.34.{os.getpid() % 200}.{i + 1}" for i, ns in enumerate(self.ends)}
        self.made: list[str] = []
        self.shaping = ""

    def open(self) -> None:
        for ns in [self.hub, *self.ends]:
            _ip("netns", "add", ns)
            self.made.append(ns)
            _ip("-n", ns, "link", "set", "lo", "up")
        _ip("-n", self.hub, "link", "add", "br0", "type", "bridge")
        _ip("-n", self.hub, "link", "set", "br0", "up")
        for i, ns in enumerate(self.ends):
            _ip("-n", self.hub, "link", "add", f"h{i}", "type", "veth", "peer", "name", "eth0", "netns", ns)
            _ip("-n", self.hub, "link", "set", f"h{i}", "master", "br0", "up")
            _ip("-n", ns, "addr", "add", f"{self.address[ns]}/24", "dev", "eth0")
            _ip("-n", ns, "link", "set", "eth0", "up")
            self.shaping = self._shape(ns)

    def _shape(self, ns: str) -> str:
        """Limit what ``ns`` sends: netem with rate and delay, else tbf with the rate only."""
        netem = ["tc", "qdisc", "add", "dev", "eth0", "root", "netem", "rate", RATE, "delay", DELAY, "limit", "10000"]
        got = subprocess.run(["ip", "netns", "exec", ns, *netem], capture_output=True, text=True, timeout=30)
        if got.returncode == 0:
            return f"netem rate {RATE} delay {DELAY}"
        tbf = ["tc", "qdisc", "add", "dev", "eth0", "root", "tbf", "rate", RATE, "burst", "256kb", "latency", "50ms"]
        subprocess.run(["ip", "netns", "exec", ns, *tbf], capture_output=True, text=True, timeout=30, check=True)
        return f"tbf rate {RATE} (no delay: this kernel has no netem: {got.stderr.strip()})"

    def sent(self) -> dict[str, int]:
        """Bytes each endpoint has sent through its veth."""
        out = {}
        for ns in self.ends:
            stats = json.loads(_ip("-n", ns, "-s", "-j", "link", "show", "eth0").stdout)[0]["stats64"]["tx"]
            out[ns] = int(stats["bytes"])
        return out

    def close(self) -> None:
        for ns in reversed(self.made):  # deleting a namespace deletes its links
            _ip("netns", "del", ns, check=False)
        self.made.clear()


def _signal_group(p: subprocess.Popen, sig: int) -> None:
    """``sig`` to the process group ``p`` leads (started in a session of its own: ``timeout`` and
    the Dask process it runs), by its id."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(p.pid, sig)


@contextlib.contextmanager
def processes() -> Iterator[list[subprocess.Popen]]:
    """Processes started here (each in a session of its own), ended by their process group's id on
    the way out: TERM, then KILL after 10 s — a Dask worker whose scheduler is gone may wait on TERM,
    and ending ``timeout`` alone would leave it running."""
    started: list[subprocess.Popen] = []
    try:
        yield started
    finally:
        for p in started:
            _signal_group(p, signal.SIGTERM)
        deadline = time.monotonic() + 10
        for p in started:
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(max(0.1, deadline - time.monotonic()))
        for p in started:  # the group, even when its leader is gone
            _signal_group(p, signal.SIGKILL)
            p.wait()


def skip_reason() -> str | None:
    """Why the check cannot run here, or None."""
    if os.geteuid() != 0:
        return "needs root (network namespaces and tc)"
    probe = f"sdcprobe{os.getpid()}"
    try:
        made = _ip("netns", "add", probe, check=False)
        if made.returncode:
            return f"network namespaces are not allowed here: {made.stderr.strip()}"
        veth = _ip("-n", probe, "link", "add", "a0", "type", "veth", "peer", "name", "b0", check=False)
        if veth.returncode:
            return f"veth pairs are not allowed here: {veth.stderr.strip()}"
    except FileNotFoundError:
        return "the ip command is missing"
    finally:
        _ip("netns", "del", probe, check=False)
    return None


def phases(client: Any, rows: int, folder: Path, links: Callable[[], dict[str, int]]) -> Iterator[dict[str, Any]]:
    """The register's layout (the register tasks' common key, sex x municipality) and the block-wise
    measures of ``tasks/register.yaml`` on it, each phase with its bytes: ``links()`` before and
    after (bytes sent per endpoint), the workers' transfer logs, the model's."""
    from pipeline.data.dataset import read_dataset
    from pipeline.datasets.register import write_register
    from pipeline.evaluation.data import as_eval_data
    from pipeline.evaluation.execution import Executor
    from pipeline.risk.disclosure.measure import DisclosureMeasure
    from pipeline.risk.idrisk.measure import IdentificationRiskMeasure
    from pipeline.tasks import load_task

    data = write_register(folder, rows)
    frames = [read_dataset(data.path(n), schema=data.schema_path).frame for n in ("original", "syn1")]
    spec = {m.type: m.params for m in load_task(ROOT / "tasks" / "register.yaml").spec.measures}
    measures = {
        "disclosure": DisclosureMeasure(spec["disclosure"]),
        "identification_risk": IdentificationRiskMeasure(spec["identification_risk"]),
    }
    executor = Executor(client, policy="blocks")
    original, synthetic = executor.persist(*frames)
    on_cluster = as_eval_data(original, [synthetic], data.schema)
    variables = sorted({v for m in measures.values() for v in m.params.variables()})
    work = {"layout": partial(executor.lay_out, on_cluster.select(variables), ["sex", "municipality"])}
    work |= {name: partial(m.run, on_cluster, executor) for name, m in measures.items()}
    records = rows * 2
    for name, fn in work.items():
        before, counted, t0 = links(), bytes_sent(client), time.perf_counter()
        fn()
        wall = time.perf_counter() - t0
        after, moved = links(), bytes_sent(client) - counted
        yield {"phase": name, "records": records, "wall": round(wall, 3), "dask": moved,
               "links": {ns: after[ns] - before[ns] for ns in after}, "model": MODEL[name] * records}  # fmt: skip


def driver(args: argparse.Namespace) -> None:
    """Inside the scheduler's namespace: the phases, as JSON lines on stdout."""
    from distributed import Client

    net = Network.__new__(Network)
    net.ends = json.loads(args.ends)
    with Client(f"tcp://{args.scheduler}:{PORT}", timeout=60) as client:
        client.wait_for_workers(len(net.ends) - 1, timeout=120)
        for row in phases(client, args.rows, args.data, net.sent):
            print(json.dumps(row), flush=True)


def loopback(args: argparse.Namespace) -> None:
    """The model's bytes: the same phases on a local cluster over loopback (no limits), per record."""
    with bench_client(args.workers, "4GiB") as client:
        for row in phases(client, args.rows, args.data, dict):
            print(f"{row['phase']:<22} wall {row['wall']:7.2f} s  {row['dask']:>14,} bytes written by the workers "
                  f"= {row['dask'] / row['records']:.1f} per record")  # fmt: skip


def report(lines: list[dict[str, Any]], shaping: str, scheduler_ns: str) -> bool:
    """The table of phases; True when every phase's link bytes are within 20 % of the model's."""
    print(f"links: {shaping}")
    print(f"{'phase':<22}{'wall s':>8}{'workers sent':>16}{'driver sent':>14}{'Dask counted':>15}{'model':>14}  ratio")
    ok = True
    for row in lines:
        workers = sum(v for ns, v in row["links"].items() if ns != scheduler_ns)
        model = row["model"]
        ratio = workers / model if model else float("nan")
        ok &= bool(model) and abs(ratio - 1) <= 0.2
        print(f"{row['phase']:<22}{row['wall']:>8.2f}{workers:>16,}{row['links'][scheduler_ns]:>14,}"
              f"{row['dask']:>15,}{model:>14,.0f}  {ratio:.2f}")  # fmt: skip
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--data", type=Path, default=Path.home() / ".cache" / "sdc-pipeline" / "demo")
    parser.add_argument("--loopback", action="store_true", help="measure the model's bytes per record (no namespaces)")
    parser.add_argument("--driver", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--scheduler", help=argparse.SUPPRESS)
    parser.add_argument("--ends", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.driver or args.loopback:
        (driver if args.driver else loopback)(args)
        return
    reason = skip_reason()
    if reason:
        print(f"skipped: {reason}")
        return
    # a signal ends the check through the finally clauses (processes ended, namespaces removed)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda *_: sys.exit(1))
    net = Network(f"sdc{os.getpid()}", args.workers)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1",
           "DASK_DISTRIBUTED__ADMIN__LOW_LEVEL_LOG_LENGTH": str(TRANSFER_LOG)}  # fmt: skip
    python = [sys.executable, "-m"]
    try:
        net.open()
        scheduler_ns, *worker_ns = net.ends
        host = net.address[scheduler_ns]
        with processes() as started:

            def start(ns: str, *cmd: str) -> None:
                wrapped = ["timeout", str(TIMEOUT), "ip", "netns", "exec", ns, *cmd]
                out = subprocess.DEVNULL
                started.append(
                    subprocess.Popen(wrapped, env=env, stdout=out, stderr=out, cwd=ROOT, start_new_session=True)
                )

            start(scheduler_ns, *python, "dask", "scheduler", "--host", host, "--port", str(PORT),
                  "--no-dashboard")  # fmt: skip
            for ns in worker_ns:
                start(ns, *python, "dask", "worker", f"tcp://{host}:{PORT}", "--host", net.address[ns],
                      "--nthreads", "1", "--no-nanny", "--memory-limit", "4GiB", "--no-dashboard")  # fmt: skip
            cmd = ["ip", "netns", "exec", scheduler_ns, sys.executable, str(Path(__file__).resolve()), "--driver",
                   "--rows", str(args.rows), "--data", str(args.data), "--scheduler", host,
                   "--ends", json.dumps(net.ends)]  # fmt: skip
            done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=TIMEOUT, cwd=ROOT)
            if done.returncode:
                print(done.stderr[-3000:])
                sys.exit(1)
        lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
        ok = report(lines, net.shaping, scheduler_ns)
        print("bytes within 20 % of the model's: " + ("yes" if ok else "NO"))
    finally:
        net.close()


if __name__ == "__main__":
    main()
