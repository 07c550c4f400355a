"""Checks of a task's data as a whole, before any work: enough records, no source that is the
original itself, no holdout that is the training data; and the overlap figures every run reports.

A source given as files (or a bundled demo) may be the original by mistake — the same file under
another name, a shuffled copy, an export of the original with a few values touched. Its figures
would be the original's own risk reported as a release's, with "pass" beside them. A source is
refused as a copy of the original when one of its synthetic sets

* holds the same records as the original in any order (equal multisets of records), or
* has the original's number of records and at least :data:`COPY_SHARE` of them equal, row by
  row, to the original's record in the same row (a partial "synthesis" that changed almost
  nothing).

Records are compared by a hash of all their values (:func:`pipeline.blocks.key_hash`: by value,
whole numbers and floats of the same value alike). A source marked ``control: true`` in the task is a
deliberate reference (e.g. the original evaluated as its own synthetic set) and is not checked.

**Overlap.** A near-copy escapes the row-by-row rule (the original plus a few records, a subset
of it, a copy with 2 % of its values changed). Every run therefore reports, per synthetic set of
a file or demo source, the share of its records equal to an original record (``overlap_share``),
and per file or generated holdout the share of its records equal to a training record
(``holdout_overlap_share``): rows of the results table (family ``integrity``), gateable like any
measure. Records that repeat within the original explain part of an overlap (data of a few
factors repeat their records: a genuine holdout or synthesis then shares them by chance), so the
refusals judge the *excess* overlap, ``(share − repeats) / (1 − repeats)`` with ``repeats`` the
share of original records equal to another original record:

* a holdout file whose excess overlap is above :data:`HOLDOUT_OVERLAP_MAX` is refused (the
  training data, a shuffled copy or a subset of it as the holdout make every excess read 0);
* a synthetic set of a source not marked ``control`` whose excess overlap is above
  :data:`SET_OVERLAP_MAX` is refused.

A ``fraction`` holdout is split off the original record by record, so it is only reported.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from pipeline.blocks import key_hash
from pipeline.data.dataset import Dataset
from pipeline.errors import TaskError
from pipeline.evaluation.execution import Executor
from pipeline.fingerprint import fingerprint
from pipeline.results import RESULT_COLUMNS, atomic_write_text, json_text
from pipeline.run.inputs import SourceKey, TaskInputs
from pipeline.tasks import LoadedTask, code_version

#: at least this many records in every original (fewer leaves no spread to measure: divisions by n − 1)
MIN_ORIGINAL_RECORDS = 2
#: a set with the original's size and at least this share of its rows unchanged is a copy
COPY_SHARE = 0.99
#: a holdout file with more excess overlap than this with the original is refused (see the module notes)
HOLDOUT_OVERLAP_MAX = 0.05
#: a synthetic set (not a control) with more excess overlap than this with the original is refused
SET_OVERLAP_MAX = 0.5
#: in a run folder's ``.units``: the fingerprint of the inputs that last passed :func:`check_inputs`
#: and their overlap figures
CHECKED_FILE = "inputs-checked.json"


@dataclass(frozen=True)
class Overlap:
    """One overlap figure: the share of a data set's records equal to an original record.

    ``source`` is ``""`` and ``synthetic`` ``"holdout"`` for a dataset's holdout; else the source
    and the set's number (``"1"``..``"m"``). ``repeats`` is the share of original records equal to
    another original record (what a chance overlap is judged against)."""

    dataset: str
    source: str
    synthetic: str
    share: float
    repeats: float

    @property
    def measure(self) -> str:
        return "holdout_overlap_share" if self.synthetic == "holdout" else "overlap_share"

    @property
    def excess(self) -> float:
        """The overlap beyond what the original's own repeats explain, 0 (none) to 1 (every record)."""
        return (self.share - self.repeats) / (1.0 - self.repeats) if self.repeats < 1 else 0.0


