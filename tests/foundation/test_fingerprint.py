"""``pipeline.fingerprint``: digests of structured parts, never of glued strings."""

from __future__ import annotations

import hashlib
import math
from pathlib import Path

import numpy as np
import pytest

from pipeline.fingerprint import canonical, fingerprint


def test_the_digest_is_sha256_of_the_canonical_json() -> None:
    parts = {"b": [1, 2.5, None, True], "a": "x"}
    assert canonical(parts) == '{"a":"x","b":[1,2.5,null,true]}'
    assert fingerprint(parts) == hashlib.sha256(canonical(parts).encode()).hexdigest()[:20]
    assert fingerprint(parts, length=64) == hashlib.sha256(canonical(parts).encode()).hexdigest()
    # key order does not count
    assert fingerprint({"a": "x", "b": [1, 2.5, None, True]}) == fingerprint(parts)


def test_parts_cannot_run_into_each_other() -> None:
    # glued strings would give the same text for each pair
    assert fingerprint({"inputs": "ab", "holdout": "c"}) != fingerprint({"inputs": "a", "holdout": "bc"})
    assert fingerprint(["ab", "c"]) != fingerprint(["a", "bc"])
    assert fingerprint({"holdout": None}) != fingerprint({"holdout": ""}) != fingerprint({})


def test_arrays_and_bytes_enter_by_their_digest_dtype_and_shape() -> None:
    positions = np.array([3, 1, 4], dtype="<i8")
    assert canonical({"p": positions}) == canonical(
        {"p": {"dtype": "<i8", "shape": [3], "sha256": hashlib.sha256(positions.tobytes()).hexdigest()}}
    )
    assert fingerprint(positions) != fingerprint(positions.astype("<i4"))
    assert fingerprint(positions) != fingerprint(positions.reshape(3, 1))
    assert fingerprint(b"abc") == fingerprint({"sha256": hashlib.sha256(b"abc").hexdigest()})
    assert fingerprint({"n": np.int64(3), "path": Path("a/b"), "keys": {"y", "x"}}) == fingerprint(
        {"n": 3, "path": "a/b", "keys": ["x", "y"]}
    )


def test_non_finite_numbers_and_unknown_types_are_refused() -> None:
    with pytest.raises(ValueError):
        fingerprint({"x": math.nan})
    with pytest.raises(TypeError, match="object has no canonical form"):
        fingerprint({"x": object()})
