"""The results history: a Hive-partitioned Parquet dataset, appended to by every run.

Layout::

    <store>/_sdc_results_store.json                    marker (format version)
    <store>/run_date=YYYY-MM-DD/task=<name>/<run_id>.parquet
    <store>/run_date=YYYY-MM-DD/task=<name>/<run_id>.manifest.json

Each run writes new files (temporary name, then rename), so nothing in the history is ever
overwritten and a crash leaves no half-written file.  A run appends under the store's lock
(``<store>/.sdc-lock``, :mod:`pipeline.lock`): concurrent runs append one after the other
(waiting up to :data:`LOCK_WAIT` seconds), and a check-then-append (a nightly run's "not yet
stored for this date") holds it across both.  Query it with pandas or pyarrow::

    pd.read_parquet("history", filters=[("task", "=", "nightly")])
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.errors import DataError
from pipeline.lock import exclusive
from pipeline.results import (
    RESULT_COLUMNS,
    ROLE_COLUMNS,
    atomic_write_parquet,
    atomic_write_text,
    json_text,
    with_role_columns,
)

MARKER = "_sdc_results_store.json"
FORMAT_VERSION = 1
#: result columns a stored run may lack: ``task`` (in the folder name), ``params`` (runs
#: stored before results had structured params; read as unknown), ``type`` (runs stored
#: before results had the measure type; read as unknown) and the role columns (runs stored
#: before them: read from their params, :func:`~pipeline.results.with_role_columns`)
OPTIONAL_COLUMNS = ("task", "params", "type", *ROLE_COLUMNS)
#: the lock a run holds on the store while it appends
LOCK_FILE = ".sdc-lock"
#: seconds a run waits for another run's append before it gives up
LOCK_WAIT = 60.0


class ResultsStore:
    """A results history folder.

    Parameters
    ----------
    root : path
        The folder. Created (with its marker) on first append if it does not exist; an
        existing non-empty folder without the marker is refused.
    """

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def _check(self, create: bool, missing_ok: bool = False) -> bool:
        """Whether a store is here (creating it if asked); a foreign or corrupted folder is an error."""
        marker = self.root / MARKER
        if marker.exists():
            try:
                info = json.loads(marker.read_text(encoding="utf-8"))
            except json.JSONDecodeError:
                raise DataError(f"{marker}: corrupted results-store marker") from None
            if info.get("format") != FORMAT_VERSION:
                raise DataError(f"{self.root}: results store format {info.get('format')} is not {FORMAT_VERSION}")
            return True
        if self.root.exists() and any(self.root.iterdir()):
            raise DataError(f"{self.root} is not a results store (no {MARKER}); refusing to write into it")
        if create:
            atomic_write_text(json_text({"format": FORMAT_VERSION, "columns": RESULT_COLUMNS}), marker)
            return True
        if missing_ok:
            return False
        raise DataError(f"{self.root}: no results store here")

    def run_dir(self, run_date: str, task: str) -> Path:
        return self.root / f"run_date={run_date}" / f"task={task}"

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the store's lock (creating the store if needed): no other run appends meanwhile.

        Raises
        ------
        TaskError
            Another run held it for :data:`LOCK_WAIT` seconds (its PID and start time named).
        """
        self._check(create=True)
        with exclusive(self.root / LOCK_FILE, f"results history {self.root}", wait=LOCK_WAIT):
            yield

    def append(self, results: pd.DataFrame, manifest: dict[str, Any], run_date: str | None = None) -> Path:
        """Add one run's tidy results (never overwriting an existing file), under the store's lock.

        Raises
        ------
        DataError
            The run is already stored, or writing failed (a full disk; nothing is left behind).
        """
        date = run_date or manifest["started_utc"][:10]
        folder = self.run_dir(date, manifest["task"])
        path = folder / f"{manifest['run_id']}.parquet"
        with self.locked():
            if path.exists():
                raise DataError(f"{path} already exists in the history; a run is never overwritten")
            table = results.drop(columns=[c for c in ("task",) if c in results.columns])
            try:
                atomic_write_parquet(table, path)
                atomic_write_text(json_text(manifest, indent=1), folder / f"{manifest['run_id']}.manifest.json")
            except OSError as e:
                path.unlink(missing_ok=True)
                raise DataError(f"cannot add the run to the history {self.root}: {e.strerror or e}") from None
        return path

    def runs(self, task: str | None = None, missing_ok: bool = False) -> pd.DataFrame:
        """One row per stored run: run_date, task, run_id, path (oldest first).

        ``missing_ok``: no store yet (an absent or empty folder) gives no runs instead of an error.
        """
        present = self._check(create=False, missing_ok=missing_ok)
        rows = []
        for f in sorted(self.root.glob("run_date=*/task=*/*.parquet")) if present else []:
            date = f.parent.parent.name.split("=", 1)[1]
            t = f.parent.name.split("=", 1)[1]
            if task is None or t == task:
                rows.append({"run_date": date, "task": t, "run_id": f.stem, "path": str(f)})
        return pd.DataFrame(rows, columns=["run_date", "task", "run_id", "path"]).sort_values(
            ["run_date", "run_id"], ignore_index=True
        )

    def read_run(self, path: str | Path) -> pd.DataFrame:
        """The tidy results of one stored run (a corrupted file is a clear error).

        Runs stored before the results had structured ``params`` read with ``params`` = None
        (unknown): nothing is guessed from their display ``setting``, so nightly gates find no
        previous value for them instead of comparing different settings. Runs stored before
        the results had a ``type`` column read with ``type`` = None. Runs stored before the
        role columns read with them (:func:`~pipeline.results.with_role_columns`: the roles that
        were keys of their params), so gates and ``sdc-pipeline history`` work on both.
        """
        p = Path(path)
        try:
            table = pq.read_table(p).to_pandas()
        except (pa.ArrowInvalid, OSError) as e:
            raise DataError(f"{p}: corrupted result file in the history ({type(e).__name__})") from None
        missing = [c for c in RESULT_COLUMNS if c not in table.columns and c not in OPTIONAL_COLUMNS]
        if missing:
            raise DataError(f"{p}: not a results file (missing columns {missing})")
        if "task" not in table.columns:
            table.insert(0, "task", p.parent.name.split("=", 1)[1])
        for column in ("params", "type"):
            if column not in table.columns:
                table[column] = None
        return with_role_columns(table)[RESULT_COLUMNS]

    def budget(self, task: str | None = None) -> pd.DataFrame:
        """Privacy budget spent per dataset over the stored runs (optionally of one task): each
        DP release counted once, ε and δ summed under basic composition
        (:func:`~pipeline.privacy_ledger.budget_table`); columns dataset, data (content hash of
        the original), releases, epsilon, delta."""
        from pipeline.privacy_ledger import budget_table, history_entries

        self._check(create=False)
        return budget_table(history_entries(self.root, task))

    def query(self, task: str | None = None) -> pd.DataFrame:
        """All stored results (optionally of one task), with their run_date."""
        runs = self.runs(task)
        frames = [self.read_run(r.path).assign(run_date=r.run_date) for r in runs.itertuples()]
        if not frames:
            return pd.DataFrame(columns=[*RESULT_COLUMNS, "run_date"])
        return pd.concat(frames, ignore_index=True)
