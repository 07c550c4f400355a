"""Checks of a task's data as a whole, before any work: enough records, and no source that is
the original itself.

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
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from pipeline.blocks import key_hash
from pipeline.data.dataset import Dataset
from pipeline.errors import TaskError
from pipeline.evaluation.execution import Executor
from pipeline.results import atomic_write_text
from pipeline.run.inputs import SourceKey, TaskInputs
from pipeline.tasks import LoadedTask, code_version

#: at least this many records in every original (fewer leaves no spread to measure: divisions by n − 1)
MIN_ORIGINAL_RECORDS = 2
#: a set with the original's size and at least this share of its rows unchanged is a copy
COPY_SHARE = 0.99
#: in a run folder's ``.units``: the fingerprint of the inputs that last passed :func:`check_inputs`
CHECKED_FILE = "inputs-checked.json"


def _hashes(datasets: Sequence[Dataset], executor: Executor) -> list[np.ndarray]:
    """The record hashes of each data set over all its variables (:func:`pipeline.blocks.key_hash`:
    by value, numbers as float64), in record order, computed where the data are."""
    lazy = [
        executor.map_combine(executor.partitions(d.frame), key_hash, np.concatenate, None, d.schema.names)
        for d in datasets
    ]
    return [np.asarray(h) for h in executor.compute(*lazy)]


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


def _copy_checked(task: LoadedTask, inputs: TaskInputs) -> list[SourceKey]:
    """The sources :func:`check_not_copies` checks: file and demo sources not marked ``control``."""
    controls = {(d.name, s.name) for d in task.spec.datasets for s in d.synthetic if s.control}
    synthesised = {s.key for s in inputs.syntheses}
    return [k for k in inputs.synthetic if (k[0], k[1]) not in controls and k not in synthesised]


def check_not_copies(task: LoadedTask, inputs: TaskInputs, executor: Executor) -> None:
    """Refuse a file or demo source whose synthetic sets are the original (see the module notes).

    Raises
    ------
    TaskError
        Naming the source, the set's file and the share of unchanged records (no values).
    """
    for dataset, source, repetition in _copy_checked(task, inputs):
        original, sets = inputs.synthetic[(dataset, source, repetition)]
        columns = sets[0].schema.names
        hashes = _hashes([original.select(columns), *[s.select(columns) for s in sets]], executor)
        for i, (s, h) in enumerate(zip(sets, hashes[1:], strict=True), start=1):
            same_records, share = copy_share(hashes[0], h)
            if same_records or share >= COPY_SHARE:
                how = (
                    "the same records in another order"
                    if same_records and share < 1
                    else "the same records"
                    if same_records
                    else f"{share:.2%} of its records unchanged, row by row"
                )
                raise TaskError(
                    f"{task.path}: dataset {dataset!r} source {source!r}: synthetic set {i} ({s.source}) is a copy of "
                    f"the original ({how}); its figures would be the original's own risk reported as a release's. "
                    "Give the synthetic files, or, to evaluate the original as a deliberate reference, mark the "
                    "source 'control: true'"
                )


def check_inputs(task: LoadedTask, inputs: TaskInputs, executor: Executor) -> None:
    """Every check of the task's data as a whole (run and ``validate`` alike), before any work."""
    check_original_sizes(task, inputs, executor)
    check_not_copies(task, inputs, executor)


def checked_fingerprint(task: LoadedTask, inputs: TaskInputs) -> str:
    """What :func:`check_inputs` depends on: the content hashes of the originals and of the
    sources it checks as copies (which sources are controls counts), and the code version."""
    checked = {
        "originals": {d: inputs.hashes[(d, None, 0)] for d in inputs.originals},
        "sources": sorted([*k, inputs.hashes[k]] for k in _copy_checked(task, inputs)),
        "version": code_version(),
    }
    return hashlib.sha256(json.dumps(checked, sort_keys=True).encode()).hexdigest()[:20]


def inputs_checked(cache: Path, task: LoadedTask, inputs: TaskInputs) -> bool:
    """Whether the run folder's cache (``<out>/.units``) records that these inputs passed
    :func:`check_inputs` (:func:`record_checked`): a rerun does not read them again to check."""
    try:
        found = json.loads((cache / CHECKED_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(found, dict) and found.get("fingerprint") == checked_fingerprint(task, inputs)


def record_checked(cache: Path, task: LoadedTask, inputs: TaskInputs) -> None:
    """Record in ``cache`` (the task's claimed ``<out>/.units``) that these inputs passed :func:`check_inputs`."""
    atomic_write_text(json.dumps({"fingerprint": checked_fingerprint(task, inputs)}), cache / CHECKED_FILE)
