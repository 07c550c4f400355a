"""The privacy-budget ledger: what each release spent, summed per dataset, and the task's cap.

A *release* is one synthesis unit with a ``dp`` block (one source, one repetition): it spends
its ``ε`` and its ``δ`` under basic composition (:class:`~pipeline.synth.dp.DpRecord`). A
release is identified by its unit fingerprint (data, settings, seed, code version): re-running
a task that reuses a cached release publishes the same noisy margins again and spends nothing
new, so the ledger counts each fingerprint once. A *dataset* is identified by its name and the
content hash of its original: the same name over different data is a different budget.

Where it is recorded: the run's ``manifest.json`` (``privacy_budget``: one entry per release),
which the results history stores beside every run; the release rows ``dp_epsilon_spent`` /
``dp_delta_spent`` are in the results. ``sdc-pipeline history --budget`` sums the entries of
all runs per dataset (:func:`budget_table`).

The cap (task ``privacy_budget: {epsilon: .., delta: ..}``) is checked before anything is
written: spend already in the task's history plus this run's new releases, per dataset.
"""

from __future__ import annotations

import hashlib
import json
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
    """Every ledger entry stored in a results history (none when there is no history yet),
    optionally of one task's runs only."""
    if root is None:
        return []
    out = []
    for f in sorted(Path(root).glob(f"run_date=*/task={task or '*'}/*.manifest.json")):
        try:
            manifest = json.loads(f.read_text(encoding="utf-8"))
        except json.JSONDecodeError:
            raise DataError(f"{f}: corrupted run manifest in the history") from None
        out += manifest.get(LEDGER_KEY, [])
    return out


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
