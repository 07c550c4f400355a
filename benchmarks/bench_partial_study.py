"""Benchmark of the Hornby & Hu m-study: synthetic sets per second and the projected study time.

One repetition of ``tasks/hornby_hu_m_study.yaml`` makes 1 + 10 + 20 = 31 partially synthetic
CEdata sets (scenario 1: Income by cart) and evaluates each with identification risk over 6
radii and utility_gen (logit, maxorder 1).  Two measurements:

1. **Components, in process** (one core, no cluster): for m = 20 sets, the seconds of the
   synthesis, of the identification-risk sweep and of utility_gen, as sets per second.
2. **The real runner** (``execute_task`` on the task with ``--repetitions`` repetitions, fresh
   run folder, nothing cached) on a LocalCluster of 1 and of 2 single-threaded worker
   processes, connected as a ``scheduler`` cluster: wall, CPU (driver + workers), peak memory
   per worker and load average (benchmarks/harness.py), synthetic sets per second of wall time,
   and the projected time of the 1000-repetition study (31,000 sets): measured wall per
   repetition x 1000 for 1 and 2 workers, and CPU seconds per repetition x 1000 / N for N
   workers (ideal scaling: the repetitions are independent units; an upper bound on speed).

Usage::

    .venv/bin/python benchmarks/bench_partial_study.py [--repetitions 1] [--workers 1 2] [--project 8 32 128]
"""

from __future__ import annotations

import argparse
import tempfile
import warnings
from pathlib import Path

import yaml
from distributed import Client, LocalCluster
from harness import Bench

from pipeline.datasets import load_demo
from pipeline.evaluation.data import as_eval_data
from pipeline.evaluation.execution import Executor
from pipeline.measures import REGISTRY
from pipeline.runner import execute_task
from pipeline.synth.partial.params import PartialParams
from pipeline.synth.partial.syn import synthesise_partial
from pipeline.tasks import load_task

TASK = Path(__file__).resolve().parents[1] / "tasks" / "hornby_hu_m_study.yaml"
SETS_PER_REPETITION = 1 + 10 + 20
STUDY_REPETITIONS = 1000


def components(m: int = 20) -> None:
    """Seconds of each stage for m sets, in process."""
    spec = yaml.safe_load(TASK.read_text(encoding="utf-8"))
    measures = {entry["type"]: entry["params"] for entry in spec["measures"]}
    ce = load_demo("cedata")
    original = ce.to_pandas()
    executor = Executor(None, policy="memory")
    bench = Bench(None)
    params = PartialParams(kind="partial", method={"Income": "cart"}, m=m, seed=1)
    syn, result = bench.time(lambda: synthesise_partial(ce, params, executor), repeat=1)
    data = as_eval_data(original, list(result.synthetic), ce.schema)
    print(f"components, in process, m = {m} sets:")
    print(f"  synthesis (tree fit + {m} sets)        {syn.line()}  -> {m / syn.wall:8.1f} sets/s")
    for name in ("identification_risk", "utility_gen"):
        measure = REGISTRY[name].measure(measures[name])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t, _ = bench.time(lambda measure=measure: measure.run(data, executor), repeat=1)
        print(f"  {name:<37} {t.line()}  -> {m / t.wall:8.1f} sets/s")


def runner(workers: int, repetitions: int, project: list[int]) -> None:
    """The m-study task through execute_task on ``workers`` worker processes."""
    spec = yaml.safe_load(TASK.read_text(encoding="utf-8"))
    spec["repetitions"] = repetitions
    with (
        tempfile.TemporaryDirectory() as tmp,
        LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster,
        Client(cluster) as client,
    ):
        task_file = Path(tmp) / "m_study.yaml"
        task_file.write_text(yaml.safe_dump(spec), encoding="utf-8")
        task = load_task(task_file)
        config = {"type": "scheduler", "address": cluster.scheduler_address}
        bench = Bench(client)
        runs = iter(range(1000))

        def run() -> object:
            return execute_task(task, config, Path(tmp) / f"out{next(runs)}", progress=False)

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            measured, outcome = bench.time(run, repeat=1)
        sets = SETS_PER_REPETITION * repetitions
        per_rep_wall = measured.wall / repetitions
        per_rep_cpu = measured.cpu / repetitions
        print(f"runner, {workers} worker(s), {repetitions} repetition(s), {sets} sets, {len(outcome.results)} rows:")
        print(f"  {measured.line()}")
        print(f"  {sets / measured.wall:.2f} synthetic sets/s (synthesis + identification risk over 6 radii + utility)")
        hours = per_rep_wall * STUDY_REPETITIONS / 3600
        print(f"  projected {STUDY_REPETITIONS}-repetition study on {workers} worker(s): {hours:.2f} h (measured wall)")
        for n in project:
            hours = per_rep_cpu * STUDY_REPETITIONS / n / 3600
            print(f"  projected on {n} workers (CPU s / N, ideal scaling): {hours:.2f} h")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repetitions", type=int, default=1)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--project", type=int, nargs="+", default=[8, 32, 128])
    args = ap.parse_args()
    components()
    for w in args.workers:
        runner(w, args.repetitions, args.project)


if __name__ == "__main__":
    main()
