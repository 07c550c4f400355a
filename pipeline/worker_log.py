"""Worker logs in a file: a failed task's traceback is kept for debugging instead of printed.

The command line prints one ``error:`` line for bad input; the worker's own report of the
failure (``Compute Failed`` with the traceback) goes to :func:`worker_log_path`, outside any
run folder, since a library's message may quote a record value.
"""

from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path
from typing import Any

from distributed.diagnostics.plugin import WorkerPlugin

LOGGER = "distributed.worker"


def worker_log_path() -> Path:
    """The log file of the local workers of this user (appended to by every run)."""
    return Path(tempfile.gettempdir()) / f"sdc-pipeline-workers-{os.getuid()}.log"


class WorkerLogFile(WorkerPlugin):
    """Append the worker's warnings and errors to ``path``."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.handler: logging.Handler | None = None

    def setup(self, worker: Any) -> None:
        self.handler = logging.FileHandler(self.path, encoding="utf-8")
        self.handler.setLevel(logging.WARNING)
        self.handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s: %(message)s"))
        logging.getLogger(LOGGER).addHandler(self.handler)

    def teardown(self, worker: Any) -> None:
        if self.handler is not None:
            logging.getLogger(LOGGER).removeHandler(self.handler)
            self.handler.close()
