"""The local storages under test, on real servers: tgtd (iSCSI) and qemu-storage-daemon (NBD) on loopback.

What is checked is what a worker's QEMU relies on: each volume URL opens with QEMU's own block layer
(libiscsi for ``iscsi://``, its NBD client for ``nbd://``), a write through URL ``i`` lands in backing
file ``i`` and nowhere else, the server listens on 127.0.0.1 only, and stopping it (or SIGKILLing the
harness that started it) leaves no server process, no port and, for tgtd, no control socket behind.
Workers doing fio over each storage are in ``test_local_fleet_suite.py``.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from standins.processes import process_gone

from stormatrix.core.errors import InputError
from stormatrix.backends.qemu.storages import TGT_IPC_DIR, IscsiStorage, NbdStorage, listens, local_storage

MIB = 2**20


def _volumes(folder: Path, n: int, size_mib: int = 8) -> list[Path]:
    out = []
    for i in range(n):
        p = folder / f"vol{i}.raw"
        p.write_bytes(b"\0" * size_mib * MIB)
        out.append(p)
    return out


def _qemu_io(url: str, command: str) -> str:
    done = subprocess.run(["qemu-io", "-f", "raw", url, "-c", command], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _released(lock: Path, timeout: float = 10.0) -> bool:
    """Whether ``lock`` (a tgtd's ``socket.N.lock``) is gone or can be locked within ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            fd = os.open(lock, os.O_WRONLY)
        except FileNotFoundError:
            return True
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except OSError:
            time.sleep(0.05)
        finally:
            os.close(fd)
    return False


@pytest.mark.parametrize("kind", ["iscsi", "nbd"])
def test_each_url_reaches_its_own_backing_file_through_qemus_client(tmp_path: Path, kind: str) -> None:
    files = _volumes(tmp_path, 3)
    storage = local_storage(kind, tmp_path / "srv")
    with storage:
        urls = storage.start(files)
        assert len(urls) == 3 and all(u.startswith(f"{kind}://127.0.0.1:{storage.port}/") for u in urls)
        assert storage.proc is not None and listens(storage.proc.pid, storage.port or 0)
        pid, port = storage.proc.pid, storage.port
        info = json.loads(subprocess.run(["qemu-img", "info", "--output=json", urls[1]], capture_output=True,
                                         text=True, check=True, timeout=60).stdout)
        assert info["virtual-size"] == 8 * MIB
        # a pattern written through the second URL lands in the second file only, at that offset
        _qemu_io(urls[1], "write -P 0xa5 1M 64k")
        assert "pattern verification failed" not in _qemu_io(urls[1], "read -P 0xa5 1M 64k")
        data = [f.read_bytes() for f in files]
        assert data[1][MIB:MIB + 65536] == b"\xa5" * 65536
        assert data[0] == data[2] == b"\0" * 8 * MIB
        conns = [c for c in psutil.Process(pid).connections(kind="tcp") if c.status == psutil.CONN_LISTEN]
        assert conns and all(c.laddr.ip == "127.0.0.1" for c in conns)  # loopback only
    assert storage.proc is None and process_gone(pid)
    assert not listens(pid, port or 0)
    if kind == "iscsi":
        assert isinstance(storage, IscsiStorage)
        assert not (TGT_IPC_DIR / f"socket.{storage.control}").exists()
        assert not (TGT_IPC_DIR / f"socket.{storage.control}.lock").exists()
    storage.stop()  # twice is fine


def test_two_iscsi_servers_at_once_get_their_own_port_and_control_socket(tmp_path: Path) -> None:
    for side in "ab":
        (tmp_path / side).mkdir()
    a, b = IscsiStorage(tmp_path / "a"), IscsiStorage(tmp_path / "b")
    with a, b:
        a.start(_volumes(tmp_path / "a", 1))
        b.start(_volumes(tmp_path / "b", 1))
        assert a.port != b.port and a.control != b.control
        _qemu_io(a.urls[0], "write -P 0x11 0 4k")
        _qemu_io(b.urls[0], "write -P 0x22 0 4k")
    assert (tmp_path / "a" / "vol0.raw").read_bytes()[:4096] == b"\x11" * 4096
    assert (tmp_path / "b" / "vol0.raw").read_bytes()[:4096] == b"\x22" * 4096


def test_bad_volumes_are_refused_before_a_server_starts(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no volumes"):
        NbdStorage(tmp_path).start([])
    with pytest.raises(InputError, match="missing.raw"):
        IscsiStorage(tmp_path).start([tmp_path / "missing.raw"])
    with pytest.raises(InputError, match="choose one of file, iscsi, nbd"):
        local_storage("nvme", tmp_path)


_HARNESS = """
import sys, time
from pathlib import Path
from stormatrix.backends.qemu.storages import local_storage
s = local_storage(sys.argv[1], Path(sys.argv[2]))
s.start([Path(sys.argv[3])])
print(s.proc.pid, s.port, getattr(s, "control", None) or 0, flush=True)
time.sleep(600)
"""


@pytest.mark.parametrize("kind", ["iscsi", "nbd"])
def test_a_killed_harness_leaves_no_server_behind(tmp_path: Path, kind: str) -> None:
    files = _volumes(tmp_path, 1)
    harness = subprocess.Popen([sys.executable, "-c", _HARNESS, kind, str(tmp_path / "srv"), str(files[0])],
                               stdout=subprocess.PIPE, text=True)
    try:
        assert harness.stdout is not None
        pid, port, _control = map(int, harness.stdout.readline().split())
        assert listens(pid, port)
        os.kill(harness.pid, signal.SIGKILL)
        harness.wait()
        assert process_gone(pid), f"{kind} server {pid} outlived the harness"
        if kind == "iscsi":  # its control socket stays until the next iSCSI storage sweeps it
            # the killed tgtd's main thread shows as a zombie while its other threads may still hold its
            # files (the lock on socket.N.lock): wait until the lock is let go, as a dead tgtd's is
            assert _released(TGT_IPC_DIR / f"socket.{_control}.lock"), "the killed tgtd's lock was never released"
            with IscsiStorage(tmp_path / "next") as following:
                following.start(files)
            assert not list(TGT_IPC_DIR.glob(f"socket.{_control}*"))
    finally:
        if harness.poll() is None:
            harness.kill()
            harness.wait()
        assert harness.stdout is not None
        harness.stdout.close()
