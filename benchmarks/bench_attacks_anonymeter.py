"""anonymeter 1.1.0's time on the register-shaped inputs of bench_attacks.py (side by side).

anonymeter pins numpy < 1.27, so this runs in its own environment (see
tests/reference/anonymeter/make_anonymeter_references.py for how to build it); the inputs are
written by the project's side first::

    python benchmarks/bench_attacks.py --sizes 50000 200000 --write-inputs /tmp/attack-inputs
    /tmp/anon-venv/bin/python benchmarks/bench_attacks_anonymeter.py /tmp/attack-inputs --sizes 50000 200000

Same attacks as bench_attacks.py (linkability on LINK_AUX, inference of income from INFER_AUX,
singling out on SINGLING_COLS; control = holdout), with 500 targets and with every record
attacked (``--all-up-to``); ``n_jobs`` = 2 (the two cores); numba's compilation is done on a
few records before any clock starts.  Prints wall and CPU seconds of this process (and of its
finished children), its peak resident memory and the 1-minute load average.  Each size is best
run in its own process under ``timeout`` (where anonymeter stops is a result too).
"""

from __future__ import annotations

import argparse
import os
import resource
import time
from pathlib import Path

import pandas as pd
from anonymeter.evaluators import InferenceEvaluator, LinkabilityEvaluator, SinglingOutEvaluator

LINK_AUX = (["sex", "age", "municipality", "income"], ["edu", "marital", "expenditure"])
INFER_AUX = ["sex", "age", "municipality", "edu", "expenditure"]
SINGLING_COLS = ["sex", "age", "municipality", "edu", "marital", "income", "expenditure"]
ATTACKS = ["linkability", "inference", "singling_out_uni", "singling_out_multi"]


def _cpu() -> float:
    return sum(
        u.ru_utime + u.ru_stime
        for u in (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    )


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run(attack: str, train: pd.DataFrame, syn: pd.DataFrame, hold: pd.DataFrame, n_attacks: int) -> None:
    """One anonymeter evaluation (main, baseline and control attacks)."""
    if attack.startswith("singling_out"):
        cols = SINGLING_COLS
        SinglingOutEvaluator(
            ori=train[cols], syn=syn[cols], n_attacks=n_attacks, n_cols=3, control=hold[cols]
        ).evaluate(mode="univariate" if attack.endswith("uni") else "multivariate")
    elif attack == "linkability":
        LinkabilityEvaluator(ori=train, syn=syn, aux_cols=LINK_AUX, n_attacks=n_attacks, control=hold).evaluate(
            n_jobs=2
        )
    else:
        InferenceEvaluator(
            ori=train, syn=syn, aux_cols=INFER_AUX, secret="income", regression=True, n_attacks=n_attacks, control=hold
        ).evaluate(n_jobs=2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder")
    parser.add_argument("--sizes", type=int, nargs="+", default=[50_000])
    parser.add_argument("--all-up-to", type=int, default=50_000)
    parser.add_argument("--attacks", nargs="+", choices=ATTACKS, default=ATTACKS)
    args = parser.parse_args()
    for i, n in enumerate(args.sizes):
        folder = Path(args.folder) / str(n)
        train, hold, syn = (pd.read_csv(folder / f"{name}.csv") for name in ("training", "holdout", "synthetic"))
        if i == 0:  # compile anonymeter's numba functions before any clock starts
            for attack in ("linkability", "inference"):
                run(attack, train.iloc[:50], syn.iloc[:50], hold.iloc[:50], 10)
        for n_attacks in [500] + ([n] if n <= args.all_up_to else []):
            for attack in args.attacks:
                if attack.startswith("singling_out") and n_attacks != 500:
                    continue
                c0, t0 = _cpu(), time.perf_counter()
                run(attack, train, syn, hold, n_attacks)
                wall, cpu = time.perf_counter() - t0, _cpu() - c0
                print(
                    f"n={n:>9,}  anonymeter {attack:<18} attacks={n_attacks:>9,}  wall {wall:8.2f} s  CPU {cpu:8.2f} s"
                    f"  peak RSS {_peak_mib():,.0f} MiB  load {os.getloadavg()[0]:.2f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
