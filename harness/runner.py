"""The runner: the method, one cell at a time, in named stages.

    plan -> prepare -> for each disk configuration (x repeat):
        apply (reconfigure + restart the VM) -> ready (guest answers)
        -> for each workload: run (warm-up, measurement window with the host collector) -> journal
    finally: restore the VM's original configuration

A cell is journaled (fsynced) as soon as it is measured, so a crash loses at most the cell in flight; the same
command again skips every journaled cell (:mod:`stormatrix.resume`: is the journal this run's?). A failed attempt
is journaled as ``cell-error`` and retried ``[run] retries`` times; then ``[run] on_error`` decides: ``skip`` goes
on with the next cell, ``stop`` ends the run (after restoring the VM).

The only run loop: what it runs is a :class:`~stormatrix.runsource.RunSource` (a matrix, or a suite's side), which
gives it the plan, backend, executor and what the records add; it knows no kind of source. What overlaps cells
where backend and executor can (boot-ahead, two cells in flight, prepare-ahead) is
:class:`~stormatrix.pipeline.Pipeline`; the window is :mod:`stormatrix.window`, the records :mod:`stormatrix.records`.
"""

from __future__ import annotations

import logging
import secrets
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from . import __version__, records, repeats, runorder
from .backends.base import Backend, Target
from .core.errors import BackendError, CollectorError, JournalWriteError, StormatrixError
from .core.model import Cell, DiskConfig, Plan, now_iso
from .core.recordtypes import CellRecord
from .executors.base import DriverGate, GuestExecutor, WorkloadResult
from .journal import Journal, done_keys
from .pipeline import Flight, Pipeline
from .progress import Progress, estimate_seconds
from .runsource import MatrixSource, RunOptions, RunSource, RunSummary
from .safety import check_write_allowed
from .spec import MatrixSpec
from .window import Window

log = logging.getLogger("stormatrix.runner")


def make_run_id(name: str) -> str:
    return f"{datetime.now(timezone.utc):%Y%m%dT%H%M%S}-{name}-{secrets.token_hex(2)}"


