"""Fixtures of the identification-risk tests: CE data read as the R references read it."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pandas as pd
import pytest

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
CE_SCHEMA = "data/cedata_syn.schema.json"


@cache
def _read(rel: str) -> pd.DataFrame:
    from pipeline.data.schema import Schema

    schema = Schema.from_json(SHARED / CE_SCHEMA)
    raw = pd.read_csv(SHARED / rel.removeprefix("shared/"), dtype=str, keep_default_na=False, na_values=[""])
    return schema.apply(raw, rel)


@pytest.fixture(scope="session")
def ce_schema():
    from pipeline.data.schema import Schema

    if not (SHARED / CE_SCHEMA).is_file():
        pytest.skip(f"shared data folder {SHARED} is not available")
    return Schema.from_json(SHARED / CE_SCHEMA)


@pytest.fixture(scope="session")
def load_ce(ce_schema):
    """Read a CSV of ../shared with the CE schema (factor columns as labels), cached."""

    def load(rel: str) -> pd.DataFrame:
        return _read(rel).copy()

    return load
