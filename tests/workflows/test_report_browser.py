"""The HTML report opens in a real headless browser (Debian's chromium) with every section, and its
radius plots keep readable sizes with fixed radii (issue 23 item 5)."""

import base64
import io
import json
import re
import shutil
import subprocess
from html import unescape as html_unescape
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from pipeline.report.markup import number_text
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


def _probed(report: Path, script: str, attribute: str, window: str, tmp_path: Path) -> tuple[str, Any]:
    """The report's DOM after ``script`` ran on load in chromium (window ``width,height``) and the
    JSON it wrote into the body's ``attribute``."""
    probe = tmp_path / "probe.html"
    probe.write_text(report.read_text().replace("</body>", script + "</body>"))
    dom = _chromium([f"--window-size={window}", "--dump-dom", probe.resolve().as_uri()], tmp_path / "p")
    assert dom.returncode == 0, dom.stderr[-2000:]
    return dom.stdout, json.loads(html_unescape(re.search(rf'{attribute}="([^"]*)"', dom.stdout).group(1)))


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
        assert f'<section id="{family}' in html  # the synthesis family: one section per kind
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
    for headline in ("repU (%)", "DiSCO (%)", "identification risk at r* (%)", "S_pMSE (utility_gen; ratio)"):
        assert headline in summary, headline
    # issue 23: why a figure is high (the partial release keeps its keys; agegr recodes the key age)
    assert "repU = UiO by construction" in summary and "prior knowledge (synthpop's check_2way" in summary
    assert "<h2>Partial synthesis (synthpop syn()" in html and "<h2>Synthesis from coarsened margins</h2>" in html
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


# ---- the first screen at 1,400 px (issue 36 item 6) --------------------------------------------------

#: after the page has loaded: the first screen's boxes and cells whose text runs past their width
#: (clipped or scrolled), and each verdict line with where it sits, as an attribute of the body
FIRST_SCREEN_SCRIPT = """<script>window.addEventListener("load", () => {
  const first = [...document.querySelectorAll("section")].slice(0,
    [...document.querySelectorAll("section")].findIndex((s) => s.id === "metadata"));
  const clipped = first.flatMap((s) => [...s.querySelectorAll(".scroll, td, th, p")]
    .filter((el) => el.scrollWidth > el.clientWidth)
    .map((el) => ({section: s.id, text: el.textContent.slice(0, 60), scroll: el.scrollWidth, client: el.clientWidth})));
  const lines = [...document.querySelectorAll("p.verdict")].map((p) => ({
    section: p.closest("section").id, text: p.textContent, bottom: p.getBoundingClientRect().bottom}));
  document.body.setAttribute("data-first-screen", JSON.stringify({clipped, lines}));
});</script>"""
#: the disclosure plot's two markers (pipeline.risk.disclosure.plots): original, synthetic
MARKER_COLOURS = {"original": (0x1B, 0x9E, 0x77), "synthetic": (0xD9, 0x5F, 0x02)}


def _below_the_panels(png: bytes) -> np.ndarray:
    """The part of a plot under its lowest axes frame (the last row with a long dark run)."""
    rgb = np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int)
    dark = rgb.sum(axis=2) < 240
    long_rows = np.nonzero(dark.sum(axis=1) > 0.25 * rgb.shape[1])[0]
    return rgb[long_rows.max() + 1 :]


