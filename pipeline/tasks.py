"""Task files: the validated YAML that says what to evaluate, and its expansion into units.

A task names data sets (an original and one or more synthetic *sources*: given files, a
bundled demo, or the coarsened-margins synthesiser), measures with parameters and parameter
grids, repetitions, the output folder, the cluster and the executor settings.
:func:`load_task` validates the file; :func:`synthesis_units` and :func:`expand` turn it into
units of work — one :class:`SynthesisUnit` per synthesised source and repetition, one
:class:`Unit` per measure setting and input — each with a stable fingerprint (input content
hashes + settings + code version) so that a sweep can resume.

See ``tasks/*.yaml`` for examples and ``docs/tasks.md`` for the full format.
"""

from __future__ import annotations

import difflib
import glob
import hashlib
import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, SerializeAsAny, ValidationError, model_validator

from pipeline import __version__
from pipeline.config_io import Seed, YamlLines, error_message, read_yaml
from pipeline.errors import TaskError
from pipeline.evaluation.base import Measure, canonical_params, setting_text
from pipeline.evaluation.baseline import BaselineOptions
from pipeline.evaluation.policy import BLOCK_ROWS, IN_MEMORY_ROWS, Policy
from pipeline.fingerprint import fingerprint
from pipeline.privacy_ledger import BudgetCap
from pipeline.synth.base import Synthesiser, SynthesisParams
from pipeline.synthesisers import SynthesisSettings, synthesiser


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid")


class OriginalSpec(_Spec):
    """The original (confidential) data: a bundled demo name or a file (+ schema).

    ``rows`` is the size of a generated demo (``demo: register``), the only kind that has one.
    """

    demo: str | None = None
    rows: int | None = Field(None, ge=1_000, le=50_000_000, strict=True)
    path: str | None = None
    schema_file: str | None = Field(None, alias="schema")
    missing_codes: dict[str, float | list[float]] = {}
    columns: list[str] | None = None
    #: text encoding of a CSV file (default: the schema's, else UTF-8)
    encoding: str | None = None

    @model_validator(mode="after")
    def _one_source(self) -> OriginalSpec:
        if (self.demo is None) == (self.path is None):
            raise ValueError("give exactly one of 'demo' or 'path'")
        from pipeline.datasets import GENERATED

        if self.rows is not None and self.demo not in GENERATED:
            raise ValueError(f"'rows' is only for a generated demo ({', '.join(sorted(GENERATED))})")
        return self


#: characters a task, dataset or source name may have (a file name may have 255 bytes, and the run's
#: temporaries and the history's ``task=<name>`` folders add to it)
MAX_NAME = 100


def _plain_name(name: str) -> str:
    """A task, dataset or source name: it names folders of a run (``synthesis/<dataset>/<source>``,
    the history's ``task=<name>``), so it cannot be a path that leads out of them."""
    if len(name) > MAX_NAME:
        raise ValueError(
            f"a name of {len(name)} characters: at most {MAX_NAME} (the name is a folder of the run, and file names "
            "beside it add to its length)"
        )
    if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]*", name):
        raise ValueError(
            f"{name!r} is not a plain name: use letters, digits, '_', '.' and '-', starting with a letter, a digit "
            "or '_' (the name is a folder of the run)"
        )
    return name


PlainName = Annotated[str, AfterValidator(_plain_name)]


class SourceSpec(_Spec):
    """One synthetic source: files (``paths``, globs allowed), a bundled demo, or a synthesiser."""

    name: PlainName
    demo: str | None = None
    paths: list[str] | None = None
    schema_file: str | None = Field(None, alias="schema")
    #: the synthesiser's settings, validated by the model of their ``kind`` (:mod:`pipeline.synthesisers`)
    synthesise: SerializeAsAny[SynthesisSettings] | None = None  # type: ignore[valid-type]
    compatibility: Literal["strict", "align"] = "strict"
    #: text encoding of CSV files (default: the schema's, else the original's, else UTF-8)
    encoding: str | None = None
    #: a deliberate reference, e.g. the original evaluated as its own synthetic set: exempt from the
    #: check that refuses a source which is a copy of the original (:mod:`pipeline.run.integrity`)
    control: bool = False

    @model_validator(mode="after")
    def _one_source(self) -> SourceSpec:
        given = [x for x in (self.demo, self.paths, self.synthesise) if x is not None]
        if len(given) != 1:
            raise ValueError(f"source {self.name!r}: give exactly one of 'demo', 'paths' or 'synthesise'")
        return self


