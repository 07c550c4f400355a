"""Issue 23: the first run compiles the numba kernels for minutes; its progress starts with one
line saying so, and later runs (kernels in numba's cache) print nothing more."""

from __future__ import annotations

from pipeline.kernel_cache import FIRST_COMPILE_NOTICE, kernels_cached
from pipeline.run.schedule import Progress


def test_the_first_compile_is_announced_once_when_the_cache_is_empty(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    assert not kernels_cached()
    Progress(3, enabled=True)
    Progress(3, enabled=False)  # no progress lines (the Python API's runs): no notice either
    assert capsys.readouterr().err.splitlines() == [FIRST_COMPILE_NOTICE]
    index = tmp_path / "pipeline" / "risk" / "idrisk" / "counting._sweep_2d-145.py311.nbi"
    index.parent.mkdir(parents=True)
    index.write_bytes(b"")
    assert kernels_cached()
    Progress(3, enabled=True)
    assert capsys.readouterr().err == ""


def test_numba_caches_beside_the_modules_by_default(monkeypatch):
    """The kernels are ``cache=True``: once one has run, the default lookup finds it."""
    import numpy as np
    import pandas as pd

    from pipeline.risk.idrisk import identification_risk

    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    frame = pd.DataFrame({"key": pd.Categorical(["a", "b", "a"]), "x": np.array([1.0, 2.0, 3.0])})
    identification_risk(frame, [frame], ["key"], ["x"], 0.1)  # compiles (or loads) the matching kernels
    assert kernels_cached()
