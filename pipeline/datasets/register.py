"""A population-register-shaped data set and a model-based synthetic twin, generated.

The bundled surveys have a few thousand key combinations; a population register has hundreds
of thousands (sex x single year of age x municipality x education).  This module generates
data of that shape — never a tiling: every record is drawn on its own — written once as
Parquet folders (``original/``, ``syn1/``) with a schema and a manifest, and reused:

* **municipality**: ``N_MUNICIPALITIES`` (300) areas with a heavy-tailed size law
  (Zipf–Mandelbrot, size of the i-th largest ``∝ (i + ZIPF_OFFSET) ** -ZIPF_EXPONENT``: the
  largest holds ~7 % of the people, the smallest ~0.07 %), labels in a seeded random order;
  **region**: the municipalities grouped into ``N_REGIONS`` (12) regions;
* **sex** and **age** (single years 0-100) drawn jointly from a pyramid: Gompertz survival with
  higher male mortality, a baby-boom cohort around 58 and low recent fertility, 105 boys per
  100 girls at birth (so women outnumber men from about 60 on);
* **edu** (8 ordered levels, ``none`` .. ``master_doctorate``): an ordinal probit whose mean
  falls with the birth cohort and rises with the municipality's size, capped by what the age
  allows (no one under 6 has schooling, a bachelor's degree from 21, ...);
* **marital** (single, married, divorced, widowed): ever-married by a logistic curve in age
  (women earlier), widowhood rising steeply in old age (women earlier), divorce in mid-life,
  fewer marriages in large municipalities;
* **employment** (child, student, employed, unemployed, retired, inactive): by age, sex and edu;
* **income**: equivalised household income, log-normal with a life-cycle curve, effects of
  sex, edu, employment and a municipality effect (random plus size), whole units;
* **expenditure**: log-normal, elasticity 0.78 on income, whole units;
* **hhsize**, **tenure**, **citizenship**, **health**, **car**: household size by age and
  marital status; owning or renting by age, marital status, income and size; citizenship by
  size and age; health by age, edu and unemployment; a car by income, size and household.

The **synthetic twin** (``syn1``) is row-aligned with the original: sex, age, municipality and
region are the original's; the other variables are synthesised in the order of
``TWIN_CATEGORICAL``, then income and expenditure (as synthpop's sequential ``syn`` would),
from conditional models *fitted on the original*: each categorical | sex, age and one parent
(empirical conditional distributions, e.g. edu | sex, age, region); log income and log expenditure by least squares
(income on sex, five-year age group, edu, employment, region; expenditure on log income, sex
and age group) with normal residuals of the fitted variance.  The synthetic values are neither
copies nor the generating model's draws (different predictors, another seed).

Records are generated in chunks of ``CHUNK_ROWS`` with ``numpy.random.default_rng([seed, part,
chunk])`` (part 0: the original, 1: the twin); the fitted models are sums over chunks taken
in chunk order.  So the data depend only on ``rows`` and ``seed``, never on how they are split
into files or partitions, and 5M records take a few hundred MiB while they are written.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import expit, ndtri

from pipeline.data.schema import Schema, Variable
from pipeline.datasets.scaled import ScaledData
from pipeline.results import json_text

#: bump when the generated values change, so stale folders are rebuilt
GENERATOR_VERSION = 1
FAMILY = "register"
DEFAULT_SEED = 1919
#: records generated with one random stream (the unit of determinism, not of files)
CHUNK_ROWS = 1 << 17
#: records per Parquet file (does not change the data)
FILE_ROWS = 500_000
#: the sizes the task source accepts
MIN_ROWS, MAX_ROWS = 1_000, 50_000_000
#: chunk numbers of the generated holdout's random streams start here (the register's stay below)
HOLDOUT_CHUNK = 1 << 20

N_MUNICIPALITIES = 300
N_REGIONS = 12
ZIPF_EXPONENT = 1.0
ZIPF_OFFSET = 3.0
MAX_AGE = 100

SEX = ("male", "female")
EDU = ("none", "primary", "lower_secondary", "upper_secondary", "post_secondary", "short_tertiary", "bachelor",
       "master_doctorate")  # fmt: skip
MARITAL = ("single", "married", "divorced", "widowed")
EMPLOYMENT = ("child", "student", "employed", "unemployed", "retired", "inactive")
HHSIZE = ("1", "2", "3", "4", "5+")
TENURE = ("owner", "private_rent", "social_rent")
CITIZENSHIP = ("national", "eu", "non_eu")
HEALTH = ("very_good", "good", "fair", "bad")
CAR = ("no", "yes")
MUNICIPALITIES = tuple(f"M{i:03d}" for i in range(1, N_MUNICIPALITIES + 1))
REGIONS = tuple(f"R{i:02d}" for i in range(1, N_REGIONS + 1))
#: edu levels of a 30-year-old (cumulative shares give the probit thresholds)
EDU_SHARES_AT_30 = (0.005, 0.04, 0.12, 0.38, 0.08, 0.08, 0.18, 0.115)
#: highest edu level (index into EDU) reachable at each age
EDU_CAP_FROM_AGE = ((0, 0), (6, 1), (12, 2), (16, 3), (19, 4), (21, 6), (23, 7))
#: the variables the twin keeps from the original, and those it synthesises (in order)
KEPT = ("sex", "age", "municipality", "region")
#: the twin's categorical models, in synthesis order: variable | sex, age, parent
TWIN_CATEGORICAL = (
    ("edu", "region"), ("marital", "edu"), ("employment", "edu"), ("hhsize", "marital"), ("tenure", "region"),
    ("citizenship", "region"), ("health", "employment"), ("car", "region"),
)  # fmt: skip
SYNTHESISED = (*(v for v, _ in TWIN_CATEGORICAL), "income", "expenditure")
LEVELS = {"sex": SEX, "municipality": MUNICIPALITIES, "region": REGIONS, "edu": EDU, "marital": MARITAL,
          "employment": EMPLOYMENT, "hhsize": HHSIZE, "tenure": TENURE, "citizenship": CITIZENSHIP, "health": HEALTH,
          "car": CAR}  # fmt: skip


def register_schema() -> Schema:
    """The schema of the register and its twin (the same variables, levels and kinds)."""
    factor = lambda name, levels, ordered=False: Variable(name, "factor", tuple(levels), ordered)  # noqa: E731
    return Schema([
        factor("sex", SEX),
        Variable("age", "integer"),
        factor("municipality", MUNICIPALITIES),
        factor("region", REGIONS),
        factor("edu", EDU, ordered=True),
        factor("marital", MARITAL),
        factor("employment", EMPLOYMENT),
        factor("hhsize", HHSIZE, ordered=True),
        factor("tenure", TENURE),
        factor("citizenship", CITIZENSHIP),
        factor("health", HEALTH, ordered=True),
        factor("car", CAR),
        Variable("income", "numeric"),
        Variable("expenditure", "numeric"),
    ])  # fmt: skip


# ---- the population ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Population:
    """The fixed tables the records are drawn from (all from the seed, none from the records)."""

    municipality_p: np.ndarray  # (M,) probability of each municipality label
    region_of: np.ndarray  # (M,) region code of each municipality
    urban: np.ndarray  # (M,) standardised log size
    income_effect: np.ndarray  # (M,) municipality effect on log income
    sex_age_p: np.ndarray  # (2 * 101,) joint probability, index sex * 101 + age

    @classmethod
    def from_seed(cls, seed: int) -> Population:
        rng = np.random.default_rng([seed, 2])
        rank = np.arange(N_MUNICIPALITIES, dtype=float)
        size = (rank + ZIPF_OFFSET) ** -ZIPF_EXPONENT
        size = size[rng.permutation(N_MUNICIPALITIES)]  # label i gets a random rank
        p = size / size.sum()
        # regions: contiguous runs of a seeded order, so each has large and small municipalities
        region_of = np.empty(N_MUNICIPALITIES, dtype=np.int8)
        region_of[rng.permutation(N_MUNICIPALITIES)] = np.arange(N_MUNICIPALITIES) * N_REGIONS // N_MUNICIPALITIES
        log_size = np.log(p)
        urban = (log_size - log_size.mean()) / log_size.std()
        income_effect = 0.08 * urban + rng.normal(0.0, 0.10, N_MUNICIPALITIES)
        return cls(p, region_of, urban, income_effect, _sex_age_pyramid())


def _sex_age_pyramid() -> np.ndarray:
    age = np.arange(MAX_AGE + 1, dtype=float)
    births = 1.0 + 0.35 * np.exp(-(((age - 58) / 9) ** 2)) + 0.15 * np.exp(-(((age - 32) / 6) ** 2))
    births *= 1.0 - 0.15 * np.clip((20 - age) / 20, 0, 1)
    c = 0.095
    survival = [np.exp(-(b / c) * (np.exp(c * age) - 1)) for b in (6e-5, 3e-5)]  # male, female
    p = np.concatenate([1.05 * births * survival[0], births * survival[1]])
    return p / p.sum()


# ---- one chunk of the original ------------------------------------------------------------------
def _draw(rng: np.random.Generator, cum: np.ndarray) -> np.ndarray:
    """One category per row from row-wise cumulative probabilities ``cum`` (n, L)."""
    u = rng.random(len(cum))
    return (u[:, None] >= cum[:, :-1]).sum(axis=1).astype(np.int8)


def _edu_cap(age: np.ndarray) -> np.ndarray:
    cap = np.zeros(len(age), dtype=np.int8)
    for start, level in EDU_CAP_FROM_AGE:
        cap[age >= start] = level
    return cap


def _marital_probs(female: np.ndarray, age: np.ndarray, urban: np.ndarray) -> np.ndarray:
    a = age.astype(float)
    ever = np.where(a >= 18, 0.88 * expit((a - np.where(female, 30.0, 33.0)) / 4.0), 0.0) * (1 - 0.06 * urban)
    widowed = np.where(female, 0.9 * expit((a - 78) / 6), 0.8 * expit((a - 85) / 6))
    divorced = 0.2 * expit((a - 36) / 6) * (1 - 0.4 * expit((a - 75) / 5))
    married = ever * (1 - widowed)
    return np.stack([1 - ever, married * (1 - divorced), married * divorced, ever * widowed], axis=1)


def _employment_probs(female: np.ndarray, age: np.ndarray, edu: np.ndarray) -> np.ndarray:
    a, e = age.astype(float), edu.astype(float)
    adult = a >= 15
    student = adult * expit((22 + 1.2 * np.clip(e - 3, 0, None) - a) / 1.5) * 0.95
    retired = adult * expit((a - 63 + 0.3 * (e - 3)) / 2.0)
    active = (1 - student) * (1 - retired)
    unemployed = active * np.clip(0.09 - 0.01 * e, 0.02, None)
    inactive = active * np.clip(0.06 + 0.08 * female * expit((a - 45) / 8) - 0.008 * e, 0.01, None)
    employed = active - unemployed - inactive
    child = (~adult).astype(float)
    return np.stack([child, student, employed, unemployed, retired * (1 - student), inactive], axis=1)


def _hhsize_probs(age: np.ndarray, marital: np.ndarray) -> np.ndarray:
    """Household size by age and marital status: children in families, couples, people alone."""
    a = age.astype(float)
    child = a < 18
    young_single = (marital == 0) & ~child & (a < 30)
    couple = marital == 1
    alone = (marital >= 2) | ((marital == 0) & (a >= 30))
    p = np.zeros((len(a), len(HHSIZE)))
    p[child] = (0.0, 0.12, 0.30, 0.38, 0.20)
    p[young_single] = (0.35, 0.25, 0.20, 0.14, 0.06)
    p[couple] = (0.0, 0.52, 0.2, 0.2, 0.08)
    p[alone] = (0.62, 0.25, 0.08, 0.04, 0.01)
    older_couple = couple & (a >= 60)
    p[older_couple] = (0.0, 0.85, 0.1, 0.04, 0.01)
    return p


EMPLOYMENT_INCOME = np.array([0.0, -0.2, 0.1, -0.35, -0.1, -0.2])


def original_chunk(pop: Population, seed: int, chunk: int, n: int) -> dict[str, np.ndarray]:
    """Records ``chunk * CHUNK_ROWS ..`` (``n`` of them) of the original, as integer codes and values."""
    rng = np.random.default_rng([seed, 0, chunk])
    muni = rng.choice(N_MUNICIPALITIES, n, p=pop.municipality_p).astype(np.int16)
    sex_age = rng.choice(len(pop.sex_age_p), n, p=pop.sex_age_p)
    female, age = sex_age >= MAX_AGE + 1, (sex_age % (MAX_AGE + 1)).astype(np.int8)
    urban = pop.urban[muni]
    # edu: probit thresholds of a 30-year-old, mean falling with older cohorts, rising with size
    cuts = ndtri(np.cumsum(EDU_SHARES_AT_30)[:-1])
    latent = -0.028 * np.clip(age - 30.0, 0, None) + 0.25 * urban + 0.05 * female + rng.standard_normal(n)
    edu = np.minimum(np.searchsorted(cuts, latent).astype(np.int8), _edu_cap(age))
    marital = _draw(rng, np.cumsum(_marital_probs(female, age, urban), axis=1))
    employment = _draw(rng, np.cumsum(_employment_probs(female, age, edu), axis=1))
    a = age.astype(float)
    log_income = (9.55 + 0.6 * expit((a - 24) / 5) - 0.2 * expit((a - 64) / 3) + 0.11 * (edu - 3.0)
                  + 0.04 * ~female + EMPLOYMENT_INCOME[employment] + pop.income_effect[muni]
                  + rng.normal(0.0, 0.5, n))  # fmt: skip
    log_exp = 1.9 + 0.78 * log_income + 0.05 * (a >= 65) + rng.normal(0.0, 0.3, n)
    hhsize = _draw(rng, np.cumsum(_hhsize_probs(age, marital), axis=1))
    owner = expit(-0.2 + 0.05 * np.clip(a - 20, 0, 50) + 0.6 * (marital == 1) - 0.5 * urban + 0.3 * (log_income - 10))
    social = (1 - owner) * expit(-0.8 - 0.8 * (log_income - 10))
    tenure = _draw(rng, np.cumsum(np.stack([owner, 1 - owner - social, social], axis=1), axis=1))
    foreign = (0.05 + 0.04 * np.clip(urban, 0, None)) * (1 + 0.8 * np.exp(-(((a - 33) / 12) ** 2)))
    citizenship = _draw(rng, np.cumsum(np.stack([1 - foreign, 0.45 * foreign, 0.55 * foreign], axis=1), axis=1))
    health_latent = 1.2 - 0.035 * a + 0.08 * (edu - 3.0) - 0.4 * (employment == 3) + rng.standard_normal(n)
    health = (3 - np.searchsorted(np.array([-1.9, -0.8, 0.5]), health_latent)).astype(np.int8)
    car = (rng.random(n) < expit(0.6 + 1.1 * (log_income - 10) - 0.6 * urban + 0.3 * (hhsize >= 2))).astype(np.int8)
    return {"sex": female.astype(np.int8), "age": age, "municipality": muni, "region": pop.region_of[muni],
            "edu": edu, "marital": marital, "employment": employment, "hhsize": hhsize, "tenure": tenure,
            "citizenship": citizenship, "health": health, "car": car,
            "income": np.round(np.exp(log_income)), "expenditure": np.round(np.exp(log_exp))}  # fmt: skip


# ---- the twin's fitted models -----------------------------------------------------------------
AGE_GROUPS = MAX_AGE // 5 + 1
#: the categorical predictors of log income and of log expenditure (besides log income), with levels
INCOME_PREDICTORS = (("sex", 2), ("age_group", AGE_GROUPS), ("edu", len(EDU)), ("employment", len(EMPLOYMENT)),
                     ("region", N_REGIONS))  # fmt: skip
EXPENDITURE_PREDICTORS = (("sex", 2), ("age_group", AGE_GROUPS))


def _cell_of(c: dict[str, np.ndarray], predictors: tuple[tuple[str, int], ...]) -> np.ndarray:
    """Mixed-radix index of each record's combination of categorical predictors."""
    cell = np.zeros(len(c["age"]), dtype=np.int64)
    for name, levels in predictors:
        codes = c["age"] // 5 if name == "age_group" else c[name]
        cell = cell * levels + codes
    return cell


