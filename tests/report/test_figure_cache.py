"""Issue 23 item 2: the report's figures are drawn once each (no ``bbox_inches="tight"``), their
titles wrap inside the figure, and a figure cache keyed by what draws them gives the same bytes
without drawing."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from PIL import Image

import pipeline.report.markup as markup
from pipeline.evaluation.reporting import Figure as FigureBlock
from pipeline.evaluation.reporting import Markup
from pipeline.report.markup import FigureCache, blocks_html, figure_digest


def titled(points: pd.DataFrame, title: str) -> Figure:
    fig = Figure(figsize=(4.0, 3.0), layout="constrained")
    ax = fig.subplots()
    ax.plot(points["x"], points["y"])
    ax.set_title(title)
    return fig


POINTS = pd.DataFrame({"x": [1.0, 2.0, 3.0], "y": [0.5, 0.25, 0.75]})
LONG = "identification_risk: cedata_holdout / partial_income [baseline=normalised_excess] " * 2


def test_a_long_title_wraps_inside_the_figure_and_the_image_has_the_figure_size():
    fig = titled(POINTS, LONG)
    png = markup.figure_png(fig)
    assert Image.open(io.BytesIO(png)).size == (4 * markup.DPI, 3 * markup.DPI)  # not cropped or grown
    assert fig.axes[0].title.get_wrap() and fig.axes[0].title._get_wrapped_text().count("\n") >= 2
    # the title's ink is inside the image: its top rows are not blank and not cut (white border kept)
    grey = np.asarray(Image.open(io.BytesIO(png)).convert("L"))
    assert grey[0].min() == 255 and grey[:40].min() < 128


def test_the_digest_follows_the_data_not_the_objects():
    same = POINTS.copy()
    assert figure_digest(titled, (POINTS, "t"), {}, "v") == figure_digest(titled, (same, "t"), {}, "v")
    moved = POINTS.assign(y=[0.5, 0.25, 0.7500001])
    assert figure_digest(titled, (moved, "t"), {}, "v") != figure_digest(titled, (POINTS, "t"), {}, "v")
    assert figure_digest(titled, (POINTS, "t"), {}, "v2") != figure_digest(titled, (POINTS, "t"), {}, "v")
    assert figure_digest(titled, (POINTS, "u"), {}, "v") != figure_digest(titled, (POINTS, "t"), {}, "v")


def test_a_cached_figure_gives_the_same_bytes_without_drawing(tmp_path, monkeypatch):
    first = blocks_html([FigureBlock("caption", titled, (POINTS, "t"))], FigureCache(tmp_path, "v"))
    drawn = []
    monkeypatch.setattr(markup, "figure_png", lambda fig: drawn.append(fig) or b"")
    assert blocks_html([FigureBlock("caption", titled, (POINTS.copy(), "t"))], FigureCache(tmp_path, "v")) == first
    assert drawn == []
    blocks_html([FigureBlock("caption", titled, (POINTS.assign(y=0.0), "t"))], FigureCache(tmp_path, "v"))  # other data
    assert len(drawn) == 1


def test_figures_drawn_together_are_those_drawn_alone_in_page_order(monkeypatch):
    def figure(i: int) -> FigureBlock:
        return FigureBlock(f"c{i}", titled, (POINTS.assign(y=POINTS["y"] * i), f"t{i}"))

    alone = [blocks_html([figure(i)]) for i in range(4)]
    batches = []
    draw = markup._draw
    monkeypatch.setattr(markup, "_draw", lambda figures: batches.append(len(figures)) or draw(figures))
    page = [figure(0), Markup("<p>a</p>"), figure(1), Markup("<p>a</p>"), figure(2), Markup("<p>a</p>"), figure(3)]
    assert blocks_html(page) == "\n<p>a</p>\n".join(alone)
    assert batches == [4]  # one batch for the page


def test_pruning_keeps_the_figures_the_last_report_used(tmp_path):
    cache = FigureCache(tmp_path / "figures", "v1")
    cache.put("a" * 32, b"png a")
    cache.put("b" * 32, b"png b")
    fresh = FigureCache(tmp_path / "figures", "v1")
    assert fresh.get("a" * 32) == b"png a" and fresh.get("c" * 32) is None
    fresh.prune()
    assert sorted(p.name for p in (tmp_path / "figures").iterdir()) == [f"{'a' * 32}.png"]