class Runner:
    """Runs a source's cells through a backend and an executor, journaling each one.

    ``source``: what the run is of (:class:`RunSource`; a :class:`MatrixSpec` is run as its
    :class:`MatrixSource`), ``run_dir`` where its journal goes, ``options`` how it is labelled and shown
    and the stand-ins a test hands in. Every kind of source journals through the same record builders.
    """

    pipe: Pipeline  # the cells in flight, made when the run starts (it needs the backend)

    def __init__(self, source: RunSource | MatrixSpec, run_dir: str | Path, options: RunOptions = RunOptions()) -> None:
        if isinstance(source, MatrixSpec):
            given = options.backend  # a test's stand-in: a matrix runs on a backend
            source = MatrixSource(source, backend_cls=type(given) if isinstance(given, Backend) else None)
        self.source, self.settings, self.options = source, source.settings, options
        self.run_dir = Path(run_dir)
        self.side, self.show_progress = options.side, options.progress
        self.stream = options.stream if options.stream is not None else sys.stderr  # bound when run, not imported
        self.backend_cls, self.backend, self.policy = source.backend_cls, options.backend, source.policy
        self.journal = Journal(self.run_dir)
        self.run_id = make_run_id(self.settings.name)
        self.order: str = self.settings.run.get("order", "rounds")
        self.seed: int = int(self.settings.run.get("seed") or 0)  # decided in run(): the journal's, the file's, or new
        #: what the run did so far (what run() returns)
        self.summary = RunSummary(run_dir=str(self.run_dir), run_id=self.run_id, cells=0, order=self.order, seed=0)
        self._extra_reasons: dict[str, dict[str, Any]] = {}  # cell key -> why this extra repeat runs
        self._t_run0, self._cell_estimate = time.monotonic(), 0.0
        self._gate: DriverGate | None = None  # the executor's driver gate (a Windows guest's virtio-win drivers)
        self._round = ""  # "round 2: " in the progress line while a round runs
        self.progress: Progress | None = None
        #: per cell key, the monotonic time of each stage it passed (benchmarks/bench_cell_overhead.py reads it):
        #: apply, applied, ready, sent, measure_start, measure_end, result, record, journaled, stopped
        self.timeline: dict[str, dict[str, float]] = {}

    def plan(self) -> Plan:
        return self.source.plan()

    # --- the run --------------------------------------------------------------------------------------
    def run(self) -> RunSummary:
        plan, summary = self.plan(), self.summary
        self.journal.check_existing()  # then read, and refused before open() could cut another run's torn tail
        records_before = self.journal.typed_records() if self.journal.path.is_file() else []
        self.source.check_resume(records_before, self.run_dir, self.side)
        self.journal.open()
        done = done_keys(records_before)
        self.seed, seed_source = runorder.run_seed(self.settings.run, records_before)
        if self.order == "rounds":
            log.info("cells run in shuffled rounds, seed %d (%s)", self.seed, seed_source)
        pending = [c for c in plan.cells if c.key not in done]
        summary.cells, summary.seed = len(plan.cells), self.seed
        summary.already_done_keys = [c.key for c in plan.cells if c.key in done]
        summary.skipped = [(s.disk.key, s.reason) for s in plan.skipped]
        # a resumed run may owe extra repeats although every planned cell is journaled
        extra_first = (repeats.next_extra(plan, self.settings.run, self.journal.measured_cells(), set(),
                                          self.journal.path) if not pending else [])
        if not pending and not extra_first:
            log.info("all %d cells are in the journal already", len(plan.cells))
            return summary
        timing, todo = self.settings.timing, pending or [c for c, _ in extra_first]
        self._cell_estimate = estimate_seconds(
            Plan(todo), timing.ramp_s, timing.measure_s, overhead_s=self.source.overhead_s,
            boot_ahead=self.source.boots_ahead(), restore=self.source.restores()) / len(todo)
        budget_s = float(self.settings.run.get("time_budget_minutes") or 0.0) * 60
        self.progress = (Progress(len(pending), self._cell_estimate, self.stream, budget_s=budget_s,
                                  extra_max=repeats.possible_extra(plan, self.settings.run))
                         if self.show_progress else None)
        backend = self.backend = self.backend or self.source.make_backend(self.run_dir)
        self._t_run0 = time.monotonic()
        self._gate = self.source.driver_gate()
        self.pipe = Pipeline(backend, self.settings, executor_for=self._executor_for, finish=self._journal_result,
                             failed=self._stage_failed, sends_ahead=self._gate is None, timeline=self.timeline)
        try:
            facts = backend.prepare()
            self._journal_run_header(facts, backend, len(plan.cells), len(pending))
            self._show("starting")
            self._run_groups(backend, pending)
            self._run_extra_repeats(backend, plan)
        finally:
            self.pipe.discard_prepared()
            try:
                backend.restore()
                self.journal.append(records.restored_record(run_id=self.run_id, backend=backend.name).to_json())
            finally:
                backend.close()
        return summary

    def _run_groups(self, backend: Target, cells: list[Cell]) -> None:
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
            upcoming = list(dict.fromkeys(g[0][0] for g in groups[i + 1:i + 1 + self.pipe.depth]))
            self._round = f"round {repeat}: " if self.order == "rounds" else ""
            self._run_group(backend, disk, group, upcoming,
                            next_cell=groups[i + 1][1][0] if i + 1 < len(groups) else None)
        self.pipe.settle()
        while (retry := self.pipe.next_retry()) is not None:  # a cell whose result failed after the next began
            disk, cell, attempt = retry
            self._run_group(backend, disk, [cell], attempt=attempt)
            self.pipe.finish_tail()

    def _run_extra_repeats(self, backend: Target, plan: Plan) -> None:
        """Rounds of extra repeats (:mod:`stormatrix.repeats`: open verdicts first, then CV above
        ``[run] cv_limit_pct``), decided from the journal after each round, until none is wanted, each
        configuration is at ``max_repeats``, or the time budget is spent: a round takes as many of its
        repeats, most needed first, as fit in what is left of the budget at the pace measured so far."""
        budget_min, summary = float(self.settings.run.get("time_budget_minutes") or 0.0), self.summary
        given_up: set[str] = set()
        while extra := repeats.next_extra(plan, self.settings.run, self.journal.measured_cells(), given_up,
                                          self.journal.path):
            elapsed = time.monotonic() - self._t_run0
            pace = elapsed / summary.measured if summary.measured else self._cell_estimate
            extra, left, why = repeats.within_budget(extra, budget_min, elapsed, pace)
            if left:
                log.warning(why)
                summary.extra_not_run, summary.extra_not_run_keys = why, [c.key for c, _ in left]
                if not extra:
                    return
            for cell, reason in extra:
                self._extra_reasons[cell.key] = reason
                log.info("extra repeat %s: %s", cell.key, reason["reason"])
            if extra and self.progress:
                self.progress.add(len(extra))
            failed_before = set(summary.failed)
            self._run_groups(backend, [c for c, _ in extra])
            summary.extra_repeats += [c.key for c, _ in extra if c.key in summary.measured_keys]
            given_up |= set(summary.failed) - failed_before
            if left:
                return  # the budget ran out in this round

    def _journal_run_header(self, facts: dict[str, Any], backend: Target, cells: int, pending: int) -> None:
        env = {**records.run_environment(backend), **facts, "stormatrix": __version__}
        self.journal.append(records.run_record(
            run_id=self.run_id, matrix_path=self.settings.path, matrix=self.settings.raw, backend=backend.name,
            side=self.side, environment=env, original_config=backend.original_config(), cells=cells, todo=pending,
            order=self.order, seed=self.seed, extra=self.source.run_fields(backend)).to_json())

    # --- one VM start: apply -> ready -> per cell: run -> journal; finally stop ------------------------------
    def _run_group(self, backend: Target, disk: DiskConfig, cells: list[Cell],
                   upcoming: list[DiskConfig] | None = None, attempt: int = 0, next_cell: Cell | None = None) -> None:
        """One VM start for cells sharing a disk configuration and repeat, in named stages over a :class:`Flight`;
        retried as configured (``attempt``: tries already spent, for a cell retried later). Where the backend and
        the executor can, :attr:`pipe` overlaps it with the VM starts before and after it."""
        f = Flight(disk=disk, remaining=list(cells), upcoming=list(upcoming or []), attempt=attempt,
                   next_cell=next_cell)
        while f.remaining:
            if self._skip_for_driver(disk, f.remaining):
                return
            f.attempt += 1
            f.stage, f.current, f.executor, f.handed_off = "apply", f.remaining[0], None, False
            try:
                self._stage_apply(backend, f)
                self._stage_ready(backend, f)
                first = True
                while f.remaining and not f.handed_off:
                    self._stage_cell(backend, f, first)
                    first = False
            except JournalWriteError:
                raise  # nothing can be recorded any more: stop, the VM is restored by run()
            except (StormatrixError, OSError) as exc:
                if exc is self.pipe.stop_exc:
                    raise  # the previous cell's failure ends the run (on_error = "stop")
                self.pipe.finish_tail()  # the cell before, journaled before this one's error
                self._stage_failed(f, exc)
            finally:
                self._stage_stop(backend, f)

    def _stage_apply(self, backend: Target, f: Flight) -> None:
        """Apply the configuration: the backend reconfigures and (re)starts the VM (or takes one booted ahead)."""
        f.t_started, f.t0 = now_iso(), time.monotonic()
        self._mark(f.current.key, "apply", f.t0)
        self._show(f"{self._round}{f.disk.key}: starting VM")
        prepared = self.pipe.before_apply(f)
        backend.apply(f.disk)
        self._mark(f.current.key, "applied")
        self.pipe.applied(f, prepared)
        f.vm_start = backend.vm_start

    def _stage_ready(self, backend: Target, f: Flight) -> None:
        """Wait until the guest answers; learn what it reports (a Windows guest's drivers)."""
        f.stage = "ready"
        if not f.sent_ahead:  # (else its guest was ready, and its job is there: Pipeline.prepare_next)
            factory = self.options.executor_factory  # a test's stand-in, or the source's
            f.executor = factory(backend.endpoints()) if factory else self.source.make_executor(backend)
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

    def _stage_cell(self, backend: Target, f: Flight, first: bool) -> None:
        """One cell on the guest that is ready: checks, the workload with its window, then its record and journal
        (unless the pipeline keeps it in flight: then :meth:`Pipeline.finish_tail` journals it)."""
        executor, cell = f.executor, f.remaining[0]
        assert executor is not None
        f.current = cell
        self._show(f"{self._round}{cell.key}: measuring")
        if not first:
            f.stage = "ready"
            executor.check_ready(cell)
        f.stage = "safety"
        check_write_allowed(cell, f.guest, self.settings.run["allow_write"])
        f.stage = "run"
        # a backend that measures its host itself (ESXi: Get-Stat; Proxmox over ssh) brings its own collector
        window = Window(backend, self.options.collector_factory or backend.collector_factory,
                        point_collector=backend.window_collector())
        window.sent_ahead, f.sent_ahead = f.sent_ahead and first, False
        try:
            result = self.pipe.measure(f, cell, window)
        except BaseException:
            window.abort()
            raise
        if result is not None:
            self._journal_result(f, window, result)

    def _journal_result(self, f: Flight, window: Window, result: WorkloadResult) -> None:
        """The cell's record, journaled (fsynced) at once; the flight goes on with its next cell."""
        cell = f.remaining[0]
        self._mark(cell.key, "result")
        self.journal.append(self._record(f, window, result).to_json())
        self._mark(cell.key, "journaled")
        self.summary.measured_keys.append(cell.key)
        f.remaining.pop(0)
        f.attempt = 0
        if self.progress:
            self.progress.update(cell.key, advance=True)
        f.t_started, f.boot_s, f.booted_ahead, f.vm_start = now_iso(), 0.0, False, None

    def _stage_stop(self, backend: Target, f: Flight) -> None:
        """Stop the group's VM (unless it was handed off with the last cell's result still to come)."""
        if f.executor is not None:
            f.executor.close()
            f.executor = None
        backend.stop()
        if not f.handed_off:
            self._mark(f.current.key, "stopped")

    # --- what a failure, a missing driver and a record are ----------------------------------------------
    def _stage_failed(self, f: Flight, exc: StormatrixError | OSError) -> None:
        """Journal the failed attempt; give the cell up (or end the run) after ``[run] retries``."""
        retries, current = self.settings.run["retries"], f.current
        if isinstance(exc, StormatrixError) and exc.cell is None:
            exc.cell = current.key
        if isinstance(exc, CollectorError) and f.stage == "run" and exc.details.window == "start":
            f.stage = "collect"  # the window never opened: nothing was measured
        if self._gate is not None and isinstance(exc, StormatrixError) and exc.details.guest_facts:
            # not ready, but the guest said what it has: a missing driver skips, not fails, the cells
            self._gate.learn(exc.details.guest_facts, current.key)
            if self._skip_for_driver(f.disk, f.remaining, evidence=str(exc)):
                f.remaining = []
                return
        self._journal_error(current, f.stage, f.attempt, exc)
        fatal = isinstance(exc, self.policy.stop_on)
        if (fatal or isinstance(exc, self.policy.never_retry)
                or (isinstance(exc, StormatrixError) and not exc.retryable)):
            # the disk or the password will not change by trying again (and retried logins
            # can lock the account), nor a test disk the guest cannot see: never retried
            f.attempt = max(f.attempt, retries + 1)
        if f.attempt <= retries:
            log.warning("cell %s failed (%s); retrying", current.key, exc)
            return
        self.summary.failed.append(current.key)
        self.summary.errors.append((current.key, str(exc)))
        if fatal or self.settings.run["on_error"] == "stop":
            # the CLI prints one line: it must name the cell, and an OSError is no traceback
            if isinstance(exc, StormatrixError):
                raise exc
            raise BackendError(f"{f.stage}: {exc}", cell=current.key) from exc
        log.error("giving up on %s after %d attempts: %s", current.key, f.attempt, exc)
        f.remaining.pop(0)
        self._show(f"{current.key}: FAILED", advance=True)
        f.attempt = 0

    def _skip_for_driver(self, disk: DiskConfig, cells: list[Cell], evidence: str = "") -> bool:
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
            self.summary.driver_skipped.append((cell.key, reason))
            self._show(f"{cell.key}: skipped (driver)", advance=True)
        return True

    def _record(self, f: Flight, window: Window, result: WorkloadResult) -> CellRecord:
        """The cell's journal record: the window's host measurements, fio's summary, the cross-checks."""
        cell, timing, backend, measured = f.remaining[0], self.settings.timing, window.backend, window.result()
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
        self.timeline.setdefault(cell.key, {}).update(window.marks())
        self._mark(cell.key, "record")
        if cell.key in self._extra_reasons:
            record.extra_repeat = self._extra_reasons[cell.key]
        return record

    def _journal_error(self, cell: Cell, stage: str, attempt: int, exc: BaseException) -> None:
        assert self.backend is not None  # (set when the run starts)
        log.warning("cell %s failed at %s (attempt %d): %s", cell.key, stage, attempt, exc)
        self.journal.append(records.error_record(run_id=self.run_id, cell=cell, stage=stage, attempt=attempt, exc=exc,
                                                 side=self.side, console_tail=self.backend.console_tail()).to_json())

    def _executor_for(self, endpoints: list[Any]) -> GuestExecutor | None:
        """An executor on a VM booted ahead (the pipeline's prepare-ahead): a test's stand-in, or the source's."""
        if self.options.executor_factory is not None:
            return self.options.executor_factory(endpoints)
        return self.source.make_executor_for(endpoints)

    def _mark(self, key: str, stage: str, when: float | None = None) -> None:  # (the timeline)
        self.timeline.setdefault(key, {})[stage] = time.monotonic() if when is None else when

    def _show(self, what: str, advance: bool = False) -> None:
        if self.progress:
            self.progress.update(what, advance=advance)
