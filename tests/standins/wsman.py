"""A loopback WS-Management server that speaks the part of the protocol pywinrm uses.

It stands in for a Windows guest's WinRM service (MS-WSMV, the cmd shell resource):

- ``Create`` (a shell) -> ``ResourceCreated`` with a ``ShellId`` selector;
- ``Command`` -> a ``CommandId``; the command line goes through an emulated cmd.exe, which refuses
  lines over 8191 characters ("The command line is too long.", exit 1) as the real one does;
- ``Receive`` -> base64 ``Stream`` chunks and ``CommandState`` Running/Done with ``ExitCode``; when
  nothing happens within the request's ``OperationTimeout`` it answers the WS-Man fault 2150858793
  (HTTP 500), which pywinrm turns into WinRMOperationTimeoutError;
- ``Signal`` (terminate) and ``Delete`` -> responses whose ``RelatesTo`` is the request's MessageID,
  as pywinrm asserts;
- HTTP Basic authentication (401 on a wrong password), optional TLS with a given certificate;
- faults on request: unknown shell ids give the real "shell not found" fault; ``drop_next`` closes
  connections without an answer (a guest going down), ``down`` refuses every request until lifted,
  ``silent`` reads every request and never answers (a hung service: only the client's timeout ends it).

What runs a command is pluggable: :class:`GuestRunner` hands ``powershell ...`` to the real pwsh with the
arguments the client sent, inside a fake Windows guest (tests/pwsh/FakeWindows: its module is imported
before the command); a test of the protocol alone may pass a Python function.

Faults a starting WinRM service answers can be injected: ``fault_next`` answers the next N requests
with a WS-Man SOAP fault (HTTP 500), ``status_next`` with a bare HTTP status (e.g. 503).
"""

from __future__ import annotations

import base64
import os
import re
import signal
import subprocess
import threading
import time
import uuid
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable

from tests.pwshengine import pwsh_path

NS = {
    "s": "http://www.w3.org/2003/05/soap-envelope",
    "a": "http://schemas.xmlsoap.org/ws/2004/08/addressing",
    "w": "http://schemas.dmtf.org/wbem/wsman/1/wsman.xsd",
    "rsp": "http://schemas.microsoft.com/wbem/wsman/1/windows/shell",
    "f": "http://schemas.microsoft.com/wbem/wsman/1/wsmanfault",
}
ACTION_CREATE = "http://schemas.xmlsoap.org/ws/2004/09/transfer/Create"
ACTION_DELETE = "http://schemas.xmlsoap.org/ws/2004/09/transfer/Delete"
ACTION_COMMAND = "http://schemas.microsoft.com/wbem/wsman/1/windows/shell/Command"
ACTION_RECEIVE = "http://schemas.microsoft.com/wbem/wsman/1/windows/shell/Receive"
ACTION_SIGNAL = "http://schemas.microsoft.com/wbem/wsman/1/windows/shell/Signal"
STATE = "http://schemas.microsoft.com/wbem/wsman/1/windows/shell/CommandState/"
CMD_LIMIT = 8191
FAULT_OPERATION_TIMEOUT = "2150858793"
FAULT_SHELL_NOT_FOUND = "2150858843"
FAULT_SERVICE_STARTING = "2150858770"  # unsure which code a starting service answers; pywinrm 0.3 treats all but 2150858793 alike