def _cell_design(predictors: tuple[tuple[str, int], ...]) -> np.ndarray:
    """The design row of every cell: intercept and treatment-coded dummies (first level the reference)."""
    sizes = [levels for _, levels in predictors]
    codes = np.indices(sizes).reshape(len(sizes), -1)  # row-major: cell = mixed-radix index
    columns = [np.ones((1, codes.shape[1]))]
    for code, levels in zip(codes, sizes, strict=True):
        columns.append((code[None, :] == np.arange(1, levels)[:, None]).astype(float))
    return np.vstack(columns).T


class _CellLeastSquares:
    """Least squares of y on categorical predictors (+ optionally one continuous ``z``), from sums per
    cell added up over chunks in chunk order: exact normal equations without a record-level design."""

    def __init__(self, predictors: tuple[tuple[str, int], ...], continuous: bool) -> None:
        self.predictors, self.continuous = predictors, continuous
        self.design = _cell_design(predictors)
        self.sums = np.zeros((6, len(self.design)))  # n, z, z^2, y, z*y, y^2

    def add(self, c: dict[str, np.ndarray], y: np.ndarray, z: np.ndarray | None = None) -> None:
        cell = _cell_of(c, self.predictors)
        z = np.zeros_like(y) if z is None else z
        for i, w in enumerate((None, z, z * z, y, z * y, y * y)):
            self.sums[i] += np.bincount(cell, weights=w, minlength=len(self.design))

    def solve(self) -> FittedLinear:
        """The fit (minimum-norm coefficients where a cell is empty) and its residual standard deviation."""
        n, sz, szz, sy, szy, syy = self.sums
        d = self.design
        xtx, xty = (d * n[:, None]).T @ d, d.T @ sy
        if self.continuous:
            dz = d.T @ sz
            xtx = np.block([[xtx, dz[:, None]], [dz[None, :], np.array([[szz.sum()]])]])
            xty = np.append(xty, szy.sum())
        beta = np.linalg.lstsq(xtx, xty, rcond=None)[0]
        rss = max(syy.sum() - float(beta @ xty), 0.0)
        sigma = float(np.sqrt(rss / max(n.sum() - len(beta), 1)))
        k = d.shape[1]
        return FittedLinear(self.predictors, d @ beta[:k], float(beta[k]) if self.continuous else 0.0, sigma)


