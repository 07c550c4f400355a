"""Fixtures of the synthesis tests: the worked example, SD2011 subset, a two-worker cluster."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from reference import reference_path
from synth_helpers import DATASETS

from pipeline.data.dataset import Dataset
from pipeline.data.schema import Schema
from pipeline.datasets import load_demo


@pytest.fixture(scope="session")
def example() -> dict:
    """The spec's worked example (coarsened_margins_example.json)."""
    return json.loads(reference_path("spec/fixtures/coarsened_margins_example.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def cedata() -> Dataset:
    """The bundled CEdata (the partial-synthesis tests' original)."""
    return load_demo("cedata")


@pytest.fixture(scope="session")
def sd2011_subset() -> tuple[pd.DataFrame, Schema]:
    """The bundled SD2011 subset (income -8 = special missing code), pandas + schema."""
    schema = Schema.from_json(DATASETS / "sd2011_subset.schema.json").with_missing_codes({"income": -8})
    raw = pd.read_csv(DATASETS / "sd2011_subset.csv", dtype=str, keep_default_na=False, na_values=[""])
    return schema.apply(raw, "sd2011_subset"), schema
