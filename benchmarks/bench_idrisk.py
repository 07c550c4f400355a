"""Benchmark: identification risk on CEdata scaled to 50k, 500k and 5M rows, against the R package.

Scenario (issue 4): known Urban, Marital; synthesised Expenditure, Income; percentage radius
r = 0.1, open intervals.  The R package (IdentificationRiskCalculation, O(n²) C++ loop) took
0.27 s at 5k and 14.9 s at 50k on this machine; larger n are extrapolated quadratically.

Data: the one benchmark generator (``pipeline.datasets.scaled``): CEdata and its partially
synthetic set (Expenditure and Income synthesised) repeated to n rows, Age +-1, money x
(1 +- 2 %) rounded with the same draws for both sets (so they stay row-aligned), written once
as Parquet.  The sets are read, persisted and waited for before the clock starts
(``harness.Bench``); each line prints wall, CPU (driver + workers), peak RSS per worker and the
load average.  Up to ``--pandas-up-to`` the in-process pandas path is timed too and must agree.

Run: ``python benchmarks/bench_idrisk.py [--sizes 50000 500000 5000000] [--grid-at 500000]``
"""

from __future__ import annotations

import argparse
import os
import warnings
from pathlib import Path

import numpy as np
from harness import Bench, bench_client

from pipeline.data.dataset import read_dataset
from pipeline.datasets.scaled import family_schema, scaled_frames, write_scaled
from pipeline.evaluation.execution import Executor
from pipeline.risk.idrisk import identification_risk, radius_sweep

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[50_000, 500_000, 5_000_000])
    parser.add_argument("--grid-at", type=int, default=500_000, help="size for the 6x6 radius grid (0 = skip)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--memory-limit", default="2GiB", help="per worker")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--pandas-up-to", type=int, default=500_000, help="also time the pandas path up to this size")
    parser.add_argument("--data", type=Path, default=Path(os.environ.get(
        "SDC_BENCH_DATA", Path.home() / ".cache" / "sdc-pipeline" / "bench")))  # fmt: skip
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    schema = family_schema("cedata")
    with bench_client(args.workers, args.memory_limit) as client:
        bench = Bench(client)
        in_memory = Executor(client, policy="memory")

        def on_blocks(n: int) -> Executor:
            """Key blocks on the cluster, N_BLOCKS of them for n records."""
            return Executor(client, policy="blocks", block_rows=-(-n // N_BLOCKS))

        # warm-up: compile/load the numba kernels on every worker and in this process
        wo, ws = bench.ready(*scaled_frames("cedata", 20_000))
        identification_risk(wo, [ws], KNOWN, SYNTHESISED, 0.1, schema=schema, executor=on_blocks(20_000))
        identification_risk(wo, [ws], KNOWN, SYNTHESISED, 0.1, schema=schema, executor=in_memory)
        for n in args.sizes:
            data = write_scaled(args.data, "cedata", n)
            frames = [read_dataset(data.path(x), schema=data.schema_path).frame for x in ("original", "syn1")]
            orig, syn = bench.ready(*frames)
            m, res = bench.time(lambda o=orig, s=syn, n=n: identification_risk(
                o, [s], KNOWN, SYNTHESISED, 0.1, schema=schema, executor=on_blocks(n)), inputs=[orig, syn],
                repeat=args.repeat)  # fmt: skip
            r_sec, source = r_seconds(n)
            print(f"{n:>10,} Dask key blocks: {m.line()}  R {r_sec:,.1f} s ({source}) x{r_sec / m.wall:,.0f}  "
                  f"exp.risk {res.exp_risk[0]:.3f}", flush=True)  # fmt: skip
            if n <= args.pandas_up_to:
                po, ps = client.compute([orig, syn], sync=True)
                pm, pres = bench.time(lambda o=po, s=ps: identification_risk(
                    o, [s], KNOWN, SYNTHESISED, 0.1, schema=schema, executor=in_memory),
                    repeat=args.repeat)  # fmt: skip
                assert np.array_equal(pres.c, res.c), "in-memory and key-block results disagree"
                print(f"{n:>10,} pandas in memory: {pm.line()}  x{r_sec / pm.wall:,.0f}", flush=True)
            if n == args.grid_at:
                gm, sweep = bench.time(lambda o=orig, s=syn, n=n: radius_sweep(
                    o, [s], KNOWN, SYNTHESISED, grid={"Income": GRID, "Expenditure": GRID}, schema=schema,
                    executor=on_blocks(n)), inputs=[orig, syn], repeat=1)  # fmt: skip
                check = sweep.measure("exp.risk")[sweep.labels.index("r_Income=0.1;r_Expenditure=0.1"), 0]
                assert check == res.exp_risk[0], "sweep and single radius disagree"
                print(f"{'':>10} 6x6 grid: {gm.line()} = {gm.wall / m.wall:.2f} x the single radius (target < 3 x); "
                      f"r* = {sweep.r_star_setting}", flush=True)  # fmt: skip
            client.cancel([orig, syn])


if __name__ == "__main__":
    main()