@dataclass(frozen=True)
class FittedLinear:
    """A fitted :class:`_CellLeastSquares`: the fitted value of each cell, the slope on z, sigma."""

    predictors: tuple[tuple[str, int], ...]
    cell_fitted: np.ndarray
    slope: float
    sigma: float

    def draw(self, rng: np.random.Generator, c: dict[str, np.ndarray], z: np.ndarray | None = None) -> np.ndarray:
        """Fitted values plus normal residuals of the fitted variance."""
        fitted = self.cell_fitted[_cell_of(c, self.predictors)]
        if z is not None:
            fitted = fitted + self.slope * z
        return fitted + rng.normal(0.0, self.sigma, len(fitted))


def _cell(c: dict[str, np.ndarray], third: str, levels: int) -> np.ndarray:
    """Cell index of (sex, age, ``third``)."""
    return (c["sex"].astype(np.int64) * (MAX_AGE + 1) + c["age"]) * levels + c[third]


@dataclass
class TwinModel:
    """The conditional models of the twin, fitted on the original."""

    #: variable -> counts of its levels by (sex, age, parent) cell, (2 * 101 * parent levels, levels)
    categorical: dict[str, np.ndarray]
    income: FittedLinear  # log income
    expenditure: FittedLinear  # log expenditure


class _TwinFit:
    def __init__(self) -> None:
        cells = 2 * (MAX_AGE + 1)
        self.counts = {v: np.zeros((cells * len(LEVELS[parent]), len(LEVELS[v])), dtype=np.int64)
                       for v, parent in TWIN_CATEGORICAL}  # fmt: skip
        self.income = _CellLeastSquares(INCOME_PREDICTORS, continuous=False)
        self.expenditure = _CellLeastSquares(EXPENDITURE_PREDICTORS, continuous=True)

    def add(self, c: dict[str, np.ndarray]) -> None:
        for v, parent in TWIN_CATEGORICAL:
            table = self.counts[v]
            cell = _cell(c, parent, len(LEVELS[parent])) * table.shape[1] + c[v]
            table += np.bincount(cell, minlength=table.size).reshape(table.shape)
        log_income = np.log(c["income"])
        self.income.add(c, log_income)
        self.expenditure.add(c, np.log(c["expenditure"]), log_income)

    def model(self) -> TwinModel:
        return TwinModel(self.counts, self.income.solve(), self.expenditure.solve())


