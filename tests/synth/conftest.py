"""Fixtures of the synthesis tests: the worked example, the syn.ipf references, SD2011 subset."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pipeline.data.schema import Schema
from pipeline.synth import MarginTable

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
DATASETS = Path(__file__).resolve().parents[2] / "pipeline" / "datasets"


def _shared_file(rel: str) -> Path:
    path = SHARED / rel
    if not path.exists():
        pytest.skip(f"shared reference file {path} is not available")
    return path


@pytest.fixture(scope="session")
def example() -> dict:
    """The spec's worked example (coarsened_margins_example.json)."""
    return json.loads(_shared_file("spec/fixtures/coarsened_margins_example.json").read_text(encoding="utf-8"))


def example_tables(example: dict, key: str, order=("AB", "AC", "BC")) -> list[MarginTable]:
    levels = {k: tuple(v) for k, v in example["levels"].items()}
    src = example[key] if key in example else example["margins"]
    return [
        MarginTable(
            tuple(m), tuple(levels[v] for v in m), np.asarray(src[m], float).reshape([len(levels[v]) for v in m])
        )
        for m in order
    ]


def reference_case(case: str) -> dict:
    return json.loads(_shared_file(f"reference/syn_ipf/syn_ipf_{case}.json").read_text(encoding="utf-8"))


def r_array(table: dict) -> np.ndarray:
    """An R array written column-major (reference README) as a C-ordered numpy array."""
    return np.asarray(table["data"], dtype=float).reshape(table["dim"][::-1]).transpose()


@pytest.fixture(scope="session")
def sd2011_subset() -> tuple[pd.DataFrame, Schema]:
    """The bundled SD2011 subset (income -8 = special missing code), pandas + schema."""
    schema = Schema.from_json(DATASETS / "sd2011_subset.schema.json").with_missing_codes({"income": -8})
    raw = pd.read_csv(DATASETS / "sd2011_subset.csv", dtype=str, keep_default_na=False, na_values=[""])
    return schema.apply(raw, "sd2011_subset"), schema


@pytest.fixture(scope="module")
def client2():
    """An in-process LocalCluster with two single-threaded workers (no fixed dashboard port)."""
    from distributed import Client, LocalCluster

    with (
        LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0") as cluster,
        Client(cluster) as client,
    ):
        yield client
