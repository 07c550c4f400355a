"""Attack results: rates with Wilson intervals and the risk with its interval, as rows."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pipeline.evaluation.base import Result, Row
from pipeline.evaluation.comparison import Rate, bounded, residual_rate, wilson
from pipeline.risk.attacks.compute import AttackCounts


def _rate_rows(label: str, name: str, attacks: int, successes: int, rate: Rate, p: Mapping[str, Any]) -> list[Row]:
    return [
        Row(label, f"{name}_attacks", float(attacks), p),
        Row(label, f"{name}_successes", float(successes), p),
        Row(label, f"{name}_rate", rate.value, p),
        Row(label, f"{name}_rate_lower", rate.lower, p),
        Row(label, f"{name}_rate_upper", rate.upper, p),
    ]


def attack_rows(label: str, counts: AttackCounts, confidence: float, p: Mapping[str, Any]) -> list[Row]:
    """Rows of one synthetic set: main, control and baseline rates, the risk, and the warning flag.

    The risk is anonymeter's: ``(main - control) / (1 - control)`` with a holdout, else the main
    rate; its value and interval are bounded to [0, 1].  ``baseline_beats_main`` is 1 when random
    guessing does at least as well as the main attack (the attack says nothing then).
    """
    main = wilson(counts.main_successes, counts.main_attacks, confidence)
    baseline = wilson(counts.baseline_successes, counts.baseline_attacks, confidence)
    rows = _rate_rows(label, "main", counts.main_attacks, counts.main_successes, main, p)
    rows += _rate_rows(label, "baseline", counts.baseline_attacks, counts.baseline_successes, baseline, p)
    risk = main
    if counts.control_attacks is not None and counts.control_successes is not None:
        control = wilson(counts.control_successes, counts.control_attacks, confidence)
        rows += _rate_rows(label, "control", counts.control_attacks, counts.control_successes, control, p)
        risk = residual_rate(main, control)
    rows += [
        Row(label, "risk", bounded(risk.value), p),
        Row(label, "risk_lower", risk.lower, p),
        Row(label, "risk_upper", risk.upper, p),
        Row(
            label,
            "baseline_beats_main",
            float(baseline.value >= main.value) if not math.isnan(main.value) else math.nan,
            p,
        ),
    ]
    return rows


@dataclass(frozen=True)
class AttackResult(Result):
    """Rows of every synthetic set and a summary of counts and risks (aggregates only)."""

    attack: str
    row_list: tuple[Row, ...]

    def rows(self) -> list[Row]:
        return list(self.row_list)

    def to_dict(self) -> dict[str, Any]:
        params = dict(self.row_list[0].params) if self.row_list else {}
        return {"attack": self.attack, "params": params, "sets": self.values_by_set()}
