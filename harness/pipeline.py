"""Cells in flight: what the run loop overlaps, where the backend and the executor can (local QEMU).

The loop (:mod:`stormatrix.runner`) measures one cell after the other: apply -> ready -> run -> journal. Where the
backend can run more than one VM of the test (:class:`~stormatrix.backends.base.BootsAhead`) and the executor
splits a cell's run into send, await the window, collect (``GuestExecutor.splits``), this pipeline takes three
things off the critical path, never into a window:

- **boot-ahead**: the next configurations' VMs boot during the current cell (``[qemu] boot_ahead``, ``overlap``);
- **two cells in flight**: the measured VM is handed off once its window closed; its result, record, journal and
  stop are done while the next cell warms up (:class:`Tail`, ``[qemu] pipeline``);
- **prepare-ahead**: the next VM start's first job is sent to its VM booted ahead, which holds it at its warm-up's
  gate until its cell starts (:class:`Prepared`, ``[qemu] prepare_ahead``).

Without the capability it does nothing: each cell runs whole. Its state (the cell left in flight, the job sent
ahead, the cells to retry after the groups) is its own; the loop hands it each VM start's :class:`Flight`.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from .backends.base import Target, booting_ahead
from .core.errors import JournalWriteError, StormatrixError
from .core.model import Cell, DiskConfig
from .core.scope import GuestEndpoint
from .core.settings import RunSettings
from .executors.base import GuestExecutor, WorkloadResult
from .safety import check_write_allowed
from .window import Window

log = logging.getLogger("stormatrix.runner")


@dataclass
class Flight:
    """What the stages of one VM start (:meth:`stormatrix.runner.Runner._run_group`) hand each other."""

    disk: DiskConfig
    remaining: list[Cell]  # its cells not yet journaled or given up, the current one first
    upcoming: list[DiskConfig]  # the next configurations, for the backend to boot ahead
    attempt: int = 0
    stage: str = "apply"  # where a failure happened (the cell-error record's ``stage``)
    current: Cell = field(init=False)
    executor: GuestExecutor | None = None
    guest: dict[str, Any] = field(default_factory=dict)  # what the guest reported when ready
    t0: float = 0.0  # monotonic start of the VM start
    t_started: str = ""
    t_ready: str = ""
    boot_s: float = 0.0
    booted_ahead: bool = False
    vm_start: dict[str, Any] | None = None  # how the backend started the VM (boot, or restore from a saved state)
    ahead_pending: list[DiskConfig] = field(default_factory=list)  # still to be booted ahead in this VM start
    handed_off: bool = False  # the VM went on with the last cell's result to come (:class:`Tail`)
    next_cell: Cell | None = None  # the next VM start's first cell, whose job may be sent ahead (:class:`Prepared`)
    sent_ahead: bool = False  # this VM start's first job was sent ahead (:meth:`Pipeline.prepare_next`)

    def __post_init__(self) -> None:
        self.current = self.remaining[0]


@dataclass
class Prepared:
    """The next VM start's first cell, its job sent ahead to its VM booted ahead (:meth:`Pipeline.prepare_next`):
    the guest holds before the warm-up's first I/O until the cell starts."""

    cell: Cell
    disk: DiskConfig
    executor: GuestExecutor
    guest: dict[str, Any]  # what the guest reported when ready
    handle: Any  # the backend's ahead_ready(), for taken_ahead and discard()


@dataclass
class Tail:
    """A cell whose window has closed and whose result, record, journal and stop are still to come: done
    while the next cell warms up (:meth:`Pipeline.finish_tail`)."""

    flight: Flight  # the cell's flight (its executor, times, guest facts), the cell its only one left
    window: Window
    handle: Any  # the backend's hand_off(), for release()


#: the loop's own stages the pipeline calls back: a result's record and journal, a failed attempt's handling
Finish = Callable[[Flight, Window, WorkloadResult], None]
Failed = Callable[[Flight, "StormatrixError | OSError"], None]


