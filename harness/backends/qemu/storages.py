"""The local fleet's storages under test: real network block protocols on this machine's loopback.

The seeds' protocol comparison (``003_*``) attaches each worker's test disk over iSCSI, then over
NVMe/TCP. Here the same shape runs on one machine, with real protocol stacks on both ends:

- ``iscsi``: ``tgtd`` (Debian ``tgt``) serves one target with one LUN per worker disk on
  ``127.0.0.1:<port>``; QEMU opens each LUN with its own initiator (libiscsi, Debian
  ``qemu-block-extra``) as ``iscsi://127.0.0.1:<port>/<iqn>/<lun>``, the way Proxmox's
  ``iscsidirect`` storage does. tgtd in the foreground ignores SIGTERM: it is stopped through
  ``tgtadm`` (offline, delete the target, delete the system), and SIGKILLed by pid if that fails;
- ``nbd``: ``qemu-storage-daemon`` exports every disk over NBD on ``127.0.0.1:<port>``
  (``nbd://127.0.0.1:<port>/<export>``); SIGTERM stops it;
- ``file``: the raw files themselves (a directory storage), the baseline without a network hop.

Every server listens on loopback only (tgtd's ``-I ALL`` ACL would admit any initiator elsewhere), on
a port free when it starts; that the server itself holds the port is checked from its own sockets, not
assumed. Each process dies with the harness (PR_SET_PDEATHSIG), so a SIGKILLed run leaves no target
behind; each one started is also reported to :attr:`LocalStorage.on_spawn` the moment it runs (the local
fleet, :mod:`.fleet`, journals it, so that a rerun or ``fleet destroy`` can find it). The volumes' backing
files are the fleet's (it journals, makes and removes them).
"""

from __future__ import annotations

import ctypes
import logging
import os
import random
import shutil
import signal
import socket
import subprocess
import time
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, Callable, Sequence

import psutil

from ...core.errors import EnvironmentProblem, InputError

log = logging.getLogger("stormatrix.fleet")

LOOPBACK = "127.0.0.1"
#: ``[fleet] storages`` of a local fleet (``backend = "qemu"``)
STORAGE_KINDS = ("file", "iscsi", "nbd")
#: where tgtd puts its control socket (tgt's usr/tgtd.h, TGT_IPC_DIR)
TGT_IPC_DIR = Path("/var/run/tgtd")
IQN = "iqn.2026-11.org.stormatrix"


def _die_with_parent() -> None:  # runs in the child between fork and exec
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    os.setsid()  # a Ctrl-C reaches the harness, which stops the server in order


