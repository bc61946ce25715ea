"""The Proxmox stand-in's real-QEMU launcher: ``start`` boots the stormatrix guest in a real QEMU whose
disks are on the command line exactly as qemu-server's own test data expects (:mod:`.pve_cmdline`).

The qemu backend's ``QemuVm`` is used for what is not under test here (starting and stopping the
process, QMP, the guest's agent channel, the guest image's kernel); its command line is replaced by
one whose disk part comes from the stand-in, so that what ``qm showcmd`` prints and what
``/proc/<pid>/cmdline`` shows are qemu-server's, and the backend's check of them compares the product
with Proxmox, not with itself.
"""

from __future__ import annotations

import time
from typing import Any

from .pve_launch import LaunchFailed, LaunchSpec, RunningQemu, extra_args


def _qemu_server_vm(spec: Any, disk_args: list[str]) -> Any:
    """A ``QemuVm`` for ``spec`` whose disks are ``disk_args`` (qemu-server's), not the product's."""
    from stormatrix.backends.qemu.vm import QemuVm

    class QemuServerVm(QemuVm):
        def disk_argv(self) -> list[str]:
            return list(disk_args)

    return QemuServerVm(spec)


class QemuVmRunning:
    """A QemuVm held the way qemu-server holds QEMU: QMP is connected per command (so other clients,
    like the backend's scope and block stats, can use ``<vmid>.qmp`` in between), the pid file and
    QMP socket live in the run dir under the VM id, and ``serial1: socket`` appears as ``<vmid>.serial1``."""

    def __init__(self, vm: Any) -> None:
        self.vm = vm
        self.pid = vm.pid
        if vm.qmp is not None:
            vm.qmp.close()
            vm.qmp = None
        serial = vm.spec.run_dir / f"{vm.spec.name}.serial1"
        serial.unlink(missing_ok=True)
        serial.symlink_to(vm.agent_path.name)

    def _qmp(self) -> Any:
        from stormatrix.qmp import Qmp

        return Qmp(self.vm.qmp_path, timeout=10).connect(time.monotonic() + 10)

    def alive(self) -> bool:
        return bool(self.vm.alive())

    def stop(self) -> None:
        if self.vm.alive():
            try:
                self.vm.qmp = self._qmp()
            except Exception:  # noqa: BLE001 - QemuVm.stop falls back to signals
                self.vm.qmp = None
        self.vm.stop()

    def hmp(self, command: str) -> str:
        q = self._qmp()
        try:
            return str(q.execute("human-monitor-command", **{"command-line": command}))
        finally:
            q.close()

    def _agent(self, line: bytes, answer: bytes, timeout: float) -> bool:
        """Send ``line`` on the guest's agent channel (the stormatrix agent on its serial port) and wait
        for ``answer``. One client at a time: QEMU's socket chardev serves the connection it accepted."""
        import socket

        deadline = time.monotonic() + timeout
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.settimeout(max(0.1, deadline - time.monotonic()))
                s.connect(str(self.vm.agent_path))
                s.sendall(line)
                buf = b""
                while answer not in buf and time.monotonic() < deadline:
                    s.settimeout(max(0.05, deadline - time.monotonic()))
                    chunk = s.recv(4096)
                    if not chunk:
                        break
                    buf += chunk
                return answer in buf
        except OSError:
            return False

    def agent_ping(self) -> bool:
        """The guest agent answers (qemu-server's guest-ping): the stand-in's guest agent is the
        stormatrix agent, which answers PING with READY once the guest has booted."""
        return self.vm.alive() and self._agent(b"PING\n", b"@@SMX READY", 3.0)

    def guest_exec(self, argv: list[str]) -> Any:
        """QGA ``guest-exec`` in the real guest: its agent runs the command (``EXEC``, harness/guest/init,
        server mode) and answers ``EXITED rc= out= err=``. A program the guest lacks exits 127 there."""
        import base64
        import shlex
        import socket

        line = b"EXEC " + base64.b64encode(shlex.join(argv).encode()) + b"\n"
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(60)
            s.connect(str(self.vm.agent_path))
            s.sendall(line)
            buf = b""
            while b"@@SMX EXITED" not in buf or not buf.split(b"@@SMX EXITED", 1)[1].count(b"\n"):
                chunk = s.recv(65536)
                if not chunk:
                    break
                buf += chunk
        fields = dict(w.split("=", 1) for w in buf.split(b"@@SMX EXITED", 1)[-1].decode().split("\n")[0].split()
                      if "=" in w)
        answer = (int(fields.get("rc", "255")), base64.b64decode(fields.get("out", "")).decode(errors="replace"),
                  base64.b64decode(fields.get("err", "")).decode(errors="replace"))
        return lambda: answer

    def powerdown(self) -> None:
        """ACPI power button. The stormatrix guest has no acpid, so (like such a guest on Proxmox) it
        ignores it: a reboot or shutdown of a VM without the agent times out."""
        q = self._qmp()
        try:
            q.execute("system_powerdown")
        finally:
            q.close()

    def guest_shutdown(self) -> None:
        """The guest agent's guest-shutdown: the stormatrix agent's POWEROFF syncs and powers off."""
        self._agent(b"POWEROFF\n", b"@@SMX BYE", 10.0)


class QemuVmLauncher:
    """Starts the VM's QEMU as qemu-server would: the disks from qemu-server's expectations
    (:mod:`.pve_cmdline`), the process, QMP and guest channel kept by the qemu backend's ``QemuVm``."""

    def __init__(self, accel: str = "tcg") -> None:
        from stormatrix import guestimage

        self.image = guestimage.build()
        self.accel = accel
        self.started: list[LaunchSpec] = []

    def _vm(self, spec: LaunchSpec) -> Any:
        from stormatrix.backends.qemu.vm import VmSpec
        from stormatrix.core.model import DiskConfig

        from .pve_launch import GUEST_FIO_PORT

        disk = DiskConfig(spec.controller, spec.aio, spec.iothread, spec.cache)
        # a VM with net0 is on the stand-in's bridge: its guest runs fio --server, reached at its address
        network = {"mode": "server", "fio_port": GUEST_FIO_PORT, "fio_host": spec.address} if spec.address else {}
        return _qemu_server_vm(VmSpec(name=str(spec.vmid), disk=disk, disk_image=spec.image, run_dir=spec.run_dir,
                                      image=self.image, slot=spec.slot, vcpus=spec.cores, memory_mib=spec.memory_mib,
                                      accel=self.accel, extra_args=tuple(extra_args(spec)), **network),
                               spec.disk_args())

    def argv(self, spec: LaunchSpec) -> list[str]:
        return list(self._vm(spec).argv())

    def start(self, spec: LaunchSpec) -> RunningQemu:
        from stormatrix.core.errors import VmStartError

        vm = self._vm(spec)
        try:
            vm.start()
        except VmStartError as exc:
            raise LaunchFailed(1, [line for line in str(exc).splitlines() if line.strip()]) from None
        self.started.append(spec)
        return QemuVmRunning(vm)
