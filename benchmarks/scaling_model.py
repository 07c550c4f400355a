"""The scaling model of docs/scaling.md from ``bench_policy.py --json`` measurements.

For every measure type: its cost fitted over the sizes measured (:func:`bench_policy.fitted_costs`),
the serial fraction (the driver's share of the cluster CPU: graph building, scheduling and result
assembly while the workers wait), the per-worker throughput (million records per worker CPU-second)
and the bytes the workers wrote per record; then the projected wall time of a task's units at
``--records`` records on each of ``--cores`` worker threads::

    T(n, c) = L(n, c) + sum_k [ D_k + d_k n + (V_k + w_k n) / c + b_k n / beta ]

with ``n`` in millions of records (every data set a unit reads), ``D_k + d_k n`` the driver's
CPU-seconds, ``V_k + w_k n`` the workers', ``b_k`` the bytes written per record, ``beta`` the
bandwidth of a worker's link (bytes per second; 0: one machine, no link term), ``L`` the layout
(same form, once per task).  The units are summed as if run one after the other (a run overlaps
them: an upper bound).

Usage::

    .venv/bin/python benchmarks/bench_policy.py --rows 1000000 5000000 --json /tmp/policy.json
    .venv/bin/python benchmarks/scaling_model.py /tmp/policy.json --records 112500000 --cores 4 8 32
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_policy import _fixed_and_slope, fitted_costs


def load(paths: list[Path]) -> list[dict[str, Any]]:
    """Every measurement of the files, timings as attribute objects (as bench_policy made them)."""
    rows = []
    for path in paths:
        for r in json.loads(path.read_text())["results"]:
            rows.append({k: SimpleNamespace(**v) if isinstance(v, dict) and "cpu" in v else v for k, v in r.items()})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("json", type=Path, nargs="+")
    parser.add_argument("--records", type=float, default=112.5e6, help="records of every data set a unit reads")
    parser.add_argument("--cores", type=int, nargs="+", default=[4, 8, 32])
    parser.add_argument("--bandwidth", type=float, default=0.0, help="bytes/s of a worker's link (0: one machine)")
    args = parser.parse_args()
    rows = load(args.json)
    n = args.records / 1e6
    costs = fitted_costs(rows)
    print(f"{'measure':<22}{'serial fraction':>16}{'Mrec/worker-CPU-s':>19}{'bytes/record':>14}"
          + "".join(f"{f'{c} cores, s':>14}" for c in args.cores))  # fmt: skip
    total = np.zeros(len(args.cores))
    for kind, cost in costs.items():
        mine = [r for r in rows if r.get("type") == kind]
        per_record = float(np.mean([r["bytes_sent"] / r["records"] for r in mine]))
        driver = cost.driver_fixed + cost.driver * n
        workers = cost.workers_fixed + cost.workers * n
        link = per_record * args.records / args.bandwidth if args.bandwidth else 0.0
        walls = np.array([driver + workers / c + link for c in args.cores])
        total += walls
        print(f"{kind:<22}{driver / (driver + workers):>16.2f}{1 / cost.workers:>19.2f}{per_record:>14.1f}"
              + "".join(f"{w:>14.0f}" for w in walls))  # fmt: skip
    layouts = [r for r in rows if "layout" in r]
    sizes = np.array([r["records"] / 1e6 for r in layouts])
    d0, d1 = _fixed_and_slope(sizes, [r["layout"].cpu_driver for r in layouts])
    w0, w1 = _fixed_and_slope(sizes, [r["layout"].cpu_workers for r in layouts])
    walls = np.array([d0 + d1 * n + (w0 + w1 * n) / c for c in args.cores])
    print(f"{'the layout (once)':<22}{'':>16}{'':>19}{'':>14}" + "".join(f"{w:>14.0f}" for w in walls))
    total += walls
    print(f"{'units + layout':<22}{'':>16}{'':>19}{'':>14}" + "".join(f"{w:>14.0f}" for w in total))


if __name__ == "__main__":
    main()
