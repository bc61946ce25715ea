"""A stand-in for the tiny guest's agent (``harness/guest/init``) on a unix socket, with fault switches,
and a fake backend that "starts a VM" by starting one of these agents.

The protocol is the real one, byte for byte: ``@@SMX READY k=v ...``; ``RUN <base64 job>`` answered by
``STARTED``, the ``MARK`` lines of the job's exec_prerun/exec_postrun (``harness/guest/smx-mark``: a warm-up job
whose prerun is ``warmup-gate`` holds until a GO, then says ``warmup-start``; one whose prerun is
``warmup-start`` says so at once; the measurement's ``measure-start`` holds until a GO, then ``measure-end``;
each with the guest's uptime), ``RESULT rc= bytes= sha256= encoding=gzip``, the gzipped output in base64 and
``END``. So the real :class:`LocalAgentExecutor` and the real runner are what
the fault tests exercise; only the guest is pretend.

Faults (``AgentFaults``): never ready, ready without a disk, a disk signature (partitions, ext, ...),
fio exits non-zero, fio prints garbage, the result arrives damaged, the connection drops mid-command,
fio hangs. Counts let a fault hit only the first N attempts, so retries can succeed.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent.parent / "data"
FIO_OUTPUT = (DATA / "fio" / "fio3_randread_bs4k_qd1.json").read_text()


@dataclass
class AgentFaults:
    """What goes wrong, and for how many boots/commands (``-1``: always)."""

    never_ready: int = 0
    no_disk: int = 0
    fio_rc: int = 0             # fio exit code to report
    fio_rc_count: int = 0
    garbage: int = 0            # fio prints garbage instead of JSON (rc 0)
    damaged: int = 0            # sha256 does not match
    damaged_gzip: int = 0       # the gzipped result arrives cut short
    encoding: str = "gzip"      # how the result is sent: "gzip" (the guest's init), "plain" (an older image)
    drop_mid_command: int = 0   # close the connection after STARTED
    hang: int = 0               # never answer RUN
    signature: str = "none"     # what the guest found on the test disk
    window_s: float = 0.05      # measurement window (the real collector needs ~1 s: perf starts slowly)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "AgentFaults":
        return cls(**d)

    def take(self, name: str) -> bool:
        n = getattr(self, name)
        if n == 0:
            return False
        if n > 0:
            setattr(self, name, n - 1)
        return True


class AgentStandin:
    """One guest's agent listening on ``path`` (QEMU's ``-chardev socket,server=on``)."""

    def __init__(self, path: Path, faults: AgentFaults, *, fio_output: str = FIO_OUTPUT) -> None:
        self.path = Path(path)
        self.faults = faults
        self.fio_output = fio_output
        self.jobs: list[str] = []
        self.go_received = 0  # GO answers to measure-start markers
        self.gate_waits: list[float] = []  # seconds each job sent ahead held at its warm-up gate until its GO
        self.booted = time.monotonic()  # the guest's uptime counts from here
        self._unread = b""  # what _talk read past the command it is handling (one conversation at a time)
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.path.unlink(missing_ok=True)
        self._sock.bind(str(self.path))
        self._sock.listen(4)
        self._stop = threading.Event()
        self._conns: list[socket.socket] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        self._sock.settimeout(0.1)
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except (socket.timeout, OSError):
                continue
            self._conns.append(conn)
            threading.Thread(target=self._talk, args=(conn,), daemon=True).start()

    def _say(self, conn: socket.socket, line: str) -> None:
        conn.sendall(("@@SMX " + line + "\n").encode())

    def _ready(self, conn: socket.socket) -> None:
        disk = "" if self.faults.take("no_disk") else "/dev/vda"
        self._say(conn, f"READY disk={disk} kernel=6.1.0-standin fio=fio-3.33 uptime=1.00 sectors=131072 "
                        f"signature={self.faults.signature} clocksource=hpet")

    def _talk(self, conn: socket.socket) -> None:
        try:
            if self.faults.take("never_ready"):
                while not self._stop.wait(0.1):
                    pass
                return
            self._ready(conn)
            buf = b""
            while not self._stop.is_set():
                conn.settimeout(0.2)
                try:
                    chunk = conn.recv(65536)
                except socket.timeout:
                    continue
                if not chunk:
                    return
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    self._unread = buf  # a GO that came in the same read as RUN is _await_go's
                    if not self._command(conn, line.decode()):
                        return
                    buf, self._unread = self._unread, b""
        except OSError:
            return
        finally:
            conn.close()

    def _command(self, conn: socket.socket, line: str) -> bool:
        cmd, _, payload = line.partition(" ")
        if cmd == "PING":
            self._ready(conn)
        elif cmd == "POWEROFF":
            self._say(conn, "BYE")
            return False
        elif cmd == "RUN":
            self.jobs.append(base64.b64decode(payload).decode())
            self._say(conn, "STARTED")
            if self.faults.take("hang"):
                return True
            if self.faults.take("drop_mid_command"):
                conn.shutdown(socket.SHUT_RDWR)
                return False
            warmup = self.jobs[-1].partition("[warmup]")[2].partition("[measure]")[0]
            if "exec_prerun=/bin/smx-mark warmup-gate" in warmup:
                self._mark(conn, "warmup-gate")
                held = time.monotonic()
                self._await_go(conn, timeout=60.0, count=False)  # smx-mark waits an hour; a test, a minute
                self.gate_waits.append(time.monotonic() - held)
                self._mark(conn, "warmup-start")
            elif "exec_prerun=/bin/smx-mark warmup-start" in warmup:
                self._mark(conn, "warmup-start")
            self._mark(conn, "measure-start")
            self._await_go(conn)  # like the guest's smx-mark: I/O starts once the host's window is open
            time.sleep(self.faults.window_s)
            self._mark(conn, "measure-end")
            rc = 0
            out = self.fio_output
            if self.faults.take("fio_rc_count"):
                rc, out = self.faults.fio_rc or 1, "fio: pid=42, err=5/file:io_u.c:1889, func=io_u error, error=Input/output error\n"
            elif self.faults.take("garbage"):
                out = "\x00\x01 not json {{{ \ufffd" * 20
            raw = out.encode()
            digest = hashlib.sha256(raw).hexdigest()
            if self.faults.take("damaged"):
                digest = "0" * 64
            # like the guest's init: gzip | base64, length and SHA-256 of the plain output; "plain" is an
            # image built before the result was compressed
            plain = self.faults.encoding == "plain"
            sent = raw if plain else gzip.compress(raw)
            if self.faults.take("damaged_gzip"):
                sent = sent[: len(sent) // 2]
            self._say(conn, f"RESULT rc={rc} bytes={len(raw)} sha256={digest}" + ("" if plain else " encoding=gzip"))
            conn.sendall(base64.encodebytes(sent))
            self._say(conn, "END")
        else:
            self._say(conn, f"ERROR unknown-command={cmd}")
        return True

    def _mark(self, conn: socket.socket, name: str) -> None:
        self._say(conn, f"MARK {name} {time.monotonic() - self.booted:.2f}")

    def _await_go(self, conn: socket.socket, timeout: float = 10.0, count: bool = True) -> None:
        """Read until the host's GO line (smx-mark's ``read -t 10``); other input is an error."""
        deadline = time.monotonic() + timeout
        buf, self._unread = self._unread, b""
        while b"\n" not in buf and time.monotonic() < deadline:
            conn.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                chunk = conn.recv(1)
            except socket.timeout:
                break
            if not chunk:
                return
            buf += chunk
        line, _, self._unread = buf.partition(b"\n")
        self.go_received += count and line.strip() == b"GO"

    def close(self) -> None:
        self._stop.set()
        for c in self._conns:
            try:
                c.close()
            except OSError:
                pass
        self._sock.close()
        self._thread.join(timeout=2)
        self.path.unlink(missing_ok=True)


# --- a fake backend whose "VM" is an agent stand-in plus a sleeping process ---------------------------

from stormatrix.backends.base import Backend, BlockStats, GuestEndpoint, HostScope  # noqa: E402
from stormatrix.core.errors import VmStartError  # noqa: E402
from stormatrix.core.model import CONTROLLERS, DiskConfig  # noqa: E402

FAULTS_ENV = "STORMATRIX_STANDIN_FAULTS"


class FakeVmBackend(Backend):
    """Keeps a "VM config" that apply changes and restore must put back, like a real hypervisor.

    Faults come from the ``[agent_faults]``-like dict given to the constructor or, when started from
    the CLI (subprocess tests), from the JSON in ``$STORMATRIX_STANDIN_FAULTS``:
    ``{"agent": {...AgentFaults}, "start_fails": n}``.
    """

    name = "qemu"  # registered in place of the qemu backend by the tests
    controllers = frozenset(c for c, (bus, _) in CONTROLLERS.items() if bus != "esxi")
    default_executor = "local-agent"
    ORIGINAL = {"test_disk": "scsi1", "controller": "virtio-scsi-single", "aio": "native"}

    def __init__(self, spec: Any, workdir: Path, faults: dict[str, Any] | None = None) -> None:
        super().__init__(spec, workdir)
        if faults is None:
            faults = json.loads(os.environ.get(FAULTS_ENV, "{}"))
        self.agent_faults = AgentFaults.from_dict(faults.get("agent", {}))
        self.start_fails = int(faults.get("start_fails", 0))
        self.config = dict(self.ORIGINAL)
        self.agent: AgentStandin | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self.applied: list[str] = []
        self.restored = 0
        # "pipelined": like the qemu backend with [qemu] pipeline, a VM whose window closed is handed off
        # (hand_off) and keeps answering until released, while the next one starts
        # (the BootsAhead capability of backends.base, as the qemu backend has it)
        self.overlaps = bool(faults.get("pipelined", False))
        self.booted_ahead = False
        self.taken_ahead: Any = None
        self.handed: list[tuple[AgentStandin, subprocess.Popen[bytes]]] = []
        self.starts = 0
        # "ahead" (with "pipelined"): like the qemu backend's boot-ahead and [qemu] prepare_ahead, the next
        # configuration's VM starts during the current cell, and ahead_ready() lends it for its first job
        self.ahead_depth = 1 if faults.get("ahead") else 0
        self.aheads: dict[DiskConfig, tuple[AgentStandin, subprocess.Popen[bytes]]] = {}
        self.claimed: list[tuple[AgentStandin, subprocess.Popen[bytes]]] = []
        self.discarded: list[str] = []  # the configurations whose claimed VM was discarded
        self.agents: list[AgentStandin] = []  # every guest started, in order
        # "first_agent": faults of the first guest started only (the others get "agent"'s): with two guests
        # talking at once (a job sent ahead), which one takes a shared fault first is a race
        self.first_faults = AgentFaults.from_dict(faults["first_agent"]) if "first_agent" in faults else None

    def _prepare(self) -> dict[str, Any]:
        return {"qemu": "standin"}

    def original_config(self) -> dict[str, Any] | None:
        return None

    def _apply(self, disk: DiskConfig) -> None:
        self.booted_ahead, self.taken_ahead = False, None
        self._stop()
        self.config.update(controller=disk.controller, aio=disk.aio)
        self.applied.append(disk.key)
        if self.start_fails:
            self.start_fails -= 1
            raise VmStartError("QEMU exited with code 1 at start: (stand-in) could not open disk image")
        ahead = self.aheads.pop(disk, None)
        if ahead is not None:
            self.agent, self.proc = ahead
            self.booted_ahead = True
            if ahead in self.claimed:
                self.claimed.remove(ahead)
                self.taken_ahead = ahead
            return
        self.agent, self.proc = self._start()

    def _start(self) -> tuple[AgentStandin, subprocess.Popen[bytes]]:
        self.starts += 1
        path = Path(self.workdir) / "vm" / f"agent{self.starts}.sock"  # one per VM: two may live at once
        path.parent.mkdir(parents=True, exist_ok=True)
        proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"], stdin=subprocess.DEVNULL)
        first = self.first_faults is not None and self.starts == 1
        agent = AgentStandin(path, self.first_faults if first and self.first_faults else self.agent_faults)
        self.agents.append(agent)
        return agent, proc

    def boot_ahead(self, disk: DiskConfig) -> None:
        if self.ahead_depth and disk not in self.aheads and len(self.aheads) < self.ahead_depth:
            self.aheads[disk] = self._start()

    def ahead_ready(self, disk: DiskConfig, deadline: float) -> Any:
        handle = self.aheads.get(disk)
        if handle is None or handle in self.claimed:
            return None
        self.claimed.append(handle)
        return handle

    def ahead_endpoints(self, handle: Any) -> list[GuestEndpoint]:
        return [GuestEndpoint(kind="local-agent", address=str(handle[0].path), name="standin-ahead",
                              hints={"measure_job_early": True})]

    def discard(self, handle: Any) -> None:
        if handle in self.claimed:
            self.claimed.remove(handle)
        for disk, h in list(self.aheads.items()):
            if h is handle:
                del self.aheads[disk]
                self.discarded.append(disk.key)
                self.release_one(handle)

    def _stop(self) -> None:
        if self.agent is not None:
            self.agent.close()
            self.agent = None
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def hand_off(self) -> Any:
        if not self.overlaps or self.agent is None or self.proc is None:
            return None
        handle = (self.agent, self.proc)
        self.handed.append(handle)
        self.agent, self.proc = None, None
        return handle

    def release(self, handle: Any) -> None:
        if handle in self.handed:
            self.handed.remove(handle)
            self.release_one(handle)

    @staticmethod
    def release_one(handle: tuple[AgentStandin, subprocess.Popen[bytes]]) -> None:
        agent, proc = handle
        agent.close()
        proc.kill()
        proc.wait()

    def _restore(self) -> None:
        while self.handed:
            self.release(self.handed[0])
        while self.aheads:
            self.release_one(self.aheads.popitem()[1])
        self.claimed = []
        self._stop()
        self.config = dict(self.ORIGINAL)
        self.restored += 1

    def scope(self) -> list[HostScope]:
        assert self.proc is not None
        return [HostScope(pid=self.proc.pid, threads={self.proc.pid: "main-loop"}, vm="standin")]

    def endpoints(self) -> list[GuestEndpoint]:
        assert self.agent is not None
        return [GuestEndpoint(kind="local-agent", address=str(self.agent.path), name="standin")]

    def blockstats(self) -> BlockStats | None:
        return None


class FakeCollector:
    """A host collector that measures nothing but answers like the real one (fast, in-process tests)."""

    def __init__(self, scope: Any) -> None:
        self.scope = scope

    def start(self) -> None:
        pass

    def stop(self) -> dict[str, Any]:
        return {"cpu_metric": "cpu_time", "cpu_unit": "s", "cpu_total": 0.5, "cpu_user": 0.4, "cpu_system": 0.1,
                "cycles": None, "ctx_switches": 100, "ctx_voluntary": 90, "ctx_involuntary": 10,
                "source": "standin", "scope": "qemu-process", "pid": self.scope.pid, "window_s": 0.1,
                "threads": [], "by_role": {}}

    def abort(self) -> None:
        pass


from stormatrix.core.errors import AuthenticationFailed, GuestDisconnected  # noqa: E402
from stormatrix.executors.base import GuestExecutor, WorkloadResult  # noqa: E402


class FakeWinRMExecutor(GuestExecutor):
    """Raises what the real WinRM executor raises for a refused password or a dropped connection
    (those paths themselves are tested against the WS-Man stand-in in test_winrm_standin.py);
    otherwise returns the captured fio output. ``fault``/``count`` are set by the test."""

    name = "winrm"
    fault: str = ""
    count: int = 0

    def wait_ready(self, deadline: float) -> dict[str, Any]:
        cls = type(self)
        if cls.fault == "auth" and cls.count:
            cls.count -= 1
            raise AuthenticationFailed("WinRM refused the credentials of user 'bench' (HTTP 401). Fix: check the "
                                       "password in the environment variable or file, and the transport")
        if cls.fault == "no-disk" and cls.count:
            cls.count -= 1
            from stormatrix.core.errors import TestDiskMissing  # the real executor's error

            raise TestDiskMissing("the test disk (serial 'smx-test') is not visible in the guest: controller "
                                  "virtio-scsi (PCI\\VEN_1AF4&DEV_1004) has no driver bound (problem code 28)")
        return {"disk": "PhysicalDrive1", "os": "Windows Server 2022 (stand-in)"}

    def run(self, cell: Any, timing: Any, window: Any) -> WorkloadResult:
        cls = type(self)
        window.measure_started()
        if cls.fault == "drop" and cls.count:
            cls.count -= 1
            raise GuestDisconnected("WinRM connection to 127.0.0.1:5985 dropped mid-command "
                                    "(Connection reset by peer)", cell=cell.key)
        window.measure_ended()
        from stormatrix.analysis.read.fio import parse_fio_json

        return WorkloadResult(engine="fio", raw=FIO_OUTPUT, data=parse_fio_json(FIO_OUTPUT), window_source="timed")


def main(argv: list[str]) -> int:
    """``python tests/standins/agent.py run m.toml -o dir``: the real CLI with this backend as ``qemu``."""
    from stormatrix import registry
    from stormatrix.cli import main as cli_main

    registry.BACKENDS["qemu"] = f"{__name__}:FakeVmBackend" if __name__ != "__main__" else "standins.agent:FakeVmBackend"
    return cli_main(argv)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    sys.exit(main(sys.argv[1:]))
