"""The contract between :mod:`.oscompat` and its two implementations (``osposix.py``, ``oswindows.py``): the
:class:`System` protocol each implementation satisfies and the words both use, :class:`Usage` (what an exited
child used) and :data:`LockHeld`. Kept apart from ``oscompat.py`` because that module imports the
implementations to choose one, and the implementations need these words: here neither imports the other.

As cheap to import as ``oscompat.py`` (see its docstring): no ``typing`` at run time.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # (typing's own costs 10 ms; mypy reads this name as typing's)
if TYPE_CHECKING:
    from pathlib import PurePath
    from typing import Any, Protocol

#: another process holds the lock (a non-blocking :func:`~stormatrix.core.oscompat.lock` was refused): Python's own
#: name for "would block"
LockHeld = BlockingIOError


class Usage:
    """What an exited child used itself (not its children): seconds of CPU, peak memory in KiB."""

    __slots__ = ("user_s", "system_s", "max_rss_kib")

    def __init__(self, user_s: float, system_s: float, max_rss_kib: float | None) -> None:
        self.user_s, self.system_s, self.max_rss_kib = user_s, system_s, max_rss_kib

    def __repr__(self) -> str:
        return f"Usage(user_s={self.user_s!r}, system_s={self.system_s!r}, max_rss_kib={self.max_rss_kib!r})"

    def as_dict(self) -> dict[str, float]:
        out = {"user_s": self.user_s, "system_s": self.system_s, "cpu_s": self.user_s + self.system_s}
        if self.max_rss_kib is not None:
            out["max_rss_kib"] = self.max_rss_kib
        return out


if TYPE_CHECKING:
    class Popenish(Protocol):
        """What the process-tree functions need of a ``subprocess.Popen``."""

        pid: int
        returncode: Any

        def poll(self) -> int | None: ...

        def kill(self) -> None: ...

        def send_signal(self, sig: int) -> None: ...

    class System(Protocol):
        """One platform's answers; ``oscompat.py``'s functions delegate to its :data:`~stormatrix.core.oscompat.OS`."""

        name: str
        broken_pipe_errnos: frozenset[int]
        name_unit: str

        @property
        def termination_signals(self) -> tuple[int, ...]: ...

        def lock(self, fd: int, *, wait: bool) -> None: ...

        def unlock(self, fd: int) -> None: ...

        def write_at(self, fd: int, data: bytes, offset: int) -> None: ...

        def new_group(self) -> dict[str, Any]: ...

        def interrupt_tree(self, proc: Popenish) -> None: ...

        def kill_tree(self, proc: Popenish) -> None: ...

        def reap(self, proc: Popenish) -> tuple[int, Usage | None] | None: ...

        def path_limits(self, folder: str) -> tuple[int, int]: ...

        def name_length(self, name: str) -> int: ...

        def name_problem(self, name: str) -> str | None: ...

        def usable_cpus(self) -> list[int]: ...

        def cache_home(self) -> str: ...

        def pure_path(self, path: str | os.PathLike[str]) -> PurePath: ...

        def load_average(self) -> float | None: ...

        def others_may_read(self, mode: int) -> bool: ...
