"""``guest check --timeout T`` is a deadline for the whole command: connecting, every request's HTTP
timeout, the retries and their pauses, the module upload and the checks.

Checked as relations that hold on any machine, never as a wall-clock figure (that one is measured by
benchmarks/bench_guest_timeout.py):

- on a fake clock, against a transport that behaves as ``requests`` documents for a guest that never
  answers (each request blocks for the whole timeout it is given, then raises ``ReadTimeout``) or
  refuses connections (``ConnectionError`` at once): the command ends at or before the deadline, and
  no request is handed a timeout longer than what is left of it;
- against the real WS-Man stand-in (tests/standins/wsman.py) in its ``silent`` mode (it reads each request
  and never answers) with real pywinrm: every timeout pywinrm hands to ``requests`` is at most what was
  left of the deadline when the channel last read the clock.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import pytest
import requests
from winrm.protocol import Protocol

from stormatrix.cli import build_parser
from stormatrix.commands import guest as guest_cmd
from stormatrix.core.errors import StormatrixError
from stormatrix.executors.winrm import executor as w
from tests.standins.wsman import WSManStandIn


def parse(*extra: str) -> Any:
    return build_parser().parse_args(["guest", "check", "--host", "127.0.0.1", "--username", "u",
                                      "--password-env", "SMX_PW", "--disk-serial", "S1", *extra])


@dataclass
class FakeClock:
    """Monotonic time that moves only when something waits: a sleep, or a request blocking for its timeout."""

    now: float = 1000.0
    readings: list[float] = field(default_factory=list)

    def __call__(self) -> float:
        self.readings.append(self.now)
        return self.now

    def sleep(self, seconds: float) -> None:
        assert seconds >= 0
        self.now += seconds


@dataclass
class _Transport:
    read_timeout_sec: float


class UnansweringProtocol:
    """pywinrm's Protocol surface for a guest that never answers (``mode="silent"``: each request waits
    its whole read timeout, then requests raises ReadTimeout) or whose port is closed (``"refused"``:
    ConnectionError at once). Records (clock at send, timeout handed) for every request."""

    def __init__(self, clock: FakeClock, mode: str, sends: list[tuple[float, float]], read_timeout: int) -> None:
        self.clock, self.mode, self.sends = clock, mode, sends
        self.transport = _Transport(read_timeout)
        self.operation_timeout_sec = read_timeout - 1

    def _request(self, *_: Any) -> Any:
        timeout = self.transport.read_timeout_sec
        self.sends.append((self.clock.now, timeout))
        if self.mode == "refused":
            raise requests.exceptions.ConnectionError("[Errno 111] Connection refused")
        self.clock.now += timeout
        raise requests.exceptions.ReadTimeout(f"Read timed out. (read timeout={timeout})")

    open_shell = run_command = _raw_get_command_output = cleanup_command = close_shell = _request


@pytest.mark.parametrize("mode", ["silent", "refused"])
@pytest.mark.parametrize("timeout", ["0.5", "3", "7.25", "45", "300"])
def test_the_whole_check_ends_by_the_deadline_on_a_fake_clock(mode: str, timeout: str,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    clock = FakeClock()
    sends: list[tuple[float, float]] = []
    start = clock.now
    deadline = start + float(timeout)

    def factory(s: w.WinRMSettings) -> Any:
        return UnansweringProtocol(clock, mode, sends, s.read_timeout_seconds)

    args = parse("--timeout", timeout)
    with pytest.raises(StormatrixError) as info:  # GuestNotReady
        guest_cmd.run_check(args, protocol_factory=factory, environ={"SMX_PW": "pw-x"},
                            clock={"clock": clock, "sleep": clock.sleep})
    assert f"--timeout {float(timeout):g}" in str(info.value) and "Fix:" in str(info.value)
    assert sends, "at least one request was tried"
    for at, given in sends:  # no request may be handed more time than is left
        assert 0 < given <= deadline - at, (at, given, deadline)
    assert clock.now <= deadline, (clock.now - start, timeout)
    if mode == "refused" and float(timeout) >= 3:  # retried (connection errors) until the deadline, not given up early
        assert len(sends) > 1


def test_a_request_timeout_is_cut_to_what_is_left() -> None:
    settings = w.WinRMSettings(host="h", username="u", read_timeout_seconds=30, operation_timeout_seconds=20)
    clock = FakeClock()
    channel = w.WinRMChannel(settings, protocol_factory=lambda s: UnansweringProtocol(clock, "silent", [], 30),
                             clock=clock, sleep=clock.sleep)
    assert channel.request_timeout("x") == 30  # no deadline: the [winrm] read timeout
    channel.set_deadline(clock.now + 100, "--timeout 100")
    assert channel.request_timeout("x") == 30
    channel.set_deadline(clock.now + 2.5, "--timeout 2.5")
    assert channel.request_timeout("x") == 2.5
    protocol = channel._bounded("x")  # the guest-side long-poll stays below the HTTP timeout
    assert protocol.transport.read_timeout_sec == 2.5 and protocol.operation_timeout_sec < 2.5
    clock.now += 2.5
    with pytest.raises(w.RemoteCommandError, match="--timeout 2.5 ran out"):
        channel.request_timeout("x")


def test_against_a_wsman_service_that_never_answers(capsys: pytest.CaptureFixture[str]) -> None:
    """Real pywinrm and requests against the stand-in in its silent mode: the timeout each request is
    handed never exceeds what was left of the deadline at the channel's last clock reading."""
    readings: list[float] = []
    import time

    def clock() -> float:
        readings.append(time.monotonic())
        return readings[-1]

    sends: list[tuple[float, float]] = []
    with WSManStandIn(lambda line, run: None) as server:
        server.silent = True

        def factory(s: w.WinRMSettings) -> Any:
            protocol = Protocol(server.url, transport="plaintext", username="u", password="pw",
                                read_timeout_sec=s.read_timeout_seconds, operation_timeout_sec=s.operation_timeout_seconds)
            transport = protocol.transport
            send: Callable[..., Any] = transport._send_message_request

            def spy(prepared: Any, message: Any) -> Any:
                sends.append((readings[-1], transport.read_timeout_sec))
                return send(prepared, message)
            transport._send_message_request = spy
            return protocol

        args = parse("--port", str(server.port), "--timeout", "1.5")
        first = len(readings)  # run_check's first clock reading is where its deadline is counted from
        with pytest.raises(StormatrixError, match="--timeout 1.5"):
            guest_cmd.run_check(args, protocol_factory=factory, environ={"SMX_PW": "pw"}, clock={"clock": clock})
        assert "(unanswered)" in server.actions
    deadline = readings[first] + 1.5
    assert sends
    for at, given in sends:
        assert 0 < given <= deadline - at, (given, deadline - at)
