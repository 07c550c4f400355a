"""A small task file of the workflow tests (the bundled SD2011 with its CART sets, optionally a
coarsened-margins synthesis) and a one-worker, in-process cluster config beside it."""

from __future__ import annotations

from pathlib import Path

SMALL_TASK = """
name: {name}
datasets:
  - name: sd2011
    original: {{demo: sd2011_subset}}
    synthetic:
      - {{name: cart, demo: sd2011_cart}}
{synth}
measures:
  - type: key_blocks
    sources: [cart]
    params: {{keys: [sex, edu]}}
"""
SYNTH_SOURCE = "      - name: margins\n        synthesise: {variables: [sex, agegr, edu], limit: 10, m: 1}"
THREADS_CLUSTER = "type: local\nn_workers: 1\nprocesses: false\n"
#: a file original and one file source (``{file}``), a ``control`` flag (``{control}``: "" or
#: ", control: true") and a profile: the copy checks of the input-integrity and cached-rerun tests
COPY_TASK = """
name: copies
datasets:
  - name: sd
    original: {{path: orig.csv}}
    synthetic:
      - {{name: s, paths: [{file}]{control}}}
measures:
  - type: profile
"""


def small_task(folder: Path, name: str, synth: bool = False) -> tuple[Path, Path]:
    """Write ``<name>.yaml`` and ``threads.yaml`` into ``folder``; return their paths."""
    cluster = folder / "threads.yaml"
    cluster.write_text(THREADS_CLUSTER, encoding="utf-8")
    task = folder / f"{name}.yaml"
    task.write_text(SMALL_TASK.format(name=name, synth=SYNTH_SOURCE if synth else ""), encoding="utf-8")
    return task, cluster
