"""Reading YAML settings files and turning pydantic validation errors into one-line messages."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from pipeline.errors import TaskError


def read_yaml(path: str | Path, what: str) -> Any:
    """The parsed contents of a YAML file; a missing file or a syntax error is a :class:`TaskError`."""
    p = Path(path)
    if not p.exists():
        raise TaskError(f"{what} not found: {p}")
    if p.is_dir():
        raise TaskError(f"{p}: is a directory, expected a {what} (YAML)")
    try:
        return yaml.safe_load(p.read_text(encoding="utf-8"))
    except UnicodeDecodeError as e:
        line = p.read_bytes()[: e.start].count(b"\n") + 1
        raise TaskError(f"{p}: not UTF-8 text (line {line}); save the {what} as UTF-8") from None
    except OSError as e:
        raise TaskError(f"{p}: cannot read the {what} ({e.strerror})") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise TaskError(f"{p}: not valid YAML{where}") from None


def validation_message(e: ValidationError, skip_loc: tuple[str, ...] = ()) -> str:
    """``loc: message; loc: message`` for every error (``skip_loc``: location parts to leave out)."""
    parts = []
    for err in e.errors():
        loc = ".".join(str(x) for x in err["loc"] if str(x) not in skip_loc)
        msg = err["msg"].removeprefix("Value error, ")
        parts.append(f"{loc}: {msg}" if loc else msg)
    return "; ".join(parts)
