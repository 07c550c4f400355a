"""The measure contract, checked for every registered measure (in the spirit of check_estimator).

For each task ``type`` in the registry: an unknown parameter is rejected; the declared
variables are the ones checked against the data; ``rows()`` carry JSON-able params and the
tidy columns; and the table is the same in memory, on 1 and 3 partitions, and on 1 and 2
workers.
"""

from __future__ import annotations

import json
from functools import cache

import dask.dataframe as dd
import pandas as pd
import pytest

from pipeline.datasets import load_demo, load_demo_synthetic
from pipeline.errors import CompatibilityError, ParameterError
from pipeline.evaluation.base import TIDY_COLUMNS, Measure, Row
from pipeline.evaluation.data import EvalData, as_eval_data
from pipeline.evaluation.execution import Executor
from pipeline.measures import REGISTRY

SD_ROWS = 800

#: one small, real example per registered measure: (data, params)
EXAMPLES: dict[str, tuple[str, dict]] = {
    "profile": ("sd2011", {}),
    "key_blocks": ("sd2011", {"keys": ["sex", "agegr", "edu"]}),
    "disclosure": ("sd2011", {"keys": [["sex", "agegr", "edu"], ["sex", "marital"]], "targets": ["depress", "ls"]}),
    "identification_risk": (
        "cedata",
        {
            "scenarios": {"income": {"known": ["Urban", "Tenure", "Educ", "Marital"], "synthesised": ["Income"]}},
            "radius_grid": [0.05, 0.2],
        },
    ),
    "utility_gen": ("sd2011", {"method": "logit", "maxorder": 1, "vars": ["sex", "age", "edu", "income"]}),
    "compare": ("sd2011", {"vars": ["sex", "age", "income"], "breaks": 10}),
    "multi_compare": ("sd2011", {"var": "income", "by": ["sex", "agegr"], "cont_na": {"income": -8}}),
    "compare_fit": ("sd2011", {"formula": "smoke ~ sex + age + edu", "model": "glm", "family": "binomial"}),
    "utility_tab": ("sd2011", {"vars": ["sex", "edu"]}),
    "utility_tables": ("sd2011", {"tables": "twoway", "vars": ["sex", "agegr", "edu"]}),
    "dcr": ("sd2011", {"vars": ["sex", "age", "edu", "income"], "baseline_records": 200}),
    "linkability": (
        "cedata",
        {"aux_cols": [["Age", "Urban"], ["Income", "Tenure"]], "n_attacks": 300, "n_neighbors": 2},
    ),
    "inference": ("sd2011", {"aux_cols": ["sex", "age", "edu"], "secret": "income", "n_attacks": 300}),
    "sdc_risk": (
        "sd2011",
        {
            "keys": ["sex", "agegr", "edu", "marital"],
            "weights": "age",
            "sensitive": ["ls", "smoke"],
            "modrisk": ["default", "IPF"],
        },
    ),
    # 3 of the 4 columns: 25 predicates singling out a synthetic record are found in about 5,000
    # tries (on 2 columns about one in 2,000 tries singles out: the search ran to max_attempts, minutes)
    "singling_out": ("cedata", {"cols": ["Age", "Urban", "Tenure", "Income"], "n_attacks": 25, "n_cols": 3}),
    "utility_synds": (
        "sd2011",
        {
            "method": ["logit", "cart", "poly"],
            "vars": ["sex", "age", "edu", "income"],
            "deviance": True,
            "null_utility": True,
        },
    ),
}


@cache
def _frames(name: str) -> tuple[tuple[pd.DataFrame, ...], object]:
    if name == "sd2011":
        orig, syn = load_demo("sd2011_subset"), load_demo_synthetic("sd2011_cart")[:2]
        n = SD_ROWS
    else:
        orig, syn = load_demo("cedata"), load_demo_synthetic("cedata_syn_income")[:2]
        n = None
    frames = tuple(d.to_pandas().iloc[:n].reset_index(drop=True) for d in (orig, *syn))
    return frames, orig.schema


def _data(name: str, npartitions: int | None = None) -> EvalData:
    frames, schema = _frames(name)
    if npartitions is not None:
        frames = tuple(dd.from_pandas(f, npartitions=npartitions, sort=False) for f in frames)
    return as_eval_data(frames[0], list(frames[1:]), schema=schema)


