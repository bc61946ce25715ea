"""The transport: pywinrm's Protocol with deadlines, retries and typed errors.

Connection errors are retried only where the command cannot have started (opening the shell,
starting the command). Once it runs, a dropped connection is a :class:`GuestDisconnected`. WS-Man
faults and HTTP 5xx become :class:`WSManServiceError`, which only :meth:`WinRMExecutor.wait_ready`
retries: while the WinRM service starts after a reboot it answers faults for a while.
"""

from __future__ import annotations

import logging
import math
import time
from typing import Any, Callable

from ...core.errors import (AuthenticationFailed, GuestDisconnected, RemoteCommandError, RemoteTimeout,
                            WSManServiceError)
from .parse import CommandOutput
from .settings import WinRMSettings, check_transport_available

log = logging.getLogger("stormatrix.executor.winrm")


class _ConnectError(Exception):
    """A connection-level failure where the request cannot have reached the guest: safe to retry."""


def map_transport_error(exc: BaseException, what: str, settings: WinRMSettings,
                        read_timeout: float | None = None) -> Exception:
    """One pywinrm/requests exception -> the stormatrix error a user can act on; ``read_timeout`` is the
    HTTP read timeout the request was actually given (less than the setting near a deadline)."""
    import requests
    from winrm.exceptions import InvalidCredentialsError, WinRMError, WinRMOperationTimeoutError, WinRMTransportError

    where = settings.describe()
    if isinstance(exc, InvalidCredentialsError) or (isinstance(exc, WinRMTransportError) and exc.code == 401):
        return AuthenticationFailed(
            f"{what}: the guest rejected the credentials of {where} (HTTP 401). Fix: check the user and the "
            "password in the environment variable or file; with transport \"https\" (Basic auth) the WinRM "
            "service must allow Basic, which is off by default (winrm set winrm/config/service/auth "
            "@{Basic=\"true\"}) - prefer transport = \"ntlm\"; in a workgroup a local administrator other than "
            "the built-in Administrator needs LocalAccountTokenFilterPolicy = 1 (reg add "
            "HKLM\\SOFTWARE\\Microsoft\\Windows\\CurrentVersion\\Policies\\System /v "
            "LocalAccountTokenFilterPolicy /t REG_DWORD /d 1)")
    if isinstance(exc, requests.exceptions.SSLError):
        off = "--no-cert-validation" if settings.origin == "cli" else "[winrm] cert_validation = false"
        return RemoteCommandError(f"{what}: TLS to {where} failed ({_short(exc)}). Fix: give the guest's CA in "
                                  f"{settings.spelled('ca_file')}, or for a lab guest with a self-signed "
                                  f"certificate turn validation off explicitly ({off})")
    if isinstance(exc, (requests.exceptions.ReadTimeout, WinRMOperationTimeoutError)):
        waited = settings.read_timeout_seconds if read_timeout is None else read_timeout
        return RemoteTimeout(f"{what}: {where} did not answer within {waited:g} s")
    if isinstance(exc, (requests.exceptions.ConnectionError, _ConnectError)):
        return GuestDisconnected(f"{what}: cannot reach WinRM at {where} ({_short(exc)})")
    if isinstance(exc, WinRMTransportError):
        cls = WSManServiceError if int(exc.code or 0) >= 500 else RemoteCommandError
        return cls(f"{what}: WinRM at {where} answered HTTP {exc.code}", stdout=str(exc.response_text)[:2000])
    if isinstance(exc, WinRMError):  # pywinrm 0.3: every SOAP fault (HTTP 500) but the Receive timeout
        return WSManServiceError(f"{what}: WinRM fault from {where}: {_short(exc)}")
    return RemoteCommandError(f"{what}: unexpected error talking to {where}: {type(exc).__name__}: {_short(exc)}")


def _short(exc: BaseException | str) -> str:
    text = str(exc)
    return text if len(text) <= 300 else text[:300] + "..."


def _is_connect_error(exc: BaseException) -> bool:
    import requests

    return (isinstance(exc, requests.exceptions.ConnectionError)
            and not isinstance(exc, (requests.exceptions.SSLError, requests.exceptions.ReadTimeout)))


ProtocolFactory = Callable[[WinRMSettings], Any]


