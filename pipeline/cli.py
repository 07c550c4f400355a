"""The ``sdc-pipeline`` command.

Every :class:`~pipeline.errors.PipelineError` becomes a one-line ``error: ...`` on stderr and
exit status 2; a failed nightly gate exits with status 3.
"""

from __future__ import annotations

import functools
import logging
import os
import signal
import sys
import warnings
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from pipeline.errors import PipelineError, brief
from pipeline.interrupts import sigint_for_this_process_only
from pipeline.notices import show_briefly

if TYPE_CHECKING:
    from pipeline.tasks import LoadedTask

EXIT_ERROR = 2
EXIT_GATE_FAILED = 3
#: exit status after a signal: 128 + its number (130 for SIGINT, 143 for SIGTERM)
EXIT_INTERRUPTED = 128


def _quiet_libraries() -> None:
    logging.getLogger("bokeh").setLevel(logging.ERROR)
    # a warning is its message on one line, not the package's source line that raised it
    warnings.showwarning = show_briefly


def _load_task(task_file: Path) -> LoadedTask:
    """Read and validate a task file before the commands' heavy imports (Dask, the cluster, the
    measures' numba kernels: seconds): a YAML or parameter error costs about a second. The task
    loader validates with the params models alone (:mod:`pipeline.measures`)."""
    from pipeline.config_io import read_yaml

    # a YAML syntax error is found before pipeline.tasks imports pandas (about half a second)
    data = read_yaml(task_file, "task file")
    from pipeline.tasks import load_task

    return load_task(task_file, data)


def _handle_errors(f: Callable[..., Any]) -> Callable[..., Any]:
    """One-line ``error:`` and exit 2 for a :class:`PipelineError`; Ctrl-C and SIGTERM stop the
    command (the cluster is closed on the way out) with exit 130 / 143 and one line on resuming."""

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        received: list[int] = []

        def stop(signum: int, frame: Any) -> None:
            received.append(signum)
            raise KeyboardInterrupt

        previous = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            with sigint_for_this_process_only():
                return f(*args, **kwargs)
        except PipelineError as e:
            click.echo(f"error: {e}", err=True)
            sys.exit(EXIT_ERROR)
        except OSError as e:
            if not e.errno:
                raise
            # the machine's refusal (a full disk, a quota, a permission) outside any step that names it
            where = f" ({e.filename})" if e.filename else ""
            click.echo(f"error: {brief(e)}{where}", err=True)
            sys.exit(EXIT_ERROR)
        except KeyboardInterrupt:
            signum = received[0] if received else signal.SIGINT
            click.echo(
                f"interrupted ({signal.Signals(signum).name}): finished units are kept; "
                "run the same command again to resume",
                err=True,
            )
            sys.stdout.flush()
            sys.stderr.flush()
            # units still running in threads stop with the cluster (already closed): do not wait
            os._exit(EXIT_INTERRUPTED + signum)
        finally:
            for s, h in previous.items():
                signal.signal(s, h)

    return wrapper


@click.group()
@click.version_option(package_name="sdc-pipeline")
@click.option("-v", "--verbose", is_flag=True, help="Log progress details.")
def main(verbose: bool) -> None:
    """Make safe synthetic data, and measure its disclosure risk and utility, on Dask."""
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )
    _quiet_libraries()


@main.command()
@click.argument("task_file", type=click.Path(path_type=Path))
@click.option("--cluster", "cluster", type=click.Path(path_type=Path), help="Cluster config YAML (default: local).")
@click.option("--out", "out", type=click.Path(path_type=Path), help="Run folder (default: the task's 'output').")
@click.option("--history", type=click.Path(path_type=Path), help="Also append the results to this history store.")
@click.option("--no-report", is_flag=True, help="Skip the HTML report.")
@click.option(
    "--force", is_flag=True, help="Write into a non-empty folder that is not the task's (none of its files is touched)."
)
@_handle_errors
def run(
    task_file: Path, cluster: Path | None, out: Path | None, history: Path | None, no_report: bool, force: bool
) -> None:
    """Run TASK_FILE and write results.parquet, summary.json, manifest.json and report.html."""
    task = _load_task(task_file)
    from pipeline.runner import check_writable_folder, run_task

    hist = history or task.history
    if hist is not None:
        check_writable_folder(hist, "history")
    outcome = run_task(task, cluster=cluster, out_dir=out, report=not no_report, history=hist, force=force)
    if hist is not None:
        from pipeline.store import ResultsStore

        ResultsStore(hist).append(outcome.results, outcome.manifest)
    click.echo(f"{len(outcome.results)} result rows in {outcome.out_dir} (run {outcome.run_id})")


