"""Issue 33 item 3: adding a measure family touches no file of ``pipeline/report/``.

A toy family is defined here, in the test only — its params, measure, result, headline and section —
and registered for the test's duration. A task using it validates (with a gate on its row), runs
on an in-process cluster, and the report shows its headline on the first screen (judged against
the gate) and its section with the section's table and figure.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure as MatplotlibFigure

from pipeline.evaluation.base import Measure, Params, Row
from pipeline.evaluation.reporting import Block, Figure, Headline, ReportedRun, ReportSection, Table
from pipeline.measures import REGISTRY, MeasureEntry
from pipeline.profile import RowsResult
from pipeline.results import per_set
from pipeline.runner import run_task
from pipeline.tasks import load_task

HERE = __name__  # the module the registry loads the toy family from


class ToyParams(Params):
    """The one variable whose values the toy measure compares record by record."""

    variable: str = "income"

    def variables(self) -> list[str]:
        return [self.variable]


def toy_section(rows: pd.DataFrame, run: ReportedRun) -> list[Block]:
    """Per release the share of each set's records equal to the original's, as a table and a bar chart."""
    out: list[Block] = []
    for (dataset, source), part in per_set(rows).groupby(["dataset", "source"], sort=False):
        shares = part.set_index("synthetic")["value"]
        out.append(Table(shares.rename("same value (%)").reset_index(), f"toy leak: {dataset} / {source}"))
        out.append(Figure(f"toy leak of {dataset} / {source} per synthetic set", plot_shares, (shares,)))
    return out


def plot_shares(shares: pd.Series) -> MatplotlibFigure:
    fig = MatplotlibFigure(figsize=(3, 2), layout="constrained")
    fig.subplots().bar(shares.index, shares.to_numpy())
    return fig


class ToyLeak(Measure):
    """The share of records whose value equals the original record's at the same position (%)."""

    type: ClassVar[str] = "toy_leak"
    family: ClassVar[str] = "toy"
    params_model: ClassVar[type[Params]] = ToyParams
    description: ClassVar[str] = "toy: share of records equal to the original's"
    report_section: ClassVar[ReportSection] = ReportSection("Toy leaks (a family of the test)", f"{HERE}:toy_section")
    headlines: ClassVar[tuple[Headline, ...]] = (Headline("toy leak (%)", "leak", "max", 50.0),)
    row_measures: ClassVar[frozenset[str]] = frozenset({"leak"})

    def evaluate(self, data: Any, executor: Any) -> RowsResult:
        frames = executor.collect(executor.prepare(data.select(self.params.variables()))).frames
        original = frames[0][self.params.variable].to_numpy()
        shares = [100.0 * float(np.mean(s[self.params.variable].to_numpy() == original)) for s in frames[1:]]
        return RowsResult(tuple(Row(str(i), "leak", v) for i, v in enumerate(shares, start=1)))


@pytest.fixture
def toy_family(monkeypatch: pytest.MonkeyPatch) -> None:
    entry = MeasureEntry("toy_leak", "toy", f"{HERE}:ToyLeak", f"{HERE}:ToyParams", ToyLeak.description)
    monkeypatch.setitem(REGISTRY, "toy_leak", entry)


def _task(tmp_path: Path, gate: str) -> Path:
    cluster = tmp_path / "local.yaml"
    cluster.write_text("type: local\nn_workers: 1\nthreads_per_worker: 1\nprocesses: false\n")
    task = tmp_path / "toy.yaml"
    task.write_text(
        f"""name: toy
cluster: {cluster}
datasets:
  - name: sd
    original: {{demo: sd2011_subset}}
    synthetic:
      - {{name: cart, demo: sd2011_cart}}
measures:
  - type: toy_leak
    params: {{variable: sex}}
gates: [{gate}]
"""
    )
    return task


def test_a_family_declared_outside_the_report_gets_its_headline_and_section(tmp_path, toy_family):
    outcome = run_task(
        load_task(_task(tmp_path, "{measure: leak, above: 80}")), out_dir=tmp_path / "out", progress=False
    )
    leak = per_set(outcome.results[outcome.results["measure"] == "leak"])
    assert len(leak) == 5 and leak["value"].between(0, 100).all()  # sex equal record by record: about half
    page = (tmp_path / "out" / "report.html").read_text()
    # the first screen: its headline, the worst set's share, judged against the task's gate
    summary = page[page.index('<section id="summary">') : page.index("</section>")]
    row = re.search(r"<tr><td>sd / cart</td><td>toy leak \(%\)</td><td>([0-9.]+)</td><td>80</td>", summary)
    assert row is not None, summary
    assert float(row.group(1)) == pytest.approx(leak["value"].max(), abs=5e-3)
    assert "gate: max above 80 %" in summary and ">pass<" in summary
    # its section: title, the section's table (a line per set) and its figure, drawn
    section = page[page.index('<section id="toy">') :]
    section = section[: section.index("</section>")]
    assert "<h2>Toy leaks (a family of the test)</h2>" in section
    assert "<h3>toy leak: sd / cart</h3>" in section and section.count("<tr>") == 6
    assert '<img alt="toy leak of sd / cart per synthetic set" src="data:image/png;base64,' in section


def test_a_gate_on_a_row_the_toy_family_does_not_produce_is_refused(tmp_path, toy_family):
    from pipeline.errors import TaskError

    with pytest.raises(
        TaskError, match=r"gate names measure 'leek', which no measure of the task produces; did you mean 'leak'"
    ):
        load_task(_task(tmp_path, "{measure: leek, above: 80}"))