class HoldoutSpec(_Spec):
    """Records of the same population that the synthetic data were not made from (docs/baselines.md).

    Either a file (``path``, read with the original's schema and settings; a bare string is a
    path) or, for a dataset whose sources all synthesise, ``fraction``: the original is split
    once, seeded, before any synthesis, and the synthesisers see only the training part.
    """

    path: str | None = None
    #: a generated holdout of a generated original (``register_holdout`` of ``demo: register``)
    demo: str | None = None
    #: text encoding of a CSV file (default: the original's)
    encoding: str | None = None
    fraction: float | None = Field(None, gt=0, lt=1, description="share of the original kept back")
    #: seed of the split (default: the task's)
    seed: Seed | None = None

    @model_validator(mode="before")
    @classmethod
    def _path_text(cls, value: Any) -> Any:
        return {"path": value} if isinstance(value, str) else value

    @model_validator(mode="after")
    def _one_kind(self) -> HoldoutSpec:
        if sum(x is not None for x in (self.path, self.fraction, self.demo)) != 1:
            raise ValueError(
                "give exactly one of 'path' (a holdout file), 'fraction' (split the original) or 'demo' "
                "(a generated holdout)"
            )
        if self.fraction is None and self.seed is not None:
            raise ValueError("'seed' is for a 'fraction' split, not a holdout file")
        if self.path is None and self.encoding is not None:
            raise ValueError("'encoding' is for a holdout file")
        return self


class DatasetSpec(_Spec):
    name: PlainName
    original: OriginalSpec
    synthetic: list[SourceSpec] = []
    #: records the synthesisers never saw: the control of every risk figure (holdout baselines)
    holdout: HoldoutSpec | None = None

    @model_validator(mode="after")
    def _generated_holdout(self) -> DatasetSpec:
        from pipeline.datasets import GENERATED_HOLDOUTS

        demo = self.holdout.demo if self.holdout is not None else None
        if demo is not None and GENERATED_HOLDOUTS.get(demo, "") != self.original.demo:
            known = ", ".join(f"{h} (of demo: {o})" for h, o in GENERATED_HOLDOUTS.items())
            raise ValueError(
                f"dataset {self.name!r}: holdout: demo {demo!r} is not a holdout of this original; {known}"
            )
        return self

    @model_validator(mode="after")
    def _split_before_synthesis(self) -> DatasetSpec:
        if self.holdout is not None and self.holdout.fraction is not None:
            given = [s.name for s in self.synthetic if s.synthesise is None]
            if given:
                raise ValueError(
                    f"dataset {self.name!r}: holdout: fraction splits the original before synthesis, but "
                    f"source(s) {', '.join(map(repr, given))} were not made here (they may have seen every "
                    "record): give their holdout as a file (holdout: {path: ...}) or put them in another dataset"
                )
        return self


class BaselineSpec(BaselineOptions):
    """How the holdout baselines of a task are drawn (:class:`~pipeline.evaluation.baseline.BaselineOptions`);
    the seed defaults to the task's."""

    seed: Seed | None = None  # type: ignore[assignment]

    def options(self, task_seed: int) -> BaselineOptions:
        """The options with the seed filled in."""
        seed = task_seed if self.seed is None else self.seed
        return BaselineOptions(seed=seed, permutations=self.permutations, bootstrap=self.bootstrap)


class MeasureSpec(_Spec):
    """A measure with fixed ``params`` and a ``grid`` (cartesian product) of varying ones."""

    type: str
    name: str | None = None
    params: dict[str, Any] = {}
    grid: dict[str, list[Any]] = {}
    datasets: list[str] | None = None
    sources: list[str] | None = None

    @model_validator(mode="after")
    def _grid(self) -> MeasureSpec:
        for k, v in self.grid.items():
            if not v:
                raise ValueError(f"measure {self.type!r}: grid {k!r} is empty")
            if k in self.params:
                raise ValueError(f"measure {self.type!r}: {k!r} is both in params and in grid")
        return self

    @property
    def label(self) -> str:
        return self.name or self.type


