"""Equal footings of a holdout baseline: which records stand in the original's place, and how.

A holdout baseline evaluates a measure twice — with training records and with holdout records
in the original's place — on equal footing, and again on relabelled footings (the two groups
drawn at random from the records of both) for the permutation interval of the excess
(``docs/baselines.md``).  A :class:`Footing` makes those pairs of
:class:`~pipeline.evaluation.data.EvalData`:

* :class:`SampledFooting` — measures that compare the synthetic sets with a *sample* of
  records (synthpop's disclosure measures, distances): the larger of training and holdout is
  subsampled without replacement to the size of the smaller (uniqueness and matching depend
  on the sample size, so the sizes must be equal); a relabelling splits the 2k records of both
  groups at random into two groups of k;
* :class:`PairedFooting` — row-aligned partially synthetic data (identification risk): record
  i keeps its released (known) values, and its synthesised values are those of a holdout
  record drawn from the records with i's categorical known values; a relabelling swaps, per
  holdout partner with probability 1/2, the own synthesised values of every record it partners
  with its values (a partner serves several records when the holdout is smaller or its cell
  is: swapping record by record would take those records' shared values for independent ones
  and draw an interval too narrow).

Every draw comes from ``numpy.random.default_rng([seed, relabelling])`` over record positions
and counts only, so footings do not depend on partitions or workers.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd

from pipeline.evaluation.data import EvalData
from pipeline.evaluation.execution import Executor

#: the observed training and holdout footings, and which records each group takes from the second
Mixtures = tuple[EvalData, EvalData, list[np.ndarray]]


class Footing(ABC):
    """How the records a measure compares with the synthetic sets are put on equal footing."""

    #: whether the observed footing's training group is the data themselves (the original's
    #: records with their own values, the same synthetic sets): a measure's result on it is the
    #: observed result, which a baseline without relabellings reuses instead of evaluating again
    training_is_observed: ClassVar[bool] = False

    @abstractmethod
    def split(self, data: EvalData, executor: Executor, seed: int, relabel: int = 0) -> tuple[EvalData, EvalData]:
        """(training footing, holdout footing) — the same synthetic sets, no holdout attached.

        ``relabel`` 0 is the observed footing; 1, 2, … are relabellings (the permutation
        distribution of the excess under "training records are no different from holdout
        records").
        """

    @abstractmethod
    def records(self, data: EvalData, executor: Executor) -> int:
        """Records of each group of a footing (the training footing's, holdout's and relabellings')."""

    def mixtures(self, data: EvalData, executor: Executor, seed: int, relabellings: int) -> Mixtures | None:
        """When every group (the observed footing's two, then each relabelling's two) is a
        per-record mixture of the two observed footings: those footings and, per group, which
        records take the second's values
        (:meth:`~pipeline.evaluation.base.Measure.evaluate_mixtures`). None by default."""
        return None


def _rng(seed: int, relabel: int) -> np.random.Generator:
    return np.random.default_rng([int(seed), int(relabel)])


@dataclass(frozen=True)
class SampledFooting(Footing):
    """Training and holdout records subsampled to one size (the smaller of the two)."""

    def sizes(self, data: EvalData, executor: Executor) -> tuple[int, int]:
        """Records of the training data and of the holdout."""
        train_counts, hold_counts = executor.partition_rows(data.original, data.holdout)
        n_train, n_hold = sum(train_counts), sum(hold_counts)
        return int(n_train), int(n_hold)

    def records(self, data: EvalData, executor: Executor) -> int:
        return min(self.sizes(data, executor))

    def masks(self, n_train: int, n_hold: int, seed: int, relabel: int) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
        """Per group (training footing, holdout footing): which training and which holdout records it holds."""
        k = min(n_train, n_hold)
        rng = _rng(seed, 0)
        train = np.zeros(n_train, dtype=bool)
        train[rng.choice(n_train, k, replace=False) if k < n_train else slice(None)] = True
        hold = np.zeros(n_hold, dtype=bool)
        hold[rng.choice(n_hold, k, replace=False) if k < n_hold else slice(None)] = True
        if relabel == 0:
            return (train, np.zeros(n_hold, dtype=bool)), (np.zeros(n_train, dtype=bool), hold)
        pool = np.concatenate([np.flatnonzero(train), n_train + np.flatnonzero(hold)])
        first = np.zeros(n_train + n_hold, dtype=bool)
        first[_rng(seed, relabel).choice(pool, k, replace=False)] = True
        second = np.zeros(n_train + n_hold, dtype=bool)
        second[pool] = True
        second &= ~first
        return (first[:n_train], first[n_train:]), (second[:n_train], second[n_train:])

    def split(self, data: EvalData, executor: Executor, seed: int, relabel: int = 0) -> tuple[EvalData, EvalData]:
        n_train, n_hold = self.sizes(data, executor)
        out = []
        for from_train, from_hold in self.masks(n_train, n_hold, seed, relabel):
            parts = []
            if from_train.any():
                parts.append(executor.keep_rows(data.original, from_train))
            if from_hold.any():
                parts.append(executor.keep_rows(data.holdout, from_hold))
            frame = executor.concat_rows(parts)
            out.append(data.with_original(frame))
        return out[0], out[1]


@dataclass(frozen=True)
class PairedFooting(Footing):
    """Row-aligned data: the synthesised values of each record against those of a holdout partner.

    Attributes
    ----------
    cells : tuple of str
        Categorical known variables: a partner is drawn among the holdout records with the
        record's values of them (a missing value is a value); a record whose cell has no
        holdout record is its own partner (:meth:`split`).
    replaced : tuple of str
        The synthesised variables, taken from the partner.
    columns : tuple of str
        Every variable the measure reads (only these are collected to build the footings).
    """

    cells: tuple[str, ...]
    replaced: tuple[str, ...]
    columns: tuple[str, ...]
    # relabelling 0 gives every record its own synthesised values
    training_is_observed: ClassVar[bool] = True

    def partners(self, training: pd.DataFrame, holdout: pd.DataFrame, seed: int) -> tuple[np.ndarray, np.ndarray]:
        """Each training record's holdout partner (a position) and whether its cell had one."""
        rng = _rng(seed, 0)
        u = rng.random(len(training))
        if not self.cells:
            return np.floor(u * len(holdout)).astype(np.int64), np.ones(len(training), dtype=bool)
        both = pd.concat([training[list(self.cells)], holdout[list(self.cells)]], ignore_index=True)
        codes = both.groupby(list(self.cells), dropna=False, observed=True, sort=True).ngroup().to_numpy()
        train_cell, hold_cell = codes[: len(training)], codes[len(training) :]
        order = np.argsort(hold_cell, kind="stable")  # holdout positions grouped by cell, in record order
        n_cells = int(codes.max()) + 1 if len(codes) else 0
        size = np.bincount(hold_cell, minlength=n_cells)
        start = np.cumsum(size) - size
        paired = size[train_cell] > 0
        position = start[train_cell] + np.floor(u * size[train_cell]).astype(np.int64)
        within = order[position.clip(0, len(holdout) - 1)]  # clipped: unpaired records take `anywhere`
        anywhere = np.floor(u * len(holdout)).astype(np.int64)
        return np.where(paired, within, anywhere), paired

    def records(self, data: EvalData, executor: Executor) -> int:
        (counts,) = executor.partition_rows(data.original)
        return int(sum(counts))

    @staticmethod
    def swapped(partner: np.ndarray, holdout_records: int, seed: int, relabel: int) -> np.ndarray:
        """Relabelling ``relabel`` (≥ 1): which records swap their own synthesised values with
        their partner's — those whose partner (a holdout position) drew a swap, each with
        probability 1/2.

        Swapping partners, not records, keeps together the records that share a partner: the
        excess sums their own values minus the shared one, and a relabelled excess then has its
        sampling variance (swapping record by record gives ``2 n σ²`` where it is
        ``(n + Σ k²) σ²``, k the records per partner: 1.2 times too narrow an interval at 1:1,
        more at 4:1).
        """
        return (_rng(seed, relabel).random(holdout_records) < 0.5)[partner]

    def _partnered(
        self, data: EvalData, executor: Executor, seed: int
    ) -> tuple[EvalData, pd.DataFrame, pd.DataFrame, np.ndarray, np.ndarray]:
        """The data (the measure's columns), its training and holdout records whole, the partners
        and whether each record's cell had one (:meth:`partners`)."""
        data = data.select(self.columns)
        training, holdout = executor.whole(data.original, data.holdout)
        return data, training, holdout, *self.partners(training, holdout, seed)

    def split(self, data: EvalData, executor: Executor, seed: int, relabel: int = 0) -> tuple[EvalData, EvalData]:
        data, training, holdout, partner, paired = self._partnered(data, executor, seed)
        cols = list(self.replaced)
        own = training[cols].reset_index(drop=True)
        # a record whose cell has no holdout record keeps its own values in both groups (it adds
        # nothing to the excess): a partner from another cell brings values of another
        # distribution, further from the record's synthetic row, and a null read as risk
        other = holdout[cols].iloc[partner].reset_index(drop=True)
        other = other.mask(pd.DataFrame(dict.fromkeys(cols, ~paired)), own)
        if relabel:
            swap = pd.DataFrame(dict.fromkeys(cols, self.swapped(partner, len(holdout), seed, relabel)))
            own, other = own.mask(swap, other), other.mask(swap, own)
        train = training.assign(**{c: own[c].to_numpy() for c in cols})
        control = training.assign(**{c: other[c].to_numpy() for c in cols})
        return data.with_original(train), data.with_original(control)

    def mixtures(self, data: EvalData, executor: Executor, seed: int, relabellings: int) -> Mixtures:
        """Every group is a mixture of the observed footings: record i carries its own synthesised
        values or its partner's (a training group takes the partner's where swapped, its holdout
        group the others)."""
        train, control = self.split(data, executor, seed)
        _, training, holdout, partner, _ = self._partnered(data, executor, seed)  # pandas frames, on the client
        swaps = [np.zeros(len(training), dtype=bool)]
        swaps += [self.swapped(partner, len(holdout), seed, r) for r in range(1, relabellings + 1)]
        return train, control, [t for s in swaps for t in (s, ~s)]
