"""The measurement window: the moments the guest's measurement starts and ends, as the host sees them.

The executor calls :meth:`Window.measure_started` / :meth:`Window.measure_ended` at the guest's own
window edges (markers, or fio's timed window). The window then starts the host collector(s), snapshots
QEMU's accounting of the test disk at both edges, and lets a VM booting ahead pause meanwhile. Errors
inside the window are kept and reported after the workload returns, so the guest's run is never cut
short mid-protocol. One window serves a matrix cell (one collector per QEMU process the backend names)
and a suite point (one collector over all the side's VMs).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from .backends.base import Target
from .collect import merge_hosts
from .core.model import iso_ago, now_iso
from .core.scope import BlockStats

log = logging.getLogger("stormatrix.runner")


@dataclass(frozen=True)
class WindowResult:
    """What one measurement window measured, read once after the workload returned.

    ``t_start``/``t_end`` are the guest's window edges as ISO times, ``seconds`` their distance on the
    monotonic clock; ``bs0``/``bs1`` QEMU's block accounting at the edges (None where the platform has
    none); ``host`` the merged host record; ``vms`` the names of the measured VMs; ``overlap`` what else
    ran, paused, during the window (a VM booting ahead); ``error`` why the host side failed, and
    ``failed_at_start`` whether it failed before anything was measured.
    """

    t_start: str | None
    t_end: str | None
    seconds: float
    bs0: BlockStats | None
    bs1: BlockStats | None
    host: dict[str, Any] | None
    vms: tuple[str, ...]
    overlap: dict[str, Any] | None
    error: Exception | None
    failed_at_start: bool

    @property
    def complete(self) -> bool:
        """Both edges were seen and the host side measured without an error."""
        return self.error is None and self.t_start is not None and self.t_end is not None


@dataclass
class Window:
    """The measurement window: starts the collector and snapshots QEMU's accounting at both edges."""

    backend: Target
    collector_factory: Callable[[Any], Any]
    t_start: str | None = None
    t_end: str | None = None
    mono_sent: float = 0.0  # when the executor sent the job or released it (job_sent), where it says so
    mono_warmup: float = 0.0  # when the warm-up's I/O started (warmup_started), where the guest says so
    t_warmup: str | None = None
    mono_marker: float = 0.0  # when the guest said its measurement is about to start (before the window opened)
    mono_start: float = 0.0
    mono_go: float = 0.0  # when measure_started returned: the collectors run, the guest gets its GO now
    mono_end: float = 0.0
    bs0: BlockStats | None = None
    bs1: BlockStats | None = None
    host: dict[str, Any] | None = None
    collectors: list[Any] = field(default_factory=list)
    scopes: list[Any] = field(default_factory=list)
    error: Exception | None = None
    failed_at_start: bool = False
    #: one collector for the whole window (a suite's collector over all its VMs), instead of one per scope
    point_collector: Any = None
    overlap: dict[str, Any] | None = None  # what else ran (paused) on the host during the window
    sent_ahead: bool = False  # the job was sent ahead and released when the cell started (the record says so)
    _opened: bool = False

    def job_sent(self) -> None:
        """The executor handed the job to the guest: its warm-up runs from now (for the timing breakdown)."""
        self.mono_sent = time.monotonic()

    def warmup_started(self, seconds_ago: float) -> None:
        """The guest's warm-up I/O started ``seconds_ago`` (by the guest's clock, from its markers)."""
        self.mono_warmup = time.monotonic() - seconds_ago
        self.t_warmup = iso_ago(seconds_ago)

    def measure_started(self) -> None:
        self.mono_marker = self.mono_start = time.monotonic()
        self.t_start = now_iso()
        try:
            # The guest's fio waits for GO (sent when this returns), so nothing here races its I/O.
            self._opened = True
            self.backend.window_opened()  # first: a VM booting ahead stops before anything is measured
            # the window starts now: window_opened may have waited (a VM's restore finishing, ~0.5 s)
            self.mono_start = time.monotonic()
            self.t_start = now_iso()
            self.scopes = self.backend.scope()
            if self.point_collector is not None:
                self.collectors = [self.point_collector]
            else:
                self.collectors = [self.collector_factory(scope) for scope in self.scopes]
            for c in self.collectors:
                c.start()
            self.bs0 = self.backend.blockstats()
        except Exception as exc:  # any failure: reported after the workload returns
            self.error = exc
            self.failed_at_start = True
        self.mono_go = time.monotonic()

    def measure_ended(self) -> None:
        self.mono_end = time.monotonic()
        self.t_end = now_iso()
        if self.error:
            self.abort()
            return
        try:
            self.bs1 = self.backend.blockstats()
            results = [c.stop() for c in self.collectors]
            self.host = merge_hosts(results)
        except Exception as exc:  # any failure: reported after the workload returns, like start's
            self.error = exc
        self._close_window()

    def result(self) -> WindowResult:
        """The window's outcome, for the record (call after the workload returned)."""
        return WindowResult(t_start=self.t_start, t_end=self.t_end, seconds=self.mono_end - self.mono_start,
                            bs0=self.bs0, bs1=self.bs1, host=self.host, vms=tuple(s.vm for s in self.scopes),
                            overlap=self.overlap, error=self.error, failed_at_start=self.failed_at_start)

    def marks(self) -> dict[str, float]:
        """The monotonic times of the window's moments that happened (the runner's per-cell timeline)."""
        return {k: v for k, v in (("sent", self.mono_sent), ("warmup_start", self.mono_warmup),
                                  ("measure_marker", self.mono_marker), ("measure_start", self.mono_start),
                                  ("go", self.mono_go), ("measure_end", self.mono_end)) if v}

    def abort(self) -> None:
        for c in self.collectors:
            try:
                c.abort()
            except Exception:  # any failure: abort runs on a failed cell, whose own error is reported
                pass
        self._close_window()

    def _close_window(self) -> None:
        """Resume what the window paused, once, whatever happened inside it."""
        if not self._opened:
            return
        self._opened = False
        try:
            self.overlap = self.backend.window_closed()
        except Exception as exc:  # any failure: the next apply() finds a VM that cannot resume
            log.warning("resuming the VM booting ahead failed: %s", exc)
