"""Benchmark: synthpop disclosure() / multi.disclosure() vs sdc-pipeline at 50k, 500k (and 5M) rows.

The SD2011 subset and its first CART synthetic set (bundled demo data) are scaled to N rows
each: records are drawn with replacement and slightly perturbed (age +-1 for 10 % of records,
income x (1 +- 5 %) for 10 %, one key level re-drawn for 2 %), generated partition by
partition on the cluster (250,000 records per partition) and persisted before timing, as the
runner persists its inputs.  The executor's default policy ("auto") computes inputs of up to a
million records per set in memory (one transfer from the workers, then pandas), larger
inputs on key blocks (Dask path); see the path column.

Timed calls (keys sex, age, edu, marital):
  disclosure       target ls
  multi_disclosure 7 targets: placesize, region, socprof, income, ls, depress, smoke
R reference times on this machine (synthpop 1.9-2): disclosure 0.56 / 5.6 / 64.8 s,
multi.disclosure 4.1 / 38.6 / ~390 s at 50k / 500k / 5M.

Besides wall-clock time, the CPU seconds of the driver and all workers are reported: the
machine may be shared, and CPU time does not depend on what else runs.  The 1-minute load
average at the end of each size is printed too.

Usage::

    .venv/bin/python benchmarks/bench_disclosure.py              # 50k and 500k
    .venv/bin/python benchmarks/bench_disclosure.py --big        # also 5M
    .venv/bin/python benchmarks/bench_disclosure.py --sizes 5000000 --memory-limit 2GiB
"""

from __future__ import annotations

import argparse
import logging
import threading
import time

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import psutil
from dask.distributed import Client, LocalCluster

from pipeline.datasets import load_demo, load_demo_synthetic
from pipeline.evaluation.execution import IN_MEMORY_ROWS
from pipeline.risk.disclosure import disclosure, multi_disclosure

KEYS = ["sex", "age", "edu", "marital"]
TARGET = "ls"
TARGETS = ["placesize", "region", "socprof", "income", "ls", "depress", "smoke"]
R_SECONDS = {
    50_000: (0.56, 4.1),
    500_000: (5.6, 38.6),
    5_000_000: (64.8, 390.0),
}
ROWS_PER_PARTITION = 250_000


def perturbed_chunk(base: pd.DataFrame, n: int, seed: int) -> pd.DataFrame:
    """``n`` records drawn from ``base`` with small perturbations (reproducible from ``seed``)."""
    rng = np.random.default_rng(seed)
    out = base.iloc[rng.integers(0, len(base), n)].reset_index(drop=True)
    age = out["age"].to_numpy(copy=True)
    jitter = rng.random(n) < 0.10
    age[jitter] += rng.choice([-1.0, 1.0], jitter.sum())
    out["age"] = np.clip(age, 16, 97)
    income = out["income"].to_numpy(copy=True)
    scale = (rng.random(n) < 0.10) & (income > 0)
    income[scale] = np.round(income[scale] * rng.uniform(0.95, 1.05, scale.sum()))
    out["income"] = income
    for key in ("edu", "marital"):
        redraw = rng.random(n) < 0.02
        levels = out[key].cat.categories
        out.loc[redraw, key] = levels[rng.integers(0, len(levels), redraw.sum())]
    return out


def scaled(base: pd.DataFrame, n: int, seed: int) -> dd.DataFrame:
    """``base`` scaled to ``n`` records, generated on the workers, one partition per 250k records."""
    sizes = [ROWS_PER_PARTITION] * (n // ROWS_PER_PARTITION) + ([n % ROWS_PER_PARTITION] if n % ROWS_PER_PARTITION
                                                                 else [])
    parts = [dask.delayed(perturbed_chunk)(base, size, seed * 100_003 + i) for i, size in enumerate(sizes)]
    return dd.from_delayed(parts, meta=base.iloc[:0], verify_meta=False)


class PeakMemory:
    """Polls the resident memory of every worker process while a block of code runs."""

    def __init__(self, client: Client, every: float = 0.5) -> None:
        self.client, self.every, self.peak = client, every, 0
        self._stop = threading.Event()

    def _poll(self) -> None:
        while not self._stop.is_set():
            try:
                rss = self.client.run(lambda: psutil.Process().memory_info().rss)
                self.peak = max(self.peak, *rss.values())
            except Exception:  # a worker restarting: keep polling
                pass
            self._stop.wait(self.every)

    def __enter__(self) -> PeakMemory:
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def cpu_seconds(client: Client) -> float:
    """CPU time used so far by this process and every worker process (load-independent cost)."""
    def used() -> float:
        t = psutil.Process().cpu_times()
        return t.user + t.system

    return used() + sum(client.run(used).values())


