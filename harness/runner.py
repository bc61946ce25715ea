"""The runner: the method, one cell at a time, in named stages.

    plan -> prepare -> for each disk configuration (x repeat):
        apply (reconfigure + restart the VM) -> ready (guest answers)
        -> for each workload: run (warm-up, measurement window with the host collector) -> journal
    finally: restore the VM's original configuration

A cell is journaled (fsynced) as soon as it is measured, so a crash loses at most the cell in
flight; running the same command again skips every journaled cell. A failed attempt is journaled
as ``cell-error`` and retried ``[run] retries`` times; then ``[run] on_error`` decides: ``skip`` goes
on with the next cell, ``stop`` ends the run (after restoring the VM).

This is the only run loop. What it runs comes from a :class:`RunSource`: a matrix
(:class:`MatrixSource`: cells expanded from the grid, the backend and executor its ``[run]`` names) or a
platform-comparison suite (:class:`stormatrix.suiterun.SuiteSource`: points on a side's guests, given by
the platform's suite-guests capability). The runner reads the source's :class:`RunSettings` and asks
it for the plan, the backend, the executor and what its records add; it knows no kind of source. The
measurement window is in :mod:`stormatrix.window`, the records in :mod:`stormatrix.records`.
"""

from __future__ import annotations

import json
import logging
import secrets
import sys
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, TextIO

from . import __version__, records, repeats, runorder
from .backends.base import Backend
from .core.errors import (AuthenticationFailed, BackendError, CollectorError, JournalWriteError, MatrixError,
                          StormatrixError, UnsafeWrite)
from .core.model import WRITE_MODES, Cell, DiskConfig, Plan, now_iso
from .core.recordtypes import CellRecord, Record, RunRecord
from .core.scope import GuestEndpoint
from .core.settings import RunSettings
from .executors.base import DriverGate, GuestExecutor, WorkloadResult
from .host.inventory import inventory
from .journal import Journal, done_keys
from .progress import DEFAULT_OVERHEAD_S, Progress, estimate_seconds, fmt_duration
from .registry import backend_class, executor_class, sections
from .spec import HOST_SECTION, MATRIX_SECTION, RUN_SECTION, WORKLOAD_SECTION, MatrixSpec, expand
from .window import Window

log = logging.getLogger("stormatrix.runner")


def check_write_allowed(cell: Cell, guest: dict[str, Any], allow_write: bool) -> None:
    """Refuse a write workload on a disk that holds a partition table or a filesystem.

    The guest reports what it found in the disk's first sectors (``signature``: ``none`` for a blank
    or benchmark-pattern disk). A guest that cannot tell (``unknown``/``unreadable``) is treated as
    holding data. Executors that report nothing (fio-server, WinRM: the Windows module checks the
    disk is raw and offline itself) get a warning, not a refusal.
    """
    if allow_write or cell.workload.rw not in WRITE_MODES:
        return
    signature = guest.get("signature")
    if signature is None:
        log.warning("%s: the guest did not report whether %s holds data; writing anyway", cell.key,
                    guest.get("disk", "the test disk"))
        return
    if signature != "none":
        what = {"partitions": "partitions", "unknown": "contents the guest could not inspect",
                "unreadable": "contents the guest could not read"}.get(signature, f"a {signature} signature")
        raise UnsafeWrite(f"refusing the write workload {cell.workload.name!r} (rw={cell.workload.rw}): the test "
                          f"disk {guest.get('disk', '')} holds {what} and would be overwritten. Fix: give the VM a "
                          "blank test disk, or set [run] allow_write = true if its contents may be destroyed",
                          cell=cell.key)


def make_run_id(name: str) -> str:
    return f"{datetime.now(timezone.utc):%Y%m%dT%H%M%S}-{name}-{secrets.token_hex(2)}"


@dataclass(frozen=True)
class RunPolicy:
    """How failures end a run, beyond ``[run] retries`` and ``on_error``.

    ``stop_on``: errors after which nothing later can be measured comparably, so the run ends at
    once, whatever ``on_error`` says (a suite's guest that dropped out: points on fewer guests are
    not comparable). ``never_retry``: errors that trying again cannot cure.
    """

    stop_on: tuple[type[BaseException], ...] = ()
    never_retry: tuple[type[BaseException], ...] = (UnsafeWrite, AuthenticationFailed)


@dataclass(frozen=True)
class RunOptions:
    """How a run is labelled and shown (``side``, ``progress``, ``stream``: all the command line gives), and
    the stand-ins a test hands in for the source's own parts (``backend``, ``collector_factory``: the host
    collector per scope, ``executor_factory``)."""

    side: str | None = None
    progress: bool = True
    stream: TextIO | None = None  # default: sys.stderr, bound when the run starts
    backend: Backend | None = None
    collector_factory: Callable[[Any], Any] | None = None
    executor_factory: Callable[[list[GuestEndpoint]], GuestExecutor] | None = None


