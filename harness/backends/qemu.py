"""The local ``qemu`` backend: real QEMU, started by the harness, with exactly the test-disk devices
Proxmox's qemu-server generates for the same configuration.

The device strings follow qemu-server's ``print_drive_commandline_full`` / ``print_drivedevice_full``
and its PCI address map (``PVE/QemuServer.pm``, ``PVE/QemuServer/PCI.pm`` of the -drive era, which is
what QEMU 7.2 machines get): option order, ids (``drive-scsi1``, ``scsihw0``, ``virtioscsi1``),
iothread objects, PCI bridges and addresses. What differs, on purpose and documented:

- The guest boots a kernel and initramfs directly (``-kernel``/``-initrd``), not from a boot disk,
  and through qboot; the test disk is the guest's only disk.
- Software emulation (``-accel tcg``) where KVM is missing or hangs (nested virtualization).
- Two serial ports: ttyS0 for kernel messages (to a log file), ttyS1 as the guest agent's control
  channel (a unix socket), so results cannot be corrupted by kernel output.
- QEMU stays a child of the harness (no ``-daemonize``) and dies with it (PR_SET_PDEATHSIG), so a
  SIGKILLed harness leaves no QEMU behind.
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import guestimage
from ..core.errors import EnvironmentProblem, VmStartError
from ..core.model import CONTROLLERS, DiskConfig
from ..qmp import Qmp, QmpError, connect_unix
from ..spec import Field, MatrixSpec, Section, register_section
from .base import (
    ROLE_IOTHREAD,
    ROLE_MAIN,
    ROLE_OTHER,
    ROLE_VCPU,
    ROLE_WORKER,
    Backend,
    BlockStats,
    GuestEndpoint,
    HostScope,
)

log = logging.getLogger("stormatrix.qemu")

QEMU_BINARY = "qemu-system-x86_64"
QBOOT = Path("/usr/share/qemu/qboot.rom")

QEMU_SECTION = register_section(Section("qemu", {
    "binary": Field(str, QEMU_BINARY),
    "accel": Field(str, "tcg", choices=("tcg", "kvm"), help="tcg: software emulation (KVM hangs nested)"),
    "vcpus": Field(int, 1, min=1, max=64),
    "memory_mib": Field(int, 512, min=256, max=65536),
    "disk_size_mib": Field(int, 256, min=16, max=1048576, help="size of the raw test disk"),
    "disk_path": Field(str, "", help="raw image or block device for the test disk (default: a file in the cache)"),
    "firmware": Field(str, "qboot", choices=("qboot", "seabios")),
    "boot_ahead": Field(bool, True, help="boot the next configuration's VM during the current cell's "
                                          "warm-up, paused while the measurement window is open"),
}, help="the local QEMU backend"))

# qemu-server's PCI address map (PVE/QemuServer/PCI.pm) for the devices the test disk can need.
PCI_ADDR: dict[str, tuple[int, int]] = {
    "scsihw0": (0, 5), "pci.3": (0, 5), "scsihw1": (0, 6), "ahci0": (0, 7),
    **{f"virtio{i}": (0, 10 + i) for i in range(6)},
    **{f"virtio{i}": (2, i - 5) for i in range(6, 16)},
    **{f"virtioscsi{i}": (3, i + 1) for i in range(31)},
    "scsihw2": (4, 1), "scsihw3": (4, 2), "scsihw4": (4, 3),
    "net0": (0, 18), "pci.1": (0, 30), "pci.2": (0, 31),
}


def pci_addr(dev_id: str, bridges: set[int]) -> str:
    bus, addr = PCI_ADDR[dev_id]
    bridges.add(bus)
    return f",bus=pci.{bus},addr={addr:#x}"


def drive_option(disk: DiskConfig, path: str, slot: int) -> str:
    """qemu-server's ``-drive`` string for the test disk (print_drive_commandline_full)."""
    ds = f"{disk.bus}{slot}"
    opts = ""
    if disk.cache != "default":
        opts += f",cache={disk.cache}"
    opts += ",format=raw"
    if disk.cache == "default":  # unset cache with a direct-capable storage: qemu-server adds cache=none
        opts += ",cache=none"
    opts += f",aio={disk.aio}"  # qemu-server's aio_cmdline_option comes after the cache
    opts += ",detect-zeroes=on"
    return f"file={path},if=none,id=drive-{ds}{opts}"


