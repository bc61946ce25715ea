"""A small synchronous QMP client (QEMU Machine Protocol over a unix socket).

Only what the harness needs: capabilities negotiation, commands with arguments, errors as
exceptions. Asynchronous events that arrive between replies are kept, not mistaken for replies.
"""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from typing import Any

from .core.errors import QmpError


def connect_unix(path: str, deadline: float) -> socket.socket:
    """Connect to a unix socket QEMU is about to create (it appears a moment after QEMU starts).

    Retries until ``deadline`` (time.monotonic); raises the last OSError if it never answers.
    """
    while True:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(path)
            return s
        except OSError:
            s.close()
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.02)


class Qmp:
    def __init__(self, path: str | Path, timeout: float = 30.0) -> None:
        self.path = str(path)
        self.timeout = timeout
        self.sock: socket.socket | None = None
        self.buf = b""
        self.events: list[dict[str, Any]] = []

    def connect(self, deadline: float) -> "Qmp":
        try:
            self.sock = connect_unix(self.path, deadline)
        except OSError as exc:
            raise QmpError(f"cannot connect to QMP at {self.path}: {exc}") from None
        self.sock.settimeout(self.timeout)
        try:
            greeting = self._read()
            if "QMP" not in greeting:
                raise QmpError(f"unexpected QMP greeting: {greeting}")
            self.execute("qmp_capabilities")
        except BaseException:
            # a QEMU too busy to answer in time (a loaded host) must not leave the socket open behind
            # the error: the caller retries or falls back to signals, and the old socket would hold
            # QEMU's one QMP connection
            self.close()
            raise
        return self

    def _read(self) -> dict[str, Any]:
        assert self.sock is not None
        while b"\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise QmpError("QMP connection closed by QEMU")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def execute(self, command: str, **arguments: Any) -> Any:
        if self.sock is None:
            raise QmpError("QMP is not connected")
        msg: dict[str, Any] = {"execute": command}
        if arguments:
            msg["arguments"] = arguments
        try:
            self.sock.sendall(json.dumps(msg).encode() + b"\n")
            while True:
                reply = self._read()
                if "event" in reply:
                    self.events.append(reply)
                    continue
                if "error" in reply:
                    err = reply["error"]
                    raise QmpError(f"QMP {command} failed: {err.get('class')}: {err.get('desc')}")
                return reply.get("return")
        except (OSError, ValueError) as exc:
            raise QmpError(f"QMP {command} failed: {exc}") from None

    def close(self) -> None:
        if self.sock is not None:
            try:
                self.sock.close()
            finally:
                self.sock = None
