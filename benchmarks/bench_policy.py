"""``policy: auto`` by cost (issue 34): every unit of the register tasks on both paths, the measured
cost table of :mod:`pipeline.evaluation.cost`, and auto's choice against the better path.

For each measure unit of ``tasks/register_holdout.yaml`` (its holdout baselines included, as a run
evaluates them) and the ``sdc_risk`` unit of ``tasks/register.yaml`` (no holdout), at each size:

* **in memory**: the driver, one thread, the records as pandas frames; CPU, and the driver's peak
  resident memory above its level before the call (working memory per record);
* **collecting** the persisted inputs to the driver (what the in-memory path of a run pays first);
* **on the cluster** (``--workers`` processes x 1 thread, inputs persisted and laid out as a run
  lays them out, ``policy: blocks``): wall, the driver's (with its in-process scheduler) and the
  workers' CPU, and the bytes the workers sent to other workers and to the driver (the frames of
  every transfer in Dask's transfer log, :func:`harness.bytes_sent`);
* **auto**: the path ``Executor(policy="auto")`` picks for the unit and its wall against the better
  of the two measured paths (in memory with the collect, or the cluster); the goal is at most 1.10.

Then the :class:`~pipeline.evaluation.cost.PathCost` of every measure type, fitted over the sizes
(CPU per million records of every data set the unit reads; the driver's and the workers' cost
as fixed + per million), to paste into ``pipeline/evaluation/cost.py`` with this command and its date.

Usage::

    .venv/bin/python benchmarks/bench_policy.py --rows 1000000 5000000 --workers 2 --repeat 2
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness import Bench, PeakSampler, bench_client, bytes_sent

from pipeline.data.dataset import read_dataset
from pipeline.datasets.register import write_register, write_register_holdout
from pipeline.evaluation import baseline
from pipeline.evaluation.base import common_key
from pipeline.evaluation.cost import COSTS, PathCost, predicted_seconds
from pipeline.evaluation.data import EvalData, as_eval_data
from pipeline.evaluation.execution import Executor
from pipeline.tasks import Unit, expand, load_task

ROOT = Path(__file__).resolve().parents[1]


def task_units() -> list[tuple[Unit, bool]]:
    """(unit, reads the holdout): the register_holdout task's units and register.yaml's sdc_risk."""
    hashes: dict = collections.defaultdict(str)
    units = [(u, True) for u in expand(load_task(ROOT / "tasks" / "register_holdout.yaml"), hashes)]
    units += [(u, False) for u in expand(load_task(ROOT / "tasks" / "register.yaml"), hashes) if u.type == "sdc_risk"]
    return units


def _rows(result: Any) -> list[tuple]:
    return [(r.synthetic, r.measure, repr(r.params), r.role, r.summary, r.value) for r in result.rows()]


def _same(got: list[tuple], expected: list[tuple]) -> bool:
    """The same rows, values equal up to float rounding (a fit's sums in another order)."""
    if [r[:-1] for r in got] != [r[:-1] for r in expected]:
        return False
    values = np.array([[r[-1], e[-1]] for r, e in zip(got, expected, strict=True)], dtype=float).reshape(-1, 2)
    return bool(np.allclose(values[:, 0], values[:, 1], rtol=1e-9, atol=0, equal_nan=True))


def _records(data: EvalData) -> int:
    return sum(len(f) for f in (*data.frames, *([] if data.holdout is None else [data.holdout])))


def measure_size(rows: int, args: argparse.Namespace, units: list[tuple[Unit, bool]]) -> list[dict[str, Any]]:
    """Every unit on both paths at ``rows`` records per set (see the module docstring)."""
    data = write_register(args.data, rows)
    hold = write_register_holdout(args.data, rows)
    frames = [read_dataset(data.path(n), schema=data.schema_path).frame for n in ("original", "syn1")]
    frames.append(read_dataset(hold.path("holdout"), schema=data.schema_path).frame)
    pandas = [f.compute().reset_index(drop=True) for f in frames]  # read, not timed

    def eval_data(fs: list[Any], with_holdout: bool) -> EvalData:
        return as_eval_data(fs[0], [fs[1]], data.schema, holdout=fs[2] if with_holdout else None)

    out: list[dict[str, Any]] = []
    in_memory = Executor(None, policy="memory")
    if args.repeat == 1:  # the driver's first calls (imports, compiled kernels) on a small slice, not timed
        small = [f.iloc[:20_000] for f in pandas]
        for u, reads_holdout in units:
            baseline.evaluate(u.measure, eval_data(small, reads_holdout), in_memory, u.baseline)
    driver = psutil.Process(os.getpid())
    for u, reads_holdout in units:
        memory = eval_data(pandas, reads_holdout)
        before = driver.memory_info().rss
        with PeakSampler({"driver": driver}) as peak:
            run = partial(baseline.evaluate, u.measure, memory, in_memory, u.baseline)
            m, got = Bench().time(run, repeat=args.repeat)
        records = _records(memory)
        grew = max(0, peak.peak["driver"] - before)
        out.append({"unit": u.label, "type": u.type, "rows": rows, "records": records, "memory": m,
                    "memory_bytes": grew / records, "expected": _rows(got)})  # fmt: skip
        print(f"  {u.label}: in memory {m.line()}", flush=True)
    with bench_client(args.workers, args.memory_limit) as client:
        bench = Bench(client)
        persisted = bench.ready(*frames)
        collect = [  # a new executor each time: a run collects its inputs once
            bench.time(lambda h=h: Executor(client).collect(eval_data(persisted, h)), repeat=1)[0]
            for h in (False, True)
        ]
        print(f"  collecting the inputs to the driver (with the holdout): {collect[1].line()}", flush=True)
        laid = Executor(client, policy="blocks")
        with_holdout = eval_data(persisted, True)
        blockwise = [u for u, _ in units if u.measure.block_keys(with_holdout)]
        key = common_key([u.measure.block_keys(with_holdout) for u in blockwise])
        variables = {v for u in blockwise for v in u.measure.params.variables()}
        selected = with_holdout.select([v for v in with_holdout.columns if v in variables])
        sent = bytes_sent(client)
        m, layout = bench.time(partial(laid.lay_out, selected, key), repeat=1)
        layout_bytes = bytes_sent(client) - sent
        print(f"  the layout by {' x '.join(key)} ({layout.blocks} blocks; once per task): {m.line()}; "
              f"{layout_bytes / _records(with_holdout):.1f} bytes sent per record", flush=True)  # fmt: skip
        auto = Executor(client, policy="auto")
        for row, (u, reads_holdout) in zip(out, units, strict=True):
            on_cluster = eval_data(persisted, reads_holdout)
            sent = bytes_sent(client)
            m, got = bench.time(partial(baseline.evaluate, u.measure, on_cluster, laid, u.baseline), repeat=args.repeat)
            row["bytes_sent"] = (bytes_sent(client) - sent) / args.repeat
            row["cluster"], row["collect"] = m, collect[reads_holdout]
            row["same"] = _same(_rows(got), row.pop("expected"))
            row["auto"] = "memory" if auto.for_measure(u.type).in_memory(on_cluster) else "blocks"
            paths = {"memory": row["memory"].wall + row["collect"].wall, "blocks": m.wall}
            row["auto_ratio"] = paths[row["auto"]] / min(paths.values())
            cost = COSTS.get(u.type)
            row["predicted"] = predicted_seconds(cost, row["records"], args.workers)["blocks"] if cost else None
            model = f"model {row['predicted']:.2f} s" if cost else "no cost in the table"
            print(f"  {u.label}: cluster {m.line()}; {model}; {row['bytes_sent'] / row['records']:.1f} bytes sent "
                  f"per record; {'same rows' if row['same'] else 'ROWS DIFFER'}; auto: {row['auto']}, "
                  f"{row['auto_ratio']:.2f}x the better path", flush=True)  # fmt: skip
        row = {"layout": m, "collect": collect[1], "records": _records(with_holdout), "rows": rows}
        out.append(row)
    return out


def _through_origin(n: np.ndarray, values: list[float]) -> float:
    """The least-squares slope of ``values`` on ``n`` through the origin (cost per million records)."""
    return float(np.dot(n, values) / np.dot(n, n))


def _fixed_and_slope(n: np.ndarray, values: list[float]) -> tuple[float, float]:
    """CPU per call and per million records, fitted over the sizes (least squares, both >= 0; the
    per-million slope through the origin when one size was measured or the intercept is negative)."""
    if len(set(n.tolist())) > 1:
        slope, fixed = np.polyfit(n, values, 1)
        if fixed >= 0 and slope >= 0:
            return round(float(fixed), 3), round(float(slope), 3)
    return 0.0, round(max(0.0, _through_origin(n, values)), 3)


def fitted_costs(results: list[dict[str, Any]]) -> dict[str, PathCost]:
    """Each measure type's :class:`PathCost` fitted over the sizes measured (least squares; the
    driver's CPU as fixed + per million records, fixed only when one size was measured)."""
    by_type: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    for r in results:
        if "type" in r:
            by_type[r["type"]].append(r)
    costs = {}
    for kind, rows in by_type.items():
        n = np.array([r["records"] / 1e6 for r in rows])
        driver_fixed, driver = _fixed_and_slope(n, [r["cluster"].cpu_driver for r in rows])
        workers_fixed, workers = _fixed_and_slope(n, [r["cluster"].cpu_workers for r in rows])
        costs[kind] = PathCost(
            memory=round(_through_origin(n, [r["memory"].cpu for r in rows]), 3),
            driver_fixed=driver_fixed,
            driver=driver,
            workers_fixed=workers_fixed,
            workers=workers,
            memory_bytes=round(max(r["memory_bytes"] for r in rows)),
        )
    return costs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--memory-limit", default="8GiB")
    parser.add_argument("--only", nargs="*", help="measure types to run (default: every unit)")
    parser.add_argument("--data", type=Path, default=Path.home() / ".cache" / "sdc-pipeline" / "demo")
    parser.add_argument("--json", type=Path, help="also write every measurement here (for docs/scaling.md)")
    args = parser.parse_args()
    units = [(u, h) for u, h in task_units() if not args.only or u.type in args.only]
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    print(f"register tasks' units, {args.workers} workers x 1 thread vs in memory (1 thread); {started}")
    results = []
    for rows in args.rows:
        print(f"{rows:,} records per set", flush=True)
        results += measure_size(rows, args, units)
    print(f"\nfitted costs (CPU-s per million records; paste into pipeline/evaluation/cost.py), load now "
          f"{os.getloadavg()[0]:.1f}:")  # fmt: skip
    for kind, cost in fitted_costs(results).items():
        print(f"    {kind!r}: {cost!r},  # in the table now: {COSTS.get(kind)!r}")
    if args.json:
        plain = [{k: v.as_dict() if hasattr(v, "as_dict") else v for k, v in r.items()} for r in results]
        args.json.write_text(json.dumps({"started": started, "workers": args.workers, "results": plain}, indent=1))
    collect = [r for r in results if "layout" in r]
    per_million = np.mean([r["collect"].cpu / (r["records"] / 1e6) for r in collect])
    print(f"  COLLECT = {per_million:.3f}  # CPU-s per million records collected (driver + workers)")


if __name__ == "__main__":
    main()
