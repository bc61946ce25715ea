"""The local fleet's workers on one side: N server-mode QEMU guests on this machine.

:class:`LocalGuests` is a :class:`~stormatrix.suiteguests.SuiteGuests` (a side of a ``[fleet] backend =
"qemu"`` suite, :mod:`.fleet`): each guest boots the tiny image in ``mode="server"`` with its own test disk
(a raw file, or a storage server's URL: :mod:`.storages`) and a host port forwarded from
``127.0.0.1:<port>`` to its fio server. :meth:`~LocalGuests.start` boots them all (QEMU processes run in
parallel), waits for each guest's READY line on its agent socket (which names the test device), then until
every fio server answers a probe through the forwarded port. With ``cycle_points`` (``[fleet] power_cycle =
"point"``) every point but the side's first starts on freshly booted guests, on the same ports. The host
collector measures all their QEMU processes in each window (:class:`~stormatrix.collect.ProcessesCollector`);
the host is this machine. ``close()`` always stops every VM; each started VM is reported to ``on_start``
(the fleet journals its pid), and they also die with the harness (PR_SET_PDEATHSIG), which is tied to the
thread that started them: start them from the main thread.

It sits in the suite layer (tests/test_import_graph.py, by its own pattern), above the backends: it reads
the guest's READY line (the local agent's protocol) and probes fio servers (the fio-server executor's).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from ... import guestimage
from ...collect import ProcessesCollector
from ...core.errors import GuestNotReady, StormatrixError, VmStartError
from ...core.model import DiskConfig
from ...core.scope import HostScope
from ...core.settings import RunSettings
from ...executors.fioserver.inputs import FioGuest
from ...executors.fioserver.probe import probe_servers
from ...executors.localagent import AgentChannel, parse_event
from ...suiteguests import SuiteGuests
from .vm import QemuVm, VmSpec
from .storages import free_port

log = logging.getLogger("stormatrix.fleet")


#: reported for each VM the moment it runs: (its name, its QEMU process id)
OnStart = Callable[[str, int], None]


class LocalGuests(SuiteGuests):
    """One side's local QEMU guests (see the module docstring): ``names`` and ``disks`` pair up, one guest
    each; ``key`` names the side's VMs and folders (``<run_dir>/vm``, ``<run_dir>/points/boot-probe``);
    ``storage`` is what serves their disks, for the run record; ``on_start`` hears of every VM started."""

    PORT_ATTEMPTS = 3

    def __init__(self, settings: RunSettings, key: str, disk: DiskConfig, run_dir: Path, image: guestimage.GuestImage,
                 names: Sequence[str], disks: Sequence[Path | str], *, vcpus: int = 1, memory_mib: int = 512,
                 boot_timeout_s: float = 120.0, fio: str = "fio", storage: dict[str, Any] | None = None,
                 on_start: OnStart | None = None, cycle_points: bool = False) -> None:
        super().__init__(settings, platform="qemu", workdir=run_dir / "vm")
        self.key = key
        self.disk = disk
        self.run_dir = run_dir
        self.image = image
        self.names = list(names)
        self.disks = list(disks)
        self.vcpus = vcpus
        self.memory_mib = memory_mib
        self.boot_timeout_s = boot_timeout_s
        self.fio = fio
        self._storage = storage
        self.on_start = on_start
        self.cycles_points = cycle_points
        self.booting = True  # just booted: the first probe is repeated until the servers answer
        self.ports: dict[str, int] = {}  # a guest keeps its forwarded port across a power cycle
        self.vms: list[QemuVm] = []
        self.ready: dict[str, dict[str, str]] = {}
        self._collector = ProcessesCollector(self.scopes)

    def _spec(self, name: str, disk: Path | str, port: int) -> VmSpec:
        return VmSpec(name=f"{self.key}-{name}", disk=self.disk, disk_image=disk, run_dir=self.workdir,
                      image=self.image, slot=0, vcpus=self.vcpus, memory_mib=self.memory_mib, mode="server",
                      fio_port=port)

    def _boot(self, name: str, disk: Path | str) -> tuple[QemuVm, AgentChannel]:
        """Start one VM and connect to its agent socket at once: QEMU drops what the guest writes
        to a socket chardev while nobody is connected, and READY comes only once."""
        last: VmStartError | None = None
        for _ in range(self.PORT_ATTEMPTS):
            vm = QemuVm(self._spec(name, disk, self.ports.get(name) or free_port()))
            try:
                vm.start()
            except VmStartError as exc:
                # another process may take the free port between our probe and QEMU's bind
                if "forward" in str(exc).lower():
                    last = exc
                    self.ports.pop(name, None)
                    continue
                raise
            self.vms.append(vm)
            assert vm.spec.fio_port is not None
            self.ports[name] = vm.spec.fio_port
            if self.on_start is not None:
                self.on_start(vm.spec.name, vm.pid)
            channel = AgentChannel(str(vm.agent_path))
            channel.connect(time.monotonic() + 10)
            return vm, channel
        raise VmStartError(f"{self.key}-{name}: no free host port for the fio server after "
                           f"{self.PORT_ATTEMPTS} attempts: {last}")

    def before_point(self, cell: Any) -> None:
        """``[fleet] power_cycle = "point"``: stop every guest and boot it again (same disk, same port), then
        wait for READY and the fio servers, before each point but the side's first."""
        log.info("side %s: power-cycling %d guests before %s", self.key, len(self.names), getattr(cell, "key", cell))
        self.stop_vms()
        found = self._start()
        if [(g.name, g.port) for g in found] != [(g.name, g.port) for g in self.guests]:
            raise GuestNotReady(f"side {self.key}: after the power cycle the guests' fio servers moved "
                                f"({', '.join(g.address for g in found)}); run the same command again to resume")

    def _start(self) -> list[FioGuest]:
        t0 = time.monotonic()
        channels: list[tuple[QemuVm, AgentChannel]] = []
        guests: list[FioGuest] = []
        try:
            for name, disk in zip(self.names, self.disks):
                channels.append(self._boot(name, disk))
            deadline = time.monotonic() + self.boot_timeout_s
            for (vm, ch), name in zip(channels, self.names):
                kv = self._wait_ready(vm, ch, deadline)
                self.ready[name] = kv
                assert vm.spec.fio_port is not None
                guests.append(FioGuest(name=name, host="127.0.0.1", port=vm.spec.fio_port, filename=kv["disk"]))
        finally:
            for _, ch in channels:
                ch.close()
        self._wait_servers(guests, time.monotonic() + max(30.0, self.boot_timeout_s - (time.monotonic() - t0)))
        log.info("side %s: %d guests ready in %.1f s: %s", self.key, len(guests), time.monotonic() - t0,
                 ", ".join(f"{g.name}={g.address} {g.filename}" for g in guests))
        return guests

    def _wait_ready(self, vm: QemuVm, ch: AgentChannel, deadline: float) -> dict[str, str]:
        while True:
            try:
                line = ch.readline(deadline)
            except TimeoutError:
                raise GuestNotReady(f"{vm.spec.name}: no READY from the guest within {self.boot_timeout_s:.0f} s"
                                    f"; console: {self._console(vm)}") from None
            except StormatrixError as exc:
                raise GuestNotReady(f"{vm.spec.name}: {exc}; QEMU: {vm.stderr_tail()}; console: {self._console(vm)}"
                                    ) from None
            event = parse_event(line)
            if event is None or event[0] != "READY":
                continue
            kv = event[2]
            if kv.get("mode") != "server":
                raise GuestNotReady(f"{vm.spec.name}: the guest booted in mode {kv.get('mode', 'agent')!r}, "
                                    "not as a fio server")
            if not kv.get("disk", "").startswith("/dev/"):
                raise GuestNotReady(f"{vm.spec.name}: the guest found no test disk for {self.disk.controller}"
                                    f"; console: {self._console(vm)}")
            return kv

    def _wait_servers(self, guests: list[FioGuest], deadline: float) -> None:
        """The guest says READY just before it execs ``fio --server``: probe until all answer."""
        pending = list(guests)
        probe_dir = self.run_dir / "points" / "boot-probe"
        while True:
            results = probe_servers(pending, probe_dir, fio=self.fio, timeout_s=15.0)
            pending = [r.guest for r in results if not r.ok]
            if not pending:
                return
            dead = [vm.spec.name for vm in self.vms if not vm.alive()]
            if dead or time.monotonic() > deadline:
                why = "; ".join(f"{r.guest.describe()}: {r.detail}" for r in results if not r.ok)
                raise GuestNotReady(f"side {self.key}: fio server not answering on {len(pending)} guests"
                                    f"{' (QEMU exited: ' + ', '.join(dead) + ')' if dead else ''}: {why}",
                                    guests=[g.name for g in pending])
            time.sleep(0.5)

    @staticmethod
    def _console(vm: QemuVm, limit: int = 600) -> str:
        try:
            return vm.console_path.read_text(errors="replace").strip()[-limit:] or "(empty)"
        except OSError:
            return "(no console log)"

    def scopes(self) -> list[HostScope]:
        return [HostScope(pid=vm.pid, threads=vm.thread_roles(), vm=vm.spec.name) for vm in self.vms]

    # --- what the run record says ----------------------------------------------------------------------
    def window_collector(self) -> Any | None:
        return self._collector

    def host_status(self) -> dict[str, Any]:
        return {"mode": "local", "processes": len(self.names),
                "detail": f"{len(self.names)} local QEMU processes (side {self.key})"}

    def host_inventory(self) -> dict[str, Any] | None:
        return None  # the guests are QEMU processes on this machine: its facts are the host's

    def storage_record(self) -> dict[str, Any] | None:
        return self._storage

    def _teardown(self) -> None:
        self.stop_vms()

    def stop_vms(self) -> None:
        """Stop every VM (each one, whatever the others do); raise the first failure."""
        errors: list[BaseException] = []
        for vm in self.vms:
            try:
                vm.stop()
            except BaseException as exc:  # any failure: stop the others, then report the first
                errors.append(exc)
        self.vms = []
        if errors:
            raise errors[0]