class GateSpec(_Spec):
    """A nightly regression gate on one measure (see :mod:`pipeline.nightly`).

    Without ``summary``/``baseline`` it judges the measure's own rows; with them, the rows of that
    summary over sets (``summary: upper95``: the 95 % interval's upper bound) and/or holdout
    baseline (``baseline: excess``) — e.g. ``{measure: repU, summary: upper95, above: 1}``.
    ``below`` is for figures where higher is better (``{measure: mean_ci_overlap, below: 0.5}``).
    """

    measure: str
    family: str | None = None
    summary: Literal["mean", "sd", "lower95", "upper95"] | None = None
    #: the role of the rows judged (``normalised_excess``: the name ``residual`` had before 0.x)
    baseline: Literal["training", "holdout", "excess", "residual", "normalised_excess"] | None = None
    above: float | None = None
    below: float | None = None
    rise_above: float | None = None
    statistic: Literal["max", "mean"] = "max"

    @model_validator(mode="after")
    def _some_threshold(self) -> GateSpec:
        if self.above is None and self.below is None and self.rise_above is None:
            raise ValueError(f"gate on {self.measure!r}: give 'above', 'below' and/or 'rise_above'")
        return self


class ExecutionSpec(_Spec):
    """How the executor runs every unit (see :class:`~pipeline.evaluation.execution.Executor`)."""

    policy: Policy = "auto"
    in_memory_rows: int = Field(
        IN_MEMORY_ROWS,
        ge=1,
        description="auto, for a measure without a measured cost: in memory up to this many records",
    )
    block_rows: int = Field(BLOCK_ROWS, ge=1, description="target records per key block")


class TaskSpec(_Spec):
    name: PlainName
    description: str = ""
    datasets: list[DatasetSpec] = Field(min_length=1)
    measures: list[MeasureSpec] = Field(min_length=1)
    #: at most 10,000: each repetition is a synthesis and its measure units (a typo such as
    #: 1000000000 is refused at load instead of expanding for hours)
    repetitions: int = Field(1, ge=1, le=10_000)
    seed: Seed = 0
    output: str | None = None
    cluster: str | None = None
    history: str | None = None
    #: privacy-budget cap per dataset over the history's DP releases and this run's
    privacy_budget: BudgetCap | None = None
    gates: list[GateSpec] = []
    #: holdout baselines of the datasets with a holdout (permutations behind the excess interval, seed)
    baseline: BaselineSpec = BaselineSpec()
    concurrency: int = Field(2, ge=1, description="units evaluated at the same time")
    execution: ExecutionSpec = ExecutionSpec()

    @model_validator(mode="after")
    def _names(self) -> TaskSpec:
        names = [d.name for d in self.datasets]
        if len(set(names)) != len(names):
            raise ValueError("dataset names must be unique")
        for d in self.datasets:
            srcs = [s.name for s in d.synthetic]
            if len(set(srcs)) != len(srcs):
                raise ValueError(f"dataset {d.name!r}: synthetic source names must be unique")
            from pipeline.datasets import GENERATED_SYNTHETIC

            for s in d.synthetic:
                of = GENERATED_SYNTHETIC.get(s.demo or "")
                if of is not None and d.original.demo != of:
                    raise ValueError(
                        f"dataset {d.name!r} source {s.name!r}: demo {s.demo!r} is generated with its original: "
                        f"the dataset's original must be 'demo: {of}'"
                    )
        for m in self.measures:
            unknown = [n for n in m.datasets or [] if n not in names]
            if unknown:
                raise ValueError(f"measure {m.label!r}: unknown dataset(s) {unknown}; the task has {names}")
        if not any(d.holdout is not None for d in self.datasets):
            # a baseline row exists only for a dataset with a holdout: the gate would fail after the run
            for g in self.gates:
                if g.baseline is not None:
                    raise ValueError(
                        f"gate on {g.measure!r} with baseline: {g.baseline}: no dataset of the task has a holdout; "
                        "give one (holdout: {fraction: 0.2} or {path: ...}) or drop the gate's 'baseline'"
                    )
        return self