class CommandRun:
    """One running command: output chunks waiting for Receive, and the exit code once done."""

    def __init__(self, command_line: str) -> None:
        self.command_line = command_line
        self.id = str(uuid.uuid4()).upper()
        self._cond = threading.Condition()
        self._stdout: list[bytes] = []
        self._stderr: list[bytes] = []
        self.exit_code: int | None = None
        self.delivered_done = False
        self.terminated = threading.Event()

    def write(self, data: bytes, stream: str = "stdout") -> None:
        with self._cond:
            (self._stdout if stream == "stdout" else self._stderr).append(data)
            self._cond.notify_all()

    def finish(self, code: int) -> None:
        with self._cond:
            self.exit_code = code
            self._cond.notify_all()

    def take(self, timeout: float) -> tuple[bytes, bytes, int | None] | None:
        """Pending output (and the exit code if done) as soon as there is any, or None on timeout."""
        end = time.monotonic() + timeout
        with self._cond:
            while not self._stdout and not self._stderr and self.exit_code is None:
                left = end - time.monotonic()
                if left <= 0:
                    return None
                self._cond.wait(left)
            out, err = b"".join(self._stdout), b"".join(self._stderr)
            self._stdout.clear()
            self._stderr.clear()
            return out, err, self.exit_code


#: Runs a command line: writes output into the run and calls run.finish(code). Called in its own thread.
Runner = Callable[[str, CommandRun], None]


def cmd_exe(runner: Runner) -> Runner:
    """cmd.exe in front of a runner: command lines over 8191 characters never start."""
    def run(command_line: str, r: CommandRun) -> None:
        if len(command_line) > CMD_LIMIT:
            r.write(b"The command line is too long.\r\n", "stderr")
            r.finish(1)
            return
        runner(command_line, r)
    return run


REPO = Path(__file__).resolve().parents[2]


