"""How the Proxmox stand-in starts a VM: what a launcher gets (:class:`LaunchSpec`), and the fast
launcher whose "QEMU" is a sleeping process carrying qemu-server's command line (:class:`SleepLauncher`).
The real-QEMU launcher is in ``pve_qemu.py``; the command lines come from ``pve_cmdline.py``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol

from .pve_schema import ApiError

#: the port the workers' fio servers listen on (the template's ``fio --server`` unit; fio's default)
GUEST_FIO_PORT = 8765

# --- the VM and its QEMU -------------------------------------------------------------------------------

@dataclass(frozen=True)
class LaunchSpec:
    """What a launcher gets: the VM as qemu-server would start it.

    ``controller`` ... ``image`` describe the measured disk: the VM's only disk, or the one disk not in
    its boot order (the stormatrix guest boots from its kernel, never from a disk; a VM with a boot disk
    keeps that in ``boot: order=``). The whole config, every drive included, is ``config``; ``volumes``
    maps each drive's volume id to its file."""

    vmid: int
    name: str
    controller: str  # stormatrix controller name (ide, sata, virtio-blk, lsi, virtio-scsi-single, ...)
    aio: str
    iothread: bool
    cache: str  # "default" when unset
    slot: int
    image: Path
    cores: int
    memory_mib: int
    run_dir: Path
    config: dict[str, str]
    key: str = ""  # the measured disk's config key (scsi1)
    volumes: dict[str, Path] = field(default_factory=dict)
    storages: dict[str, dict[str, Any]] = field(default_factory=dict)  # storage id -> its storage.cfg section
    #: the VM's address on the stand-in's bridge when its config has ``net0`` (:meth:`PveStandin.bridge_address`):
    #: where the guest's fio server is reached, on :data:`GUEST_FIO_PORT`
    address: str | None = None

    def disk_args(self) -> list[str]:
        """qemu-server's arguments for every drive of the config (tests/standins/pve_cmdline.py), the
        measured disk with this spec's aio/cache/iothread (a launcher may model a qemu-server that
        changes them)."""
        from .pve_cmdline import disk_args

        override = {self.key: {"aio": self.aio, "iothread": "1" if self.iothread else None,
                               "cache": None if self.cache == "default" else self.cache}}
        return disk_args(self.config, lambda volid: self.volumes[volid], override=override,
                         storage_of=lambda volid: self.storages.get(volid.split(":", 1)[0]))


class RunningQemu(Protocol):
    pid: int

    def alive(self) -> bool: ...

    def stop(self) -> None: ...

    def hmp(self, command: str) -> str: ...

    def agent_ping(self) -> bool: ...

    def powerdown(self) -> None:
        """QMP ``system_powerdown``: the ACPI power button; the guest decides what to do with it."""

    def guest_shutdown(self) -> None:
        """The guest agent's ``guest-shutdown``."""


class Launcher(Protocol):
    def start(self, spec: LaunchSpec) -> RunningQemu:
        """Start the VM's QEMU or raise LaunchFailed(exit code, stderr lines)."""

    def argv(self, spec: LaunchSpec) -> list[str]:
        """The QEMU command line :meth:`start` runs for ``spec`` (what ``qm showcmd`` prints)."""


class LaunchFailed(Exception):
    def __init__(self, code: int, lines: list[str]) -> None:
        super().__init__(f"QEMU exited with code {code}")
        self.code, self.lines = code, lines