@main.command()
@click.argument("task_file", type=click.Path(path_type=Path))
@click.option("--history", type=click.Path(path_type=Path), help="Results store (default: the task's 'history').")
@click.option("--date", "run_date", help="Run date YYYY-MM-DD (default: today, UTC).")
@click.option(
    "--force",
    is_flag=True,
    help="Run even if the history has results for the date; write into a non-empty folder that is not the task's.",
)
@click.option("--cluster", type=click.Path(path_type=Path), help="Cluster config YAML (default: local).")
@click.option("--out", "out", type=click.Path(path_type=Path), help="Run folder (default: <output>/<date>).")
@_handle_errors
def nightly(
    task_file: Path, history: Path | None, run_date: str | None, force: bool, cluster: Path | None, out: Path | None
) -> None:
    """Run TASK_FILE for a date, compare with the previous run and apply its gates (exit 3 on failure)."""
    task = _load_task(task_file)
    from pipeline.nightly import run_nightly

    outcome = run_nightly(task, history=history, run_date=run_date, force=force, cluster=cluster, out_dir=out)
    if outcome.skipped:
        click.echo(f"{outcome.message}; nothing to do (use --force to run again)")
        return
    failed = outcome.failed
    click.echo(
        f"{task.spec.name} {outcome.run_date}: {len(outcome.checks)} gate check(s), {len(failed)} failed; "
        f"report: {outcome.out_dir / 'report.html'}"
    )
    for c in failed:
        click.echo(f"GATE FAILED {c.measure} [{c.dataset}/{c.source} {c.setting}]: {c.reason}", err=True)
    if failed:
        sys.exit(EXIT_GATE_FAILED)


@main.command()
@click.argument("history_dir", type=click.Path(path_type=Path))
@click.option("--task", "task_name", help="Only this task.")
@click.option("--measure", help="Only this measure (e.g. repU).")
@click.option("--csv", "as_csv", is_flag=True, help="Print CSV instead of a table.")
@click.option("--budget", is_flag=True, help="Privacy budget (epsilon, delta) spent per dataset over all DP releases.")
@_handle_errors
def history(history_dir: Path, task_name: str | None, measure: str | None, as_csv: bool, budget: bool) -> None:
    """Query a results store: one row per run date x dataset x source x setting x synthetic set."""
    from pipeline.results import ROLE_COLUMNS
    from pipeline.store import ResultsStore

    if budget:
        spent = ResultsStore(history_dir).budget(task_name)
        text = spent.to_csv(index=False) if as_csv else (spent.to_string(index=False) + "\n" if len(spent) else "")
        click.echo(text or "no differentially private releases", nl=not text)
        return
    res = ResultsStore(history_dir).query(task_name)
    if measure:
        res = res[res["measure"] == measure]
    cols = ["run_date", "task", "dataset", "source", "setting", "synthetic", "measure", *ROLE_COLUMNS, "value"]
    if as_csv:
        click.echo(res[cols].to_csv(index=False), nl=False)
    else:
        click.echo(res[cols].to_string(index=False) if len(res) else "no results")


