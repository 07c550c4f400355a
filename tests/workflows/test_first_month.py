"""Issue 23: a user's first month on real public microdata (CPS 1988, SLID 1994 layouts) — what
``sdc-pipeline validate`` must say before any synthesis, in one line each."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd


def _validate(task: Path) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "pipeline.cli", "validate", str(task)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=task.parent)


def _cps(n: int = 1500) -> pd.DataFrame:
    """CPS 1988's layout: wage is column 1."""
    rng = np.random.default_rng(1988)
    education = rng.integers(0, 19, n)
    experience = rng.integers(0, 45, n)
    wage = np.round(np.exp(4.5 + 0.09 * education + 0.03 * experience + rng.normal(0, 0.3, n)), 2)
    return pd.DataFrame(
        {
            "wage": wage,
            "education": education,
            "experience": experience,
            "ethnicity": rng.choice(["cauc", "afam"], n, p=[0.92, 0.08]),
            "smsa": rng.choice(["yes", "no"], n, p=[0.75, 0.25]),
        }
    )


def _slid(n: int = 1200) -> pd.DataFrame:
    """SLID 1994's layout: wages missing for 44 % of the records (people without a job)."""
    rng = np.random.default_rng(1994)
    frame = pd.DataFrame(
        {
            "wages": np.round(rng.lognormal(2.6, 0.5, n), 2),
            "education": rng.integers(0, 21, n),
            "age": rng.integers(16, 95, n),
            "sex": rng.choice(["Female", "Male"], n),
            "language": rng.choice(["English", "French", "Other"], n, p=[0.6, 0.2, 0.2]),
        }
    )
    frame.loc[rng.random(n) < 0.44, "wages"] = np.nan
    return frame


CPS_TASK = """
name: cps
repetitions: 3
datasets:
  - name: cps
    original: {path: cps.csv}
    synthetic:
      - name: partial
        synthesise: {kind: partial, method: {wage: cart}, m: 2, seed: 1}
measures:
  - type: profile
"""


def test_validate_warns_once_when_the_synthesised_first_column_has_no_predictors(tmp_path):
    _cps().to_csv(tmp_path / "cps.csv", index=False)
    (tmp_path / "task.yaml").write_text(CPS_TASK, encoding="utf-8")
    res = _validate(tmp_path / "task.yaml")
    assert res.returncode == 0, res.stderr
    warned = [ln for ln in res.stderr.splitlines() if "synthesised with no predictors" in ln]
    assert warned == [
        "warning: 'wage' is synthesised with no predictors (drawn independently of the kept variables); "
        "visit the kept ones first (visit_sequence: kept_first) or name its predictors"
    ]
    fixed = CPS_TASK.replace("m: 2,", "visit_sequence: kept_first, m: 2,")
    (tmp_path / "task.yaml").write_text(fixed, encoding="utf-8")
    res = _validate(tmp_path / "task.yaml")
    assert res.returncode == 0 and "no predictors" not in res.stderr, res.stderr


MARGINS_TASK = """
name: margins_idrisk
datasets:
  - name: sd2011
    original: {demo: sd2011_subset}
    synthetic:
      - {name: cart, demo: sd2011_cart}
      - name: margins_L10
        synthesise: {variables: [sex, agegr, edu, marital, smoke, ls], limit: 10, variant: V3, m: 2}
measures:
  - type: identification_risk
    params:
      scenarios:
        ls: {known: [sex, agegr, edu], synthesised: [ls]}
"""


def test_validate_refuses_identification_risk_on_a_coarsened_margins_source(tmp_path):
    """Its records are draws from margins, not versions of the original's records: a risk of
    2.5e-05 there meant nothing."""
    (tmp_path / "task.yaml").write_text(MARGINS_TASK, encoding="utf-8")
    res = _validate(tmp_path / "task.yaml")
    assert res.returncode == 2
    (line,) = res.stderr.strip().splitlines()
    assert "source 'margins_L10'" in line and "'cart'" not in line
    assert "the 'margins' synthesiser makes new records (draws)" in line and "kind: partial" in line
    # the same measure on the row-aligned source alone is valid
    only_cart = MARGINS_TASK.replace(
        "  - type: identification_risk\n", "  - type: identification_risk\n    sources: [cart]\n"
    )
    (tmp_path / "task.yaml").write_text(only_cart, encoding="utf-8")
    res = _validate(tmp_path / "task.yaml")
    assert res.returncode == 0, res.stderr


SLID_TASK = """
name: slid
datasets:
  - name: slid
    original: {path: slid.csv}
    synthetic:
      - name: partial
        synthesise: {kind: partial, method: {wages: cart}, visit_sequence: kept_first, m: 2, seed: 1}
measures:
  - type: identification_risk
    params:
      scenarios:
        wages: {known: [sex, age, education], synthesised: [wages]}
      exact: [age, education]
      radius_grid: [0.05, 0.1]
"""


def test_validate_sees_missing_values_of_identification_risk_before_any_synthesis(tmp_path):
    _slid().to_csv(tmp_path / "slid.csv", index=False)
    task = tmp_path / "task.yaml"
    task.write_text(SLID_TASK, encoding="utf-8")
    res = _validate(task)
    assert res.returncode == 2
    (line,) = res.stderr.strip().splitlines()
    assert line.count(str(task)) == 1 and line.count("task.yaml") == 1
    assert "'wages' (" in line and "set na_action: no_match" in line and "na_action='no_match'" not in line
    task.write_text(SLID_TASK + "      na_action: no_match\n", encoding="utf-8")
    res = _validate(task)
    assert res.returncode == 0, res.stderr
