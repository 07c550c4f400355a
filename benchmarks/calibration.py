"""Calibration of every holdout verdict on known truth: false-positive rate and power (docs/calibration.md).

Scenarios are built from real records, so the truth is known:

* **null** — a three-way split of a bundled survey (SD2011, CEdata) or of the generated
  register into training, holdout and *other* real records; the "release" is other real
  records (m sets of the training part's size, each drawn from the other records): no
  synthesiser saw the training part, so every "adds risk" verdict is a false positive.  Two designs: training = holdout
  (``1:1``) and training = 4 × holdout (``4:1``).
* **leak** — each released set is the training records in a shuffled order with every numeric
  value multiplied by a factor drawn uniformly in [0.99, 1.01].
* **near-copy** — each released set is the training records in a shuffled order with 30 % of
  them replaced by other real records (70 % exact copies).
* **cart** — a memorising synthesis: the project's CART synthesiser (synthpop's ``syn.cart``,
  :func:`~pipeline.synth.partial.syn.synthesise_partial`) with ``minbucket`` 1 fitted to the
  training records, every variable synthesised (the first drawn by ``sample``, as synthpop does).

The identification risk needs row-aligned partially synthetic sets: its release keeps the
training records' known variables and takes the synthesised ones from an other real record with
the same categorical known values (null), from the training record itself with ±1 % noise (leak),
or from the training record for 70 % of the records (near-copy), or synthesises them by the
memorising CART from every known variable (``visit_sequence: kept_first``).

Every measure runs the way a task runs it (``pipeline.evaluation.baseline.evaluate``: holdout
baselines with their permutation intervals) and its verdict is read from the report's excess
table (:func:`verdicts`, the only place that knows that table).  ``R`` seeded repetitions per
scenario give the share of "adds risk" verdicts: the false-positive rate on the nulls, the
power on the leaks.  Repetitions run in ``--jobs`` processes; CPU seconds are those of every
process.

    python benchmarks/calibration.py                       # R = 50 nulls, 5 per positive control
    python benchmarks/calibration.py --reps 10 --controls 4 --datasets sd2011
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import resource
import sys
import time
import warnings
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import binom

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tree this script is in, not an installed one

from pipeline.data.schema import Schema
from pipeline.datasets import load_demo
from pipeline.datasets.register import register_frames, register_schema
from pipeline.evaluation.base import rows_frame
from pipeline.evaluation.baseline import BaselineOptions, evaluate
from pipeline.evaluation.data import as_eval_data
from pipeline.evaluation.execution import Executor
from pipeline.measures import REGISTRY
from pipeline.report.baselines import ADDS_RISK, excess_summary
from pipeline.synth.partial.syn import synthesise_partial

#: nominal false-positive rate of a verdict: an interval above 0 at 95 % (one side: 2.5 %)
NOMINAL = 0.025
#: the issue's bound on the false-positive rate (before the binomial slack)
FPR_BOUND = 0.05
#: the pools, in the order their seeds use
SURVEYS = ("sd2011", "cedata", "register")
#: records of the generated register pool
REGISTER_ROWS = 6000
#: share of the near-copy's records replaced by other real records
NEAR_COPY_REPLACED = 0.3
#: relative noise of the leak's numeric values
LEAK_NOISE = 0.01
#: synthpop's 1-way / 2-way flag thresholds (count, %) out of reach: the flag tables are read by no
#: verdict, and building them took a third of disclosure's time (repU and DiSCO are unchanged)
NO_FLAGS = {"thresh_1way": (10**9, 100.0), "thresh_2way": (10**9, 100.0)}
#: the memorising CART's smallest leaf (synthpop's default is 5)
MEMORISING_MINBUCKET = 1
#: the truths, in the order their columns are shown: "null" is the false-positive rate, the others power
TRUTHS = ("null", "leak", "near-copy", "cart")


@dataclass(frozen=True)
class Survey:
    """A pool of real records and the measures calibrated on it (task type, entry name, params)."""

    name: str
    frame: pd.DataFrame
    schema: Schema
    cont_na: dict[str, tuple[float, ...]]
    measures: tuple[tuple[str, str, dict], ...]
    #: identification risk: categorical known variables and the synthesised variable
    idrisk_cells: tuple[str, ...]
    idrisk_synthesised: str
    #: records of training (1:1 design); the 4:1 design takes twice as many for training
    size: int


def _attacks(link: tuple[list[str], list[str]], infer: list[str], secret: str) -> list[tuple[str, str, dict]]:
    fast = {"n_attacks": 300}
    return [
        ("singling_out", "singling_out_uni", {"mode": "univariate", "n_attacks": 100}),
        ("singling_out", "singling_out_multi", {"mode": "multivariate", "n_attacks": 100, "max_attempts": 20_000}),
        ("linkability", "linkability", {"aux_cols": [list(link[0]), list(link[1])], **fast}),
        ("inference", "inference", {"aux_cols": infer, "secret": secret, **fast}),
    ]


def _idrisk(known: list[str], synthesised: str) -> tuple[str, str, dict]:
    scenario = {"known": known, "synthesised": [synthesised]}
    grid = [0.01, 0.025, 0.05, 0.1, 0.2]
    return ("identification_risk", "identification_risk", {"scenarios": {"s": scenario}, "radius_grid": grid,
                                                          "na_action": "no_match"})  # fmt: skip


def _frame(name: str) -> tuple[pd.DataFrame, Schema, dict[str, tuple[float, ...]]]:
    data = load_demo(name)
    return data.to_pandas().reset_index(drop=True), data.schema, dict(data.schema.cont_na)


def surveys(names: Sequence[str]) -> list[Survey]:
    """The pools of the named data sets with their measures."""
    out = []
    if "sd2011" in names:
        frame, schema, codes = _frame("sd2011_subset")
        keys = ["sex", "agegr", "edu", "marital"]
        factors = ["sex", "agegr", "placesize", "edu", "socprof", "marital", "ls", "smoke"]
        measures = [
            ("disclosure", "disclosure", {"keys": keys, "targets": ["ls", "smoke"], **NO_FLAGS}),
            _idrisk(keys, "income"),
            ("dcr", "dcr", {}),
            ("dcr", "dcr_discrete", {"vars": factors}),
            *_attacks(
                (["sex", "age", "edu", "placesize"], ["marital", "income", "socprof"]),
                ["sex", "age", "edu", "marital", "placesize"],
                "income",
            ),
        ]
        out.append(Survey("sd2011", frame, schema, codes, tuple(measures), tuple(keys), "income", 800))
    if "cedata" in names:
        frame, schema, codes = _frame("cedata")
        keys = ["Urban", "Tenure", "Educ", "Marital"]
        measures = [
            (
                "disclosure",
                "disclosure",
                {"keys": keys, "targets": ["Income"], "ngroups_targets": {"Income": 5}, **NO_FLAGS},
            ),
            _idrisk(keys, "Income"),
            ("dcr", "dcr", {}),
            ("dcr", "dcr_discrete", {"vars": keys}),
            *_attacks((["Urban", "Tenure", "Educ"], ["Marital", "Income"]), [*keys, "Age"], "Income"),
        ]
        out.append(Survey("cedata", frame, schema, codes, tuple(measures), tuple(keys), "Income", 900))
    if "register" in names:
        frame, _ = register_frames(REGISTER_ROWS)
        schema = register_schema()
        keys = ["sex", "region", "edu", "marital"]
        factors = ["sex", "region", "edu", "marital", "employment", "hhsize", "tenure", "health", "car"]
        measures = [
            ("disclosure", "disclosure", {"keys": keys, "targets": ["tenure", "health"], **NO_FLAGS}),
            _idrisk(keys, "income"),
            ("dcr", "dcr", {"vars": [*factors, "age", "income", "expenditure"]}),
            ("dcr", "dcr_discrete", {"vars": factors}),
            *_attacks(
                (["sex", "age", "region", "edu"], ["marital", "income", "employment"]),
                ["sex", "age", "region", "edu", "marital"],
                "income",
            ),
        ]
        frame = schema.apply(frame, "register")
        out.append(Survey("register", frame, schema, {}, tuple(measures), tuple(keys), "income", 1000))
    return out


@dataclass(frozen=True)
class Scenario:
    survey: str
    design: str  # "1:1" or "4:1"
    truth: str  # one of TRUTHS
    m: int


def _sizes(survey: Survey, design: str) -> tuple[int, int]:
    """(training, holdout) records of a design: training, holdout and one set of the training
    part's size fit the pool."""
    return (survey.size, survey.size) if design == "1:1" else (2 * survey.size, survey.size // 2)


def _noisy(frame: pd.DataFrame, schema: Schema, codes: dict, rng: np.random.Generator) -> pd.DataFrame:
    out = frame.copy()
    for v in schema.numerics:
        x = out[v].to_numpy(dtype=np.float64)
        special = np.isin(x, codes.get(v, ()))
        noisy = x * rng.uniform(1 - LEAK_NOISE, 1 + LEAK_NOISE, len(x))
        if schema[v].kind == "integer":
            noisy = np.round(noisy)
        out[v] = np.where(special, x, noisy)
    return out


def _released(survey: Survey, truth: str, training: pd.DataFrame, other: pd.DataFrame, rng) -> pd.DataFrame:
    """One released set of the training part's size (``other``: real records no one trained on)."""
    if truth == "null":
        return other.reset_index(drop=True)
    copy = training.iloc[rng.permutation(len(training))].reset_index(drop=True)
    if truth == "leak":
        return _noisy(copy, survey.schema, survey.cont_na, rng)
    replaced = rng.random(len(copy)) < NEAR_COPY_REPLACED
    copy.loc[replaced] = other.iloc[: int(replaced.sum())].to_numpy()
    return copy


def _aligned(survey: Survey, truth: str, training: pd.DataFrame, others: pd.DataFrame, rng) -> pd.DataFrame:
    """The identification risk's row-aligned release: the synthesised variable of another real
    record with the same categorical known values (null, and the replaced 30 % of a near-copy) or
    the training record's own (leak: with ±1 % noise)."""
    v = survey.idrisk_synthesised
    out = training.reset_index(drop=True).copy()
    if truth == "leak":
        out[[v]] = _noisy(out[[v]], survey.schema.select([v]), survey.cont_na, rng)
        return out
    cells = list(survey.idrisk_cells)
    donors = others.reset_index(drop=True)
    both = pd.concat([donors[cells], out[cells]], ignore_index=True)
    group = both.groupby(cells, dropna=False, observed=True, sort=False).ngroup().to_numpy()
    donor_group, target_group = group[: len(donors)], group[len(donors) :]
    by_group = np.argsort(donor_group, kind="stable")
    count = np.bincount(donor_group, minlength=group.max() + 1)
    start = np.concatenate([[0], np.cumsum(count)[:-1]])
    has = count[target_group] > 0  # a cell without another real record: any other record
    within = start[target_group] + np.floor(rng.random(len(out)) * np.maximum(count[target_group], 1)).astype(int)
    picks = np.where(has, by_group[np.minimum(within, len(donors) - 1)], rng.integers(0, len(donors), len(out)))
    drawn = donors[v].to_numpy()[picks]
    replace = np.ones(len(out), dtype=bool) if truth == "null" else rng.random(len(out)) < NEAR_COPY_REPLACED
    out[v] = np.where(replace, drawn, out[v].to_numpy())
    return out


def _memorised(
    survey: Survey, training: pd.DataFrame, m: int, seed: int, synthesised: Sequence[str] | None = None
) -> list[pd.DataFrame]:
    """m sets of the memorising CART fitted to ``training``: every variable synthesised, or only
    ``synthesised`` (the others kept, visited first: row-aligned, each record's own known values)."""
    frame = training.reset_index(drop=True)
    method = dict.fromkeys(synthesised if synthesised is not None else frame.columns, "cart")
    order = {"visit_sequence": "kept_first"} if synthesised is not None else {}
    with warnings.catch_warnings():  # "synthesised with no predictors": the first variable, by design
        warnings.simplefilter("ignore")
        result = synthesise_partial(frame, schema=survey.schema, method=method, m=m, seed=seed,
                                    cart_minbucket=MEMORISING_MINBUCKET, **order)  # fmt: skip
    return [s.reset_index(drop=True) for s in result.synthetic]


def verdicts(results: pd.DataFrame) -> dict[str, dict[str, float | bool]]:
    """Per figure of the report's excess table: whether its verdict is "the synthesis adds risk"
    (``positive``), its difference and the smallest difference its interval could detect
    (``detectable``, both in the table's unit: percentage points).

    The one place that reads the report's verdicts: keep it in step with
    :func:`pipeline.report.baselines.excess_summary`.
    """
    table = excess_summary(results)
    return {
        str(f): {"positive": v == ADDS_RISK, "difference": float(d), "detectable": float(x)}
        for f, v, d, x in zip(table["figure"], table["verdict"], table["difference"], table["detectable"], strict=True)
    }


def _results(
    survey: Survey, scenario: Scenario, rep: int, executor: Executor, permutations: int, only: Sequence[str] = ()
) -> pd.DataFrame:
    """The results table of one repetition of one scenario (the survey's measures, or those named ``only``)."""
    seed = [SURVEYS.index(scenario.survey), ("1:1", "4:1").index(scenario.design), rep]
    rng = np.random.default_rng(seed)
    n_train, n_hold = _sizes(survey, scenario.design)
    order = rng.permutation(len(survey.frame))
    pool = survey.frame.iloc[order].reset_index(drop=True)
    training, holdout = pool.iloc[:n_train], pool.iloc[n_train : n_train + n_hold]
    rest = pool.iloc[n_train + n_hold :]
    # each set: other real records, drawn from the rest on its own (sets may share records)
    others = [rest.iloc[rng.choice(len(rest), n_train, replace=False)] for _ in range(scenario.m)]
    if scenario.truth == "cart":
        seed = int(rng.integers(2**31))
        released = _memorised(survey, training, scenario.m, seed)
        aligned = _memorised(survey, training, scenario.m, seed, [survey.idrisk_synthesised])
    else:
        released = [_released(survey, scenario.truth, training, o, rng) for o in others]
        aligned = [_aligned(survey, scenario.truth, training, rest, rng) for _ in range(scenario.m)]
    options = BaselineOptions(seed=rep, permutations=permutations, bootstrap=0)
    tables = []
    for type_, name, params in survey.measures:
        if only and name not in only:
            continue
        sets = aligned if type_ == "identification_risk" else released
        data = as_eval_data(training.reset_index(drop=True), sets, schema=survey.schema, cont_na=survey.cont_na,
                            holdout=holdout.reset_index(drop=True))  # fmt: skip
        entry = REGISTRY[type_]
        measure = entry.measure(params | ({"seed": rep} if "seed" in entry.params_model.model_fields else {}))
        table = rows_frame(evaluate(measure, data, executor, options).rows())
        meta = {"dataset": survey.name, "source": scenario.truth, "repetition": 0, "family": entry.family,
                "type": type_, "measure_name": name}  # fmt: skip
        for i, (column, value) in enumerate(meta.items()):
            table.insert(i, column, value)
        tables.append(table)
    return pd.concat(tables, ignore_index=True)


@dataclass(frozen=True)
class Plan:
    """What to run: data sets, designs, m, repetitions per truth, measures (entry names; all: ())."""

    datasets: tuple[str, ...] = SURVEYS
    designs: tuple[str, ...] = ("1:1", "4:1")
    ms: tuple[int, ...] = (1, 3)
    repetitions: tuple[tuple[str, int], ...] = (("null", 50), ("leak", 5), ("near-copy", 5), ("cart", 5))
    measures: tuple[str, ...] = ()
    permutations: int = 19

    def jobs(self) -> list[tuple[Scenario, int, Plan]]:
        """Every (scenario, repetition) with this plan, repetition by repetition (a run stopped
        early has about as many repetitions of every scenario)."""
        most = max(count for _, count in self.repetitions)
        return [
            (Scenario(name, design, truth, m), rep, self)
            for rep in range(most)
            for name in self.datasets
            for design in self.designs
            for m in self.ms
            for truth, count in self.repetitions
            if rep < count
        ]


_SURVEYS: dict[str, Survey] = {}


def _one(job: tuple[Scenario, int, Plan]) -> tuple[Scenario, int, dict[str, dict[str, float | bool]], float]:
    """One repetition (in a worker process): its verdicts and CPU seconds."""
    scenario, rep, plan = job
    if scenario.survey not in _SURVEYS:
        _SURVEYS.update({s.name: s for s in surveys([scenario.survey])})
    start = time.process_time()
    results = _results(_SURVEYS[scenario.survey], scenario, rep, Executor(policy="memory"), plan.permutations,
                       plan.measures)  # fmt: skip
    return scenario, rep, verdicts(results), time.process_time() - start


def run(plan: Plan, jobs: int = 1, progress: str | None = None) -> tuple[pd.DataFrame, float]:
    """Verdicts of every repetition (one row per scenario, repetition and figure) and the CPU
    seconds; ``progress``: a CSV file each finished repetition's rows are appended to."""
    rows: list[dict] = []
    cpu = 0.0
    with ProcessPoolExecutor(jobs) if jobs > 1 else contextlib.nullcontext() as pool:
        done = pool.map(_one, plan.jobs(), chunksize=1) if pool is not None else map(_one, plan.jobs())
        for scenario, rep, found, seconds in done:
            cpu += seconds
            these = [
                {**scenario.__dict__, "rep": rep, "figure": _figure_name(f), **figures, "cpu": seconds}
                for f, figures in found.items()
            ]
            if progress:
                pd.DataFrame(these).to_csv(progress, mode="a", header=not rows, index=False)
            rows += these
    return pd.DataFrame(rows), cpu


def _figure_name(figure: str) -> str:
    """The measure a figure of the excess table belongs to (its entry name, or the baseline
    figure; the dcr entries' second figure: "<entry> nndr")."""
    entry = figure.split(":")[0].replace(" (%)", "")
    return f"{entry} nndr" if "NNDR" in figure else entry


def slack(reps: int, rate: float = FPR_BOUND, level: float = 0.95) -> float:
    """Binomial slack: the largest share of false positives in ``reps`` repetitions that is still
    consistent (one-sided ``level``) with a true rate of ``rate``, minus ``rate``."""
    return float(binom.ppf(level, reps, rate)) / reps - rate


def table(found: pd.DataFrame) -> pd.DataFrame:
    """Per figure: false-positive rate (nulls) for each m and design, and power (leak, near-copy)."""
    share = found.groupby(["figure", "truth", "m", "design"])["positive"].mean()
    wide = share.unstack(["truth", "m", "design"])
    columns = {}
    for truth in TRUTHS:
        for m in sorted(found["m"].unique()):
            for design in ("1:1", "4:1"):
                if (truth, m, design) in wide.columns:
                    label = "FPR" if truth == "null" else f"power {truth}"
                    columns[f"{label} m={m} {design}"] = wide[(truth, m, design)]
    return pd.DataFrame(columns)


def informative(found: pd.DataFrame, m: int = 1) -> pd.DataFrame:
    """Per figure and design (sets ``m``): the median smallest detectable difference on the nulls
    and the median difference on each positive control (percentage points). A control whose
    difference is below the detectable one is not informative at that split: "no excess
    detected" is then what the verdict should say, and the power cannot reach 90 %."""
    part = found[found["m"] == m]
    columns = {}
    for design in ("1:1", "4:1"):
        here = part[part["design"] == design]
        if here.empty:
            continue
        columns[f"detectable {design}"] = here[here["truth"] == "null"].groupby("figure")["detectable"].median()
        for truth in TRUTHS[1:]:
            done = here[here["truth"] == truth]
            if len(done):
                columns[f"{truth} {design}"] = done.groupby("figure")["difference"].median()
    return pd.DataFrame(columns)


def projected_cpu(found: pd.DataFrame, plan: Plan) -> float:
    """CPU seconds ``plan`` would take at the measured CPU seconds per repetition of each data set,
    m and truth (the cart control fits a synthesis; a cell not measured takes its data set's mean)."""
    reps = found.drop_duplicates(["survey", "design", "truth", "m", "rep"])
    per = reps.groupby(["survey", "m", "truth"])["cpu"].mean()
    fallback = reps.groupby("survey")["cpu"].mean()
    return float(
        sum(per.get((s.survey, s.m, s.truth), fallback.get(s.survey, reps["cpu"].mean())) for s, _, _ in plan.jobs())
    )


def markdown(frame: pd.DataFrame, cell: str = "{:.0f} %", scale: float = 100.0) -> str:
    head = "| figure | " + " | ".join(frame.columns) + " |"
    rule = "|---|" + "---|" * len(frame.columns)
    lines = [head, rule]
    for name, row in frame.iterrows():
        cells = ["–" if math.isnan(v) else cell.format(scale * v) for v in row]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


#: the plan of the default command (R = 50 per null, 5 per positive control)
DEFAULT_PLAN = Plan(datasets=("sd2011", "cedata"), repetitions=(("null", 50), *((t, 5) for t in TRUTHS[1:])))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    counts = dict(DEFAULT_PLAN.repetitions)
    parser.add_argument("--datasets", nargs="+", default=list(DEFAULT_PLAN.datasets), choices=SURVEYS)
    parser.add_argument("--reps", type=int, default=counts["null"], help="repetitions per null scenario")
    parser.add_argument("--controls", type=int, default=counts["leak"], help="repetitions per positive control")
    parser.add_argument("--m", type=int, nargs="+", default=[1, 3])
    parser.add_argument("--measures", nargs="*", default=[], help="entry names (default: all)")
    parser.add_argument("--permutations", type=int, default=19)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", help="write every verdict to this CSV (as the repetitions finish)")
    args = parser.parse_args()
    plan = Plan(
        datasets=tuple(args.datasets),
        ms=tuple(args.m),
        repetitions=(("null", args.reps), *((truth, args.controls) for truth in TRUTHS[1:])),
        measures=tuple(args.measures),
        permutations=args.permutations,
    )
    load = os.getloadavg()[0]
    wall = time.perf_counter()
    if args.out and os.path.exists(args.out):
        os.remove(args.out)
    found, cpu = run(plan, args.jobs, args.out)
    wall = time.perf_counter() - wall
    print(markdown(table(found)))
    print("\nSmallest detectable difference on the nulls and the controls' differences (m = 1, pp, medians):\n")
    print(markdown(informative(found), "{:.1f}", 1.0))
    per_rep = found.drop_duplicates(["survey", "design", "truth", "m", "rep"]).groupby("m")["cpu"].mean()
    default = projected_cpu(found, DEFAULT_PLAN)
    print(
        "\nCPU s per repetition: "
        + ", ".join(f"m = {m} {v:.2f}" for m, v in per_rep.items())
        + f"; the default command ({len(DEFAULT_PLAN.jobs())} repetitions) at these figures: {default:.0f} CPU s, "
        f"{default / 2 / 60:.1f} min on 2 cores (CPU s measured at this run's load; more than idle when loaded)"
    )
    print(
        f"\nR = {args.reps} per null (binomial slack at 5 %: +{100 * slack(args.reps):.1f} pp), "
        f"{args.controls} per positive control; permutations {args.permutations}; jobs {args.jobs}; "
        f"wall {wall:.0f} s, CPU {cpu:.0f} s in the repetitions (children {_children_cpu():.0f} s); "
        f"load {load:.2f} -> {os.getloadavg()[0]:.2f}"
    )


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


if __name__ == "__main__":
    main()
