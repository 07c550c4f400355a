"""Issue 23, item 2: a first run must not look broken — a mistake in a task file is reported
before the heavy imports, and ``validate`` starts no cluster client.

These are behaviour tests (which modules a command loads), not timings: the figures are in the
README, measured by hand."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "tasks" / "demo.yaml"
#: what loading a task must not import: the cluster, the numba kernels, Dask and SciPy's statistics
HEAVY = ("dask", "distributed", "numba", "scipy.stats", "sklearn", "matplotlib")


def _validate_in_a_fresh_process(task: Path, out: Path) -> tuple[int, list[str], str]:
    """Exit status, the heavy modules loaded by then, and the output of ``sdc-pipeline validate``."""
    code = (
        "import sys\nfrom pipeline.cli import main\nstatus = 0\n"
        f"try:\n    main(['validate', {str(task)!r}, '--out', {str(out)!r}])\nexcept SystemExit as e:\n"
        "    status = e.code\n"
        f"heavy = sorted(m for m in {HEAVY!r} if m in sys.modules)\n"
        "print('STATUS', status, 'HEAVY', ','.join(heavy), file=sys.stderr)\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT)
    last = res.stderr.strip().splitlines()[-1].split()
    assert last[0] == "STATUS", res.stderr
    heavy = last[3].split(",") if len(last) > 3 else []
    return int(last[1]), heavy, res.stdout + res.stderr


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        # a measure's parameter (valid YAML)
        ("params: {keys: [sex, age, edu, marital]}", "params: {kyes: [sex, age, edu, marital]}", "did you mean 'keys'"),
        # a synthesiser's setting
        ("limit: 10, variant: V3", "limit: 10, variant: V4", "variant"),
        # a task setting
        ("seed: 2011", "sede: 2011", "sede"),
    ],
)
def test_a_mistake_in_a_task_is_reported_before_dask_numba_or_the_cluster_are_loaded(tmp_path, old, new, message):
    text = DEMO.read_text(encoding="utf-8")
    assert old in text
    task = tmp_path / "typo.yaml"
    task.write_text(text.replace(old, new, 1), encoding="utf-8")
    status, heavy, output = _validate_in_a_fresh_process(task, tmp_path / "run")
    assert status == 2
    assert message in output
    assert heavy == [], f"loaded before the error: {heavy}"


def test_a_yaml_syntax_error_is_reported_before_pandas_is_loaded(tmp_path):
    """A YAML syntax error needs only the YAML parser: it is reported before pipeline.tasks
    imports pandas (the issue's goal: under a second)."""
    task = tmp_path / "broken.yaml"
    task.write_text(DEMO.read_text(encoding="utf-8").replace("seed: 2011", "seed: [2011", 1), encoding="utf-8")
    code = (
        "import sys\nfrom pipeline.cli import main\n"
        f"try:\n    main(['validate', {str(task)!r}])\nexcept SystemExit as e:\n"
        "    print('STATUS', e.code, 'PANDAS', 'pandas' in sys.modules, file=sys.stderr)\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert "not valid YAML" in res.stderr, res.stderr
    assert res.stderr.strip().splitlines()[-1] == "STATUS 2 PANDAS False", res.stderr


def test_validate_reads_the_data_without_a_cluster_client_or_plots(tmp_path):
    status, heavy, output = _validate_in_a_fresh_process(DEMO, tmp_path / "run")
    assert status == 0, output
    assert "valid, 30 unit(s)" in output
    # the data are read with Dask's local threads: distributed (a second of imports) is never loaded
    assert "distributed" not in heavy
    assert "sklearn" not in heavy and "matplotlib" not in heavy
    # the measures import their computations when they compute: hypergeom (singling out) and the
    # models' SciPy statistics are not loaded by checking a task
    assert "scipy.stats" not in heavy
    # nor the numba kernels (a third of a second of imports): the checks of the variables a
    # distance compares and the aggregate checks of disclosure and identification risk live in
    # light modules beside the kernels
    assert "numba" not in heavy


@pytest.mark.parametrize(
    ("module", "light"),
    [
        ("pipeline.risk.disclosure.measure", ("numba", "scipy.stats")),
        ("pipeline.risk.idrisk.measure", ("numba", "scipy.stats")),
        ("pipeline.utility.measure", ("numba", "scipy.stats")),
        ("pipeline.synth.partial.syn", ("numba", "scipy.stats")),
        ("pipeline.synth.coarsened", ("numba", "scipy.stats")),
        ("pipeline.risk.distance.measure", ("numba", "scipy.stats")),
        ("pipeline.risk.attacks.measure", ("numba", "scipy.stats")),
        ("pipeline.compare_fit.measure", ("numba", "scipy.stats")),
        ("pipeline.risk.sdcrisk.measure", ("numba", "scipy.stats", "matplotlib")),
        # the modules validate's aggregate checks import
        ("pipeline.risk.disclosure.checks", ("numba", "scipy.stats")),
        ("pipeline.risk.idrisk.checks", ("numba", "scipy.stats")),
        ("pipeline.risk.nearest.checks", ("numba", "scipy.stats")),
    ],
)
def test_a_measure_or_synthesiser_module_loads_its_kernels_only_when_it_computes(module, light):
    code = f"import sys, {module}\nprint(','.join(m for m in {light!r} if m in sys.modules))"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "", f"{module} loaded {res.stdout.strip()}"


def test_the_registries_validate_with_the_models_of_their_classes():
    from pipeline.measures import REGISTRY as MEASURES
    from pipeline.synthesisers import REGISTRY as SYNTHESISERS

    for entry in MEASURES.values():
        assert entry.params_model is entry.measure.params_model, entry.type
    for kind in SYNTHESISERS.values():
        assert kind.params_model is kind.synthesiser.params_model, kind.kind


def test_the_manifest_versions_load_no_unused_library():
    """A run records the versions of the libraries it uses; scikit-learn (about a second of
    imports) is not one of them."""
    code = (
        "import sys\nfrom pipeline.runner import _versions\nv = _versions()\n"
        "print(','.join(sorted(v)), 'sklearn' in sys.modules)"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert res.returncode == 0, res.stderr
    names, sklearn_loaded = res.stdout.split()
    assert names.split(",") == sorted(
        ["dask", "distributed", "numpy", "pandas", "platform", "pyarrow", "python", "scipy", "sdc-pipeline"]
    )
    assert sklearn_loaded == "False"
