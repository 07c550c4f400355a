"""The data of a task: originals, holdouts and sources read, aligned and kept in cluster memory once.

A dataset's holdout is read from its file as the original is, or split off the original
before any synthesis (:mod:`pipeline.run.split`): the original the synthesisers and the
measures get is then the training part.  A synthesised source enters as its
:class:`~pipeline.tasks.SynthesisUnit`; until it has run it is a schema-only stand-in
(:func:`stand_in_syntheses`) so that every measure unit can be checked before any work.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from pipeline import notices
from pipeline.data.compare import align_synthetic
from pipeline.data.dataset import DEFAULT_ENCODING, Dataset, read_dataset, read_raw
from pipeline.errors import PipelineError, TaskError, located
from pipeline.evaluation.execution import Executor
from pipeline.fingerprint import canonical, fingerprint, recorded_data_identity
from pipeline.run.split import MIN_HOLDOUT_RECORDS, HoldoutSplit
from pipeline.tasks import DatasetSpec, LoadedTask, SourceSpec, SynthesisUnit, content_hash, synthesis_units

#: (dataset, source, repetition)
SourceKey = tuple[str, str, int]


@dataclass
class TaskInputs:
    """The data of a task: originals, the synthetic sets per source, and the syntheses to run."""

    #: dataset -> the records the measures compare (with a ``fraction`` holdout: the training part)
    originals: dict[str, Dataset] = field(default_factory=dict)
    #: dataset -> its holdout records, in the original's schema (datasets with a holdout only)
    holdouts: dict[str, Dataset] = field(default_factory=dict)
    #: dataset -> how its holdout was made (for the manifest: counts, settings, fingerprint; no values)
    holdout_records: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: dataset -> content hash of the original as read (before a split): the privacy-budget ledger's
    original_hashes: dict[str, str] = field(default_factory=dict)
    #: dataset -> the original as read (before a split): its columns' fingerprints key the ledger
    as_read: dict[str, Dataset] = field(default_factory=dict)
    #: (dataset, source, repetition) -> (original aligned to the source, synthetic sets); a
    #: synthesised source is a schema-only stand-in until its synthesis unit has run
    synthetic: dict[SourceKey, tuple[Dataset, list[Dataset]]] = field(default_factory=dict)
    hashes: dict[tuple[str, str | None, int], str] = field(default_factory=dict)
    syntheses: list[SynthesisUnit] = field(default_factory=list)
    #: the key-block layouts the run made (for the manifest: keys, data sets, blocks, why; no values)
    layouts: list[dict[str, Any]] = field(default_factory=list)

    def data(self, dataset: str, source: str | None, repetition: int) -> tuple[Dataset, list[Dataset]]:
        """The original (aligned to the source) and the synthetic sets of a unit's data."""
        if source is None:
            return self.originals[dataset], []
        return self.synthetic[(dataset, source, repetition)]

    def holdout(self, dataset: str) -> Dataset | None:
        """The holdout of ``dataset`` (None without one)."""
        return self.holdouts.get(dataset)

    def put_synthetic(self, key: SourceKey, original: Dataset, sets: list[Dataset]) -> None:
        """Give a synthesised source its data: a schema-only stand-in before it has run
        (:func:`stand_in_syntheses`), then its sets once synthesised."""
        self.synthetic[key] = (original, sets)

    def kept(self, by_id: Mapping[int, Dataset]) -> None:
        """Replace each data set by its copy in ``by_id`` (keyed by the id of its frame; the others
        stay): the data :func:`persist_inputs` put in cluster memory."""

        def kept(d: Dataset) -> Dataset:
            return by_id.get(id(d.frame), d)

        self.originals = {k: kept(d) for k, d in self.originals.items()}
        self.holdouts = {k: kept(d) for k, d in self.holdouts.items()}
        self.synthetic = {k: (kept(o), [kept(s) for s in sets]) for k, (o, sets) in self.synthetic.items()}


def _data_hash(datasets: list[Dataset]) -> str:
    """Fingerprint of the data files' contents and the schemas they are read with (levels, missing codes)."""
    return fingerprint(
        {"files": content_hash([Path(d.source) for d in datasets]), "schemas": [d.schema.to_dict() for d in datasets]}
    )


def _ledger_data(original: Dataset) -> str:
    """The original's identity as privacy ledgers record it (:func:`pipeline.privacy_ledger.release_spend`
    keeps a short hash of it): the files' content hash followed by the schema's JSON.  Ledgers
    written before are matched by it, so its form does not change."""
    return recorded_data_identity(content_hash([Path(original.source)]), original.schema.to_dict())