def split_command_line(line: str) -> list[str]:
    """argv as a Windows program gets it (CommandLineToArgvW: blanks separate, double quotes group,
    backslashes escape only a quote)."""
    args: list[str] = []
    current, quoted, has = [], False, False
    i = 0
    while i < len(line):
        ch = line[i]
        if ch == "\\":
            n = 0
            while i < len(line) and line[i] == "\\":
                n += 1
                i += 1
            if i < len(line) and line[i] == '"':
                current.append("\\" * (n // 2))
                if n % 2:
                    current.append('"')
                    i += 1
            else:
                current.append("\\" * n)
            has = True
            continue
        if ch == '"':
            quoted = not quoted
            has = True
        elif ch in " \t" and not quoted:
            if has:
                args.append("".join(current))
            current, has = [], False
        else:
            current.append(ch)
            has = True
        i += 1
    if has:
        args.append("".join(current))
    return args


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """End a command's process and everything it started (its process group)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


class GuestRunner:
    """cmd.exe's view of ``powershell[.exe] <args>``: the real pwsh (tests/pwshengine.py) runs with those
    arguments, its command preceded by the fake Windows guest's start (FakeWindows module,
    fakewindows.py ``powershell_argv``), in the guest's environment (``env``, from fakewindows.py
    ``engine_env``). Any other program is "not recognized"."""

    def __init__(self, env: dict[str, str], pwsh: str | None = None) -> None:
        self.env = env
        self.pwsh = pwsh
        self.processes: list[subprocess.Popen[bytes]] = []

    def __call__(self, command_line: str, r: CommandRun) -> None:
        parts = split_command_line(command_line)
        if not parts or parts[0].lower() not in ("powershell", "powershell.exe"):
            name = parts[0] if parts else ""
            r.write(f"'{name}' is not recognized as an internal or external command,\r\noperable program or batch file.\r\n".encode(),
                    "stderr")
            r.finish(1)
            return
        argv = _fakewindows().powershell_argv(self.pwsh or pwsh_path(), parts[1:])
        # a session of its own: pwsh as a .NET tool is a launcher whose child (dotnet pwsh.dll) does the work,
        # so a terminated command ends the whole group (kill_group), as Windows ends the shell's processes
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=self.env, start_new_session=True)
        self.processes.append(proc)

        def pump(stream: object, name: str) -> None:
            assert hasattr(stream, "read1")
            while True:
                chunk = stream.read1(65536)  # type: ignore[attr-defined]
                if not chunk:
                    return
                r.write(chunk, name)

        threads = [threading.Thread(target=pump, args=(proc.stdout, "stdout"), daemon=True),
                   threading.Thread(target=pump, args=(proc.stderr, "stderr"), daemon=True)]
        for t in threads:
            t.start()
        while proc.poll() is None:
            if r.terminated.wait(0.05):
                kill_group(proc)
        for t in threads:
            t.join()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
        r.finish(proc.returncode)


@dataclass
class Shell:
    id: str
    commands: dict[str, CommandRun] = field(default_factory=dict)


def _text(root: ET.Element, path: str) -> str:
    node = root.find(path, NS)
    return (node.text or "") if node is not None else ""


def _duration_seconds(text: str, default: float) -> float:
    m = re.fullmatch(r"PT(\d+(?:\.\d+)?)S", text.strip())
    return float(m.group(1)) if m else default


def _envelope(action: str, relates_to: str, body: str) -> bytes:
    return (
        '<?xml version="1.0" encoding="utf-8"?>'
        f'<s:Envelope xmlns:s="{NS["s"]}" xmlns:a="{NS["a"]}" xmlns:w="{NS["w"]}" xmlns:rsp="{NS["rsp"]}" '
        f'xmlns:x="http://schemas.xmlsoap.org/ws/2004/09/transfer">'
        f"<s:Header><a:Action>{action}</a:Action><a:MessageID>uuid:{uuid.uuid4()}</a:MessageID>"
        f"<a:To>http://schemas.xmlsoap.org/ws/2004/08/addressing/role/anonymous</a:To>"
        f"<a:RelatesTo>{relates_to}</a:RelatesTo></s:Header>"
        f"<s:Body>{body}</s:Body></s:Envelope>").encode("utf-8")


def _fault(code: str, reason: str, relates_to: str) -> bytes:
    body = (f'<s:Fault><s:Code><s:Value>s:Receiver</s:Value><s:Subcode><s:Value>w:TimedOut</s:Value></s:Subcode></s:Code>'
            f'<s:Reason><s:Text xml:lang="en-US">{reason}</s:Text></s:Reason>'
            f'<s:Detail><f:WSManFault xmlns:f="{NS["f"]}" Code="{code}" Machine="standin"><f:Message>{reason}</f:Message>'
            f"</f:WSManFault></s:Detail></s:Fault>")
    return _envelope("http://schemas.dmtf.org/wbem/wsman/1/wsman/fault", relates_to, body)


class WSManStandIn:
    """The server. Use as a context manager; ``url`` is what pywinrm connects to."""

    def __init__(self, runner: Runner, *, username: str = "Administrator", password: str = "pw",
                 certfile: str | None = None, keyfile: str | None = None) -> None:
        self.runner = cmd_exe(runner)
        self.username, self.password = username, password
        self.shells: dict[str, Shell] = {}
        self.command_lines: list[str] = []
        self.actions: list[str] = []
        self.drop_next = 0
        self.fault_next = 0
        self.status_next: list[int] = []
        self.down = False
        self.silent = False  # read each request and never answer (a hung WinRM service, a black-holing firewall)
        self._closing = threading.Event()
        self.lock = threading.Lock()
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go out as separate writes

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - quiet
                pass

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length", "0"))
                data = self.rfile.read(length) if length else b""
                if stand_in.silent:
                    with stand_in.lock:
                        stand_in.actions.append("(unanswered)")
                    stand_in._closing.wait()  # until the stand-in shuts down
                    self.close_connection = True
                    return
                with stand_in.lock:
                    drop = stand_in.down or stand_in.drop_next > 0
                    if stand_in.drop_next > 0:
                        stand_in.drop_next -= 1
                if drop:
                    self.close_connection = True
                    self.connection.close()
                    return
                if not stand_in._authorized(self.headers.get("Authorization", "")):
                    self._send(401, b"", {"WWW-Authenticate": 'Basic realm="WSMAN"'})
                    return
                with stand_in.lock:
                    status = stand_in.status_next.pop(0) if stand_in.status_next else 0
                    fault = stand_in.fault_next > 0
                    if fault:
                        stand_in.fault_next -= 1
                if status:
                    self._send(status, b"")
                    return
                if fault:
                    message_id = _text(ET.fromstring(data), "s:Header/a:MessageID")
                    self._send(500, _fault(FAULT_SERVICE_STARTING, "The WS-Management service cannot process the request. "
                                           "The service is starting.", message_id))
                    return
                status, body = stand_in.handle(data)
                self._send(status, body)

            def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/soap+xml;charset=UTF-8")
                self.send_header("Content-Length", str(len(body)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.scheme = "http"
        if certfile:
            import ssl

            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(certfile, keyfile)
            self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True)
            self.scheme = "https"
        self._thread = threading.Thread(target=self.server.serve_forever, name="wsman-standin", daemon=True)

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}/wsman"

    def __enter__(self) -> "WSManStandIn":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._closing.set()
        for shell in list(self.shells.values()):
            for run in shell.commands.values():
                run.terminated.set()
        self.server.shutdown()
        self.server.server_close()

    def _authorized(self, header: str) -> bool:
        if not header.startswith("Basic "):
            return False
        try:
            user, _, pw = base64.b64decode(header[6:]).decode("utf-8").partition(":")
        except (ValueError, UnicodeDecodeError):
            return False
        return user == self.username and pw == self.password

    # -- the protocol -----------------------------------------------------------------------------

    def handle(self, data: bytes) -> tuple[int, bytes]:
        root = ET.fromstring(data)
        action = _text(root, "s:Header/a:Action")
        message_id = _text(root, "s:Header/a:MessageID")
        self.actions.append(action.rsplit("/", 1)[-1])
        shell_id = ""
        for sel in root.findall("s:Header/w:SelectorSet/w:Selector", NS):
            if sel.get("Name") == "ShellId":
                shell_id = sel.text or ""
        if action == ACTION_CREATE:
            shell = Shell(str(uuid.uuid4()).upper())
            self.shells[shell.id] = shell
            body = (f'<x:ResourceCreated><a:Address>{self.url}</a:Address><a:ReferenceParameters>'
                    f'<w:ResourceURI>http://schemas.microsoft.com/wbem/wsman/1/windows/shell/cmd</w:ResourceURI>'
                    f'<w:SelectorSet><w:Selector Name="ShellId">{shell.id}</w:Selector></w:SelectorSet>'
                    f"</a:ReferenceParameters></x:ResourceCreated>")
            return 200, _envelope("http://schemas.xmlsoap.org/ws/2004/09/transfer/CreateResponse", message_id, body)
        shell = self.shells.get(shell_id)
        if shell is None:
            return 500, _fault(FAULT_SHELL_NOT_FOUND, "The request for the Windows Remote Shell with ShellId "
                               f"{shell_id} failed because the shell was not found on the server.", message_id)
        if action == ACTION_DELETE:
            for run in shell.commands.values():
                run.terminated.set()
            del self.shells[shell_id]
            return 200, _envelope("http://schemas.xmlsoap.org/ws/2004/09/transfer/DeleteResponse", message_id, "")
        if action == ACTION_COMMAND:
            command = _text(root, "s:Body/rsp:CommandLine/rsp:Command")
            arguments = _text(root, "s:Body/rsp:CommandLine/rsp:Arguments")
            line = command + (" " + arguments if arguments else "")
            self.command_lines.append(line)
            run = CommandRun(line)
            shell.commands[run.id] = run

            def go() -> None:
                try:
                    self.runner(line, run)
                except Exception as exc:  # a broken runner is the test's bug: make it visible
                    run.write(f"stand-in runner failed: {exc!r}".encode(), "stderr")
                    run.finish(255)
            threading.Thread(target=go, daemon=True).start()
            body = f"<rsp:CommandResponse><rsp:CommandId>{run.id}</rsp:CommandId></rsp:CommandResponse>"
            return 200, _envelope(ACTION_COMMAND + "Response", message_id, body)
        if action == ACTION_RECEIVE:
            node = root.find("s:Body/rsp:Receive/rsp:DesiredStream", NS)
            command_id = node.get("CommandId", "") if node is not None else ""
            run = shell.commands.get(command_id)
            if run is None:
                return 500, _fault("2150858843", f"unknown command {command_id}", message_id)
            timeout = _duration_seconds(_text(root, "s:Header/w:OperationTimeout"), 20.0)
            got = run.take(timeout)
            if got is None:
                return 500, _fault(FAULT_OPERATION_TIMEOUT, "The WS-Management service cannot complete the operation "
                                   "within the time specified in OperationTimeout.", message_id)
            out, err, code = got
            streams = ""
            if out:
                streams += f'<rsp:Stream Name="stdout" CommandId="{run.id}">{base64.b64encode(out).decode()}</rsp:Stream>'
            if err:
                streams += f'<rsp:Stream Name="stderr" CommandId="{run.id}">{base64.b64encode(err).decode()}</rsp:Stream>'
            if code is not None:
                run.delivered_done = True
                state = (f'<rsp:CommandState CommandId="{run.id}" State="{STATE}Done">'
                         f"<rsp:ExitCode>{code}</rsp:ExitCode></rsp:CommandState>")
            else:
                state = f'<rsp:CommandState CommandId="{run.id}" State="{STATE}Running"/>'
            body = f"<rsp:ReceiveResponse>{streams}{state}</rsp:ReceiveResponse>"
            return 200, _envelope(ACTION_RECEIVE + "Response", message_id, body)
        if action == ACTION_SIGNAL:
            node = root.find("s:Body/rsp:Signal", NS)
            command_id = node.get("CommandId", "") if node is not None else ""
            run = shell.commands.get(command_id)
            if run is not None:
                run.terminated.set()
            return 200, _envelope(ACTION_SIGNAL + "Response", message_id, "<rsp:SignalResponse/>")
        return 500, _fault("2150858752", f"unsupported action {action}", message_id)


def self_signed_cert(directory: Path, host: str = "127.0.0.1") -> tuple[str, str]:
    """(certificate, key) PEM files for ``host``, made with the cryptography package."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "stormatrix-standin")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(host))]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = directory / "standin.crt", directory / "standin.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return str(cert_path), str(key_path)