def set_hashes(frame: pd.DataFrame) -> np.ndarray:
    """The record hashes of a pandas frame over all its columns (:func:`pipeline.blocks.key_hash`)."""
    return key_hash(frame, list(frame.columns))


def record_hashes(datasets: Sequence[Dataset], executor: Executor) -> list[np.ndarray]:
    """The record hashes of each data set over all its variables (:func:`pipeline.blocks.key_hash`:
    by value, numbers as float64), in record order, computed where the data are."""
    lazy = [
        executor.map_combine(executor.partitions(d.frame), key_hash, np.concatenate, None, d.schema.names)
        for d in datasets
    ]
    return [np.asarray(h) for h in executor.compute(*lazy)]


class OriginalHashes:
    """The record hashes of each original over the variables asked for, computed once per run and
    kept: every synthesis of a dataset (each repetition and source) compares its sets with them.

    Called from the syntheses' concurrent threads; the lock makes each (dataset, variables) be
    hashed once."""

    def __init__(self, originals: Mapping[str, Dataset], executor: Executor) -> None:
        self._originals = originals
        self._executor = executor
        self._found: dict[tuple[str, tuple[str, ...]], np.ndarray] = {}
        self._lock = threading.Lock()

    def __call__(self, dataset: str, variables: Sequence[str]) -> np.ndarray:
        key = (dataset, tuple(variables))
        with self._lock:
            if key not in self._found:
                original = self._originals[dataset].select(list(variables))
                (self._found[key],) = record_hashes([original], self._executor)
            return self._found[key]


def overlap_share(original: np.ndarray, other: np.ndarray) -> float:
    """The share of ``other``'s records (hashes) equal to one of ``original``'s (0 for no records).

    By a search of sorted hashes (NumPy's ``isin`` hashes them instead: some 30x slower on a
    million records)."""
    if not len(other) or not len(original):
        return 0.0
    ordered, queries = np.sort(original), np.sort(other)  # sorted queries: a cache-friendly search
    at = np.minimum(np.searchsorted(ordered, queries), len(ordered) - 1)
    return float(np.mean(ordered[at] == queries))


def repeat_share(hashes: np.ndarray) -> float:
    """The share of records equal to another record of the same data set."""
    if not len(hashes):
        return 0.0
    ordered = np.sort(hashes)
    same = ordered[1:] == ordered[:-1]
    repeated = np.zeros(len(ordered), dtype=bool)
    repeated[1:] |= same
    repeated[:-1] |= same
    return float(np.mean(repeated))


def copy_share(original: np.ndarray, synthetic: np.ndarray) -> tuple[bool, float]:
    """(same records in any order, share of rows equal to the original's row in the same place)."""
    if len(original) != len(synthetic):
        return False, 0.0
    same_records = bool(np.array_equal(np.sort(original), np.sort(synthetic)))
    return same_records, float(np.mean(original == synthetic)) if len(original) else 0.0


def check_original_sizes(task: LoadedTask, inputs: TaskInputs, executor: Executor) -> None:
    """Refuse an original with fewer than :data:`MIN_ORIGINAL_RECORDS` records.

    Raises
    ------
    TaskError
        Naming the task, the dataset and its file.
    """
    names = list(inputs.originals)
    counts = executor.partition_rows(*[inputs.originals[n].frame for n in names])
    for name, parts in zip(names, counts, strict=True):
        n = sum(parts)
        if n < MIN_ORIGINAL_RECORDS:
            raise TaskError(
                f"{task.path}: dataset {name!r}: the original ({inputs.originals[name].source}) has {n} record(s); "
                f"at least {MIN_ORIGINAL_RECORDS} are needed"
            )


def _file_sources(inputs: TaskInputs) -> list[SourceKey]:
    """The sources given as files or demo data (synthesised ones are made by the run)."""
    synthesised = {s.key for s in inputs.syntheses}
    return [k for k in inputs.synthetic if k not in synthesised]