def disk_devices(disk: DiskConfig, path: str, slot: int) -> tuple[list[str], list[str]]:
    """(``-object`` and ``-device`` args including PCI bridges, ``-drive`` args) for the test disk.

    Returns two argument lists: the first goes before the drive (objects, bridges, controllers),
    the second is the drive and its device, in qemu-server's order.
    """
    if disk.controller not in CONTROLLERS or CONTROLLERS[disk.controller][0] == "esxi":
        raise EnvironmentProblem(f"the qemu backend cannot build controller {disk.controller!r}")
    bridges: set[int] = set()
    objects: list[str] = []
    controllers: list[str] = []
    ds = f"{disk.bus}{slot}"
    if disk.bus == "virtio":
        if disk.iothread:
            objects += ["-object", f"iothread,id=iothread-{ds}"]
        device = f"virtio-blk-pci,drive=drive-{ds},id={ds}{pci_addr(ds, bridges)}"
        if disk.iothread:
            device += f",iothread=iothread-{ds}"
    elif disk.bus == "scsi":
        scsihw = disk.scsihw or "lsi"
        maxdev = 7 if scsihw.startswith("lsi") else 1 if scsihw == "virtio-scsi-single" else 256
        ctrl = slot // maxdev
        unit = slot % maxdev
        prefix = "virtioscsi" if scsihw == "virtio-scsi-single" else "scsihw"
        hw_type = "virtio-scsi-pci" if scsihw == "virtio-scsi-single" else scsihw
        iothread = ""
        if scsihw == "virtio-scsi-single" and disk.iothread:
            iothread = f",iothread=iothread-{prefix}{ctrl}"
            objects += ["-object", f"iothread,id=iothread-{prefix}{ctrl}"]
        if scsihw == "virtio-scsi-single":
            bridges.add(3)  # qemu-server always adds the pci.3 bridge for virtio-scsi-single
        controllers += ["-device", f"{hw_type},id={prefix}{ctrl}{pci_addr(f'{prefix}{ctrl}', bridges)}{iothread}"]
        if scsihw.startswith("lsi") or scsihw == "pvscsi":
            device = f"scsi-hd,bus={prefix}{ctrl}.0,scsi-id={unit}"
        else:
            device = f"scsi-hd,bus={prefix}{ctrl}.0,channel=0,scsi-id=0,lun={slot}"
        device += f",drive=drive-{ds},id={ds}"
    elif disk.bus == "sata":
        ctrl, unit = slot // 6, slot % 6
        controllers += ["-device", f"ahci,id=ahci{ctrl},multifunction=on{pci_addr(f'ahci{ctrl}', bridges)}"]
        device = f"ide-hd,bus=ahci{ctrl}.{unit},drive=drive-{ds},id={ds}"
    elif disk.bus == "ide":
        ctrl, unit = slot // 2, slot % 2
        device = f"ide-hd,bus=ide.{ctrl},unit={unit},drive=drive-{ds},id={ds}"
    else:  # pragma: no cover - CONTROLLERS is closed
        raise EnvironmentProblem(f"unknown bus {disk.bus}")
    # i440fx machines >= 2.3 always get bridges pci.1 and pci.2; pci.4 would nest in pci.1.
    bridges |= {1, 2}
    bridge_args: list[str] = []
    for k in sorted((b for b in bridges if b > 0), reverse=True):
        bus, addr = PCI_ADDR[f"pci.{k}"]
        bridge_args = ["-device", f"pci-bridge,id=pci.{k},chassis_nr={k},bus=pci.{bus},addr={addr:#x}"] + bridge_args
    return bridge_args + objects + controllers, ["-drive", drive_option(disk, path, slot), "-device", device]


@dataclass(frozen=True)
class VmSpec:
    """One local VM: which disk configuration, which image, where its sockets live."""

    name: str
    disk: DiskConfig
    disk_image: Path
    run_dir: Path
    image: guestimage.GuestImage
    slot: int = 1
    vcpus: int = 1
    memory_mib: int = 512
    accel: str = "tcg"
    firmware: str = "qboot"
    binary: str = QEMU_BINARY
    mode: str = "agent"  # "agent": serial control channel; "server": fio --server on the network
    fio_port: int | None = None  # host port forwarded to the guest's fio server (mode=server)
    extra_args: tuple[str, ...] = field(default_factory=tuple)


