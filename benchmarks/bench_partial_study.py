"""Benchmark of the Hornby & Hu m-study: synthetic sets per second and the projected study time.

One repetition of ``tasks/hornby_hu_m_study.yaml`` makes 1 + 10 + 20 = 31 partially synthetic
CEdata sets (scenario 1: Income by cart) and evaluates each with identification risk over 6
radii and utility_gen (logit, maxorder 1).  Two measurements:

1. **Components of one repetition, in process** (one core, BLAS on one thread as on a worker,
   after a warm-up repetition: imports, compiled kernels and the cart fit, which a worker makes
   once for all its repetitions): for m = 1, 10 and 20, the CPU seconds of the synthesis, of the
   identification-risk sweep and of utility_gen, and their share of the repetition.
2. **The real runner** (``execute_task`` on the task with ``--repetitions`` repetitions, fresh
   run folder, nothing cached) on a LocalCluster of 1 and of 2 single-threaded worker
   processes, connected as a ``scheduler`` cluster, after one warm-up repetition on the same
   workers (reported separately: the once-per-worker start-up): wall, CPU (driver + workers),
   peak memory per worker and load average (benchmarks/harness.py), synthetic sets per second
   of wall time, and the projected time of the 1000-repetition study (31,000 sets): measured
   wall per repetition x 1000 for 1 and 2 workers, and CPU seconds per repetition x 1000 / N
   for N workers (ideal scaling: each repetition of each source is one independent task; an
   upper bound on speed).

Usage::

    flock /tmp/sdc-bench.lock .venv/bin/python benchmarks/bench_partial_study.py \
        [--repetitions 10] [--workers 1 2] [--project 8 32 128]
"""

from __future__ import annotations

import os

# as on a Dask worker (the nanny sets these): BLAS on one thread, so in-process CPU seconds compare
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import yaml  # noqa: E402
from harness import Bench, bench_client  # noqa: E402

from pipeline.datasets import load_demo  # noqa: E402
from pipeline.evaluation.data import as_eval_data  # noqa: E402
from pipeline.evaluation.execution import Executor  # noqa: E402
from pipeline.measures import REGISTRY  # noqa: E402
from pipeline.runner import execute_task  # noqa: E402
from pipeline.synth.partial.params import PartialParams  # noqa: E402
from pipeline.synth.partial.syn import synthesise_partial  # noqa: E402
from pipeline.tasks import load_task  # noqa: E402

TASK = Path(__file__).resolve().parents[1] / "tasks" / "hornby_hu_m_study.yaml"
SETS_PER_REPETITION = 1 + 10 + 20
STUDY_REPETITIONS = 1000
STAGES = ("synthesis", "identification_risk", "utility_gen")


def _repetition(seed: int) -> dict[str, float]:
    """CPU seconds of each stage of one repetition (m = 1, 10, 20), in process."""
    spec = yaml.safe_load(TASK.read_text(encoding="utf-8"))
    measures = {entry["type"]: REGISTRY[entry["type"]].measure(entry["params"]) for entry in spec["measures"]}
    ce = load_demo("cedata")
    original = ce.to_pandas()
    executor = Executor(None, policy="memory")
    cpu = dict.fromkeys(STAGES, 0.0)
    for m in (1, 10, 20):
        t0 = time.process_time()
        result = synthesise_partial(ce, PartialParams(method={"Income": "cart"}, m=m, seed=seed), executor)
        cpu["synthesis"] += time.process_time() - t0
        data = as_eval_data(original, list(result.synthetic), ce.schema)
        for name, measure in measures.items():
            t0 = time.process_time()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                measure.run(data, executor)
            cpu[name] += time.process_time() - t0
    return cpu


def components() -> None:
    """CPU seconds and share of each stage of one repetition, after a warm-up repetition."""
    _repetition(seed=1)
    cpu = _repetition(seed=2)
    total = sum(cpu.values())
    print(f"components of one repetition ({SETS_PER_REPETITION} sets), in process, one core, after a warm-up:")
    for name in STAGES:
        print(f"  {name:<22} {cpu[name]:6.2f} CPU s  {100 * cpu[name] / total:5.1f} %")
    print(f"  {'total':<22} {total:6.2f} CPU s  -> {SETS_PER_REPETITION / total:6.1f} sets per CPU second")


def runner(workers: int, repetitions: int, project: list[int]) -> None:
    """The m-study task through execute_task on ``workers`` worker processes."""
    spec = yaml.safe_load(TASK.read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory() as tmp, bench_client(workers, "4GiB") as client:
        config = {"type": "scheduler", "address": client.scheduler.address}
        bench = Bench(client)

        def run(reps: int, out: str) -> object:
            task_file = Path(tmp) / f"{out}.yaml"
            task_file.write_text(yaml.safe_dump({**spec, "repetitions": reps}), encoding="utf-8")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return execute_task(load_task(task_file), config, Path(tmp) / out, progress=False)

        warm, _ = bench.time(lambda: run(1, "warm_up"), repeat=1)
        measured, outcome = bench.time(lambda: run(repetitions, "study"), repeat=1)
        sets = SETS_PER_REPETITION * repetitions
        per_rep_wall = measured.wall / repetitions
        per_rep_cpu = measured.cpu / repetitions
        print(f"runner, {workers} worker(s):")
        print(f"  warm-up, 1 repetition (imports, compiled kernels, cart fit on each worker): {warm.line()}")
        print(f"  {repetitions} repetition(s), {sets} sets, {len(outcome.results)} rows: {measured.line()}")
        print(f"  per repetition: wall {per_rep_wall:.2f} s, CPU {per_rep_cpu:.2f} s")
        print(f"  {sets / measured.wall:.2f} synthetic sets/s (synthesis + identification risk over 6 radii + utility)")
        for reps in (100, STUDY_REPETITIONS):
            minutes = (warm.wall + per_rep_wall * reps) / 60
            print(f"  projected {reps}-repetition study on {workers} worker(s): {minutes:.1f} min (measured wall)")
        for n in project:
            minutes = per_rep_cpu * STUDY_REPETITIONS / n / 60
            print(
                f"  projected {STUDY_REPETITIONS}-repetition study on {n} workers (CPU s / N, ideal): {minutes:.1f} min"
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repetitions", type=int, default=10)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--project", type=int, nargs="+", default=[8, 32, 128])
    args = ap.parse_args()
    components()
    for w in args.workers:
        runner(w, args.repetitions, args.project)


if __name__ == "__main__":
    main()