def _fakewindows():  # tests/pwsh/FakeWindows is a folder of test data and programs, not a package
    import importlib.util
    import sys

    name = "fakewindows"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, REPO / "tests" / "pwsh" / "FakeWindows" / "fakewindows.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


@dataclass
class FirstUpload:
    """What a session's first ``wait_ready`` did in a guest whose %TEMP% was empty (the executor tests'
    conftest.first_upload), kept for the test of the upload itself."""

    temp: Path  # the %TEMP% it filled (shared by every later guest)
    facts: dict[str, Any]  # what wait_ready returned
    command_lines: list[str]  # every command line the stand-in received, in order
    actions: list[str]  # every WS-Man action the stand-in processed, before the executor closed


class FakeWindowsGuest:
    """A fake Windows guest (tests/pwsh/FakeWindows, state under ``root``) behind a WS-Man stand-in:
    what pywinrm reaches is the real pwsh running the command lines it sent, in the guest."""

    def __init__(self, root: Path, changes: dict[str, object] | None = None, *, password: str,
                 username: str = "Administrator", temp: Path | None = None, **server: object) -> None:
        fw = _fakewindows()
        self.root = fw.make_guest(root, changes)
        self.env = fw.engine_env(self.root, {"LANG": "C.UTF-8"}, temp)
        self.runner = GuestRunner(self.env)
        self.server = WSManStandIn(self.runner, username=username, password=password, **server)  # type: ignore[arg-type]

    def state(self) -> dict[str, object]:
        import json

        return json.loads((self.root / "state.json").read_text(encoding="utf-8"))

    def __enter__(self) -> "FakeWindowsGuest":
        self.server.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.__exit__(*exc)
        for proc in self.runner.processes:
            if proc.poll() is None:
                kill_group(proc)
