"""Partial synthesis with synthpop ``syn()`` semantics: some variables synthesised, the rest kept.

Row ``i`` of every synthetic set belongs to record ``i``: kept variables hold the original
values, synthesised ones are drawn variable by variable in the visit sequence, each from a
model of the original data whose predictors take their *current synthetic* values (kept
variables: the original ones; synthesised ones: the values already drawn for this set).
Specification: docs/synthesis.md ("Partial synthesis"), following synthpop 1.9-2's syn().

Preparation (synthpop's ``padMis``): a factor with missing values gets the explicit level
``NAtemp`` (missingness is modelled like any level); a numeric variable with missing values or
special codes (the schema's ``missing_codes``, synthpop ``cont.na``) that takes part in a model
is split into a numeric part (0 at the special rows) and a factor saying which special value
(or "ordinary") each row has. Synthesising it draws the factor first, then the numeric part
for the ordinary rows only, from a model fitted to the ordinary rows.

Methods (``synthpop::syn.<method>`` with ``proper = FALSE``):

* ``cart``: rpart tree (:mod:`pipeline.rpart`, R-identical), ``anova`` for
  numeric and ``class`` for factor variables, ``minbucket = 5``, ``cp = 1e-8``.  A numeric
  value is a donor drawn with equal probability and replacement from the original values of
  the leaf the synthetic record falls into; a factor level is drawn with the leaf's class
  probabilities.
* ``sample``: values drawn with replacement from the original values.
* ``norm``, ``normrank``, ``logreg``, ``polyreg``: :mod:`pipeline.synth.partial.parametric`.

The models depend on the original data and the settings only, so they are fitted once and
shared by the m sets (synthpop refits them per set; only rpart's cross-validation random numbers
differ) — and by every synthesis in the same process with the same original and settings but
another seed or m (the repetitions of a study, :func:`fitted_models`).  Set ``i`` draws from its
own stream ``SeedSequence(seed, spawn_key=(i,))``, so the sets do not depend on how many workers
make them; they are made as parallel tasks by the executor.

Before each model the predictors pass synthpop's ``remove.lindep.syn``
(:mod:`pipeline.synth.partial.lindep`).

Variables in a model whose codes are collinear (|r| >= 0.99999) are derived from the one
visited first (synthpop's ``collinear`` method, :func:`collinear`).

Differences from R: R's random numbers (Mersenne-Twister, ``sample()``) are not reproduced,
so the sets agree with R's in distribution, not value by value; ``proper = TRUE`` is not
offered; of synthpop's smoothings only ``density``.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from pipeline import notices
from pipeline.data.dataset import Dataset
from pipeline.data.schema import Schema
from pipeline.errors import ParameterError
from pipeline.evaluation.base import Result, Row
from pipeline.evaluation.data import EvalData, Frame, as_eval_data
from pipeline.evaluation.execution import Executor
from pipeline.evaluation.reporting import ReportSection
from pipeline.fingerprint import fingerprint
from pipeline.synth.base import OutputFormat, Synthesiser
from pipeline.synth.partial.lindep import lindep_keep
from pipeline.synth.partial.parametric import ParametricFit, fit_parametric
from pipeline.synth.partial.params import FACTOR_METHODS, NUMERIC_METHODS, PartialParams
from pipeline.synth.partial.smooth import smooth_density
from pipeline.synth.release import write_release

if TYPE_CHECKING:
    from pipeline.rmodels.rpart import Tree

#: synthpop's ``collinear.out`` threshold of |correlation|
COLLINEAR = 0.99999
#: synthpop's ``maxfaclevels``: factors in a model may have at most this many levels
MAX_FACTOR_LEVELS = 60
NA_LEVEL = "NAtemp"


# ---------------------------------------------------------------------------------------------
# the plan: methods, visit sequence, predictor matrix (schema only)
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Plan:
    """What will be synthesised, in which order, from which predictors.

    Attributes
    ----------
    variables : tuple of str
        Output columns in order.
    method : dict
        Method of every output variable (``""`` kept).
    visit_sequence : tuple of str
    predictors : dict
        Predictors of every synthesised variable, in column order.
    dropped : dict
        Predictors dropped because they are synthesised after the variable they would predict.
    notes : tuple of str
        One-line warnings about the plan for the user (a dropped predictor, a synthesised
        variable drawn independently of the kept variables): :func:`warn_plan` logs them.
    """

    variables: tuple[str, ...]
    method: dict[str, str]
    visit_sequence: tuple[str, ...]
    predictors: dict[str, tuple[str, ...]]
    dropped: dict[str, tuple[str, ...]] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    @property
    def synthesised(self) -> list[str]:
        """Synthesised variables in visit order."""
        return [v for v in self.visit_sequence if self.method[v] != ""]

    def to_dict(self) -> dict[str, Any]:
        return {
            "variables": list(self.variables),
            "method": dict(self.method),
            "visit_sequence": list(self.visit_sequence),
            "predictor_matrix": {v: list(p) for v, p in self.predictors.items()},
            "dropped_predictors": {v: list(p) for v, p in self.dropped.items()},
        }


def plan_synthesis(schema: Schema, params: PartialParams) -> Plan:
    """Resolve the method vector, visit sequence and predictor matrix against ``schema``.

    Raises
    ------
    ParameterError
        A variable not in the data (in ``variables``, ``method``, ``keep``,
        ``visit_sequence`` or as a predictor), a method unknown for the variable's type, a
        synthesised variable not visited, a factor in a model with more than 60 levels.
    """
    where = "the original data"
    variables = list(params.variables) if params.variables is not None else schema.names
    schema.require(variables, "variable", where)
    for what, names in (("method", list(params.method)), ("keep", params.keep)):
        missing = [v for v in names if v not in variables]
        if missing:
            raise ParameterError(f"{what}: variable(s) {', '.join(map(repr, missing))} not in the data's columns")
    method = {v: params.method.get(v, "") for v in variables}
    for v, meth in method.items():
        var = schema[v]
        allowed = FACTOR_METHODS if var.is_factor else NUMERIC_METHODS if var.is_numeric else ("", "sample")
        if meth not in allowed:
            raise ParameterError(
                f"method: {meth!r} is not a method for {v!r} ({var.kind}); use one of "
                f"{', '.join(repr(a) for a in allowed if a)}"
            )
        if meth == "logreg" and len(var.levels or ()) != 2:
            raise ParameterError(f"method: 'logreg' is for factors with 2 levels; {v!r} has {len(var.levels or ())}")
    for v, how in params.smoothing.items():
        if how and (v not in method or method[v] not in ("cart", "normrank") or not schema[v].is_numeric):
            raise ParameterError(
                f"smoothing: {v!r} must be a numeric variable synthesised by 'cart' or 'normrank' to be smoothed"
            )
    if params.visit_sequence == "kept_first":
        visit = [v for v in variables if method[v] == ""] + [v for v in variables if method[v] != ""]
    else:
        visit = list(params.visit_sequence) if params.visit_sequence is not None else variables
    unknown = [v for v in visit if v not in variables]
    if unknown:
        raise ParameterError(f"visit_sequence: variable(s) {', '.join(map(repr, unknown))} not in the data's columns")
    if len(set(visit)) != len(visit):
        raise ParameterError("visit_sequence: a variable is visited twice")
    not_visited = [v for v in params.synthesised if v not in visit]
    if not_visited:
        raise ParameterError(f"visit_sequence: synthesised variable(s) {', '.join(map(repr, not_visited))} not visited")
    position = {v: i for i, v in enumerate(visit)}
    predictors: dict[str, tuple[str, ...]] = {}
    dropped: dict[str, tuple[str, ...]] = {}
    notes: list[str] = []
    for v in visit:
        if method[v] == "":
            continue
        if params.predictors is not None and v in params.predictors:
            given = params.predictors[v]
            outside = [p for p in given if p not in variables]
            if outside:
                raise ParameterError(f"predictors of {v!r}: {', '.join(map(repr, outside))} not in the data's columns")
            if v in given:
                raise ParameterError(f"predictors of {v!r}: a variable cannot predict itself")
            # synthpop: a synthesised predictor must be synthesised before the variable
            late = [p for p in given if method[p] != "" and (p not in position or position[p] > position[v])]
            if late:
                dropped[v] = tuple(late)
                notes.append(f"predictors of {v!r}: dropped {', '.join(late)} (synthesised after it)")
            chosen = {p for p in given if p not in late}
        elif method[v] == "sample":
            chosen = set()
        else:
            chosen = {p for p in visit if position[p] < position[v]}
        predictors[v] = tuple(p for p in variables if p in chosen)
    notes += _few_kept_predictors(method, predictors, set(params.predictors or ()))
    for v, preds in predictors.items():
        for p in (v, *preds):
            var = schema[p]
            if not (var.is_factor or var.is_numeric):
                role = "synthesised" if p == v else f"used as a predictor of {v!r}"
                raise ParameterError(
                    f"{p!r} ({var.kind}) cannot be {role}: a model takes factors and numbers; give it kind "
                    f"'factor' in the schema{'' if p == v else ', or leave it out of the predictors (predictors: '}"
                    f"{'' if p == v else f'{{{v}: [...]}} or a visit_sequence without it)'}"
                )
            if var.is_factor and len(var.levels or ()) > MAX_FACTOR_LEVELS:
                raise ParameterError(
                    f"{p!r} has {len(var.levels or ())} levels; a factor in a model may have at most "
                    f"{MAX_FACTOR_LEVELS} (synthpop's maxfaclevels)"
                )
    return Plan(tuple(variables), method, tuple(visit), predictors, dropped, tuple(notes))


def _few_kept_predictors(method: dict[str, str], predictors: dict[str, tuple[str, ...]], given: set[str]) -> list[str]:
    """A note for every synthesised variable whose default predictors hold fewer than half of the
    kept variables: synthpop's default predictor matrix gives a variable only those visited
    before it, so a synthesised early column is drawn with little regard to the kept variables
    (and its disclosure risk understated). Variables drawn by ``sample`` or with their predictors
    named are as the user asked."""
    kept = [v for v, meth in method.items() if meth == ""]
    notes = []
    for v, preds in predictors.items():
        used = [p for p in preds if p in kept]
        if method[v] == "sample" or v in given or 2 * len(used) >= len(kept):
            continue
        what = (
            "no predictors (drawn independently of the kept variables)"
            if not preds
            else f"{len(used)} of the {len(kept)} kept variables as predictors ({', '.join(used) or 'none'})"
        )
        notes.append(
            f"{v!r} is synthesised with {what}; visit the kept ones first (visit_sequence: kept_first) "
            "or name its predictors"
        )
    return notes


def warn_plan(plan: Plan) -> None:
    """Warn the plan's notes (:func:`pipeline.notices.warn`)."""
    for note in plan.notes:
        notices.warn(note)


