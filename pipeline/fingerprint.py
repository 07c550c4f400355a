"""The one way the package hashes what it caches by: a digest of structured parts, never of
strings glued together.

:func:`fingerprint` hashes the canonical JSON of its parts (keys sorted, no whitespace, strict:
NaN and ±Inf are refused), so ``{"a": "bc"}`` and ``{"ab": "c"}`` — or an input hash followed by
a holdout's and the same characters split otherwise — can never give the same digest.  Bytes
and numpy arrays enter as the sha256 of their bytes (with an array's dtype and shape), so large
parts (a holdout's record positions) are hashed, not written out.

Two digests are kept in their older form on purpose, because they are recorded in privacy
ledgers and matched across runs (:mod:`pipeline.privacy_ledger`): a release's data identity and
its column fingerprints.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import PurePath
from typing import Any

import numpy as np

#: hexadecimal characters of a fingerprint (80 bits)
LENGTH = 20


def _part(value: Any) -> Any:
    """A JSON form of a part the JSON encoder does not know."""
    if isinstance(value, bytes | bytearray | memoryview):
        return {"sha256": hashlib.sha256(value).hexdigest()}
    if isinstance(value, np.ndarray):
        data = np.ascontiguousarray(value)
        return {
            "dtype": data.dtype.str,
            "shape": list(data.shape),
            "sha256": hashlib.sha256(data.tobytes()).hexdigest(),
        }
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, PurePath):
        return value.as_posix()
    if isinstance(value, set | frozenset):
        return sorted(value)
    raise TypeError(f"fingerprint: a part of type {type(value).__name__} has no canonical form")


def canonical(parts: Any) -> str:
    """The canonical JSON text of ``parts`` that :func:`fingerprint` hashes."""
    return json.dumps(parts, sort_keys=True, separators=(",", ":"), allow_nan=False, default=_part)


def recorded_data_identity(files: str, schema: dict[str, Any]) -> str:
    """A data set's identity as privacy ledgers record it (a short hash of it is the entries'
    ``data``): its files' content hash followed by the JSON of its schema.  Ledgers written
    before are matched by it, so its form is kept, not this module's canonical one."""
    return files + json.dumps([schema], sort_keys=True)


def fingerprint(parts: Any, length: int = LENGTH) -> str:
    """The first ``length`` hexadecimal characters of the sha256 of :func:`canonical` ``(parts)``.

    Parameters
    ----------
    parts : JSON-able value
        Mappings, sequences, strings, numbers, booleans and None; bytes, numpy arrays and
        scalars, paths and sets too (see the module docstring).
    length : int
        Characters kept (64: the whole digest).
    """
    return hashlib.sha256(canonical(parts).encode()).hexdigest()[:length]
