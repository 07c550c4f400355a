"""Benchmark of utility_synds (synthpop 1.2-1's utility.synds): cart + logit with the pairwise null.

The bundled SD2011 subset and its five CART syntheses are tiled to ``n`` rows per set (the
partitions are generated on the workers and persisted before the clock starts), then

    utility_synds(original, synthetic_1..5, method=["cart", "logit"], maxorder=1,
                  vars=["sex", "age", "edu", "marital", "income"], null_utility=True)

runs on a LocalCluster: 5 comparisons with the original and 5 x 5 null pairs, two methods
each, i.e. 60 independent fits, one task each; every data set is assembled once on a worker
(nothing is gathered on the client).  Reported: wall, CPU (driver + workers), peak resident
memory per worker and the load average (benchmarks/harness.py), beside R's time for the same
call.

R anchors (:data:`R_SECONDS`): synthpop 1.2-1's own ``utility.synds`` source with R 4.2.2 and
rpart 4.1.19 (Debian packages), the same data and call, one process, measured on the 2-core
development machine under a load average of 4-11 (2026-12-01): 5,000 rows per set 31.2 s
elapsed / 19.8 s CPU, 50,000 rows 472.8 s / 374.8 s; 500,000 rows was not run (over an hour).
R's cart values and null summary equal the port's; its logit fit of set 5 breaks down
(docs/utility_synds.md).  Tiling repeats records, which the logit fit merges exactly (frequency
weights); R fits every record.

Usage::

    .venv/bin/python benchmarks/bench_utility_synds.py [--sizes 5000 50000 500000] [--workers 2] [--repeat 1]
"""

from __future__ import annotations

import argparse
import warnings
from importlib import resources

import dask.dataframe as dd
import numpy as np
import pandas as pd
from distributed import Client, LocalCluster
from harness import Bench

from pipeline.data.schema import Schema
from pipeline.evaluation.execution import Executor
from pipeline.utility.api import utility_synds

VARS = ["sex", "age", "edu", "marital", "income"]
PARTITION_ROWS = 250_000
#: R 4.2.2 + synthpop 1.2-1 utility.synds, same call: rows per set -> (elapsed s, CPU s); see the docstring
R_SECONDS = {5_000: (31.2, 19.8), 50_000: (472.8, 374.8)}


def _load() -> tuple[list[pd.DataFrame], Schema]:
    base = resources.files("pipeline.datasets")
    schema = Schema.from_json(base / "sd2011_subset.schema.json")

    def read(name: str) -> pd.DataFrame:
        raw = pd.read_csv(base / name, dtype=str, keep_default_na=False, na_values=[""])
        return schema.apply(raw, name)[VARS]

    names = ["sd2011_subset.csv", *(f"sd2011_cart_syn{i}.csv" for i in range(1, 6))]
    return [read(n) for n in names], schema.select(VARS)


def _tile_part(bounds: tuple[int, int], base: pd.DataFrame) -> pd.DataFrame:
    start, stop = bounds
    return base.iloc[np.arange(start, stop) % len(base)].reset_index(drop=True)


def tiled(base: pd.DataFrame, n: int) -> dd.DataFrame:
    """``base`` repeated to ``n`` rows, generated partition by partition on the workers."""
    bounds = [(s, min(n, s + PARTITION_ROWS)) for s in range(0, n, PARTITION_ROWS)]
    return dd.from_map(_tile_part, bounds, base=base, meta=base.head(0), enforce_metadata=False)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[50_000, 500_000])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    frames, schema = _load()
    with (
        LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster,
        Client(cluster) as client,
    ):
        bench = Bench(client)
        executor = Executor(client)
        for n in args.sizes:
            inputs = bench.ready(*[tiled(f, n) for f in frames])

            def call(inputs: list = inputs) -> object:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    return utility_synds(
                        inputs[0], inputs[1:], ["cart", "logit"], schema=schema, vars=VARS, maxorder=1,
                        null_utility=True, executor=executor,
                    )  # fmt: skip

            measured, result = bench.time(call, inputs, repeat=args.repeat)
            util = result.utility_summary["Mean"]
            ratio = result.nullstats_summary["Mean ratio"]
            print(f"n = {n:>9,} per set, m = 5, 60 fits: {measured.line()}")
            if n in R_SECONDS:
                r_wall, r_cpu = R_SECONDS[n]
                print(
                    f"    R: {r_wall:.1f} s elapsed, {r_cpu:.1f} s CPU -> wall x{r_wall / measured.wall:.1f}, "
                    f"CPU x{r_cpu / measured.cpu:.1f} in favour of the port"
                )
            else:
                print("    R: not measured at this size")
            print(
                f"    pMSE mean cart {util['cart']:.6g}, logit {util['logit']:.6g}; "
                f"null Mean ratio cart {ratio['cart']:.4g}, logit {ratio['logit']:.4g}"
            )
            del inputs


if __name__ == "__main__":
    main()
