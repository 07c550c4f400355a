"""Nightly evaluations: run a task once per date, compare with the previous run, apply gates.

A gate (``gates:`` in the task file) names a measure (optionally its family) and fails when,
for any dataset × source × measure entry × params (the rows' structured parameters, not the
display setting), the statistic over the synthetic sets (``max`` or ``mean``) is ``above`` (or ``below``) a
threshold, or has risen by more than ``rise_above`` since the previous run in the history.
It judges the measure's own rows, or with ``summary``/``baseline`` the rows of that summary
over sets or holdout-baseline role (``repU upper95 above 1``: the upper bound of repU's interval;
the rows' ``role`` and ``summary`` columns, :mod:`pipeline.evaluation.comparison`). Histories
written before those columns read with them (:meth:`ResultsStore.read_run`).
A previous run stored before results had params gives no previous value (see
:func:`check_gates`).  Gate results are written to ``gates.json`` in the run folder
and shown in the report; the CLI exits with status 3 when a gate fails.
"""

from __future__ import annotations

import datetime as dt
import html
from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd

from pipeline.errors import TaskError
from pipeline.gates import GATE_GROUP, gate_value
from pipeline.results import json_text
from pipeline.row_params import of_kind
from pipeline.store import ResultsStore
from pipeline.tasks import GateSpec, LoadedTask


@dataclass(frozen=True)
class GateCheck:
    """One gate applied to one measure entry (``measure_name``) at one ``params`` on one dataset ×
    source; ``setting`` is the rows' display setting, for people."""

    measure: str
    measure_name: str
    dataset: str
    source: str
    setting: str
    params: str | None
    value: float
    previous: float | None
    above: float | None
    rise_above: float | None
    failed: bool
    reason: str


def _select(results: pd.DataFrame, gate: GateSpec) -> pd.DataFrame:
    """The rows of the gate's measure (of its family, when the gate names one): its own figures,
    or those of the gate's ``summary`` / ``baseline``."""
    sel = results[results["measure"] == gate.measure]
    if gate.family is not None:
        sel = sel[sel["family"] == gate.family]
    role = "residual" if gate.baseline == "normalised_excess" else gate.baseline
    return of_kind(sel, role, gate.summary)


def _gate_label(gate: GateSpec) -> str:
    """The gate's measure and the rows it judges, for messages (``repU excess upper95``)."""
    return " ".join(x for x in (gate.measure, gate.baseline, gate.summary) if x)


def check_gates(current: pd.DataFrame, previous: pd.DataFrame | None, gates: list[GateSpec]) -> list[GateCheck]:
    """Apply every gate to the current results (and the previous run's, for ``rise_above``).

    The previous value is the previous run's at the same :data:`~pipeline.gates.GATE_GROUP` key.
    Runs stored before the results had ``params`` read with unknown params (None, see
    :meth:`ResultsStore.read_run`): they match no key, so their gates have no previous value
    (``rise_above`` cannot fire) rather than being compared by the display setting.
    """
    checks: list[GateCheck] = []
    for gate in gates:
        sel = _select(current, gate)
        if sel.empty and (gate.summary or gate.baseline) and (current["measure"] == gate.measure).any():
            raise TaskError(
                f"gate on {_gate_label(gate)!r}: this run has no such rows of {gate.measure!r} (a summary "
                "needs at least 2 synthetic sets; a baseline needs a holdout and a measure with baselines)"
            )
        if sel.empty:
            known = ", ".join(sorted(current["measure"].unique()))
            raise TaskError(f"gate names measure {gate.measure!r}, which this run did not produce; measures: {known}")
        before = dict(list(_select(previous, gate).groupby(GATE_GROUP, sort=False))) if previous is not None else {}
        for key, rows in sel.groupby(GATE_GROUP, sort=True):
            value = gate_value(rows, gate.statistic)
            prev = gate_value(before[key], gate.statistic) if key in before else None
            reasons = []
            if gate.above is not None and value > gate.above:
                reasons.append(f"{gate.statistic} {_gate_label(gate)} = {value:.6g} > {gate.above:g}")
            if gate.below is not None and value < gate.below:
                reasons.append(f"{gate.statistic} {_gate_label(gate)} = {value:.6g} < {gate.below:g}")
            if gate.rise_above is not None and prev is not None and value - prev > gate.rise_above:
                reasons.append(
                    f"{_gate_label(gate)} rose by {value - prev:.6g} (from {prev:.6g}) > {gate.rise_above:g}"
                )
            dataset, source, measure_name, params = key
            checks.append(
                GateCheck(
                    measure=_gate_label(gate),
                    measure_name=measure_name,
                    dataset=dataset,
                    source=source,
                    setting=rows["setting"].iloc[0],
                    params=params,
                    value=value,
                    previous=prev,
                    above=gate.above,
                    rise_above=gate.rise_above,
                    failed=bool(reasons),
                    reason="; ".join(reasons),
                )
            )
    return checks


