"""QMP client: a connection that fails half-way (QEMU greets but does not answer in time) is closed,
so the next client can connect to QEMU's single QMP monitor and no socket is left to the garbage
collector (CI saw that as an unraisable ResourceWarning under load)."""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest

from stormatrix.qmp import Qmp, QmpError


def _server(path: str, behaviour: str, seen: dict[str, object]) -> threading.Thread:
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(1)

    def serve() -> None:
        conn, _ = srv.accept()
        conn.settimeout(5)
        if behaviour == "bad-greeting":
            conn.sendall(b'{"hello": 1}\n')
        else:
            conn.sendall(json.dumps({"QMP": {"version": {}, "capabilities": []}}).encode() + b"\n")
        t0 = time.monotonic()
        try:
            while True:  # never answer qmp_capabilities; wait for the client to hang up
                if not conn.recv(4096):
                    seen["closed_after"] = time.monotonic() - t0
                    break
        except socket.timeout:
            seen["closed_after"] = None
        conn.close()
        srv.close()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    return t


@pytest.mark.parametrize("behaviour", ["silent", "bad-greeting"])
def test_failed_connect_closes_its_socket(tmp_path, behaviour):
    path = str(tmp_path / "q.qmp")
    seen: dict[str, object] = {}
    t = _server(path, behaviour, seen)
    client = Qmp(path, timeout=0.3)
    with pytest.raises(QmpError):
        client.connect(time.monotonic() + 2)
    assert client.sock is None
    t.join(6)
    # the server saw the hang-up while the client object is still alive: the error closed it
    assert seen.get("closed_after") is not None
    del client
