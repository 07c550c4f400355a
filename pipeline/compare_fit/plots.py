"""The coefficient plot of ``compare.fit.synds`` (``plot = "Z"``), from the tidy rows.

One row per coefficient (the intercept left out, as synthpop's ``plot.intercept = FALSE``):
the original's z value with its interval ``z ± q`` (``q`` the normal quantile of
``ci_level``), and the synthetic one — without population inference the original's interval
shifted by the standardised difference, with it the combined synthetic ``z`` (synthpop's
``dfCI``).  A figure per model (formula and setting) in the rows.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from scipy import stats

from pipeline.row_params import param_columns

OBSERVED_COLOR, SYNTHETIC_COLOR = "#1A3C5A", "#4187BF"


def coefficient_panels(rows: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """Per model in ``rows`` (a ``compare_fit`` entry's rows): its title and a frame with one row
    per coefficient (intercept excluded) and columns ``observed``, ``synthetic``."""
    table = param_columns(rows, "coefficient", "formula", "population_inference")
    out = []
    for (formula, pi), part in table.groupby(["formula", "population_inference"], sort=False):
        coef = part[part["coefficient"].notna() & (part["coefficient"] != "(Intercept)")]
        obs = coef[(coef["synthetic"] == "original") & (coef["measure"] == "z")].set_index("coefficient")["value"]
        wanted = "compare_z" if pi else "std_diff"
        syn = coef[(coef["synthetic"] == "mean") & (coef["measure"] == wanted)].set_index("coefficient")["value"]
        panel = pd.DataFrame({"observed": obs, "synthetic": syn.reindex(obs.index) + (0 if pi else obs)})
        title = f"Z values for fit to {formula.split('~')[0].strip()}" + (" (population inference)" if pi else "")
        out.append((title, panel))
    return out


def plot_coefficients(rows: pd.DataFrame, ci_level: float = 0.95) -> Figure:
    """synthpop's coefficient plot: observed and synthetic z values with their intervals."""
    panels = coefficient_panels(rows)
    height = sum(0.35 * len(p) + 1.2 for _, p in panels) or 2.0
    fig = Figure(figsize=(7.5, height))
    q = float(stats.norm.ppf(1 - (1 - ci_level) / 2))
    axes = fig.subplots(len(panels), 1, squeeze=False)[:, 0] if panels else []
    for ax, (title, panel) in zip(axes, panels, strict=True):
        y = np.arange(len(panel))
        for offset, column, color, marker in ((-0.15, "synthetic", SYNTHETIC_COLOR, "^"),
                                              (0.15, "observed", OBSERVED_COLOR, "o")):  # fmt: skip
            values = panel[column].to_numpy(dtype=float)
            ax.errorbar(values, y + offset, xerr=q, fmt=marker, color=color, label=column, capsize=0)
        ax.axvline(0, color="grey", linestyle="--", linewidth=1)
        ax.set_yticks(y, [str(c) for c in panel.index])
        ax.set_ylim(len(panel) - 0.5, -0.5)
        ax.set_xlabel("Z value")
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=8, frameon=False)
    fig.tight_layout()
    return fig
