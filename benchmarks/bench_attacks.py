"""Benchmark: DCR, linkability, inference and singling out on register-shaped data (issues 21 and 22).

Data: the register generator (``pipeline.datasets.register``: sex, single year of age,
municipality, education, ... and a model-based synthetic twin, every record drawn on its own).
``2 n`` original records are
generated: the first ``n`` are the training records, the last ``n`` the holdout; the twin's
first ``n`` records are the synthetic set.  The frames are put on the workers and waited for
before the clock starts (``harness.Bench``); each line prints wall, CPU (driver + workers),
peak RSS per worker and the load average.

Measures (all exact searches):

* ``dcr`` on ``DCR_VARS``: every synthetic record's two nearest training records and nearest
  holdout record, plus the random baseline (10,000 records);
* ``linkability`` on ``LINK_AUX`` and ``inference`` of ``income`` from ``INFER_AUX``, with
  ``--n-attacks`` targets (anonymeter's default 500) and with every record attacked
  (``--all-attacks-up-to``);
* ``singling_out`` on ``SINGLING_COLS``, univariate and multivariate (3 columns), 500 predicates.

``--measures`` picks some of them.

Run (over 1M records under the shared lock)::

    flock /tmp/sdc-bench.lock python benchmarks/bench_attacks.py --sizes 200000 1000000 --workers 2
"""

from __future__ import annotations

import argparse
from pathlib import Path

import dask.dataframe as dd
from harness import Bench, bench_client

from pipeline.evaluation.data import as_eval_data
from pipeline.evaluation.execution import Executor
from pipeline.risk.attacks.measure import InferenceMeasure, LinkabilityMeasure, SinglingOutMeasure
from pipeline.risk.distance.measure import DCRMeasure

DCR_VARS = ["sex", "age", "municipality", "edu", "marital", "income", "expenditure"]
LINK_AUX = [["sex", "age", "municipality", "income"], ["edu", "marital", "expenditure"]]
INFER_AUX = ["sex", "age", "municipality", "edu", "expenditure"]
SINGLING_COLS = ["sex", "age", "municipality", "edu", "marital", "income", "expenditure"]
MEASURES = ["dcr", "linkability", "inference", "singling_out"]
WORKER_ROWS = 250_000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[200_000, 1_000_000])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--memory-limit", default="5GiB")
    parser.add_argument("--n-attacks", type=int, default=500)
    parser.add_argument("--all-attacks-up-to", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--measures", nargs="+", choices=MEASURES, default=MEASURES)
    parser.add_argument("--write-inputs", metavar="DIR", help="only write the inputs as CSV for anonymeter's timing")
    args = parser.parse_args()
    from pipeline.datasets import register

    schema = register.register_schema()
    if args.write_inputs:
        write_inputs(register, args.sizes, Path(args.write_inputs))
        return
    with bench_client(args.workers, args.memory_limit) as client:
        executor = Executor(client, policy="blocks")
        for n in args.sizes:
            original, twin = register.register_frames(2 * n)
            parts = max(1, n // WORKER_ROWS)
            frames = [
                dd.from_pandas(f.iloc[a:b].reset_index(drop=True), npartitions=parts, sort=False)
                for f, (a, b) in ((original, (0, n)), (twin, (0, n)), (original, (n, 2 * n)))
            ]
            del original, twin
            bench = Bench(client)
            train, syn, hold = bench.ready(*frames)
            data = as_eval_data(train, [syn], schema=schema, holdout=hold)
            jobs = [
                ("dcr", DCRMeasure(vars=DCR_VARS)),
                ("linkability", LinkabilityMeasure(aux_cols=LINK_AUX, n_attacks=args.n_attacks)),
                ("inference", InferenceMeasure(aux_cols=INFER_AUX, secret="income", n_attacks=args.n_attacks)),
            ]
            if n <= args.all_attacks_up_to:
                jobs += [
                    ("linkability all", LinkabilityMeasure(aux_cols=LINK_AUX, n_attacks=None)),
                    ("inference all", InferenceMeasure(aux_cols=INFER_AUX, secret="income", n_attacks=None)),
                ]
            jobs += [
                ("singling_out uni", SinglingOutMeasure(cols=SINGLING_COLS, mode="univariate")),
                ("singling_out multi", SinglingOutMeasure(cols=SINGLING_COLS, mode="multivariate", n_cols=3)),
            ]
            for label, measure in (j for j in jobs if j[0].split()[0] in args.measures):
                measure.check(data)
                timing, got = bench.time(
                    lambda m=measure, d=data: m.evaluate(d, executor), [train, syn, hold], args.repeat
                )
                values = {r.measure: r.value for r in got.rows()}
                shown = {k: round(v, 4) for k, v in values.items() if k in SHOWN}
                print(f"n={n:>9,}  {label:<16} {timing.line()}  {shown}", flush=True)


def write_inputs(register, sizes: list[int], folder: Path) -> None:
    """training / holdout / synthetic CSVs of each size (what bench_attacks_anonymeter.py reads)."""
    for n in sizes:
        original, twin = register.register_frames(2 * n)
        target = folder / str(n)
        target.mkdir(parents=True, exist_ok=True)
        columns = sorted({*DCR_VARS, *INFER_AUX, *LINK_AUX[0], *LINK_AUX[1], "income"})
        original.iloc[:n][columns].to_csv(target / "training.csv", index=False)
        original.iloc[n:][columns].to_csv(target / "holdout.csv", index=False)
        twin.iloc[:n][columns].to_csv(target / "synthetic.csv", index=False)
        print(f"wrote {target}", flush=True)


SHOWN = {"dcr_median", "closer_to_training", "dcr_zero_pct", "main_rate", "control_rate", "risk", "risk_upper",
         "predicates"}  # fmt: skip

if __name__ == "__main__":
    main()