class RunSource(ABC):
    """What a run is of: its settings, its plan, the backend and executor that measure it, and what its
    journal's records add. The runner asks, in this order: :meth:`check_resume` (before anything is
    appended), :meth:`plan`, :meth:`make_backend` (unless a test hands one in), the backend's ``prepare()``,
    :meth:`run_fields` for the run record, then per VM start :meth:`make_executor`, and per cell record
    :meth:`cell_fields`."""

    settings: RunSettings
    #: the backend class the run uses (its controllers, for the plan; tests patch its methods)
    backend_cls: type[Backend]
    policy: RunPolicy = RunPolicy()
    #: seconds per VM start beyond warm-up and window, for the ETA
    overhead_s: float = DEFAULT_OVERHEAD_S

    @abstractmethod
    def check_resume(self, records_before: list[Record], run_dir: Path, side: str | None) -> None:
        """Refuse (MatrixError) to resume into a journal this run does not belong in (``records_before``: the
        journal's records as their types)."""

    @abstractmethod
    def plan(self) -> Plan: ...

    @abstractmethod
    def make_backend(self, run_dir: Path) -> Backend: ...

    @abstractmethod
    def make_executor(self, backend: Backend) -> GuestExecutor: ...

    def driver_gate(self) -> DriverGate | None:
        """The executor's gate on the guest's drivers (a Windows guest's virtio-win), if it has one."""
        return None

    def make_executor_for(self, endpoints: list[GuestEndpoint]) -> GuestExecutor | None:
        """An executor on guests other than the backend's current VM's (a VM booted ahead, to send it its first
        job ahead); None where this source has none (then no job is sent ahead)."""
        return None

    def boots_ahead(self) -> bool:
        """Will the backend boot each next VM during the current cell (for the ETA)?"""
        return False

    def restores(self) -> bool:
        """Will the backend start VMs from saved booted states (for the ETA)?"""
        return False

    def run_fields(self, backend: Backend) -> dict[str, Any]:
        """What the run record adds (after the backend's ``prepare()``): docs/journal.md."""
        return {}

    def cell_fields(self) -> dict[str, Any]:
        """What every cell record adds."""
        return {}


class MatrixSource(RunSource):
    """A matrix file: its cells expanded from the grid on the backend its ``[run]`` names, run by the executor
    it names (``auto``: the backend's default)."""

    def __init__(self, spec: MatrixSpec, *, backend_cls: type[Backend] | None = None) -> None:
        self.spec = spec
        self.settings = spec
        self.backend_cls = backend_cls or backend_class(spec.run["backend"])

    def check_resume(self, records_before: list[Record], run_dir: Path, side: str | None) -> None:
        def differences(rec: RunRecord) -> list[str]:
            return run_differences(rec.matrix, self.settings.raw) if isinstance(rec.matrix, dict) else []

        check_same_run(records_before, self.spec, run_dir, side=side, kind="matrix", differences=differences)

    def plan(self) -> Plan:
        self.backend_cls.host(self.spec)  # [host]: a scope or CPU set this backend cannot measure stops here
        return expand(self.spec, backend_controllers=self.backend_cls.controllers)

    def make_backend(self, run_dir: Path) -> Backend:
        return self.backend_cls(self.spec, run_dir)

    def executor_name(self) -> str:
        name = self.settings.run["executor"]
        return self.backend_cls.default_executor if name == "auto" else name

    def executor_class(self) -> type[GuestExecutor]:
        return executor_class(self.executor_name())

    def make_executor(self, backend: Backend) -> GuestExecutor:
        return self.make_executor_for(backend.endpoints())

    def make_executor_for(self, endpoints: list[GuestEndpoint]) -> GuestExecutor:
        name = self.executor_name()
        return executor_class(name)(endpoints, self.settings.raw.get(name, {}))

    def boots_ahead(self) -> bool:
        return self.backend_cls.boots_ahead(self.spec)

    def restores(self) -> bool:
        return self.backend_cls.restores(self.spec)

    def driver_gate(self) -> DriverGate | None:
        return self.executor_class().driver_gate(self.spec)


def executor_name_for(spec: MatrixSpec) -> str:
    """The guest executor a matrix runs with: ``[run] executor``, or its backend's default for ``auto``."""
    name = spec.run["executor"]
    return backend_class(spec.run["backend"]).default_executor if name == "auto" else name


def check_executor_spec(spec: MatrixSpec) -> None:
    """The executor's own plan-time checks (e.g. WinRM's shell memory quota), before any VM is touched."""
    executor_class(executor_name_for(spec)).check_spec(spec)


