"""Regenerate the anonymeter 1.1.0 references (anonymeter_attacks.json) in their own environment.

anonymeter pins numpy < 1.27, so it cannot share the project's environment; build one::

    python3.11 -m venv /tmp/anon-venv && /tmp/anon-venv/bin/pip install 'anonymeter==1.1.0'
    /tmp/anon-venv/bin/python tests/reference/anonymeter/make_anonymeter_references.py
    /tmp/anon-venv/bin/python tests/reference/anonymeter/make_anonymeter_references.py --repeated
    /tmp/anon-venv/bin/python tests/reference/anonymeter/make_anonymeter_references.py --singling-out cedata
    /tmp/anon-venv/bin/python tests/reference/anonymeter/make_anonymeter_references.py --singling-out sd2011

Deterministic configuration: every record is attacked (the training slice and the control
slice each in full), so the counts do not depend on anonymeter's unseeded sampling; only the
baseline (random guessing) does, and it is not compared.  Per case the JSON holds

* ``main_successes`` / ``control_successes``: the evaluator's counts (``LinkabilityEvaluator`` /
  ``InferenceEvaluator`` with ``n_attacks`` = all records, training resp. control as ``ori``);
* ``main_outcomes`` / ``control_outcomes``: each record's success ("0"/"1", record order), from
  anonymeter's own neighbour search called on the records in order;
* ``main_ambiguous`` / ``control_ambiguous``: records whose k-th and (k+1)-th nearest synthetic
  records are equally far by anonymeter's distance (to 1e-9): which one a search returns is
  arbitrary (anonymeter's numba argsort), so their outcome may differ between implementations.

Factor columns are given to anonymeter as text (it would treat integer-coded factors as numeric).

``--singling-out NAME`` writes anonymeter_singling_out_NAME.json (one data set per process, so
the two can run side by side; the file is rewritten after every run and a later call resumes
it): the
``SinglingOutEvaluator`` on every column of the same slices (SD2011's special missing code
income = -8 given as missing, as the project's schema reads it), univariate and multivariate
(n_cols = 3), ``n_attacks`` = 500, seeds 0 .. SO_SEEDS - 1 (its own ``seed`` argument): main,
control (rescaled by anonymeter's fit where the deduplicated sizes differ) and baseline counts
per seed.  Deterministic part (``fixed``):

* univariate with every candidate predicate (n_attacks above their number): the predicates
  found, and how many single out a record of the training slice and of the control slice
  (before any rescaling);
* multivariate predicates from fixed synthetic records (positions in the deduplicated
  synthetic set) and fixed column triples, built by anonymeter's ``_query_from_record`` with
  the synthetic medians: their counts in the synthetic set, the training and the control slice.
"""

from __future__ import annotations

import json
import sys
from importlib.metadata import version
from pathlib import Path

import numpy as np
import pandas as pd
from anonymeter.evaluators import InferenceEvaluator, LinkabilityEvaluator
from anonymeter.evaluators.inference_evaluator import evaluate_inference_guesses
from anonymeter.neighbors.mixed_types_kneighbors import _nearest_neighbors
from anonymeter.preprocessing.transformations import mixed_types_transform
from anonymeter.preprocessing.type_detection import detect_consistent_col_types

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "pipeline" / "datasets"
OUT = Path(__file__).with_name("anonymeter_attacks.json")
REPEATED_OUT = Path(__file__).with_name("anonymeter_repeated.json")
#: repeated sampled runs (``--repeated``): n_attacks targets per run, seeds 0 .. SEEDS - 1
N_ATTACKS, SEEDS = 500, 30
REPEATED = ["cedata_infer_income", "cedata_infer_tenure"]

DATASETS = {
    "cedata": {
        "original": "cedata.csv",
        "synthetic": "cedata_syn_income_1.csv",
        "factors": ["Urban", "Tenure", "Educ", "Marital"],
        "training": [0, 4000],
        "control": [4000, 5571],
    },
    "sd2011": {
        "original": "sd2011_subset.csv",
        "synthetic": "sd2011_cart_syn1.csv",
        "factors": ["sex", "agegr", "placesize", "region", "edu", "socprof", "marital", "ls", "smoke"],
        "training": [0, 4000],
        "control": [4000, 5000],
    },
}

CASES = [
    {"name": "cedata_link_k1", "data": "cedata", "attack": "linkability", "n_neighbors": 1,
     "aux_cols": [["Expenditure", "Urban"], ["Income", "Age", "Marital"]]},
    {"name": "cedata_link_k3", "data": "cedata", "attack": "linkability", "n_neighbors": 3,
     "aux_cols": [["Expenditure", "Urban"], ["Income", "Age", "Marital"]]},
    {"name": "cedata_infer_income", "data": "cedata", "attack": "inference", "secret": "Income",
     "regression": True, "aux_cols": ["Age", "Urban", "Marital", "Expenditure"]},
    {"name": "cedata_infer_tenure", "data": "cedata", "attack": "inference", "secret": "Tenure",
     "regression": False, "aux_cols": ["Age", "Expenditure", "Income"]},
    {"name": "sd2011_infer_marital", "data": "sd2011", "attack": "inference", "secret": "marital",
     "regression": False, "aux_cols": ["sex", "age", "region", "placesize"]},
]  # fmt: skip


