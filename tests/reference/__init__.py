"""Locating the vendored R references (see PROVENANCE.md in this folder).

The files are copies of the project's shared reference folder with the same layout, so a path
written inside a reference JSON ("shared/data/sd2011.csv") maps to this folder by dropping its
"shared/" prefix.  A missing file is an error, never a skip: the references travel with the tests.
"""

from __future__ import annotations

from pathlib import Path

REFERENCE_ROOT = Path(__file__).resolve().parent


def reference_path(rel: str | Path) -> Path:
    """The vendored file or folder for ``rel`` ("shared/data/x.csv", "data/x.csv", "reference/idrisk")."""
    path = REFERENCE_ROOT / str(rel).removeprefix("shared/")
    if not path.exists():
        raise FileNotFoundError(f"vendored reference {rel!r} not found under {REFERENCE_ROOT}")
    return path


def reference_cases(group: str) -> list[Path]:
    """The reference JSON files of one group (reference/<group>/*.json), sorted; never empty."""
    files = sorted(reference_path(f"reference/{group}").glob("*.json"))
    if not files:
        raise FileNotFoundError(f"no reference cases in {REFERENCE_ROOT / 'reference' / group}")
    return files
