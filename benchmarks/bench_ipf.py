"""Benchmark of the coarsened-margins synthesiser's IPF (pipeline.synth).

Cases (each runs in its own Python process so that its peak memory is its own):

* ``census``  - the paper's size: 51,064 records, 11 variables, 48,384,000 cells, all 55 two-way
  margins, V3 (L = 10), priorn = 1. Targets: < 60 s and < 8 GiB. Run with the spec's default
  stopping rule (relative 1e-8) and with syn.ipf's (absolute 1e-3).
* ``compare`` - 10^6 cells (6 variables x 10 levels), the 15 two-way ground-truth margins
  (consistent), fitted by pipeline.synth, ``ipfn`` and ``humanleague`` with the same seed
  (ones) and margins; time, iterations and the achieved max margin error, side by side.
  humanleague's tolerance is fixed inside it; pipeline.synth (relative 1e-11) and ipfn
  (convergence_rate 1e-11) are set to stop at the same iteration with the same accuracy.
* ``scale``   - a dense 2.4 x 10^8-cell table (few cycles): seconds per cycle and bytes per
  cell, extrapolated to the largest table that fits in 24 GiB; and a 4.4 x 10^9-cell table with
  nested variables (priorn = 0, V3) that only the sparse engine can fit.

Usage::

    .venv/bin/python benchmarks/bench_ipf.py            # all cases
    .venv/bin/python benchmarks/bench_ipf.py census     # one case
"""

from __future__ import annotations

import itertools
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

CENSUS_SHAPE = (2, 10, 5, 8, 10, 6, 6, 2, 3, 4, 7)  # 48,384,000 cells
CENSUS_N = 51_064
COMPARE_SHAPE = (10,) * 6  # 10^6 cells
SCALE_SHAPE = (2, 10, 5, 8, 10, 6, 6, 2, 3, 4, 7, 5)  # 241,920,000 cells
GIB = 2**30


