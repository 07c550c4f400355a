"""Weighted ``sdc_risk`` gives the same bits whatever the partitions and workers.

The weight sums per key combination are exact (integer pieces, :mod:`pipeline.risk.sdcrisk.exact_sums`),
so the key table (``Fk``, individual risk), the global figures and modRisk are equal, not merely
close, in memory and on 1 or 3 partitions of a 1- or 2-worker cluster — with weights whose float
sums do depend on their order.
"""

from __future__ import annotations

import math

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

from pipeline.data.schema import Schema, Variable
from pipeline.datasets import load_demo, load_demo_synthetic
from pipeline.evaluation.data import as_eval_data
from pipeline.evaluation.execution import Executor
from pipeline.risk.sdcrisk.compute import evaluate_files
from pipeline.risk.sdcrisk.exact_sums import aligned, pieces, to_double
from pipeline.risk.sdcrisk.measure import SdcRiskMeasure
from pipeline.risk.sdcrisk.params import SdcRiskParams

PARAMS = {"keys": ["sex", "agegr", "edu", "marital"], "weights": "wt", "sensitive": ["ls"], "modrisk": ["default"]}


def frames() -> tuple[list[pd.DataFrame], object]:
    orig = load_demo("sd2011_subset")
    syn = load_demo_synthetic("sd2011_cart")[:2]
    rng = np.random.default_rng(38)
    out = []
    for d in (orig, *syn):
        f = d.to_pandas().iloc[:1500].reset_index(drop=True)
        out.append(f.assign(wt=rng.lognormal(4.0, 1.5, len(f)) / 3.0))  # no exact float sums
    return out, orig.schema


def _data(parts: int | None):
    fs, schema = frames()
    schema = Schema((*schema, Variable("wt", "numeric")))  # the added weight column
    if parts is not None:
        fs = [dd.from_pandas(f, npartitions=parts, sort=False) for f in fs]
    return as_eval_data(fs[0], fs[1:], schema=schema)


def test_float_sums_of_these_weights_do_depend_on_the_order() -> None:
    fs, _ = frames()
    w = fs[0]["wt"].to_numpy()
    rng = np.random.default_rng(1)
    orders = {sum(w[rng.permutation(len(w))].tolist()) for _ in range(5)}
    assert len(orders) > 1  # the problem the exact pieces solve: float sums depend on the order
    assert (
        to_double(aligned([pieces(p, "w").sum().to_frame().T for p in np.array_split(w, 3)]).sum().to_frame().T, "w")[0]
        == (to_double(pieces(w, "w").sum().to_frame().T, "w")[0])
    )
    assert to_double(pieces(w, "w").sum().to_frame().T, "w")[0] == pytest.approx(math.fsum(w), rel=4e-16)


def test_same_bits_on_partitions_and_workers(clients) -> None:
    measure = SdcRiskMeasure(PARAMS)
    params = SdcRiskParams(**PARAMS)
    reference_data = _data(None)
    reference = measure.evaluate(reference_data, Executor(policy="memory")).tidy()
    reference_files = evaluate_files(reference_data, Executor(policy="memory"), params)
    c1, c2 = clients
    for client in (c1, c2):
        for parts in (1, 3):
            ex = Executor(client, policy="blocks", block_rows=300)
            got = measure.evaluate(_data(parts), ex).tidy()
            pd.testing.assert_frame_equal(got, reference, check_exact=True)
            for a, b in zip(evaluate_files(_data(parts), ex, params), reference_files, strict=True):
                pd.testing.assert_frame_equal(a.key_table, b.key_table, check_exact=True)
                assert list(a.risk) == list(b.risk)
                np.testing.assert_array_equal(list(a.risk.values()), list(b.risk.values()))  # NaN = NaN