def gates_html(checks: list[GateCheck], previous_run: str | None) -> str:
    """The report section comparing tonight's run with the previous one."""
    rows = []
    for c in checks:
        status = '<span class="fail">FAILED</span>' if c.failed else '<span class="ok">ok</span>'
        prev = "—" if c.previous is None else f"{c.previous:.6g}"
        change = "—" if c.previous is None else f"{c.value - c.previous:+.6g}"
        rows.append(
            f"<tr><td class='l'>{html.escape(c.measure)}</td><td class='l'>{html.escape(c.measure_name)}</td>"
            f"<td class='l'>{html.escape(c.dataset)}</td>"
            f"<td class='l'>{html.escape(c.source)}</td><td class='l'>{html.escape(c.setting)}</td>"
            f"<td>{c.value:.6g}</td><td>{prev}</td><td>{change}</td>"
            f"<td>{'' if c.above is None else c.above}</td><td>{'' if c.rise_above is None else c.rise_above}</td>"
            f"<td>{status}</td><td class='l'>{html.escape(c.reason)}</td></tr>"
        )
    head = (
        "<tr><th>measure</th><th>entry</th><th>dataset</th><th>source</th><th>setting</th><th>tonight</th><th>previous</th>"
        "<th>change</th><th>above</th><th>rise above</th><th>status</th><th>reason</th></tr>"
    )
    prev = html.escape(previous_run) if previous_run else "none (first run)"
    return (
        f'<section id="nightly"><h2>Nightly comparison</h2><p>Previous run: {prev}</p>'
        f"<table><thead>{head}</thead><tbody>{''.join(rows)}</tbody></table></section>"
    )


@dataclass
class NightlyOutcome:
    skipped: bool
    run_date: str
    checks: list[GateCheck]
    out_dir: Path | None = None
    message: str = ""

    @property
    def failed(self) -> list[GateCheck]:
        return [c for c in self.checks if c.failed]


def run_nightly(
    task: LoadedTask,
    history: str | Path | None = None,
    run_date: str | None = None,
    force: bool = False,
    cluster: str | Path | None = None,
    out_dir: str | Path | None = None,
) -> NightlyOutcome:
    """Run ``task`` for ``run_date`` (default today, UTC) unless the history already has it.

    The run folder ``<output>/<date>`` gets the run's files, ``gates.json`` and the report with
    the nightly comparison, and its manifest last; the history gets the results once the gates
    have been checked (a gate naming an unknown measure leaves both untouched). ``force``: run
    even if the history has the date, and into a non-empty folder that is not the task's (as
    :func:`~pipeline.runner.execute_task`'s ``force``).

    Two nightly runs of a task for one date: the second into the same run folder is refused at
    once (the folder's lock); one into another folder runs, but the history stores one of them
    only — "not yet stored for the date" is checked again under the history's lock when storing,
    and the later run is refused there (unless ``force``), its folder left untouched.

    Raises
    ------
    TaskError
        Besides invalid tasks and inputs: another run holds the run folder, or stored the date
        while this one ran.
    """
    from pipeline.run.folder import run_folder_for
    from pipeline.runner import check_writable_folder, default_out_dir, execute_task, write_run

    hist_path = history or task.history
    if hist_path is None:
        raise TaskError(f"{task.path}: a nightly run needs a history folder ('history:' in the task or --history)")
    check_writable_folder(hist_path, "history")
    if not task.spec.gates:
        raise TaskError(f"{task.path}: a nightly task needs 'gates:' to check")
    date = run_date or dt.datetime.now(dt.UTC).date().isoformat()
    try:
        dt.date.fromisoformat(date)
    except ValueError:
        raise TaskError(f"run date {date!r} is not a date (YYYY-MM-DD)") from None
    store = ResultsStore(hist_path)
    runs = store.runs(task.spec.name, missing_ok=True)  # a folder that is not a store fails here
    if (runs["run_date"] == date).any() and not force:
        return NightlyOutcome(True, date, [], message=f"{task.spec.name}: results for {date} already in {hist_path}")
    previous, previous_id = None, None
    earlier = runs[runs["run_date"] <= date]
    if len(earlier):
        last = earlier.iloc[-1]
        previous = store.read_run(last.path)  # a corrupted previous result fails here, before any work
        previous_id = f"{last.run_date} ({last.run_id})"
    out = Path(out_dir) if out_dir else default_out_dir(task) / date
    with run_folder_for(task, out, force, optional=["report.html", "gates.json"]):
        outcome = execute_task(task, cluster=cluster, out_dir=out, history=hist_path, force=force)
        checks = check_gates(outcome.results, previous, task.spec.gates)
        with store.locked():
            stored = store.runs(task.spec.name)
            meanwhile = stored[(stored["run_date"] == date) & ~stored["run_id"].isin(runs["run_id"])]
            if len(meanwhile) and not force:
                raise TaskError(
                    f"{task.spec.name}: results for {date} were stored in {hist_path} by another run while this one "
                    f"ran (run {meanwhile['run_id'].iloc[-1]}); this run is not stored (use --force to store it too)"
                )
            store.append(outcome.results, outcome.manifest, run_date=date)
        write_run(
            outcome,
            extra_sections=[gates_html(checks, previous_id)],
            extra_files={"gates.json": json_text([asdict(c) for c in checks], indent=1)},
        )
    return NightlyOutcome(False, date, checks, out)