@dataclass(frozen=True)
class LoadedTask:
    spec: TaskSpec
    path: Path

    @property
    def base(self) -> Path:
        return self.path.parent

    def resolve(self, p: str) -> Path:
        """A path from the task file, relative to the task file's folder."""
        q = Path(p).expanduser()
        return q if q.is_absolute() else (self.base / q)

    @property
    def output(self) -> Path:
        """The run folder: ``output`` (default ``results/<name>``), relative to the task file's
        folder like every path in the task file."""
        return self.resolve(self.spec.output or f"results/{self.spec.name}")

    @property
    def history(self) -> Path | None:
        """The results history (``history``), relative to the task file's folder; None without one."""
        return self.resolve(self.spec.history) if self.spec.history else None

    def source_paths(self, src: SourceSpec) -> list[Path]:
        out: list[Path] = []
        for pattern in src.paths or []:
            full = str(self.resolve(pattern))
            matched = sorted(glob.glob(full)) if any(c in pattern for c in "*?[") else [full]
            if not matched:
                raise TaskError(f"{self.path}: source {src.name!r}: no file matches {pattern!r}")
            out.extend(Path(m) for m in matched)
        return out


def load_task(path: str | Path, data: Any = None) -> LoadedTask:
    """Read and validate a task file (errors name the file and the offending setting).

    ``data``: the file's parsed YAML when the caller read it already (the CLI does, before this
    module's pandas import, so that a syntax error is reported at once)."""
    p = Path(path)
    if data is None:
        data = read_yaml(p, "task file")
    if not isinstance(data, dict):
        raise TaskError(f"{p}: a task file must be a YAML mapping with 'name', 'datasets' and 'measures'")
    try:
        spec = TaskSpec.model_validate(data)
    except ValidationError as e:
        raise TaskError(f"{p}: invalid task: {_task_errors(e, data, YamlLines(p))}") from None
    task = LoadedTask(spec, p.resolve())
    from pipeline.measures import REGISTRY

    datasets = [d.name for d in spec.datasets]
    sources = list(dict.fromkeys(s.name for d in spec.datasets for s in d.synthetic))
    for m in spec.measures:
        if m.type not in REGISTRY:
            raise TaskError(f"{p}: unknown measure type {m.type!r}; available: {', '.join(sorted(REGISTRY))}")
        for what, named, known in (("datasets", m.datasets, datasets), ("sources", m.sources, sources)):
            unknown = [n for n in named or () if n not in known]
            if unknown:
                raise TaskError(
                    f"{p}: measure {m.label!r}: {what}: unknown {', '.join(map(repr, unknown))}; "
                    f"the task has: {', '.join(known) or 'none'}"
                )
        for params in grid_points(m):
            REGISTRY[m.type].validate(params, f"{p}: measure {m.label!r}")
    _check_gates_can_apply(task, {REGISTRY[m.type].family for m in spec.measures})
    return task


def _check_gates_can_apply(task: LoadedTask, families: set[str]) -> None:
    """Refuse, before any work, a gate that the task's results cannot hold: one naming a family
    (``family``) the task runs no measure of (``synthesis``: no synthesised source), or a row
    measure that no measure type or synthesiser kind of the task produces (each declares its
    ``row_measures``): the message names the families that produce it, else the closest names.
    Whether a produced name has the gate's rows (a summary needs 2 sets, a baseline a holdout) is
    checked against the results (:func:`pipeline.nightly.check_gates`).

    Raises
    ------
    TaskError
        Naming the gate, what is missing and what to do.
    """
    if not task.spec.gates:
        return
    from pipeline.measures import families_producing, row_measures

    kinds = [s.synthesise.kind for d in task.spec.datasets for s in d.synthetic if s.synthesise is not None]
    families = families | {"integrity"} | ({"synthesis"} if kinds else set())
    produced = row_measures([m.type for m in task.spec.measures], kinds)
    for gate in task.spec.gates:
        missing = [gate.family] if gate.family and gate.family not in families else []
        if not missing and gate.measure not in produced:
            missing = families_producing(gate.measure)
            if not missing:
                close = difflib.get_close_matches(gate.measure, sorted(produced), n=3, cutoff=0.6)
                hint = f"did you mean {', '.join(map(repr, close))}?" if close else "no produced name is close"
                raise TaskError(
                    f"{task.path}: gate names measure {gate.measure!r}, which no measure of the task produces; "
                    f"{hint} (a gate names a row's measure; `sdc-pipeline measures` lists the measure types)"
                )
        if missing:
            raise TaskError(
                f"{task.path}: gate on {gate.measure!r}: the task runs no measure of family "
                f"{' or '.join(map(repr, missing))}, so its results cannot hold the gate's rows; add such a measure "
                f"or remove the gate (families run: {', '.join(sorted(families))})"
            )


