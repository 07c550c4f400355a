"""Issue 36: the docs name no script outside the repository (a reader cannot run it)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: an absolute path to a Python or shell script (the repository's own are named relative to it)
OUTSIDE_SCRIPT = re.compile(r"(?<![\w.])/(?:work|home|tmp|root)/[^\s`'\")]*\.(?:py|sh)\b")


def test_docs_name_no_script_outside_the_repository():
    found = [
        f"{path.relative_to(ROOT)}:{n}: {m.group(0)}"
        for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        for m in OUTSIDE_SCRIPT.finditer(line)
    ]
    assert found == []
