"""One writer per run directory: ``run``, ``suite run`` and ``demo`` hold a lock on it while they write.

Why: two runs started into one directory (a second terminal, a cron job that overlaps the first) would
both read the journal, both decide which cells are left, and append the same cells twice, into one
file, from two processes; each would also restore the VM under the other. The second one is refused at
once (exit 2), naming the process that holds the directory.

How: an exclusive lock on ``RUN_DIR/.stormatrix.lock`` (``flock``; on Windows ``LockFileEx``:
:mod:`stormatrix.core.oscompat`), which the system drops when the holder exits, however it exits — a kill -9
or a closed console leaves no stale lock to clean up. The file says who holds it, for the
message. Readers (``report``, ``compare``, ``suite plan``) never take it: reading a journal while a run
appends to it is safe (each record is one line, fsynced).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
from pathlib import Path
from typing import Iterator

from ..core import oscompat
from ..core.errors import InputError

LOCK_NAME = ".stormatrix.lock"


def _holder(fd: int) -> str:
    """Who holds the lock, in words, from what the holder wrote into the file."""
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        info = json.loads(os.read(fd, 4096).decode("utf-8", "replace") or "{}")
    except (OSError, ValueError):
        return "another stormatrix process"
    if not isinstance(info, dict):
        return "another stormatrix process"
    since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(info["started"])) \
        if isinstance(info.get("started"), (int, float)) else "?"
    return (f"stormatrix {info.get('command', '?')} (pid {info.get('pid', '?')} on {info.get('host', '?')}, "
            f"since {since})")


@contextlib.contextmanager
def hold_run_dir(run_dir: str | Path, command: str) -> Iterator[None]:
    """Hold ``run_dir`` (created if missing) for one writer while the block runs; InputError (exit 2) when
    another process holds it. Where the file system has no locks (some network mounts), nothing is held."""
    folder = Path(run_dir)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a path under a regular file, /proc, a read-only or full file system
        raise InputError(f"{folder}: the run directory cannot be created ({exc.strerror}). Fix: give -o a "
                         "directory you may write to") from None
    path = folder / LOCK_NAME
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0) | oscompat.O_BINARY, 0o644)
    except OSError as exc:
        raise InputError(f"{path}: cannot be created ({exc.strerror}), so the run directory cannot be held for "
                         "this run. Fix: give -o a directory you may write to") from None
    try:
        try:
            oscompat.lock(fd, wait=False)
        except oscompat.LockHeld:
            raise InputError(f"{folder} is in use by {_holder(fd)}: two runs writing one journal would measure "
                             "cells twice and restore the VM under each other. Fix: wait until it ends (or stop "
                             "it), or give -o another run directory") from None
        except OSError:
            yield  # (no locks here: the journal's own checks still apply)
            return
        note = {"pid": os.getpid(), "host": socket.gethostname(), "started": time.time(), "command": command}
        os.ftruncate(fd, 0)
        oscompat.write_at(fd, json.dumps(note).encode(), 0)
        yield
    finally:
        oscompat.unlock(fd)  # (closing drops it too; Windows frees a closed file's locks "when resources allow")
        os.close(fd)
