"""anonymeter 1.1.0's time on the register-shaped inputs of bench_attacks.py (side by side).

anonymeter pins numpy < 1.27, so this runs in its own environment (see
tests/reference/anonymeter/make_anonymeter_references.py for how to build it); the inputs are
written by the project's side first::

    python benchmarks/bench_attacks.py --sizes 50000 200000 --write-inputs /tmp/attack-inputs
    /tmp/anon-venv/bin/python benchmarks/bench_attacks_anonymeter.py /tmp/attack-inputs --sizes 50000 200000

Same attacks as bench_attacks.py (linkability on LINK_AUX, inference of income from INFER_AUX,
control = holdout), with 500 targets and with every record attacked (``--all-up-to``);
``n_jobs`` = 2 (the two cores); numba's compilation is done on a few records before any clock
starts.  Prints wall and CPU seconds of this process.
"""

from __future__ import annotations

import argparse
import resource
import time
from pathlib import Path

import pandas as pd
from anonymeter.evaluators import InferenceEvaluator, LinkabilityEvaluator

LINK_AUX = (["sex", "age", "municipality", "income"], ["edu", "marital", "expenditure"])
INFER_AUX = ["sex", "age", "municipality", "edu", "expenditure"]


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run(attack: str, train: pd.DataFrame, syn: pd.DataFrame, hold: pd.DataFrame, n_attacks: int) -> None:
    """One anonymeter evaluation (main, baseline and control attacks)."""
    if attack == "linkability":
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
    args = parser.parse_args()
    for i, n in enumerate(args.sizes):
        folder = Path(args.folder) / str(n)
        train, hold, syn = (pd.read_csv(folder / f"{name}.csv") for name in ("training", "holdout", "synthetic"))
        if i == 0:  # compile anonymeter's numba functions before any clock starts
            for attack in ("linkability", "inference"):
                run(attack, train.iloc[:50], syn.iloc[:50], hold.iloc[:50], 10)
        for n_attacks in [500] + ([n] if n <= args.all_up_to else []):
            for attack in ("linkability", "inference"):
                c0, t0 = _cpu(), time.perf_counter()
                run(attack, train, syn, hold, n_attacks)
                wall, cpu = time.perf_counter() - t0, _cpu() - c0
                print(
                    f"n={n:>9,}  anonymeter {attack:<12} attacks={n_attacks:>9,}  wall {wall:8.2f} s  CPU {cpu:8.2f} s"
                )


if __name__ == "__main__":
    main()
