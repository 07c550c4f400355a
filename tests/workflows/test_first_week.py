"""Issue 16: a user's first week — interrupts, one-line errors, run folders, messy CSV files."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from workflow_task_files import small_task

SWEEP = """
name: interrupt_t
concurrency: 1
datasets:
  - name: sd2011
    original: {demo: sd2011_subset}
    synthetic:
      - {name: cart, demo: sd2011_cart}
measures:
  - type: key_blocks
    grid:
      keys: [[sex, age], [sex, edu], [agegr, marital], [sex, age, edu, marital], [sex, agegr], [edu, marital]]
"""


def _run_cmd(task: Path, out: Path, cluster: Path) -> list[str]:
    return [sys.executable, "-m", "pipeline.cli", "run", str(task), "--out", str(out), "--cluster", str(cluster),
            "--no-report"]  # fmt: skip


@pytest.mark.parametrize(
    ("signum", "group", "status"),
    [(signal.SIGINT, True, 130), pytest.param(signal.SIGTERM, False, 143, marks=pytest.mark.slow)],
)
def test_interrupt_stops_the_cluster_keeps_units_and_says_how_to_resume(tmp_path, signum, group, status):
    """Ctrl-C in a terminal reaches the whole process group (worker processes included)."""
    from pipeline.tasks import code_version

    version = code_version()
    task = tmp_path / "sweep.yaml"
    task.write_text(SWEEP, encoding="utf-8")
    cluster = tmp_path / "local.yaml"
    cluster.write_text("type: local\nn_workers: 1\nprocesses: true\n", encoding="utf-8")
    out = tmp_path / "run"
    proc = subprocess.Popen(_run_cmd(task, out, cluster), stderr=subprocess.PIPE, text=True, start_new_session=True)
    lines = []
    for line in proc.stderr:
        lines.append(line)
        if line.startswith("[2/"):
            if group:
                os.killpg(proc.pid, signum)
            else:
                proc.send_signal(signum)
            break
    try:
        rest = proc.communicate(timeout=60)[1]
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        pytest.fail("the run did not stop after the signal")
    assert proc.returncode == status
    assert "Traceback" not in rest
    last = [ln for ln in rest.splitlines() if not ln.startswith("[")]
    assert last == [f"interrupted ({signal.Signals(signum).name}): finished units are kept; run the same command "
                    "again to resume"]  # fmt: skip
    assert not (out / "results.parquet").exists() and not (out / "manifest.json").exists()
    kept = list((out / ".units").glob("*.parquet"))
    assert len(kept) >= 2
    # the same command resumes: the finished units come from the cache
    again = subprocess.run(_run_cmd(task, out, cluster), capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    if code_version() == version:  # (unit fingerprints include the code: an edit in between re-runs all)
        assert again.stderr.count(": cached") >= len(kept)
    results = pd.read_parquet(out / "results.parquet")
    # the unit's rows, and the overlap of the source's sets with the original (issue 35)
    assert set(results["measure_name"]) == {"key_blocks", "overlap"}


@pytest.mark.slow
def test_ctrl_c_in_the_first_seconds_stops_the_run(tmp_path):
    """Issue 23: a Ctrl-C at any moment of start-up (cluster starting, client connecting, first
    units) ends the run with exit 130 and the one line, no traceback; none is swallowed."""
    task = tmp_path / "sweep.yaml"
    task.write_text(SWEEP, encoding="utf-8")
    cluster = tmp_path / "local.yaml"
    cluster.write_text("type: local\nn_workers: 1\nprocesses: true\n", encoding="utf-8")
    for tenth in range(5, 101, 5):  # every half second of the first 10 s
        out = tmp_path / f"run{tenth}"
        proc = subprocess.Popen(_run_cmd(task, out, cluster), stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            proc.wait(timeout=tenth / 10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGINT)
        try:
            err = proc.communicate(timeout=60)[1]
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            pytest.fail(f"the run did not stop after a SIGINT at {tenth / 10} s")
        if proc.returncode in (0, -signal.SIGINT):
            # the run had ended before the signal (-2: it came while the interpreter shut down,
            # after the run folder was complete): nothing to interrupt
            assert (out / "manifest.json").exists() and (out / "results.parquet").exists()
            continue
        assert proc.returncode == 130, f"SIGINT at {tenth / 10} s: exit {proc.returncode}\n{err}"
        assert "Traceback" not in err and "Error" not in err, f"SIGINT at {tenth / 10} s:\n{err}"
        assert err.splitlines()[-1].startswith("interrupted (SIGINT)"), f"SIGINT at {tenth / 10} s:\n{err}"


# ---- (6) crashes become one-line errors with exit 2 ---------------------------------------------

DEMO_TASK = Path(__file__).resolve().parents[2] / "tasks" / "demo.yaml"


def _one_line_error(res, *words: str) -> None:
    assert res.exit_code == 2, res.output
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), res.output
    for w in words:
        assert w in lines[0]


@pytest.fixture
def no_cluster(monkeypatch):
    """Fail the test if a cluster is started: these checks come before it."""
    import pipeline.cluster

    def refuse(*args, **kwargs):
        raise AssertionError("the cluster was started before the check")

    monkeypatch.setattr(pipeline.cluster, "connect", refuse)


def test_output_folder_that_cannot_be_created_fails_before_the_cluster(tmp_path, no_cluster):
    from click.testing import CliRunner

    from pipeline.cli import main

    (tmp_path / "afile").write_text("x")
    res = CliRunner().invoke(main, ["run", str(DEMO_TASK), "--out", str(tmp_path / "afile" / "run")])
    _one_line_error(res, "output folder", "is a file, not a folder")
    res = CliRunner().invoke(
        main, ["run", str(DEMO_TASK), "--out", str(tmp_path / "run"), "--history", str(tmp_path / "afile" / "h")]
    )
    _one_line_error(res, "history", "is a file, not a folder")
    assert not (tmp_path / "run").exists()


def test_task_file_not_utf8_or_a_directory(tmp_path):
    from click.testing import CliRunner

    from pipeline.cli import main

    latin = tmp_path / "latin.yaml"
    latin.write_bytes(b"name: t\n# caf\xe9\n")
    _one_line_error(CliRunner().invoke(main, ["validate", str(latin)]), "not UTF-8 text (line 2)")
    _one_line_error(CliRunner().invoke(main, ["run", str(tmp_path)]), "is a directory")


def test_scheduler_address_without_port(tmp_path):
    from click.testing import CliRunner

    from pipeline.cli import main

    cfg = tmp_path / "sched.yaml"
    cfg.write_text("type: scheduler\naddress: tcp://localhost\n", encoding="utf-8")
    res = CliRunner().invoke(main, ["run", str(DEMO_TASK), "--cluster", str(cfg), "--out", str(tmp_path / "o")])
    _one_line_error(res, "line 2: address", "tcp://host:port")


def test_python_api_duplicated_columns_is_a_parameter_error():
    from pipeline.errors import ParameterError
    from pipeline.risk.disclosure import disclosure

    df = pd.DataFrame([[1, 2, 3]], columns=["a", "a", "b"])
    with pytest.raises(ParameterError, match="duplicated column name"):
        disclosure(df, df, keys=["a"], target="b")


def test_worker_traceback_of_a_data_error_goes_to_the_log_file(tmp_path):
    from pipeline.datasets import demo_path
    from pipeline.worker_log import worker_log_path

    syn = pd.read_csv(demo_path("sd2011_cart_syn1.csv"))
    syn["income"] = syn["income"].astype(object)
    syn.loc[4000, "income"] = "abc"
    syn.to_csv(tmp_path / "syn1.csv", index=False)
    task = tmp_path / "task.yaml"
    task.write_text(
        "name: bad\ndatasets:\n  - name: sd2011\n    original: {demo: sd2011_subset}\n"
        "    synthetic:\n      - {name: cart, paths: [syn1.csv]}\n"
        "measures:\n  - type: utility_tab\n    params: {vars: [sex, income]}\n",
        encoding="utf-8",
    )
    cluster = tmp_path / "local.yaml"
    cluster.write_text("type: local\nn_workers: 1\nprocesses: true\n", encoding="utf-8")
    log = worker_log_path()
    before = log.stat().st_size if log.exists() else 0
    res = subprocess.run(_run_cmd(task, tmp_path / "out", cluster), capture_output=True, text=True, timeout=120)
    assert res.returncode == 2
    assert res.stderr.strip().splitlines() == [
        f"error: {tmp_path / 'syn1.csv'}: variable 'income' is numeric but 1 record(s) are not numbers"
    ]
    assert "Compute Failed" in log.read_bytes()[before:].decode("utf-8")  # this run's failure, logged
    assert not (tmp_path / "out").exists()


# ---- (5) a run folder belongs to one task -------------------------------------------------------


def _run_in_process(tmp_path: Path, name: str, synth: bool, *extra: str):
    from click.testing import CliRunner

    from pipeline.cli import main

    task, cluster = small_task(tmp_path, name, synth)
    return CliRunner().invoke(main, ["run", str(task), "--out", str(tmp_path / "run"), "--cluster", str(cluster),
                                     *extra])  # fmt: skip


def test_run_folder_belongs_to_one_task_and_a_rerun_replaces_stale_artefacts(tmp_path):
    first = _run_in_process(tmp_path, "first", True)
    assert first.exit_code == 0, first.output
    run = tmp_path / "run"
    assert (run / "report.html").exists() and (run / "synthesis" / "sd2011" / "margins" / "rep0").is_dir()
    other = _run_in_process(tmp_path, "second", False, "--no-report")
    _one_line_error(other, "is the run folder of task 'first'", "'second'")
    assert (run / "report.html").exists()  # untouched
    again = _run_in_process(tmp_path, "first", False, "--no-report")
    assert again.exit_code == 0, again.output
    assert not (run / "report.html").exists() and not (run / "synthesis").exists()
    assert set(pd.read_parquet(run / "results.parquet")["source"]) == {"cart"}


# ---- (2, 3) validate makes every check a run makes before any work ------------------------------

IDRISK = """
name: v
datasets:
  - name: cedata
    original: {{path: {orig}, schema: ce.schema.json}}
    synthetic:
      - {{name: income, {syn}}}
