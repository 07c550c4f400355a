"""Benchmark: identification risk on CEdata scaled to 50k, 500k and 5M rows, against the R package.

Scenario (issue 4): known Urban, Marital; synthesised Expenditure, Income; percentage radius
r = 0.1, open intervals.  The R package (IdentificationRiskCalculation, O(n²) C++ loop) took
0.27 s at 5k and 14.9 s at 50k on this machine; 500k is extrapolated quadratically (~1500 s).

Data: the bundled CEdata (5571 rows) resampled with replacement to n rows, with Expenditure and
Income jittered by +-0.5 % (so a larger survey has more distinct values, zeros stay zero).  The
partially synthetic set keeps Age, Urban, Marital, Tenure, Educ and replaces Expenditure and
Income by the values of a random record of the same Urban x Marital block times a log-normal
factor (sd 0.1), a stand-in for a CART synthesis.  Partitions are generated on the workers and
persisted before timing, so the times cover the measure itself: key-block shuffle, counting,
and gathering c_i and T_i of every record to the client.

Run: ``python benchmarks/bench_idrisk.py [--sizes 50000 500000 5000000] [--grid-at 500000]``
"""

from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
from distributed import Client, LocalCluster

from pipeline.data.schema import Schema
from pipeline.evaluation.execution import Executor
from pipeline.risk.idrisk import identification_risk, radius_sweep

DATA = Path(__file__).resolve().parents[1] / "pipeline" / "datasets"
KNOWN = ["Urban", "Marital"]
SYNTHESISED = ["Expenditure", "Income"]
GRID = [0.01, 0.025, 0.05, 0.1, 0.2, 0.3]
R_SECONDS = {5_000: 0.27, 50_000: 14.9}  # measured with the R package on this machine
N_BLOCKS = 16  # 10 Urban x Marital keys: enough blocks to spread them over the workers


def r_seconds(n: int) -> tuple[float, str]:
    """The R package's time: measured where available, else quadratic from the 50k time."""
    if n in R_SECONDS:
        return R_SECONDS[n], "measured"
    return R_SECONDS[50_000] * (n / 50_000) ** 2, "O(n^2) estimate"