def _controls(task: LoadedTask) -> set[tuple[str, str]]:
    return {(d.name, s.name) for d in task.spec.datasets for s in d.synthetic if s.control}


@dataclass(frozen=True)
class _Hashes:
    """The record hashes the checks compare, computed in one pass: each original once per set of
    variables it is compared on, each holdout, each set of a file or demo source."""

    originals: dict[tuple[str, tuple[str, ...]], np.ndarray]
    holdouts: dict[str, np.ndarray]
    sets: dict[SourceKey, list[np.ndarray]]

    @classmethod
    def of(cls, inputs: TaskInputs, executor: Executor) -> _Hashes:
        originals: dict[tuple[str, tuple[str, ...]], Dataset] = {}
        for name in inputs.holdouts:
            originals.setdefault((name, tuple(inputs.originals[name].schema.names)), inputs.originals[name])
        sources = _file_sources(inputs)
        for key in sources:
            original, sets = inputs.synthetic[key]
            columns = tuple(sets[0].schema.names)
            originals.setdefault((key[0], columns), original.select(list(columns)))
        sets = [
            [s.select(list(inputs.synthetic[k][1][0].schema.names)) for s in inputs.synthetic[k][1]] for k in sources
        ]
        found = iter(
            record_hashes(
                [*originals.values(), *inputs.holdouts.values(), *(s for per_source in sets for s in per_source)],
                executor,
            )
        )
        return cls(
            {k: next(found) for k in originals},
            {n: next(found) for n in inputs.holdouts},
            {k: [next(found) for _ in per_source] for k, per_source in zip(sources, sets, strict=True)},
        )


def check_holdouts(task: LoadedTask, inputs: TaskInputs, hashes: _Hashes) -> list[Overlap]:
    """The overlap of each holdout with its original; refuse a holdout file that is (much of) it.

    Raises
    ------
    TaskError
        Naming the dataset, the holdout file and the shares (no values).
    """
    figures = []
    for name, holdout in hashes.holdouts.items():
        original = hashes.originals[(name, tuple(inputs.originals[name].schema.names))]
        figure = Overlap(name, "", "holdout", overlap_share(original, holdout), repeat_share(original))
        figures.append(figure)
        record = inputs.holdout_records[name]
        if record["kind"] == "file" and figure.excess > HOLDOUT_OVERLAP_MAX:
            raise TaskError(
                f"{task.path}: dataset {name!r}: holdout {record['path']}: {figure.share:.2%} of its records are "
                f"records of the original ({figure.repeats:.2%} of the original's records repeat within it); a "
                "holdout must be records the synthesis never saw, else every excess reads 0. Give a holdout file "
                "disjoint from the original, or 'holdout: {fraction: ...}' to split one off"
            )
    return figures


def check_not_copies(task: LoadedTask, inputs: TaskInputs, hashes: _Hashes) -> list[Overlap]:
    """The overlap of every set of a file or demo source with its original; refuse a source (not
    marked ``control``) whose sets are the original or a near-copy of it (see the module notes).

    Raises
    ------
    TaskError
        Naming the source, the set's file and the share of unchanged records (no values).
    """
    controls = _controls(task)
    figures = []
    for (dataset, source, repetition), set_hashes in hashes.sets.items():
        sets = inputs.synthetic[(dataset, source, repetition)][1]
        original = hashes.originals[(dataset, tuple(sets[0].schema.names))]
        repeats = repeat_share(original)
        for i, (s, h) in enumerate(zip(sets, set_hashes, strict=True), start=1):
            figure = Overlap(dataset, source, str(i), overlap_share(original, h), repeats)
            figures.append(figure)
            if (dataset, source) in controls:
                continue
            same_records, share = copy_share(original, h)
            if same_records or share >= COPY_SHARE:
                how = (
                    "the same records in another order"
                    if same_records and share < 1
                    else "the same records"
                    if same_records
                    else f"{share:.2%} of its records unchanged, row by row"
                )
            elif figure.excess > SET_OVERLAP_MAX:
                how = (
                    f"{figure.share:.2%} of its records are records of the original; "
                    f"{figure.repeats:.2%} of the original's records repeat within it"
                )
            else:
                continue
            raise TaskError(
                f"{task.path}: dataset {dataset!r} source {source!r}: synthetic set {i} ({s.source}) is a copy of "
                f"the original ({how}); its figures would be the original's own risk reported as a release's. "
                "Give the synthetic files, or, to evaluate the original as a deliberate reference, mark the "
                "source 'control: true'"
            )
    return figures


