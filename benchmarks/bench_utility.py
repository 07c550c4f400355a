"""Benchmark of utility_gen at scale against the R timings quoted in issue 5.

SD2011 subset (bundled demo data) and its first CART synthesis are tiled to n rows each (the
partitions are generated on the workers), then

    utility_gen(original, synthetic, method="logit", maxorder=1,
                vars=["sex", "age", "placesize", "income"], cont_na={"income": -8})

runs on a LocalCluster, m = 1, with the executor policy asked for (``blocks``: the IRLS by
rounds over partitions; ``auto``: in memory up to the executor's in-memory threshold).  R's
synthpop took 2.2 s at 50k and 16.4 s at 500k and could not run at 5M.  Tiling multiplies
every sufficient statistic by the same factor, so the coefficients must equal those of the
in-memory fit of the 5,000-row data; at 50k and 500k they are also compared with the
in-memory fit of the tiled data.
CART (rpart port, in memory on one worker, one tree per set, no resampling) is timed at 50k
and 500k.  Peak memory is the largest resident set size of a worker process, sampled every
0.1 s.

Usage::

    .venv/bin/python benchmarks/bench_utility.py [--sizes 50000 500000 5000000] [--workers 2]
"""

from __future__ import annotations

import argparse
import contextlib
import threading
import time
import warnings
from importlib import resources

import dask.dataframe as dd
import numpy as np
import pandas as pd

from pipeline.data.schema import Schema
from pipeline.evaluation.execution import Executor
from pipeline.utility import utility_gen

VARS = ["sex", "age", "placesize", "income"]
R_SECONDS = {50_000: 2.2, 500_000: 16.4}
PARTITION_ROWS = 500_000


def _load() -> tuple[pd.DataFrame, pd.DataFrame, Schema]:
    base = resources.files("pipeline.datasets")
    schema = Schema.from_json(base / "sd2011_subset.schema.json").with_missing_codes({"income": -8})

    def read(name: str) -> pd.DataFrame:
        raw = pd.read_csv(base / name, dtype=str, keep_default_na=False, na_values=[""])
        return schema.apply(raw, name)

    return read("sd2011_subset.csv"), read("sd2011_cart_syn1.csv"), schema


def _tile_part(bounds: tuple[int, int], base: pd.DataFrame) -> pd.DataFrame:
    start, stop = bounds
    idx = np.arange(start, stop) % len(base)
    return base.iloc[idx].reset_index(drop=True)


def tiled(base: pd.DataFrame, n: int) -> dd.DataFrame:
    bounds = [(s, min(n, s + PARTITION_ROWS)) for s in range(0, n, PARTITION_ROWS)]
    return dd.from_map(_tile_part, bounds, base=base, meta=base.head(0), enforce_metadata=False)


class PeakMemory:
    """Largest worker RSS seen while the block runs (sampled in a thread)."""

    def __init__(self, client) -> None:
        self.client = client
        self.peak = 0
        self._stop = threading.Event()

    def _sample(self) -> None:
        import psutil

        def rss() -> int:
            return psutil.Process().memory_info().rss

        while not self._stop.is_set():
            with contextlib.suppress(Exception):  # sampling must never break the benchmark
                self.peak = max(self.peak, *self.client.run(rss).values())
            time.sleep(0.1)

    def __enter__(self) -> PeakMemory:
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def run(sizes: list[int], workers: int, cart_sizes: list[int], policies: list[str], compress: bool) -> None:
    from distributed import Client, LocalCluster

    warnings.simplefilter("ignore")
    orig, syn, schema = _load()
    in_memory = Executor(policy="memory")
    ref = utility_gen(orig, syn, method="logit", vars=VARS, maxorder=1, schema=schema, compress=False,
                      executor=in_memory)  # fmt: skip
    ref_coef = ref.fits[0].coefficients
    print(f"{'rows':>9} {'method':>7} {'policy':>8} {'seconds':>8} {'R s':>6} {'R/ours':>7} {'peak GiB':>9} "
          f"{'max|dcoef|':>11}")  # fmt: skip
    with (
        LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None) as cluster,
        Client(cluster) as client,
    ):
        client.run(lambda: __import__("pipeline.utility"))  # warm the imports on the workers
        for n in sizes:
            for policy in policies:
                o, s = tiled(orig, n), tiled(syn, n)
                with PeakMemory(client) as mem:
                    t0 = time.perf_counter()
                    res = utility_gen(o, s, method="logit", vars=VARS, maxorder=1, schema=schema, compress=compress,
                                      executor=Executor(client, policy=policy))  # fmt: skip
                    secs = time.perf_counter() - t0
                coef = res.fits[0].coefficients
                diff = float(np.nanmax(np.abs(coef - ref_coef)))
                if n <= 500_000 and policy != "memory":
                    mem_fit = utility_gen(o.compute(), s.compute(), method="logit", vars=VARS, maxorder=1,
                                          schema=schema, compress=False, executor=in_memory)  # fmt: skip
                    diff = max(diff, float(np.nanmax(np.abs(coef - mem_fit.fits[0].coefficients))))
                r = R_SECONDS.get(n)
                ratio = f"{r / secs:7.1f}" if r else "    n/a"
                print(f"{n:>9} {'logit':>7} {policy:>8} {secs:8.2f} {r or float('nan'):6.1f} {ratio} "
                      f"{mem.peak / 2**30:9.2f} {diff:11.2e}  pMSE={res['pMSE'][0]:.6g}", flush=True)  # fmt: skip
        for n in cart_sizes:
            o, s = tiled(orig, n).compute(), tiled(syn, n).compute()
            t0 = time.perf_counter()
            res = utility_gen(o, s, method="cart", vars=VARS, resamp_method="none", schema=schema, executor=in_memory)
            secs = time.perf_counter() - t0
            print(f"{n:>9} {'cart':>7} {'memory':>8} {secs:8.2f} {'':>6} {'':>7} {'':>9} {'':>11}  "
                  f"pMSE={res['pMSE'][0]:.6g} leaves={res.fits[0]['n_leaves']}", flush=True)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[50_000, 500_000, 5_000_000])
    parser.add_argument("--cart-sizes", type=int, nargs="*", default=[50_000, 500_000])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--policies", nargs="+", default=["blocks", "auto"], choices=["blocks", "auto", "memory"])
    parser.add_argument("--no-compress", action="store_true", help="fit every record (no merging of duplicates)")
    args = parser.parse_args()
    run(args.sizes, args.workers, args.cart_sizes, args.policies, not args.no_compress)


if __name__ == "__main__":
    main()
