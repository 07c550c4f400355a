"""Fixtures of the identification-risk tests: CE data read as the R references read it."""

from __future__ import annotations

from functools import cache

import pandas as pd
import pytest
from reference import reference_path

CE_SCHEMA = "data/cedata_syn.schema.json"


@cache
def _read(rel: str) -> pd.DataFrame:
    from pipeline.data.schema import Schema

    schema = Schema.from_json(reference_path(CE_SCHEMA))
    raw = pd.read_csv(reference_path(rel), dtype=str, keep_default_na=False, na_values=[""])
    return schema.apply(raw, rel)


@pytest.fixture(scope="session")
def ce_schema():
    from pipeline.data.schema import Schema

    return Schema.from_json(reference_path(CE_SCHEMA))


@pytest.fixture(scope="session")
def load_ce(ce_schema):
    """Read a vendored reference CSV with the CE schema (factor columns as labels), cached."""

    def load(rel: str) -> pd.DataFrame:
        return _read(rel).copy()

    return load