def _table(measure: Measure, data: EvalData, executor: Executor) -> pd.DataFrame:
    measure.check(data)
    table = measure.evaluate(data, executor).tidy()
    return table.sort_values(["params", "synthetic", "measure"], kind="stable").reset_index(drop=True)


def test_every_registered_measure_has_an_example() -> None:
    assert set(EXAMPLES) == set(REGISTRY)


@pytest.mark.parametrize("type_", sorted(EXAMPLES))
def test_registry_entry_agrees_with_its_class(type_: str) -> None:
    # the registry repeats type, family and description so `sdc-pipeline measures` imports no measure code
    entry = REGISTRY[type_]
    cls = entry.measure
    assert (cls.type, cls.family, cls.description) == (entry.type, entry.family, entry.description)


@pytest.mark.parametrize("type_", sorted(EXAMPLES))
def test_unknown_parameter_rejected(type_: str) -> None:
    cls = REGISTRY[type_].measure
    _, params = EXAMPLES[type_]
    with pytest.raises(ParameterError, match="no_such_option"):
        cls({**params, "no_such_option": 1})


@pytest.mark.parametrize("type_", sorted(EXAMPLES))
def test_declared_variables_are_checked(type_: str) -> None:
    cls = REGISTRY[type_].measure
    name, params = EXAMPLES[type_]
    measure = cls(params)
    declared = measure.params.variables()
    data = _data(name)
    assert set(declared) <= set(data.columns)
    measure.check(data)
    if not declared:
        return
    # a synthetic set without a declared variable fails the check before any work, naming it
    gone = declared[-1]
    frames, schema = _frames(name)
    broken = as_eval_data(frames[0], [frames[1].drop(columns=[gone]), frames[2]], schema=schema)
    with pytest.raises((ParameterError, CompatibilityError), match=repr(gone)):
        measure.check(broken)


@pytest.mark.parametrize("type_", sorted(EXAMPLES))
def test_rows_carry_structured_params(type_: str) -> None:
    cls = REGISTRY[type_].measure
    name, params = EXAMPLES[type_]
    measure = cls(params)
    result = measure.evaluate(_data(name), Executor(policy="memory"))
    rows = result.rows()
    assert rows and all(isinstance(r, Row) for r in rows)
    m = 2
    allowed = {"original", "mean", *(str(i) for i in range(1, m + 1))}
    # every row name is one the measure declares (a gate naming another is refused when the task is read)
    assert {r.measure for r in rows} <= cls.row_measures, sorted({r.measure for r in rows} - cls.row_measures)
    for r in rows:
        assert r.synthetic in allowed, r
        assert isinstance(r.measure, str) and r.measure
        json.dumps(dict(r.params))  # JSON-able mapping
        assert all(isinstance(k, str) for k in r.params)
    table = result.tidy()
    assert list(table.columns) == TIDY_COLUMNS
    assert table["value"].dtype == "float64"
    json.dumps(result.to_dict(), allow_nan=True)


@pytest.mark.parametrize("type_", sorted(EXAMPLES))
def test_same_table_in_memory_on_partitions_and_workers(type_: str, clients) -> None:
    cls = REGISTRY[type_].measure
    name, params = EXAMPLES[type_]
    measure = cls(params)
    c1, c2 = clients
    reference = _table(measure, _data(name), Executor(policy="memory"))
    for client, parts in ((c1, 1), (c1, 3), (c2, 3), (c2, 1)):
        got = _table(measure, _data(name, parts), Executor(client, policy="blocks", block_rows=300))
        # counts are exact; float sums over partitions may differ in the last bits only
        pd.testing.assert_frame_equal(got, reference, check_exact=False, rtol=1e-10, atol=1e-12)


def test_declared_headlines_have_distinct_labels_and_every_family_one_section() -> None:
    # the first screen shows one line per release and headline: two headlines with one label would
    # read as the same figure (a headline shared by measures, as S_pMSE of the table measures, is one)
    headlines = {id(h): h for entry in REGISTRY.values() for h in entry.measure.headlines}
    labels = [h.label for h in headlines.values()]
    assert len(labels) == len(set(labels)), labels
    assert {h.measure for h in headlines.values()} <= set().union(*(e.measure.row_measures for e in REGISTRY.values()))
    # the measures of one family declare one section (the report groups a family's rows by it)
    sections: dict[str, set] = {}
    for entry in REGISTRY.values():
        sections.setdefault(entry.family, set()).add(entry.measure.report_section)
    assert all(len(s) == 1 and None not in s for s in sections.values()), sections
