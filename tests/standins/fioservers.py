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
from stormatrix.executors.fioserver import FioGuest, find_fio
from stormatrix.executors.fioserver_client import signal_group

log = logging.getLogger("standins.fioservers")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
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
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
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
        """Start one server; False (and nothing left running) if it did not come up on ``port``."""
        cwd = self.root / name
        cwd.mkdir(parents=True, exist_ok=True)
        with open(cwd / "server.log", "ab") as out:
            proc = subprocess.Popen([find_fio(self.fio), f"--server=ip:127.0.0.1,{port}"], cwd=cwd,
                                    stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        self.procs[name] = proc
        if self._wait_listening(proc, port):
            return True
        self._stop(name)  # e.g. the port was taken between our check and fio's bind
        return False

    def restart(self, name: str) -> None:
        """Bring a killed guest back on its old port (the guest rebooted)."""
        self._stop(name)
        if not self._spawn(name, self.guest(name).port):
            raise EnvironmentProblem(f"could not restart fio --server for {name} on port {self.guest(name).port}")

    @staticmethod
    def _wait_listening(proc: subprocess.Popen[bytes], port: int, timeout_s: float = 10.0) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                return False
            if _listening(port):
                return True
            time.sleep(0.02)
        return False

    def guest(self, name: str) -> FioGuest:
        return next(g for g in self.guests if g.name == name)

    def kill(self, name: str) -> None:
        """SIGKILL one server and the children it forked for connections: the guest is gone."""
        self._stop(name)

    def _stop(self, name: str) -> None:
        """Kill the server, its connection children and its job processes.

        fio's job processes call setsid(), so they leave the server's process group (and outlive it
        when the connection child dies first). They keep the server's working directory, which is
        ours alone: every process whose cwd is that directory is one we started.
        """
        proc = self.procs.pop(name, None)
        if proc is None:
            return
        signal_group(proc, signal.SIGKILL)
        for pid in processes_in(self.root / name):
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL does not time out in practice
            log.error("fio server %s (pid %d) did not exit after SIGKILL", name, proc.pid)

    def close(self) -> None:
        for name in list(self.procs):
            self._stop(name)

