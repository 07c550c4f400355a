"""The task's key-block layout (issue 34) per block-wise measure, side by side on the register.

For disclosure (the register row's keys and target) and identification risk (sex, municipality
and age known; income and expenditure synthesised; r 10 %), in one run: in memory (the driver, one
thread), on the cluster as each measure blocks for itself (``policy: blocks``, no layout), and on
the cluster on the task's layout (sex × municipality, the key the register task's measures share;
the layout is made once per task, so its cost is printed on its own line and not in the measure's).
Each line: wall, CPU of the driver and every worker, the CPU ratio against in memory (the
issue's goal: at most 1.15), the load average, and whether the rows equal the in-memory rows.

Usage::

    .venv/bin/python benchmarks/bench_layout.py --rows 1000000 --workers 2 --repeat 1
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness import Bench, bench_client

from pipeline.data.dataset import read_dataset
from pipeline.datasets.register import write_register
from pipeline.evaluation.data import as_eval_data
from pipeline.evaluation.execution import Executor
from pipeline.risk.disclosure.measure import DisclosureMeasure
from pipeline.risk.idrisk.measure import IdentificationRiskMeasure

LAYOUT_KEY = ["sex", "municipality"]
MEASURES = {
    "disclosure (keys sex, age, municipality, edu; target marital)": DisclosureMeasure(
        keys=["sex", "age", "municipality", "edu"], target="marital"
    ),
    "identification risk (sex, municipality, age known; income, expenditure; r 10 %)": IdentificationRiskMeasure(
        radius={"age": 0.1, "income": 0.1, "expenditure": 0.1},
        scenarios={"money": {"known": ["sex", "municipality", "age"], "synthesised": ["income", "expenditure"]}},
    ),
}


def _rows(result: Any) -> list[tuple]:
    return [(r.synthetic, r.measure, repr(r.params), r.value) for r in result.rows()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--memory-limit", default="8GiB")
    parser.add_argument("--data", type=Path, default=Path.home() / ".cache" / "sdc-pipeline" / "demo")
    args = parser.parse_args()
    data = write_register(args.data, args.rows)
    frames = [read_dataset(data.path(n), schema=data.schema_path).frame for n in ("original", "syn1")]
    po, ps = (f.compute().reset_index(drop=True) for f in frames)  # read, not timed
    memory = as_eval_data(po, [ps], data.schema)
    in_memory = Executor(None, policy="memory")
    expected, base = {}, {}
    print(f"register, {args.rows:,} records per set; {args.workers} workers x 1 thread vs in memory (1 thread)")
    for name, measure in MEASURES.items():
        m, got = Bench().time(lambda measure=measure: measure.run(memory, in_memory), repeat=args.repeat)
        expected[name], base[name] = _rows(got), m.cpu
        print(f"  {name}\n    in memory: {m.line()}", flush=True)
    with bench_client(args.workers, args.memory_limit) as client:
        bench = Bench(client)
        original, synthetic = bench.ready(*frames)
        data_on_cluster = as_eval_data(original, [synthetic], data.schema)
        own = Executor(client, policy="blocks")
        for name, measure in MEASURES.items():
            m, got = bench.time(lambda measure=measure: measure.run(data_on_cluster, own), repeat=args.repeat)
            same = "same rows" if _rows(got) == expected[name] else "ROWS DIFFER"
            print(f"  {name}\n    cluster, own blocks: {m.line()}; CPU ratio {m.cpu / base[name]:.2f}; {same}")
        laid = Executor(client, policy="blocks")
        variables = sorted({v for measure in MEASURES.values() for v in measure.params.variables()})
        m, layout = bench.time(lambda: laid.lay_out(data_on_cluster.select(variables), LAYOUT_KEY), repeat=1)
        print(f"  the layout by {' x '.join(LAYOUT_KEY)} ({layout.blocks} blocks; once per task): {m.line()}")
        for name, measure in MEASURES.items():
            m, got = bench.time(lambda measure=measure: measure.run(data_on_cluster, laid), repeat=args.repeat)
            same = "same rows" if _rows(got) == expected[name] else "ROWS DIFFER"
            print(f"  {name}\n    cluster, on the layout: {m.line()}; CPU ratio {m.cpu / base[name]:.2f}; {same}")
        assert len(laid.layouts()) == 1, "a measure made another layout"


if __name__ == "__main__":
    main()
