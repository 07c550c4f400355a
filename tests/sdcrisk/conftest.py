"""Fixtures of the sdc_risk tests: the sdcMicro reference cases and their data, read as R read them."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd
from reference import reference_path

SCHEMAS = {
    "shared/data/sd2011_subset.csv": "data/sd2011_subset.schema.json",
    "shared/data/cedata.csv": "data/cedata_syn.schema.json",
}


@cache
def case_data(path: Path) -> tuple[dict, pd.DataFrame, object]:
    """A reference case, its data (with the reference's weights ``w``, unit weights ``w1`` and
    household id ``hh``) and the schema."""
    from pipeline.data.schema import Schema, Variable

    case = json.loads(path.read_text(encoding="utf-8"))
    rel = case["data"]["file"]
    schema = Schema.from_json(reference_path(SCHEMAS[rel]))
    raw = pd.read_csv(reference_path(rel), dtype=str, keep_default_na=False, na_values=[""])
    frame = schema.apply(raw, rel)
    n = len(frame)
    frame["w"] = np.asarray(case["data_preparation"]["weights"]["values"], dtype=float)
    frame["w1"] = 1.0
    frame["hh"] = (np.arange(n) // 3 + 1).astype(float)  # the reference's artificial households
    extended = Schema(
        variables=(*schema, Variable("w", "numeric"), Variable("w1", "numeric"), Variable("hh", "numeric"))
    )
    return case, frame, extended
