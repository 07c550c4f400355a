"""The HTML report opens in a real headless browser (Debian's chromium) with every section."""

import base64
import io
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from pipeline.runner import run_task
from pipeline.tasks import load_task

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo")
    task = load_task(ROOT / "tasks" / "demo.yaml")
    return run_task(task, cluster={"type": "local", "n_workers": 2, "processes": False}, out_dir=out, progress=False)


def _chromium(args: list[str], profile: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True, text=True, timeout=120
    )


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (CI installs Debian's chromium)")
def test_report_renders_in_chromium_with_every_section(demo_run, tmp_path):
    report = demo_run.out_dir / "report.html"
    url = report.resolve().as_uri()
    dom = _chromium(["--enable-logging=stderr", "--v=0", "--dump-dom", url], tmp_path / "p1")
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = dom.stdout
    assert "Uncaught" not in dom.stderr and "CONSOLE" not in dom.stderr
    # every measure family of the run has its section, with real numbers in its table
    for family in demo_run.results["family"].unique():
        assert f'<section id="{family}">' in html
    assert '<section id="metadata">' in html and demo_run.run_id in html
    assert {"profile", "disclosure", "identification_risk", "utility", "synthesis"} <= set(demo_run.results["family"])
    for caption in (
        "r* marked (Hornby &amp; Hu Fig. 6)",
        "Hornby &amp; Hu Fig. 7",
        "Hornby &amp; Hu Figs. 8–9",
        "Hornby &amp; Hu Fig. 10",
        "keys: sex, age, edu, marital): original vs synthetic",
        "S_pMSE of each synthetic set",
        "synthesise: sd2011 / margins_L10: fit",
        "ipf_iterations",
        "margin_total_moved",
    ):
        assert caption in html, caption
    assert re.search(r"<td>5000</td>", html)  # SD2011 has 5000 records
    # issue 16: a first screen that decides, readable numbers, wide tables in scrolling boxes
    summary = html[html.index('<section id="summary">') : html.index('<section id="metadata">')]
    assert html.index('<section id="summary">') < html.index('<section id="metadata">')  # the first screen
    for headline in ("repU (%)", "DiSCO (%)", "identification risk at r*", "S_pMSE (utility_gen)"):
        assert headline in summary, headline
    assert '<td class="pass">pass</td>' in summary and '<td class="attention">attention</td>' in summary
    assert "at the edge of the radius grid" in summary  # the demo's r* is the grid's smallest radius
    assert "rule of thumb: max ≤ 5" in summary
    assert '<div class="scroll"><table' in html and 'href="results.csv"' in html
    assert "All values (table)" not in html and not re.search(r"\d\.\d{5,}e-1\d", html)
    # the figures are real PNGs with content
    images = re.findall(r'src="data:image/png;base64,([^"]+)"', html)
    assert images
    for b64 in images:
        img = np.asarray(Image.open(io.BytesIO(base64.b64decode(b64))).convert("L"))
        assert img.shape[0] > 100 and img.std() > 5
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "report.png"
    r = _chromium([f"--screenshot={shot}", "--window-size=1280,2400", url], tmp_path / "p2")
    assert r.returncode == 0 and shot.exists()
    pixels = np.asarray(Image.open(shot).convert("L"))
    assert pixels.std() > 10  # not a blank page
    first = ARTIFACTS / "report-first-screen.png"
    r = _chromium([f"--screenshot={first}", "--window-size=1280,900", url], tmp_path / "p3")
    assert r.returncode == 0 and np.asarray(Image.open(first).convert("L")).std() > 10