measures:
  - type: identification_risk
    {sources}params:
      scenarios:
        s: {{known: [Urban, Tenure, Educ, Marital], synthesised: [Income]}}
      {radius}
"""


@pytest.fixture
def cedata_files(tmp_path):
    import shutil

    from pipeline.datasets import demo_path

    ce = pd.read_csv(demo_path("cedata.csv"))
    ce.to_csv(tmp_path / "ce.csv", index=False)
    ce.assign(Income=ce["Income"].where(ce.index != 5)).to_csv(tmp_path / "ce_na.csv", index=False)
    syn = pd.read_csv(demo_path("cedata_syn_income_1.csv"))
    syn.iloc[:-10].to_csv(tmp_path / "short1.csv", index=False)
    shutil.copy(demo_path("cedata_syn.schema.json"), tmp_path / "ce.schema.json")
    sd = pd.read_csv(demo_path("sd2011_subset.csv"))
    sd.assign(region=None).to_csv(tmp_path / "sd_allna.csv", index=False)
    shutil.copy(demo_path("sd2011_subset.schema.json"), tmp_path / "sd.schema.json")
    return tmp_path


CASES = {
    "negative radius": (dict(radius="radius: {Income: -0.1}"), "radius for 'Income' must be a finite number >= 0"),
    "percentage radius": (dict(radius="radius: {Income: 1.5}"), "with percentage=True a radius is a fraction"),
    "missing values": (dict(orig="ce_na.csv"), "missing or non-finite values in continuous variable(s) 'Income'"),
    "misaligned rows": (dict(syn="paths: [short*.csv]"), "synthetic set 1 has 5561 rows but the original has 5571"),
    "unknown source": (dict(sources="sources: [incme]\n    "), "sources: unknown 'incme'; the task has: income"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_validate_fails_where_a_run_would(cedata_files, case):
    from pipeline.errors import PipelineError
    from pipeline.runner import validate_task
    from pipeline.tasks import load_task

    settings = {"orig": "ce.csv", "syn": "demo: cedata_syn_income", "sources": "", "radius": "radius: {Income: 0.1}"}
    changed, message = CASES[case]
    task = cedata_files / "task.yaml"
    task.write_text(IDRISK.format(**{**settings, **changed}), encoding="utf-8")
    with pytest.raises(PipelineError) as e:
        validate_task(load_task(task))
    assert message in str(e.value)
    assert [p.name for p in cedata_files.iterdir() if p.is_dir()] == []  # nothing written


def test_validate_finds_an_all_missing_key_and_a_failed_run_leaves_nothing(cedata_files):
    from click.testing import CliRunner

    from pipeline.cli import main

    task = cedata_files / "disc.yaml"
    task.write_text(
        "name: v\ndatasets:\n  - name: sd2011\n    original: {path: sd_allna.csv, schema: sd.schema.json}\n"
        "    synthetic:\n      - {name: cart, demo: sd2011_cart}\n"
        "measures:\n  - type: disclosure\n    params: {keys: [sex, region], target: ls}\n",
        encoding="utf-8",
    )
    _one_line_error(CliRunner().invoke(main, ["validate", str(task)]), "variable 'region' has only missing values")
    cluster = cedata_files / "threads.yaml"
    cluster.write_text("type: local\nn_workers: 1\nprocesses: false\n", encoding="utf-8")
    out = cedata_files / "run"
    res = CliRunner().invoke(main, ["run", str(task), "--out", str(out), "--cluster", str(cluster)])
    _one_line_error(res, "variable 'region' has only missing values")
    assert not out.exists()


# ---- (9) listing commands import no Dask, pandas or measure code --------------------------------


@pytest.mark.parametrize("command", [["--help"], ["measures"], ["demo-data"]])
def test_listing_commands_are_light(command):
    code = (
        "import sys\nfrom pipeline.cli import main\n"
        f"try:\n    main({command!r})\nexcept SystemExit:\n    pass\n"
        "heavy = sorted(m for m in ('dask', 'pandas', 'numpy', 'sklearn', 'distributed') if m in sys.modules)\n"
        "print('HEAVY', heavy, file=sys.stderr)\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert res.stdout.strip()
    assert "HEAVY []" in res.stderr, res.stderr


# ---- (8) the Python API checks like the command line ---------------------------------------------


def test_python_api_refuses_other_factor_labels_like_the_cli():
    from pipeline.errors import CompatibilityError
    from pipeline.evaluation.data import as_eval_data

    orig = pd.DataFrame({"sex": pd.Categorical(["Male", "Female", "Male"]), "x": [1.0, 2.0, 3.0]})
    syn = pd.DataFrame({"sex": pd.Categorical(["M", "F", "M"]), "x": [1.0, 2.0, 3.0]})
    with pytest.raises(CompatibilityError, match="synthetic set 1: variable 'sex' has 3 record"):
        as_eval_data(orig, [syn])


def test_a_radius_is_parsed_the_same_in_a_task_and_in_the_api():
    from pipeline.errors import ParameterError
    from pipeline.measures import REGISTRY
    from pipeline.risk.idrisk.measure import IdentificationRiskMeasure

    params = {"scenarios": {"s": {"known": ["Urban"], "synthesised": ["Income"]}}, "radius": {"Income": "0.1"}}
    with pytest.raises(ParameterError) as api:
        IdentificationRiskMeasure(params)
    with pytest.raises(Exception) as task:
        REGISTRY["identification_risk"].validate(params, "task.yaml: measure 'identification_risk'")
    assert "radius for 'Income' must be a number, got str" in str(api.value)
    assert "radius for 'Income' must be a number, got str" in str(task.value)


def test_python_api_aligns_on_request():
    from pipeline.evaluation.data import as_eval_data

    orig = pd.DataFrame({"sex": pd.Categorical(["Male", "Female", "Male"]), "x": [1.0, 2.0, 3.0]})
    syn = pd.DataFrame({"sex": pd.Categorical(["M", "F", "M"]), "x": [1.0, 2.0, 3.0], "extra": [1, 2, 3]})
    data = as_eval_data(orig, [syn], compatibility="align")
    assert list(data.schema.names) == ["sex", "x"]
    assert sorted(data.schema["sex"].levels) == ["F", "Female", "M", "Male"]  # as a task source with align
    assert list(data.synthetic[0]["sex"].compute().astype(str)) == ["M", "F", "M"]