def free_port() -> int:
    """A TCP port on 127.0.0.1 free right now (the server's own bind is checked afterwards)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


def listens(pid: int, port: int) -> bool:
    """Whether process ``pid`` itself listens on 127.0.0.1:``port`` (not merely someone else)."""
    try:
        conns = psutil.Process(pid).connections(kind="tcp")
    except psutil.Error:
        return False
    return any(c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port
               and c.laddr.ip in (LOOPBACK, "0.0.0.0") for c in conns)


def _binary(name: str, package: str) -> str:
    found = shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin")
    if not found:
        raise EnvironmentProblem(f"{name} not found: install the Debian package {package} "
                                 "(scripts/apt-packages.txt lists it)")
    return found


class LocalStorage(ABC):
    """One storage under test: serve ``files`` (one per worker) and say how QEMU opens each.

    Use as a context manager; :meth:`stop` is safe to call twice and always leaves no server running.
    """

    kind = "file"
    server: str | None = None  # the program that serves the volumes

    def __init__(self, workdir: Path) -> None:
        self.workdir = Path(workdir)
        #: hears of every server process the moment it runs: (the program, its pid, its tgtd control number)
        self.on_spawn: Callable[[str, int, int | None], None] | None = None
        self.files: list[Path] = []
        self.urls: list[str] = []
        self.proc: subprocess.Popen[bytes] | None = None
        self.port: int | None = None

    def __enter__(self) -> "LocalStorage":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self, files: Sequence[Path]) -> list[str]:
        """Serve ``files``; returns what QEMU's ``-drive file=`` opens for each, in order."""
        if not files:
            raise InputError(f"storage {self.kind}: no volumes to serve")
        missing = [str(f) for f in files if not Path(f).is_file()]
        if missing:
            raise InputError(f"storage {self.kind}: volume file(s) {', '.join(missing)} do not exist; "
                             "create the workers' test disks first")
        self.files = [Path(f).resolve() for f in files]
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.urls = self._start()
        return self.urls

    @abstractmethod
    def _start(self) -> list[str]:
        """Start serving :attr:`files`; return their URLs."""

    def stop(self) -> None:
        """Stop the server (if any); idempotent."""

    def describe(self) -> dict[str, Any]:
        """For the run record: what served the side's disks."""
        return {"kind": self.kind, "server": self.server, "volumes": [str(f) for f in self.files],
                "urls": list(self.urls), "pid": self.proc.pid if self.proc else None, "port": self.port}

    def _log_tail(self, name: str, limit: int = 600) -> str:
        try:
            return (self.workdir / name).read_text(errors="replace").strip()[-limit:]
        except OSError:
            return ""

    def _spawn(self, argv: list[str], log_name: str) -> subprocess.Popen[bytes]:
        with open(self.workdir / log_name, "wb") as out:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                    preexec_fn=_die_with_parent, close_fds=True)
        if self.on_spawn is not None:
            self.on_spawn(self.server or Path(argv[0]).name, proc.pid, getattr(self, "control", None))
        return proc

    def _wait_listening(self, proc: subprocess.Popen[bytes], port: int, what: str, log_name: str,
                        timeout: float = 10.0) -> bool:
        """True once ``proc`` listens on ``port``; False if it exited or never bound it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                return False
            if listens(proc.pid, port):
                return True
            time.sleep(0.05)
        log.warning("%s did not listen on %s:%d within %.0f s: %s", what, LOOPBACK, port, timeout,
                    self._log_tail(log_name))
        return False

    @staticmethod
    def _end(proc: subprocess.Popen[bytes], grace: float) -> None:
        """Wait ``grace`` seconds for ``proc`` to exit, then SIGKILL it (by its own pid)."""
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class FileStorage(LocalStorage):
    """The raw files as they are (a directory storage): QEMU opens them directly."""

    kind = "file"

    def _start(self) -> list[str]:
        return [str(f) for f in self.files]


class IscsiStorage(LocalStorage):
    """A private ``tgtd`` on 127.0.0.1: one target, LUN ``i`` backed by the ``i``-th file."""

    kind = "iscsi"
    server = "tgtd"
    ATTEMPTS = 5

    def __init__(self, workdir: Path, name: str = "stormatrix") -> None:
        super().__init__(workdir)
        self.tgtd = _binary("tgtd", "tgt")
        self.tgtadm = _binary("tgtadm", "tgt")
        self.control: int | None = None
        self.target = f"{IQN}:{name}"

    def adm(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """One tgtadm request to our tgtd (its own control port): an argument list, never a string."""
        assert self.control is not None
        argv = [self.tgtadm, "-C", str(self.control), "--lld", "iscsi", *args]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        if check and done.returncode != 0:
            raise EnvironmentProblem(f"tgtadm {' '.join(args)} failed (exit {done.returncode}): "
                                     f"{(done.stderr or done.stdout).strip()}")
        return done

    def _start(self) -> list[str]:
        sweep_stale_control_sockets()
        last = ""
        for _ in range(self.ATTEMPTS):
            # tgtd's control channel is a unix socket named after a number (0-32767; the system's
            # tgt service uses 0): take one nobody uses
            self.control = random.randrange(1000, 32768)
            if (TGT_IPC_DIR / f"socket.{self.control}").exists():
                continue
            self.port = free_port()
            proc = self._spawn([self.tgtd, "-f", "-C", str(self.control),
                                "--iscsi", f"portal={LOOPBACK}:{self.port}"], "tgtd.log")
            if self._wait_listening(proc, self.port, "tgtd", "tgtd.log"):
                self.proc = proc
                break
            last = self._log_tail("tgtd.log")  # lost the port or the control socket to someone else
            self._kill(proc)
        else:
            raise EnvironmentProblem(f"tgtd did not start on {LOOPBACK} after {self.ATTEMPTS} attempts: {last}")
        try:
            self._wait_control()
            self.adm("--op", "new", "--mode", "target", "--tid", "1", "-T", self.target)
            for lun, path in enumerate(self.files, start=1):
                self.adm("--op", "new", "--mode", "logicalunit", "--tid", "1", "--lun", str(lun), "-b", str(path))
            # -I ALL admits any initiator that reaches the portal: it listens on loopback only
            self.adm("--op", "bind", "--mode", "target", "--tid", "1", "-I", "ALL")
        except BaseException:
            self.stop()
            raise
        log.info("iSCSI target %s on %s:%d (tgtd %d), %d LUNs", self.target, LOOPBACK, self.port, self.proc.pid,
                 len(self.files))
        return [f"iscsi://{LOOPBACK}:{self.port}/{self.target}/{lun}" for lun in range(1, len(self.files) + 1)]

    def _wait_control(self, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            done = self.adm("--op", "show", "--mode", "target", check=False)
            if done.returncode == 0:
                return
            if time.monotonic() > deadline or (self.proc and self.proc.poll() is not None):
                raise EnvironmentProblem(f"tgtd's control socket {self.control} does not answer: "
                                         f"{done.stderr.strip()}; tgtd: {self._log_tail('tgtd.log')}")
            time.sleep(0.05)

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None:
            # tgt's own shutdown: refuse new logins, drop the target (and its sessions), end the daemon
            for args in (("--op", "update", "--mode", "sys", "--name", "State", "-v", "offline"),
                         ("--op", "delete", "--mode", "target", "--tid", "1", "--force"),
                         ("--op", "delete", "--mode", "system")):
                done = self.adm(*args, check=False)
                if done.returncode != 0:
                    log.debug("tgtadm %s: %s", " ".join(args), done.stderr.strip())
            self._end(proc, grace=5.0)
        self._kill(proc)

    def _kill(self, proc: subprocess.Popen[bytes]) -> None:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if self.control is not None:  # tgtd leaves its socket and lock file behind
            for suffix in ("", ".lock"):
                (TGT_IPC_DIR / f"socket.{self.control}{suffix}").unlink(missing_ok=True)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "target": self.target}


def _remove_if_unlocked(number: int) -> bool | None:
    """Remove tgtd control socket ``number`` (and its lock file) if no tgtd holds its lock: True when removed,
    None when there is none, False when a tgtd holds it."""
    import fcntl  # (here, not at the top: a Windows workstation imports this package for its words, never runs it)

    lock = TGT_IPC_DIR / f"socket.{number}.lock"
    try:
        fd = os.open(lock, os.O_WRONLY)
    except OSError:
        return None
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False  # a tgtd owns it
    else:
        (TGT_IPC_DIR / f"socket.{number}").unlink(missing_ok=True)
        lock.unlink(missing_ok=True)
        return True
    finally:
        os.close(fd)


def sweep_stale_control_sockets() -> list[int]:
    """Remove the control sockets of tgtds that are gone (a harness SIGKILLed with its tgtd leaves
    ``socket.N`` and ``socket.N.lock`` behind). A live tgtd holds a lockf lock on its ``.lock`` file for
    its whole life (tgt's ``ipc_init``): whatever file we can lock has no tgtd. Only the numbers this
    module uses (1000 and up) are looked at; the system service's (0) is never touched."""
    try:
        locks = list(TGT_IPC_DIR.glob("socket.*.lock"))
    except OSError:
        return []
    numbers = [int(n) for n in (lock.name[len("socket."):-len(".lock")] for lock in locks) if n.isdigit()]
    return [n for n in numbers if n >= 1000 and _remove_if_unlocked(n)]


def release_control_socket(number: int, timeout: float = 10.0) -> bool:
    """Remove the control socket of a tgtd of ours that was just killed, once its lock is let go: a killed tgtd's
    main thread is gone (a zombie) while its other threads may still hold the lock for a moment. False if a tgtd
    still holds it after ``timeout`` (then it is not ours to remove)."""
    if number < 1000:
        return False
    deadline = time.monotonic() + timeout
    while True:
        done = _remove_if_unlocked(number)
        if done is not False:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


class NbdStorage(LocalStorage):
    """``qemu-storage-daemon`` on 127.0.0.1: export ``disk<i>`` backed by the ``i``-th file."""

    kind = "nbd"
    server = "qemu-storage-daemon"
    ATTEMPTS = 5

    def __init__(self, workdir: Path) -> None:
        super().__init__(workdir)
        self.daemon = _binary("qemu-storage-daemon", "qemu-system-common")

    def argv(self, port: int) -> list[str]:
        argv = [self.daemon]
        for i, path in enumerate(self.files, start=1):
            # O_DIRECT on the backing file, as a VM's cache=none would open it locally
            argv += ["--blockdev", f"driver=file,node-name=f{i},filename={path},cache.direct=on,aio=native"]
        argv += ["--nbd-server", f"addr.type=inet,addr.host={LOOPBACK},addr.port={port}"]
        for i in range(1, len(self.files) + 1):
            argv += ["--export", f"type=nbd,id=e{i},node-name=f{i},name=disk{i},writable=on"]
        return argv

    def _start(self) -> list[str]:
        last = ""
        for _ in range(self.ATTEMPTS):
            self.port = free_port()
            proc = self._spawn(self.argv(self.port), "nbd.log")
            if self._wait_listening(proc, self.port, "qemu-storage-daemon", "nbd.log"):
                self.proc = proc
                log.info("NBD exports disk1..disk%d on %s:%d (qemu-storage-daemon %d)", len(self.files), LOOPBACK,
                         self.port, proc.pid)
                return [f"nbd://{LOOPBACK}:{self.port}/disk{i}" for i in range(1, len(self.files) + 1)]
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            last = self._log_tail("nbd.log")
        raise EnvironmentProblem(f"qemu-storage-daemon did not export on {LOOPBACK}: {last}")

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.terminate()  # SIGTERM: the daemon closes its exports and exits
        self._end(proc, grace=5.0)


STORAGES: dict[str, type[LocalStorage]] = {"file": FileStorage, "iscsi": IscsiStorage, "nbd": NbdStorage}


def local_storage(kind: str, workdir: Path) -> LocalStorage:
    """The storage named ``kind`` (one of :data:`STORAGE_KINDS`), not yet started."""
    try:
        cls = STORAGES[kind]
    except KeyError:
        raise InputError(f"unknown local storage {kind!r}: choose one of {', '.join(STORAGE_KINDS)}") from None
    return cls(workdir)