def plan_lines(plan: Plan) -> list[str]:
    """The predictor matrix for people: one line per synthesised variable, in visit order."""
    return [
        f"{v} ({plan.method[v]}) <- {', '.join(plan.predictors.get(v, ())) or 'no predictors'}"
        for v in plan.synthesised
    ]


# ---------------------------------------------------------------------------------------------
# encoding (padMis)
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Coding:
    """How one variable is held in model columns.

    A factor: codes 1..L (+ ``NAtemp`` as L+1 when the original has missing values).  A
    numeric variable with special values: a numeric part and an indicator factor whose levels
    are the special codes (sorted), ``ordinary``, and ``NAtemp`` when NA occurs.
    """

    name: str
    kind: str  # "factor", "numeric", "padded", "other"
    ncat: int = 0
    levels: tuple[str, ...] = ()
    specials: tuple[float, ...] = ()  # padded: the special codes occurring, in level order
    has_na: bool = False

    @property
    def ordinary(self) -> int:
        """Indicator code (1-based) of ordinary values of a padded variable."""
        return len(self.specials) + 1


def _coding(name: str, values: pd.Series, schema: Schema) -> _Coding:
    var = schema[name]
    if var.is_factor:
        has_na = bool(values.isna().any())
        levels = tuple(var.levels or ())
        return _Coding(name, "factor", len(levels) + has_na, levels + ((NA_LEVEL,) if has_na else ()), has_na=has_na)
    if not var.is_numeric:
        return _Coding(name, "other")
    x = values.to_numpy(dtype=float)
    codes = tuple(sorted(c for c in var.missing_codes if np.any(x == c)))
    has_na = bool(np.isnan(x).any())
    if not codes and not has_na:
        return _Coding(name, "numeric")
    return _Coding(name, "padded", len(codes) + 1 + has_na, specials=codes, has_na=has_na)