def _read_original(task: LoadedTask, spec: DatasetSpec) -> Dataset:
    from pipeline.datasets import load_demo

    o = spec.original
    if o.demo is not None:
        ds = load_demo(o.demo, o.rows)
    else:
        schema = task.resolve(o.schema_file) if o.schema_file else None
        ds = read_dataset(task.resolve(o.path), schema=schema, name=spec.name, encoding=o.encoding)
    if o.columns:
        ds = ds.select(o.columns)
    if o.missing_codes:
        ds = replace(ds, schema=ds.schema.with_missing_codes(o.missing_codes))
    return ds


def _holdout_context(task: LoadedTask, spec: DatasetSpec) -> str:
    """How holdout errors name their place: the task file, the line and the dataset."""
    from pipeline.config_io import YamlLines

    index = next(i for i, d in enumerate(task.spec.datasets) if d.name == spec.name)
    line = YamlLines(task.path).line(["datasets", index, "holdout"])
    return f"{task.path}: " + (f"line {line}: " if line else "") + f"dataset {spec.name!r}: holdout"


def _read_holdout(
    task: LoadedTask, spec: DatasetSpec, original: Dataset, executor: Executor
) -> tuple[Dataset, dict[str, Any]]:
    """The holdout file of ``spec``, read as its original is (same schema, missing codes and
    encoding), with the original's variables exactly (a ``columns`` selection applies to both);
    or the generated holdout of a generated original (``demo: register_holdout``).

    Raises
    ------
    TaskError
        Missing or extra variables, too few records, or a read error (naming the file).
    """
    h, o = spec.holdout, spec.original
    assert h is not None
    if h.demo is not None:
        return _generated_holdout(spec, original, executor)
    assert h.path is not None
    path = task.resolve(h.path)
    encoding = h.encoding or o.encoding or original.schema.encoding
    context = _holdout_context(task, spec)
    try:
        columns = [str(c) for c in read_raw(path, encoding or DEFAULT_ENCODING)[0].columns]
        expected = list(original.schema.names)
        missing = [v for v in expected if v not in columns]
        extra = [] if o.columns else [v for v in columns if v not in expected]
        if missing or extra:
            what = [
                f"missing {', '.join(map(repr, missing))}" if missing else "",
                f"extra {', '.join(map(repr, extra))}" if extra else "",
            ]
            raise TaskError(
                f"{path}: a holdout must hold the original's variables ({', '.join(expected)}): "
                + "; ".join(w for w in what if w)
            )
        holdout = read_dataset(
            path, schema=original.schema, name=f"{spec.name}_holdout", columns=expected, encoding=encoding
        )
        (counts,) = executor.partition_rows(holdout.frame)
    except PipelineError as e:
        raise TaskError(f"{context}: {e}") from None
    records = int(sum(counts))
    if records < MIN_HOLDOUT_RECORDS:
        raise TaskError(f"{context}: {path} has {records} records; a holdout needs at least {MIN_HOLDOUT_RECORDS}")
    return holdout, {
        "kind": "file",
        "path": str(path),
        "holdout_records": records,
        "fingerprint": _data_hash([holdout]),
    }


def _generated_holdout(spec: DatasetSpec, original: Dataset, executor: Executor) -> tuple[Dataset, dict[str, Any]]:
    """A generated original's generated holdout, in the original's schema and variables."""
    from pipeline.datasets import load_demo_holdout

    assert spec.holdout is not None and spec.holdout.demo is not None
    holdout = load_demo_holdout(spec.holdout.demo, spec.original.rows)
    holdout = replace(holdout.select(list(original.schema.names)), schema=original.schema, name=f"{spec.name}_holdout")
    (counts,) = executor.partition_rows(holdout.frame)
    record = {"kind": "demo", "demo": spec.holdout.demo, "holdout_records": int(sum(counts))}
    return holdout, {**record, "fingerprint": _data_hash([holdout])}


def _split(
    task: LoadedTask, spec: DatasetSpec, original: Dataset, executor: Executor, data_hash: str
) -> tuple[Dataset, Dataset, dict[str, Any]]:
    """The training part, the holdout and the record of a ``fraction`` split of ``original``."""
    h = spec.holdout
    assert h is not None and h.fraction is not None
    split = HoldoutSplit(h.fraction, task.spec.seed if h.seed is None else h.seed)
    try:
        return split.split(original, executor, data_hash)
    except PipelineError as e:
        raise TaskError(f"{_holdout_context(task, spec)}: {e}") from None


