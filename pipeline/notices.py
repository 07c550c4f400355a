"""The package's warnings, carried to the user wherever the work ran.

Every warning the package raises goes through :func:`warn`. In a Python session (the API) it
is :func:`warnings.warn` (a ``UserWarning``). Inside :func:`collected` — the runner wraps each
unit of work in it, on the driver or in a task on a worker — the message is kept instead (each
text once, in order), and the runner carries it with the unit's output to the terminal,
``summary.json`` and the report: a warning raised on a worker is not lost in the worker's log.

The collection belongs to the thread that opened it (units run side by side in threads), so a
unit keeps only its own warnings. Messages name variables, parameters and counts, never record
values (docs/contributing.md).
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

_local = threading.local()


def warn(message: str, stacklevel: int = 2) -> None:
    """Keep ``message`` for the unit running in this thread, else warn (``UserWarning``)."""
    kept: list[str] | None = getattr(_local, "kept", None)
    if kept is None:
        warnings.warn(message, UserWarning, stacklevel=stacklevel + 1)
    elif message not in kept:
        kept.append(message)


def so_far() -> list[str]:
    """What :func:`collected` has kept in this thread so far (none outside it)."""
    return list(getattr(_local, "kept", None) or ())


@contextmanager
def collected() -> Iterator[list[str]]:
    """The warnings :func:`warn` is given in this thread inside the block (each text once)."""
    previous = getattr(_local, "kept", None)
    _local.kept = kept = []
    try:
        yield kept
    finally:
        _local.kept = previous


def show_briefly(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: object = None,
    line: str | None = None,
) -> None:
    """A :data:`warnings.showwarning` for the command line: ``warning: <message>`` on one line,
    once per command, without the source line that raised it (the user's problem is the
    message, not our code; Python's once-per-place rule is reset whenever a library changes
    the warning filters)."""
    import sys

    kind = "" if category is UserWarning else f"{category.__name__}: "
    text = f"warning: {kind}{message}"
    if text not in _shown:
        _shown.add(text)
        print(text, file=sys.stderr)


#: what :func:`show_briefly` has shown in this process
_shown: set[str] = set()
