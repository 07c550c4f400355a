"""Issue 16 (7): no original record value reaches any file of a run folder or the history.

Marker values are planted in the original (a unique income, a unique age, a unique factor
level); a demo-like task whose measures bin those variables runs through the command line, and
every file it writes (Parquet files read back as text) is searched for the markers.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
from click.testing import CliRunner

from pipeline.cli import main
from pipeline.datasets import demo_path

INCOME, AGE, LEVEL = 987654.0, 108.25, "ZQXMARKER"
MARKERS = re.compile(r"(?<![0-9.])(987654|9\.87654e\+?0*5|108\.25)(?![0-9])|ZQXMARKER")

TASK = """
name: markers
datasets:
  - name: sd2011
    original: {path: orig.csv, schema: orig.schema.json, missing_codes: {income: -8}}
    synthetic:
      - {name: cart, paths: ["syn*.csv"]}
measures:
  - type: utility_tab
    params: {vars: [income, age], ngroups: 40}
  - type: utility_tab
    name: tab_socprof
    params: {vars: [socprof, sex]}
  - type: utility_gen
    params: {method: logit, maxorder: 0, vars: [sex, income, age, socprof], ngroups: 20}
  - type: disclosure
    params: {keys: [sex, agegr], targets: [income, age, socprof]}
  - type: profile
  - type: compare
    params: {vars: [income, age, socprof], breaks: 30}
  - type: compare_fit
    params: {formula: "income ~ sex + age", model: lm}
"""


def planted(folder: Path) -> Path:
    """The demo's SD2011 subset with one unique income, age and socprof level, and its CART sets."""
    sd = pd.read_csv(demo_path("sd2011_subset.csv"))
    sd["age"] = sd["age"].astype(float)
    sd.loc[0, "income"] = INCOME
    sd.loc[1, "age"] = AGE
    sd.loc[2, "socprof"] = LEVEL
    sd.to_csv(folder / "orig.csv", index=False)
    schema = json.loads(demo_path("sd2011_subset.schema.json").read_text(encoding="utf-8"))
    for col in schema["columns"]:
        if col["name"] == "socprof":
            col["levels"].append(LEVEL)
    (folder / "orig.schema.json").write_text(json.dumps(schema), encoding="utf-8")
    for i in range(1, 4):
        shutil.copy(demo_path(f"sd2011_cart_syn{i}.csv"), folder / f"syn{i}.csv")
    (folder / "local.yaml").write_text("type: local\nn_workers: 1\nprocesses: false\n", encoding="utf-8")
    task = folder / "task.yaml"
    task.write_text(TASK, encoding="utf-8")
    return task


def file_text(path: Path) -> str:
    if path.suffix == ".parquet":
        return pq.read_table(path).to_pandas().to_csv()
    return path.read_bytes().decode("utf-8", errors="replace")


def test_no_planted_value_in_any_written_file(tmp_path):
    task = planted(tmp_path)
    out, hist = tmp_path / "run", tmp_path / "hist"
    args = ["run", str(task), "--out", str(out), "--history", str(hist), "--cluster", str(tmp_path / "local.yaml")]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    files = [p for p in [*out.rglob("*"), *hist.rglob("*")] if p.is_file()]
    assert any(p.name == "summary.json" for p in files) and any(p.suffix == ".parquet" for p in files)
    leaks = {str(p.relative_to(tmp_path)): MARKERS.findall(file_text(p)) for p in files}
    assert {p: hits for p, hits in leaks.items() if hits} == {}
    # the written labels are coarsened, not dropped: min/max edges and the rare level's stand-in
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    tab = next(v for k, v in summary.items() if k.startswith("utility_tab "))
    assert tab["levels"][0][0].startswith("[min,") and tab["levels"][0][-3].endswith(",max]")
    socprof = next(v for k, v in summary.items() if k.startswith("tab_socprof"))["levels"][0]
    assert "level 10 (<10 records)" in socprof


def test_python_results_keep_r_labels(tmp_path):
    """The result objects keep synthpop's labels (the data's extremes as edges); only what is
    written is coarsened."""
    from pipeline.data.dataset import read_dataset
    from pipeline.utility import utility_tab

    planted(tmp_path)
    orig = read_dataset(tmp_path / "orig.csv", schema=tmp_path / "orig.schema.json", missing_codes={"income": -8})
    syn = [read_dataset(tmp_path / "syn1.csv", schema=tmp_path / "orig.schema.json", missing_codes={"income": -8})]
    res = utility_tab(orig, syn, vars=["income", "sex"], ngroups=5)
    assert res.levels[0][-3].endswith(",987654]")
    written = res.public_dict()["levels"][0]
    assert written[-3].endswith(",max]") and written[0].startswith("[min,")
    assert not MARKERS.search(json.dumps(res.public_dict()))
