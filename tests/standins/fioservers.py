"""Loopback ``fio --server`` processes standing in for guests: tests and the scale benchmark.

Each server is the real Debian fio, on 127.0.0.1, in its own directory and process group; every
process is killed on exit, also after an exception. ``kill(name)`` drops one guest mid-run, the way a
crashed VM would; ``restart(name)`` brings it back on its old port.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

from stormatrix.core.errors import EnvironmentProblem
from stormatrix.executors.fioserver.client import find_fio
from stormatrix.executors.fioserver.inputs import FioGuest
from stormatrix.core import oscompat

log = logging.getLogger("standins.fioservers")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _listening(port: int, host: str = "127.0.0.1") -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.2):
            return True
    except OSError:
        return False


def processes_in(directory: Path) -> list[int]:
    """Pids of the processes whose working directory is ``directory`` (or below it)."""
    root = str(Path(directory).resolve())
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if cwd == root or cwd.startswith(root + "/"):
            found.append(int(entry.name))
    return found


class FioServerProcess:
    """One real ``fio --server`` on ``host:port``, in its own directory and process group: a guest's fio
    server (the loopback farm below, and the Proxmox stand-in's API-only workers, ``pve_launch``)."""

    def __init__(self, cwd: Path, host: str, port: int, *, fio: str = "fio") -> None:
        self.cwd, self.host, self.port, self.fio = Path(cwd), host, port, fio
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def spawn(self) -> None:
        """Start the process and return at once (it listens a moment later: :meth:`listening`)."""
        self.cwd.mkdir(parents=True, exist_ok=True)
        with open(self.cwd / "server.log", "ab") as out:
            self.proc = subprocess.Popen([find_fio(self.fio), f"--server=ip:{self.host},{self.port}"], cwd=self.cwd,
                                         stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                         start_new_session=True)

    def listening(self) -> bool:
        return self.alive() and _listening(self.port, self.host)

    def start(self, timeout_s: float = 10.0) -> bool:
        """Start it; False (and nothing left running) if it did not come up on ``host:port``."""
        self.spawn()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and self.alive():
            if self.listening():
                return True
            time.sleep(0.02)
        self.stop()  # e.g. the port was taken between our check and fio's bind
        return False

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        """Kill the server, its connection children and its job processes.

        fio's job processes call setsid(), so they leave the server's process group (and outlive it
        when the connection child dies first). They keep the server's working directory, which is
        ours alone: every process whose cwd is that directory is one we started.
        """
        proc, self.proc = self.proc, None
        if proc is None:
            return
        oscompat.kill_tree(proc)
        for pid in processes_in(self.cwd):
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL does not time out in practice
            log.error("fio server in %s (pid %d) did not exit after SIGKILL", self.cwd, proc.pid)


class LocalFioServers:
    """``fio --server`` processes on 127.0.0.1, each in its own directory and process group.

    A context manager: every server (and the per-connection children fio forks) is killed on exit,
    also after an exception. ``kill(name)`` drops one guest mid-run, the way a crashed VM would.
    """

    def __init__(self, count: int, root: Path, *, fio: str = "fio", prefix: str = "g") -> None:
        self.count = count
        self.root = Path(root)
        self.fio = fio
        self.prefix = prefix
        self.procs: dict[str, FioServerProcess] = {}
        self.guests: list[FioGuest] = []

    def __enter__(self) -> "LocalFioServers":
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> list[FioGuest]:
        width = max(2, len(str(self.count)))
        for i in range(1, self.count + 1):
            name = f"{self.prefix}{i:0{width}d}"
            for _attempt in range(5):
                port = free_port()
                if self._spawn(name, port):
                    self.guests.append(FioGuest(name=name, host="127.0.0.1", port=port))
                    break
            else:
                raise EnvironmentProblem(f"could not start fio --server for {name}: "
                                         f"see {self.root / name / 'server.log'}")
        return self.guests

    def _spawn(self, name: str, port: int) -> bool:
        server = FioServerProcess(self.root / name, "127.0.0.1", port, fio=self.fio)
        if not server.start():
            return False
        self.procs[name] = server
        return True

    def restart(self, name: str) -> None:
        """Bring a killed guest back on its old port (the guest rebooted)."""
        self._stop(name)
        if not self._spawn(name, self.guest(name).port):
            raise EnvironmentProblem(f"could not restart fio --server for {name} on port {self.guest(name).port}")

    def guest(self, name: str) -> FioGuest:
        return next(g for g in self.guests if g.name == name)

    def kill(self, name: str) -> None:
        """SIGKILL one server and the children it forked for connections: the guest is gone."""
        self._stop(name)

    def _stop(self, name: str) -> None:
        server = self.procs.pop(name, None)
        if server is not None:
            server.stop()

    def close(self) -> None:
        for name in list(self.procs):
            self._stop(name)
