"""One writer at a time: an advisory lock on a run folder or a results history.

The lock is :func:`fcntl.flock` on a file kept open for as long as it is held, with the
holder's PID, host and start time written into it for the message a second writer gets. The
kernel drops a flock when the last descriptor of the open file closes, however its process ends,
so a lock left by a killed run (its file still names the dead holder) is taken over at once, with
a warning. The lock dies with its run: the descriptor is closed on exec and, in a child forked
while it is held (the report's drawing processes), right after the fork, so no child keeps it.
Should a process of another program still hold it (a descriptor passed on by other means) after
the holder named in the file has died on this host, the lock file is replaced (under a second
lock, ``<lock>.takeover``, so that two runs do not both replace it), with a warning. A lock is
re-entrant in the thread that holds it (a run holds its folder while the functions it calls
take the same lock); another thread of the same process is refused like another process.
flock works on local filesystems and on NFS v4 (as a POSIX lock); on an older NFS it may not
exclude writers on other hosts.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import json
import logging
import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from pipeline.errors import TaskError
from pipeline.results import json_text

log = logging.getLogger(__name__)

#: lock file -> (holding thread, depth) of the locks this process holds
_held: dict[Path, tuple[int, int]] = {}
#: lock file -> the open, locked descriptor of the locks this process holds
_descriptors: dict[Path, int] = {}
_guard = threading.Lock()
#: beside a lock file ``<name>``: ``<name>.takeover``, the guard of replacing a lock a dead run left
TAKEOVER_SUFFIX = ".takeover"
#: how often a waiting writer tries again, seconds
_POLL = 0.1


def _holder(fd: int) -> dict[str, str]:
    """What a lock file says about its holder (empty when released cleanly)."""
    text = os.pread(fd, 4096, 0).decode("utf-8", errors="replace")
    if not text.strip():
        return {}
    try:
        found = json.loads(text)
    except ValueError:
        found = {}
    return {k: str(found.get(k, "?")) if isinstance(found, dict) else "?" for k in ("pid", "host", "started")}


def _close_in_child() -> None:
    """In a child just forked: close the held locks' descriptors (a child must not keep its
    parent's lock after the parent dies) and forget them."""
    for fd in _descriptors.values():
        with suppress(OSError):
            os.close(fd)
    _descriptors.clear()
    _held.clear()


os.register_at_fork(after_in_child=_close_in_child)


def _dead_here(holder: dict[str, str]) -> bool:
    """Whether the holder a lock file names is a process of this host that no longer exists."""
    if holder.get("host") != socket.gethostname() or not holder.get("pid", "").isdigit():
        return False
    try:
        os.kill(int(holder["pid"]), 0)
    except ProcessLookupError:
        return True
    except OSError:  # alive, another user's
        return False
    return False


def _replace_orphaned(path: Path, stale_inode: int) -> int | None:
    """Replace the lock file ``path`` (still the inode ``stale_inode``) whose named holder is
    dead by a new one, locked; its descriptor, or None when another run replaced it first."""
    guard = os.open(
        path.with_name(path.name + TAKEOVER_SUFFIX), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600
    )
    try:
        fcntl.flock(guard, fcntl.LOCK_EX)
        try:
            if os.stat(path, follow_symlinks=False).st_ino != stale_inode:
                return None
        except FileNotFoundError:
            return None
        fresh = path.with_name(f"{path.name}.{os.getpid()}.new")
        fd = os.open(fresh, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.replace(fresh, path)
        return fd
    finally:
        os.close(guard)


def _acquire(path: Path, what: str, wait: float) -> int:
    """The open, locked lock file (its descriptor), with this process written in as the holder."""
    deadline = time.monotonic() + wait
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            inode = os.fstat(fd).st_ino
            os.close(fd)
            if _dead_here(holder):
                # a process the dead holder left (or another program) keeps the file locked
                fresh = _replace_orphaned(path, inode)
                if fresh is None:
                    continue
                log.warning(
                    "%s: taking over the lock of a run that died (%s) from a process it left", what, _who(holder)
                )
                return _claim(fresh)
            if time.monotonic() < deadline:
                time.sleep(_POLL)
                continue
            raise TaskError(
                f"{what} is in use by another run ({_who(holder)}; lock {path}): wait for it to finish, or use another "
                "folder"
            ) from None
        # the holder may have removed the file while this process waited for it: lock the one on disk
        try:
            current = os.stat(path, follow_symlinks=False).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            current = False
        if not current:
            os.close(fd)
            continue
        stale = _holder(fd)
        if stale:
            log.warning(
                "%s: taking over the lock left by a run that ended without releasing it (%s)", what, _who(stale)
            )
        return _claim(fd)


def _who(holder: dict[str, str]) -> str:
    """A lock's holder for messages: ``PID 1234 on host, started <time>``."""
    return f"PID {holder.get('pid', '?')} on {holder.get('host', '?')}, started {holder.get('started', '?')}"


def _claim(fd: int) -> int:
    """Write this process into the locked lock file ``fd`` as its holder; return ``fd``."""
    me = {"pid": os.getpid(), "host": socket.gethostname(), "started": dt.datetime.now(dt.UTC).isoformat()}
    os.ftruncate(fd, 0)
    os.pwrite(fd, json_text(me).encode("utf-8"), 0)
    return fd


@contextmanager
def exclusive(path: Path, what: str, wait: float = 0.0) -> Iterator[bool]:
    """Hold the lock file ``path`` (created 0600) while the block runs.

    ``what`` names the locked thing in the refusal; ``wait``: seconds to wait for another holder
    before refusing (0: refuse at once). Yields whether this call took the lock (False when the
    thread already held it). On release the file is emptied, which marks a clean release.

    Raises
    ------
    TaskError
        Another process or thread holds the lock (its PID, host and start time are named).
    """
    key = Path(os.path.abspath(path))
    me = threading.get_ident()
    deadline = time.monotonic() + wait
    while True:
        with _guard:
            thread, depth = _held.get(key, (me, 0))
            _held[key] = (me, depth + 1) if thread == me else (thread, depth)
        if thread != me and time.monotonic() < deadline:
            time.sleep(_POLL)
            continue
        break
    if thread != me:
        raise TaskError(f"{what} is in use by another run in this process (PID {os.getpid()}; lock {key})")
    if depth:
        try:
            yield False
        finally:
            with _guard:
                _held[key] = (me, _held[key][1] - 1)
        return
    try:
        fd = _acquire(key, what, max(0.0, deadline - time.monotonic()))
        with _guard:
            _descriptors[key] = fd  # a child forked from now on closes it (_close_in_child)
    except BaseException:
        with _guard:
            del _held[key]
        raise
    try:
        yield True
    finally:
        with _guard:
            del _held[key]
            fd = _descriptors.pop(key)
        os.ftruncate(fd, 0)
        os.close(fd)
