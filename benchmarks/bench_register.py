"""The register rows of ``run_all.py`` (issue 19): the generated population register and its twin.

Data: ``pipeline.datasets.register`` (300 municipalities with a Zipf size law, single years of
age, 8 edu levels, ..., log-normal income and expenditure; the twin keeps sex, age and
municipality and synthesises the rest from fitted models), written once as Parquet under
``--data`` and reused.  Every row prints the issue's goal and whether it is met:

* ``register_disclosure``: disclosure (keys sex, age, municipality, edu; target marital) in
  memory on one core vs the DuckDB SQL of the same core counts on one thread (<= 1.0x);
* ``register_disclosure_cluster``: the same on the 2-worker cluster, inputs persisted, vs DuckDB
  on 2 threads (<= 1.0x wall) and vs our in-memory wall (<= 0.6x);
* ``register_idrisk``: identification risk (known sex, municipality, age; synthesised income and
  expenditure; r = 10 %) in memory: CPU-s per million records (<= 1.6 at 5M);
* ``register_idrisk_scaling``: the same on 2 workers vs in memory (>= 1.7x);
* ``register_utility``: utility_gen logit, maxorder 1, 5 variables (79 coefficients), n + n
  records, vs statsmodels GLM IRLS on the same design (<= 1.5 CPU-s per million rows, >= 40x);
* ``register_dcr`` (issue 21): DCR / NNDR of the twin against the register (k = 2) and against
  its generated holdout (a quarter as many records, same population), plus the random baseline,
  on the 2-worker cluster, inputs persisted: under 2 minutes at 5M;
* ``register_task``: ``sdc-pipeline run tasks/register.yaml`` (the issue's workload: disclosure
  over 10 targets, identification risk over 6 radii for 2 scenarios, logit utility) end to end, on
  its own default local cluster: CPU-s (the run and all its worker processes) per million records
  (<= 20);
* ``register_holdout_task``: the same for ``tasks/register_holdout.yaml`` (the same register with
  its generated holdout: excess risk, DCR and the three attacks as well); its figure, no goal.
"""

from __future__ import annotations

import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from harness import Bench, Measurement
from table import Row, duckdb_core_counts, load, measured, print_row

from pipeline.datasets.register import write_register
from pipeline.datasets.scaled import ScaledData
from pipeline.evaluation.execution import Executor

ROOT = Path(__file__).resolve().parents[1]
KEYS = ["sex", "age", "municipality", "edu"]
TARGET = "marital"
KNOWN, SYNTHESISED, RADIUS = ["sex", "municipality", "age"], ["income", "expenditure"], 0.1
LOGIT_VARS = ["sex", "age", "edu", "hhsize", "income"]
DCR_VARS = ["sex", "age", "municipality", "edu", "marital", "income", "expenditure"]
SECTIONS = ["register_disclosure", "register_disclosure_cluster", "register_idrisk", "register_idrisk_scaling",
            "register_utility", "register_dcr", "register_task", "register_holdout_task"]  # fmt: skip
#: largest n (records per data set) of the statsmodels comparison: its dense design of 2n rows x 79
#: columns and the IRLS copies took over 22 GB at 5M (killed on a 24 GiB machine); 1M is the goal's size
STATSMODELS_MAX_ROWS = 1_000_000
#: the end-to-end task rows: section -> (task file, goal in CPU-s per million records or None,
#: whether the task reads the generated holdout)
TASK_ROWS: dict[str, tuple[str, float | None, bool]] = {
    "register_task": ("register.yaml", 20.0, False),
    "register_holdout_task": ("register_holdout.yaml", None, True),
}


