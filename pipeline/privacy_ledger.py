"""The privacy-budget ledger: what each release spent, summed per dataset, and the task's cap.

A *release* is one synthesis unit with a ``dp`` block (one source, one repetition): it spends
its ``ε`` and its ``δ`` under basic composition (:class:`~pipeline.synth.dp.DpRecord`). A
release is identified by its unit fingerprint (data, settings, seed, code version): re-running
a task that reuses a cached release publishes the same noisy margins again and spends nothing
new, so the ledger counts each fingerprint once.

The budget belongs to the data, not to a name. Each release records a fingerprint of every column
of the original it was made from (:func:`column_fingerprints`: the number of records and an
order-free sum of the hashes of the column's values, so neither the column's name nor the order
of the records counts), besides the dataset's name and the content hash of its file. The cap is
checked per release: the spend of every release that shares a column fingerprint (or the name and
file) with it counts. The same file under another dataset name, a shuffled copy, or a
``columns:`` subset of it therefore spends from the same budget. Entries recorded before the
fingerprints were kept are matched by name and file only.

Where it is recorded: the run's ``manifest.json`` (``privacy_budget``: one entry per release)
and, when the task has a results history (``history:`` or ``--history``), the history's ledger
``<history>/_privacy_ledger.jsonl`` — by every command that releases DP data (``run``,
``synthesise``, ``nightly``). The release rows ``dp_epsilon_spent`` / ``dp_delta_spent`` are in
the results. ``sdc-pipeline history --budget`` sums the entries of the ledger and of every
stored manifest per dataset (:func:`budget_table`).

The cap (task ``privacy_budget: {epsilon: .., delta: ..}``) needs a history and is checked
before anything is written: spend already in the history plus this run's new releases, per
dataset. The check and the record of this run's spend happen under the history's lock
(:func:`reserve`), so two runs started together cannot both pass a cap that only one fits. A
run records its spend when it starts: one that fails afterwards has counted its releases
(conservative: their noise may have been drawn); running it again reuses the same fingerprints
and spends nothing new.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from pipeline.errors import DataError, TaskError
from pipeline.results import json_text

if TYPE_CHECKING:
    from pipeline.data.dataset import Dataset
    from pipeline.evaluation.execution import Executor
    from pipeline.synth.base import Synthesiser

LEDGER_KEY = "privacy_budget"
"""The manifest key of the ledger entries."""

BUDGET_COLUMNS = ["dataset", "data", "releases", "epsilon", "delta"]
#: in a results history: one JSON line per recorded release spend
LEDGER_FILE = "_privacy_ledger.jsonl"


class BudgetCap(BaseModel):
    """A task's privacy-budget cap per dataset (basic composition over all its releases)."""

    model_config = ConfigDict(extra="forbid")

    epsilon: float = Field(gt=0)
    delta: float | None = Field(None, ge=0)


@dataclass(frozen=True)
class Spend:
    """What one release spends."""

    dataset: str
    data: str
    source: str
    repetition: int
    release: str
    epsilon: float
    delta: float
    noise: str
    #: fingerprints of the original's columns (:func:`column_fingerprints`), sorted
    columns: tuple[str, ...] = ()


def _column_sums(frame: pd.DataFrame) -> np.ndarray:
    """Per column, the sum (mod 2**64) of the hashes of its values; the number of records last."""
    # imported here: pipeline.blocks loads Dask, and a task file (which names a BudgetCap) is read
    # and its mistakes reported before Dask is loaded
    from pipeline.blocks import key_hash

    sums = [key_hash(frame, [c]).view(np.uint64).sum(dtype=np.uint64) for c in frame.columns]
    return np.array([*sums, len(frame)], dtype=np.uint64)


def _add_sums(parts: Sequence[np.ndarray]) -> np.ndarray:
    """Exact sums of :func:`_column_sums` of the partitions (mod 2**64: any order gives the same)."""
    return np.stack(list(parts)).sum(axis=0, dtype=np.uint64)