def timed(client: Client, fn, *args, **kwargs) -> tuple[float, float, object]:
    """Wall-clock and CPU seconds of one call."""
    c0, t0 = cpu_seconds(client), time.perf_counter()
    out = fn(*args, **kwargs)
    return time.perf_counter() - t0, cpu_seconds(client) - c0, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--big", action="store_true", help="also run N = 5,000,000")
    parser.add_argument("--sizes", type=int, nargs="*", help="explicit sizes (overrides the defaults)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--memory-limit", default="2GiB", help="memory limit per worker (default 2GiB)")
    parser.add_argument("--repeat", type=int, default=1, help="timed repetitions (the best is reported)")
    args = parser.parse_args()
    sizes = args.sizes or ([50_000, 500_000] + ([5_000_000] if args.big else []))

    logging.getLogger("distributed.shuffle._scheduler_plugin").setLevel(logging.ERROR)
    demo = load_demo("sd2011_subset")
    original, schema = demo.to_pandas(), demo.schema  # Dask frames carry no schema: pass the demo's
    synthetic = load_demo_synthetic("sd2011_cart")[0].to_pandas()
    cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                           memory_limit=args.memory_limit, dashboard_address=":0")
    rows = []
    with Client(cluster) as client:
        print(f"LocalCluster: {args.workers} workers x 1 thread, memory_limit={args.memory_limit}, "
              f"{psutil.cpu_count()} cores on the machine")
        # warm-up (imports on the workers, first shuffle), not timed
        small = dask.persist(scaled(original, 2 * ROWS_PER_PARTITION, 3), scaled(synthetic, 2 * ROWS_PER_PARTITION, 4))
        multi_disclosure(small[0], [small[1]], KEYS, TARGETS[:2], schema=schema, cont_na={"income": -8})
        del small
        for n in sizes:
            orig, syn = dask.persist(scaled(original, n, 1), scaled(synthetic, n, 2))
            path = f"Dask key blocks ({orig.npartitions} parts)" if n > IN_MEMORY_ROWS else "in memory (policy auto)"
            best_d = best_m = (np.inf, np.inf)
            with PeakMemory(client) as mem:
                for _ in range(args.repeat):
                    *t_d, res = timed(client, disclosure, orig, [syn], KEYS, TARGET, schema=schema,
                                      cont_na={"income": -8})
                    *t_m, _multi = timed(client, multi_disclosure, orig, [syn], KEYS, TARGETS, schema=schema,
                                         cont_na={"income": -8})
                    best_d, best_m = min(best_d, tuple(t_d)), min(best_m, tuple(t_m))
            r_d, r_m = R_SECONDS.get(n, (np.nan, np.nan))
            load = psutil.getloadavg()[0]
            rows.append((n, path, best_d[0], best_d[1], r_d, r_d / best_d[0], best_m[0], best_m[1], r_m,
                         r_m / best_m[0], mem.peak / 2**20, load))
            print(f"N={n:>9,}  {path:<26} disclosure {best_d[0]:7.2f} s (cpu {best_d[1]:6.2f} s; R {r_d:6.2f} s, "
                  f"x{r_d / best_d[0]:5.1f})   multi {best_m[0]:7.2f} s (cpu {best_m[1]:6.2f} s; R {r_m:6.1f} s, "
                  f"x{r_m / best_m[0]:5.1f})   peak worker RSS {mem.peak / 2**20:,.0f} MiB   load {load:.1f}   "
                  f"repU {res.ident.loc[1, 'repU']:.4f} DiSCO {res.attrib.loc[1, 'DiSCO']:.4f}", flush=True)
            del orig, syn
    table = pd.DataFrame(rows, columns=["N", "path", "disclosure_s", "disclosure_cpu_s", "R_disclosure_s", "speedup",
                                        "multi_s", "multi_cpu_s", "R_multi_s", "multi_speedup", "peak_worker_MiB",
                                        "load_avg"])
    print()
    print(table.to_string(index=False, float_format=lambda v: f"{v:,.2f}"))
    cluster.close()


if __name__ == "__main__":
    main()
