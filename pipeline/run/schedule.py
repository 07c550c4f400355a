"""Running units ``concurrency`` at a time on a thread pool, with progress lines on stderr."""

from __future__ import annotations

import datetime as dt
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import TypeVar

from pipeline.errors import PipelineError
from pipeline.kernel_cache import FIRST_COMPILE_NOTICE, kernels_cached

Item = TypeVar("Item")
Out = TypeVar("Out")


class Progress:
    """``[i/N] label: state`` lines on stderr, numbered over every unit of the run; a computed
    unit's state is its seconds and the run's estimated time left (at the rate of the units
    computed so far), a reused one's ``cached``."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.total, self.enabled, self.done, self.cached = total, enabled, 0, 0
        self.start = time.perf_counter()
        if enabled and not kernels_cached():  # so that the first run does not look hung
            print(FIRST_COMPILE_NOTICE, file=sys.stderr, flush=True)

    def report(self, label: str, seconds: float, cached: bool) -> None:
        self.done += 1
        self.cached += cached
        if not self.enabled:
            return
        if cached:
            state = "cached"
        else:
            left = (time.perf_counter() - self.start) / (self.done - self.cached) * (self.total - self.done)
            state = f"{seconds:.2f} s, {dt.timedelta(seconds=round(left))} left"
        print(f"[{self.done}/{self.total}] {label}: {state}", file=sys.stderr, flush=True)


def run_all(
    items: Sequence[Item],
    work: Callable[[Item], Out],
    where: Callable[[Item], str],
    concurrency: int,
    report: Callable[[Item, Out], None],
) -> list[Out]:
    """Run ``work`` on every item, ``concurrency`` at a time; the outputs in item order, each
    passed to ``report`` when it arrives. Errors name the item (``where``)."""
    done: dict[int, Out] = {}
    pool = ThreadPoolExecutor(max_workers=concurrency)
    futures = {pool.submit(work, u): i for i, u in enumerate(items)}
    try:
        for f in as_completed(futures):
            i = futures[f]
            try:
                done[i] = f.result()
            except PipelineError as e:
                raise type(e)(f"{where(items[i])}: {e}") from e
            except Exception as e:
                raise PipelineError(f"{where(items[i])} failed: {type(e).__name__}: {e}") from e
            report(items[i], done[i])
    except KeyboardInterrupt:
        # Ctrl-C or SIGTERM: start nothing more and do not wait for the running units (they stop
        # with the cluster); finished units stay cached for the next run
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    except BaseException:
        pool.shutdown(cancel_futures=True)  # after an error the running units finish (and are cached)
        raise
    pool.shutdown()
    return [done[i] for i in range(len(items))]