def _label_rows(table: str) -> list[tuple[str, ...]]:
    """Each body row's label cells (the text columns before the first number) of an HTML table."""
    out = []
    for row in re.findall(r"<tr>(.*?)</tr>", table)[1:]:
        cells = [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row)]
        out.append(tuple(cells[:2]))
    return out


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (CI installs Debian's chromium)")
def test_the_first_screen_at_1400_px(demo_run, tmp_path):
    report = demo_run.out_dir / "report.html"
    page, got = _probed(report, FIRST_SCREEN_SCRIPT, "data-first-screen", "1400,900", tmp_path)
    # no clipped text: no table box scrolls, no cell or paragraph runs past its width
    assert got["clipped"] == [], got["clipped"]
    # one verdict line per release, in the summary, within the first 900 px
    releases = {
        f"{d} / {s}" + (f" #{r}" if r else "")
        for d, s, r in demo_run.results.loc[demo_run.results["source"] != "", ["dataset", "source", "repetition"]]
        .drop_duplicates()
        .itertuples(index=False)
    }
    lines = {}
    for line in got["lines"]:
        release, _, text = line["text"].partition(": ")
        assert release not in lines, release
        lines[release] = text
        assert line["section"] == "summary" and line["bottom"] <= 900, line
    assert set(lines) == releases
    assert lines["sd2011 / cart"].startswith("attention — DiSCO (%) ")
    assert lines["sd2011 / margins_L10"].startswith("pass — within the threshold: repU (%), DiSCO (%)")
    assert lines["cedata / income"].startswith("attention — identification risk at r* (%) ")
    assert lines["cedata_holdout / partial_income"].startswith("the synthesis adds risk — ")
    # distinct row labels in every table of the first screen
    first = page[page.index('<section id="summary">') : page.index('<section id="metadata">')]
    for table in re.findall(r"<table.*?</table>", first):
        labels = _label_rows(table)
        assert len(labels) == len(set(labels)), [k for k in labels if labels.count(k) > 1]
    # the disclosure plots have a legend for both markers, inside the image, under the panels
    images = dict(re.findall(r'<img alt="([^"]+)" src="data:image/png;base64,([^"]+)"', page))
    disclosure = {alt: b64 for alt, b64 in images.items() if alt.startswith("disclosure") and "original vs" in alt}
    assert len(disclosure) == 4, list(images)
    for alt, b64 in disclosure.items():
        below = _below_the_panels(base64.b64decode(b64))
        for marker, colour in MARKER_COLOURS.items():
            near = (np.abs(below - np.array(colour)).max(axis=2) < 40).sum()
            assert near >= 10, (alt, marker, near)
    # the profile shows each variable's share of missing values, as the profile measure computed it
    profile = page[page.index('<section id="profile">') :]
    profile = profile[: profile.index("</section>")]
    missing = demo_run.results[
        (demo_run.results["measure"] == "missing_pct") & (demo_run.results["dataset"] == "sd2011")
    ]
    sd2011 = profile[profile.index("<h3>profile: sd2011") :]
    sd2011 = sd2011[: sd2011.index("</table>")]
    shown = {row[0]: row[1] for row in _label_rows(sd2011)}
    assert len(shown) == len(missing) == 12
    for params, value in zip(missing["params"], missing["value"], strict=True):
        assert shown[json.loads(params)["variable"]] == number_text(value)
    assert shown["income"] == "13.66"  # SD2011's income: NA in 13.66 % of the records (-8 codes apart)
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "report-first-screen-1400.png"
    r = _chromium([f"--screenshot={shot}", "--window-size=1400,900", report.resolve().as_uri()], tmp_path / "p2")
    assert r.returncode == 0 and np.asarray(Image.open(shot).convert("L")).std() > 10


# ---- fixed radii (issue 23 item 5): a CPS-like task with radii for every compared variable --------

FIXED_RADII_TASK = """
name: fixed_radii
seed: 1
datasets:
  - name: cedata
    original: {demo: cedata}
    synthetic:
      - {name: income, demo: cedata_syn_income}
measures:
  - type: identification_risk
    params:
      scenarios:
        fixed: {known: [Age, Expenditure, Urban], synthesised: [Income], radius_grid: null}
        swept:
          known: [Age, Expenditure, Urban]
          synthesised: [Income]
          radius: {Age: 2, Expenditure: 500}
          radius_grid: {Income: [500, 1000, 2000]}
      radius: {Age: 2, Expenditure: 500, Income: 1000}
      percentage: false
"""

#: after the page has loaded, each figure's rendered size (CSS pixels) as an attribute of the body
SIZES_SCRIPT = """<script>window.addEventListener("load", () => {
  const sizes = [...document.querySelectorAll("figure img")].map((img) => {
    const box = img.getBoundingClientRect();
    return {alt: img.alt, width: box.width, height: box.height};
  });
  document.body.setAttribute("data-sizes", JSON.stringify(sizes));
});</script>"""


@pytest.fixture(scope="module")
def fixed_radii_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fixed_radii")
    (folder / "task.yaml").write_text(FIXED_RADII_TASK)
    task = load_task(folder / "task.yaml")
    cluster = {"type": "local", "n_workers": 1, "processes": False}
    return run_task(task, cluster=cluster, out_dir=folder / "out", progress=False)


def _plot_area(png: bytes) -> tuple[int, int]:
    """Width and height in pixels of a plot's axes: the longest horizontal and vertical runs of
    dark pixels (the axes' black frame; text strokes and whiskers are shorter)."""
    dark = np.asarray(Image.open(io.BytesIO(png)).convert("L")) < 80

    def longest(rows: np.ndarray) -> int:
        padded = np.pad(rows, ((0, 0), (1, 1))).astype(np.int8)
        edges = np.diff(padded, axis=1)
        starts, ends = np.nonzero(edges == 1), np.nonzero(edges == -1)
        return int((ends[1] - starts[1]).max()) if len(starts[1]) else 0

    return longest(dark), longest(dark.T)


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (CI installs Debian's chromium)")
def test_radius_plots_with_fixed_radii_are_not_squeezed(fixed_radii_run, tmp_path):
    report = fixed_radii_run.out_dir / "report.html"
    page, sizes = _probed(report, SIZES_SCRIPT, "data-sizes", "1280,900", tmp_path)
    plots = {
        fig: [s for s in sizes if caption in s["alt"]]
        for fig, caption in (("Fig. 6", "Hornby & Hu Fig. 6"), ("Fig. 7", "Hornby & Hu Fig. 7"))
    }
    assert len(plots["Fig. 6"]) == 1 and len(plots["Fig. 7"]) == 1, sizes
    for fig, (shown,) in plots.items():
        assert shown["width"] >= 400 and shown["height"] >= 300, (fig, shown)  # rendered in the page
    # inside each image the axes keep a plotting area (with the full radii as tick labels Fig. 6's
    # axes were about 280 × 40 px)
    images = dict(re.findall(r'<img alt="([^"]+)" src="data:image/png;base64,([^"]+)"', page))
    for caption, b64 in images.items():
        width, height = _plot_area(base64.b64decode(b64))
        assert width >= 300 and height >= 220, (caption, width, height)
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "report-fixed-radii.png"
    r = _chromium([f"--screenshot={shot}", "--window-size=1280,1600", report.resolve().as_uri()], tmp_path / "p2")
    assert r.returncode == 0 and np.asarray(Image.open(shot).convert("L")).std() > 10


# ---- verdicts on a leak and a null (issue 32): the first screen and the distance section -----------

LEAK_AND_NULL_TASK = """
name: leak_and_null
seed: 4
baseline: {{permutations: 10}}
datasets:
  - name: ce
    original: {{path: {folder}/training.parquet, schema: {folder}/ce.schema.json}}
    holdout: {folder}/holdout.parquet
    synthetic:
      # a leak: the training records themselves (control: the copy check lets it through)
      - {{name: leak, paths: [{folder}/training.parquet], control: true}}
      # a null: other records of the same population, seen by nobody
      - {{name: unseen, paths: [{folder}/independent.parquet]}}
measures:
  - type: disclosure
    params: {{keys: [Urban, Tenure, Educ, Marital], targets: [Income], ngroups_targets: {{Income: 5}}}}
  - type: dcr
  - type: inference
    params: {{aux_cols: [Urban, Tenure, Educ, Marital, Age], secret: Income, n_attacks: 300}}
"""


@pytest.fixture(scope="module")
def leak_and_null_run(tmp_path_factory):
    from pipeline.datasets import load_demo

    folder = tmp_path_factory.mktemp("leak_and_null")
    cedata = load_demo("cedata").to_pandas().reset_index(drop=True)
    thirds = np.array_split(np.random.default_rng(11).permutation(len(cedata)), 3)
    for name, rows in zip(("training", "holdout", "independent"), thirds, strict=True):
        cedata.iloc[np.sort(rows)].to_parquet(folder / f"{name}.parquet", index=False)
    (folder / "ce.schema.json").write_text(json.dumps(load_demo("cedata").schema.to_dict()))
    (folder / "task.yaml").write_text(LEAK_AND_NULL_TASK.format(folder=folder))
    cluster = {"type": "local", "n_workers": 1, "processes": False}
    return run_task(load_task(folder / "task.yaml"), cluster=cluster, out_dir=folder / "out", progress=False)


def _check_verdicts(page: str) -> None:
    """The leak reads "adds risk" naming the measures behind it, the null "no excess" with what it
    could detect; the distance section shows its evidence and the share's ceiling."""
    first = page[page.index('<section id="summary">') : page.index('<section id="metadata">')]
    lines = dict(re.findall(r'<p class="verdict"><strong>ce / (\w+)</strong>: ([^<]+)</p>', first))
    assert set(lines) == {"leak", "unseen"}, lines
    assert lines["leak"].startswith("the synthesis adds risk — ")
    for figure in ("repU (%)", "dcr: share closer to training (%)", "inference: success rate (%)"):
        assert figure in lines["leak"], (figure, lines["leak"])
    assert lines["unseen"].startswith("no excess detected at this size — ") and "detectable ≥" in lines["unseen"]
    for column in ("training (%)", "holdout (%)", "difference (pp) [95 %]", "residual (%) [95 %]",
                   "smallest detectable (pp)"):  # fmt: skip
        assert f"<th>{column}</th>" in first, column
    distance = page[page.index('<section id="distance">') :]
    distance = distance[: distance.index("</section>")]
    for column in ("exact copies (zero DCR, %)", "median NNDR", "baseline protection", "overfitting protection",
                   "closer to training (%) [95 %]", "ceiling for this split (%)"):  # fmt: skip
        assert f"<th>{column}</th>" in distance, column
    assert "<h3>dcr: ce / leak</h3>" in distance and "<h3>dcr: ce / unseen</h3>" in distance
    attacks = page[page.index('<section id="attacks">') :]
    for column in ("main rate", "control rate", "baseline rate", "risk"):
        assert f"<th>{column}</th>" in attacks, column


def test_a_leak_and_a_null_get_their_verdicts(leak_and_null_run):
    from pipeline.report.baselines import ADDS_RISK, NO_EXCESS, excess_summary

    table = excess_summary(leak_and_null_run.results).set_index(["source", "figure"])
    assert (table.loc["leak", "verdict"] == ADDS_RISK).all()
    assert set(table.loc["unseen", "verdict"]) == {NO_EXCESS}
    _check_verdicts((leak_and_null_run.out_dir / "report.html").read_text())


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (CI installs Debian's chromium)")
def test_the_verdicts_render_in_chromium(leak_and_null_run, tmp_path):
    url = (leak_and_null_run.out_dir / "report.html").resolve().as_uri()
    dom = _chromium(["--enable-logging=stderr", "--v=0", "--dump-dom", url], tmp_path / "p")
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert "Uncaught" not in dom.stderr and "CONSOLE" not in dom.stderr
    _check_verdicts(dom.stdout)