def run_differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """``[section] key: was X, now Y`` per key that differs, defaults filled in, except the keys each section's
    owner lets a resume change (:attr:`~stormatrix.schema.Section.may_change_on_resume`)."""
    schema = {"run": RUN_SECTION, "matrix": MATRIX_SECTION, "workload": WORKLOAD_SECTION, "host": HOST_SECTION,
              **sections()}

    def shown(value: Any) -> str:  # TOML has no null: None is a key or section the matrix does not have
        return "(absent)" if value is None else json.dumps(value)[:40]

    def view(name: str, table: Any) -> Any:  # as JSON holds it (the journal's copy went through JSON)
        sec = schema.get(name)
        keep = sec.may_change_on_resume if sec else frozenset()
        if isinstance(table, dict):
            table = {k: v for k, v in {**({k: f.default for k, f in sec.fields.items() if not f.required}
                                          if sec else {}), **table}.items() if k not in keep}
        return json.loads(json.dumps(table, default=str))

    out: list[str] = []
    for name in sorted(set(old) | set(new), key=lambda n: (n != "run", n != "matrix", n)):
        a, b = old.get(name, {} if name in schema else None), new.get(name, {} if name in schema else None)
        if name == "workload" and isinstance(a, list) and isinstance(b, list):
            out += [f"[[workload]]: was {len(a)} workloads, now {len(b)}"] if len(a) != len(b) else []
            pairs = [(f"workload[{i}]", view(name, x), view(name, y)) for i, (x, y) in enumerate(zip(a, b), 1)]
        else:
            pairs = [(f"[{name}]", view(name, a), view(name, b))]
        for where, x, y in pairs:
            x, y = (x, y) if isinstance(x, dict) and isinstance(y, dict) else ({"": x}, {"": y})
            out += [f"{where} {k}".rstrip() + f": was {shown(x.get(k))}, now {shown(y.get(k))}"
                    for k in sorted(set(x) | set(y)) if x.get(k) != y.get(k)]
    return out


def check_same_run(records_before: list[Record], settings: RunSettings, run_dir: Path, *,
                   side: str | None, kind: str,
                   differences: Callable[[RunRecord], list[str]] | None = None) -> None:
    """Refuse (before anything is appended) to resume into another run's journal: docs/journal.md, Resuming.

    ``kind``: what this run is (:attr:`~stormatrix.core.recordtypes.RunRecord.kind`); ``differences``: how the
    source tells its own settings apart from a run record's (a matrix: key by key; a suite checks its guests
    itself)."""
    for rec in (r for r in records_before if isinstance(r, RunRecord)):
        fix = f"give -o a new run directory (e.g. {run_dir}-2), or resume with the matrix that run was measured with"
        if rec.kind != kind:
            diff = [f"it holds a {rec.kind} run's journal, this is a {kind} run"]
        elif rec.side != side:
            diff = [f"it was measured as side {rec.side!r}, this run is side {side!r}"]
            fix = f"resume with {'--side ' + repr(rec.side) if rec.side else 'no --side'}, or {fix}"
        else:
            diff = differences(rec) if differences is not None else []
            conflict = runorder.seed_conflict(settings.run, [rec])
            diff += [conflict] if conflict else []
        if diff:
            raise MatrixError(settings.path, "", f"{run_dir} holds the journal of another run ({rec.run_id}, "
                              f"matrix {rec.matrix_path}): {'; '.join(diff[:3])}"
                              f"{f' (and {len(diff) - 3} more)' if len(diff) > 3 else ''}; resuming would mix "
                              "two runs in one journal", fix)


@dataclass
class _Flight:
    """What the stages of one VM start (:meth:`Runner._run_group`) hand each other."""

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
    handed_off: bool = False  # the VM went on with the last cell's result to come (:class:`_Tail`)
    next_cell: Cell | None = None  # the next VM start's first cell, whose job may be sent ahead (_Prepared)
    sent_ahead: bool = False  # this VM start's first job was sent ahead (:meth:`Runner._prepare_next`)

    def __post_init__(self) -> None:
        self.current = self.remaining[0]


@dataclass
class _Prepared:
    """The next VM start's first cell, its job sent ahead to its VM booted ahead (:meth:`Runner._prepare_next`):
    the guest holds before the warm-up's first I/O until the cell starts."""

    cell: Cell
    disk: DiskConfig
    executor: GuestExecutor
    guest: dict[str, Any]  # what the guest reported when ready
    handle: Any  # the backend's ahead_ready(), for taken_ahead and discard()


@dataclass
class _Tail:
    """A cell whose window has closed and whose result, record, journal and stop are still to come: done
    while the next cell warms up (:meth:`Runner._finish_tail`)."""

    flight: _Flight  # the cell's flight (its executor, times, guest facts), the cell its only one left
    window: Window
    handle: Any  # the backend's hand_off(), for release()


