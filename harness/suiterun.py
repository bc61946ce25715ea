"""Running a suite: its points are cells of the one :class:`~stormatrix.runner.Runner`.

A suite point is a cell whose executor (:class:`~stormatrix.executors.fioserver.FioServerExecutor`)
drives every guest's fio server at once. The runner journals it with the same record builders, window,
per-MiB function and run id as a matrix cell. What is the suite's own is small and lives here:

- :class:`SuiteBackend`: the guests run already; the suite never starts, stops or reconfigures a VM, so
  the backend only reports (the fio client's version, how the host is measured, and the host that runs
  the guests, for the run record's environment as a matrix run describes its host);
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

from .backends.base import Backend
from .backends.proxmox.node import NodeShell, node_inventory
from .backends.proxmox.settings import REMOTE_COLLECTOR_DIR
from .core.errors import GuestDisconnected, GuestNotReady, MatrixError
from .core.journalfile import RUN
from .core.model import CONTROLLERS, Cell, DiskConfig, Plan
from .core.scope import GuestEndpoint, HostScope
from .executors.base import GuestExecutor
from .executors.fioserver import FioServerExecutor
from .journal import Journal
from .runner import RunOptions, RunPolicy, Runner
from .spec import MatrixSpec
from .suite import OVERHEAD_PER_POINT_S, Suite, eta

log = logging.getLogger("stormatrix.suite")

#: what a suite's run record says about host metrics when the guests are given by address
NO_VMS = {"mode": "none", "detail": "no host metrics: the guests are given by address ([suite] guests), so "
                                    "there are no VMs whose QEMU processes could be measured"}

#: the environment of a suite whose guests are given by address: the host that runs them is not known
UNKNOWN_HOST = {
    "host_inventory_error": "the host that runs the guests is not described: they are given by address "
                            "([suite] guests), not as VMs of a known host; this machine's facts (the fio "
                            "client's side) are under workstation"}

#: what describes the measured host: None (this machine, see Backend.host_inventory) or a function giving
#: its facts or ``{"host_inventory_error": why}``
HostInventory = Callable[[], "dict[str, Any] | None"]


@dataclass
class SuiteOutcome:
    run_id: str
    measured: list[str] = field(default_factory=list)
    already_done: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)  # (key, message)


def fio_version(fio: str) -> str | None:
    try:
        return subprocess.run([fio, "--version"], capture_output=True, text=True, timeout=10).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


class SuiteBackend(Backend):
    """The backend of a suite: guests that run already, on whatever platform the side is.

    It reconfigures nothing and restores nothing; ``name`` is the platform's backend name when the suite
    knows it (``proxmox`` for a VM list, ``qemu`` in the demo), else None. ``inventory`` describes the
    host that runs the guests (:meth:`host_inventory`): the runner journals it in the run record's
    environment exactly as for a matrix run (``runner.run_environment``).
    """

    name = "suite"  # replaced per instance: see __init__
    controllers = frozenset(CONTROLLERS)
    default_executor = "fio-server"
    runs_suite = True

    def __init__(self, spec: MatrixSpec, workdir: Path, suite: Suite, *, platform: str | None,
                 facts: dict[str, Any], inventory: HostInventory | None = None) -> None:
        super().__init__(spec, workdir)
        # the record's backend is the platform, or null: a per-instance value where Backend has a class's name
        self.name = platform  # type: ignore[misc,assignment]
        self.suite = suite
        self.facts = facts
        self.inventory = inventory

    def host_inventory(self) -> dict[str, Any] | None:
        """The host that runs the guests: None when it is this machine (the local QEMU guests of the demo,
        or stormatrix on the Proxmox node), its facts when read elsewhere (the node over ssh), else why
        it is not described — never this machine's facts as a remote host's."""
        return self.inventory() if self.inventory is not None else dict(UNKNOWN_HOST)

    def _prepare(self) -> dict[str, Any]:
        return dict(self.facts)

    def _apply(self, disk: DiskConfig) -> None:
        """Nothing to attach: the side's disks are as they are."""

    def _stop(self) -> None:
        """The guests keep running between points and after the suite."""

    def _restore(self) -> None:
        """Nothing was changed."""

    def scope(self) -> list[HostScope]:
        return []  # the suite's collector (if any) measures every VM itself: RunOptions(collector=...)

    def endpoints(self) -> list[GuestEndpoint]:
        return [GuestEndpoint("tcp", g.host, g.port, g.name) for g in self.suite.guests]


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