def _encode(values: pd.Series, c: _Coding) -> dict[str, np.ndarray]:
    """Model columns of a variable: ``{name: values}`` and, for a padded one, ``{name.NA: codes}``."""
    if c.kind == "factor":
        codes = values.cat.codes.to_numpy().astype(float) + 1.0
        codes[codes == 0] = c.ncat  # NA -> NAtemp
        return {c.name: codes}
    if c.kind == "numeric":
        return {c.name: values.to_numpy(dtype=float)}
    x = values.to_numpy(dtype=float)
    ind = np.full(len(x), float(c.ordinary))
    for i, code in enumerate(c.specials):
        ind[x == code] = i + 1.0
    if c.has_na:
        ind[np.isnan(x)] = float(c.ncat)
    return {c.name: np.where(ind == c.ordinary, x, 0.0), f"{c.name}.NA": ind}


def _decode(cols: dict[str, np.ndarray], c: _Coding, schema: Schema) -> Any:
    var = schema[c.name]
    if c.kind == "factor":
        raw = cols[c.name]
        codes = np.where(np.isnan(raw), 0.0, raw).astype(np.int64) - 1  # NaN (no collinear match) -> NA
        if c.has_na:
            codes[codes == len(c.levels) - 1] = -1
        return pd.Categorical.from_codes(codes, dtype=var.dtype)
    if c.kind == "numeric":
        return cols[c.name]
    ind = cols[f"{c.name}.NA"].astype(np.int64)
    special = np.array([*c.specials, np.nan, np.nan])[np.clip(ind - 1, 0, None)]
    special[ind == c.ordinary] = np.nan
    return np.where(ind == c.ordinary, cols[c.name], special)