def _default_protocol(settings: WinRMSettings) -> Any:
    from winrm.protocol import Protocol

    check_transport_available(settings.transport)
    protocol = Protocol(**settings.protocol_kwargs())
    if settings.scheme == "https" and not settings.cert_validation:
        # pywinrm 0.3 lets REQUESTS_CA_BUNDLE/CURL_CA_BUNDLE override server_cert_validation="ignore";
        # the user turned validation off explicitly, so make it so. (Over HTTPS build_session sends
        # nothing; only NTLM/Kerberos over HTTP would start message encryption here.)
        protocol.transport.build_session()
        protocol.transport.session.verify = False
    return protocol


class WinRMChannel:
    """Runs command lines in the guest through one WinRM shell per command.

    Retries connection errors (never anything else) when opening the shell and starting the
    command, because then the command cannot have run; once it runs, a dropped connection is a
    :class:`GuestDisconnected`.

    An overall deadline (:meth:`set_deadline`, e.g. ``guest check --timeout``) bounds everything the
    channel does: no request starts after it, every request's HTTP connect/read timeout is cut to what
    is left of it (:meth:`request_timeout`), retry pauses end at it, and a running command is given up
    at it. Without one, each request has the ``[winrm]`` read timeout and each command its own timeout.
    """

    def __init__(self, settings: WinRMSettings, *, protocol_factory: ProtocolFactory | None = None,
                 sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic) -> None:
        self.settings = settings
        self._factory = protocol_factory or _default_protocol
        self._protocol: Any = None
        self._sleep, self._clock = sleep, clock
        self.deadline: float | None = None
        self._deadline_source = ""
        self._read_timeout: float | None = None  # what the last request was given
        self._last_error = ""  # the last transport failure, for the message when the deadline passes
        if settings.scheme == "https" and not settings.cert_validation:
            # once per channel (not at every reconnect), naming what the user wrote: the option or the key
            log.warning("TLS certificate validation of %s is turned off (%s): anyone on the path can "
                        "impersonate the guest and read the password", settings.host,
                        settings.spelled("cert_validation"))

    def set_deadline(self, deadline: float | None, source: str = "the deadline") -> None:
        """Bound every later operation by ``deadline`` (on this channel's monotonic clock); ``source``
        names it in messages (``--timeout 3``)."""
        self.deadline, self._deadline_source = deadline, source

    @property
    def protocol(self) -> Any:
        if self._protocol is None:
            self._protocol = self._factory(self.settings)
        return self._protocol

    def reset(self) -> None:
        """Drop the HTTP session (after a reboot the old one is useless) and close its sockets."""
        protocol, self._protocol = self._protocol, None
        session = getattr(getattr(protocol, "transport", None), "session", None)
        if session is not None:
            try:
                session.close()
            except Exception as exc:  # any failure: closing must not hide the real outcome
                log.debug("closing the WinRM HTTP session: %s", _short(exc))

    def remaining(self) -> float | None:
        """Seconds left before the overall deadline, or None without one."""
        return None if self.deadline is None else self.deadline - self._clock()

    def request_timeout(self, what: str) -> float:
        """The HTTP timeout for the next request: the ``[winrm]`` read timeout, cut to what is left of the
        deadline. Raises :class:`RemoteTimeout` when nothing is left: no request starts past the deadline."""
        timeout = float(self.settings.read_timeout_seconds)
        left = self.remaining()
        if left is not None:
            if left <= 0:
                last = f" (the last attempt: {self._last_error})" if self._last_error else ""
                raise RemoteTimeout(f"{what}: {self._deadline_source} ran out before WinRM at "
                                    f"{self.settings.describe()} answered{last}")
            timeout = min(timeout, left)
        return timeout

    def _bounded(self, what: str) -> Any:
        """The protocol, its transport told the timeout of the next request (pywinrm reads
        ``transport.read_timeout_sec`` at every send, for the connect and for each read). The
        guest-side wait of a Receive (``operation_timeout_sec``, whole seconds) stays below it."""
        timeout = self.request_timeout(what)
        protocol = self.protocol
        self._read_timeout = timeout
        transport = getattr(protocol, "transport", None)
        if transport is not None and hasattr(transport, "read_timeout_sec"):
            transport.read_timeout_sec = timeout
        if hasattr(protocol, "operation_timeout_sec"):
            protocol.operation_timeout_sec = max(1, min(self.settings.operation_timeout_seconds,
                                                        math.ceil(timeout) - 1))
        return protocol

    def _map(self, exc: BaseException, what: str) -> Exception:
        mapped = map_transport_error(exc, what, self.settings, self._read_timeout)
        self._last_error = _short(getattr(mapped, "message", None) or str(mapped))
        return mapped

    def _retrying(self, what: str, op: Callable[[Any], Any]) -> Any:
        attempts = self.settings.connect_retries + 1
        for attempt in range(1, attempts + 1):
            protocol = self._bounded(what)
            try:
                return op(protocol)
            except Exception as exc:  # any failure: mapped below, never swallowed
                left = self.remaining()
                if _is_connect_error(exc) and attempt < attempts and (left is None or left > 0):
                    self._last_error = _short(str(exc))
                    delay = min(2.0 ** (attempt - 1), 10.0, *(() if left is None else (left,)))
                    log.info("%s: connection error (%s); retry %d/%d in %.1f s", what, _short(exc), attempt,
                             attempts - 1, delay)
                    self.reset()
                    self._sleep(delay)
                    continue
                raise self._map(exc, what) from None
        raise AssertionError("unreachable")

    def start(self, command: str, what: str) -> tuple[str, str]:
        """Open a shell and start ``command`` in it: (shell id, command id)."""
        shell_id = self._retrying(what, lambda p: p.open_shell())
        try:
            command_id = self._retrying(what, lambda p: p.run_command(shell_id, command))
        except Exception:
            self._close_quietly(shell_id, None)
            raise
        return shell_id, command_id

    def receive(self, shell_id: str, command_id: str, deadline: float, what: str,
                on_stdout: Callable[[str], None] | None = None) -> CommandOutput:
        """Collect output until the command is done or ``deadline`` (monotonic) or the overall deadline passes."""
        from winrm.exceptions import WinRMOperationTimeoutError

        if self.deadline is not None:
            deadline = min(deadline, self.deadline)
        out, err = bytearray(), bytearray()
        try:
            while True:
                if self._clock() >= deadline:
                    raise RemoteTimeout(f"{what}: still running in the guest at the deadline; stopped it",
                                        stdout=out.decode("utf-8", "replace"), stderr=err.decode("utf-8", "replace"))
                try:
                    # pywinrm's get_command_output loops forever; its one-request step lets us keep a deadline.
                    protocol = self._bounded(what)
                    stdout, stderr, code, done = protocol._raw_get_command_output(shell_id, command_id)
                except WinRMOperationTimeoutError:
                    continue  # the guest's long-poll expired with nothing to say: ask again
                except RemoteTimeout:
                    raise
                except Exception as exc:  # any failure: map_transport_error says what it means
                    mapped = self._map(exc, what)
                    if isinstance(mapped, GuestDisconnected):
                        mapped = GuestDisconnected(f"{what}: the connection dropped while the command ran "
                                                   f"({_short(exc)}); the guest may have rebooted")
                    raise mapped from None
                out += stdout
                err += stderr
                if stdout and on_stdout is not None:
                    on_stdout(stdout.decode("utf-8", "replace"))
                if done:
                    return CommandOutput(code, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"))
        finally:
            self._close_quietly(shell_id, command_id)

    def _close_quietly(self, shell_id: str, command_id: str | None) -> None:
        """Stop the command and close the shell; past the overall deadline nothing is sent (WinRM's
        shell idle timeout reaps it), so cleanup never stretches the deadline."""
        try:
            if command_id is not None:
                self._bounded(f"stop the command in shell {shell_id}").cleanup_command(shell_id, command_id)
            self._bounded(f"close shell {shell_id}").close_shell(shell_id)
        except Exception as exc:  # any failure: cleanup must not hide the real outcome
            log.debug("closing WinRM shell %s: %s", shell_id, _short(exc))

    def run(self, command: str, what: str, timeout: float | None = None,
            on_stdout: Callable[[str], None] | None = None) -> CommandOutput:
        timeout = self.settings.command_timeout_seconds if timeout is None else timeout
        shell_id, command_id = self.start(command, what)
        return self.receive(shell_id, command_id, self._clock() + timeout, what, on_stdout)
