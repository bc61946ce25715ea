"""Running a suite: its points are cells of the one :class:`~stormatrix.runner.Runner`.

A suite point is a cell whose executor (:class:`~stormatrix.executors.fioserver.executor.FioServerExecutor`)
drives every guest's fio server at once. The runner journals it with the same record builders, window,
per-MiB function and run id as a matrix cell. What is the suite's own is small and lives here:

- :class:`SuiteSource`: the suite as the runner's :class:`~stormatrix.runsource.RunSource`: its points, its
  run settings (:meth:`stormatrix.suite.Suite.settings`), the side's guests as the backend (a
  :class:`~stormatrix.suiteguests.SuiteGuests`, the platform's capability), the executor over their fio
  servers, and what its run and point records add;
- the failure policy: a guest that stops answering (:class:`GuestNotReady`) or drops out mid-point
  (:class:`GuestDisconnected`) always stops the suite after journaling the ``cell-error``: points
  measured on fewer guests are not comparable with the rest, and every following point would fail the
  same way. Run the same command again once the guest is back: the suite resumes at the failed point;
- a run directory holds one side and one guest set (:func:`check_resumable`).
"""

from __future__ import annotations

import logging
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .backends.base import Target
from .core.errors import GuestDisconnected, GuestNotReady, MatrixError
from .core.model import Cell, Plan
from .core.recordtypes import Record, RunRecord
from .executors.base import GuestExecutor
from .executors.fioserver.executor import FioServerExecutor
from .journal import Journal
from .resume import check_same_run
from .runner import Runner
from .runsource import RunOptions, RunPolicy, RunSource
from .suite import OVERHEAD_PER_POINT_S, Suite, eta
from .suiteguests import AddressGuests, SuiteGuests

log = logging.getLogger("stormatrix.suite")


@dataclass
class SuiteOutcome:
    run_id: str
    measured: list[str] = field(default_factory=list)
    already_done: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)  # (key, message)


def fio_version(fio: str) -> str | None:
    try:
        return subprocess.run([fio, "--version"], capture_output=True, text=True, encoding="utf-8", errors="replace",
                              timeout=10).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


class SuiteExecutor(FioServerExecutor):
    """The suite's executor; with ``before_point`` (a fleet's power cycle before every point) that runs
    before each point but the side's first (cycled with the side, before the run): at each group's start
    (:meth:`before_ready`: a later repeat's first point) and before each further point of a group
    (:meth:`check_ready`); the servers are then probed until they answer again instead of once.
    ``cycled`` is shared by the run's executors (one per group): whether the side's first point came."""

    before_point: Callable[[Cell], None] | None = None
    cycled: list[bool] | None = None

    def before_ready(self, cell: Cell) -> None:
        if self.before_point is None or self.cycled is None:
            return
        if self.cycled[0]:
            self.before_point(cell)  # wait_ready (the runner's next step) probes until the servers answer
        self.cycled[0] = True

    def check_ready(self, cell: Cell) -> None:
        if self.before_point is None:
            super().check_ready(cell)
            return
        self.before_point(cell)
        self.wait_ready(time.monotonic() + float(self.options.get("probe_timeout_s", 15.0)))


class SuiteSource(RunSource):
    """A suite's side as the runner runs it: every point on all of ``guests`` at once, one fio client."""

    policy = RunPolicy(stop_on=(GuestDisconnected, GuestNotReady))
    overhead_s = OVERHEAD_PER_POINT_S
    backend_cls = SuiteGuests

    def __init__(self, suite: Suite, guests: SuiteGuests, run_dir: Path, *, fio: str) -> None:
        self.suite = suite
        self.guests = guests
        self.settings = suite.settings()
        self.fio = fio
        self._points = suite.points()
        self._side_started = [False]  # the side's first point is cycled by the platform, before the run
        self._options = {"fio": fio, "workdir": run_dir / "points", "filename": suite.filename, "size": suite.size,
                         "direct": suite.direct, "ioengine": suite.ioengine, "probe_timeout_s": suite.probe_timeout_s,
                         "grace_s": suite.grace_s, "probe_until_ready": guests.booting or guests.cycles_points,
                         "probe_each_cell": True}

    def check_resume(self, records_before: list[Record], run_dir: Path, side: str | None) -> None:
        check_same_run(records_before, self.settings, run_dir, side=side, kind="suite")  # guests: check_resumable

    def plan(self) -> Plan:
        return Plan(cells=list(self._points))

    def make_backend(self, run_dir: Path) -> Target:
        self.guests.facts = {"fio": fio_version(self.fio)}
        return self.guests

    def make_executor(self, backend: Target) -> GuestExecutor:
        ex = SuiteExecutor.for_guests(self.guests.start(), self._options)
        assert isinstance(ex, SuiteExecutor)
        if self.guests.cycles_points:
            ex.before_point, ex.cycled = self.guests.before_point, self._side_started
        return ex

    def run_fields(self, backend: Target) -> dict[str, Any]:
        storage = self.guests.storage_record()
        return {"suite": self.suite.name, "executor": "fio-server", "points": len(self._points),
                "guests": [{"name": g.name, "host": g.host, "port": g.port} for g in self.guests.start()],
                "host_collector": self.guests.host_status(), "vms": self.guests.vms_record(),
                **({"storage": storage} if storage is not None else {})}

    def cell_fields(self) -> dict[str, Any]:
        return {"suite": self.suite.name}