def in_memory(data: ScaledData) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The original and the twin as pandas frames in the driver (read, not timed)."""
    from pipeline.data.dataset import read_dataset

    return tuple(  # type: ignore[return-value]
        read_dataset(data.path(n), schema=data.schema_path).frame.compute().reset_index(drop=True)
        for n in ("original", "syn1")
    )


def duckdb_counts(po: pd.DataFrame, ps: pd.DataFrame, threads: int, bench: Bench, repeat: int) -> Any:
    """DuckDB's repU and DiSCO on the same frames with ``threads`` threads, or None without duckdb."""
    try:
        import duckdb
    except ImportError:
        print("duckdb not installed (pip install -e .[bench]): DuckDB comparison skipped")
        return None
    con = duckdb.connect()
    con.execute(f"SET threads = {threads}")
    con.register("o", po[[*KEYS, TARGET]])
    con.register("s", ps[[*KEYS, TARGET]])
    m, got = bench.time(lambda: duckdb_core_counts(con, KEYS, TARGET), repeat=repeat)
    con.close()
    return m, got


def _disclosure(o: Any, s: Any, schema: Any, ex: Executor) -> tuple[float, float]:
    from pipeline.risk.disclosure import disclosure

    res = disclosure(o, [s], KEYS, TARGET, schema=schema, executor=ex)
    return float(res.ident.loc[1, "repU"]), float(res.attrib.loc[1, "DiSCO"])


def _agree(a: tuple[float, float], b: tuple[float, float]) -> str:
    return "agrees" if np.allclose(a, b, rtol=0, atol=1e-9) else f"DIFFERS {b}"


def run_disclosure(bench: Bench, data: ScaledData, n: int, repeat: int, sections: set) -> list[Any]:
    rows: list[Any] = []
    po, ps = in_memory(data)
    memory = Executor(None, policy="memory")
    mem, ours = bench.time(lambda: _disclosure(po, ps, data.schema, memory), inputs=[po, ps], repeat=repeat)
    duck1 = duckdb_counts(po, ps, 1, bench, repeat)
    cells = len(po[KEYS].drop_duplicates())
    what = f"register disclosure, keys {', '.join(KEYS)} ({cells:,} cells), target {TARGET}"
    if "register_disclosure" in sections:
        note = f"repU {ours[0]:.4f} DiSCO {ours[1]:.4f}"
        checks = []
        if duck1 is not None:
            dm, got = duck1
            checks.append(("wall s vs DuckDB 1 thread", mem.wall, dm.wall * 1.0001))
            note += f"; DuckDB 1 thread {dm.wall:.2f} s / CPU {dm.cpu:.2f} s, {_agree(ours, got)}"
        rows.append(Row(f"{what}, in memory, 1 core", n, measured(mem), "DuckDB 1 thread", None,
                           "<= 1.0x DuckDB 1 thread (wall)", checks, True, note))  # fmt: skip
    if "register_disclosure_cluster" in sections:
        o, s = load(bench, data, ["original", "syn1"])
        blocks = Executor(bench.client, policy="blocks")
        m, got_cluster = bench.time(lambda: _disclosure(o, s, data.schema, blocks), inputs=[o, s], repeat=repeat)
        duck2 = duckdb_counts(po, ps, 2, bench, repeat)
        checks = [("wall s vs 0.6x our in-memory wall", m.wall, 0.6 * mem.wall)]
        note = f"in memory {mem.wall:.2f} s; cluster {_agree(ours, got_cluster)}"
        if duck2 is not None:
            dm, got = duck2
            checks.insert(0, ("wall s vs DuckDB 2 threads", m.wall, dm.wall * 1.0001))
            note += f"; DuckDB 2 threads {dm.wall:.2f} s / CPU {dm.cpu:.2f} s, {_agree(ours, got)}"
        rows.append(Row(f"{what}, {len(bench.workers)}-worker cluster, inputs persisted", n, measured(m),
                           "DuckDB 2 threads", None, "<= 1.0x DuckDB 2 threads (wall), <= 0.6x in-memory wall",
                           checks, True, note))  # fmt: skip
        bench.client.cancel([o, s])
    for row in rows:
        print_row(row)
    return rows


def _idrisk(o: Any, s: Any, schema: Any, ex: Executor) -> float:
    from pipeline.risk.idrisk import identification_risk

    res = identification_risk(o, [s], KNOWN, SYNTHESISED, RADIUS, schema=schema, executor=ex)
    return float(res.exp_risk[0])


