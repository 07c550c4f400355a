"""Shared test fixtures: reading the vendored R references (tests/reference) and a Dask client."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pandas as pd
import pytest
from reference import reference_path


def read_reference_data(rel: str, schema_rel: str, cont_na: dict | None = None) -> pd.DataFrame:
    """A vendored reference CSV read back with its schema, as the R references were computed."""
    from pipeline.data.schema import Schema

    schema = Schema.from_json(reference_path(schema_rel))
    if cont_na:
        schema = schema.with_missing_codes(cont_na)
    raw = pd.read_csv(reference_path(rel), dtype=str, keep_default_na=False, na_values=[""])
    return schema.apply(raw, rel)


def load_json(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def dask_client():
    """The tests' one Dask cluster: in-process, two single-threaded workers, no fixed dashboard port."""
    from distributed import Client, LocalCluster

    logging.getLogger("distributed.shuffle._scheduler_plugin").setLevel(logging.ERROR)
    with (
        LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0") as cluster,
        Client(cluster) as client,
    ):
        yield client


@pytest.fixture(scope="module")
def clients():
    """A one-worker and a two-worker in-process cluster (results must not depend on the workers)."""
    from distributed import Client, LocalCluster

    with (
        LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0") as one,
        LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0") as two,
        Client(one, set_as_default=False) as c1,
        Client(two, set_as_default=False) as c2,
    ):
        yield c1, c2
