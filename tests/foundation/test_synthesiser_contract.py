"""The synthesiser contract, checked for every registered synthesiser (as the measure contract is).

For each ``kind`` in :mod:`pipeline.synthesisers`: an unknown setting is rejected (by the class
and when a task's section is parsed); :meth:`Synthesiser.schema` is the schema of the sets it
makes; and the synthetic sets are the same in memory, on 1 and 3 partitions, and on 1 and 2 workers.
"""

from __future__ import annotations

from functools import cache

import pandas as pd
import pytest
from pydantic import ValidationError

from pipeline.data.dataset import Dataset
from pipeline.datasets import load_demo
from pipeline.errors import ParameterError
from pipeline.evaluation.execution import Executor
from pipeline.synth.base import Synthesiser
from pipeline.synthesisers import REGISTRY, parse_settings, synthesiser

SD_ROWS = 800

#: one small, real example per registered synthesiser: (data, settings)
EXAMPLES: dict[str, tuple[str, dict]] = {
    "margins": ("sd2011", {"variables": ["sex", "agegr", "edu", "marital"], "limit": 5, "m": 2, "seed": 3}),
    "partial": ("cedata", {"method": {"Income": "cart", "Tenure": "sample"}, "m": 2, "seed": 3}),
}


@cache
def _original(name: str) -> tuple[pd.DataFrame, object]:
    ds = load_demo("sd2011_subset" if name == "sd2011" else "cedata")
    n = SD_ROWS if name == "sd2011" else None
    return ds.to_pandas().iloc[:n].reset_index(drop=True), ds.schema


def _dataset(name: str, npartitions: int = 1) -> Dataset:
    frame, schema = _original(name)
    return Dataset.from_pandas(frame, schema, name=name, npartitions=npartitions)


def _sets(syn: Synthesiser, original: Dataset, executor: Executor) -> list[pd.DataFrame]:
    return [s.reset_index(drop=True) for s in syn.synthesise(original, executor).synthetic]


def test_every_registered_synthesiser_has_an_example() -> None:
    assert set(EXAMPLES) == set(REGISTRY)


@pytest.mark.parametrize("kind", sorted(EXAMPLES))
def test_registry_entry_agrees_with_its_class(kind: str) -> None:
    cls = REGISTRY[kind].synthesiser
    assert issubclass(cls, Synthesiser) and cls.kind == kind
    assert cls.params_model.model_fields["kind"].default == kind
    _, settings = EXAMPLES[kind]
    assert type(synthesiser(parse_settings({"kind": kind, **settings}))) is cls


@pytest.mark.parametrize("kind", sorted(EXAMPLES))
def test_unknown_setting_rejected(kind: str) -> None:
    cls = REGISTRY[kind].synthesiser
    _, settings = EXAMPLES[kind]
    with pytest.raises(ParameterError, match="no_such_option"):
        cls({**settings, "no_such_option": 1})
    with pytest.raises(ValidationError, match="no_such_option"):
        parse_settings({"kind": kind, **settings, "no_such_option": 1})


@pytest.mark.parametrize("kind", sorted(EXAMPLES))
def test_m_below_one_rejected_by_the_model(kind: str) -> None:
    cls = REGISTRY[kind].synthesiser
    _, settings = EXAMPLES[kind]
    with pytest.raises(ParameterError, match="m: Input should be greater than or equal to 1"):
        cls({**settings, "m": 0})


@pytest.mark.parametrize("kind", sorted(EXAMPLES))
def test_schema_is_the_schema_of_the_sets(kind: str) -> None:
    name, settings = EXAMPLES[kind]
    syn = REGISTRY[kind].synthesiser(settings)
    original = _dataset(name)
    executor = Executor(policy="memory")
    result = syn.synthesise(original, executor)
    assert syn.schema(original, executor) == result.schema
    assert len(result.synthetic) == syn.m == settings["m"]
    assert list(result.synthetic[0].columns) == result.schema.names
    # every row name is one the synthesiser declares (a gate naming another is refused at task load)
    produced = {r.measure for r in result.rows()}
    assert produced <= syn.row_measures, sorted(produced - syn.row_measures)


@pytest.mark.parametrize("kind", sorted(EXAMPLES))
def test_same_sets_in_memory_on_partitions_and_workers(kind: str, clients) -> None:
    name, settings = EXAMPLES[kind]
    syn = REGISTRY[kind].synthesiser(settings)
    reference = _sets(syn, _dataset(name), Executor(policy="memory"))
    c1, c2 = clients
    for client, parts in ((c1, 1), (c1, 3), (c2, 3), (c2, 1)):
        got = _sets(syn, _dataset(name, parts), Executor(client, policy="blocks", block_rows=300))
        assert len(got) == len(reference)
        for a, b in zip(got, reference, strict=True):
            pd.testing.assert_frame_equal(a, b)


def test_dask_ipf_engine_computes_on_the_executors_client(clients) -> None:
    """The Dask engine's table lives on the executor's cluster (none is the default client here)
    and gives the dense engine's sets."""
    _, c2 = clients
    _, settings = EXAMPLES["margins"]
    dense = REGISTRY["margins"].synthesiser({**settings, "engine": "dense"})
    on_dask = REGISTRY["margins"].synthesiser({**settings, "engine": "dask", "chunk_cells": 64})
    reference = _sets(dense, _dataset("sd2011"), Executor(policy="memory"))
    got = _sets(on_dask, _dataset("sd2011", 3), Executor(c2, policy="blocks", block_rows=300))
    assert {"block_pass", "range_sums"} <= set(c2.cluster.scheduler.task_prefixes)  # the fit ran on c2
    for a, b in zip(got, reference, strict=True):
        pd.testing.assert_frame_equal(a, b)
