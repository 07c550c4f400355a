"""The benchmark table's rows and what both its parts share (``run_all.py`` and the register rows
of ``bench_register.py``): a :class:`Row` and its printing, the scaled sets read onto the
workers, DuckDB's formulation of the disclosure core counts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness import Bench, Measurement

from pipeline.data.dataset import read_dataset
from pipeline.datasets.scaled import ScaledData


@dataclass
class Row:
    """One line of the table."""

    work: str
    records: int
    measurement: dict[str, Any]
    anchor: str
    anchor_s: float | None
    goal: str
    #: (what, measured, limit): the goal is met when every measured < limit
    checks: list[tuple[str, float, float]] = field(default_factory=list)
    judged: bool = True
    note: str = ""

    @property
    def ratio(self) -> float | None:
        return self.anchor_s / self.measurement["wall"] if self.anchor_s else None

    @property
    def met(self) -> str:
        if not self.judged or not self.checks:
            return "n/a"
        return "met" if all(v < limit for _, v, limit in self.checks) else "NOT met"

    def as_dict(self) -> dict[str, Any]:
        return {"work": self.work, "records": self.records, **self.measurement, "anchor": self.anchor,
                "anchor_s": self.anchor_s, "ratio": self.ratio, "goal": self.goal, "met": self.met,
                "checks": [{"what": w, "measured": v, "limit": lim} for w, v, lim in self.checks],
                "note": self.note}  # fmt: skip


def measured(m: Measurement, **extra: Any) -> dict[str, Any]:
    return {**m.as_dict(), **extra}


def seconds(s: float | None) -> str:
    """Seconds as s, min or h ("no anchor at this size" for None)."""
    if s is None:
        return "(no anchor at this size)"
    return f"{s:.3g} s" if s < 600 else f"{s / 60:.0f} min" if s < 7200 else f"{s / 3600:.1f} h"


def print_row(row: Row) -> None:
    m = row.measurement
    peaks = ", ".join(f"{v:,.0f}" for v in m["peak_rss_mib"].values()) or "-"
    ratio = f"{row.ratio:8.1f}x" if row.ratio else "        -"
    print(f"| {row.work} | {row.records:,} | {m['wall']:.2f} s / {m['cpu']:.2f} s | {peaks} | "
          f"{m['load_before']:.2f}->{m['load_after']:.2f} | {row.anchor} | {row.goal} | {ratio} | {row.met} |"
          f"{' ' + row.note if row.note else ''}", flush=True)  # fmt: skip


def load(bench: Bench, data: ScaledData, names: list[str]) -> list[Any]:
    """The scaled sets as Dask frames, on the workers as a run reads its inputs (persisted, small
    partitions merged, waited for); prints the files' and the merged partitions and the seconds."""
    frames = [read_dataset(data.path(n), schema=data.schema_path).frame for n in names]
    ready = bench.ready(*frames)
    print(f"  (inputs {', '.join(names)}: {frames[0].npartitions} file partitions each, merged into "
          f"{'/'.join(str(f.npartitions) for f in ready)}; read + persist + merge {bench.ready_seconds:.1f} s, "
          "not timed)", flush=True)  # fmt: skip
    return ready


def duckdb_core_counts(con: Any, keys: list[str], target: str) -> tuple[float, float]:
    """repU and DiSCO (synthpop's definitions, no exclusions) of tables ``o`` and ``s`` in DuckDB SQL.

    NA is a value of its own (GROUP BY groups NULLs; joins use IS NOT DISTINCT FROM).
    """
    k = ", ".join(keys)
    on = " AND ".join(f"a.{v} IS NOT DISTINCT FROM b.{v}" for v in keys)
    sql = f"""
    WITH dc AS (SELECT {k}, {target} AS t, count(*) AS n FROM o GROUP BY ALL),
         sc AS (SELECT {k}, {target} AS t, count(*) AS n FROM s GROUP BY ALL),
         dq AS (SELECT {k}, sum(n) AS n FROM dc GROUP BY ALL),
         sq AS (SELECT {k}, sum(n) AS n, count(*) AS cells, any_value(t) AS t FROM sc GROUP BY ALL),
         rep AS (SELECT count(*) AS u FROM dq a JOIN sq b ON {on} WHERE a.n = 1 AND b.n = 1),
         dis AS (SELECT coalesce(sum(a.n), 0) AS d FROM dc a JOIN sq b ON {on}
                 WHERE b.cells = 1 AND a.t IS NOT DISTINCT FROM b.t)
    SELECT (SELECT u FROM rep), (SELECT d FROM dis), (SELECT count(*) FROM o)
    """
    u, d, n = con.execute(sql).fetchone()
    return 100 * u / n, 100 * d / n
