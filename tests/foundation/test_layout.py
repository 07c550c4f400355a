"""One key-block layout per task (:mod:`pipeline.evaluation.primitives.layout`): block-wise measures
run partition-local on it and give the rows they give in memory, on 1 and 3 partitions and on 1
and 2 workers — a measure keyed finer than the layout, and one that needs another layout (made
once, listed by the executor for the manifest)."""

from __future__ import annotations

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from distributed import futures_of

from pipeline.data.schema import Schema
from pipeline.evaluation.data import as_eval_data
from pipeline.evaluation.execution import Executor
from pipeline.evaluation.primitives.partials import Partials
from pipeline.risk.disclosure.measure import DisclosureMeasure
from pipeline.risk.distance.measure import DCRMeasure
from pipeline.risk.idrisk.measure import IdentificationRiskMeasure


def _frame(rng: np.random.Generator, n: int) -> pd.DataFrame:
    sex = rng.choice(["f", "m"], n).astype(object)
    sex[3] = None  # a missing key is a key value
    region = rng.choice(["r0", "r1", "r2", "r3", "r4"], n, p=[0.4, 0.3, 0.15, 0.1, 0.05]).astype(object)
    return pd.DataFrame(
        {
            "sex": pd.Categorical(sex, categories=["f", "m"]),
            "region": pd.Categorical(region, categories=["r0", "r1", "r2", "r3", "r4"]),
            "edu": pd.Categorical(rng.choice(["low", "mid", "high"], n), categories=["low", "mid", "high"]),
            "age": rng.integers(18, 40, n).astype(float),
            "money": np.round(rng.lognormal(3, 0.3, n)),
        }
    )


def _data() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """An original, a row-aligned synthetic set (edu and money synthesised) and a holdout."""
    rng = np.random.default_rng(11)
    orig = _frame(rng, 400)
    syn = orig.copy()
    syn["edu"] = pd.Categorical(rng.choice(["low", "mid", "high"], len(orig)), categories=["low", "mid", "high"])
    syn["money"] = np.round(orig["money"] * rng.choice([0.9, 1.0, 1.1], len(orig)))
    return orig, syn, _frame(rng, 300)


#: identification risk keyed on sex × region: finer than the layout's sex
FINER = IdentificationRiskMeasure(
    {
        "radius": {"age": 0.1, "money": 0.1},
        "scenarios": {"s": {"known": ["sex", "region", "age"], "synthesised": ["edu", "money"]}},
    }
)
#: identification risk with age matched exactly (``exact``): keyed on sex × region × age, a numeric
#: variable in a key finer than the layout's (the register task's sex × age × municipality scenario)
EXACT = IdentificationRiskMeasure(
    {
        "exact": ["age"],
        "radius_grid": [0.05, 0.1],
        "scenarios": {"s": {"known": ["sex", "region", "age"], "synthesised": ["money"]}},
    }
)
#: identification risk keyed on region × edu (its categorical variables): the sex layout does not serve it
OTHER = IdentificationRiskMeasure(
    {
        "radius": {"age": 0.1, "money": 0.1},
        "scenarios": {"s": {"known": ["region", "age"], "synthesised": ["edu", "money"]}},
    }
)
#: DCR searched within sex × edu blocks (exact-match factors): finer than the layout
DCR = DCRMeasure({"vars": ["sex", "edu", "age", "money"], "block_on": ["sex", "edu"], "baseline_records": 100})

#: disclosure keyed on sex × region × age (its block keys: the factors sex and region), target edu
DISCLOSURE = DisclosureMeasure({"keys": ["sex", "region", "age"], "targets": ["edu"]})


def _holders(client, frame) -> list[tuple[str, ...]]:
    """The workers holding each partition of a persisted frame, in partition order."""
    futures = sorted(futures_of(frame), key=lambda f: f.key[1])
    held = client.who_has(futures)
    return [tuple(held[f.key]) for f in futures]


def _rows(result) -> list[tuple]:
    return [(r.synthetic, r.measure, r.params, r.value) for r in result.rows()]


@pytest.mark.parametrize("n_parts", [1, 3])
def test_measures_on_the_layout_give_the_rows_of_memory(clients, n_parts, monkeypatch):
    merged: list[int] = []  # blocks whose counts were merged where they are (disclosure on the layout)
    map_aligned = Partials.map_aligned

    def spy(self, partials, merge):
        merged.append(len(partials[0]))
        return map_aligned(self, partials, merge)

    monkeypatch.setattr(Partials, "map_aligned", spy)
    orig, syn, hold = _data()
    schema = Schema.infer(orig)
    memory = as_eval_data(orig, [syn], schema, holdout=hold)
    executor = Executor(policy="memory")
    assert EXACT.block_keys(memory) == ("sex", "region", "age")
    finer, exact, other, dcr, disclosure = (
        _rows(m.run(memory, executor)) for m in (FINER, EXACT, OTHER, DCR, DISCLOSURE)
    )
    for client in clients:
        executor = Executor(client, policy="blocks", block_rows=60)
        frames = [dd.from_pandas(f, npartitions=n_parts) for f in (orig, syn, hold)]
        original, synthetic, holdout = executor.persist(*frames)  # the run's inputs, kept on the workers
        data = as_eval_data(original, [synthetic], schema, holdout=holdout)
        layout = executor.lay_out(data, ["sex"])
        assert layout is not None and layout.blocks % executor.threads() == 0
        assert executor.lay_out(data, ["sex"]) is layout  # made once
        # block b of every data set on one worker, the blocks over every worker
        holders = [_holders(client, f) for f in layout.frames]
        assert all(len({h[b] for h in holders}) == 1 for b in range(layout.blocks))
        assert {w for h in holders for w in h} == {(w,) for w in client.nthreads()}
        # every data set in the same number of blocks; block b holds every record of its sex values
        counts = [executor.partition_rows(f)[0] for f in layout.frames]
        assert [sum(c) for c in counts] == [400, 400, 300]
        assert len({len(c) for c in counts}) == 1
        laid = [executor.compute(f)[0] for f in layout.frames]
        blocks_of = [f.groupby("sex", observed=True, dropna=False)["__block__"].nunique() for f in laid]
        assert all((b == 1).all() for b in blocks_of)
        sexes = [
            set(map(str, f.assign(part=np.repeat(np.arange(len(c)), c))[["sex", "part"]].drop_duplicates()["sex"]))
            for f, c in zip(laid, counts, strict=True)
        ]
        assert sexes[0] == sexes[1] == {"f", "m", "nan"}
        assert _rows(FINER.run(data, executor)) == finer
        assert _rows(EXACT.run(data, executor)) == exact
        assert _rows(DCR.run(data, executor)) == dcr
        assert _rows(DISCLOSURE.run(data, executor)) == disclosure
        assert merged == [layout.blocks]
        merged.clear()
        assert executor.layouts() == [layout.describe()]  # partition-local: no other layout
        assert _rows(OTHER.run(data, executor)) == other
        assert _rows(OTHER.run(data, executor)) == other
        made = executor.layouts()
        assert len(made) == 2 and made[1]["keys"] == ["region", "edu"]  # another layout, paid once
        assert "region" in made[1]["reason"]


def test_no_layout_in_memory():
    orig, syn, hold = _data()
    data = as_eval_data(orig, [syn], Schema.infer(orig), holdout=hold)
    executor = Executor(policy="memory")
    assert executor.lay_out(data, ["sex"]) is None
    assert executor.layouts() == []
