"""Benchmark: the same large evaluation on 1 and 2 local workers: speed-up and per-worker peak memory.

The evaluation is a task run by the real runner (``run_task``): key-block statistics
(``key_blocks``, a Dask shuffle of every data set on its key blocks, then per-block counts) for
two key sets, on SD2011 and two of its CART syntheses scaled to ``--rows`` records each by the
one benchmark generator (``pipeline.datasets.scaled``: the bundled sets repeated, integers +-1,
income x (1 +- 2 %) rounded, NA and special codes left alone, fixed seeds), written as Parquet
folders (8 files per data set).

For each worker count a fresh ``LocalCluster`` (single-threaded worker processes) runs the task
``--repeats`` times into fresh run folders (no cached units); the fastest run is reported, both
for the whole run (reading, persisting, both units) and for the units alone.  Peak memory is each
worker process's peak resident set size (``getrusage``) after the runs.  The result tables of
all runs must be identical.  The machine's load average is printed before and after, and the
summed task time and the workers' CPU time of both configurations: with free cores the same
tasks take about as long on 2 workers as on 1 and the workers keep about n cores busy; when other
processes compete for the 2 cores the tasks take longer, the workers get less CPU, and the
speed-up drops.

Usage::

    .venv/bin/python benchmarks/bench_scaling.py                   # 3M rows per data set
    .venv/bin/python benchmarks/bench_scaling.py --rows 1000000 --repeats 1
"""

from __future__ import annotations

import argparse
import logging
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import psutil
import yaml
from distributed import Client, LocalCluster, get_task_stream

from pipeline.datasets.scaled import write_scaled_sd2011
from pipeline.runner import run_task
from pipeline.tasks import load_task

KEY_SETS = [["sex", "age", "edu", "marital", "region"], ["sex", "agegr", "placesize", "socprof", "marital"]]
N_BLOCKS = 32
FILES_PER_SET = 8


def write_task(folder: Path, n_synthetic: int) -> Path:
    spec = {
        "name": "scaling",
        "concurrency": 1,
        "datasets": [
            {
                "name": "sd2011_big",
                "original": {"path": "original", "schema": "sd2011.schema.json"},
                "synthetic": [
                    {
                        "name": "cart",
                        "paths": [f"syn{i + 1}" for i in range(n_synthetic)],
                        "schema": "sd2011.schema.json",
                    }
                ],
            }
        ],
        "measures": [{"type": "key_blocks", "params": {"n_blocks": N_BLOCKS}, "grid": {"keys": KEY_SETS}}],
    }
    path = folder / "scaling.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


def _peak_rss() -> int:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux reports KiB


def _cpu_seconds() -> float:
    """CPU time (user + system, all threads) of the calling process so far."""
    t = psutil.Process().cpu_times()
    return t.user + t.system


def _busy_seconds(stream: list[dict]) -> float:
    """Sum of the task compute times recorded by the task stream (all workers)."""
    return sum(s["stop"] - s["start"] for d in stream for s in d["startstops"] if s["action"] == "compute")


def measure(task_file: Path, n_workers: int, repeats: int, memory_limit: str, scratch: Path) -> dict:
    """Best whole-run and unit seconds over ``repeats`` runs, task time, per-worker peak RSS, result table."""
    task = load_task(task_file)
    walls, units, busy, cpu, table = [], [], [], [], None
    with (
        LocalCluster(
            n_workers=n_workers,
            threads_per_worker=1,
            processes=True,
            memory_limit=memory_limit,
            dashboard_address=None,
            silence_logs=logging.ERROR,
        ) as cluster,
        Client(cluster) as client,
    ):
        config = {"type": "scheduler", "address": cluster.scheduler_address}
        for r in range(repeats):
            out = scratch / f"w{n_workers}-r{r}"
            cpu0 = client.run(_cpu_seconds)
            with get_task_stream(client) as stream:
                t0 = time.perf_counter()
                outcome = run_task(task, cluster=config, out_dir=out, progress=False, report=False)
                walls.append(time.perf_counter() - t0)
            busy.append(_busy_seconds(stream.data))
            cpu.append(sum(client.run(_cpu_seconds)[w] - cpu0[w] for w in cpu0))
            units.append(sum(u["seconds"] for u in outcome.manifest["units"].values()))
            got = outcome.results.drop(columns="run_id")
            if table is not None:
                pd.testing.assert_frame_equal(got, table, check_exact=True)
            table = got
        peaks = sorted(client.run(_peak_rss).values())
    best = int(np.argmin(walls))
    return dict(wall=walls[best], units=units[best], busy=busy[best], cpu=cpu[best], peaks=peaks, table=table)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=3_000_000, help="records per data set")
    ap.add_argument("--synthetic", type=int, default=2, help="number of synthetic sets (1..5)")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--memory-limit", default="6GiB", help="per worker")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench_scaling_") as tmp:
        folder = Path(tmp)
        t0 = time.perf_counter()
        data = write_scaled_sd2011(folder, args.rows, args.synthetic, FILES_PER_SET)
        task = write_task(data, args.synthetic)
        print(
            f"data: SD2011 + {args.synthetic} CART sets x {args.rows:,} records ({time.perf_counter() - t0:.1f} s); "
            f"key_blocks n_blocks={N_BLOCKS} for {len(KEY_SETS)} key sets; best of {args.repeats}"
        )
        print(f"cores: {len(os.sched_getaffinity(0))}; load average before: {os.getloadavg()[0]:.2f}")
        res = {n: measure(task, n, args.repeats, args.memory_limit, folder / "runs") for n in (1, 2)}
        pd.testing.assert_frame_equal(res[1]["table"], res[2]["table"], check_exact=True)
        print(f"load average after: {os.getloadavg()[0]:.2f}")

    head = f"{'workers':>7}  {'run (s)':>8}  {'units (s)':>9}  {'task time (s)':>13}  {'worker CPU (s)':>14}"
    print(f"\n{head}  {'cores busy':>10}  per-worker peak RSS (MiB)")
    for n, r in res.items():
        peaks = ", ".join(f"{p / 2**20:.0f}" for p in r["peaks"])
        row = f"{n:>7}  {r['wall']:8.2f}  {r['units']:9.2f}  {r['busy']:13.2f}  {r['cpu']:14.2f}"
        print(f"{row}  {r['cpu'] / r['wall']:10.2f}  {peaks}")
    print(
        f"\nspeed-up 1 -> 2 workers: whole run {res[1]['wall'] / res[2]['wall']:.2f}x, "
        f"units {res[1]['units'] / res[2]['units']:.2f}x (target >= 1.6x); results identical"
    )
    # the same tasks take longer each when the 2 workers compete for the cores with other processes
    print(f"task time 2 workers / 1 worker: {res[2]['busy'] / res[1]['busy']:.2f} (1.0 = no CPU contention)")


if __name__ == "__main__":
    main()