def run_idrisk(bench: Bench, data: ScaledData, n: int, repeat: int, sections: set) -> list[Any]:
    rows: list[Any] = []
    po, ps = in_memory(data)
    mem, risk = bench.time(lambda: _idrisk(po, ps, data.schema, Executor(None, policy="memory")), inputs=[po, ps],
                           repeat=repeat)  # fmt: skip
    per_million = mem.cpu / (n / 1e6)
    what = f"register identification risk, known {', '.join(KNOWN)}; {', '.join(SYNTHESISED)} r={RADIUS}"
    if "register_idrisk" in sections:
        rows.append(Row(f"{what}, in memory", n, measured(mem, cpu_per_million=per_million), "-", None,
                           "<= 1.6 CPU-s per million records (at 5M)",
                           [("CPU-s per million", per_million, 1.6)], n >= 5_000_000,
                           f"{per_million:.2f} CPU-s per million records; exp.risk {risk:.4f}"))  # fmt: skip
    if "register_idrisk_scaling" in sections:
        o, s = load(bench, data, ["original", "syn1"])
        m, got = bench.time(lambda: _idrisk(o, s, data.schema, Executor(bench.client, policy="blocks")),
                            inputs=[o, s], repeat=repeat)  # fmt: skip
        speedup = mem.wall / m.wall
        same = "agrees" if abs(got - risk) < 1e-12 else "DIFFERS"
        rows.append(Row(f"{what}, {len(bench.workers)} workers vs in memory", n, measured(m, speedup=speedup), "-",
                           None, ">= 1.7x in-memory wall", [("1/speed-up", 1 / speedup, 1 / 1.7 * 1.0001)],
                           n >= 3_000_000, f"in memory {mem.wall:.2f} s / CPU {mem.cpu:.2f} s; speed-up "
                           f"{speedup:.2f}x; exp.risk {same}"))  # fmt: skip
        bench.client.cancel([o, s])
    for row in rows:
        print_row(row)
    return rows


def logit_design(frame: pd.DataFrame, schema: Any, variables: list[str]) -> np.ndarray:
    """synthpop's maxorder-1 logit design: intercept, main effects (treatment-coded factors,
    numbers as they are) and every two-way interaction of them."""
    blocks = []
    for v in variables:
        if schema[v].is_factor:
            codes = frame[v].cat.codes.to_numpy()
            levels = len(schema[v].levels)
            blocks.append((codes[:, None] == np.arange(1, levels)[None, :]).astype(np.float64))
        else:
            blocks.append(frame[[v]].to_numpy(np.float64))
    pairs = [(a[:, :, None] * b[:, None, :]).reshape(len(frame), -1) for i, a in enumerate(blocks)
             for b in blocks[i + 1 :]]  # fmt: skip
    x = np.hstack([np.ones((len(frame), 1)), *blocks, *pairs])
    return x[:, x.any(axis=0)]  # combinations no record has (a child with a degree) carry no column