def inventory_for(host_collector: dict[str, Any], vms: list[dict[str, Any]] | None) -> HostInventory:
    """Where the host's facts are read: where its collector measures (the same ssh, as a matrix run's
    Proxmox backend does), so the Environment sheet describes the host that was measured.

    ``local`` (stormatrix on the Proxmox node, or the demo's local QEMU guests): this machine is the
    host. ``ssh``: ``linux-host/inventory.py`` on the node, copied there with the collector. Otherwise
    the host is not reachable from here: the record says why instead of showing this machine's facts.
    """
    mode = host_collector.get("mode")
    if mode == "local":
        return lambda: None
    target = str(host_collector.get("ssh") or "")
    if mode == "ssh" and target:
        config = str(host_collector.get("ssh_config") or "")
        remote_dir = str(host_collector.get("ssh_dir") or REMOTE_COLLECTOR_DIR)
        return lambda: node_inventory(NodeShell(target, config), remote_dir)
    if vms:
        why = (f"the node that runs the suite's VMs is not described: its facts are read where the host "
               f"collector measures, and there is none ({host_collector.get('detail') or f'host metrics {mode}'})")
        return lambda: {"host_inventory_error": why}
    return lambda: dict(UNKNOWN_HOST)


def check_resumable(journal: Journal, suite: Suite) -> None:
    """Refuse to mix sides or guest sets in one run directory: the points would not be comparable."""
    if not journal.path.exists():
        return
    for rec in journal.records():
        if rec.get("type") != RUN or rec.get("suite") is None:
            continue
        if rec.get("side") != suite.side:
            raise MatrixError(suite.path, "[suite] side",
                              f"{journal.run_dir} holds side {rec.get('side')!r}, not {suite.side!r}",
                              "give each side its own run directory (-o runs/<side>)")
        old = [g.get("name") for g in rec.get("guests", [])]
        new = [g.name for g in suite.guests]
        if old and sorted(old) != sorted(new):
            raise MatrixError(suite.path, "[suite] guests",
                              f"{journal.run_dir} was measured on guests {', '.join(old)}; "
                              f"this run has {', '.join(new)}",
                              "restore the guest list, or use a new run directory")


def suite_spec(suite: Suite) -> MatrixSpec:
    """The suite as the runner reads a matrix: its [run] keys, with the suite's timing and executor."""
    run = dict(suite.run)
    run.update(name=suite.name, executor="fio-server", ramp_seconds=suite.ramp_s, measure_seconds=suite.measure_s,
               allow_write=True,  # checked at plan time against the device (suite_from_dict)
               boot_timeout_seconds=suite.probe_timeout_s)
    return MatrixSpec(path=suite.path, run=run, matrix={}, workloads=tuple(p.workload for p in suite.points()),
                      raw=suite.raw)