def column_fingerprints(dataset: Dataset, executor: Executor) -> tuple[str, ...]:
    """A fingerprint of each column's values (the count and the order-free sum of the values'
    hashes, :func:`pipeline.blocks.key_hash`), sorted: equal for the same values under any name,
    in any record order, in any selection of the columns."""
    names = list(dataset.schema.names)
    (sums,) = executor.compute(executor.map_reduce(dataset.frame[names], _column_sums, _add_sums))
    n = int(sums[-1])
    return tuple(sorted(hashlib.sha256(f"{n}:{int(v)}".encode()).hexdigest()[:16] for v in sums[:-1]))


def release_spend(
    dataset: str,
    data: str,
    source: str,
    repetition: int,
    release: str,
    synthesiser: Synthesiser,
    columns: Sequence[str] = (),
) -> Spend | None:
    """The spend of one synthesis unit from its settings alone (None unless it is differentially
    private, :meth:`~pipeline.synth.base.Synthesiser.privacy_spend`).

    ``data`` is the original's content fingerprint (recorded as a short hash of it), ``columns``
    its :func:`column_fingerprints`.
    """
    spend = synthesiser.privacy_spend()
    if spend is None:
        return None
    eps, delta, noise = spend
    data_id = hashlib.sha256(data.encode()).hexdigest()[:16]
    return Spend(dataset, data_id, source, repetition, release, eps, delta, noise, tuple(sorted(columns)))


#: what a ledger entry must hold, and of which type
_ENTRY_FIELDS = {"dataset": str, "data": str, "release": str, "epsilon": (int, float), "delta": (int, float)}


def _entry(found: Any, where: str) -> dict[str, Any]:
    """A ledger entry read back, checked (its fields and their types), else a one-line error."""
    bad = not isinstance(found, dict) or any(
        not isinstance(found.get(k), t) or isinstance(found.get(k), bool) for k, t in _ENTRY_FIELDS.items()
    )
    columns = found.get("columns", []) if isinstance(found, dict) else []
    if bad or not isinstance(columns, list) or not all(isinstance(c, str) for c in columns):
        raise DataError(
            f"{where} is not a ledger entry (it needs {', '.join(_ENTRY_FIELDS)}): corrupted privacy ledger; "
            "restore it from a backup (the budget cannot be checked without it)"
        )
    return found


def ledger_entries(spends: Iterable[Spend]) -> list[dict[str, Any]]:
    """The manifest's ``privacy_budget`` list."""
    return [asdict(s) for s in spends]