def run_utility(bench: Bench, data: ScaledData, n: int, repeat: int) -> list[Any]:
    from pipeline.utility import utility_gen

    po, ps = in_memory(data)
    ex = Executor(None, policy="memory")
    m, res = bench.time(lambda: utility_gen(po, ps, method="logit", vars=LOGIT_VARS, maxorder=1, schema=data.schema,
                                            executor=ex), inputs=[po, ps], repeat=repeat)  # fmt: skip
    ours = float(res["pMSE"][0])
    per_million = m.cpu / (2 * n / 1e6)
    checks = [("CPU-s per million rows", per_million, 1.5)]
    note = f"{per_million:.2f} CPU-s per million rows; pMSE {ours:.10g}"
    try:
        import statsmodels.api as sm
    except ImportError:
        print("statsmodels not installed (pip install -e .[bench]): GLM comparison skipped")
        sm = None
    if sm is not None and n > STATSMODELS_MAX_ROWS:
        print(
            f"statsmodels GLM comparison skipped at {n:,} + {n:,} rows: its dense design and IRLS copies need"
            f" more memory than this machine has (it runs up to {STATSMODELS_MAX_ROWS:,}, the goal's size)"
        )
        sm = None
    if sm is not None:
        both = pd.concat([po[LOGIT_VARS], ps[LOGIT_VARS]], ignore_index=True)
        x = logit_design(both, data.schema, LOGIT_VARS)
        y = np.r_[np.zeros(len(po)), np.ones(len(ps))]
        sm_m, fitted = bench.time(lambda: sm.GLM(y, x, family=sm.families.Binomial()).fit(method="IRLS"), repeat=1)
        p = fitted.fittedvalues
        theirs = float(np.mean((p - len(ps) / len(y)) ** 2))
        checks.append(("wall s vs statsmodels / 40", m.wall, sm_m.wall / 40))
        note += (f"; statsmodels GLM IRLS ({x.shape[1]} columns) {sm_m.wall:.1f} s / CPU {sm_m.cpu:.1f} s, "
                 f"pMSE {theirs:.10g} ({'agrees' if abs(theirs - ours) < 1e-9 else 'DIFFERS'}); "
                 f"ratio {sm_m.wall / m.wall:.1f}x")  # fmt: skip
        del x
    row = Row(f"register utility_gen logit maxorder 1 ({', '.join(LOGIT_VARS)}), {n:,} + {n:,} rows", n,
                 measured(m, cpu_per_million=per_million), "statsmodels GLM IRLS", None,
                 "<= 1.5 CPU-s per million rows, >= 40x statsmodels", checks, True, note)  # fmt: skip
    print_row(row)
    return [row]


#: runs its arguments as a child and prints the largest RSS of that child and its reaped
#: descendants (the run and its workers).  A fresh small process: a child of the benchmark
#: itself would report the benchmark's own peak (e.g. statsmodels' fit), since a forked
#: child inherits its parent's RSS high-water mark.
PEAK_RSS_LAUNCHER = (
    "import resource, subprocess, sys; r = subprocess.run(sys.argv[1:]); "
    "print(f'peak-rss-kib {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}', file=sys.stderr); "
    "sys.exit(r.returncode)"
)


def run_task(data_root: Path, n: int, section: str) -> list[Any]:
    """``sdc-pipeline run tasks/<file>`` of ``section`` at ``n`` records in a child process, its own
    default local cluster; CPU of the run and every worker process it started (reaped children)."""
    from pipeline.datasets.register import cache_folder, write_register_holdout

    file, goal, holdout = TASK_ROWS[section]
    env = {**os.environ, "SDC_PIPELINE_CACHE": str(data_root / "pipeline-cache")}
    os.environ["SDC_PIPELINE_CACHE"] = env["SDC_PIPELINE_CACHE"]
    write_register(cache_folder(), n)  # the data exist before the clock starts
    text = (ROOT / "tasks" / file).read_text()
    if holdout:
        write_register_holdout(cache_folder(), n)
    text, replaced = re.subn(r"rows: \d+", f"rows: {n}", text)
    assert replaced == 1, f"tasks/{file}: expected one 'rows:' setting"
    with tempfile.TemporaryDirectory(prefix="register-task-") as tmp:
        task = Path(tmp) / file
        task.write_text(text)
        cmd = [sys.executable, "-c", PEAK_RSS_LAUNCHER, sys.executable, "-m", "pipeline.cli", "run", str(task),
               "--out", str(Path(tmp) / "out")]  # fmt: skip
        before, load_before, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), os.getloadavg()[0], time.perf_counter()
        out = subprocess.run(cmd, capture_output=True, text=True, env=env)
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        print(f"{file} failed (exit {out.returncode}):\n{out.stdout[-1500:]}\n{out.stderr[-1500:]}")
        return []
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    per_million = cpu / (n / 1e6)
    peak = re.findall(r"peak-rss-kib (\d+)", out.stderr)
    m = Measurement(wall, cpu, 0.0, cpu, {"run (largest process)": int(peak[-1]) / 1024 if peak else 0.0}, load_before,
                    os.getloadavg()[0], 1, [wall])  # fmt: skip
    checks = [("CPU-s per million", per_million, goal)] if goal is not None else []
    row = Row(f"{file} end to end (sdc-pipeline run tasks/{file}, default local cluster)", n,
                 measured(m, cpu_per_million=per_million), "-", None,
                 f"<= {goal:g} CPU-s per million records" if goal is not None else "- (figure only)", checks,
                 goal is not None, f"{per_million:.1f} CPU-s per million records (run + its workers)")  # fmt: skip
    print_row(row)
    return [row]


