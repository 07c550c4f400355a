"""Lazy public names of a package: ``from pipeline.x import name`` imports the module that defines
``name`` on first use, so importing one light module of a package (a family's ``params``, the
data schema) does not load its heavy siblings (Dask, numba kernels, SciPy)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, module_of: Mapping[str, str]) -> Callable[[str], Any]:
    """The module ``__getattr__`` (PEP 562) of ``package`` that imports ``module_of[name]`` when
    ``name`` is first asked for."""

    def __getattr__(name: str) -> Any:
        if name not in module_of:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(module_of[name]), name)

    return __getattr__
