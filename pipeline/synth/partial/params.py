"""Settings of the partial synthesiser (``synthesise: {kind: partial, ...}`` in a task file)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from pipeline.errors import ParameterError

Method = Literal["", "sample", "cart", "normrank", "norm", "logreg", "polyreg"]
#: methods synthpop accepts for a factor / a numeric variable
FACTOR_METHODS: tuple[str, ...] = ("", "sample", "cart", "logreg", "polyreg")
NUMERIC_METHODS: tuple[str, ...] = ("", "sample", "cart", "norm", "normrank")
OutputFormat = Literal["parquet", "csv"]


class PartialParams(BaseModel):
    """Parameters of a partial synthesis with synthpop ``syn()`` semantics.

    Attributes
    ----------
    kind : "partial"
        Selects this synthesiser in a task's ``synthesise`` section.
    method : dict of str to method
        Method of each synthesised variable (``sample``, ``cart``, ``norm``, ``normrank``,
        ``logreg``, ``polyreg``); every variable not named is kept (method ``""``).
    keep : list of str
        Variables kept unchanged, stated explicitly (an error if one also has a method).
    variables : list of str, optional
        Columns of the synthetic sets, in order (default: every column of the original).
    visit_sequence : list of str, optional
        Order in which variables are visited (default: ``variables``' order, synthpop's
        ``1:p``). Variables not visited are kept and predict nothing.
    predictors : dict of str to list of str, optional
        Predictors of a synthesised variable (a row of synthpop's ``predictor.matrix``);
        default: every variable visited before it. A synthesised predictor visited after
        the variable is dropped, as synthpop does.
    m : int
        Number of synthetic sets.
    seed : int, optional
        Seed; set ``i`` draws from its own stream ``SeedSequence(seed, spawn_key=(i,))``.
    cart_minbucket, cart_cp : int, float
        ``syn.cart``'s tree settings (``minsplit = 3 * minbucket``).
    smoothing : dict of str to {"", "density"}
        synthpop's ``smoothing`` per numeric variable synthesised by ``cart`` or ``normrank``:
        ``density`` adds normal noise with the Sheather-Jones bandwidth of the drawn values
        (:mod:`pipeline.synth.partial.smooth`); ``""`` (default) none.
    output_format : list of {"parquet", "csv"}
    """

    model_config = ConfigDict(extra="forbid")

    kind: Literal["partial"]
    method: dict[str, Method] = Field(min_length=1)
    keep: list[str] = Field(default_factory=list)
    variables: list[str] | None = None
    visit_sequence: list[str] | None = None
    predictors: dict[str, list[str]] | None = None
    m: int = 1
    seed: int | None = None
    cart_minbucket: int = 5
    cart_cp: float = 1e-8
    smoothing: dict[str, Literal["", "density"]] = Field(default_factory=dict)
    output_format: list[OutputFormat] = Field(default_factory=lambda: ["parquet"])

    @property
    def dp(self) -> None:
        """No differentially private release: a partial synthesis spends no privacy budget."""
        return None

    @property
    def synthesised(self) -> list[str]:
        """The variables with a method other than ``""``, in the order given."""
        return [v for v, meth in self.method.items() if meth != ""]


def check_partial_settings(params: PartialParams) -> None:
    """Checks that need no data.

    Raises
    ------
    ParameterError
        m below 1, a variable both kept and synthesised, no synthesised variable, a tree
        setting out of range, no output format.
    """
    if params.m < 1:
        raise ParameterError(f"m: the number of synthetic sets must be >= 1, got {params.m}")
    both = [v for v in params.keep if params.method.get(v, "") != ""]
    if both:
        raise ParameterError(f"variable(s) {', '.join(map(repr, both))} both kept ('keep') and synthesised ('method')")
    if not params.synthesised:
        raise ParameterError("method: give at least one variable a synthesis method (all are kept)")
    if params.cart_minbucket < 1:
        raise ParameterError(f"cart_minbucket must be >= 1, got {params.cart_minbucket}")
    if params.cart_cp < 0:
        raise ParameterError(f"cart_cp must be >= 0, got {params.cart_cp}")
    if not params.output_format:
        raise ParameterError("output_format: give at least one of 'parquet', 'csv'")