def _draw_from_counts(rng: np.random.Generator, counts: np.ndarray, cell: np.ndarray) -> np.ndarray:
    cum = np.cumsum(counts, axis=1).astype(float)
    cum /= np.maximum(cum[:, -1:], 1.0)
    return _draw(rng, cum[cell])


def twin_chunk(model: TwinModel, original: dict[str, np.ndarray], seed: int, chunk: int) -> dict[str, np.ndarray]:
    """The twin of one chunk of the original: kept variables copied, the others synthesised in order."""
    rng = np.random.default_rng([seed, 1, chunk])
    c = {v: original[v] for v in KEPT}
    for v, parent in TWIN_CATEGORICAL:
        c[v] = _draw_from_counts(rng, model.categorical[v], _cell(c, parent, len(LEVELS[parent])))
    log_income = model.income.draw(rng, c)
    log_exp = model.expenditure.draw(rng, c, log_income)
    c["income"], c["expenditure"] = np.round(np.exp(log_income)), np.round(np.exp(log_exp))
    return c


# ---- frames and files ---------------------------------------------------------------------------
def _chunks(rows: int) -> Iterator[tuple[int, int]]:
    for chunk, start in enumerate(range(0, rows, CHUNK_ROWS)):
        yield chunk, min(CHUNK_ROWS, rows - start)