def _predictor_columns(preds: Sequence[str], codings: dict[str, _Coding]) -> list[str]:
    """Model columns of predictors: unpadded ones in column order, then each padded variable's
    numeric part and indicator (padMis appends them at the end of the data)."""
    plain = [p for p in preds if codings[p].kind != "padded"]
    padded = [col for p in preds if codings[p].kind == "padded" for col in (p, f"{p}.NA")]
    return plain + padded


def _ncat(col: str, codings: dict[str, _Coding]) -> int:
    if col.endswith(".NA") and col[:-3] in codings and codings[col[:-3]].kind == "padded":
        return codings[col[:-3]].ncat
    return codings[col].ncat if codings[col].kind == "factor" else 0


# ---------------------------------------------------------------------------------------------
# models: one per synthesised model column
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Step:
    """Synthesise one model column with ``method`` from ``predictors``.

    ``ordinary`` (indicator column, code) restricts a padded variable's numeric part to the
    rows whose synthetic indicator says ordinary (its model was fitted to those rows only).
    """

    column: str
    method: str
    predictors: tuple[str, ...]
    observed: np.ndarray
    tree: Tree | None = None
    #: class tree: the original code (1-based) of each class
    classes: np.ndarray | None = None
    #: anova tree: original values ordered by leaf; the leaves, each one's first position, count
    donors: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None
    parametric: ParametricFit | None = None
    ordinary: tuple[str, int] | None = None
    #: collinear: the original values of the variable it is derived from
    source: np.ndarray | None = None
    #: synthpop's smoothing = "density" of the drawn values
    smooth: bool = False
    #: cart whose predictors are all kept variables: the node each record falls into (the same
    #: in every set, so found once)
    nodes: np.ndarray | None = None


def _fit_step(
    column: str,
    method: str,
    preds: list[str],
    cols: dict[str, np.ndarray],
    codings: dict[str, _Coding],
    params: PartialParams,
    ordinary: tuple[str, int] | None = None,
) -> _Step:
    rows = None if ordinary is None else np.flatnonzero(cols[ordinary[0]] == ordinary[1])
    y = cols[column] if rows is None else cols[column][rows]
    if not preds or len(np.unique(y)) <= 1:
        method = "sample"  # synthpop: no predictor -> sample; a single value stays that value
    if method == "sample":
        return _Step(column, method, (), y, ordinary=ordinary)
    x = np.column_stack([cols[p] if rows is None else cols[p][rows] for p in preds])
    ncat = _ncat(column, codings)
    if method == "cart":  # the parametric methods check their dummy columns (fit_parametric)
        keep = lindep_keep(x, np.unique(y, return_inverse=True)[1] if ncat else y)
        if not keep.any():
            return _Step(column, "sample", (), y, ordinary=ordinary)
        preds, x = [p for p, k in zip(preds, keep, strict=True) if k], x[:, keep]
    pcat = np.array([_ncat(p, codings) for p in preds], dtype=np.int64)
    step = _Step(column, method, tuple(preds), y, ordinary=ordinary)
    # rpart's numba kernels: loaded by the first fit, not by validating a task
    from pipeline.rmodels.rpart import fit_tree

    if method == "cart" and ncat == 0:
        tree = fit_tree(x, pcat, y, "anova", cp=params.cart_cp, minbucket=params.cart_minbucket)
        order = np.argsort(tree.where, kind="stable")
        leaves, start, count = np.unique(tree.where[order], return_index=True, return_counts=True)
        return replace(step, tree=tree, donors=(y[order], leaves, start, count))
    if method == "cart":
        classes, yk = np.unique(y.astype(np.int64), return_inverse=True)  # unused levels dropped
        tree = fit_tree(
            x, pcat, yk, "class", n_classes=len(classes), cp=params.cart_cp, minbucket=params.cart_minbucket
        )
        return replace(step, tree=tree, classes=classes)
    return replace(step, parametric=fit_parametric(method, x, pcat, y, ncat))


