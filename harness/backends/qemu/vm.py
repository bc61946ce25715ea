"""One local QEMU process: its command line, start, QMP, threads, stop — and nothing left behind.

What differs from a Proxmox VM, on purpose:

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
import shlex
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from ... import guestimage
from ...core.errors import EnvironmentProblem, QmpError, VmStartError
from ...core.model import DiskConfig
from ...core.scope import ROLE_IOTHREAD, ROLE_MAIN, ROLE_OTHER, ROLE_VCPU, ROLE_WORKER, BlockStats
from ...qmp import Qmp, connect_unix
from .devices import disk_devices, pci_addr
from .settings import QEMU_BINARY

log = logging.getLogger("stormatrix.qemu")

QBOOT = Path("/usr/share/qemu/qboot.rom")
#: the longest path a Unix socket can have (``sun_path`` is 108 bytes with its NUL); QEMU refuses a longer one
#: ("UNIX socket path ... is too long")
SOCKET_PATH_MAX = 107
SOCKET_SUFFIXES = (".qmp", ".agent")  # the sockets each VM has in its run folder


def socket_path_problem(run_dir: Path, name: str) -> str | None:
    """Why a VM called ``name`` could not have its control sockets in ``run_dir`` (None: it can)."""
    longest = max((run_dir / f"{name}{suffix}" for suffix in SOCKET_SUFFIXES), key=lambda p: len(os.fsencode(p)))
    size = len(os.fsencode(longest))
    if size <= SOCKET_PATH_MAX:
        return None
    return (f"the run folder's path is too long for QEMU's control sockets: {longest} is {size} bytes, and a Unix "
            f"socket path holds at most {SOCKET_PATH_MAX}; give the run a folder at least "
            f"{size - SOCKET_PATH_MAX} bytes shorter (-o/--output)")


@dataclass(frozen=True)
class VmSpec:
    """One local VM: which disk configuration, which image, where its sockets live."""

    name: str
    disk: DiskConfig
    disk_image: Path | str  # a file, or a URL QEMU's block layer opens (iscsi://, nbd://: .storages)
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
    fio_host: str = "127.0.0.1"  # host address of that forward (a loopback address of the guest's own)
    extra_args: tuple[str, ...] = field(default_factory=tuple)
    guest_args: str = ""  # kernel command-line words added to the image's own ([qemu] guest_args)
    tcg_thread: str = "multi"  # TCG's thread mode ([qemu] tcg_thread), with accel = tcg


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
        #: start paused, waiting for a saved state (``-incoming defer``): :meth:`load_state`
        self.incoming = False
        #: how this VM was started, for the records: "boot", or "restore" (with ``state``: the saved state's key)
        self.how: dict[str, Any] = {"how": "boot"}
        problem = socket_path_problem(spec.run_dir, spec.name)
        if problem:
            raise EnvironmentProblem(problem)
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

    def disk_argv(self) -> list[str]:
        """The test disk's controller and drive options, as qemu-server would create them for the cell."""
        front, drive = disk_devices(self.spec.disk, str(self.spec.disk_image), self.spec.slot)
        return front + drive

    def argv(self) -> list[str]:
        s = self.spec
        network = s.mode == "server"
        argv = [s.binary,
                "-name", f"{s.name},debug-threads=on",
                "-no-reboot",
                "-nodefaults", "-no-user-config", "-display", "none", "-vga", "none",
                "-machine", "pc", "-accel", s.accel + (f",thread={s.tcg_thread}" if s.accel == "tcg" else ""),
                "-smp", f"{s.vcpus},sockets=1,cores={s.vcpus},maxcpus={s.vcpus}", "-m", str(s.memory_mib),
                "-pidfile", str(self.pidfile),
                "-chardev", f"socket,id=qmp,path={self.qmp_path},server=on,wait=off",
                "-mon", "chardev=qmp,mode=control",
                "-serial", f"file:{self.console_path}",
                "-chardev", f"socket,id=smx,path={self.agent_path},server=on,wait=off",
                "-serial", "chardev:smx",
                "-kernel", str(s.image.kernel), "-initrd", str(s.image.initrd),
                "-append", s.image.cmdline([s.disk.controller], mode=s.mode, port=self.GUEST_PORT,
                                           network=network)
                + (f" {s.guest_args.strip()}" if s.guest_args.strip() else "")]
        if s.firmware == "qboot":
            argv += ["-bios", str(QBOOT)]
        argv += self.disk_argv()
        if network:
            if not s.fio_port:
                raise VmStartError("mode=server needs a host port for the fio server")
            bridges: set[int] = set()
            argv += ["-netdev", f"user,id=net0,hostfwd=tcp:{s.fio_host}:{s.fio_port}-:{self.GUEST_PORT}",
                     "-device", f"virtio-net-pci,netdev=net0,id=net0{pci_addr('net0', bridges)}"]
        argv += list(s.extra_args)
        if self.incoming:
            argv += ["-incoming", "defer"]
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
        qmp = Qmp(self.qmp_path)
        try:
            self.qmp = qmp.connect(deadline)
        except QmpError as exc:  # connected, then QEMU went away (e.g. the image is locked); connect closed our end
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

    def save_state(self, path: Path, deadline: float) -> None:
        """Write the VM's state to ``path`` (QMP ``migrate`` to a file, the vCPUs stopped), then let it run on.

        After a completed migration QEMU has given up its disk images; ``cont`` takes them back. A save that
        fails or does not finish by ``deadline`` is cancelled (the VM runs on as before) and raises QmpError.
        """
        assert self.qmp is not None
        self.qmp.execute("stop")
        try:
            self.qmp.execute("migrate", uri=f"exec:cat > {shlex.quote(str(path))}")
            status = self._migration_end(deadline)
            if status != "completed":
                raise QmpError(f"saving the VM's state ended {status}")
        except (QmpError, TimeoutError) as exc:
            try:
                self.qmp.execute("migrate_cancel")
            except QmpError:
                pass
            raise QmpError(f"saving the VM's state failed: {exc}") from None
        finally:
            if self.alive():
                self.qmp.execute("cont")

    def _migration_end(self, deadline: float) -> str:
        assert self.qmp is not None
        while True:
            status = str((self.qmp.execute("query-migrate") or {}).get("status", ""))
            if status in ("completed", "failed", "cancelled"):
                return status
            if time.monotonic() > deadline:
                raise TimeoutError("not done in time")
            time.sleep(0.02)

    def load_state(self, path: Path, deadline: float) -> None:
        """Load a saved state into this VM, started with :attr:`incoming`; it stays paused (it was saved so).

        Raises VmStartError when QEMU refuses the state (it exits, or the load fails) or is not done by
        ``deadline``."""
        assert self.qmp is not None and self.incoming
        try:
            self.qmp.execute("migrate-incoming", uri=f"exec:cat {shlex.quote(str(path))}")
            while True:
                status = self.qmp.execute("query-status")["status"]
                if status != "inmigrate":
                    break
                if time.monotonic() > deadline:
                    raise VmStartError("loading the saved state did not finish in time")
                time.sleep(0.02)
        except QmpError as exc:
            tail = "" if self.alive() else f" (QEMU exited: {self.stderr_tail(300)})"
            raise VmStartError(f"QEMU did not load the saved state: {exc}{tail}") from None
        if status not in ("paused", "postmigrate", "running"):
            raise VmStartError(f"QEMU did not load the saved state: the VM is {status}")

    def cpu_seconds(self) -> float:
        """User + system CPU time of the whole QEMU process so far (all its threads)."""
        times = psutil.Process(self.pid).cpu_times()
        return float(times.user + times.system)

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
        proc = psutil.Process(pid)
        cmdline = proc.cmdline()
    except psutil.Error:
        pidfile.unlink(missing_ok=True)
        return
    if str(pidfile) in cmdline:
        log.warning("killing QEMU %d left behind by an earlier run", pid)
        try:
            proc.kill()
            proc.wait(timeout=2)
        except psutil.NoSuchProcess:
            pass
        except psutil.TimeoutExpired:
            log.warning("QEMU %d did not exit within 2 s of SIGKILL", pid)
    pidfile.unlink(missing_ok=True)


def qemu_version(binary: str = QEMU_BINARY) -> str:
    """QEMU's version, which also proves ``binary`` runs before any VM is prepared."""
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True, check=False).stdout
    except FileNotFoundError:
        fix = ("install the Debian package qemu-system-x86" if binary == QEMU_BINARY
               else "set [qemu] binary to the path of qemu-system-x86_64, or remove it to use the one on PATH")
        raise EnvironmentProblem(f"{binary} not found: {fix}") from None
    except OSError as exc:  # a directory, no x bit: the matrix check said so at plan, unless it changed since
        raise EnvironmentProblem(f"[qemu] binary {binary} cannot be run ({exc.strerror}): give the path of the "
                                 "qemu-system-x86_64 program, or remove binary to use the one on PATH") from None
    first = out.splitlines()[0] if out else ""
    return first.replace("QEMU emulator version ", "").strip()