def check_inputs(task: LoadedTask, inputs: TaskInputs, executor: Executor) -> list[Overlap]:
    """Every check of the task's data as a whole (run and ``validate`` alike), before any work;
    the overlap figures of the holdouts and of the file and demo sources' sets."""
    check_original_sizes(task, inputs, executor)
    hashes = _Hashes.of(inputs, executor)
    return [*check_holdouts(task, inputs, hashes), *check_not_copies(task, inputs, hashes)]


def overlap_rows(figures: Sequence[Overlap], task: str, run_id: str) -> pd.DataFrame:
    """The overlap figures as rows of the results table (family ``integrity``, measure
    ``overlap_share`` per set, ``holdout_overlap_share`` per holdout)."""
    return pd.DataFrame(
        {
            "task": task,
            "run_id": run_id,
            "dataset": [f.dataset for f in figures],
            "source": [f.source for f in figures],
            "repetition": 0,
            "family": "integrity",
            "type": "overlap",
            "measure_name": "overlap",
            "setting": "",
            "params": "{}",
            "synthetic": [f.synthetic for f in figures],
            "measure": [f.measure for f in figures],
            # the measure's own figures (no holdout comparison, no summary over sets)
            "role": pd.Series(["observed"] * len(figures), dtype="str"),
            "summary": pd.Series([None] * len(figures), dtype="str"),
            "method": pd.Series([None] * len(figures), dtype="str"),
            "value": np.array([f.share for f in figures], dtype="float64"),
        },
        columns=RESULT_COLUMNS,
    )


def checked_fingerprint(task: LoadedTask, inputs: TaskInputs) -> str:
    """What :func:`check_inputs` depends on: the content hashes of the originals, holdouts and
    file sources (which sources are controls counts), and the code version."""
    controls = _controls(task)
    checked = {
        "originals": {d: inputs.hashes[(d, None, 0)] for d in inputs.originals},
        "holdouts": {d: r["fingerprint"] for d, r in inputs.holdout_records.items()},
        "sources": sorted([*k, inputs.hashes[k], (k[0], k[1]) in controls] for k in _file_sources(inputs)),
        "version": code_version(),
    }
    return fingerprint(checked)


def inputs_checked(cache: Path, task: LoadedTask, inputs: TaskInputs) -> list[Overlap] | None:
    """The overlap figures the run folder's cache (``<out>/.units``) records for these inputs,
    which passed :func:`check_inputs` (:func:`record_checked`); None when it records no such
    check: a rerun does not read them again to check."""
    try:
        found = json.loads((cache / CHECKED_FILE).read_text(encoding="utf-8"))
        if not isinstance(found, dict) or found.get("fingerprint") != checked_fingerprint(task, inputs):
            return None
        return [Overlap(**f) for f in found["overlaps"]]
    except (OSError, ValueError, TypeError, KeyError):
        return None


def record_checked(cache: Path, task: LoadedTask, inputs: TaskInputs, figures: Sequence[Overlap]) -> None:
    """Record in ``cache`` (the task's claimed ``<out>/.units``) that these inputs passed
    :func:`check_inputs`, with their overlap figures (aggregates only)."""
    found = {"fingerprint": checked_fingerprint(task, inputs), "overlaps": [asdict(f) for f in figures]}
    atomic_write_text(json_text(found), cache / CHECKED_FILE)
