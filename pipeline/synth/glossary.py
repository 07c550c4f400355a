"""Plain names, units and one-line meanings of the synthesis rows the report shows in its tables.

A synthesiser's rows keep their short names (``ipf_tvd_n``) in ``results.csv`` and the history,
where gates and scripts read them; the report shows people a plain name with its unit and what
it means, and the row name beside it so that the unrounded value can be found.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd


@dataclass(frozen=True)
class Term:
    """What one row name means to a reader."""

    name: str
    unit: str
    meaning: str


#: the synthesisers' rows (``family: synthesis``): coarsened margins, their control, IPF, DP and
#: the partial synthesiser's trees
SYNTHESIS_TERMS = {
    "n": Term("records in the original", "records", "the data the synthesis learnt from"),
    "k": Term("records per synthetic set", "records", "the size of each synthetic set"),
    "m": Term("synthetic sets", "sets", "how many synthetic sets were made"),
    "ipf_iterations": Term(
        "IPF cycles", "cycles", "cycles of iterative proportional fitting until its change fell below the tolerance"
    ),
    "ipf_converged": Term("IPF converged", "1 = yes, 0 = no", "whether the fit stopped below its tolerance"),
    "ipf_stopping_criterion": Term(
        "last change per cycle",
        "probability (or relative to the largest cell)",
        "the largest change of a fitted cell in the last cycle; the fit stops when it is below tol",
    ),
    "ipf_compatible": Term(
        "margins compatible",
        "1 = yes, 0 = no",
        "whether one table can match every released margin (equal totals and shared sub-margins); "
        "0: the last margin is matched exactly, the others approximately",
    ),
    "ipf_max_abs_dev": Term(
        "largest margin deviation (fit scale)",
        "probability",
        "mipfp's error.margins: the largest |released − fitted| cell of the margin on the fit's scale",
    ),
    "ipf_max_abs_dev_n": Term(
        "largest margin deviation",
        "records",
        "the largest |released − fitted| cell of the margin, both rescaled to the original's records",
    ),
    "ipf_tvd_n": Term(
        "total-variation distance to the margin",
        "records",
        "half the sum of |released − fitted| over the margin's cells, rescaled to the original's records: "
        "how many records the fit places differently from the released margin",
    ),
    "margin_total_released": Term("released margin total", "records", "the margin's total after disclosure control"),
    "margin_total_moved": Term(
        "margin total moved", "records", "released total minus the original's records: what disclosure control added"
    ),
    "margin_total_moved_rel": Term(
        "margin total moved (relative)", "share of the original's records", "the total moved over the records"
    ),
    "margin_adjust_shift": Term(
        "V3 shift per cell", "records", "subtracted from every non-zero cell to bring the total back to the original's"
    ),
    "margin_adjust_scale": Term(
        "V3 scale factor", "ratio", "every cell multiplied by it to bring the total back to the original's"
    ),
    "dp_epsilon_spent": Term("privacy budget ε spent", "ε", "the release's overall ε (basic composition)"),
    "dp_delta_spent": Term("privacy budget δ spent", "δ", "the release's overall δ (basic composition)"),
    "dp_margin_epsilon": Term("ε of the margin", "ε", "the share of the budget spent on this margin"),
    "dp_noise_scale": Term("noise scale", "records", "the scale of the noise added to each cell of the margin"),
    "dp_cells_zeroed": Term("cells set to 0", "cells", "noisy cells set to 0 to keep the margin non-negative"),
    "cart_nodes": Term("CART tree nodes", "nodes", "nodes of the variable's fitted tree"),
    "cart_leaves": Term("CART tree leaves", "leaves", "leaves of the variable's tree: the groups it draws values from"),
}


def plain_name(measure: str, terms: dict[str, Term] = SYNTHESIS_TERMS) -> str:
    """A row name as a heading: the plain name with its unit (the row name itself when unknown)."""
    term = terms.get(measure)
    return f"{term.name} ({term.unit})" if term else measure


def glossary_table(measures: list[str], terms: dict[str, Term] = SYNTHESIS_TERMS) -> pd.DataFrame:
    """One line per row name shown: plain name, unit, meaning and the name in ``results.csv``."""
    known = [m for m in dict.fromkeys(measures) if m in terms]
    return pd.DataFrame(
        [(terms[m].name, terms[m].unit, terms[m].meaning, m) for m in known],
        columns=["figure", "unit", "meaning", "in results.csv"],
    )
