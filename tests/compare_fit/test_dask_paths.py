"""compare_fit on partitions of a Dask cluster: every model's rows equal the in-memory ones (and
R's: the reference values hold on the partitioned path too)."""

from __future__ import annotations

import dask.dataframe as dd
import numpy as np
import pytest

from pipeline.evaluation.execution import Executor
from tests.compare_fit.test_reference import case, close, inputs, matrix, run


def partitioned(case_id: str, parts: int):
    schema, orig, syns = inputs(case_id)
    return schema, dd.from_pandas(orig, npartitions=parts), [dd.from_pandas(s, npartitions=parts) for s in syns]


@pytest.mark.slow
@pytest.mark.parametrize("case_id", ["CF02", "CF05", "CF06", "CF07"])
def test_partitioned_fits_equal_in_memory_and_r(case_id: str, dask_client, monkeypatch) -> None:
    import tests.compare_fit.test_reference as ref

    memory = run(case_id, False)
    monkeypatch.setattr(ref, "inputs", lambda c: partitioned(c, 3))
    got = run(case_id, False, Executor(dask_client, policy="blocks", block_rows=1000))
    rtol = 1e-10  # multinom and polr read each set whole: the same sums as in memory
    close(got.original.coefficients, memory.original.coefficients, rtol)
    close(got.original.se, memory.original.se, rtol)
    for a, b in zip(got.fits, memory.fits, strict=True):
        close(a.coefficients, b.coefficients, rtol)
        close(a.se, b.se, rtol)
    close(got.comparison.ci_overlap, memory.comparison.ci_overlap, rtol, atol=rtol)
    obs = matrix(case(case_id)["result"]["original_fit"]["coefficients"])
    close(got.original.coefficients, obs[:, 0], 1e-6)
    assert np.isfinite(got.comparison.lack_of_fit)