def _task_errors(e: ValidationError, data: dict[str, Any], lines: YamlLines) -> str:
    """The validation errors of a task file (:func:`~pipeline.config_io.validation_message`);
    those of a ``synthesise`` section name its dataset and source (``dataset 'd' source 's':
    synthesise: m: ...``) and its settings without the kind's tag."""
    from pipeline.synthesisers import REGISTRY as SYNTHESISERS

    parts = []
    for err in e.errors():
        loc = list(err["loc"])
        if len(loc) >= 5 and (loc[0], loc[2], loc[4]) == ("datasets", "synthetic", "synthesise"):
            d = data["datasets"][loc[1]]
            context = f"dataset {d.get('name')!r} source {d['synthetic'][loc[3]].get('name')!r}: synthesise"
            kind = SYNTHESISERS.get(str(loc[5])) if len(loc) > 5 else None
            inner = {**err, "loc": tuple(loc[6:])} if kind is not None else {**err, "loc": ()}
            model = kind.params_model if kind is not None else None
            parts.append(error_message(inner, model=model, lines=lines, prefix=loc[:5], context=context))
        else:
            parts.append(error_message(err, model=TaskSpec, lines=lines))
    return "; ".join(parts)


def grid_points(m: MeasureSpec) -> list[dict[str, Any]]:
    """Every parameter combination of a measure (params merged with one grid point each)."""
    if not m.grid:
        return [dict(m.params)]
    keys = list(m.grid)
    return [{**m.params, **dict(zip(keys, combo, strict=True))} for combo in itertools.product(*m.grid.values())]


@lru_cache(maxsize=1)
def code_version() -> str:
    """The package version plus a hash of its source, so cached units never outlive a code change."""
    h = hashlib.sha256(__version__.encode())
    root = Path(__file__).resolve().parent
    for f in sorted(root.rglob("*.py")):
        h.update(f.relative_to(root).as_posix().encode())
        h.update(f.read_bytes())
    return f"{__version__}+{h.hexdigest()[:12]}"


@lru_cache(maxsize=256)
def _file_hash(path: str, mtime_ns: int, size: int) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def content_hash(paths: list[Path]) -> str:
    """sha256 over the contents of files (a Parquet directory counts by its files)."""
    h = hashlib.sha256()
    for p in paths:
        files = sorted(q for q in p.rglob("*") if q.is_file()) if p.is_dir() else [p]
        for f in files:
            st = f.stat()
            h.update(_file_hash(str(f), st.st_mtime_ns, st.st_size).encode())
    return h.hexdigest()


def _fingerprint(parts: dict[str, Any]) -> str:
    """Short stable hash of a unit's inputs, settings and the code version."""
    return fingerprint({**parts, "version": code_version()})


def synthesis_seed(task: LoadedTask, src: SourceSpec, repetition: int) -> int:
    """Seed of repetition r of a synthesiser: its own ``seed`` (else the task's) plus r."""
    assert src.synthesise is not None
    base = src.synthesise.seed
    return (task.spec.seed if base is None else int(base)) + repetition


@dataclass(frozen=True)
class SynthesisUnit:
    """One synthesis: repetition r of a ``synthesise`` source of a dataset.

    It carries its :class:`~pipeline.synth.base.Synthesiser` (built once, with the repetition's
    seed). Its output (the m synthetic sets, the release, its rows) is cached by fingerprint —
    the original's input hash, the canonical settings, the code version — and is the input of
    the measure units on that source and repetition.
    """

    dataset: str
    source: str
    repetition: int
    synthesiser: Synthesiser
    #: the settings with defaults left out (:meth:`SynthesisParams.canonical`), as in its rows
    canonical_params: dict[str, Any]
    fingerprint: str

    family: ClassVar[str] = "synthesis"
    measure_name: ClassVar[str] = "synthesise"
    setting: ClassVar[str] = ""
    #: a synthesis has no grid point
    grid_point: ClassVar[dict[str, Any]] = {}

    @property
    def params(self) -> SynthesisParams:
        """The validated settings, with the repetition's seed."""
        return self.synthesiser.params

    @property
    def type(self) -> str:
        """The ``type`` column of its rows: the synthesiser's kind."""
        return self.synthesiser.kind

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.dataset, self.source, self.repetition)

    @property
    def label(self) -> str:
        rep = f"#{self.repetition}" if self.repetition else ""
        return f"synthesise {self.dataset}/{self.source}{rep}"

    @property
    def where(self) -> str:
        """How errors name the unit."""
        return f"dataset {self.dataset!r} source {self.source!r}"