def run_suite(suite: Suite, run_dir: str | Path, *, collector: Any = None, fio: str = "fio",
              backend: str | None = None, progress: bool = False,
              host_collector: dict[str, Any] | None = None,
              vms: list[dict[str, Any]] | None = None,
              host_inventory: HostInventory | None = None,
              storage: dict[str, Any] | None = None, booting: bool = False,
              before_point: Callable[[Cell], None] | None = None) -> SuiteOutcome:
    """Run every point not yet journaled in ``run_dir`` on all of ``suite.guests`` at once.

    For each point: probe every fio server (a real job through client mode), run the point with one
    fio client process, let ``collector`` (start/stop, docs/journal.md ``host``) measure the window,
    append one ``cell`` record; a failure is a ``cell-error`` naming the guest and the point. Returns
    what happened; raises the error that stopped the suite (see the module docstring).

    ``host_collector`` is what the run record says about host metrics (``{"mode": "local"|"ssh"|
    "none"|"off", "detail": ...}``; by default derived from ``collector``); ``vms`` the VM list behind
    the guests (:meth:`stormatrix.suitevms.ProxmoxSuiteVms.record`); ``host_inventory`` what describes
    the host that runs them (:meth:`SuiteBackend.host_inventory`; by default read where the host
    collector measures, :func:`inventory_for`); ``storage`` what served the side's test disks
    (:meth:`stormatrix.fleet.localstore.LocalStorage.describe`), for the run record. ``booting``: the
    guests were just started, so the first probe is repeated until they answer (within the probe
    timeout). ``before_point`` runs before each point's probe but the first's (a fleet's power cycle before every
    point, ``[fleet] power_cycle = "point"``; the side's cycle before the run is the first point's),
    repeats and retries included; the servers are then probed until they answer again.
    """
    if not suite.guests:
        raise MatrixError(suite.path, "[suite] vms", "no guest addresses: the VM list was not resolved",
                          "resolve vms to guests with the backend (Suite.with_guests) before running")
    run_dir = Path(run_dir)
    check_resumable(Journal(run_dir), suite)
    points = suite.points()
    if host_collector is None:
        host_collector = ({"mode": "given", "detail": type(collector).__name__} if collector is not None else NO_VMS)
    if host_inventory is None:
        host_inventory = inventory_for(host_collector, vms)
    facts = {"fio": fio_version(fio), "host_collector": f"{host_collector['mode']}: {host_collector.get('detail', '')}"}
    spec = suite_spec(suite)
    options = {"fio": fio, "workdir": run_dir / "points", "filename": suite.filename, "size": suite.size,
               "direct": suite.direct, "ioengine": suite.ioengine, "probe_timeout_s": suite.probe_timeout_s,
               "grace_s": suite.grace_s, "probe_until_ready": booting or before_point is not None,
               "probe_each_cell": True}

    side_started = [False]  # the side's first point is cycled by the caller, before the run

    def executor(_endpoints: list[GuestEndpoint]) -> GuestExecutor:
        ex = SuiteExecutor.for_guests(suite.guests, options)
        assert isinstance(ex, SuiteExecutor)
        ex.before_point, ex.cycled = before_point, side_started
        return ex

    run_options = RunOptions(
        side=suite.side, progress=progress, plan=Plan(cells=list(points)),
        backend=SuiteBackend(spec, run_dir, suite, platform=backend, facts=facts, inventory=host_inventory),
        executor_factory=executor, collector=collector, overhead_s=OVERHEAD_PER_POINT_S,
        policy=RunPolicy(stop_on=(GuestDisconnected, GuestNotReady)),
        run_extra={"suite": suite.name, "executor": "fio-server", "points": len(points),
                   "guests": [{"name": g.name, "host": g.host, "port": g.port} for g in suite.guests],
                   "host_collector": host_collector, "vms": vms,
                   **({"storage": storage} if storage is not None else {})},
        cell_extra={"suite": suite.name})
    runner = Runner(spec, run_dir, run_options)
    journal = Journal(run_dir)
    done_keys = journal.done_keys() if journal.path.exists() else set()
    done = sum(1 for p in points if p.key in done_keys)
    log.info("suite %s, side %s: %d points, %d already journaled, %d to run; %s", suite.name, suite.side,
             len(points), done, len(points) - done, eta(suite, done=done).describe())
    summary = runner.run()
    return SuiteOutcome(run_id=runner.run_id, measured=summary["measured_keys"],
                        already_done=summary["already_done_keys"], failed=summary["errors"])


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