def _read_source(
    task: LoadedTask, spec: DatasetSpec, original: Dataset, src: SourceSpec
) -> tuple[Dataset, list[Dataset]]:
    from pipeline.datasets import load_demo_synthetic

    if src.demo is not None:
        # a generated twin has its original's size
        sets = load_demo_synthetic(src.demo, spec.original.rows)
    else:
        # a source's own schema gets the original's special missing codes; by default it is the original's
        schema = task.resolve(src.schema_file) if src.schema_file else original.schema
        codes = original.schema.cont_na if src.schema_file else None
        encoding = src.encoding or (None if src.schema_file else _original_encoding(task, original))
        # aligned to the original: a level the sets hold and the original lacks is aligned, not refused
        widen = src.compatibility == "align" and not src.schema_file
        sets = [
            read_dataset(
                p, schema=schema, name=f"{src.name}_{i + 1}", missing_codes=codes, encoding=encoding, new_levels=widen
            )
            for i, p in enumerate(task.source_paths(src))
        ]
    original, sets, changes = align_synthetic(original, sets, src.compatibility)
    for c in changes:
        notices.warn(f"aligned: {c}")
    return original, sets


def _original_encoding(task: LoadedTask, original: Dataset) -> str | None:
    """The encoding the original was read with (its dataset entry's), for its sources' files."""
    for d in task.spec.datasets:
        if d.name == original.name and d.original.path is not None:
            return d.original.encoding
    return None


def against_synthesised(original: Dataset, sets: list[Dataset]) -> tuple[Dataset, list[Dataset]]:
    """The original restricted to the synthesised variables, levels aligned with the sets (which
    hold the variables after SDC: merged levels, coded tails), and the sets."""
    aligned, sets, _ = align_synthetic(original.select(sets[0].schema.names), sets, "align")
    return aligned, sets


def read_inputs(task: LoadedTask, executor: Executor | None = None, with_sources: bool = True) -> TaskInputs:
    """Read every original and holdout (splitting those with a ``fraction`` holdout, which
    counts their records with ``executor``, default :meth:`Executor.current`) and
    (``with_sources``) every file or demo source; list the syntheses.

    Nothing is synthesised: a synthesised source enters as its :class:`SynthesisUnit`, whose
    fingerprint is the input hash of the measure units on it (plus the holdout's fingerprint).
    """
    executor = executor or Executor.current()
    originals: dict[str, Dataset] = {}
    holdouts: dict[str, Dataset] = {}
    records: dict[str, dict[str, Any]] = {}
    as_read: dict[str, Dataset] = {}
    synthetic: dict[SourceKey, tuple[Dataset, list[Dataset]]] = {}
    hashes: dict[SourceKey, str] = {}
    for d in task.spec.datasets:
        original = as_read[d.name] = _read_original(task, d)
        read_hash, split = _data_hash([original]), None
        if d.holdout is not None and d.holdout.fraction is not None:
            original, holdouts[d.name], records[d.name] = _split(task, d, original, executor, read_hash)
            split = records[d.name]["fingerprint"]  # the training part: what synthesisers and measures see
        elif d.holdout is not None:
            holdouts[d.name], records[d.name] = _read_holdout(task, d, original, executor)
        holdout = records[d.name]["fingerprint"] if d.name in records else None
        originals[d.name] = original
        hashes[(d.name, None, 0)] = fingerprint({"original": read_hash, "split": split})
        for src in d.synthetic:
            if src.synthesise is None and with_sources:
                aligned, sets = _read_source(task, d, original, src)
                synthetic[(d.name, src.name, 0)] = (aligned, sets)
                hashes[(d.name, src.name, 0)] = fingerprint(
                    {"original": hashes[(d.name, None, 0)], "sets": _data_hash(sets), "holdout": holdout}
                )
    syntheses = synthesis_units(task, {d: hashes[(d, None, 0)] for d in originals})
    for s in syntheses:
        holdout = records[s.dataset]["fingerprint"] if s.dataset in records else None
        hashes[s.key] = fingerprint({"synthesis": s.fingerprint, "holdout": holdout})
    return TaskInputs(
        originals=originals,
        holdouts=holdouts,
        holdout_records=records,
        original_hashes={d: _ledger_data(o) for d, o in as_read.items()},
        as_read=as_read,
        synthetic=synthetic,
        hashes=hashes,
        syntheses=syntheses,
    )


