"""``disclosure()`` and ``multi_disclosure()``: synthpop's functions as thin wrappers of the measure.

Both build :class:`~pipeline.risk.disclosure.measure.DisclosureMeasure` from their arguments (the
one validation: :class:`~pipeline.risk.disclosure.params.DisclosureParams`), take the data
through the one boundary (:func:`~pipeline.evaluation.data.as_eval_data`) and run on an
:class:`~pipeline.evaluation.execution.Executor` (default: the current Dask client, if any),
which alone decides whether to compute in memory or on key blocks
(:mod:`~pipeline.risk.disclosure.compute`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pipeline.data.schema import Schema
from pipeline.evaluation.data import as_eval_data
from pipeline.evaluation.execution import Executor
from pipeline.risk.disclosure.measure import DisclosureMeasure
from pipeline.risk.disclosure.result import DisclosureResult, MultiDisclosureResult


def disclosure(
    original: Any,
    synthetic: Any,
    keys: str | Sequence[str],
    target: str,
    *,
    schema: Schema | None = None,
    denom_lim: int = 5,
    exclude_ov_denom_lim: bool = False,
    not_targetlev: str | Sequence[str] | None = None,
    usetargetNA: bool = True,
    usekeysNA: bool | Sequence[bool] | Mapping[str, bool] = True,
    exclude_keys: Sequence[str] | None = None,
    exclude_keylevs: Sequence[str] | None = None,
    exclude_targetlevs: Sequence[str] | None = None,
    ngroups_target: int | None = None,
    ngroups_keys: int | Sequence[int] | Mapping[str, int] | None = None,
    thresh_1way: Sequence[float] = (50, 90),
    thresh_2way: Sequence[float] = (4, 80),
    cont_na: Mapping[str, float | Sequence[float]] | None = None,
    style: Literal["quantile", "equal"] = "quantile",
    executor: Executor | None = None,
) -> DisclosureResult:
    """Identity and attribute disclosure measures of synthetic data (synthpop ``disclosure``).

    Parameters
    ----------
    original : pandas/Dask DataFrame or Dataset
        The ground truth.
    synthetic : frame, Dataset, or a list of them
        The m synthetic sets (all are used; synthpop may silently keep only the first).
    keys : str or sequence of str
        Quasi-identifiers; re-ordered to the original's column order as in synthpop.
    target : str
        The attribute an intruder wants to learn.
    schema : Schema, optional
        Kinds, levels and special missing codes (default: the Dataset's, else inferred from
        a pandas original).
    denom_lim, exclude_ov_denom_lim
        With ``exclude_ov_denom_lim``, cells with more than ``denom_lim`` records are excluded.
    not_targetlev : str or sequence of str, optional
        Target level(s) excluded everywhere.
    usetargetNA : bool
        False excludes the "Missing" target category (when the original has missing targets).
    usekeysNA : bool, sequence (one per key, in the order of ``keys``) or mapping key -> bool
        False excludes key groups with that key missing.  Bound to key *names*.
    exclude_keys, exclude_keylevs, exclude_targetlevs : sequences of equal length
        (key, key level, target level) triples whose cells are excluded.
    ngroups_target : int, optional
        Group a numeric target into this many quantile groups (>= 2).
    ngroups_keys : int, sequence (in the order of ``keys``) or mapping key -> int, optional
        Groups for numeric keys (0 = do not group).  Bound to key names.
    thresh_1way, thresh_2way : (count, percentage)
        Thresholds of the prior-knowledge flags (spec §9).
    cont_na : mapping variable -> code(s), optional
        Special numeric missing codes (added to / overriding the schema's).
    style : {"quantile", "equal"}
        classInt style of the grouping.
    executor : Executor, optional
        Where to compute (default :meth:`Executor.current`: in memory for up to a million
        records per data set, else on key blocks of the current Dask client).

    Returns
    -------
    DisclosureResult

    Raises
    ------
    ParameterError
        Invalid options, unknown variables, target among the keys, a key with only missing
        values, a level in an ``exclude_*`` option that the original does not have.
    CompatibilityError
        A variable missing in a synthetic set, or a value of a synthetic set that does not fit
        the schema.
    """
    measure = DisclosureMeasure(
        dict(
            keys=keys,
            target=target,
            denom_lim=denom_lim,
            exclude_ov_denom_lim=exclude_ov_denom_lim,
            not_targetlev=not_targetlev,
            usetargetNA=usetargetNA,
            usekeysNA=usekeysNA,
            exclude_keys=exclude_keys,
            exclude_keylevs=exclude_keylevs,
            exclude_targetlevs=exclude_targetlevs,
            ngroups_target=ngroups_target,
            ngroups_keys=ngroups_keys,
            thresh_1way=thresh_1way,
            thresh_2way=thresh_2way,
            cont_na=cont_na,
            style=style,
        )
    )
    (result,) = measure.run(as_eval_data(original, synthetic, schema), executor).results
    return result


def multi_disclosure(
    original: Any,
    synthetic: Any,
    keys: str | Sequence[str],
    targets: Sequence[str] | None = None,
    *,
    schema: Schema | None = None,
    denom_lim: int = 5,
    exclude_ov_denom_lim: bool = False,
    not_targetslev: str | Sequence[str | None] | Mapping[str, str | None] | None = None,
    usetargetsNA: bool | Sequence[bool] | Mapping[str, bool] = True,
    usekeysNA: bool | Sequence[bool] | Mapping[str, bool] = True,
    exclude_keys: Sequence[Sequence[str]] | Mapping[str, Sequence[str]] | None = None,
    exclude_keylevs: Sequence[Sequence[str]] | Mapping[str, Sequence[str]] | None = None,
    exclude_targetlevs: Sequence[Sequence[str]] | Mapping[str, Sequence[str]] | None = None,
    ngroups_targets: int | Sequence[int | None] | Mapping[str, int] | None = None,
    ngroups_keys: int | Sequence[int] | Mapping[str, int] | None = None,
    ident_meas: Literal["repU", "UiOiS", "UiSiO", "baseCAPd"] = "repU",
    attrib_meas: Literal["DiSCO", "DiSDiO", "DCAP"] = "DiSCO",
    thresh_1way: Sequence[float] = (50, 90),
    thresh_2way: Sequence[float] = (4, 80),
    cont_na: Mapping[str, float | Sequence[float]] | None = None,
    style: Literal["quantile", "equal"] = "quantile",
    executor: Executor | None = None,
) -> MultiDisclosureResult:
    """:func:`disclosure` for several targets with one key set (synthpop ``multi.disclosure``).

    The cell counts are shuffled into key blocks once and shared; on the cluster every target
    is an independent set of tasks over the persisted blocks.

    Parameters
    ----------
    targets : sequence of str, optional
        Default: every variable of the original that is not a key.
    not_targetslev, usetargetsNA, ngroups_targets
        One value for all targets, a sequence in the order of ``targets``, or a mapping
        target -> value ("" / None = none).  (The measure's params spell them
        ``not_targetlev``, ``usetargetNA``, ``ngroups_target``; these are aliases.)
    exclude_keys, exclude_keylevs, exclude_targetlevs
        Per target (sequence in target order, or mapping target -> list), the exclusion
        triples of :func:`disclosure` (synthpop passes the target levels as key levels; here
        each goes where it belongs).
    ident_meas : {"repU", "UiOiS", "baseCAPd"}
        Identity measure summarised (``"UiSiO"`` is accepted for ``UiOiS``).
    attrib_meas : {"DiSCO", "DiSDiO", "DCAP"}
        Attribute measure summarised; compared with ``Dorig`` (``CAPd`` for ``DCAP``).
    Other parameters as in :func:`disclosure`.

    Returns
    -------
    MultiDisclosureResult
        ``ident_syn`` and ``attrib_syn`` are means over **all** m synthetic sets (synthpop's
        ``ident.syn`` is the first set's ``repU`` only).
    """
    measure = DisclosureMeasure(
        {
            "keys": keys,
            "targets": targets,
            "denom_lim": denom_lim,
            "exclude_ov_denom_lim": exclude_ov_denom_lim,
            "not_targetslev": not_targetslev,
            "usetargetsNA": usetargetsNA,
            "usekeysNA": usekeysNA,
            "exclude_keys": exclude_keys,
            "exclude_keylevs": exclude_keylevs,
            "exclude_targetlevs": exclude_targetlevs,
            "ngroups_targets": ngroups_targets,
            "ngroups_keys": ngroups_keys,
            "ident_meas": ident_meas,
            "attrib_meas": attrib_meas,
            "thresh_1way": thresh_1way,
            "thresh_2way": thresh_2way,
            "cont_na": cont_na,
            "style": style,
        }
    )
    (result,) = measure.run(as_eval_data(original, synthetic, schema), executor).results
    return result


__all__ = ["disclosure", "multi_disclosure"]