def _chunk(base: pd.DataFrame, schema: Schema, rows: int, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    orig = base.iloc[rng.integers(0, len(base), rows)].reset_index(drop=True)
    for v in SYNTHESISED:
        orig[v] = orig[v] * rng.uniform(0.995, 1.005, rows)
    syn = orig.copy()
    block = orig["Urban"].cat.codes.to_numpy() * 10 + orig["Marital"].cat.codes.to_numpy()
    donor = np.lexsort((rng.random(rows), block))  # a random record of the same block
    order = np.argsort(block, kind="stable")
    for v in SYNTHESISED:
        values = np.empty(rows)
        values[order] = orig[v].to_numpy()[donor]
        syn[v] = values * rng.lognormal(0.0, 0.1, rows)
    return schema.apply(orig), schema.apply(syn)


def cedata_schema() -> Schema:
    return Schema.from_json(DATA / "cedata_syn.schema.json")


def scaled_cedata(n: int, partition_rows: int = 250_000) -> tuple[dd.DataFrame, dd.DataFrame]:
    """Original and row-aligned synthetic CEdata of n rows, generated partition by partition."""
    schema = cedata_schema()
    base = schema.apply(pd.read_csv(DATA / "cedata.csv", dtype=str))
    sizes = [partition_rows] * (n // partition_rows) + ([n % partition_rows] if n % partition_rows else [])
    pairs = [dask.delayed(_chunk, nout=2)(base, schema, rows, seed) for seed, rows in enumerate(sizes)]
    meta = schema.apply(base.head(0))
    orig = dd.from_delayed([p[0] for p in pairs], meta=meta, verify_meta=False)
    syn = dd.from_delayed([p[1] for p in pairs], meta=meta, verify_meta=False)
    return orig, syn


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[50_000, 500_000, 5_000_000])
    parser.add_argument("--grid-at", type=int, default=500_000, help="size for the 6x6 radius grid (0 = skip)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--pandas-up-to", type=int, default=500_000, help="also time the in-process pandas path up to this size"
    )
    args = parser.parse_args()

    schema = cedata_schema()
    with (
        LocalCluster(n_workers=args.workers, threads_per_worker=1, dashboard_address=":0") as cluster,
        Client(cluster) as client,
    ):
        # each p2p shuffle logs two WARNING lines from the in-process scheduler
        logging.getLogger("distributed.shuffle._scheduler_plugin").setLevel(logging.ERROR)
        in_memory = Executor(client, policy="memory")

        def on_blocks(n: int) -> Executor:
            """Key blocks on the cluster, N_BLOCKS of them for n records."""
            return Executor(client, policy="blocks", block_rows=-(-n // N_BLOCKS))

        # warm-up: compile/load the numba kernels on every worker and in this process
        o, s = scaled_cedata(20_000, 10_000)
        identification_risk(o, [s], KNOWN, SYNTHESISED, 0.1, schema=schema, executor=on_blocks(20_000))
        identification_risk(o, [s], KNOWN, SYNTHESISED, 0.1, schema=schema, executor=in_memory)
        radius_sweep(
            o,
            [s],
            KNOWN,
            SYNTHESISED,
            grid={"Income": GRID[:2], "Expenditure": GRID[:2]},
            schema=schema,
            executor=on_blocks(20_000),
        )

        print(
            f"{'n':>10} {'Dask (s)':>9} {'R (s)':>9} {'R source':>16} {'R/Dask':>8} "
            f"{'pandas (s)':>10} {'R/pandas':>9} {'exp.risk':>12} {'s':>8}"
        )
        single: dict[int, float] = {}
        for n in args.sizes:
            orig, syn = dask.persist(*scaled_cedata(n))
            res, sec = timed(
                lambda o=orig, s=syn, n=n: identification_risk(
                    o, [s], KNOWN, SYNTHESISED, 0.1, schema=schema, executor=on_blocks(n)
                )
            )
            single[n] = sec
            r_sec, source = r_seconds(n)
            local = "-"
            local_ratio = "-"
            if n <= args.pandas_up_to:
                po, ps = dask.compute(orig, syn)
                pres, psec = timed(
                    lambda o=po, s=ps: identification_risk(
                        o, [s], KNOWN, SYNTHESISED, 0.1, schema=schema, executor=in_memory
                    )
                )
                assert np.array_equal(pres.c, res.c), "in-memory and key-block results disagree"
                local, local_ratio = f"{psec:.2f}", f"{r_sec / psec:.0f}"
            print(
                f"{n:>10} {sec:>9.2f} {r_sec:>9.1f} {source:>16} {r_sec / sec:>8.1f} "
                f"{local:>10} {local_ratio:>9} {res.exp_risk[0]:>12.3f} {res.s[0]:>8d}"
            )
            if n == args.grid_at:
                sweep, gsec = timed(
                    lambda o=orig, s=syn, n=n: radius_sweep(
                        o,
                        [s],
                        KNOWN,
                        SYNTHESISED,
                        grid={"Income": GRID, "Expenditure": GRID},
                        schema=schema,
                        executor=on_blocks(n),
                    )
                )
                check = sweep.measure("exp.risk")[sweep.labels.index("r_Income=0.1;r_Expenditure=0.1"), 0]
                assert check == res.exp_risk[0], "sweep and single radius disagree"
                print(
                    f"{'':>10} 6x6 grid at n={n}: {gsec:.2f} s = {gsec / sec:.2f} x the single radius "
                    f"(target < 3 x); r* = {sweep.r_star_setting}"
                )
            del orig, syn


if __name__ == "__main__":
    main()