def planned_spend(
    task: LoadedTask, inputs: TaskInputs, history: str | Path | None, executor: Executor, record: bool = False
) -> list[dict[str, Any]]:
    """The privacy-budget ledger entries of the run's DP releases, after checking the task's cap
    against them and the spend already in ``history`` (see :mod:`pipeline.privacy_ledger`; the
    column fingerprints of the originals with a DP release are computed with ``executor``).

    With ``record`` (a run, not ``validate``) and a ``history``, the check and the record of
    the new releases in the history's ledger happen under its lock (the history is created if
    it does not exist yet).

    Raises
    ------
    TaskError
        The run would take a dataset over its cap, or the task has a cap but no history to
        keep its ledger in (nothing has been written yet).
    """
    from pipeline.privacy_ledger import (
        check_cap,
        column_fingerprints,
        history_entries,
        ledger_entries,
        release_spend,
        reserve,
    )
    from pipeline.store import ResultsStore

    spends = []
    columns: dict[str, tuple[str, ...]] = {}
    for u in inputs.syntheses:
        if u.synthesiser.privacy_spend() is None:
            continue
        if u.dataset not in columns:
            columns[u.dataset] = column_fingerprints(inputs.as_read[u.dataset], executor)
        s = release_spend(
            u.dataset,
            inputs.original_hashes[u.dataset],
            u.source,
            u.repetition,
            u.fingerprint,
            u.synthesiser,
            columns[u.dataset],
        )
        if s is not None:
            spends.append(s)
    cap = task.spec.privacy_budget
    if cap is not None and history is None:
        raise TaskError(
            f"{task.path}: 'privacy_budget' caps the spend recorded in a results history, and the task has none: "
            "add 'history: <folder>' to the task (or pass --history)"
        )
    if record and history is not None and spends:
        with ResultsStore(history).locked():
            return reserve(cap, spends, history, task.spec.name, str(task.path))
    check_cap(cap, spends, history_entries(history), str(task.path))
    return ledger_entries(spends)


def stand_in_syntheses(task: LoadedTask, inputs: TaskInputs, executor: Executor) -> None:
    """Give every synthesised source its schema without synthesising: the original aligned to
    the synthesised schema and m empty sets of it, for the checks that precede any work."""
    # the repetitions of a source share one stand-in (same schema and m)
    stand_ins: dict[tuple[str, str, str, int], tuple[Dataset, list[Dataset]]] = {}
    for u in inputs.syntheses:
        original = inputs.originals[u.dataset]
        try:
            schema = u.synthesiser.schema(original, executor)
        except PipelineError as e:
            raise located(f"{task.path}: {u.where}: synthesise", e) from e
        key = (u.dataset, u.source, canonical(schema.to_dict()), u.synthesiser.m)
        if key not in stand_ins:
            empty = pd.DataFrame({v.name: pd.Series(dtype=v.dtype) for v in schema})
            sets = [Dataset.from_pandas(empty, schema, name=f"{u.source}_{i + 1}") for i in range(u.synthesiser.m)]
            stand_ins[key] = against_synthesised(original, sets)
        inputs.put_synthetic(u.key, *stand_ins[key])


def _persisted(datasets: Iterable[Dataset], executor: Executor) -> dict[int, Dataset]:
    """Each distinct data set (by frame) kept in cluster memory, keyed by the id of its old frame."""
    unique = list({id(d.frame): d for d in datasets}.values())
    frames = executor.persist(*[d.frame for d in unique])
    return {id(d.frame): replace(d, frame=f) for d, f in zip(unique, frames, strict=True)}


def persist_inputs(
    inputs: TaskInputs,
    executor: Executor,
    keys: Sequence[SourceKey] | None = None,
    datasets: Collection[str] | None = None,
) -> None:
    """Read inputs once into cluster memory, so that units share them instead of re-reading files:
    the sources ``keys`` (default: every source) and the originals and holdouts of ``datasets``
    (default: every dataset when no ``keys`` are given, else none) — e.g. only the data of the
    units a run still has to compute, or the sets of finished syntheses."""
    chosen = list(inputs.synthetic) if keys is None else list(keys)
    names = [d for d in inputs.originals if (keys is None if datasets is None else d in datasets)]
    datasets_read = [inputs.originals[d] for d in names] + [inputs.holdouts[d] for d in names if d in inputs.holdouts]
    for k in chosen:
        original, sets = inputs.synthetic[k]
        datasets_read += [original, *sets]
    inputs.kept(_persisted(datasets_read, executor))
