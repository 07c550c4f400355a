"""The executor's lazy values."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Deferred:
    """A value the executor computes later (so that several are computed in one pass)."""

    value: Any