def _set_pdeathsig() -> None:  # runs in the child between fork and exec
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: QEMU dies with the harness, even on SIGKILL
    os.setsid()  # a Ctrl-C in the terminal reaches the harness, which then stops QEMU in order


class QemuVm:
    """One QEMU process: build its command line, start it, talk QMP, stop it, leave nothing behind."""

    GUEST_PORT = 8765

    def __init__(self, spec: VmSpec) -> None:
        self.spec = spec
        self.proc: subprocess.Popen[bytes] | None = None
        self.qmp: Qmp | None = None
        self.agent: socket.socket | None = None
        self.started_at: float | None = None
        spec.run_dir.mkdir(parents=True, exist_ok=True)

    # paths
    @property
    def qmp_path(self) -> Path:
        return self.spec.run_dir / f"{self.spec.name}.qmp"

    @property
    def agent_path(self) -> Path:
        return self.spec.run_dir / f"{self.spec.name}.agent"

    @property
    def console_path(self) -> Path:
        return self.spec.run_dir / f"{self.spec.name}.console.log"

    @property
    def pidfile(self) -> Path:
        return self.spec.run_dir / f"{self.spec.name}.pid"

    @property
    def pid(self) -> int:
        if self.proc is None:
            raise VmStartError(f"VM {self.spec.name} is not running")
        return self.proc.pid

    def argv(self) -> list[str]:
        s = self.spec
        network = s.mode == "server"
        front, drive = disk_devices(s.disk, str(s.disk_image), s.slot)
        argv = [s.binary,
                "-name", f"{s.name},debug-threads=on",
                "-no-reboot",
                "-nodefaults", "-no-user-config", "-display", "none", "-vga", "none",
                "-machine", "pc", "-accel", s.accel,
                "-smp", f"{s.vcpus},sockets=1,cores={s.vcpus},maxcpus={s.vcpus}", "-m", str(s.memory_mib),
                "-pidfile", str(self.pidfile),
                "-chardev", f"socket,id=qmp,path={self.qmp_path},server=on,wait=off",
                "-mon", "chardev=qmp,mode=control",
                "-serial", f"file:{self.console_path}",
                "-chardev", f"socket,id=smx,path={self.agent_path},server=on,wait=off",
                "-serial", "chardev:smx",
                "-kernel", str(s.image.kernel), "-initrd", str(s.image.initrd),
                "-append", s.image.cmdline([s.disk.controller], mode=s.mode, port=self.GUEST_PORT,
                                           network=network)]
        if s.firmware == "qboot":
            argv += ["-bios", str(QBOOT)]
        argv += front + drive
        if network:
            if not s.fio_port:
                raise VmStartError("mode=server needs a host port for the fio server")
            bridges: set[int] = set()
            argv += ["-netdev", f"user,id=net0,hostfwd=tcp:127.0.0.1:{s.fio_port}-:{self.GUEST_PORT}",
                     "-device", f"virtio-net-pci,netdev=net0,id=net0{pci_addr('net0', bridges)}"]
        argv += list(s.extra_args)
        return argv

    def start(self, timeout: float = 30.0, lock_wait: float = 15.0) -> None:
        """Start QEMU and connect QMP.

        QEMU write-locks the test disk image. A QEMU that is still dying (its harness was just
        killed, PR_SET_PDEATHSIG is on its way) holds that lock for a moment: wait for it, then say
        clearly who holds the image.
        """
        deadline = time.monotonic() + lock_wait
        while True:
            try:
                self._start_once(timeout)
                return
            except VmStartError as exc:
                if 'Failed to get "write" lock' not in str(exc):
                    raise
                if time.monotonic() > deadline:
                    raise VmStartError(
                        f"the test disk {self.spec.disk_image} is in use by another QEMU (another stormatrix "
                        "run on this machine?): stop it, or give this run its own image with [qemu] disk_path"
                    ) from None
                time.sleep(0.5)

    def _start_once(self, timeout: float) -> None:
        for p in (self.qmp_path, self.agent_path):
            p.unlink(missing_ok=True)
        kill_stale(self.pidfile)
        argv = self.argv()
        log.debug("starting %s", " ".join(argv))
        stderr = open(self.spec.run_dir / f"{self.spec.name}.stderr.log", "wb")
        try:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=stderr, stderr=stderr,
                                         preexec_fn=_set_pdeathsig, close_fds=True)
        except FileNotFoundError:
            raise EnvironmentProblem(f"{self.spec.binary} not found: install qemu-system-x86") from None
        finally:
            stderr.close()
        self.started_at = time.monotonic()
        deadline = time.monotonic() + timeout
        while not self.qmp_path.exists():
            if self.proc.poll() is not None:
                raise VmStartError(f"QEMU exited with code {self.proc.returncode} at start: {self.stderr_tail()}")
            if time.monotonic() > deadline:
                self.stop()
                raise VmStartError(f"QEMU did not create its QMP socket within {timeout:.0f} s")
            time.sleep(0.01)
        try:
            self.qmp = Qmp(self.qmp_path).connect(deadline)
        except QmpError as exc:
            tail = self.stderr_tail()
            self.stop()
            raise VmStartError(f"{exc}; QEMU said: {tail}") from None

    def stderr_tail(self, limit: int = 600) -> str:
        try:
            text = (self.spec.run_dir / f"{self.spec.name}.stderr.log").read_text(errors="replace")
        except OSError:
            return ""
        return text.strip()[-limit:]

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def listen_agent(self, deadline: float) -> socket.socket:
        """Connect to the guest agent's serial socket now and keep the connection.

        QEMU drops what the guest writes to a serial port nobody is connected to: a guest booting
        ahead would announce READY into the void.
        """
        if self.agent is None:
            self.agent = connect_unix(str(self.agent_path), deadline)
        return self.agent

    def take_agent(self) -> socket.socket | None:
        """Hand the early connection over (once) to the executor that will own it."""
        sock, self.agent = self.agent, None
        return sock

    def pause(self) -> None:
        """Stop the vCPUs (QMP ``stop``): the guest's virtual clock stops with them."""
        assert self.qmp is not None
        self.qmp.execute("stop")

    def resume(self) -> None:
        assert self.qmp is not None
        self.qmp.execute("cont")

    def cpu_seconds(self) -> float:
        """User + system CPU time of the whole QEMU process so far (/proc/<pid>/stat)."""
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def thread_roles(self) -> dict[int, str]:
        """Thread id -> role, from QMP (vCPUs, iothreads) and thread names (aio workers)."""
        roles: dict[int, str] = {self.pid: ROLE_MAIN}
        if self.qmp is not None:
            for cpu in self.qmp.execute("query-cpus-fast") or []:
                roles[int(cpu["thread-id"])] = ROLE_VCPU
            for it in self.qmp.execute("query-iothreads") or []:
                roles[int(it["thread-id"])] = ROLE_IOTHREAD
        task_dir = Path(f"/proc/{self.pid}/task")
        for t in task_dir.iterdir() if task_dir.exists() else []:
            tid = int(t.name)
            if tid in roles:
                continue
            try:
                name = (t / "comm").read_text().strip()
            except OSError:
                continue
            roles[tid] = ROLE_WORKER if name == "worker" else ROLE_OTHER
        return roles

    def blockstats(self, drive_id: str) -> BlockStats:
        assert self.qmp is not None
        for dev in self.qmp.execute("query-blockstats") or []:
            if dev.get("device") == drive_id:
                st = dev["stats"]
                return BlockStats(st["rd_bytes"], st["wr_bytes"], st["rd_operations"], st["wr_operations"])
        raise QmpError(f"query-blockstats has no device {drive_id}")

    def stop(self, timeout: float = 10.0) -> None:
        """Power off (QMP quit), then SIGTERM, then SIGKILL. Always reaps the process."""
        if self.agent is not None:
            self.agent.close()
            self.agent = None
        if self.proc is None:
            return
        if self.proc.poll() is None and self.qmp is not None:
            try:
                self.qmp.execute("quit")
            except QmpError:
                pass
        if self.qmp is not None:
            self.qmp.close()
            self.qmp = None
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        self.pidfile.unlink(missing_ok=True)