class Runner:
    """Runs a source's cells through a backend and an executor, journaling each one.

    ``source``: what the run is of (:class:`RunSource`; a :class:`MatrixSpec` is run as its
    :class:`MatrixSource`), ``run_dir`` where its journal goes, ``options`` how it is labelled and shown
    and the stand-ins a test hands in. Every kind of source journals through the same record builders.
    """

    def __init__(self, source: RunSource | MatrixSpec, run_dir: str | Path, options: RunOptions = RunOptions()) -> None:
        if isinstance(source, MatrixSpec):
            source = MatrixSource(source, backend_cls=type(options.backend) if options.backend else None)
        self.source = source
        self.settings = source.settings
        self.run_dir = Path(run_dir)
        self.options = options
        self.side = options.side
        self.show_progress = options.progress
        self.stream = options.stream if options.stream is not None else sys.stderr  # bound when run, not imported
        self.backend_cls = source.backend_cls
        self.backend = options.backend
        self.policy = source.policy
        self.journal = Journal(self.run_dir)
        self.run_id = make_run_id(self.settings.name)
        self.failed: list[str] = []
        self.measured = 0
        self.measured_keys: list[str] = []
        self.errors: list[tuple[str, str]] = []  # (key, message) of every cell given up on
        self._extra_reasons: dict[str, dict[str, Any]] = {}  # cell key -> why this extra repeat runs
        self._t_run0 = time.monotonic()
        self._gate: DriverGate | None = None  # the executor's driver gate (a Windows guest's virtio-win drivers)
        self.order: str = self.settings.run.get("order", "rounds")
        self.seed: int = int(self.settings.run.get("seed") or 0)  # decided in run(): the journal's, the file's, or new
        self._round = ""  # "round 2: " in the progress line while a round runs
        #: per cell key, the monotonic time of each stage it passed (benchmarks/bench_cell_overhead.py reads it):
        #: apply, applied, ready, sent, measure_start, measure_end, result, record, journaled, stopped
        self.timeline: dict[str, dict[str, float]] = {}
        self.driver_skipped: list[tuple[str, str]] = []  # (cell key, reason): skipped for a missing driver
        self._tail: _Tail | None = None  # the cell whose window closed and whose result is still to come
        self._retry_later: list[tuple[DiskConfig, Cell, int]] = []  # (its configuration, cell, attempts so far)
        self._stop_exc: BaseException | None = None  # a tail's failure that ends the run
        self._prepared: _Prepared | None = None  # the next VM start's first job, sent ahead

    def plan(self) -> Plan:
        return self.source.plan()

    def make_executor(self, backend: Backend) -> GuestExecutor:
        if self.options.executor_factory is not None:
            return self.options.executor_factory(backend.endpoints())
        return self.source.make_executor(backend)

    # --- the run --------------------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        plan = self.plan()
        self.journal.check_existing()  # then read, and refused before open() could cut another run's torn tail
        records_before = self.journal.typed_records() if self.journal.path.is_file() else []
        self.source.check_resume(records_before, self.run_dir, self.side)
        self.journal.open()
        done = done_keys(records_before)
        self.seed, seed_source = runorder.run_seed(self.settings.run, records_before)
        if self.order == "rounds":
            log.info("cells run in shuffled rounds, seed %d (%s)", self.seed, seed_source)
        pending = [c for c in plan.cells if c.key not in done]
        summary = {"run_dir": str(self.run_dir), "run_id": self.run_id, "cells": len(plan.cells),
                   "order": self.order, "seed": self.seed,
                   "already_done": len(plan.cells) - len(pending),
                   "already_done_keys": [c.key for c in plan.cells if c.key in done],
                   "measured": 0, "measured_keys": [], "failed": [], "errors": [],
                   "skipped": [(s.disk.key, s.reason) for s in plan.skipped], "extra_repeats": []}
        # a resumed run may owe extra repeats although every planned cell is journaled
        extra_first = (repeats.next_extra(plan, self.settings.run, self.journal.records(), set(), self.journal.path)
                       if not pending else [])
        if not pending and not extra_first:
            log.info("all %d cells are in the journal already", len(plan.cells))
            return summary
        timing = self.settings.timing
        boot_ahead = self.source.boots_ahead()
        todo = pending or [c for c, _ in extra_first]
        est = estimate_seconds(Plan(todo), timing.ramp_s, timing.measure_s, overhead_s=self.source.overhead_s,
                               boot_ahead=boot_ahead, restore=self.source.restores()) / len(todo)
        self._cell_estimate = est
        extra_max = repeats.possible_extra(plan, self.settings.run)
        budget_s = float(self.settings.run.get("time_budget_minutes") or 0.0) * 60
        progress = (Progress(len(pending), est, self.stream, extra_max=extra_max, budget_s=budget_s)
                    if self.show_progress else None)
        backend = self.backend or self.source.make_backend(self.run_dir)
        self.backend = backend
        self._t_run0 = time.monotonic()
        self._gate, self.driver_skipped = self.source.driver_gate(), []
        try:
            facts = backend.prepare()
            self._journal_run_header(facts, backend, len(plan.cells), len(pending))
            if progress:
                progress.update("starting")
            self._run_groups(backend, pending, progress)
            self._run_extra_repeats(backend, plan, progress, summary)
        finally:
            self._discard_prepared()
            summary.update(measured=self.measured, measured_keys=self.measured_keys, failed=self.failed,
                           errors=self.errors, driver_skipped=self.driver_skipped)
            try:
                backend.restore()
                self.journal.append(records.restored_record(run_id=self.run_id, backend=backend.name).to_json())
            finally:
                backend.close()
        return summary

    def _run_groups(self, backend: Backend, cells: list[Cell], progress: Progress | None) -> None:
        groups, gate = runorder.ordered_groups(cells, self.order, self.seed), self._gate
        if gate is not None and self.order == "grouped":
            # a Windows guest: controllers that need no virtio-win driver first, so the guest's driver facts
            # are known before any virtio cell boots (resume and extra repeats go by key, not by order)
            groups.sort(key=gate.group_order)
        elif gate is not None:
            # in rounds, one such configuration first is enough for the facts; the rest keep their places
            first = next((i for i, g in enumerate(groups) if not gate.group_order(g)), 0)
            groups.insert(0, groups.pop(first))
        for i, ((disk, repeat), group) in enumerate(groups):
            # the configurations the backend may boot ahead ([qemu] boot_ahead_depth), nearest first
            upcoming = list(dict.fromkeys(g[0][0] for g in groups[i + 1:i + 1 + backend.ahead_depth]))
            self._round = f"round {repeat}: " if self.order == "rounds" else ""
            self._run_group(backend, disk, group, progress, upcoming,
                            next_cell=groups[i + 1][1][0] if i + 1 < len(groups) else None)
        self._discard_prepared()
        self._finish_tail(progress)
        while self._retry_later:  # a cell whose result failed after the next cell was under way
            disk, cell, attempt = self._retry_later.pop(0)
            self._run_group(backend, disk, [cell], progress, attempt=attempt)
            self._finish_tail(progress)

    def _run_extra_repeats(self, backend: Backend, plan: Plan, progress: Progress | None,
                           summary: dict[str, Any]) -> None:
        """Rounds of extra repeats (:mod:`stormatrix.repeats`: open verdicts first, then CV above
        ``[run] cv_limit_pct``), decided from the journal after each round, until none is wanted, each
        configuration is at ``max_repeats``, or the time budget is spent: a round takes as many of its
        repeats, most needed first, as fit in what is left of the budget at the pace measured so far."""
        budget_min = float(self.settings.run.get("time_budget_minutes") or 0.0)
        given_up: set[str] = set()
        while True:
            extra = repeats.next_extra(plan, self.settings.run, self.journal.records(), given_up, self.journal.path)
            if not extra:
                return
            spent = False
            if budget_min > 0:
                elapsed = time.monotonic() - self._t_run0
                pace = elapsed / self.measured if self.measured else self._cell_estimate
                fit = max(int((budget_min * 60 - elapsed) // pace), 0)
                if fit < len(extra):
                    spent, left, extra = True, extra[fit:], extra[:fit]
                    kinds = ", ".join(f"{sum(w['basis'] == b for _, w in left)} for {b}"
                                      for b in dict.fromkeys(w["basis"] for _, w in left))
                    msg = (f"{len(left)} extra repeat(s) still wanted ({kinds}), not run: at {pace:.1f} s per cell "
                           f"they would end beyond [run] time_budget_minutes = {budget_min:g} "
                           f"({fmt_duration(elapsed)} spent)")
                    log.warning(msg)
                    summary["extra_not_run"] = msg
                    summary["extra_not_run_keys"] = [c.key for c, _ in left]
                if not extra:
                    return
            for cell, why in extra:
                self._extra_reasons[cell.key] = why
                log.info("extra repeat %s: %s", cell.key, why["reason"])
            if progress:
                progress.add(len(extra))
            failed_before = set(self.failed)
            self._run_groups(backend, [c for c, _ in extra], progress)
            summary["extra_repeats"] += [c.key for c, _ in extra if c.key in self.measured_keys]
            given_up |= set(self.failed) - failed_before
            if spent:
                return  # the budget ran out in this round

    def _journal_run_header(self, facts: dict[str, Any], backend: Backend, cells: int, pending: int) -> None:
        env = {**run_environment(backend), **facts, "stormatrix": __version__}
        self.journal.append(records.run_record(
            run_id=self.run_id, matrix_path=self.settings.path, matrix=self.settings.raw, backend=backend.name,
            side=self.side, environment=env, original_config=backend.original_config(), cells=cells, todo=pending,
            order=self.order, seed=self.seed, extra=self.source.run_fields(backend)).to_json())

    def _run_group(self, backend: Backend, disk: DiskConfig, cells: list[Cell], progress: Progress | None,
                   upcoming: list[DiskConfig] | None = None, attempt: int = 0, next_cell: Cell | None = None) -> None:
        """One VM start for cells sharing a disk configuration and repeat, in named stages over a
        :class:`_Flight`; retried as configured (``attempt``: tries already spent, for a cell retried later).

            start (apply; boot the next VMs ahead) -> ready -> per cell: measure -> record -> journal
            finally: stop

        Two cells in flight: where the executor and the backend can (local QEMU), the last cell's VM is handed
        off once its window closed (:class:`_Tail`); the next group sends its job first and then collects,
        cross-checks, journals and stops this one while its own warm-up runs, never inside its window.
        """
        f = _Flight(disk=disk, remaining=list(cells), upcoming=list(upcoming or []), attempt=attempt,
                    next_cell=next_cell)
        while f.remaining:
            if self._skip_for_driver(disk, f.remaining, progress):
                return
            f.attempt += 1
            f.stage, f.current, f.executor, f.handed_off = "apply", f.remaining[0], None, False
            try:
                self._stage_start(backend, f, progress)
                self._stage_ready(backend, f)
                first = True
                while f.remaining and not f.handed_off:
                    self._stage_cell(backend, f, progress, first)
                    first = False
            except JournalWriteError:
                raise  # nothing can be recorded any more: stop, the VM is restored by run()
            except (StormatrixError, OSError) as exc:
                if exc is self._stop_exc:
                    raise  # the previous cell's failure ends the run (on_error = "stop")
                self._finish_tail(progress)  # the cell before, journaled before this one's error
                self._stage_failed(backend, f, exc, progress)
            finally:
                self._stage_stop(backend, f)

    def _stage_start(self, backend: Backend, f: _Flight, progress: Progress | None) -> None:
        """Apply the configuration (take the VM booted ahead, or start one) and, with ``overlap``, let the next
        configuration's VM boot now when this one starts cold (the others after its job is sent)."""
        f.t_started = now_iso()
        f.t0 = time.monotonic()
        self._mark(f.current.key, "apply", f.t0)
        if progress:
            progress.update(f"{self._round}{f.disk.key}: starting VM")
        prepared, self._prepared = self._prepared, None
        if prepared is not None and (prepared.cell.key != f.current.key or prepared.disk != f.disk):
            self._discard_prepared(prepared)  # what runs now is not the cell its job was sent ahead for
            prepared = None
        backend.apply(f.disk)
        self._mark(f.current.key, "applied")
        f.sent_ahead = False
        if prepared is not None:
            if backend.taken_ahead is prepared.handle and prepared.handle is not None:
                f.executor, f.guest, f.sent_ahead = prepared.executor, prepared.guest, True
            else:  # (the backend started another VM for it)
                self._discard_prepared(prepared)
        f.booted_ahead = backend.booted_ahead
        f.vm_start = backend.vm_start
        f.ahead_pending = list(f.upcoming)
        if backend.overlaps and not f.booted_ahead and f.ahead_pending:
            # at once: the next VM boots while this one gets ready and warms up (paused in windows); the ones
            # after it once the job is sent (three TCG boots at once slowed this one's by ~2x, measured)
            backend.boot_ahead(f.ahead_pending.pop(0))

    def _stage_ready(self, backend: Backend, f: _Flight) -> None:
        """Wait until the guest answers; learn what it reports (a Windows guest's drivers)."""
        f.stage = "ready"
        if not f.sent_ahead:  # (else its guest was ready, and its job is there: _prepare_next)
            f.executor = self.make_executor(backend)
            f.executor.before_ready(f.current)
            f.executor.connect(time.monotonic() + 30)
            guest = f.executor.wait_ready(time.monotonic() + self.settings.run["boot_timeout_seconds"])
            if self._gate is not None:  # the executor's driver gate: which drivers the guest has (Windows: virtio-win)
                self._gate.learn(guest, f.current.key)
                guest = self._gate.annotate(guest)
            f.guest = guest
        f.boot_s = time.monotonic() - f.t0
        self._mark(f.current.key, "ready")
        f.t_ready = now_iso()

    def _stage_cell(self, backend: Backend, f: _Flight, progress: Progress | None, first: bool) -> None:
        """One cell on the guest that is ready: checks, the workload with its window, then its record, or
        (its group's last cell, where the backend can hand its VM off) leave the record to :meth:`_finish_tail`."""
        executor, cell = f.executor, f.remaining[0]
        assert executor is not None
        f.current = cell
        if progress:
            progress.update(f"{self._round}{cell.key}: measuring")
        if not first:
            f.stage = "ready"
            executor.check_ready(cell)
        f.stage = "safety"
        check_write_allowed(cell, f.guest, self.settings.run["allow_write"])
        f.stage = "run"
        last = len(f.remaining) == 1
        if last and not backend.overlaps:
            self._boot_ahead(backend, f)
        window = self._window(backend)
        window.sent_ahead, f.sent_ahead = f.sent_ahead and first, False
        try:
            if executor.splits:
                executor.send(cell, self.settings.timing, window)
                # while this cell warms up: the previous cell's result, record, journal and stop, then the
                # next VMs' boot (nothing of it in this cell's window: its guest waits for GO to measure)
                self._finish_tail(progress)
                if backend.overlaps or last:
                    self._boot_ahead(backend, f)
                if last:
                    self._prepare_next(backend, f, window)
                executor.await_window(cell, window)
                handle = backend.hand_off() if last else None
                if handle is not None:
                    self._tail = _Tail(flight=replace(f, remaining=[cell]), window=window, handle=handle)
                    f.executor, f.handed_off = None, True
                    f.remaining.pop(0)
                    return
                result = executor.collect(cell)
            else:
                self._boot_ahead(backend, f)
                result = executor.run(cell, self.settings.timing, window)
        except BaseException:
            window.abort()
            raise
        self._mark(cell.key, "result")
        self._journal_cell(f, self._record(backend, f, window, result), progress)

    def _prepare_next(self, backend: Backend, f: _Flight, window: Window) -> None:
        """While this cell warms up: send the next VM start's first job ahead to its VM booted ahead, once that VM
        is ready (waiting at most until shortly before this warm-up ends: the measure marker must be answered at
        once), so that its warm-up starts the moment its cell does (``[qemu] prepare_ahead``). Only where the
        backend claims such a VM and the executor can hold a job at its warm-up; never for a guest whose drivers
        are still to be learnt; a guest whose disk may not be written keeps its job until its turn (the same
        refusal is raised then). A failure here only means the job is sent at the cell's start."""
        cell, timing = f.next_cell, self.settings.timing
        if cell is None or self._prepared is not None or self._gate is not None or timing.ramp_s <= 0:
            return
        handle = backend.ahead_ready(cell.disk, window.mono_sent + timing.ramp_s - 0.25)
        if handle is None:
            return
        executor: GuestExecutor | None = None
        try:
            endpoints = backend.ahead_endpoints(handle)
            executor = (self.options.executor_factory(endpoints) if self.options.executor_factory is not None
                        else self.source.make_executor_for(endpoints))
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
            backend.discard(handle)
            return
        self._mark(cell.key, "sent_ahead")
        self._prepared = _Prepared(cell=cell, disk=cell.disk, executor=executor, guest=guest, handle=handle)

    def _discard_prepared(self, prepared: _Prepared | None = None) -> None:
        """Give up the job sent ahead (``prepared``, or the one pending) and its VM: what runs next changed."""
        if prepared is None:
            prepared, self._prepared = self._prepared, None
        if prepared is None or self.backend is None:
            return
        prepared.executor.close()
        self.backend.discard(prepared.handle)
        self.timeline.get(prepared.cell.key, {}).pop("sent_ahead", None)

    def _boot_ahead(self, backend: Backend, f: _Flight) -> None:
        """Let the backend boot the next configurations' VMs not asked for yet in this VM start."""
        pending, f.ahead_pending = f.ahead_pending, []
        for disk in pending:
            backend.boot_ahead(disk)

    def _journal_cell(self, f: _Flight, record: CellRecord, progress: Progress | None) -> None:
        cell = f.remaining[0]
        self.journal.append(record.to_json())
        self._mark(cell.key, "journaled")
        self.measured += 1
        self.measured_keys.append(cell.key)
        f.remaining.pop(0)
        f.attempt = 0
        if progress:
            progress.update(cell.key, advance=True)
        f.t_started, f.boot_s, f.booted_ahead, f.vm_start = now_iso(), 0.0, False, None

    def _finish_tail(self, progress: Progress | None) -> None:
        """Collect, cross-check, journal and stop the cell left in flight (:class:`_Tail`), if any. A failure
        is journaled as that cell's; its retry runs after the groups (:meth:`_run_groups`)."""
        tail, self._tail = self._tail, None
        if tail is None:
            return
        f, backend = tail.flight, self.backend
        assert f.executor is not None and backend is not None
        cell = f.remaining[0]
        try:
            result = f.executor.collect(cell)
            self._mark(cell.key, "result")
            self._journal_cell(f, self._record(backend, f, tail.window, result), progress)
        except JournalWriteError:
            raise
        except (StormatrixError, OSError) as exc:
            try:
                self._stage_failed(backend, f, exc, progress)
            except BaseException as stop:
                self._stop_exc = stop  # raised through the cell now in flight, which it must not blame
                raise
            if f.remaining:  # tried again later, on a VM of its own
                self._retry_later.append((f.disk, cell, f.attempt))
        finally:
            f.executor.close()
            backend.release(tail.handle)
            self._mark(cell.key, "stopped")

    def _stage_failed(self, backend: Backend, f: _Flight, exc: StormatrixError | OSError,
                      progress: Progress | None) -> None:
        """Journal the failed attempt; give the cell up (or end the run) after ``[run] retries``."""
        retries = self.settings.run["retries"]
        current = f.current
        if isinstance(exc, StormatrixError) and exc.cell is None:
            exc.cell = current.key
        if isinstance(exc, CollectorError) and f.stage == "run" and exc.details.window == "start":
            f.stage = "collect"  # the window never opened: nothing was measured
        if self._gate is not None and isinstance(exc, StormatrixError) and exc.details.guest_facts:
            # not ready, but the guest said what it has: a missing driver skips, not fails, the cells
            self._gate.learn(exc.details.guest_facts, current.key)
            if self._skip_for_driver(f.disk, f.remaining, progress, evidence=str(exc)):
                f.remaining = []
                return
        self._journal_error(current, f.stage, f.attempt, exc, backend)
        fatal = isinstance(exc, self.policy.stop_on)
        if (fatal or isinstance(exc, self.policy.never_retry)
                or (isinstance(exc, StormatrixError) and not exc.retryable)):
            # the disk or the password will not change by trying again (and retried logins
            # can lock the account), nor a test disk the guest cannot see: never retried
            f.attempt = max(f.attempt, retries + 1)
        if f.attempt > retries:
            self.failed.append(current.key)
            self.errors.append((current.key, str(exc)))
            if fatal or self.settings.run["on_error"] == "stop":
                # the CLI prints one line: it must name the cell, and an OSError is no traceback
                if isinstance(exc, StormatrixError):
                    raise exc
                raise BackendError(f"{f.stage}: {exc}", cell=current.key) from exc
            log.error("giving up on %s after %d attempts: %s", current.key, f.attempt, exc)
            f.remaining.pop(0)
            if progress:
                progress.update(f"{current.key}: FAILED", advance=True)
            f.attempt = 0
        else:
            log.warning("cell %s failed (%s); retrying", current.key, exc)

    def _stage_stop(self, backend: Backend, f: _Flight) -> None:
        """Stop the group's VM (unless it was handed off with the last cell's result still to come)."""
        if f.executor is not None:
            f.executor.close()
            f.executor = None
        backend.stop()
        if not f.handed_off:
            self._mark(f.current.key, "stopped")

    def _skip_for_driver(self, disk: DiskConfig, cells: list[Cell], progress: Progress | None,
                         evidence: str = "") -> bool:
        """Journal ``cells`` as skipped, not booted, when the guest lacks their controller's driver
        (``evidence``: what the boot that found the driver missing reported)."""
        gate = self._gate
        reason = gate.skip_reason(disk.controller) if gate is not None else None
        if gate is None or reason is None:
            return False
        log.warning("skipping %d cell(s) of %s: %s", len(cells), disk.key, reason)
        for cell in cells:
            self.journal.append(records.skipped_record(run_id=self.run_id, cell=cell, side=self.side, reason=reason,
                                                       drivers=gate.describe(), readiness=evidence).to_json())
            self.driver_skipped.append((cell.key, reason))
            if progress:
                progress.update(f"{cell.key}: skipped (driver)", advance=True)
        return True

    def _window(self, backend: Backend) -> Window:
        # a backend that measures its host itself (ESXi: Get-Stat; Proxmox over ssh) brings its own collector
        factory = self.options.collector_factory or backend.collector_factory
        return Window(backend, factory, point_collector=backend.window_collector())

    def _record(self, backend: Backend, f: _Flight, window: Window, result: WorkloadResult) -> CellRecord:
        """The cell's journal record: the window's host measurements, fio's summary, the cross-checks."""
        cell, timing = f.remaining[0], self.settings.timing
        measured = window.result()
        if measured.error:
            raise CollectorError(f"the host collector failed: {measured.error}", cell=cell.key,
                                 window="start" if measured.failed_at_start else "end")
        if not measured.complete:
            raise CollectorError("the measurement window never opened or closed", cell=cell.key)
        fio = records.summarize(result, cell)
        result.guest = {**f.guest, **result.guest}
        times: dict[str, Any] = {
            "started": f.t_started, "ready": f.t_ready, "measure_start": measured.t_start,
            "measure_end": measured.t_end, "finished": now_iso(), "boot_s": f.boot_s,
            "ramp_s": timing.ramp_s, "measure_s": timing.measure_s,
            "window_s": measured.seconds, "booted_ahead": f.booted_ahead}
        if window.t_warmup is not None:  # the warm-up's first I/O, by the guest's markers
            times["warmup_start"] = window.t_warmup
        times["job_sent_ahead"] = window.sent_ahead
        if f.vm_start is not None:
            times["vm_start"] = f.vm_start
        run = self.settings.run
        record = records.cell_record(
            run_id=self.run_id, cell=cell, backend=backend.name, side=self.side,
            vm=", ".join(measured.vms), times=times, fio=fio, host=measured.host,
            result=result, rate=records.rate_check(cell, fio, run["rate_tolerance_pct"]),
            cross=records.crosscheck(fio, measured.bs0, measured.bs1, run["crosscheck_tolerance_pct"]),
            overlap=measured.overlap, fields=self.source.cell_fields())
        marks = self.timeline.setdefault(cell.key, {})
        marks.update({k: v for k, v in (("sent", window.mono_sent), ("warmup_start", window.mono_warmup),
                                        ("measure_marker", window.mono_marker), ("measure_start", window.mono_start),
                                        ("go", window.mono_go),
                                        ("measure_end", window.mono_end)) if v})
        self._mark(cell.key, "record")
        if cell.key in self._extra_reasons:
            record.extra_repeat = self._extra_reasons[cell.key]
        return record

    def _mark(self, key: str, stage: str, when: float | None = None) -> None:
        self.timeline.setdefault(key, {})[stage] = time.monotonic() if when is None else when

    def _journal_error(self, cell: Cell, stage: str, attempt: int, exc: BaseException, backend: Backend) -> None:
        tail = backend.console_tail()
        log.warning("cell %s failed at %s (attempt %d): %s", cell.key, stage, attempt, exc)
        self.journal.append(records.error_record(run_id=self.run_id, cell=cell, stage=stage, attempt=attempt,
                                                 exc=exc, side=self.side, console_tail=tail).to_json())


def run_environment(backend: Backend) -> dict[str, Any]:
    """The run record's environment: the measured host's facts under the keys the Environment sheet shows
    (``cpu_model``, ``kernel``, ``qemu``, ``perf``, ...), and, when the host is not this machine, this
    machine's own under ``workstation`` — never the workstation's facts as the host's. When the backend
    could not read its host, ``host_inventory_error`` says why and no host keys are filled in."""
    here = inventory()
    try:
        host = backend.host_inventory()
    except StormatrixError as exc:  # a backend's own failure: said in the record, the run goes on
        host = {"host_inventory_error": str(exc)}
    if host is None:
        return {**here, "host_inventory_source": "this machine (the measured host)"}
    return {**host, "workstation": here}


group_cells = runorder.group_cells
