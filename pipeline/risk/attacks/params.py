"""Parameters of the ``linkability`` and ``inference`` measures (the only validation of them)."""

from __future__ import annotations

from pydantic import Field, field_validator, model_validator

from pipeline.config_io import Seed
from pipeline.evaluation.base import Params


class AttackParams(Params):
    """What every attack takes.

    Attributes
    ----------
    n_attacks : int or None
        Records attacked in the training records and in the holdout (each drawn without
        replacement, seeded); None attacks every record.  A set with fewer records is attacked
        in full (the rows give the number of attacks of each).
    seed : int
    confidence_level : float
        Level of the Wilson intervals and of the risk's interval.
    block_on : list of str
        Factors the attacker knows exactly (added to every auxiliary column set): a target's
        nearest synthetic records are searched only among those with the same values of these
        (on key blocks of them, so the search scales with the block sizes).
    """

    n_attacks: int | None = Field(500, ge=1)
    seed: Seed = 0
    confidence_level: float = Field(0.95, gt=0, lt=1)
    block_on: list[str] = Field(default_factory=list)


def _distinct(names: list[str]) -> list[str]:
    return list(dict.fromkeys(names))


class LinkabilityParams(AttackParams):
    """``aux_cols``: the two column sets the attacker holds; ``n_neighbors``: synthetic neighbours
    of each half that may link them."""

    aux_cols: tuple[list[str], list[str]]
    n_neighbors: int = Field(1, ge=1)

    @field_validator("aux_cols")
    @classmethod
    def _two_non_empty(cls, value: tuple[list[str], list[str]]) -> tuple[list[str], list[str]]:
        if not value[0] or not value[1]:
            raise ValueError("both sets of auxiliary columns need at least one variable")
        return (_distinct(value[0]), _distinct(value[1]))

    def variables(self) -> list[str]:
        return _distinct([*self.block_on, *self.aux_cols[0], *self.aux_cols[1]])


class InferenceParams(AttackParams):
    """``aux_cols``: what the attacker knows; ``secret``: what it guesses; ``tolerance``: a numeric
    guess is right when ``|guess - secret| <= tolerance * |guess|`` (anonymeter's relative rule)."""

    aux_cols: list[str] = Field(min_length=1)
    secret: str
    tolerance: float = Field(0.05, ge=0)

    @field_validator("aux_cols")
    @classmethod
    def _unique(cls, value: list[str]) -> list[str]:
        return _distinct(value)

    @model_validator(mode="after")
    def _secret_not_known(self) -> InferenceParams:
        if self.secret in self.aux_cols or self.secret in self.block_on:
            raise ValueError(f"the secret {self.secret!r} cannot be one of the auxiliary or block_on columns")
        return self

    def variables(self) -> list[str]:
        return _distinct([*self.block_on, *self.aux_cols, self.secret])
