"""Whether numba's on-disk cache holds the package's compiled kernels: the first run compiles
them (about 1-3 minutes on 2 cores, nothing printed by numba), so the command says so once."""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
FIRST_COMPILE_NOTICE = (
    "first run: compiling the numba kernels (once: 20 s to a minute on a 2-core machine; later runs reuse them)"
)


def kernels_cached() -> bool:
    """Whether numba's cache holds any compiled kernel (``*.nbi`` index files of the ``cache=True``
    kernels): under ``NUMBA_CACHE_DIR`` when it is set, else beside the modules (``__pycache__``)
    or, where those are read-only, in numba's user cache (``$XDG_CACHE_HOME/numba``)."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return any(Path(os.environ["NUMBA_CACHE_DIR"]).rglob("*.nbi"))
    user = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "numba"
    return any(PACKAGE.rglob("__pycache__/*.nbi")) or any(user.rglob("*.nbi"))