def kill_stale(pidfile: Path) -> None:
    """Kill a QEMU left behind by an earlier harness (its pidfile points at our run dir)."""
    try:
        pid = int(pidfile.read_text().strip())
    except (OSError, ValueError):
        return
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        pidfile.unlink(missing_ok=True)
        return
    if any(str(pidfile).encode() == arg for arg in cmdline):
        log.warning("killing QEMU %d left behind by an earlier run", pid)
        os.kill(pid, signal.SIGKILL)
        for _ in range(100):
            if not Path(f"/proc/{pid}").exists():
                break
            time.sleep(0.02)
    pidfile.unlink(missing_ok=True)


def ensure_test_disk(path: Path, size_mib: int) -> Path:
    """A raw test disk filled with data (not sparse: reads of holes never reach the storage)."""
    if path.exists() and path.stat().st_size == size_mib * 2**20:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".part")
    chunk = bytes(range(256)) * 4096  # 1 MiB of a non-zero pattern
    with open(tmp, "wb") as fh:
        for i in range(size_mib):
            fh.write(chunk[i % 256:] + chunk[:i % 256])
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    return path


def qemu_version(binary: str = QEMU_BINARY) -> str:
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True, check=False).stdout
    except FileNotFoundError:
        raise EnvironmentProblem(f"{binary} not found: install the Debian package qemu-system-x86") from None
    first = out.splitlines()[0] if out else ""
    return first.replace("QEMU emulator version ", "").strip()