def synthesis_units(task: LoadedTask, original_hashes: dict[str, str]) -> list[SynthesisUnit]:
    """Every synthesis of a task (each ``synthesise`` source, each repetition), in task order.

    ``original_hashes`` maps a dataset to the content hash of its original.
    """
    out = []
    for d in task.spec.datasets:
        for src in d.synthetic:
            if src.synthesise is None:
                continue
            base = synthesiser(src.synthesise)
            for rep in range(task.spec.repetitions):
                syn = base.with_seed(synthesis_seed(task, src, rep))
                canonical = syn.params.canonical()
                fp = _fingerprint({"inputs": original_hashes[d.name], "synthesise": canonical})
                out.append(SynthesisUnit(d.name, src.name, rep, syn, canonical, fp))
    return out


@dataclass(frozen=True)
class Unit:
    """One independent piece of work: a measure at one setting on one (dataset, source, repetition).

    It carries its :class:`~pipeline.evaluation.base.Measure`, built once from the validated params.
    """

    index: int
    dataset: str
    source: str | None
    repetition: int
    spec: MeasureSpec
    #: the grid point as the task spells it (the display ``setting``)
    grid_point: dict[str, Any]
    measure: Measure
    #: the measure's validated params with defaults left out
    #: (:func:`~pipeline.evaluation.base.canonical_params`), as in its rows
    canonical_params: dict[str, Any]
    fingerprint: str
    #: how its holdout baselines are drawn (used when its dataset has a holdout)
    baseline: BaselineOptions

    @property
    def setting(self) -> str:
        """Display text of the grid point (for people; results carry the params as a mapping)."""
        return setting_text(self.grid_point)

    @property
    def type(self) -> str:
        return self.spec.type

    @property
    def family(self) -> str:
        return self.measure.family

    @property
    def measure_name(self) -> str:
        return self.spec.label

    @property
    def source_key(self) -> tuple[str, str | None, int]:
        """(dataset, source, repetition) of its data."""
        return (self.dataset, self.source, self.repetition)

    @property
    def label(self) -> str:
        src = f"/{self.source}" if self.source else ""
        rep = f"#{self.repetition}" if self.repetition else ""
        st = f" [{self.setting}]" if self.setting else ""
        return f"{self.spec.label} {self.dataset}{src}{rep}{st}"


def expand(task: LoadedTask, input_hashes: dict[tuple[str, str | None, int], str]) -> Iterator[Unit]:
    """All units of a task in a stable order.

    ``input_hashes`` maps (dataset, source or None, repetition) to the content hash of the
    inputs (for a synthesised source: its synthesis unit's fingerprint; with a holdout, the
    holdout's fingerprint included); the baseline options count in the fingerprints of units
    on a dataset with a holdout. Measures that need
    synthetic data get one unit per source and repetition, the ``profile`` of the original
    alone gets ``source=None``. Each grid point's Measure is built once and shared by its units.
    """
    from pipeline.measures import REGISTRY

    options = task.spec.baseline.options(task.spec.seed)
    i = 0
    for m in task.spec.measures:
        entry = REGISTRY[m.type]
        where = f"{task.path}: measure {m.label!r}"
        points = []
        for point in grid_points(m):
            measure = entry.measure(entry.validate(point, where))
            points.append((point, measure, canonical_params(measure.params)))
        for d in task.spec.datasets:
            if m.datasets is not None and d.name not in m.datasets:
                continue
            targets: list[tuple[str | None, int]]
            if not entry.needs_synthetic:
                targets = [(None, 0)]
            else:
                targets = [
                    (s.name, r)
                    for s in d.synthetic
                    if m.sources is None or s.name in m.sources
                    for r in range(task.spec.repetitions if s.synthesise is not None else 1)
                ]
            baseline = {"baseline": options.model_dump()} if d.holdout is not None else {}
            for src, rep in targets:
                for point, measure, params in points:
                    parts = {
                        "inputs": input_hashes[(d.name, src, rep)],
                        "measure": m.type,
                        "params": params,
                        **baseline,
                    }
                    grid_point = {k: point[k] for k in m.grid}
                    yield Unit(i, d.name, src, rep, m, grid_point, measure, params, _fingerprint(parts), options)
                    i += 1
