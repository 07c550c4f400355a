"""Regenerate the SDMetrics 0.32 DCR references (sdmetrics_dcr.json) in their own environment.

SDMetrics is not a dependency of the project; this script runs in a separate virtual
environment::

    python3 -m venv /tmp/sdm-venv && /tmp/sdm-venv/bin/pip install 'sdmetrics==0.32.0'
    /tmp/sdm-venv/bin/python tests/reference/sdmetrics/make_sdmetrics_references.py

It reads the bundled data (pipeline/datasets/), builds small training / holdout / synthetic
sets per case and writes, per case: the DCR of every synthetic record to the training records
and to the holdout (``calculate_dcr``), ``DCROverfittingProtection.compute_breakdown``, and
``DCRBaselineProtection.compute_breakdown`` with the random records it drew (seeded) so that
a test can recompute their distances.  Special missing codes (cont.na) are given to SDMetrics
as missing values, as the pipeline compares them.
"""

from __future__ import annotations

import json
import sys
from importlib.metadata import version
from pathlib import Path

import numpy as np
import pandas as pd
from sdmetrics.single_table.privacy.dcr_baseline_protection import DCRBaselineProtection
from sdmetrics.single_table.privacy.dcr_overfitting_protection import DCROverfittingProtection
from sdmetrics.single_table.privacy.dcr_utils import calculate_dcr

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "pipeline" / "datasets"
OUT = Path(__file__).with_name("sdmetrics_dcr.json")

CASES = {
    "sd2011": {
        "original": "sd2011_subset.csv",
        "synthetic": "sd2011_cart_syn1.csv",
        "numerical": ["age", "income", "depress"],
        "categorical": ["sex", "edu", "marital", "smoke"],
        "missing_codes": {"income": [-8]},
        "training": [0, 400],
        "holdout": [400, 700],
        "synthetic_rows": [0, 300],
    },
    "cedata": {
        "original": "cedata.csv",
        "synthetic": "cedata_syn_income_1.csv",
        "numerical": ["Age", "Expenditure", "Income"],
        "categorical": ["Urban", "Tenure", "Educ", "Marital"],
        "missing_codes": {},
        "training": [0, 500],
        "holdout": [500, 900],
        "synthetic_rows": [1000, 1250],
    },
}


def _frame(path: Path, case: dict, rows: list[int]) -> pd.DataFrame:
    frame = pd.read_csv(path).iloc[rows[0] : rows[1]].reset_index(drop=True)
    frame = frame[case["categorical"] + case["numerical"]]
    for v in case["categorical"]:
        frame[v] = frame[v].astype("string").astype(object)  # sdmetrics compares labels
    for v in case["numerical"]:
        frame[v] = frame[v].astype(float)
        frame.loc[frame[v].isin(case["missing_codes"].get(v, [])), v] = np.nan
    return frame


def _case(name: str, case: dict) -> dict:
    metadata = {
        "columns": {
            **{v: {"sdtype": "categorical"} for v in case["categorical"]},
            **{v: {"sdtype": "numerical"} for v in case["numerical"]},
        }
    }
    train = _frame(DATA / case["original"], case, case["training"])
    hold = _frame(DATA / case["original"], case, case["holdout"])
    syn = _frame(DATA / case["synthetic"], case, case["synthetic_rows"])
    overfit = DCROverfittingProtection.compute_breakdown(train, syn, hold, metadata, None)
    DCRBaselineProtection._seed = 2026
    np.random.seed(2026)  # the baseline's missing-value mask draws from numpy's global generator
    baseline = DCRBaselineProtection.compute_breakdown(train, syn, metadata, None)
    np.random.seed(2026)
    random = DCRBaselineProtection._generate_random_data(train, len(syn))
    return {
        **{k: case[k] for k in ("original", "synthetic", "numerical", "categorical", "missing_codes")},
        "training_rows": case["training"],
        "holdout_rows": case["holdout"],
        "synthetic_rows": case["synthetic_rows"],
        "dcr_training": calculate_dcr(syn, train, metadata).tolist(),
        "dcr_holdout": calculate_dcr(syn, hold, metadata).tolist(),
        "overfitting_protection": overfit,
        "baseline_protection": baseline,
        "random_records": json.loads(random.to_json(orient="records")),
    }


def main() -> None:
    out = {
        "made_with": {"sdmetrics": version("sdmetrics"), "pandas": version("pandas"), "python": sys.version.split()[0]},
        "cases": {name: _case(name, case) for name, case in CASES.items()},
    }
    OUT.write_text(json.dumps(out, indent=1, allow_nan=True) + "\n")


if __name__ == "__main__":
    main()
