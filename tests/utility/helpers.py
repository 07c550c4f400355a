"""Reading the R references (vendored in tests/reference) for the utility tests."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
from reference import reference_cases, reference_path

from pipeline.data.schema import Schema


def ref_files(folder: str) -> list[Path]:
    return reference_cases(folder)


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def read_csv(rel: str, schema: Schema) -> pd.DataFrame:
    """A reference CSV read as the R references read it: strings, empty field = NA, then the schema."""
    raw = pd.read_csv(reference_path(rel), dtype=str, keep_default_na=False, na_values=[""])
    return schema.apply(raw, rel)


def case_data(ref: dict) -> tuple[pd.DataFrame, list[pd.DataFrame], Schema]:
    d = ref["data"]
    schema = Schema.from_json(reference_path(d["schema"]))
    return read_csv(d["original"], schema), [read_csv(s, schema) for s in d["synthetic"]], schema


def r_array(obj: dict) -> np.ndarray:
    """An R matrix/table from the reference JSON (column-major data)."""
    data = np.array([np.nan if v in (None, "NaN") else float(v) for v in obj["data"]])
    return data.reshape(obj["dim"][::-1]).transpose()


def r_values(values: list) -> np.ndarray:
    return np.array([np.nan if v in (None, "NaN") else float(v) for v in values])