def _descend_randomly(tree: Tree, nodes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """synthpop: a record stopped at an internal node goes to child 2j or 2j+1 with probability
    1/2 per step, one draw per distinct internal node (all its records share the path)."""
    leaves = tree.node[tree.is_leaf]
    leaf_set = set(leaves.tolist())
    out = nodes.copy()
    for j in np.unique(nodes[~np.isin(nodes, leaves)]):
        k = int(j)
        while k not in leaf_set:
            k = 2 * k + int(rng.random() >= 0.5)
        out[nodes == j] = k
    return out


def _categorical(prob: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One class per row with the row's probabilities (inverse CDF of one uniform per row)."""
    u = rng.random(len(prob))
    cum = np.cumsum(prob, axis=1)
    return np.minimum((cum < u[:, None] * cum[:, -1:]).sum(axis=1), prob.shape[1] - 1)


def _predictor_rows(step: _Step, cols: dict[str, np.ndarray], rows: np.ndarray) -> np.ndarray:
    """The current values of a step's predictors at ``rows``, one column per predictor."""
    return np.column_stack([cols[p][rows] for p in step.predictors])


def _draw(step: _Step, cols: dict[str, np.ndarray], rng: np.random.Generator) -> np.ndarray:
    """The synthetic column: drawn rows replaced, the others keep their current values."""
    out = cols[step.column].copy()
    rows = np.arange(len(out)) if step.ordinary is None else np.flatnonzero(cols[step.ordinary[0]] == step.ordinary[1])
    if step.ordinary is not None:
        out[:] = 0.0  # the numeric part of special rows
    if rows.size == 0:
        return out
    if step.method == "sample":
        out[rows] = step.observed[rng.integers(0, len(step.observed), size=rows.size)]
        return out
    if step.method == "collinear":  # syn.collinear: y of the first original record with that value
        assert step.source is not None
        values, first = np.unique(step.source, return_index=True)
        xp = cols[step.predictors[0]][rows]
        pos = np.clip(np.searchsorted(values, xp), 0, len(values) - 1)
        out[rows] = np.where(values[pos] == xp, step.observed[first[pos]], np.nan)
        return out
    if step.tree is not None:
        nodes = step.nodes if step.nodes is not None else step.tree.leaves(_predictor_rows(step, cols, rows))
        if not step.tree.is_leaf[np.searchsorted(step.tree.node, nodes)].all():
            nodes = _descend_randomly(step.tree, nodes, rng)
        if step.donors is not None:
            values, leaves, start, count = step.donors
            pos = np.searchsorted(leaves, nodes)
            out[rows] = values[start[pos] + rng.integers(0, count[pos])]
            if step.smooth:
                out[rows] = smooth_density(out[rows], step.observed, rng)
        else:
            assert step.classes is not None
            out[rows] = step.classes[_categorical(step.tree.class_prob(nodes), rng)]
        return out
    assert step.parametric is not None
    out[rows] = step.parametric.draw(_predictor_rows(step, cols, rows), rng)
    if step.smooth:
        out[rows] = smooth_density(out[rows], step.observed, rng)
    return out


# ---------------------------------------------------------------------------------------------
# the synthesiser
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Prepared:
    """Everything a synthetic set needs: the original (its output columns), its model columns,
    the codings and the fitted steps in visit order."""

    original: pd.DataFrame
    columns: dict[str, np.ndarray]
    codings: dict[str, _Coding]
    steps: tuple[_Step, ...]
    schema: Schema
    #: the plan after the collinearity check
    plan: Plan

    def tree_sizes(self) -> dict[str, tuple[int, int]]:
        """(nodes, leaves) of every tree, by model column."""
        return {s.column: (len(s.tree.node), int(s.tree.is_leaf.sum())) for s in self.steps if s.tree is not None}


def prepare(frame: pd.DataFrame, schema: Schema, plan: Plan, params: PartialParams) -> Prepared:
    """Encode the original (padMis) and fit every synthesised variable's model."""
    used = set(plan.synthesised) | {p for ps in plan.predictors.values() for p in ps}
    codings: dict[str, _Coding] = {}
    cols: dict[str, np.ndarray] = {}
    for v in plan.variables:
        c = _coding(v, frame[v], schema)
        if c.kind == "padded" and v not in used:
            c = _Coding(v, "numeric")  # padMis applies only to variables in a model
        codings[v] = c
        if c.kind != "other":
            cols.update(_encode(frame[v], c))
    plan = collinear(plan, cols, codings)
    steps = []
    for v in plan.synthesised:
        preds = _predictor_columns(plan.predictors[v], codings)
        meth = plan.method[v]
        c = codings[v]
        if meth == "collinear":
            (first,) = plan.predictors[v]
            steps.append(_Step(v, meth, (first,), cols[v], source=cols[first]))
        elif c.kind == "padded":
            ind_method = meth if meth in ("cart", "sample") else ("logreg" if c.ncat == 2 else "polyreg")
            steps.append(_fit_step(f"{v}.NA", ind_method, preds, cols, codings, params))
            steps.append(_fit_step(v, meth, preds, cols, codings, params, (f"{v}.NA", c.ordinary)))
        else:
            steps.append(_fit_step(v, meth, preds, cols, codings, params))
        if params.smoothing.get(v) == "density" and steps[-1].method in ("cart", "normrank"):
            steps[-1] = replace(steps[-1], smooth=True)
    drawn = {s.column for s in steps}
    steps = [_with_fixed_nodes(s, cols, drawn) for s in steps]
    original = frame[list(plan.variables)].reset_index(drop=True)
    return Prepared(original, cols, codings, tuple(steps), schema.select(list(plan.variables)), plan)


#: syntheses whose fitted models a process keeps (:func:`fitted_models`)
FITTED_KEPT = 4
_fitted: OrderedDict[str, Prepared] = OrderedDict()
_fitted_lock = threading.Lock()


def _fit_key(frame: pd.DataFrame, schema: Schema, plan: Plan, params: PartialParams) -> str:
    """What the fitted models depend on: the records, the schema, the plan and the model settings."""
    settings = params.model_dump(mode="json", include={"cart_cp", "cart_minbucket", "smoothing"})
    records = pd.util.hash_pandas_object(frame, index=False).to_numpy()
    parts = {"records": records, "columns": list(frame.columns), "schema": schema.to_dict(), "plan": plan.to_dict()}
    return fingerprint({**parts, "settings": settings}, length=64)


def fitted_models(frame: pd.DataFrame, schema: Schema, plan: Plan, params: PartialParams) -> Prepared:
    """:func:`prepare`, reusing the models this process last fitted to the same records with the
    same plan and model settings (the seed and m do not enter): the repetitions of a study fit
    their trees once per worker, not once per repetition.  The :data:`FITTED_KEPT` most
    recently used are kept."""
    key = _fit_key(frame, schema, plan, params)
    with _fitted_lock:
        if key in _fitted:
            _fitted.move_to_end(key)
            return _fitted[key]
    prepared = prepare(frame, schema, plan, params)
    with _fitted_lock:
        _fitted[key] = prepared
        while len(_fitted) > FITTED_KEPT:
            _fitted.popitem(last=False)
    return prepared


def _with_fixed_nodes(step: _Step, cols: dict[str, np.ndarray], drawn: set[str]) -> _Step:
    """A cart step whose predictors are not ``drawn`` in any set (kept variables) with the node
    of every record found once; other steps as they are."""
    if step.tree is None or step.ordinary is not None or drawn.intersection(step.predictors):
        return step
    return replace(step, nodes=step.tree.leaves(np.column_stack([cols[p] for p in step.predictors])))


def collinear(plan: Plan, cols: dict[str, np.ndarray], codings: dict[str, _Coding]) -> Plan:
    """synthpop's collinearity check (``collinear.out``): among the variables in a model, each
    group whose codes correlate with |r| >= 0.99999 keeps its variable visited first, and the
    others — kept ones included, as in synthpop — become ``collinear``: each takes, for the
    synthetic value of that first variable, the value of the first original record having it."""
    used = set(plan.synthesised) | {p for ps in plan.predictors.values() for p in ps}
    names = [v for v in plan.variables if v in used and codings[v].kind in ("factor", "numeric")]
    if len(names) < 2:
        return plan
    with np.errstate(invalid="ignore", divide="ignore"):
        z = pd.DataFrame({v: cols[v] for v in names}).corr().to_numpy()  # pairwise complete
    hit = np.abs(np.nan_to_num(z, nan=0.0)) >= COLLINEAR
    position = {v: i for i, v in enumerate(plan.visit_sequence)}
    method, predictors = dict(plan.method), dict(plan.predictors)
    seen: set[tuple[bool, ...]] = set()
    for i in range(len(names)):
        row = tuple(bool(h) for h in hit[i])
        new = row not in seen
        seen.add(row)
        group = [v for v, h in zip(names, row, strict=True) if h]
        if not new or len(group) < 2 or any(v not in position for v in group):
            continue
        first = min(group, key=position.__getitem__)
        notices.warn(f"variables {', '.join(group)} are collinear: those visited after {first} are derived from it")
        for v in group:
            if v != first:
                method[v] = "collinear"
                predictors = {k: tuple(p for p in ps if p != v) for k, ps in predictors.items()}
                predictors[v] = (first,)
    if method == plan.method:
        return plan
    return replace(plan, method=method, predictors=predictors)


def synthetic_set(prepared: Prepared, entropy: int, set_index: int) -> pd.DataFrame:
    """Synthetic set ``set_index`` from its own stream ``SeedSequence(entropy, spawn_key=(i,))``,
    the same whichever worker makes it."""
    rng = np.random.default_rng(np.random.SeedSequence(entropy, spawn_key=(set_index,)))
    cols = dict(prepared.columns)
    for step in prepared.steps:
        cols[step.column] = _draw(step, cols, rng)
    out = prepared.original.copy()
    for v in {s.column.removesuffix(".NA") for s in prepared.steps}:
        out[v] = _decode(cols, prepared.codings[v], prepared.schema)
    return out


@dataclass(frozen=True, eq=False)
class PartialSynthesisResult(Result):
    """m partially synthetic sets, row-aligned with the original.

    Attributes
    ----------
    synthetic : list of pandas DataFrame
        The m sets in ``schema``'s in-memory form (kept columns identical to the original).
    schema : Schema
    plan : Plan
        Methods, visit sequence and predictor matrix used.
    tree_sizes : dict
        (nodes, leaves) of every cart tree, by model column.
    n, seed : int
    params : PartialParams
    """

    synthetic: list[pd.DataFrame]
    schema: Schema
    plan: Plan
    tree_sizes: dict[str, tuple[int, int]]
    n: int
    seed: int
    params: PartialParams

    @property
    def synthesised(self) -> frozenset[str]:
        """The variables synthesised (method not ``""``): passed as ``synthetic`` to a measure's
        function, the result tells it which variables were kept (synthpop's ``incomplete``)."""
        return frozenset(self.params.synthesised)

    def datasets(self, prefix: str = "syn") -> list[Dataset]:
        """The synthetic sets as :class:`Dataset` objects named ``syn1``, ``syn2``, ..."""
        return [Dataset.from_pandas(f, self.schema, name=f"{prefix}{i + 1}") for i, f in enumerate(self.synthetic)]

    def rows(self) -> list[Row]:
        """n and m, and the size of every cart tree (params ``{"variable": column}``)."""
        trees = [
            Row("original", measure, float(value), {"variable": col})
            for col, (nodes, leaves) in self.tree_sizes.items()
            for measure, value in (("cart_nodes", nodes), ("cart_leaves", leaves))
        ]
        return [Row("original", "n", float(self.n)), Row("original", "m", float(len(self.synthetic))), *trees]

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": "partial synthesis (synthpop syn())",
            "n": self.n,
            "m": len(self.synthetic),
            "seed": self.seed,
            "params": self.params.model_dump(mode="json"),
            **self.plan.to_dict(),
            "warnings": list(self.plan.notes),
            "trees": {c: {"nodes": n, "leaves": k} for c, (n, k) in self.tree_sizes.items()},
        }

    def write(
        self, out_dir: str | Path, overwrite: bool = False, formats: Sequence[OutputFormat] | None = None
    ) -> Path:
        """Write ``synthetic/syn<i>.{parquet,csv}`` (+ ``.schema.json``) and ``synthesis_report.json``
        into ``out_dir`` atomically (a temporary sibling renamed at the end)."""
        formats = formats or self.params.output_format
        report = ("synthesis_report.json", self.to_dict())
        return write_release(out_dir, self.synthetic, self.schema, formats, report, overwrite)


def partial_schema(original: Dataset, params: PartialParams) -> Schema:
    """The schema of the sets ``params`` would make (the original's, restricted to ``variables``),
    after every check that needs no synthesis (:func:`plan_synthesis`)."""
    plan = plan_synthesis(original.schema, params)
    warn_plan(plan)
    return original.schema.select(list(plan.variables))


def synthesise_partial_frame(
    frame: Frame, schema: Schema, params: PartialParams, executor: Executor | None = None
) -> PartialSynthesisResult:
    """:func:`synthesise_partial` on a frame in ``schema``'s in-memory form."""
    executor = executor or Executor.current()
    plan = plan_synthesis(schema, params)
    warn_plan(plan)
    data = executor.collect(EvalData((frame,), schema))
    original = data.original
    if len(original) == 0:
        raise ParameterError("the original data set has no records")
    prepared = fitted_models(original, schema, plan, params)
    root = np.random.SeedSequence(params.seed)
    entropy = int(root.entropy)
    sets = executor.map_tasks(synthetic_set, [(entropy, i) for i in range(params.m)], shared=[prepared])
    return PartialSynthesisResult(
        synthetic=list(sets),
        schema=prepared.schema,
        plan=prepared.plan,
        tree_sizes=prepared.tree_sizes(),
        n=len(original),
        seed=entropy,
        params=params,
    )


def synthesise_partial(
    original: Dataset | Frame,
    params: PartialParams | Mapping[str, Any] | None = None,
    executor: Executor | None = None,
    *,
    schema: Schema | None = None,
    **settings: Any,
) -> PartialSynthesisResult:
    """Partially synthetic versions of ``original`` with synthpop ``syn()`` semantics.

    Parameters
    ----------
    original : Dataset or pandas/Dask DataFrame
        A frame is cast to ``schema`` (a pandas frame without one: the schema inferred, as the
        measures' functions do: :func:`~pipeline.evaluation.data.as_eval_data`).
    params : PartialParams or mapping, optional
        The settings; else given as keywords (``method={"Income": "cart"}, m=5, seed=1``).
    executor : Executor, optional
        Makes the m sets as parallel tasks on its cluster (the original is collected into
        memory: the models need all records); default :meth:`Executor.current`.
    schema : Schema, optional
        The schema of a frame (a Dataset carries its own).

    Returns
    -------
    PartialSynthesisResult

    Raises
    ------
    ParameterError
        See :func:`plan_synthesis`; settings given both as ``params`` and as keywords; an empty original.
    """
    if params is not None and settings:
        raise ParameterError("give the settings either as params or as keywords, not both")
    params = PartialSynthesiser.parse(params if params is not None else settings)
    if isinstance(original, Dataset) and schema is None:
        return synthesise_partial_frame(original.frame, original.schema, params, executor)
    data = as_eval_data(original, schema=schema, require_synthetic=False)
    return synthesise_partial_frame(data.original, data.schema, params, executor)


class PartialSynthesiser(Synthesiser):
    """Partial synthesis (synthpop ``syn()``) as a :class:`~pipeline.synth.base.Synthesiser`."""

    kind = "partial"
    params_model = PartialParams
    collects_original = True
    row_aligned = True
    description = "partially synthetic data with synthpop syn() semantics (cart, sample, norm, normrank, ...)"
    report_section = ReportSection(
        "Partial synthesis (synthpop syn(): the variables not synthesised are released unchanged)",
        "pipeline.synth.section:synthesis_section",
        anchor="synthesis-partial",
    )
    row_measures = frozenset({"n", "m", "cart_nodes", "cart_leaves"})
    params: PartialParams

    def schema_of(self, original: Dataset, executor: Executor) -> Schema:
        return partial_schema(original, self.params)

    def plan_lines(self, schema: Schema) -> list[str]:
        return plan_lines(plan_synthesis(schema, self.params))

    def synthesised_variables(self) -> frozenset[str]:
        return frozenset(self.params.synthesised)

    def synthesise_frame(self, frame: Frame, schema: Schema, executor: Executor) -> PartialSynthesisResult:
        return synthesise_partial_frame(frame, schema, self.params, executor)