def peak_rss() -> int:
    """Peak resident memory of this process in bytes (Linux ru_maxrss is in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def microdata(shape: tuple[int, ...], n: int, seed: int) -> np.ndarray:
    """Level codes (n x p) from a latent-class model: every pair of variables is associated."""
    rng = np.random.default_rng(seed)
    classes = 8
    z = rng.integers(0, classes, n)
    codes = np.empty((n, len(shape)), dtype=np.int64)
    for j, k in enumerate(shape):
        probs = rng.dirichlet(np.full(k, 0.6), size=classes)
        u = rng.random(n)
        codes[:, j] = np.minimum((probs.cumsum(axis=1)[z] < u[:, None]).sum(axis=1), k - 1)
    return codes


def margins_of(codes: np.ndarray, shape: tuple[int, ...]):
    """All two-way ground-truth margins as MarginTables (combn order)."""
    from pipeline.synth import MarginTable

    names = [f"v{j}" for j in range(len(shape))]
    levels = [tuple(f"l{i}" for i in range(k)) for k in shape]
    out = []
    for a, b in itertools.combinations(range(len(shape)), 2):
        c = np.bincount(codes[:, a] * shape[b] + codes[:, b], minlength=shape[a] * shape[b]).reshape(shape[a], shape[b])
        out.append(MarginTable((names[a], names[b]), (levels[a], levels[b]), c.astype(float)))
    return out


def warm_up() -> float:
    """Load (or compile) the numba kernels on a tiny problem; return the seconds it took."""
    from pipeline.synth import fit_ipf

    t0 = time.perf_counter()
    shape = (5, 6, 7, 8, 9, 10, 5)
    fit_ipf(margins_of(microdata(shape, 1000, 0), shape), 1000, tol=1e-3, max_iter=2)
    return time.perf_counter() - t0


def run_census(tol: float, tol_type: str) -> dict:
    from pipeline.synth import control_margins, fit_ipf
    from pipeline.synth.sample import sample_cells

    compile_s = warm_up()
    codes = microdata(CENSUS_SHAPE, CENSUS_N, 1901)
    t0 = time.perf_counter()
    released = control_margins(margins_of(codes, CENSUS_SHAPE), CENSUS_N, "V3", 10).tables
    margins_s = time.perf_counter() - t0
    cpu0 = time.process_time()
    fit = fit_ipf(released, CENSUS_N, priorn=1, tol=tol, tol_type=tol_type)
    cpu_s = time.process_time() - cpu0
    t1 = time.perf_counter()
    sample_cells(fit, CENSUS_N, np.random.SeedSequence(1))
    sample_s = time.perf_counter() - t1
    r = fit.report
    return {
        "case": f"census tol={tol:g} {tol_type}", "cells": r.full_cells, "margins": len(released),
        "fit_s": r.elapsed_s, "cycles": r.iterations, "passes_per_cycle": r.passes_per_cycle,
        "converged": r.converged, "scale": r.scale, "compatible": r.compatibility.compatible,
        "max_dev_n": max(m.max_abs_dev_n for m in r.margins), "max_tvd_n": max(m.tvd_n for m in r.margins),
        "peak_gib": peak_rss() / GIB, "table_gib": r.memory_bytes / GIB, "margins_s": margins_s,
        "sample_s": sample_s, "compile_s": compile_s, "cpu_s": cpu_s, "load": os.getloadavg()[0],
    }  # fmt: skip


def max_margin_error(table: np.ndarray, margins, axes) -> float:
    """Largest |fitted - target| over all margin cells (persons)."""
    worst = 0.0
    for m, ax in zip(margins, axes, strict=True):
        other = tuple(i for i in range(table.ndim) if i not in ax)
        worst = max(worst, float(np.abs(table.sum(axis=other) - m).max()))
    return worst


def run_compare(tool: str) -> dict:
    codes = microdata(COMPARE_SHAPE, CENSUS_N, 7)
    tables = margins_of(codes, COMPARE_SHAPE)
    axes = list(itertools.combinations(range(len(COMPARE_SHAPE)), 2))
    targets = [t.counts for t in tables]
    seed = np.ones(COMPARE_SHAPE)
    if tool == "pipeline.synth":
        from pipeline.synth import fit_ipf

        warm_up()
        t0, cpu0 = time.perf_counter(), time.process_time()
        fit = fit_ipf(tables, CENSUS_N, priorn=0, tol=1e-11, tol_type="relative")
        elapsed, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        table, iters = fit.probabilities() * CENSUS_N, fit.report.iterations
    elif tool == "humanleague":
        import humanleague

        t0, cpu0 = time.perf_counter(), time.process_time()
        table, stats = humanleague.ipf(seed, [np.array(a) for a in axes], targets)
        elapsed, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        iters = stats["iterations"]
    else:
        from ipfn import ipfn

        t0, cpu0 = time.perf_counter(), time.process_time()
        solver = ipfn.ipfn(seed.copy(), targets, [list(a) for a in axes], convergence_rate=1e-11,
                           max_iteration=1000, rate_tolerance=0, verbose=2)  # fmt: skip
        table, _, steps = solver.iteration()
        elapsed, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        iters = len(steps)
    return {
        "case": f"compare {tool}", "cells": int(np.prod(COMPARE_SHAPE)), "margins": len(tables), "fit_s": elapsed,
        "cycles": iters, "max_margin_error": max_margin_error(np.asarray(table), targets, axes),
        "peak_gib": peak_rss() / GIB, "load": os.getloadavg()[0], "cpu_s": cpu,
    }  # fmt: skip


def run_scale_dense() -> dict:
    from pipeline.synth import control_margins, fit_ipf

    warm_up()
    codes = microdata(SCALE_SHAPE, CENSUS_N, 3)
    released = control_margins(margins_of(codes, SCALE_SHAPE), CENSUS_N, "V3", 10).tables
    cpu0 = time.process_time()
    fit = fit_ipf(released, CENSUS_N, priorn=1, tol=1e-300, max_iter=3, max_cells=10**9)
    cpu_s = time.process_time() - cpu0
    r = fit.report
    peak = peak_rss()
    return {
        "case": "scale dense (3 cycles)", "cells": r.full_cells, "margins": len(released), "fit_s": r.elapsed_s,
        "cycles": r.iterations, "passes_per_cycle": r.passes_per_cycle, "peak_gib": peak / GIB,
        "bytes_per_cell": peak / r.full_cells, "s_per_cycle": r.elapsed_s / r.iterations,
        "cpu_s_per_cycle": cpu_s / r.iterations, "load": os.getloadavg()[0],
    }  # fmt: skip


def nested_microdata(n: int, seed: int) -> tuple[np.ndarray, tuple[int, ...]]:
    """Three nested pairs (area/sub-area: a sub-area lies in one area) plus three other variables.

    Nesting makes most two-way cells of (area, other sub-area) combinations impossible, as in a
    census with nested geography: the full table has 4.4e9 cells, the support far fewer.
    """
    codes = microdata((100, 64, 36, 2, 5, 4), n, seed)
    nested = np.column_stack([codes[:, 0] // 10, codes[:, 0], codes[:, 1] // 8, codes[:, 1], codes[:, 2] // 6,
                              codes[:, 2], codes[:, 3:]])  # fmt: skip
    return nested, (10, 100, 8, 64, 6, 36, 2, 5, 4)


def run_scale_sparse() -> dict:
    from pipeline.synth import control_margins, fit_ipf

    warm_up()
    codes, shape = nested_microdata(CENSUS_N, 5)
    released = control_margins(margins_of(codes, shape), CENSUS_N, "V3", 10).tables
    t0, cpu0 = time.perf_counter(), time.process_time()
    fit = fit_ipf(released, CENSUS_N, priorn=0, tol=1e-6, max_cells=10**8)
    cpu_s = time.process_time() - cpu0
    r = fit.report
    return {
        "case": "nested V3 priorn=0 (auto->sparse)", "engine": r.engine, "cells": r.full_cells,
        "support": r.fitted_cells, "margins": len(released), "fit_s": time.perf_counter() - t0,
        "cycles": r.iterations, "passes_per_cycle": r.passes_per_cycle, "converged": r.converged,
        "peak_gib": peak_rss() / GIB, "table_gib": r.memory_bytes / GIB, "cpu_s": cpu_s,
        "load": os.getloadavg()[0], "dense_gib": r.full_cells * 16 / GIB,
    }  # fmt: skip


RUNS = {
    "census": [("census", "1e-8", "relative"), ("census", "1e-3", "absolute")],
    "compare": [("compare", "pipeline.synth"), ("compare", "humanleague"), ("compare", "ipfn")],
    "scale": [("scale-dense",), ("scale-sparse",)],
}


def child(args: list[str]) -> dict:
    kind = args[0]
    if kind == "census":
        return run_census(float(args[1]), args[2])
    if kind == "compare":
        return run_compare(args[1])
    return run_scale_dense() if kind == "scale-dense" else run_scale_sparse()


def main(cases: list[str]) -> None:
    results = []
    for case in cases:
        for args in RUNS[case]:
            out = subprocess.run([sys.executable, __file__, "--child", *args], capture_output=True, text=True)
            if out.returncode != 0:
                print(f"{' '.join(args)} failed:\n{out.stderr[-2000:]}")
                continue
            res = json.loads(out.stdout.strip().splitlines()[-1])
            results.append(res)
            print(json.dumps(res))
    print()
    census = [r for r in results if r["case"].startswith("census tol")]
    for r in census:
        print(
            f"{r['case']:<32} {r['cells']:>12,} cells  fit {r['fit_s']:6.1f} s ({r['fit_s'] / 60:.2f} x 60 s target)"
            f"  peak {r['peak_gib']:5.2f} GiB ({r['peak_gib'] / 8:.2f} x 8 GiB target)  cycles {r['cycles']}"
            f"  x {r['passes_per_cycle']} passes  CPU {r['cpu_s']:.1f} s  load {r['load']:.1f}"
            f"  max dev {r['max_dev_n']:.3g} persons"
        )
    compare = [r for r in results if r["case"].startswith("compare")]
    ours = next((r for r in compare if r["case"].endswith("pipeline.synth")), None)
    for r in compare:
        ratio = f"{r['fit_s'] / ours['fit_s']:5.1f} x ours (CPU {r['cpu_s'] / ours['cpu_s']:4.1f} x)" if ours else ""
        print(
            f"{r['case']:<32} {r['cells']:>12,} cells  {r['fit_s']:7.2f} s  CPU {r['cpu_s']:6.2f} s  {ratio}"
            f"  iterations {r['cycles']:>4}"
            f"  max margin error {r['max_margin_error']:.2e}  peak {r['peak_gib']:.2f} GiB  load {r['load']:.1f}"
        )
    for r in results:
        if r["case"].startswith("scale dense"):
            usable = 24 * GIB - 0.5 * GIB  # leave room for the interpreter and libraries
            largest = usable / r["bytes_per_cell"]
            print(
                f"{r['case']:<32} {r['cells']:>12,} cells  {r['s_per_cycle']:.1f} s/cycle "
                f"(CPU {r['cpu_s_per_cycle']:.1f} s, load {r['load']:.1f}), peak {r['peak_gib']:.2f} "
                f"GiB = {r['bytes_per_cell']:.1f} B/cell -> largest dense table in 24 GiB ~ {largest:.2e} cells, "
                f"~{r['s_per_cycle'] * largest / r['cells']:.0f} s/cycle"
            )
        if r["case"].startswith("nested"):
            print(
                f"{r['case']:<32} {r['cells']:>14,} cells (dense would need {r['dense_gib']:.0f} GiB)  "
                f"{r['engine']} support {r['support']:,} "
                f"({r['support'] / r['cells']:.1%})  fit {r['fit_s']:.1f} s (CPU {r['cpu_s']:.1f} s)  "
                f"cycles {r['cycles']}  peak {r['peak_gib']:.2f} GiB"
            )


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        print(json.dumps(child(sys.argv[2:])))
    else:
        main(sys.argv[1:] or list(RUNS))
