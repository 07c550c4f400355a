"""Running units ``concurrency`` at a time on a thread pool, with progress lines on stderr.

:func:`run_all` runs a list of units and returns when all are done; a :class:`Batch` starts
them on a pool of its own and gives their outputs when asked, so that work whose threads only
wait for the cluster (repetition groups: one worker task each) runs while the driver
evaluates the other units.
"""

from __future__ import annotations

import datetime as dt
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from typing import Generic, TypeVar

from pipeline.errors import PipelineError, brief, located
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
        self._lock = threading.Lock()  # batches report from their own threads
        if enabled and not kernels_cached():  # so that the first run does not look hung
            print(FIRST_COMPILE_NOTICE, file=sys.stderr, flush=True)

    def report(self, label: str, seconds: float, cached: bool) -> None:
        with self._lock:
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


class Batch(Generic[Item, Out]):
    """``work`` on every item, ``concurrency`` at a time on a pool of its own, started at once;
    each output is passed to ``report`` (from the pool's thread) when it arrives, and
    :meth:`results` gives them in item order.  Errors name the item (``where``).

    A context manager: leaving it waits for the running items, except after a Ctrl-C (or
    SIGTERM); items not started yet are cancelled when it is left by an error.
    """

    def __init__(
        self,
        items: Sequence[Item],
        work: Callable[[Item], Out],
        where: Callable[[Item], str],
        concurrency: int,
        report: Callable[[Item, Out], None],
    ) -> None:
        self.items, self.where = items, where
        self.pool = ThreadPoolExecutor(max_workers=max(1, min(concurrency, len(items))))
        self.futures: dict[Future[Out], int] = {}
        for i, u in enumerate(items):
            future = self.pool.submit(work, u)
            future.add_done_callback(lambda f, u=u: _report(f, u, report))
            self.futures[future] = i

    def results(self) -> list[Out]:
        """The outputs in item order, once every item is done.

        Raises
        ------
        PipelineError
            The first item to fail (naming it).
        """
        done: dict[int, Out] = {}
        for f in as_completed(self.futures):
            i = self.futures[f]
            try:
                done[i] = f.result()
            except PipelineError as e:
                raise located(self.where(self.items[i]), e) from e
            except Exception as e:
                raise PipelineError(f"{self.where(self.items[i])} failed: {brief(e)}") from e
        return [done[i] for i in range(len(self.items))]

    def __enter__(self) -> Batch[Item, Out]:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        if kind is not None and issubclass(kind, KeyboardInterrupt):
            # Ctrl-C or SIGTERM: start nothing more and do not wait for the running items (they
            # stop with the cluster); finished units stay cached for the next run
            self.pool.shutdown(wait=False, cancel_futures=True)
        else:  # after an error the running items finish (and are cached)
            self.pool.shutdown(cancel_futures=True)


def _report(future: Future[Out], item: Item, report: Callable[[Item, Out], None]) -> None:
    if not future.cancelled() and future.exception() is None:
        report(item, future.result())


def run_all(
    items: Sequence[Item],
    work: Callable[[Item], Out],
    where: Callable[[Item], str],
    concurrency: int,
    report: Callable[[Item, Out], None],
) -> list[Out]:
    """Run ``work`` on every item, ``concurrency`` at a time; the outputs in item order, each
    passed to ``report`` when it arrives. Errors name the item (``where``)."""
    with Batch(items, work, where, concurrency, report) as batch:
        return batch.results()
