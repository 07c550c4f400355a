"""The warnings a run raised (:mod:`pipeline.notices`): told once each on the terminal, kept in
the manifest (and each unit's in ``summary.json``) for the report."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

log = logging.getLogger("pipeline")

#: how the warnings raised outside any unit (the checks before the work) are named
CHECKS = "checks before the work"


def run_warnings(raised: Mapping[str, Sequence[str]], at_checks: Sequence[str]) -> list[dict[str, Any]]:
    """Each distinct warning with the units that raised it (the repetitions of a study raise the
    same ones), those of the checks that no unit raised again last."""
    units: dict[str, list[str]] = {}
    for label, messages in raised.items():
        for message in messages:
            units.setdefault(message, []).append(label)
    for message in at_checks:
        units.setdefault(message, [CHECKS])
    return [{"warning": message, "units": labels} for message, labels in units.items()]


def tell_warnings(warnings: Sequence[Mapping[str, Any]]) -> None:
    """Log each warning of :func:`run_warnings` once: ``<message> [<unit>, <unit>, ...]``."""
    for w in warnings:
        labels = list(w["units"])
        shown = ", ".join(labels[:3]) + (f" and {len(labels) - 3} more" if len(labels) > 3 else "")
        log.warning("%s [%s]", w["warning"], shown)