def _read(path: Path, factors: list[str]) -> pd.DataFrame:
    frame = pd.read_csv(path)
    for v in factors:
        frame[v] = frame[v].map(lambda x: x if pd.isna(x) else str(x)).astype(object)
    return frame


def _neighbours(targets: pd.DataFrame, syn: pd.DataFrame, k: int) -> tuple[np.ndarray, np.ndarray]:
    """anonymeter's own search (as MixedTypeKNeighbors runs it), with one more neighbour to see ties."""
    ctypes = detect_consistent_col_types(syn, targets)
    candidates, queries = mixed_types_transform(syn, targets, num_cols=ctypes["num"], cat_cols=ctypes["cat"])
    cols = ctypes["num"] + ctypes["cat"]
    idx, dist = _nearest_neighbors(queries[cols].values, candidates[cols].values, len(ctypes["num"]), k + 1)
    ambiguous = np.abs(dist[:, k] - dist[:, k - 1]) <= 1e-9
    return idx[:, :k], ambiguous


def _outcomes(case: dict, targets: pd.DataFrame, syn: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    if case["attack"] == "linkability":
        k = case["n_neighbors"]
        (i0, a0), (i1, a1) = (_neighbours(targets[cols], syn[cols], k) for cols in case["aux_cols"])
        linked = np.array([len(set(r0) & set(r1)) > 0 for r0, r1 in zip(i0, i1, strict=True)])
        return linked, a0 | a1
    idx, ambiguous = _neighbours(targets[case["aux_cols"]], syn[case["aux_cols"]], 1)
    guesses = syn[case["secret"]].iloc[idx[:, 0]]
    guesses.index = targets.index
    right = evaluate_inference_guesses(guesses, targets[case["secret"]], regression=case["regression"])
    return np.asarray(right), ambiguous


def _count(case: dict, targets: pd.DataFrame, syn: pd.DataFrame) -> int:
    if case["attack"] == "linkability":
        evaluator = LinkabilityEvaluator(
            ori=targets, syn=syn, aux_cols=tuple(case["aux_cols"]), n_attacks=None, n_neighbors=case["n_neighbors"]
        )
        return int(evaluator.evaluate(n_jobs=1).results().n_success)
    evaluator = InferenceEvaluator(
        ori=targets,
        syn=syn,
        aux_cols=case["aux_cols"],
        secret=case["secret"],
        regression=case["regression"],
        n_attacks=len(targets),
    )
    return int(evaluator.evaluate(n_jobs=1).results().n_success)


def _bits(x: np.ndarray) -> str:
    return "".join("1" if v else "0" for v in x)


def repeated() -> None:
    """Sampled runs as users make them (``n_attacks`` = 500, control given), numpy's global
    generator seeded before each (pandas samples from it): counts per seed, for a test that our
    rates are statistically indistinguishable from anonymeter's."""
    out = {"made_with": {"anonymeter": version("anonymeter"), "numpy": version("numpy")}, "n_attacks": N_ATTACKS,
           "datasets": DATASETS, "cases": {}}  # fmt: skip
    for case in (c for c in CASES if c["name"] in REPEATED):
        spec = DATASETS[case["data"]]
        original = _read(DATA / spec["original"], spec["factors"])
        syn = _read(DATA / spec["synthetic"], spec["factors"])
        train = original.iloc[slice(*spec["training"])].reset_index(drop=True)
        control = original.iloc[slice(*spec["control"])].reset_index(drop=True)
        runs = []
        for seed in range(SEEDS):
            np.random.seed(seed)
            evaluator = InferenceEvaluator(
                ori=train, syn=syn, aux_cols=case["aux_cols"], secret=case["secret"],
                regression=case["regression"], n_attacks=N_ATTACKS, control=control,
            )  # fmt: skip
            r = evaluator.evaluate(n_jobs=1).results()
            runs.append({"seed": seed, "main": int(r.n_success), "control": int(r.n_control),
                         "baseline": int(r.n_baseline)})  # fmt: skip
        out["cases"][case["name"]] = {**case, "runs": runs}
    REPEATED_OUT.write_text(json.dumps(out, indent=1) + "\n")


SO_OUT = "anonymeter_singling_out_{name}.json"
SO_SEEDS = 20
SO_MODES = {"univariate": {"mode": "univariate"}, "multivariate": {"mode": "multivariate", "n_cols": 3}}
#: fixed multivariate predicates per data set (records and column triples drawn with this seed)
SO_FIXED, SO_FIXED_SEED = 300, 12345


def _singling_data(name: str) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    spec = DATASETS[name]
    original = _read(DATA / spec["original"], spec["factors"])
    syn = _read(DATA / spec["synthetic"], spec["factors"])
    if "income" in original:  # the special missing code (cont.na) as missing, as our schema has it
        for frame in (original, syn):
            frame["income"] = frame["income"].where(frame["income"] != -8)
    train = original.iloc[slice(*spec["training"])].reset_index(drop=True)
    control = original.iloc[slice(*spec["control"])].reset_index(drop=True)
    return train, control, syn


def _fixed_singling(name: str) -> dict:
    import polars as pl
    from anonymeter.evaluators import singling_out_evaluator as so

    train, control, syn = _singling_data(name)
    frames = {k: pl.DataFrame(f).unique(maintain_order=True) for k, f in (("train", train), ("control", control),
                                                                         ("syn", syn))}  # fmt: skip
    candidates = so.univariate_singling_out_queries(frames["syn"], n_queries=10**9, rng=np.random.default_rng(0))
    uni = {k: int(sum(c == 1 for c in so._evaluate_queries(frames[k], candidates))) for k in ("train", "control")}
    rng = np.random.default_rng(SO_FIXED_SEED)
    syn_u = frames["syn"]
    rows = rng.integers(0, syn_u.height, SO_FIXED).tolist()
    cols = [sorted(rng.choice(syn_u.columns, size=3, replace=False).tolist()) for _ in range(SO_FIXED)]
    medians = syn_u.median().to_dicts()[0]
    dtypes = {c: syn_u[c].dtype for c in syn_u.columns}
    records = syn_u[rows].to_dicts()
    queries = [so._query_from_record(r, dtypes, c, medians, rng) for r, c in zip(records, cols, strict=True)]
    counts = {k: [int(c) for c in so._evaluate_queries(frames[k], queries)] for k in ("syn", "train", "control")}
    return {
        "distinct": {k: f.height for k, f in frames.items()},
        "univariate_predicates": len(candidates),
        "univariate_main": uni["train"],
        "univariate_control": uni["control"],
        "multivariate_rows": rows,
        "multivariate_cols": cols,
        "multivariate_counts": counts,
    }


def singling_out(name: str) -> None:
    """Singling out on a CEdata or SD2011 slice: the fixed predicates and repeated seeded runs."""
    from anonymeter.evaluators import SinglingOutEvaluator

    path = Path(__file__).with_name(SO_OUT.format(name=name))
    if path.exists():  # resume: the file is rewritten after every run
        out = json.loads(path.read_text())
    else:
        out = {"made_with": {"anonymeter": version("anonymeter"), "numpy": version("numpy"),
                             "polars": version("polars")},
               "n_attacks": N_ATTACKS, "seeds": SO_SEEDS, "dataset": DATASETS[name], "cases": {},
               "fixed": _fixed_singling(name)}  # fmt: skip
    train, control, syn = _singling_data(name)
    for mode, kw in SO_MODES.items():
        case = out["cases"].setdefault(f"{name}_{mode}", {"data": name, **kw, "runs": []})
        for seed in range(len(case["runs"]), SO_SEEDS):
            evaluator = SinglingOutEvaluator(
                ori=train, syn=syn, control=control, n_attacks=N_ATTACKS, n_cols=kw.get("n_cols", 3), seed=seed
            )
            r = evaluator.evaluate(mode=mode).results()
            case["runs"].append({"seed": seed, "main": int(r.n_success), "control": float(r.n_control),
                                 "baseline": int(r.n_baseline)})  # fmt: skip
            path.write_text(json.dumps(out, indent=1) + "\n")


def main() -> None:
    if "--singling-out" in sys.argv:
        singling_out(sys.argv[sys.argv.index("--singling-out") + 1])
        return
    if "--repeated" in sys.argv:
        repeated()
        return
    out = {
        "made_with": {
            "anonymeter": version("anonymeter"),
            "numpy": version("numpy"),
            "pandas": version("pandas"),
            "python": sys.version.split()[0],
        },
        "datasets": DATASETS,
        "cases": {},
    }
    for case in CASES:
        spec = DATASETS[case["data"]]
        original = _read(DATA / spec["original"], spec["factors"])
        syn = _read(DATA / spec["synthetic"], spec["factors"])
        entry = dict(case)
        for role in ("training", "control"):
            a, b = spec[role]
            targets = original.iloc[a:b].reset_index(drop=True)
            outcomes, ambiguous = _outcomes(case, targets, syn)
            key = "main" if role == "training" else "control"
            entry[f"{key}_successes"] = _count(case, targets, syn)
            entry[f"{key}_outcomes"] = _bits(outcomes)
            entry[f"{key}_ambiguous"] = _bits(ambiguous)
        out["cases"][case["name"]] = entry
    OUT.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
