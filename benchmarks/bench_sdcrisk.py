"""sdc_risk at register scale (issue 38): sdcMicro's risk measures of one file on key blocks.

Data: the generated population register (``pipeline.datasets.register``), 8 keys (sex, single
years of age, 300 municipalities, edu, marital, employment, hhsize, tenure), health as the
sensitive variable.  Rows printed:

* ``frequencies``: fk/Fk, individual and global risk, threshold, k-anonymity (k = 2, 3, 5) and
  l-diversity of health, the register alone on a ``--workers``-worker LocalCluster, inputs
  persisted (goal: < 30 s at 5M records);
* ``suda2``: SUDA2 / DIS-SUDA with a missing dimension of 3 (all MSUs of up to 3 keys) on the
  same cluster (goal: < 2 min at 1M records);
* ``in memory``: both in the driver alone (pandas), for the ratio cluster / memory.

sdcMicro's own time on the same data is measured with ``benchmarks/sdcmicro_timing.R`` in an R
environment with sdcMicro 5.8.0 (this machine has no R); the script reads the CSV that
``--export-csv`` writes.

    python benchmarks/bench_sdcrisk.py --rows 5000000 --workers 2
"""

from __future__ import annotations

import argparse
import os
from functools import partial
from pathlib import Path

from harness import Bench, bench_client

from pipeline.data.dataset import read_dataset
from pipeline.datasets.register import write_register
from pipeline.evaluation.data import as_eval_data
from pipeline.evaluation.execution import Executor
from pipeline.risk.sdcrisk.measure import SdcRiskMeasure
from pipeline.risk.sdcrisk.result import SdcRiskResult

KEYS = ["sex", "age", "municipality", "edu", "marital", "employment", "hhsize", "tenure"]
SENSITIVE = ["health"]
GOALS = {"frequencies": 30.0, "suda2": 120.0}
SETTINGS = {
    "frequencies": {"keys": KEYS, "sensitive": SENSITIVE, "suda": False},
    "suda2": {"keys": KEYS, "suda": True, "missing_dimension": 3, "k": [2]},
}


def _run(name: str, frame: object, schema: object, executor: Executor) -> SdcRiskResult:
    """One setting's measure on the register alone."""
    data = as_eval_data(frame, (), schema, require_synthetic=False)
    return SdcRiskMeasure(SETTINGS[name]).run(data, executor)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--memory-limit", default="6GiB")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--only", choices=sorted(SETTINGS), action="append")
    parser.add_argument(
        "--data",
        type=Path,
        default=Path(os.environ.get("SDC_PIPELINE_CACHE", "~/.cache/sdc-pipeline")).expanduser() / "demo",
    )
    parser.add_argument("--export-csv", type=Path, help="also write the keys as CSV for sdcmicro_timing.R")
    args = parser.parse_args()
    data = write_register(args.data, args.rows)
    schema = data.schema
    if args.export_csv:
        frame = read_dataset(data.path("original"), schema=data.schema_path).frame[KEYS + SENSITIVE].compute()
        frame.to_csv(args.export_csv, index=False)
    wanted = args.only or sorted(SETTINGS)
    print(f"sdc_risk, register {args.rows:,} records x {len(KEYS)} keys")
    with bench_client(args.workers, args.memory_limit) as client:
        bench = Bench(client)
        (frame,) = bench.ready(read_dataset(data.path("original"), schema=data.schema_path).frame)
        print(f"inputs on the workers in {bench.ready_seconds:.1f} s")
        cluster = Executor(client, policy="blocks")
        for name in wanted:
            m, result = bench.time(partial(_run, name, frame, schema, cluster), inputs=[frame], repeat=args.repeat)
            ok = "met" if m.wall < GOALS[name] else "NOT met"
            f = result.original
            print(f"{name:12s} {args.workers} workers: {m.line()}  goal < {GOALS[name]:.0f} s: {ok}")
            print(f"{'':12s} global risk {f.risk['global_risk']:.6f}, combinations {len(f.key_table):,}")
    local = read_dataset(data.path("original"), schema=data.schema_path).frame.compute()
    memory, bench = Executor(policy="memory"), Bench()
    for name in wanted:
        m, _ = bench.time(partial(_run, name, local, schema, memory), repeat=args.repeat)
        print(f"{name:12s} in memory: {m.line()}")


if __name__ == "__main__":
    main()
