"""Benchmark of utility_gen at scale against the R timings quoted in issue 5.

SD2011 subset (bundled demo data) and its first CART synthesis scaled to n records each with
the one benchmark generator (``pipeline.datasets.scaled``: the bundled sets repeated, integers
+-1, income x (1 +- 2 %) rounded, NA and -8 left alone; written once as Parquet), read and
persisted on a LocalCluster and waited for before the clock starts (``harness.Bench``), then

    utility_gen(original, synthetic, method="logit", maxorder=1,
                vars=["sex", "age", "placesize", "income"])          # cont.na income = -8

with the executor policy asked for (``blocks``: IRLS by rounds over partitions; ``auto``: in
memory up to the executor's in-memory threshold).  R's synthpop took 2.2 s at 50k and 16.4 s
at 500k and could not run at 5M.  Up to 500k the coefficients are compared with the in-memory
fit of the same records.  CART (rpart port, in memory, one tree per set, no resampling) is
timed at the ``--cart-sizes``.  Every line prints wall, CPU (driver + workers), peak RSS per
worker and the load average (best of ``--repeat``).

``--small M [M ...]`` times instead the in-memory call of the Hornby & Hu m-study (issue 15):
CEdata (5,571 records) against M of its bundled Income syntheses (cycled), logit, maxorder 1,
``vars = [Urban, Tenure, Educ, Marital, Income]`` (113 design columns), in this process on one
core, and prints the CPU milliseconds per synthetic set.

Usage::

    .venv/bin/python benchmarks/bench_utility.py [--sizes 50000 500000 5000000] [--workers 2]
    .venv/bin/python benchmarks/bench_utility.py --small 1 20 --repeat 5
"""

from __future__ import annotations

import argparse
import os
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from harness import Bench, bench_client

from pipeline.data.dataset import read_dataset
from pipeline.data.schema import Schema
from pipeline.datasets import demo_path, load_demo
from pipeline.datasets.scaled import family_schema, scaled_frames, write_scaled
from pipeline.evaluation.execution import Executor
from pipeline.utility import utility_gen

VARS = ["sex", "age", "placesize", "income"]
R_SECONDS = {50_000: 2.2, 500_000: 16.4}
STUDY_VARS = ["Urban", "Tenure", "Educ", "Marital", "Income"]


def small(sets: list[int], repeat: int) -> None:
    """utility_gen logit of the m-study in memory: CPU milliseconds per synthetic set."""
    warnings.simplefilter("ignore")
    ce = load_demo("cedata")
    original = ce.to_pandas()
    syn_schema = Schema.from_json(demo_path("cedata_syn.schema.json"))
    bundled = [syn_schema.apply(pd.read_csv(demo_path(f"cedata_syn_income_{i}.csv")), "cedata_syn")
               for i in range(1, 6)]  # fmt: skip
    in_memory = Executor(policy="memory")
    for m in sets:
        syns = [bundled[i % len(bundled)] for i in range(m)]
        call = lambda syns=syns: utility_gen(original, syns, method="logit", vars=STUDY_VARS, maxorder=1,  # noqa: E731
                                             schema=ce.schema, executor=in_memory)  # fmt: skip
        call()  # compiled kernels loaded, imports done
        t, res = Bench().time(call, repeat=repeat)
        print(f"m = {m:>3} CEdata logit in memory: {t.line()}  -> {1000 * t.cpu / m:.1f} ms CPU per set  "
              f"S_pMSE[0]={res['S_pMSE'][0]:.6g}")  # fmt: skip


def run(args: argparse.Namespace) -> None:
    warnings.simplefilter("ignore")
    in_memory = Executor(policy="memory")
    schema = family_schema("sd2011")
    with bench_client(args.workers, args.memory_limit) as client:
        bench = Bench(client)
        client.run(lambda: __import__("pipeline.utility"))  # warm the imports on the workers
        for n in args.sizes:
            data = write_scaled(args.data, "sd2011", n)
            frames = [read_dataset(data.path(x), schema=data.schema_path).frame for x in ("original", "syn1")]
            o, s = bench.ready(*frames)
            for policy in args.policies:
                ex = Executor(client, policy=policy)
                m, res = bench.time(lambda o=o, s=s, ex=ex: utility_gen(
                    o, s, method="logit", vars=VARS, maxorder=1, schema=schema, compress=not args.no_compress,
                    executor=ex), inputs=[o, s], repeat=args.repeat)  # fmt: skip
                check = ""
                if n <= 500_000:
                    po, ps = client.compute([o, s], sync=True)
                    ref = utility_gen(po, ps, method="logit", vars=VARS, maxorder=1, schema=schema,
                                      compress=False, executor=in_memory)  # fmt: skip
                    diff = float(np.nanmax(np.abs(res.fits[0].coefficients - ref.fits[0].coefficients)))
                    check = f"  max|dcoef| vs in memory {diff:.1e}"
                r = R_SECONDS.get(n)
                ratio = f"R {r} s, x{r / m.wall:.1f}" if r else "R cannot"
                print(f"{n:>9,} logit {policy:>6}: {m.line()}  ({ratio})  pMSE={res['pMSE'][0]:.6g}{check}",
                      flush=True)  # fmt: skip
            client.cancel([o, s])
    for n in args.cart_sizes:
        po, ps = scaled_frames("sd2011", n)
        m, res = Bench().time(
            lambda po=po, ps=ps: utility_gen(
                po, ps, method="cart", vars=VARS, resamp_method="none", schema=schema, executor=in_memory
            ),
            repeat=1,
        )
        print(f"{n:>9,} cart memory: {m.line()}  pMSE={res['pMSE'][0]:.6g} leaves={res.fits[0]['n_leaves']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[50_000, 500_000, 5_000_000])
    parser.add_argument("--cart-sizes", type=int, nargs="*", default=[50_000, 500_000])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--memory-limit", default="2GiB", help="per worker")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--policies", nargs="+", default=["blocks", "auto"], choices=["blocks", "auto", "memory"])
    parser.add_argument("--no-compress", action="store_true", help="fit every record (no merging of duplicates)")
    parser.add_argument(
        "--small",
        type=int,
        nargs="+",
        metavar="M",
        help="instead: the m-study's in-memory call (CEdata, M synthetic sets), ms CPU per set",
    )
    parser.add_argument("--data", type=Path, default=Path(os.environ.get(
        "SDC_BENCH_DATA", Path.home() / ".cache" / "sdc-pipeline" / "bench")))  # fmt: skip
    args = parser.parse_args()
    if args.small:
        small(args.small, args.repeat)
    else:
        run(args)


if __name__ == "__main__":
    main()