class Pipeline:
    """The cells in flight of one run on ``backend`` (see the module docstring).

    ``executor_for``: an executor on a VM booted ahead (None where the source has none: then no job is sent
    ahead); ``finish``/``failed``: the loop's record-and-journal and failure stages, for the cell left in flight;
    ``sends_ahead``: False while a guest's drivers are still to be learnt (no job is sent ahead then);
    ``timeline``: the run's per-cell stage times, which it marks too."""

    def __init__(self, backend: Target, settings: RunSettings, *,
                 executor_for: Callable[[list[GuestEndpoint]], GuestExecutor | None], finish: Finish,
                 failed: Failed, sends_ahead: bool, timeline: dict[str, dict[str, float]]) -> None:
        self.ahead = booting_ahead(backend)
        self.settings = settings
        self._executor_for, self._finish, self._failed = executor_for, finish, failed
        self._sends_ahead = sends_ahead
        self.timeline = timeline
        self.tail: Tail | None = None  # the cell whose window closed and whose result is still to come
        self.prepared: Prepared | None = None  # the next VM start's first job, sent ahead
        self.retry_later: list[tuple[DiskConfig, Cell, int]] = []  # (its configuration, cell, attempts so far)
        self.stop_exc: BaseException | None = None  # a tail's failure that ends the run

    @property
    def depth(self) -> int:
        """How many of the next configurations the backend may boot ahead ([qemu] boot_ahead_depth)."""
        return self.ahead.ahead_depth if self.ahead is not None else 0

    def _mark(self, key: str, stage: str) -> None:
        self.timeline.setdefault(key, {})[stage] = time.monotonic()

    # --- around the loop's stages ---------------------------------------------------------------------------
    def before_apply(self, f: Flight) -> Prepared | None:
        """The job sent ahead for this VM start's first cell, if it is still the one to run (else discarded)."""
        prepared, self.prepared = self.prepared, None
        if prepared is not None and (prepared.cell.key != f.current.key or prepared.disk != f.disk):
            self.discard_prepared(prepared)  # what runs now is not the cell its job was sent ahead for
            return None
        return prepared

    def applied(self, f: Flight, prepared: Prepared | None) -> None:
        """After apply: take over the job sent ahead if the backend took its VM; with ``overlap``, let the next
        configuration's VM boot now when this one started cold (the others after its job is sent)."""
        f.sent_ahead, f.booted_ahead, f.ahead_pending = False, False, list(f.upcoming)
        if self.ahead is None:
            return
        if prepared is not None:
            if self.ahead.taken_ahead is prepared.handle and prepared.handle is not None:
                f.executor, f.guest, f.sent_ahead = prepared.executor, prepared.guest, True
            else:  # (the backend started another VM for it)
                self.discard_prepared(prepared)
        f.booted_ahead = self.ahead.booted_ahead
        if self.ahead.overlaps and not f.booted_ahead and f.ahead_pending:
            # at once: the next VM boots while this one gets ready and warms up (paused in windows); the ones
            # after it once the job is sent (three TCG boots at once slowed this one's by ~2x, measured)
            self.ahead.boot_ahead(f.ahead_pending.pop(0))

    def measure(self, f: Flight, cell: Cell, window: Window) -> WorkloadResult | None:
        """Run ``cell``'s workload in ``window``: its result, or None where its VM was handed off with the result
        still to come (:class:`Tail`; journaled by :meth:`finish_tail` while the next cell warms up)."""
        executor, timing, last = f.executor, self.settings.timing, len(f.remaining) == 1
        assert executor is not None
        if not executor.splits:
            self._boot_ahead(f)
            return executor.run(cell, timing, window)
        if last and (self.ahead is None or not self.ahead.overlaps):
            self._boot_ahead(f)
        executor.send(cell, timing, window)
        # while this cell warms up: the previous cell's result, record, journal and stop, then the next VMs'
        # boot (nothing of it in this cell's window: its guest waits for GO to measure)
        self.finish_tail()
        if (self.ahead is not None and self.ahead.overlaps) or last:
            self._boot_ahead(f)
        if last:
            self.prepare_next(f, window)
        executor.await_window(cell, window)
        handle = self.ahead.hand_off() if last and self.ahead is not None else None
        if handle is None:
            return executor.collect(cell)
        self.tail = Tail(flight=replace(f, remaining=[cell]), window=window, handle=handle)
        f.executor, f.handed_off = None, True
        f.remaining.pop(0)
        return None

    def _boot_ahead(self, f: Flight) -> None:
        """Let the backend boot the next configurations' VMs not asked for yet in this VM start."""
        pending, f.ahead_pending = f.ahead_pending, []
        for disk in pending:
            if self.ahead is not None:
                self.ahead.boot_ahead(disk)

    # --- prepare-ahead --------------------------------------------------------------------------------------
    def prepare_next(self, f: Flight, window: Window) -> None:
        """While this cell warms up: send the next VM start's first job ahead to its VM booted ahead, once that VM
        is ready (waiting at most until shortly before this warm-up ends: the measure marker must be answered at
        once), so that its warm-up starts the moment its cell does (``[qemu] prepare_ahead``). Only where the
        backend claims such a VM and the executor can hold a job at its warm-up; never for a guest whose drivers
        are still to be learnt; a guest whose disk may not be written keeps its job until its turn (the same
        refusal is raised then). A failure here only means the job is sent at the cell's start."""
        cell, timing, ahead = f.next_cell, self.settings.timing, self.ahead
        if ahead is None or cell is None or self.prepared is not None or not self._sends_ahead or timing.ramp_s <= 0:
            return
        handle = ahead.ahead_ready(cell.disk, window.mono_sent + timing.ramp_s - 0.25)
        if handle is None:
            return
        executor: GuestExecutor | None = None
        try:
            executor = self._executor_for(ahead.ahead_endpoints(handle))
            if executor is None or not executor.prepares:
                raise ValueError("the executor cannot hold a job sent ahead")
            executor.before_ready(cell)
            executor.connect(time.monotonic() + 5)
            guest = executor.wait_ready(time.monotonic() + 5)
            check_write_allowed(cell, guest, self.settings.run["allow_write"])
            executor.prepare(cell, timing)
        except (StormatrixError, OSError, ValueError) as exc:
            log.info("%s: its job was not sent ahead (%s); it is sent when its cell starts", cell.key, exc)
            if executor is not None:
                executor.close()
            ahead.discard(handle)
            return
        self._mark(cell.key, "sent_ahead")
        self.prepared = Prepared(cell=cell, disk=cell.disk, executor=executor, guest=guest, handle=handle)

    def discard_prepared(self, prepared: Prepared | None = None) -> None:
        """Give up the job sent ahead (``prepared``, or the one pending) and its VM: what runs next changed."""
        if prepared is None:
            prepared, self.prepared = self.prepared, None
        if prepared is None or self.ahead is None:
            return
        prepared.executor.close()
        self.ahead.discard(prepared.handle)
        self.timeline.get(prepared.cell.key, {}).pop("sent_ahead", None)

    # --- two cells in flight --------------------------------------------------------------------------------
    def finish_tail(self) -> None:
        """Collect, cross-check, journal and stop the cell left in flight (:class:`Tail`), if any. A failure
        is journaled as that cell's; its retry runs after the groups (:meth:`next_retry`)."""
        tail, self.tail = self.tail, None
        if tail is None or self.ahead is None:
            return
        f = tail.flight
        assert f.executor is not None
        cell = f.remaining[0]
        try:
            self._finish(f, tail.window, f.executor.collect(cell))
        except JournalWriteError:
            raise
        except (StormatrixError, OSError) as exc:
            try:
                self._failed(f, exc)
            except BaseException as stop:
                self.stop_exc = stop  # raised through the cell now in flight, which it must not blame
                raise
            if f.remaining:  # tried again later, on a VM of its own
                self.retry_later.append((f.disk, cell, f.attempt))
        finally:
            f.executor.close()
            self.ahead.release(tail.handle)
            self._mark(cell.key, "stopped")

    def settle(self) -> None:
        """After the groups: nothing stays sent ahead or in flight."""
        self.discard_prepared()
        self.finish_tail()

    def next_retry(self) -> tuple[DiskConfig, Cell, int] | None:
        """A cell whose result failed after the next cell was under way: (its configuration, cell, attempts)."""
        return self.retry_later.pop(0) if self.retry_later else None