class QemuBackend(Backend):
    """Local QEMU. Every cell's VM is created from the matrix and discarded; nothing to restore.

    **Boot-ahead** (``[qemu] boot_ahead``, on by default): the runner names the next configuration
    while the current cell warms up; its VM boots then, on the other core, from a second copy of the
    test disk (QEMU write-locks an image; two images with the same contents). When the measurement
    window opens the VM booting ahead is paused (QMP ``stop``: no vCPU runs, its virtual clock stands
    still) and resumed when the window closes, so nothing but the VM under test runs in the window;
    the record says so (``overlap``), with the paused VM's CPU time in the window as evidence. This
    takes the ~3.5 s boot out of the time between two cells without shortening any window.
    """

    name = "qemu"
    controllers = frozenset(c for c, (bus, _) in CONTROLLERS.items() if bus != "esxi")
    default_executor = "local-agent"
    VM_NAMES = ("stormatrix-vm", "stormatrix-vm-b")  # one per test-disk image

    def __init__(self, spec, workdir: Path) -> None:  # type: ignore[no-untyped-def]
        super().__init__(spec, workdir)
        self.opts = self.options(spec)
        self.image: guestimage.GuestImage | None = None
        self.vm: QemuVm | None = None
        self.ahead: QemuVm | None = None  # the next configuration's VM, booting or booted
        self.disk_paths: list[Path] = []  # one image, or two when booting ahead
        self._paused: tuple[QemuVm, float] | None = None

    @staticmethod
    def options(spec: MatrixSpec) -> dict[str, Any]:
        """The matrix's [qemu] section over the section's defaults."""
        return {**{k: f.default for k, f in QEMU_SECTION.fields.items()}, **spec.section("qemu")}

    @classmethod
    def boots_ahead(cls, spec: MatrixSpec) -> bool:
        # a user-given disk_path is one image: a second VM could not open it (QEMU's write lock)
        opts = cls.options(spec)
        return bool(opts["boot_ahead"] and not opts["disk_path"])

    def _prepare(self) -> dict[str, Any]:
        version = qemu_version(self.opts["binary"])
        self.image = guestimage.build()
        if self.opts["disk_path"]:
            path = Path(self.opts["disk_path"])
            if not path.exists():
                raise EnvironmentProblem(f"[qemu] disk_path {path} does not exist")
            self.disk_paths = [path]
            if self.opts["boot_ahead"]:
                log.info("[qemu] disk_path is set: one test disk, so no VM boots ahead")
        else:
            size = self.opts["disk_size_mib"]
            disks = guestimage.cache_root() / "disks"
            self.disk_paths = [ensure_test_disk(disks / f"test-{size}m.raw", size)]
            if self.boots_ahead(self.spec):
                self.disk_paths.append(ensure_test_disk(disks / f"test-{size}m.b.raw", size))
        return {"qemu": version, "accel": self.opts["accel"], "guest_image": self.image.image_id,
                "guest_kernel": self.image.kernel_release, "vcpus": self.opts["vcpus"],
                "memory_mib": self.opts["memory_mib"], "firmware": self.opts["firmware"],
                "test_disk": str(self.disk_paths[0]), "test_disks": [str(p) for p in self.disk_paths],
                "boot_ahead": len(self.disk_paths) > 1}

    def vm_spec(self, disk: DiskConfig, index: int = 0) -> VmSpec:
        assert self.image is not None and self.disk_paths
        return VmSpec(name=self.VM_NAMES[index], disk=disk, disk_image=self.disk_paths[index],
                      run_dir=self.workdir / "vm", image=self.image, slot=self.spec.matrix["disk_slot"],
                      vcpus=self.opts["vcpus"], memory_mib=self.opts["memory_mib"], accel=self.opts["accel"],
                      firmware=self.opts["firmware"], binary=self.opts["binary"])

    def _start_vm(self, disk: DiskConfig) -> QemuVm:
        """Start a VM on a test-disk image no live VM holds, and listen to its agent at once."""
        busy = {vm.spec.disk_image for vm in (self.vm, self.ahead) if vm is not None}
        index = next(i for i, p in enumerate(self.disk_paths) if p not in busy)
        vm = QemuVm(self.vm_spec(disk, index))
        vm.start()
        try:
            vm.listen_agent(time.monotonic() + 30)
        except OSError as exc:
            vm.stop()
            raise VmStartError(f"cannot connect to the guest agent socket {vm.agent_path}: {exc}") from None
        return vm

    def _apply(self, disk: DiskConfig) -> None:
        # A new configuration needs a new QEMU process: stop the old one, start with the new devices
        # (or take the one that booted ahead with exactly these devices).
        self._stop()
        ahead, self.ahead = self.ahead, None
        if ahead is not None and ahead.spec.disk == disk and ahead.alive():
            if self._paused and self._paused[0] is ahead:  # never left paused across a window
                ahead.resume()
                self._paused = None
            self.vm = ahead
            self.booted_ahead = True
            log.debug("%s: taking the VM that booted ahead", disk.key)
            return
        self.ahead = ahead  # booted for another configuration (a retry came first): keep it for that
        if ahead is not None and not ahead.alive():
            ahead.stop()
            self.ahead = None
        self.vm = self._start_vm(disk)

    def boot_ahead(self, disk: DiskConfig) -> None:
        if len(self.disk_paths) < 2 or self.ahead is not None or self.vm is None:
            return
        try:
            self.ahead = self._start_vm(disk)
        except (VmStartError, EnvironmentProblem) as exc:
            # not fatal: the next apply() starts the VM the ordinary way and reports a real problem
            log.warning("booting %s ahead failed (%s); it will start when its turn comes", disk.key, exc)
            self.ahead = None

    def window_opened(self) -> None:
        ahead = self.ahead
        if ahead is None or not ahead.alive():
            return
        ahead.pause()
        self._paused = (ahead, ahead.cpu_seconds())

    def window_closed(self) -> dict[str, Any] | None:
        if self._paused is None:
            return None
        vm, cpu0 = self._paused
        self._paused = None
        if not vm.alive():
            return {"vm": vm.spec.name, "paused_in_window": True, "cpu_s_in_window": None,
                    "note": "the VM booting ahead exited during the window"}
        cpu1 = vm.cpu_seconds()
        vm.resume()
        return {"vm": vm.spec.name, "paused_in_window": True, "cpu_s_in_window": round(cpu1 - cpu0, 3)}

    def _stop(self) -> None:
        if self.vm is not None:
            self.vm.stop()
            self.vm = None

    def _close(self) -> None:
        self._stop()
        if self.ahead is not None:
            self.ahead.stop()
            self.ahead = None
        self._paused = None

    def _restore(self) -> None:
        # Nothing persistent was changed: every cell's VM is created from the matrix and discarded.
        self._close()

    def scope(self) -> list[HostScope]:
        assert self.vm is not None
        return [HostScope(pid=self.vm.pid, threads=self.vm.thread_roles(), vm=self.vm.spec.name)]

    def endpoints(self) -> list[GuestEndpoint]:
        assert self.vm is not None
        return [GuestEndpoint(kind="local-agent", address=str(self.vm.agent_path), name=self.vm.spec.name,
                              connected=self.vm.take_agent())]

    def blockstats(self) -> BlockStats | None:
        assert self.vm is not None and self.current is not None
        return self.vm.blockstats(f"drive-{self.current.bus}{self.spec.matrix['disk_slot']}")

    def console_tail(self, limit: int = 800) -> str:
        if self.vm is None:
            return ""
        try:
            return self.vm.console_path.read_text(errors="replace")[-limit:]
        except OSError:
            return ""