def warm_up(bench: Bench, data_root: Path) -> None:
    """Imports and compiled kernels loaded, in the driver and on the workers (not timed)."""
    from pipeline.utility import utility_gen

    data = write_register(data_root, 20_000)
    po, ps = in_memory(data)
    memory = Executor(None, policy="memory")
    _disclosure(po, ps, data.schema, memory)
    _idrisk(po, ps, data.schema, memory)
    utility_gen(po, ps, method="logit", vars=LOGIT_VARS, maxorder=1, schema=data.schema, executor=memory)
    o, s = load(bench, data, ["original", "syn1"])
    blocks = Executor(bench.client, policy="blocks")
    _disclosure(o, s, data.schema, blocks)
    _idrisk(o, s, data.schema, blocks)
    bench.client.cancel([o, s])


def run_dcr(bench: Bench, data_root: Path, data: ScaledData, n: int, repeat: int) -> list[Any]:
    """DCR of the twin against the register and its holdout on the cluster (inputs persisted)."""
    from pipeline.datasets.register import holdout_rows, write_register_holdout
    from pipeline.evaluation.data import as_eval_data
    from pipeline.risk.distance.measure import DCRMeasure

    hold = write_register_holdout(data_root, n)
    o, s = load(bench, data, ["original", "syn1"])
    (h,) = load(bench, hold, ["holdout"])
    eval_data = as_eval_data(o, [s], schema=data.schema, holdout=h)
    measure = DCRMeasure(vars=DCR_VARS)
    executor = Executor(bench.client, policy="blocks")
    m, got = bench.time(lambda: measure.evaluate(eval_data, executor), inputs=[o, s, h], repeat=repeat)
    values = {r.measure: r.value for r in got.rows() if r.synthetic == "1"}
    what = (f"register DCR/NNDR, {len(DCR_VARS)} variables, twin vs register (k = 2) and holdout "
            f"({holdout_rows(n):,} records), {len(bench.workers)} workers")  # fmt: skip
    row = Row(what, n, measured(m), "-", None, "< 120 s wall at 5M", [("wall s", m.wall, 120.0)], n >= 5_000_000,
                 f"closer_to_training {values.get('closer_to_training', float('nan')):.4f}, "
                 f"dcr_median {values.get('dcr_median', float('nan')):.4f}")  # fmt: skip
    bench.client.cancel([o, s, h])
    print_row(row)
    return [row]


def run_register(bench: Bench | None, data_root: Path, sizes: list[int], repeat: int, sections: set) -> list[Any]:
    """Every chosen register section at every size (data written or found first, not timed)."""
    rows: list[Any] = []
    if bench is not None:
        warm_up(bench, data_root)
    for n in sizes:
        t0 = time.perf_counter()
        data = write_register(data_root, n)
        print(f"  (register {n:,}: {data.folder}, {time.perf_counter() - t0:.1f} s to write or find, not timed)")
        if bench is not None:
            if sections & {"register_disclosure", "register_disclosure_cluster"}:
                rows += run_disclosure(bench, data, n, repeat, sections)
            if sections & {"register_idrisk", "register_idrisk_scaling"}:
                rows += run_idrisk(bench, data, n, repeat, sections)
            if "register_utility" in sections:
                rows += run_utility(bench, data, n, min(repeat, 2))
            if "register_dcr" in sections:
                rows += run_dcr(bench, data_root, data, n, repeat)
        for section in (s for s in TASK_ROWS if s in sections):
            rows += run_task(data_root, n, section)
    return rows