def history_entries(root: str | Path | None, task: str | None = None) -> list[dict[str, Any]]:
    """Every ledger entry stored in a results history — its ledger file and its runs' manifests
    (none when there is no history yet) — optionally of one task's runs only."""
    if root is None:
        return []
    out = [e for e in _ledger_lines(Path(root)) if task is None or e.get("task") == task]
    for f in sorted(Path(root).glob(f"run_date=*/task={task or '*'}/*.manifest.json")):
        try:
            manifest = json.loads(f.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise DataError(f"{f}: corrupted run manifest in the history") from None
        entries = manifest.get(LEDGER_KEY, []) if isinstance(manifest, dict) else None
        if not isinstance(entries, list):
            raise DataError(f"{f}: corrupted run manifest in the history ({LEDGER_KEY!r} is not a list)")
        out += [_entry(e, f"{f}: {LEDGER_KEY} entry {i}") for i, e in enumerate(entries, start=1)]
    return out


def _ledger_lines(root: Path) -> list[dict[str, Any]]:
    path = root / LEDGER_FILE
    if not path.is_file():
        return []
    out = []
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise DataError(f"{path}: not UTF-8 text (corrupted privacy ledger); restore it from a backup") from None
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue  # a blank line (an editor's, a torn write's newline) holds no entry
        try:
            found = json.loads(line)
        except json.JSONDecodeError:
            found = None
        out.append(_entry(found, f"{path}: line {number}"))
    return out


def reserve(
    cap: BudgetCap | None, planned: Sequence[Spend], root: str | Path, task: str, where: str
) -> list[dict[str, Any]]:
    """Check ``planned`` against the cap and record its new releases in the history's ledger;
    return the manifest's entries (:func:`ledger_entries`).

    ``root`` must be an existing results history, and the caller holds its lock
    (:meth:`pipeline.store.ResultsStore.locked`) so that the check and the record are one step.

    Raises
    ------
    TaskError
        The run would take a dataset over its cap (nothing is recorded).
    """
    root = Path(root)
    previous = history_entries(root)
    check_cap(cap, planned, previous, where)
    seen = {e["release"] for e in previous}
    recorded = dt.datetime.now(dt.UTC).isoformat()
    lines = "".join(
        json_text({"task": task, "recorded_utc": recorded, **asdict(s)}) + "\n"
        for s in planned
        if s.release not in seen
    )
    if lines:
        fd = os.open(root / LEDGER_FILE, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            data = memoryview(lines.encode())
            while data:
                data = data[os.write(fd, data) :]
            os.fsync(fd)
        finally:
            os.close(fd)
    return ledger_entries(planned)


def budget_table(entries: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """Spend per dataset: each release counted once; ε and δ summed (basic composition)."""
    if not entries:
        return pd.DataFrame(columns=BUDGET_COLUMNS)
    frame = pd.DataFrame(list(entries)).drop_duplicates("release")
    table = frame.groupby(["dataset", "data"], sort=True).agg(
        releases=("release", "size"), epsilon=("epsilon", "sum"), delta=("delta", "sum")
    )
    return table.reset_index()[BUDGET_COLUMNS]


def _budget_keys(entry: dict[str, Any]) -> set[tuple[str, ...]]:
    """What ties an entry to a budget: its dataset name and file, and each column fingerprint."""
    return {("data", str(entry["dataset"]), str(entry["data"]))} | {("column", c) for c in entry.get("columns", [])}


def check_cap(cap: BudgetCap | None, planned: Sequence[Spend], previous: Sequence[dict[str, Any]], where: str) -> None:
    """Refuse a run whose new releases would take some data over the cap: for each new release,
    the spend of every release (recorded or of this run) sharing a budget key with it
    (:func:`_budget_keys`: a column of the same values, or the same name and file) is summed.

    Raises
    ------
    TaskError
        Naming the dataset, the cap, the spend already recorded on the same data and this run's spend.
    """
    if cap is None or not planned:
        return
    seen = {e["release"] for e in previous}
    new = ledger_entries([s for s in planned if s.release not in seen])
    recorded = list({e["release"]: e for e in previous}.values())
    for entry in new:
        keys = _budget_keys(entry)
        old = [e for e in recorded if _budget_keys(e) & keys]
        mine = [e for e in new if _budget_keys(e) & keys]
        eps_old, delta_old = sum(e["epsilon"] for e in old), sum(e["delta"] for e in old)
        eps_new, delta_new = sum(e["epsilon"] for e in mine), sum(e["delta"] for e in mine)
        over_eps = eps_old + eps_new > cap.epsilon * (1 + 1e-12)
        over_delta = cap.delta is not None and delta_old + delta_new > cap.delta * (1 + 1e-12)
        if over_eps or over_delta:
            what = (
                f"epsilon {eps_old + eps_new:g} > cap {cap.epsilon:g}"
                if over_eps
                else f"delta {delta_old + delta_new:g} > cap {cap.delta:g}"
            )
            names = sorted({str(e["dataset"]) for e in old} - {entry["dataset"]})
            also = f" (recorded under the name(s) {', '.join(map(repr, names))})" if names else ""
            raise TaskError(
                f"{where}: privacy budget of dataset {entry['dataset']!r} would be exceeded: {what} "
                f"(already spent epsilon {eps_old:g}, delta {delta_old:g} on the same data in the history{also}; "
                f"this run's new releases epsilon {eps_new:g}, delta {delta_new:g}). Nothing was written"
            )