@main.command()
@click.argument("task_file", type=click.Path(path_type=Path))
@click.option("--cluster", type=click.Path(path_type=Path), help="Cluster config YAML (default: local).")
@click.option("--out", "out", type=click.Path(path_type=Path), help="Folder (default: <output>/synthesis).")
@click.option(
    "--force", is_flag=True, help="Write into a non-empty folder that is not the task's (none of its files is touched)."
)
@click.option(
    "--history", type=click.Path(path_type=Path), help="Results history whose privacy ledger records DP spend."
)
@_handle_errors
def synthesise(task_file: Path, cluster: Path | None, out: Path | None, force: bool, history: Path | None) -> None:
    """Write the synthetic sets, released margins and fit report of every 'synthesise' source
    (finished syntheses in the folder's cache are reused), their rows and the manifest."""
    task = _load_task(task_file)
    from pipeline.runner import synthesise_task

    outcome = synthesise_task(task, cluster=cluster, out_dir=out, force=force, history=history)
    for path in outcome.releases:
        click.echo(f"wrote {path}")
    click.echo(f"{len(outcome.results)} result rows in {outcome.out_dir} (run {outcome.run_id})")


@main.command()
@click.argument("task_file", type=click.Path(path_type=Path))
@click.option(
    "--out", "out", type=click.Path(path_type=Path), help="Run folder to check (default: the task's 'output')."
)
@click.option("--force", is_flag=True, help="Check the folder as for a run with --force.")
@_handle_errors
def validate(task_file: Path, out: Path | None, force: bool) -> None:
    """Check TASK_FILE (format, measures, parameters, data) without running it; print its units.

    Synthesised sources are checked against the schema their synthesis will have; nothing is
    synthesised or evaluated.
    """
    task = _load_task(task_file)
    from pipeline.runner import validate_task

    units = validate_task(task, out_dir=out, force=force)
    for u in units:
        click.echo(f"{u.fingerprint}  {u.label}")
    for where, lines in units.plans.items():
        click.echo(f"plan of {where} (variable (method) <- predictors):")
        for line in lines:
            click.echo(f"  {line}")
    click.echo(f"{task_file}: valid, {len(units)} unit(s)")


@main.command()
@click.argument("data_file", type=click.Path(path_type=Path))
@click.option("--schema", type=click.Path(path_type=Path), help="Schema JSON to check the file against.")
@click.option("--write", "write_to", type=click.Path(path_type=Path), help="Write the (inferred) schema here.")
@click.option("--encoding", help="Text encoding of a CSV file (default: the schema's, else UTF-8), e.g. latin-1.")
@_handle_errors
def schema(data_file: Path, schema: Path | None, write_to: Path | None, encoding: str | None) -> None:
    """Read DATA_FILE and print its schema (given, beside the file, typed or inferred)."""
    from pipeline.data.dataset import read_dataset
    from pipeline.results import json_text

    ds = read_dataset(data_file, schema=schema, encoding=encoding)
    # the schema records the encoding it was read with, so the file reads the same way next time
    found = replace(ds.schema, encoding=encoding) if encoding else ds.schema
    text = json_text(found.to_dict(), indent=1)
    if write_to:
        found.to_json(write_to)
        click.echo(f"schema of {data_file} written to {write_to}")
    else:
        click.echo(text)


@main.command()
def measures() -> None:
    """List the measure types a task can use."""
    from pipeline.measures import REGISTRY

    for name, e in sorted(REGISTRY.items()):
        click.echo(f"{name:22s} {e.family:16s} {e.description}")


@main.command("demo-data")
def demo_data() -> None:
    """List the bundled demo data sets."""
    from pipeline.datasets import GENERATED, GENERATED_SYNTHETIC, ORIGINALS, SYNTHETIC

    for name, (file, _, codes) in sorted(ORIGINALS.items()):
        click.echo(f"original   {name:20s} {file}  missing codes: {codes or '-'}")
    for name, what in sorted(GENERATED.items()):
        click.echo(f"original   {name:20s} {what}")
    for name, (pattern, m, orig) in sorted(SYNTHETIC.items()):
        click.echo(f"synthetic  {name:20s} {m} sets ({pattern}) of {orig}")
    for name, orig in sorted(GENERATED_SYNTHETIC.items()):
        click.echo(f"synthetic  {name:20s} 1 set, model-based, row-aligned (generated with {orig}, same rows)")


if __name__ == "__main__":
    main()
