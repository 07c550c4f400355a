"""The privacy-budget ledger: what each release spent, summed per dataset, and the task's cap.

A *release* is one synthesis unit with a ``dp`` block (one source, one repetition): it spends
its ``ε`` and its ``δ`` under basic composition (:class:`~pipeline.synth.dp.DpRecord`). A
release is identified by its unit fingerprint (data, settings, seed, code version): re-running
a task that reuses a cached release publishes the same noisy margins again and spends nothing
new, so the ledger counts each fingerprint once. A *dataset* is identified by its name and the
content hash of its original: the same name over different data is a different budget.

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

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from pipeline.errors import DataError, TaskError

if TYPE_CHECKING:
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


def release_spend(
    dataset: str, data: str, source: str, repetition: int, release: str, synthesiser: Synthesiser
) -> Spend | None:
    """The spend of one synthesis unit from its settings alone (None unless it is differentially
    private, :meth:`~pipeline.synth.base.Synthesiser.privacy_spend`).

    ``data`` is the original's content fingerprint (recorded as a short hash of it).
    """
    spend = synthesiser.privacy_spend()
    if spend is None:
        return None
    eps, delta, noise = spend
    data_id = hashlib.sha256(data.encode()).hexdigest()[:16]
    return Spend(dataset, data_id, source, repetition, release, eps, delta, noise)


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
        except json.JSONDecodeError:
            raise DataError(f"{f}: corrupted run manifest in the history") from None
        out += manifest.get(LEDGER_KEY, [])
    return out


def _ledger_lines(root: Path) -> list[dict[str, Any]]:
    path = root / LEDGER_FILE
    if not path.is_file():
        return []
    out = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            raise DataError(f"{path}: line {number} is not a ledger entry (corrupted privacy ledger)") from None
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
        json.dumps({"task": task, "recorded_utc": recorded, **asdict(s)}) + "\n"
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


def check_cap(cap: BudgetCap | None, planned: Sequence[Spend], previous: Sequence[dict[str, Any]], where: str) -> None:
    """Refuse a run whose new releases would take a dataset over the cap.

    Raises
    ------
    TaskError
        Naming the dataset, the cap, the spend already recorded and this run's spend.
    """
    if cap is None or not planned:
        return
    seen = {e["release"] for e in previous}
    new = [s for s in planned if s.release not in seen]
    before = budget_table(previous)
    after = budget_table([*previous, *ledger_entries(new)])
    for row in after.itertuples():
        old = before[(before["dataset"] == row.dataset) & (before["data"] == row.data)]
        eps_old = float(old["epsilon"].sum())
        delta_old = float(old["delta"].sum())
        over_eps = row.epsilon > cap.epsilon * (1 + 1e-12)
        over_delta = cap.delta is not None and row.delta > cap.delta * (1 + 1e-12)
        if over_eps or over_delta:
            what = (
                f"epsilon {row.epsilon:g} > cap {cap.epsilon:g}"
                if over_eps
                else f"delta {row.delta:g} > cap {cap.delta:g}"
            )
            raise TaskError(
                f"{where}: privacy budget of dataset {row.dataset!r} would be exceeded: {what} "
                f"(already spent epsilon {eps_old:g}, delta {delta_old:g} in the history; this run's new "
                f"releases epsilon {row.epsilon - eps_old:g}, delta {row.delta - delta_old:g}). Nothing was written"
            )