def _frame(c: dict[str, np.ndarray], schema: Schema) -> pd.DataFrame:
    """Codes and values as the schema's frame (factors as categoricals of all their levels)."""
    out = {}
    for v in schema:
        if v.is_factor:
            out[v.name] = pd.Categorical.from_codes(c[v.name], categories=list(v.levels or ()), ordered=v.ordered)
        else:
            out[v.name] = c[v.name].astype(np.float64)
    return pd.DataFrame(out)


def _generate(rows: int, seed: int) -> Iterator[tuple[str, dict[str, np.ndarray]]]:
    """("original", chunk) for every chunk, then ("syn1", chunk) for every chunk."""
    pop = Population.from_seed(seed)
    fit = _TwinFit()
    kept = []
    for chunk, n in _chunks(rows):
        c = original_chunk(pop, seed, chunk, n)
        fit.add(c)
        kept.append({v: c[v] for v in KEPT})
        yield "original", c
    model = fit.model()
    for chunk, original in enumerate(kept):
        yield "syn1", twin_chunk(model, original, seed, chunk)


def register_frames(rows: int, seed: int = DEFAULT_SEED) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The original and its twin in memory (the records :func:`write_register` writes)."""
    _check_rows(rows)
    schema = register_schema()
    parts: dict[str, list[pd.DataFrame]] = {"original": [], "syn1": []}
    for name, c in _generate(rows, seed):
        parts[name].append(_frame(c, schema))
    return tuple(pd.concat(parts[n], ignore_index=True) for n in ("original", "syn1"))  # type: ignore[return-value]


def _check_rows(rows: int) -> None:
    if not isinstance(rows, (int, np.integer)) or isinstance(rows, bool) or not MIN_ROWS <= rows <= MAX_ROWS:
        raise ValueError(f"register: rows must be a whole number in {MIN_ROWS:,}..{MAX_ROWS:,}, got {rows!r}")


def write_register(folder: Path, rows: int, seed: int = DEFAULT_SEED, file_rows: int = FILE_ROWS) -> ScaledData:
    """Write (once) the register and its twin, ``rows`` records each, as Parquet folders.

    Parameters
    ----------
    folder : Path
        Parent folder; the data go to ``folder / f"register_{rows}_s{seed}"`` (``original/``,
        ``syn1/``, ``register.schema.json``, ``manifest.json``).  A folder written before with
        the same parameters and generator version is reused as it is; a new one is written
        under a temporary name and renamed, so concurrent writers never see half a folder.
    rows : int
    seed : int
    file_rows : int
        Records per Parquet file (does not change the data).

    Returns
    -------
    ScaledData
    """
    _check_rows(rows)
    manifest = {"version": GENERATOR_VERSION, "family": FAMILY, "rows": rows, "seed": seed}
    return _write_once(
        folder / f"{FAMILY}_{rows}_s{seed}", manifest, ("original", "syn1"), _generate(rows, seed), file_rows
    )


def holdout_rows(rows: int) -> int:
    """Records of the generated holdout of a ``rows``-record register: a quarter as many (the
    holdout of a 20 % split of ``1.25 · rows`` records), at least :data:`MIN_ROWS`."""
    return max(MIN_ROWS, rows // 4)


def write_register_holdout(folder: Path, rows: int, seed: int = DEFAULT_SEED, file_rows: int = FILE_ROWS) -> ScaledData:
    """Write (once) a holdout for the ``rows``-record register: :func:`holdout_rows` records drawn
    from the same population (the register's municipalities, sizes and laws: same ``seed``) with
    random streams of their own (chunk numbers from :data:`HOLDOUT_CHUNK`), so no record of the
    register or its twin is among them. Written as ``holdout/`` in
    ``folder / f"register_{rows}_s{seed}_holdout"``, as :func:`write_register` writes."""
    _check_rows(rows)
    manifest = {"version": GENERATOR_VERSION, "family": FAMILY, "rows": rows, "seed": seed, "part": "holdout"}
    pop = Population.from_seed(seed)
    chunks = (
        ("holdout", original_chunk(pop, seed, HOLDOUT_CHUNK + chunk, n)) for chunk, n in _chunks(holdout_rows(rows))
    )
    return _write_once(folder / f"{FAMILY}_{rows}_s{seed}_holdout", manifest, ("holdout",), chunks, file_rows)


def _write_once(
    target: Path, manifest: dict, names: tuple[str, ...], chunks: Iterator[tuple[str, dict]], file_rows: int
) -> ScaledData:
    """Write the parts ``names`` of ``chunks`` to ``target`` unless a complete folder with the same
    ``manifest`` is there: under a temporary name, then renamed (concurrent writers never see half
    a folder)."""
    out = ScaledData(target, FAMILY, int(manifest["rows"]), 1)
    if _complete(target, manifest):
        return out
    tmp = target.parent / f".{target.name}.{os.getpid()}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    staged = ScaledData(tmp, FAMILY, int(manifest["rows"]), 1)
    schema = register_schema()
    for name in names:
        staged.path(name).mkdir(parents=True)
    schema.to_json(staged.schema_path)
    writers = {name: _PartWriter(staged.path(name), file_rows) for name in names}
    for name, c in chunks:
        writers[name].add(_frame(c, schema))
    for writer in writers.values():
        writer.close()
    (tmp / "manifest.json").write_text(json_text(manifest))
    if _complete(target, manifest):  # another process finished first
        shutil.rmtree(tmp)
        return out
    shutil.rmtree(target, ignore_errors=True)
    tmp.rename(target)
    return out


class _PartWriter:
    """Consecutive frames cut into Parquet files of ``file_rows`` records (the last may be shorter)."""

    def __init__(self, folder: Path, file_rows: int) -> None:
        self.folder, self.file_rows = folder, file_rows
        self.pending: list[pd.DataFrame] = []
        self.files = 0

    def add(self, frame: pd.DataFrame) -> None:
        self.pending.append(frame)
        if sum(map(len, self.pending)) < self.file_rows:
            return
        whole = pd.concat(self.pending, ignore_index=True)
        cut = self.file_rows * (len(whole) // self.file_rows)
        for start in range(0, cut, self.file_rows):
            self._write(whole.iloc[start : start + self.file_rows])
        self.pending = [whole.iloc[cut:].reset_index(drop=True)] if cut < len(whole) else []

    def close(self) -> None:
        if self.pending:
            self._write(pd.concat(self.pending, ignore_index=True))

    def _write(self, frame: pd.DataFrame) -> None:
        frame.to_parquet(self.folder / f"part-{self.files:04d}.parquet", index=False)
        self.files += 1


def _complete(target: Path, manifest: dict) -> bool:
    done = target / "manifest.json"
    return done.exists() and json.loads(done.read_text()) == manifest


def cache_folder() -> Path:
    """Where generated demo data are kept: ``$SDC_PIPELINE_CACHE/demo`` (default ``~/.cache/sdc-pipeline``)."""
    base = os.environ.get("SDC_PIPELINE_CACHE") or Path.home() / ".cache" / "sdc-pipeline"
    return Path(base) / "demo"
