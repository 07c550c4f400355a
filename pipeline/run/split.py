"""The holdout split: the first step of a synthesis with a holdout (docs/baselines.md).

A dataset's ``holdout: {fraction: f}`` splits its original once, before any synthesiser sees
it: ``round(f · n)`` records, drawn without replacement by
``numpy.random.default_rng(seed).choice(n, ...)`` over record positions, are kept back as the
holdout; the others are the training part, the ``original`` every
:meth:`~pipeline.synth.base.Synthesiser.synthesise` of that dataset gets.  The draw uses the
record count only, so the split is the same for any partitions or workers.

:class:`HoldoutSplit` records how it was drawn (fraction, seed, record counts and a fingerprint
of the holdout positions together with the original's content hash) — never a record value.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from pipeline.data.dataset import Dataset
from pipeline.errors import DataError
from pipeline.evaluation.execution import Executor
from pipeline.fingerprint import fingerprint

#: fewest records a holdout (and the training part it is compared with) may have: fewer give
#: baselines and permutation intervals that say nothing
MIN_HOLDOUT_RECORDS = 20


@dataclass(frozen=True)
class HoldoutSplit:
    """The seeded split of an original into training and holdout records.

    Attributes
    ----------
    fraction : float
        Share of the records kept back (0 < fraction < 1).
    seed : int
        Seeds the draw of the holdout positions.
    """

    fraction: float
    seed: int

    def holdout_positions(self, n: int) -> np.ndarray:
        """Sorted positions (0..n-1) of the records kept back.

        Raises
        ------
        DataError
            The holdout or the training part would have fewer than :data:`MIN_HOLDOUT_RECORDS` records.
        """
        k = round(self.fraction * n)
        if min(k, n - k) < MIN_HOLDOUT_RECORDS:
            raise DataError(
                f"holdout: fraction {self.fraction:g} of {n} records leaves {k} holdout and {n - k} training "
                f"records; each needs at least {MIN_HOLDOUT_RECORDS}"
            )
        return np.sort(np.random.default_rng(self.seed).choice(n, k, replace=False))

    def split(self, original: Dataset, executor: Executor, data_hash: str) -> tuple[Dataset, Dataset, dict[str, Any]]:
        """(training part, holdout, record of the split) of ``original`` (``data_hash``: its content hash).

        The parts stay lazy; the record holds the settings, the record counts and a fingerprint.
        """
        (counts,) = executor.partition_rows(original.frame)
        n = int(sum(counts))
        positions = self.holdout_positions(n)
        kept_back = np.zeros(n, dtype=bool)
        kept_back[positions] = True
        training = replace(original, frame=executor.keep_rows(original.frame, ~kept_back))
        holdout = replace(
            original, name=f"{original.name}_holdout", frame=executor.keep_rows(original.frame, kept_back)
        )
        record = {
            "kind": "fraction",
            "fraction": self.fraction,
            "seed": self.seed,
            "training_records": n - len(positions),
            "holdout_records": len(positions),
            "fingerprint": fingerprint({"original": data_hash, "holdout_positions": positions.astype("<i8")}),
        }
        return training, holdout, record
