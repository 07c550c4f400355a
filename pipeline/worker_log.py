"""Worker logs in a file: a failed task's traceback is kept for debugging instead of printed.

The command line prints one ``error:`` line for bad input; the worker's own report of the
failure (``Compute Failed`` with the traceback) goes to :func:`worker_log_path`, outside any
run folder, since a library's message may quote a record value.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any, TextIO

from distributed.diagnostics.plugin import WorkerPlugin

LOGGER = "distributed.worker"


def worker_log_path() -> Path:
    """The log file of this user's workers (appended to by every run).

    It lives in the user's own state folder (``$XDG_STATE_HOME``, else ``~/.local/state``), not in
    a shared ``/tmp`` where another account could read it or plant a symlink under its name.
    """
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "sdc-pipeline" / "workers.log"


def open_private_log(path: Path) -> TextIO:
    """Open ``path`` for appending, creating it (and its folder) readable by the owner only; a
    symlink in its place is refused rather than followed."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
    os.fchmod(fd, 0o600)
    return os.fdopen(fd, "a", encoding="utf-8")


def check_worker_log(path: Path) -> None:
    """Make sure the workers can open their log ``path`` (:func:`open_private_log`).

    Raises
    ------
    TaskError
        It cannot be opened (a symbolic link in its place, a file of another account), named.
    """
    from pipeline.errors import TaskError, brief

    try:
        open_private_log(path).close()
    except OSError as e:
        raise TaskError(
            f"worker log {path}: cannot open it ({brief(e)}; a symbolic link in its place is refused): remove "
            "what is there, or set XDG_STATE_HOME to a private folder"
        ) from None


class WorkerLogFile(WorkerPlugin):
    """Append the worker's warnings and errors to ``path``."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.handler: logging.Handler | None = None
        self.stream: TextIO | None = None

    def setup(self, worker: Any) -> None:
        self.stream = open_private_log(Path(self.path))
        self.handler = logging.StreamHandler(self.stream)
        self.handler.setLevel(logging.WARNING)
        self.handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s: %(message)s"))
        logging.getLogger(LOGGER).addHandler(self.handler)

    def teardown(self, worker: Any) -> None:
        if self.handler is not None:
            logging.getLogger(LOGGER).removeHandler(self.handler)
            self.handler.close()
            if self.stream is not None:
                self.stream.close()
