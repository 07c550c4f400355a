"""Issue 16 (11): every YAML example in README.md and docs/ is a working task or task fragment.

Each ```yaml block is parsed and, by its shape, checked as ``sdc-pipeline validate`` would:
a whole task as it is; a list of measure entries, a measure's parameters (identification-risk
scenarios), synthetic sources, a ``synthesise:`` section, ``gates:`` or task-level settings
inside a task over the bundled demo data.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```yaml\n(.*?)^```", re.S | re.M)
CEDATA = {"Age", "Urban", "Tenure", "Educ", "Expenditure", "Marital", "Income"}


def examples() -> list[Any]:
    out = []
    for doc in DOCS:
        for i, m in enumerate(BLOCK.finditer(doc.read_text(encoding="utf-8"))):
            out.append(pytest.param(m.group(1), id=f"{doc.name}#{i + 1}"))
    return out


def _strings(obj: Any) -> set[str]:
    if isinstance(obj, str):
        return {obj}
    if isinstance(obj, dict):
        return set().union(*(_strings(k) | _strings(v) for k, v in obj.items()))
    if isinstance(obj, list):
        return set().union(*(_strings(v) for v in obj))
    return set()


#: measures a gate example may judge (a gate on repU needs a disclosure measure in its task)
GATED_MEASURES = [
    {"type": "disclosure", "datasets": ["sd2011"], "params": {"keys": ["sex", "agegr"], "target": "edu"}},
    {"type": "utility_tab", "datasets": ["sd2011"], "params": {"vars": ["sex", "edu"]}},
    {
        "type": "identification_risk",
        "datasets": ["cedata"],
        "params": {"scenarios": {"income": {"known": ["Urban", "Tenure"], "synthesised": ["Income"]}}},
    },
]


def _base() -> dict[str, Any]:
    return {
        "name": "doc_example",
        "datasets": [
            {"name": "sd2011", "original": {"demo": "sd2011_subset"},
             "synthetic": [{"name": "cart", "demo": "sd2011_cart"}]},
            {"name": "cedata", "original": {"demo": "cedata"},
             "synthetic": [{"name": "income", "demo": "cedata_syn_income"}]},
        ],
        "measures": [{"type": "key_blocks", "datasets": ["sd2011"], "params": {"keys": ["sex", "edu"]}}],
    }  # fmt: skip


def _dataset_of(fragment: Any) -> str:
    return "cedata" if _strings(fragment) & CEDATA else "sd2011"


def as_task(example: Any) -> dict[str, Any]:
    """The example itself when it is a task, else the example inside a demo task."""
    if isinstance(example, dict) and {"name", "datasets", "measures"} <= set(example):
        return example
    task = _base()
    if isinstance(example, list) and all("type" in e for e in example):
        task["measures"] = [{"datasets": [_dataset_of(e)], **e} for e in example]
    elif isinstance(example, list) and all("synthesise" in e for e in example):
        task["datasets"][1]["synthetic"] += example
    elif isinstance(example, dict) and "scenarios" in example:
        task["measures"] = [{"type": "identification_risk", "datasets": ["cedata"], "params": example}]
    elif isinstance(example, dict) and set(example) == {"synthetic"}:
        task["datasets"][1]["synthetic"] += example["synthetic"]
    elif isinstance(example, dict) and set(example) == {"synthesise"}:
        task["datasets"][0]["synthetic"].append({"name": "synth", **example})
    else:  # task-level settings (gates, history, privacy budget, ...)
        task.update(example)
        if isinstance(example, dict) and "gates" in example:  # measures whose rows the gates judge
            task["measures"] += GATED_MEASURES
        if any("baseline" in g for g in example.get("gates", [])):
            # a baseline gate needs a dataset with a holdout (refused at load otherwise): records of
            # SD2011's variables that are not the original's (a holdout equal to the training data
            # is refused by the overlap check)
            from pipeline.datasets import demo_path

            task["datasets"][0]["holdout"] = {"path": str(demo_path("sd2011_cart_syn1.csv"))}
    return task


@pytest.mark.parametrize("text", examples())
def test_yaml_example_validates(text, tmp_path, monkeypatch):
    from pipeline.runner import validate_task
    from pipeline.tasks import load_task

    task = as_task(yaml.safe_load(text))
    if "cluster" in task:  # validate reads it: the repository's config of that name
        task["cluster"] = str(ROOT / "cluster_configs" / Path(task["cluster"]).name)
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "example.yaml"
    path.write_text(yaml.safe_dump(task, sort_keys=False), encoding="utf-8")
    units = validate_task(load_task(path))
    assert units
