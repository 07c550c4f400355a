"""Ctrl-C for the command, not for the worker processes it starts.

A terminal sends Ctrl-C (SIGINT) to the whole foreground process group, Dask's worker processes
included, which would die mid-task or mid-start with tracebacks of their own.  Local workers are
therefore started with SIGINT ignored (a disposition a process keeps across exec; a blocked mask is
not kept by multiprocessing's spawn).  Ignoring it in this process while they start used to lose a
Ctrl-C pressed in a run's first seconds, so the command also blocks SIGINT in its main thread
before it starts any thread (every later thread inherits the block) and takes it in one watcher
thread: a blocked signal is queued, never ignored, so the watcher sees it even while the disposition
is "ignore", and raises it in the main thread, where the command's handler closes the cluster in
order.
"""

from __future__ import annotations

import _thread
import contextlib
import signal
import threading
from collections.abc import Iterator

#: how often the watcher looks whether the command has finished
_POLL_S = 0.2
#: set by the watcher for every SIGINT it takes (read once a cluster is up)
_received = threading.Event()


@contextlib.contextmanager
def sigint_for_this_process_only() -> Iterator[None]:
    """Within the block every SIGINT reaches this process's Python handler through the watcher
    thread (outside the main thread, where signals cannot be handled, the block does nothing)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    done = threading.Event()
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    watcher = threading.Thread(target=_forward_sigint, args=(done,), name="sdc-sigint", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        watcher.join()
        # a SIGINT that arrived after the watcher stopped is delivered here, to the handler
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _forward_sigint(done: threading.Event) -> None:
    while not done.is_set():
        taken = signal.sigtimedwait({signal.SIGINT}, _POLL_S)
        # a stop and continue (SIGSTOP/SIGCONT, Ctrl-Z and fg) ends the wait with si_signo 0: not a SIGINT
        if taken is not None and taken.si_signo == signal.SIGINT:
            _received.set()
            _thread.interrupt_main(signal.SIGINT)


@contextlib.contextmanager
def children_ignore_sigint() -> Iterator[None]:
    """Processes started within the block ignore SIGINT; a SIGINT this process receives meanwhile
    (under the command line) is acted on at the end of the block, once what was starting is up
    and can be closed in order."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _received.clear()
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if _received.is_set() and callable(previous):
        previous(signal.SIGINT, None)