class SleepQemu:
    """A stand-in process for fast tests: a real pid that lives until stopped, no QMP. Its command line
    ends with the QEMU command line ``argv`` (so /proc/<pid>/cmdline shows the devices), and it writes
    ``pidfile`` like QEMU's ``-pidfile``.

    ``acpi``: whether the "guest" powers off on the ACPI power button (a guest without acpid ignores it)."""

    def __init__(self, acpi: bool = True, argv: list[str] | None = None, pidfile: Path | None = None) -> None:
        self.acpi = acpi
        self.pidfile = pidfile
        self.proc = subprocess.Popen([sys.executable, "-c", "import time\nwhile True: time.sleep(3600)",
                                      *(argv or [])],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        self.pid = self.proc.pid
        if pidfile is not None:
            pidfile.write_text(f"{self.pid}\n")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.pidfile is not None and self.pidfile.exists() and self.pidfile.read_text().strip() == str(self.pid):
            self.pidfile.unlink()

    def hmp(self, command: str) -> str:
        raise ApiError(500, f"VM {self.pid} qmp command 'human-monitor-command' failed - not available in this stand-in")

    def agent_ping(self) -> bool:
        return True

    def guest_exec(self, argv: list[str]) -> Callable[[], tuple[int, str, str]]:
        """QGA ``guest-exec``: the guest of a sleeping stand-in VM is this machine (tests that reach its
        "fio server" reach this machine's fio)."""
        return exec_here(argv, Path(self.pidfile.parent if self.pidfile else ".") / f"{self.pid}.exec")

    def _power_off(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()  # the process exits by itself, as QEMU does when its guest powers off

    def powerdown(self) -> None:
        if self.acpi:
            self._power_off()

    def guest_shutdown(self) -> None:
        self._power_off()


class SleepLauncher:
    """Launches :class:`SleepQemu`; refuses what QEMU itself refuses (aio=native without O_DIRECT).

    ``guest_acpi = False`` makes the guests ignore the ACPI power button (no acpid in the guest)."""

    def __init__(self, guest_acpi: bool = True, start_delay: float = 0.0) -> None:
        self.started: list[LaunchSpec] = []
        self.guest_acpi = guest_acpi
        self.start_delay = start_delay  # seconds a start takes (QEMU's own start, storage activation)

    def start(self, spec: LaunchSpec) -> RunningQemu:
        if spec.aio == "native" and spec.cache not in ("none", "directsync", "default"):
            raise LaunchFailed(1, ["kvm: -drive ...: aio=native was specified, but it requires cache.direct=on, "
                                   "which was not specified."])
        time.sleep(self.start_delay)
        self.started.append(spec)
        return SleepQemu(acpi=self.guest_acpi, argv=self.argv(spec), pidfile=spec.run_dir / f"{spec.vmid}.pid")

    def argv(self, spec: LaunchSpec) -> list[str]:
        """qemu-server's command line for the VM (config_to_command), cut down to what the harness
        looks at: every drive's objects, controllers and devices as qemu-server's own test data
        expects them (tests/standins/pve_cmdline.py), never the product's builder."""
        run = spec.run_dir
        return ["/usr/bin/kvm", "-id", str(spec.vmid), "-name", f"{spec.name},debug-threads=on", "-no-shutdown",
                "-chardev", f"socket,id=qmp,path={run}/{spec.vmid}.qmp,server=on,wait=off",
                "-mon", "chardev=qmp,mode=control", "-pidfile", f"{run}/{spec.vmid}.pid", "-daemonize",
                "-smp", f"{spec.cores},sockets=1,cores={spec.cores},maxcpus={spec.cores}", "-nodefaults",
                "-m", str(spec.memory_mib), *spec.disk_args(), "-machine", "type=pc-i440fx-8.1+pve0",
                *extra_args(spec)]



def extra_args(spec: LaunchSpec) -> list[str]:
    """The config's ``args:`` line, which qemu-server appends to the command line (split_args)."""
    import shlex

    return shlex.split(spec.config.get("args", ""))


def shellquote(arg: str) -> str:
    """String::ShellQuote's shell_quote, as PVE::Tools::cmd2string uses it."""
    if arg == "":
        return "''"
    if re.search(r"[^\w!%+,\-./:=@^]", arg):
        return "'" + arg.replace("'", "'\\''") + "'"
    return arg


#: (fio binary, its mtime) -> what ``fio --version`` answered in a guest running it
VERSION_ANSWERS: dict[tuple[str, int], tuple[int, str, str]] = {}


def find_fio(fio: str) -> str:
    from stormatrix.executors.fioserver.client import find_fio as find

    return str(find(fio))


def exec_here(argv: list[str], cwd: Path, fio: str = "fio") -> Callable[[], tuple[int, str, str]]:
    """A command in a stand-in guest, whose programs are this machine's, except that its ``fio`` is
    ``fio`` (the folder of that binary comes first on its PATH). Returns what waits for its end.

    ``fio --version`` is run once per fio binary and its answer replayed to every guest running that
    binary (:data:`VERSION_ANSWERS`): 64 fio starts cost ~15 s on a busy 2-core machine."""
    binary = find_fio(fio)
    path = os.pathsep.join([os.path.dirname(binary), "/usr/sbin", "/usr/bin", "/sbin", "/bin"])
    key = (binary, os.stat(binary).st_mtime_ns)
    if argv == ["fio", "--version"] and key in VERSION_ANSWERS:
        answer = VERSION_ANSWERS[key]
        return lambda: answer
    cwd.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(argv, cwd=cwd, env={"PATH": path, "LANG": "C"}, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def wait() -> tuple[int, str, str]:
        out, err = proc.communicate(timeout=60)
        if argv == ["fio", "--version"]:
            VERSION_ANSWERS[key] = (proc.returncode, out, err)
        return proc.returncode, out, err

    return wait


class FioServerGuest:
    """An API-only worker of a fleet: its "QEMU" is the guest's fio server itself, a real ``fio --server``
    on the VM's bridge address (:attr:`LaunchSpec.address`), in its own directory. It lives from the
    start to the stop of the VM, so a power cycle really restarts the server the suite reaches."""

    def __init__(self, spec: LaunchSpec, fio: str = "fio") -> None:
        from .fioservers import FioServerProcess

        assert spec.address is not None
        self.pidfile = spec.run_dir / f"{spec.vmid}.pid"
        self.server = FioServerProcess(spec.run_dir / f"{spec.vmid}.guest", spec.address, GUEST_FIO_PORT, fio=fio)
        self.server.spawn()  # the guest "boots": its agent answers once the server listens
        self.pid = self.server.pid
        self.pidfile.write_text(f"{self.pid}\n")

    def alive(self) -> bool:
        return self.server.alive()

    def stop(self) -> None:
        self.server.stop()
        if self.pidfile.exists() and self.pidfile.read_text().strip() == str(self.pid):
            self.pidfile.unlink()

    def hmp(self, command: str) -> str:
        raise ApiError(500, f"VM {self.pid} qmp command 'human-monitor-command' failed - not available in this stand-in")

    def agent_ping(self) -> bool:
        return self.server.listening()

    def guest_exec(self, argv: list[str]) -> Callable[[], tuple[int, str, str]]:
        """QGA ``guest-exec``: ``argv`` runs in the guest (:func:`exec_here`), whose fio is its server's."""
        return exec_here(argv, self.server.cwd, self.server.fio)

    def powerdown(self) -> None:
        self.stop()

    def guest_shutdown(self) -> None:
        self.stop()


class FioServerLauncher(SleepLauncher):
    """:class:`SleepLauncher`, except that a VM with a network (``net0``, so an address on the stand-in's
    bridge) boots as :class:`FioServerGuest`: a fleet of API-only workers whose fio servers are real."""

    def __init__(self, fio: str = "fio") -> None:
        super().__init__()
        self.fio = fio

    def start(self, spec: LaunchSpec) -> RunningQemu:
        if spec.address is None:
            return super().start(spec)
        self.started.append(spec)
        return FioServerGuest(spec, self.fio)
