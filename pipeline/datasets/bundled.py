"""Where the bundled files are (a leaf: the generators import it without importing the package)."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def demo_path(filename: str) -> Path:
    """Path of a bundled file."""
    return Path(str(files("pipeline.datasets").joinpath(filename)))