def check_resumable(journal: Journal, suite: Suite) -> None:
    """Refuse to mix sides or guest sets in one run directory: the points would not be comparable (the
    journal's suite run records, read as :class:`~stormatrix.core.recordtypes.RunRecord` with its
    :class:`~stormatrix.core.recordtypes.SuiteInfo`)."""
    if not journal.path.exists():
        return
    for rec in journal.typed_records():
        if not isinstance(rec, RunRecord) or rec.kind != "suite":
            continue
        if rec.side != suite.side:
            raise MatrixError(suite.path, "[suite] side",
                              f"{journal.run_dir} holds side {rec.side!r}, not {suite.side!r}",
                              "give each side its own run directory (-o runs/<side>)")
        assert rec.suite_info is not None
        old = [str(name) for name in rec.suite_info.guest_names()]
        new = [g.name for g in suite.guests]
        if old and sorted(old) != sorted(new):
            raise MatrixError(suite.path, "[suite] guests",
                              f"{journal.run_dir} was measured on guests {', '.join(old)}; "
                              f"this run has {', '.join(new)}",
                              "restore the guest list, or use a new run directory")


def run_suite(suite: Suite, run_dir: str | Path, guests: SuiteGuests | None = None, *, fio: str = "fio",
              progress: bool = False) -> SuiteOutcome:
    """Run every point not yet journaled in ``run_dir`` on all of the side's guests at once.

    ``guests``: the side's guests (:class:`~stormatrix.suiteguests.SuiteGuests`; by default the suite's
    ``[suite] guests`` by address), started here if they are not yet. For each point: probe every fio
    server (a real job through client mode), run the point with one fio client process, let the guests'
    window collector measure the window, append one ``cell`` record; a failure is a ``cell-error`` naming
    the guest and the point. Returns what happened; raises the error that stopped the suite (see the module
    docstring). The guests are closed when the run ends (the demo's VMs stopped, a VM list's connection
    closed).
    """
    guests = guests if guests is not None else AddressGuests(suite.settings(), suite.guests)
    with guests:
        suite = suite.with_guests(guests.start())
        if not suite.guests:
            raise MatrixError(suite.path, "[suite] vms", "no guest addresses: the VM list was not resolved",
                              "resolve vms to guests with the backend (Suite.with_guests) before running")
        run_dir = Path(run_dir)
        check_resumable(Journal(run_dir), suite)
        source = SuiteSource(suite, guests, run_dir, fio=fio)
        runner = Runner(source, run_dir, RunOptions(side=suite.side, progress=progress))
        journal = Journal(run_dir)
        points = suite.points()
        done_keys = journal.done_keys() if journal.path.exists() else set()
        done = sum(1 for p in points if p.key in done_keys)
        log.info("suite %s, side %s: %d points, %d already journaled, %d to run; %s", suite.name, suite.side,
                 len(points), done, len(points) - done, eta(suite, done=done).describe())
        summary = runner.run()
    return SuiteOutcome(run_id=runner.run_id, measured=summary.measured_keys,
                        already_done=summary.already_done_keys, failed=summary.errors)


def write_comparison(a: tuple[str, Path], b: tuple[str, Path], workbook: Path) -> Path:
    """The A-vs-B workbook of two sides' run directories (``(label, run_dir)``), and its tidy CSV beside
    it, by the one comparison report ``stormatrix compare`` writes too
    (:mod:`stormatrix.analysis.comparison_report`). Written at the end of a suite of sides (``demo
    --suite``, a fleet's storages); what the analysis says is logged."""
    from .analysis.comparison_report import compare_inputs, write_comparison as write_report

    def warn(lines: list[str]) -> None:
        for line in lines:
            log.warning("%s", line)

    comparison = compare_inputs([str(a[1])], [str(b[1])], label_a=a[0], label_b=b[0], names=(a[0], b[0]), warn=warn,
                                no_results_fix="run the same command again; it resumes where it stopped")
    write_report(comparison, workbook, workbook.with_suffix(".csv"), flags=("the workbook", "its tidy CSV"))
    return workbook
