"""The WinRM guest executor: runs the ``windows/StormatrixGuest`` module inside a Windows guest.

How it talks to the guest, and why:

- Every command is ``powershell -NoProfile -NonInteractive -ExecutionPolicy Bypass -EncodedCommand
  <base64 UTF-16LE>`` sent through a WinRM cmd shell (pywinrm's ``Protocol``). cmd.exe refuses command
  lines over 8191 characters (REFERENCE.md §4), which holds a script of ~3000 characters, so the
  module is uploaded once per version in chunks (:func:`upload_scripts`), checked by SHA-256, and
  every later command is a small call script (:func:`call_script`).
- Parameters travel as data: a JSON document, base64-encoded, decoded in the guest and splatted.
  Nothing a user or a matrix file supplies is ever spliced into script text; function names are
  checked against a pattern. So ``'; Remove-Item -Recurse C:\\ #`` arrives as a string value.
- The guest prints ``##stormatrix:result <json>`` or ``##stormatrix:error <json>`` (error id, message)
  on stdout; stray output around them is ignored.
- Errors are typed: :class:`AuthenticationFailed` (401), :class:`RemoteTimeout` (no answer within the
  deadline), :class:`RemoteCommandError` (non-zero exit, with stdout and stderr),
  :class:`GuestDisconnected` (the connection could not be made or dropped mid-command). Only connection
  errors are retried, and only where the command cannot have started.
- A reboot is known, not guessed: :meth:`WinRMExecutor.restart_guest` waits until WinRM answers with a
  new boot time, and :meth:`WinRMExecutor.wait_ready` polls until the deadline.
- Passwords come from an environment variable or a file, are held in a :class:`Secret` whose repr is
  ``***``, and :func:`redact` scrubs them from anything that is logged or raised.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import logging
import math
import os
import re
import threading
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from ..backends.base import GuestEndpoint
from ..core.errors import (
    AuthenticationFailed,
    EnvironmentProblem,
    GuestDisconnected,
    GuestNotReady,
    InputError,
    RemoteCommandError,
    RemoteTimeout,
    WorkloadFailed,
)
from ..core.model import Cell, Timing
from ..spec import Field, Section, register_section
from .base import GuestExecutor, WindowListener, WorkloadResult

log = logging.getLogger("stormatrix.executor.winrm")

# --- where the guest module lives -----------------------------------------------------------------

MODULE_NAME = "StormatrixGuest"


def default_module_dir() -> Path:
    """``windows/StormatrixGuest`` of this checkout (the package maps ``harness/`` to ``stormatrix``)."""
    return Path(__file__).resolve().parents[2] / "windows" / MODULE_NAME


# --- secrets ----------------------------------------------------------------------------------------

class Secret:
    """A password that never prints itself: ``str``, ``repr`` and f-strings give ``***``."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    def __str__(self) -> str:
        return "***"

    def __format__(self, spec: str) -> str:
        return "***"

    def __reduce__(self) -> Any:  # pickling would write the value somewhere: refuse
        raise TypeError("a Secret cannot be pickled")


def redact(text: str, secrets: Iterable[Secret | str | None]) -> str:
    """``text`` with every secret (and its base64 and URL-quoted forms) replaced by ``***``."""
    from urllib.parse import quote

    out = text
    for s in secrets:
        value = s.reveal() if isinstance(s, Secret) else s
        if not value:
            continue
        forms = {value, quote(value, safe=""), base64.b64encode(value.encode()).decode()}
        for form in sorted(forms, key=len, reverse=True):
            out = out.replace(form, "***")
    return out


class RedactingFilter(logging.Filter):
    """Scrubs secrets from log records (message and arguments) before any handler sees them."""

    def __init__(self, secrets: Iterable[Secret]) -> None:
        super().__init__()
        self.secrets = list(secrets)

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        record.msg = redact(message, self.secrets)
        record.args = ()
        return True


def load_password(*, password_env: str = "", password_file: str = "",
                  environ: Mapping[str, str] | None = None) -> Secret:
    """The WinRM password from an environment variable or a file (first line), never from argv."""
    environ = os.environ if environ is None else environ
    if bool(password_env) == bool(password_file):
        raise InputError("give exactly one of password_env (an environment variable name) or password_file "
                         "(a file holding the password); passwords are never taken on the command line")
    if password_env:
        if password_env not in environ:
            raise InputError(f"environment variable {password_env} is not set. Fix: export {password_env}=... "
                             "before running stormatrix")
        value = environ[password_env]
    else:
        path = Path(password_file).expanduser()
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise InputError(f"password file {path} cannot be read ({exc.strerror}). Fix: check the path "
                             "and that it is readable by this user") from None
        value = text.splitlines()[0] if text else ""
        mode = path.stat().st_mode
        if mode & 0o077:
            log.warning("password file %s is readable by other users (mode %o); chmod 600 it", path, mode & 0o777)
    if not value:
        raise InputError("the WinRM password is empty. Fix: set it in the environment variable or file")
    return Secret(value)


# --- settings: the [winrm] matrix section ------------------------------------------------------------

TRANSPORTS = ("ntlm", "kerberos", "credssp", "https")
# our transport -> (pywinrm transport, scheme, default port)
_TRANSPORT_MAP = {
    "ntlm": ("ntlm", "http", 5985),
    "kerberos": ("kerberos", "http", 5985),
    "credssp": ("credssp", "https", 5986),
    "https": ("ssl", "https", 5986),  # Basic authentication inside TLS
}
_TRANSPORT_PACKAGES = {"ntlm": "requests_ntlm", "kerberos": "requests_kerberos", "credssp": "requests_credssp"}

WINRM_SECTION = register_section(Section("winrm", {
    "host": Field(str, "", help="guest host name or address; empty: the one the backend reports"),
    "port": Field(int, 0, min=0, max=65535, help="0 means 5985 for ntlm/kerberos, 5986 for https/credssp"),
    "transport": Field(str, "ntlm", choices=TRANSPORTS,
                       help="ntlm or kerberos (HTTP, message-encrypted), credssp or https (TLS)"),
    "use_tls": Field(bool, False, help="ntlm/kerberos over HTTPS (port 5986) instead of HTTP"),
    "username": Field(str, help="e.g. Administrator or DOMAIN\\\\user"),
    "password_env": Field(str, "", help="name of the environment variable holding the password"),
    "password_file": Field(str, "", help="file whose first line is the password"),
    "cert_validation": Field(bool, True, help="verify the guest's TLS certificate; false only for lab "
                                              "guests with self-signed certificates"),
    "ca_file": Field(str, "", help="CA bundle (PEM) that signed the guest's certificate"),
    "operation_timeout_seconds": Field(int, 20, min=1, max=3600,
                                       help="how long one WS-Man request may block in the guest"),
    "read_timeout_seconds": Field(int, 30, min=2, max=3600,
                                  help="HTTP read timeout; must exceed operation_timeout_seconds"),
    "command_timeout_seconds": Field(float, 600.0, min=1, max=86400,
                                     help="a guest command (beyond the workload's own duration) must finish within this"),
    "connect_retries": Field(int, 3, min=0, max=20, help="retries of a connection error before giving up"),
    "reboot_timeout_seconds": Field(float, 600.0, min=10, max=7200,
                                    help="how long a guest may take to come back after a reboot"),
    "disk_serial": Field(str, help="serial number of the raw test disk in the guest"),
    "engine": Field(str, "fio", choices=("fio", "diskspd")),
    "fio_path": Field(str, "C:\\Program Files\\fio\\fio.exe"),
    "diskspd_path": Field(str, "C:\\Program Files\\DiskSpd\\diskspd.exe"),
}, help="Windows guests over WinRM"))

_SERIAL_RE = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")


@dataclass(frozen=True)
class WinRMSettings:
    """The ``[winrm]`` section, validated; the password is a :class:`Secret` (or None until loaded)."""

    host: str
    username: str
    password: Secret | None = field(repr=False, default=None)
    port: int = 0
    transport: str = "ntlm"
    use_tls: bool = False
    cert_validation: bool = True
    ca_file: str = ""
    operation_timeout_seconds: int = 20
    read_timeout_seconds: int = 30
    command_timeout_seconds: float = 600.0
    connect_retries: int = 3
    reboot_timeout_seconds: float = 600.0
    disk_serial: str = ""
    engine: str = "fio"
    fio_path: str = "C:\\Program Files\\fio\\fio.exe"
    diskspd_path: str = "C:\\Program Files\\DiskSpd\\diskspd.exe"

    def __post_init__(self) -> None:
        if self.transport not in TRANSPORTS:
            raise InputError(f"WinRM transport {self.transport!r} is not one of {', '.join(TRANSPORTS)}")
        if self.read_timeout_seconds <= self.operation_timeout_seconds:
            raise InputError(f"[winrm] read_timeout_seconds ({self.read_timeout_seconds}) must exceed "
                             f"operation_timeout_seconds ({self.operation_timeout_seconds}): the guest may "
                             "block a request for the whole operation timeout")
        if self.disk_serial and not _SERIAL_RE.match(self.disk_serial):
            raise InputError(f"disk serial {self.disk_serial!r} has characters a disk serial cannot have "
                             "(letters, digits, _ . : - only)")

    @classmethod
    def from_section(cls, section: Mapping[str, Any], *, host: str = "",
                     environ: Mapping[str, str] | None = None) -> "WinRMSettings":
        """From a parsed ``[winrm]`` table; loads the password from the environment or file it names."""
        values = {k: v for k, v in section.items() if k in {f.name for f in dataclasses.fields(cls)}}
        values["host"] = section.get("host") or host
        if not values["host"]:
            raise InputError("no WinRM host: set [winrm] host or let the backend report the guest's address")
        password = load_password(password_env=section.get("password_env", ""),
                                 password_file=section.get("password_file", ""), environ=environ)
        return cls(password=password, **values)

    @property
    def scheme(self) -> str:
        _, scheme, _ = _TRANSPORT_MAP[self.transport]
        return "https" if self.use_tls else scheme

    @property
    def endpoint(self) -> str:
        _, _, default_port = _TRANSPORT_MAP[self.transport]
        port = self.port or (5986 if self.scheme == "https" else default_port)
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{port}/wsman"

    def protocol_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``winrm.protocol.Protocol``: certificate validation stays on unless the
        user turned it off; a CA file pins the trust."""
        if self.password is None:
            raise InputError("the WinRM password was not loaded")
        pywinrm_transport, _, _ = _TRANSPORT_MAP[self.transport]
        kwargs: dict[str, Any] = {
            "endpoint": self.endpoint,
            "transport": pywinrm_transport,
            "username": self.username,
            "password": self.password.reveal(),
            "server_cert_validation": "validate" if self.cert_validation else "ignore",
            "read_timeout_sec": self.read_timeout_seconds,
            "operation_timeout_sec": self.operation_timeout_seconds,
        }
        if self.cert_validation and self.ca_file:
            kwargs["ca_trust_path"] = self.ca_file
        return kwargs

    def describe(self) -> str:
        """For logs and messages: everything but the password."""
        tls = "" if self.scheme == "http" else (" cert-validation=on" if self.cert_validation else " cert-validation=OFF")
        return f"{self.username}@{self.endpoint} ({self.transport}{tls})"


def check_transport_available(transport: str) -> None:
    """Raise EnvironmentProblem when pywinrm's auth plug-in for ``transport`` is not installed."""
    package = _TRANSPORT_PACKAGES.get(transport)
    if not package:
        return
    import importlib.util

    if importlib.util.find_spec(package) is None:
        debian = "python3-" + package.replace("_", "-")
        raise EnvironmentProblem(f"WinRM transport {transport} needs the Python package {package}, which is not "
                                 f"installed. Fix: apt-get install {debian} (or pip install {package.replace('_', '-')})")


# --- command encoding and the cmd.exe limit ----------------------------------------------------------

CMD_LIMIT = 8191  # cmd.exe: the longest command line it runs
POWERSHELL_PREFIX = "powershell -NoProfile -NonInteractive -ExecutionPolicy Bypass -EncodedCommand "
_FUNCTION_RE = re.compile(r"^[A-Z][a-z]+-Stormatrix[A-Za-z]+$")


def encoded_length(script_chars: int) -> int:
    """Length of the base64 of a script of ``script_chars`` UTF-16 code units (2 bytes each)."""
    return 4 * math.ceil(2 * script_chars / 3)


def encode_command(script: str) -> str:
    """The cmd.exe command line that runs ``script``; refuses one that cmd.exe would refuse."""
    encoded = base64.b64encode(script.encode("utf-16-le")).decode("ascii")
    command = POWERSHELL_PREFIX + encoded
    if len(command) > CMD_LIMIT:
        raise ValueError(f"script of {len(script)} characters makes a {len(command)}-character command line; "
                         f"cmd.exe accepts {CMD_LIMIT}")
    return command


def decode_command(command: str) -> str:
    """The script inside a command line made by :func:`encode_command` (used by tests and the stand-in)."""
    if not command.startswith(POWERSHELL_PREFIX):
        raise ValueError("not a stormatrix PowerShell command line")
    return base64.b64decode(command[len(POWERSHELL_PREFIX):]).decode("utf-16-le")


def _guest_dir_expr(digest: str) -> str:
    if not re.fullmatch(r"[0-9a-f]{12}", digest):
        raise ValueError(f"bad module digest {digest!r}")
    return f"$d=Join-Path (Join-Path ([IO.Path]::GetTempPath()) 'stormatrix') '{digest}';"


_PRELUDE = "$ErrorActionPreference='Stop';$ProgressPreference='SilentlyContinue';"
_PAYLOAD = "(Join-Path $d 'payload.b64')"


def max_chunk_chars(digest: str = "0" * 12) -> int:
    """The longest base64 chunk one upload command can carry and stay under :data:`CMD_LIMIT`."""
    fixed = len(_chunk_script("", digest))
    budget_chars = ((CMD_LIMIT - len(POWERSHELL_PREFIX)) // 4) * 3 // 2  # script chars that fit
    return budget_chars - fixed


def _chunk_script(chunk: str, digest: str) -> str:
    return _PRELUDE + _guest_dir_expr(digest) + f"[IO.File]::AppendAllText({_PAYLOAD},'{chunk}')"


@dataclass(frozen=True)
class ModulePayload:
    """The guest module as one upload: a JSON list of {path, text}, base64, and its SHA-256."""

    b64: str
    sha256: str
    files: int

    @property
    def digest(self) -> str:
        return self.sha256[:12]

    @classmethod
    def from_dir(cls, module_dir: Path) -> "ModulePayload":
        entries = []
        for path in sorted(module_dir.rglob("*")):
            if path.is_file() and path.suffix in (".ps1", ".psm1", ".psd1"):
                rel = path.relative_to(module_dir.parent)
                entries.append({"path": list(rel.parts), "text": path.read_text(encoding="utf-8")})
        if not entries:
            raise EnvironmentProblem(f"no PowerShell files under {module_dir}: the guest module is missing")
        raw = json.dumps(entries, ensure_ascii=True, separators=(",", ":")).encode("ascii")
        return cls(b64=base64.b64encode(raw).decode("ascii"), sha256=hashlib.sha256(raw).hexdigest(),
                   files=len(entries))


def upload_scripts(payload: ModulePayload, chunk_chars: int | None = None) -> list[str]:
    """The scripts that put the module into the guest: reset, one per chunk, then unpack and verify.

    Each is small enough for cmd.exe once encoded. The chunks are base64 text, which has no quote, so
    they sit safely inside single-quoted PowerShell strings.
    """
    digest = payload.digest
    size = chunk_chars or max_chunk_chars(digest)
    if size <= 0:
        raise ValueError("chunk size must be positive")
    head = _PRELUDE + _guest_dir_expr(digest)
    scripts = [head + f"$null=New-Item -ItemType Directory -Force -Path $d;[IO.File]::WriteAllText({_PAYLOAD},'')"]
    for i in range(0, len(payload.b64), size):
        scripts.append(_chunk_script(payload.b64[i:i + size], digest))
    scripts.append(head + (
        f"$b=[Convert]::FromBase64String([IO.File]::ReadAllText({_PAYLOAD}));"
        "$h=[BitConverter]::ToString([Security.Cryptography.SHA256]::Create().ComputeHash($b)).Replace('-','').ToLowerInvariant();"
        f"if($h -ne '{payload.sha256}'){{[Console]::Out.WriteLine('##stormatrix:error {{\"message\":\"upload corrupted: sha256 '+$h+'\",\"error_id\":\"Stormatrix.UploadCorrupted\"}}');exit 3}};"
        "$u=New-Object Text.UTF8Encoding $true;"
        "foreach($f in ([Text.Encoding]::UTF8.GetString($b)|ConvertFrom-Json)){"
        "$p=$d;foreach($s in $f.path){$p=Join-Path $p $s};"
        "$null=New-Item -ItemType Directory -Force -Path (Split-Path -Parent $p);"
        "[IO.File]::WriteAllText($p,$f.text,$u)};"
        f"Remove-Item -LiteralPath {_PAYLOAD} -Force;"
        "[Console]::Out.WriteLine('##stormatrix:uploaded')"))
    return scripts


def present_script(payload: ModulePayload) -> str:
    """Prints ``##stormatrix:present`` when this exact module version is already in the guest."""
    return (_PRELUDE + _guest_dir_expr(payload.digest)
            + f"if(Test-Path -LiteralPath (Join-Path (Join-Path $d '{MODULE_NAME}') '{MODULE_NAME}.psd1'))"
            "{[Console]::Out.WriteLine('##stormatrix:present')}else{[Console]::Out.WriteLine('##stormatrix:absent')}")


def encode_parameters(params: Mapping[str, Any]) -> str:
    """Parameters as base64 of their JSON: the only form in which values enter a script."""
    for name in params:
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9]*", name):
            raise ValueError(f"bad parameter name {name!r}")
    raw = json.dumps(dict(params), ensure_ascii=True, separators=(",", ":")).encode("ascii")
    return base64.b64encode(raw).decode("ascii")


def call_script(function: str, params: Mapping[str, Any], digest: str) -> str:
    """A script that imports the uploaded module, splats the decoded parameters into ``function``
    and prints the result as ``##stormatrix:result <json>`` (or ``##stormatrix:error <json>``)."""
    if not _FUNCTION_RE.match(function):
        raise ValueError(f"{function!r} is not a StormatrixGuest function name")
    data = encode_parameters(params)
    return (_PRELUDE + _guest_dir_expr(digest) + "try{"
            f"Import-Module (Join-Path (Join-Path $d '{MODULE_NAME}') '{MODULE_NAME}.psd1') -Force;"
            f"$j=[Text.Encoding]::UTF8.GetString([Convert]::FromBase64String('{data}'))|ConvertFrom-Json;"
            "$a=@{};foreach($p in $j.PSObject.Properties){$a[$p.Name]=$p.Value};"
            f"$r=& '{function}' @a;"
            "[Console]::Out.WriteLine('##stormatrix:result '+(ConvertTo-Json -InputObject $r -Depth 8 -Compress));exit 0"
            "}catch{$e=$_;"
            "[Console]::Out.WriteLine('##stormatrix:error '+(ConvertTo-Json -Compress -InputObject @{"
            "message=$e.Exception.Message;error_id=$e.FullyQualifiedErrorId;type=$e.Exception.GetType().FullName}));exit 1}")


# --- guest output -------------------------------------------------------------------------------------

RESULT_MARK = "##stormatrix:result "
ERROR_MARK = "##stormatrix:error "
STARTED_MARK = "##stormatrix:engine-started"


def clean_clixml(stderr: str) -> str:
    """powershell.exe writes errors to a redirected stderr as CLIXML; keep the text of its <S> nodes."""
    if not stderr.startswith("#< CLIXML"):
        return stderr
    body = stderr.split("\n", 1)[1] if "\n" in stderr else ""
    try:
        root = ET.fromstring(body)
    except ET.ParseError:
        return stderr
    parts = [(node.text or "") for node in root.iter() if node.tag.endswith("}S") or node.tag == "S"]
    return "".join(parts).replace("_x000D__x000A_", "\n").strip() or stderr


@dataclass
class CommandOutput:
    exit_code: int
    stdout: str
    stderr: str


def parse_call_output(out: CommandOutput, function: str, secrets: Iterable[Secret] = ()) -> Any:
    """The function's result, or a typed error with the guest's message, stdout and stderr."""
    secrets = list(secrets)
    result = error = None
    for line in out.stdout.splitlines():
        line = line.rstrip("\r")
        if line.startswith(RESULT_MARK):
            result = line[len(RESULT_MARK):]
        elif line.startswith(ERROR_MARK):
            error = line[len(ERROR_MARK):]
    stdout, stderr = redact(out.stdout, secrets), redact(clean_clixml(out.stderr), secrets)
    if error is not None or out.exit_code != 0:
        info: dict[str, Any] = {}
        if error is not None:
            try:
                info = json.loads(error)
            except json.JSONDecodeError:
                info = {"message": error}
        message = info.get("message") or (stderr.strip() or stdout.strip() or "no output")
        raise RemoteCommandError(f"{function} failed in the guest (exit {out.exit_code}): {redact(str(message), secrets)}",
                                 exit_status=out.exit_code, stdout=stdout, stderr=stderr,
                                 error_id=info.get("error_id", ""), function=function)
    if result is None:
        raise RemoteCommandError(f"{function} printed no result line", exit_status=out.exit_code,
                                 stdout=stdout, stderr=stderr, function=function)
    try:
        return json.loads(result) if result.strip() else None
    except json.JSONDecodeError as exc:
        raise RemoteCommandError(f"{function} printed a result that is not JSON ({exc})", exit_status=out.exit_code,
                                 stdout=stdout, stderr=stderr, function=function) from None


# --- the transport: pywinrm's Protocol, with deadlines and typed errors ----------------------------------

class _ConnectError(Exception):
    """A connection-level failure where the request cannot have reached the guest: safe to retry."""


def map_transport_error(exc: BaseException, what: str, settings: WinRMSettings) -> Exception:
    """One pywinrm/requests exception -> the stormatrix error a user can act on."""
    import requests
    from winrm.exceptions import InvalidCredentialsError, WinRMError, WinRMOperationTimeoutError, WinRMTransportError

    where = settings.describe()
    if isinstance(exc, InvalidCredentialsError) or (isinstance(exc, WinRMTransportError) and exc.code == 401):
        return AuthenticationFailed(f"{what}: the guest rejected the credentials of {where}. Fix: check the user, "
                                    "the password in the environment variable or file, and the transport "
                                    "(a local account needs ntlm or https)")
    if isinstance(exc, requests.exceptions.SSLError):
        return RemoteCommandError(f"{what}: TLS to {where} failed ({_short(exc)}). Fix: give the guest's CA in "
                                  "[winrm] ca_file, or for a lab guest with a self-signed certificate set "
                                  "cert_validation = false explicitly")
    if isinstance(exc, (requests.exceptions.ReadTimeout, WinRMOperationTimeoutError)):
        return RemoteTimeout(f"{what}: {where} did not answer within {settings.read_timeout_seconds} s")
    if isinstance(exc, (requests.exceptions.ConnectionError, _ConnectError)):
        return GuestDisconnected(f"{what}: cannot reach WinRM at {where} ({_short(exc)})")
    if isinstance(exc, WinRMTransportError):
        return RemoteCommandError(f"{what}: WinRM at {where} answered HTTP {exc.code}",
                                  stdout=str(exc.response_text)[:2000])
    if isinstance(exc, WinRMError):
        return RemoteCommandError(f"{what}: WinRM fault from {where}: {_short(exc)}")
    return RemoteCommandError(f"{what}: unexpected error talking to {where}: {type(exc).__name__}: {_short(exc)}")


def _short(exc: BaseException) -> str:
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
        log.warning("TLS certificate validation of %s is turned off ([winrm] cert_validation = false): "
                    "anyone on the path can impersonate the guest and read the password", settings.host)
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
    """

    def __init__(self, settings: WinRMSettings, *, protocol_factory: ProtocolFactory | None = None,
                 sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic) -> None:
        self.settings = settings
        self._factory = protocol_factory or _default_protocol
        self._protocol: Any = None
        self._sleep, self._clock = sleep, clock

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
            except Exception as exc:  # noqa: BLE001 - closing must not hide the real outcome
                log.debug("closing the WinRM HTTP session: %s", _short(exc))

    def _retrying(self, what: str, op: Callable[[], Any]) -> Any:
        attempts = self.settings.connect_retries + 1
        for attempt in range(1, attempts + 1):
            try:
                return op()
            except Exception as exc:  # noqa: BLE001 - mapped below, never swallowed
                if _is_connect_error(exc) and attempt < attempts:
                    delay = min(2.0 ** (attempt - 1), 10.0)
                    log.info("%s: connection error (%s); retry %d/%d in %.0f s", what, _short(exc), attempt,
                             attempts - 1, delay)
                    self.reset()
                    self._sleep(delay)
                    continue
                raise map_transport_error(exc, what, self.settings) from None
        raise AssertionError("unreachable")

    def start(self, command: str, what: str) -> tuple[str, str]:
        """Open a shell and start ``command`` in it: (shell id, command id)."""
        shell_id = self._retrying(what, lambda: self.protocol.open_shell())

        def begin() -> str:
            return self.protocol.run_command(shell_id, command)
        try:
            command_id = self._retrying(what, begin)
        except Exception:
            self._close_quietly(shell_id, None)
            raise
        return shell_id, command_id

    def receive(self, shell_id: str, command_id: str, deadline: float, what: str,
                on_stdout: Callable[[str], None] | None = None) -> CommandOutput:
        """Collect output until the command is done or ``deadline`` (monotonic) passes."""
        from winrm.exceptions import WinRMOperationTimeoutError

        out, err = bytearray(), bytearray()
        try:
            while True:
                if self._clock() > deadline:
                    raise RemoteTimeout(f"{what}: still running in the guest at the deadline; stopped it",
                                        stdout=out.decode("utf-8", "replace"), stderr=err.decode("utf-8", "replace"))
                try:
                    # pywinrm's get_command_output loops forever; its one-request step lets us keep a deadline.
                    stdout, stderr, code, done = self.protocol._raw_get_command_output(shell_id, command_id)
                except WinRMOperationTimeoutError:
                    continue  # the guest's long-poll expired with nothing to say: ask again
                except Exception as exc:  # noqa: BLE001
                    mapped = map_transport_error(exc, what, self.settings)
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
        try:
            if command_id is not None:
                self.protocol.cleanup_command(shell_id, command_id)
            self.protocol.close_shell(shell_id)
        except Exception as exc:  # noqa: BLE001 - cleanup must not hide the real outcome
            log.debug("closing WinRM shell %s: %s", shell_id, _short(exc))

    def run(self, command: str, what: str, timeout: float | None = None,
            on_stdout: Callable[[str], None] | None = None) -> CommandOutput:
        timeout = self.settings.command_timeout_seconds if timeout is None else timeout
        shell_id, command_id = self.start(command, what)
        return self.receive(shell_id, command_id, self._clock() + timeout, what, on_stdout)


# --- the executor ---------------------------------------------------------------------------------------

#: The module functions Python calls by name, and the parameters it passes (a compliance test on
#: the PowerShell side checks the same list).
PYTHON_CALLS: dict[str, tuple[str, ...]] = {
    "Invoke-StormatrixFio": ("Serial", "ReadWrite", "BlockSize", "IoDepth", "NumJobs", "RampSeconds",
                             "RuntimeSeconds", "RateMiBps", "RwMixRead", "IoEngine", "FioPath", "WriteMarkers"),
    "Invoke-StormatrixDiskSpd": ("Serial", "ReadWrite", "BlockSize", "IoDepth", "NumJobs", "RampSeconds",
                                 "RuntimeSeconds", "RateMiBps", "RwMixRead", "DiskSpdPath", "WriteMarkers"),
    "Get-StormatrixGuestFacts": ("Serial",),
    "Invoke-StormatrixGuestValidation": ("Serial", "Controller", "Engine", "FioPath", "DiskSpdPath"),
}

_ENGINE_RW = ("read", "write", "randread", "randwrite", "rw", "readwrite", "randrw")
# matrix controller names -> the names the guest module reports
GUEST_CONTROLLER_NAMES = {"virtio-scsi-pci": "virtio-scsi", "virtio-scsi-single": "virtio-scsi"}


def workload_parameters(cell: Cell, timing: Timing, settings: WinRMSettings) -> tuple[str, dict[str, Any]]:
    """(function, parameters) for one cell: what the guest module is asked to run."""
    w = cell.workload
    if w.rw not in _ENGINE_RW:
        raise InputError(f"workload {w.name!r}: rw={w.rw} is not supported in Windows guests "
                         f"(use one of {', '.join(_ENGINE_RW)})")
    params: dict[str, Any] = {
        "Serial": settings.disk_serial,
        "ReadWrite": w.rw,
        "BlockSize": w.bs,
        "IoDepth": w.iodepth,
        "NumJobs": w.numjobs,
        "RampSeconds": int(math.ceil(timing.ramp_s)),
        "RuntimeSeconds": max(1, int(math.ceil(timing.measure_s))),
        "RateMiBps": float(w.rate_mib_s or 0.0),
        "RwMixRead": w.rwmixread if w.rwmixread is not None else 50,
        "WriteMarkers": True,
    }
    if settings.engine == "fio":
        params["FioPath"] = settings.fio_path
        return "Invoke-StormatrixFio", params
    params["DiskSpdPath"] = settings.diskspd_path
    return "Invoke-StormatrixDiskSpd", params


def xml_to_dict(element: ET.Element) -> Any:
    """A DiskSpd XML element as plain data: children by tag (lists when repeated), text for leaves."""
    children = list(element)
    if not children:
        return (element.text or "").strip()
    out: dict[str, Any] = {}
    for child in children:
        value = xml_to_dict(child)
        if child.tag in out:
            if not isinstance(out[child.tag], list):
                out[child.tag] = [out[child.tag]]
            out[child.tag].append(value)
        else:
            out[child.tag] = value
    return out


@dataclass
class CheckResult:
    name: str
    block: str
    result: str  # Passed | Failed | Skipped | NotRun
    message: str = ""


@dataclass
class CheckReport:
    """The guest validation: one entry per Pester test; ``error`` when the suite could not run at all."""

    host: str
    passed: bool
    tests: list[CheckResult] = field(default_factory=list)
    pester_version: str = ""
    error: str = ""

    def table(self) -> str:
        """A per-test pass/fail table for the terminal."""
        rows = [(t.result.upper(), f"{t.block} / {t.name}", t.message) for t in self.tests]
        width = max([len(r[1]) for r in rows] + [5])
        lines = [f"guest check of {self.host}" + (f" (Pester {self.pester_version})" if self.pester_version else "")]
        for status, name, message in rows:
            lines.append(f"  {status:<7} {name:<{width}}" + (f"  {message}" if message and status != "PASSED" else ""))
        if self.error:
            lines.append(f"  ERROR   {self.error}")
        failed = sum(1 for t in self.tests if t.result == "Failed")
        lines.append(f"{len(self.tests) - failed} passed, {failed} failed" + ("" if self.passed else " -> NOT READY"))
        return "\n".join(lines)


class WinRMExecutor(GuestExecutor):
    """Runs fio or DiskSpd in a Windows guest through the StormatrixGuest module over WinRM."""

    name = "winrm"

    def __init__(self, endpoints: list[GuestEndpoint], options: dict[str, Any] | None = None, *,
                 settings: WinRMSettings | None = None, protocol_factory: ProtocolFactory | None = None,
                 module_dir: Path | None = None, environ: Mapping[str, str] | None = None,
                 sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(endpoints, options)
        if settings is None:
            section = dict(self.options.get("winrm", self.options))
            host = endpoints[0].address if endpoints else ""
            if endpoints and endpoints[0].port and not section.get("port"):
                section["port"] = endpoints[0].port
            settings = WinRMSettings.from_section(section, host=host, environ=environ)
        if len(endpoints) > 1:
            raise InputError("the winrm executor drives one guest per VM; got "
                             f"{len(endpoints)} endpoints (use one executor per guest)")
        self.settings = settings
        self.secrets = [settings.password] if settings.password else []
        self._filter = RedactingFilter(self.secrets)
        log.addFilter(self._filter)
        self.channel = WinRMChannel(settings, protocol_factory=protocol_factory, sleep=sleep, clock=clock)
        self.module_dir = module_dir or default_module_dir()
        self._payload: ModulePayload | None = None
        self._uploaded = False
        self._sleep, self._clock = sleep, clock

    # -- plumbing ------------------------------------------------------------------------------------

    @property
    def payload(self) -> ModulePayload:
        if self._payload is None:
            self._payload = ModulePayload.from_dir(self.module_dir)
        return self._payload

    def run_script(self, script: str, what: str, timeout: float | None = None,
                   on_stdout: Callable[[str], None] | None = None) -> CommandOutput:
        return self.channel.run(encode_command(script), what, timeout, on_stdout)

    def ensure_module(self) -> None:
        """Upload the module unless this exact version (by SHA-256) is already in the guest."""
        if self._uploaded:
            return
        payload = self.payload
        out = self.run_script(present_script(payload), "check for the guest module")
        if "##stormatrix:present" not in out.stdout:
            scripts = upload_scripts(payload)
            log.info("uploading %s (%d files, %d bytes) to %s in %d commands", MODULE_NAME, payload.files,
                     len(payload.b64), self.settings.host, len(scripts))
            for i, script in enumerate(scripts):
                out = self.run_script(script, f"upload the guest module ({i + 1}/{len(scripts)})")
                if out.exit_code != 0:
                    raise RemoteCommandError(f"uploading the guest module failed at step {i + 1}/{len(scripts)} "
                                             f"(exit {out.exit_code})", exit_status=out.exit_code,
                                             stdout=redact(out.stdout, self.secrets),
                                             stderr=redact(clean_clixml(out.stderr), self.secrets))
            if "##stormatrix:uploaded" not in out.stdout:
                raise RemoteCommandError("the guest module upload did not confirm", exit_status=out.exit_code,
                                         stdout=out.stdout, stderr=clean_clixml(out.stderr))
        self._uploaded = True

    def call(self, function: str, params: Mapping[str, Any] | None = None, *, timeout: float | None = None,
             on_stdout: Callable[[str], None] | None = None) -> Any:
        """Call a module function in the guest with ``params`` passed as data; return its parsed result."""
        self.ensure_module()
        script = call_script(function, params or {}, self.payload.digest)
        out = self.run_script(script, function, timeout, on_stdout)
        return parse_call_output(out, function, self.secrets)

    # -- GuestExecutor -------------------------------------------------------------------------------

    def wait_ready(self, deadline: float) -> dict[str, Any]:
        """Poll until WinRM answers and the module reports guest facts; a bad password fails at once."""
        last: Exception | None = None
        while True:
            try:
                self._uploaded = False  # a rebooted or reverted guest may have lost its temp folder
                return self.call("Get-StormatrixGuestFacts",
                                 {"Serial": self.settings.disk_serial} if self.settings.disk_serial else {})
            except AuthenticationFailed:
                raise
            except (GuestDisconnected, RemoteTimeout) as exc:
                last = exc
            remaining = deadline - self._clock()
            if remaining <= 0:
                raise GuestNotReady(f"WinRM at {self.settings.describe()} did not answer before the deadline: {last}")
            self.channel.reset()
            self._sleep(min(5.0, max(0.1, remaining)))

    def restart_guest(self, deadline: float | None = None) -> dict[str, Any]:
        """Reboot the guest from inside and wait until it is back with a new boot time.

        Restart-Computer may drop the connection before it answers; that is expected here. The guest is
        only "back" when its LastBootUpTime has changed, so the old, still-answering system is never
        mistaken for the new one.
        """
        deadline = deadline if deadline is not None else self._clock() + self.settings.reboot_timeout_seconds
        before = self.call("Get-StormatrixGuestFacts", {}).get("LastBootUpTime")
        try:
            self.run_script(_PRELUDE + "Restart-Computer -Force", "restart the guest", timeout=60)
        except (GuestDisconnected, RemoteTimeout) as exc:
            log.info("restart: connection dropped as the guest went down (%s)", exc)
        while True:
            facts = self.wait_ready(deadline)
            if facts.get("LastBootUpTime") != before:
                return facts
            if self._clock() > deadline:
                raise GuestNotReady(f"{self.settings.host} still reports the boot time {before} at the deadline: "
                                    "it did not restart")
            self._sleep(2.0)

    def run(self, cell: Cell, timing: Timing, window: WindowListener) -> WorkloadResult:
        """Run the cell's workload; open the window ``ramp_s`` after the engine starts, close it
        ``measure_s`` later (window_source "timed": fio's own ramp_time/runtime match those edges)."""
        function, params = workload_parameters(cell, timing, self.settings)
        if not self.settings.disk_serial:
            raise InputError("[winrm] disk_serial is required to run a workload (the test disk is found by serial)")
        started = threading.Event()
        box: dict[str, Any] = {}

        def watch(text: str) -> None:
            if STARTED_MARK in text and not started.is_set():
                box["started_at"] = self._clock()
                started.set()

        def work() -> None:
            try:
                box["result"] = self.call(function, params, on_stdout=watch,
                                          timeout=timing.ramp_s + timing.measure_s + self.settings.command_timeout_seconds)
            except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
                box["error"] = exc
            finally:
                started.set()

        self.ensure_module()
        thread = threading.Thread(target=work, name=f"winrm-{cell.key}", daemon=True)
        thread.start()
        started.wait(self.settings.command_timeout_seconds)
        if "started_at" in box and "error" not in box:
            t0 = box["started_at"]
            self._sleep_until(t0 + params["RampSeconds"], thread)
            if thread.is_alive():
                window.measure_started()
                self._sleep_until(t0 + params["RampSeconds"] + params["RuntimeSeconds"], thread)
                window.measure_ended()
        thread.join(self.settings.command_timeout_seconds + timing.ramp_s + timing.measure_s)
        if thread.is_alive():
            raise RemoteTimeout(f"{function} did not return", cell=cell.key)
        if "error" in box:
            exc = box["error"]
            if isinstance(exc, RemoteCommandError) and not isinstance(exc, (AuthenticationFailed, RemoteTimeout)):
                raise WorkloadFailed(str(exc), cell=cell.key, stdout=exc.stdout, stderr=exc.stderr,
                                     exit_status=exc.exit_status, error_id=exc.details.get("error_id", "")) from exc
            raise exc
        if "started_at" not in box:
            raise WorkloadFailed(f"{function} returned without the engine-started marker", cell=cell.key)
        result = box["result"]
        raw = result.get("Raw", "")
        guest = {k: result.get(k) for k in ("Target", "DiskNumber", "FioVersion", "Arguments", "Started", "Ended")
                 if k in result}
        guest["host"] = self.settings.host
        if result.get("Engine") == "diskspd":
            try:
                data = {"Results": xml_to_dict(ET.fromstring(raw))}
            except ET.ParseError as exc:
                raise WorkloadFailed(f"DiskSpd XML does not parse: {exc}", cell=cell.key, stdout=raw[:2000]) from None
            return WorkloadResult(engine="diskspd", raw=raw, data=data, guest=guest, window_source="timed")
        from ..analysis.fio import parse_fio_json

        data = parse_fio_json(raw, source=f"fio in {self.settings.host}")
        return WorkloadResult(engine="fio", raw=raw, data=data, guest=guest, window_source="timed")

    def _sleep_until(self, when: float, thread: threading.Thread) -> None:
        while thread.is_alive():
            remaining = when - self._clock()
            if remaining <= 0:
                return
            thread.join(min(remaining, 0.5))

    def validate(self, controller: str | None = None) -> CheckReport:
        """Run the Pester validation suite in the guest; never raises for a failed check."""
        params: dict[str, Any] = {"Serial": self.settings.disk_serial, "Engine": self.settings.engine,
                                  "FioPath": self.settings.fio_path, "DiskSpdPath": self.settings.diskspd_path}
        if controller:
            params["Controller"] = GUEST_CONTROLLER_NAMES.get(controller, controller)
        try:
            result = self.call("Invoke-StormatrixGuestValidation", params)
        except RemoteCommandError as exc:
            if isinstance(exc, (AuthenticationFailed, RemoteTimeout)):
                raise
            return CheckReport(host=self.settings.host, passed=False, error=exc.message)
        tests = result.get("Tests") or []
        if isinstance(tests, dict):  # ConvertTo-Json unwraps a one-element array
            tests = [tests]
        return CheckReport(
            host=self.settings.host, passed=bool(result.get("Passed")), pester_version=str(result.get("PesterVersion", "")),
            tests=[CheckResult(str(t.get("Name", "")), str(t.get("Block", "")), str(t.get("Result", "")),
                               str(t.get("Message") or "")) for t in tests])

    def close(self) -> None:
        log.removeFilter(self._filter)
        self.channel.reset()


def preflight(spec: Any, endpoint: GuestEndpoint | None, *, protocol_factory: ProtocolFactory | None = None,
              environ: Mapping[str, str] | None = None) -> CheckReport:
    """The guest validation the runner calls before a matrix when ``[run] preflight = true``.

    The driver check is run for the controller the guest has now only when the matrix names a single
    controller: at preflight time the test disk still sits on its original controller.
    """
    section = spec.section("winrm") if hasattr(spec, "section") else {}
    if not section:
        raise InputError("[run] preflight = true needs a [winrm] section (host, username, password_env, disk_serial)")
    executor = WinRMExecutor([endpoint] if endpoint else [], {"winrm": section},
                             protocol_factory=protocol_factory, environ=environ)
    try:
        controllers = spec.matrix.get("controllers", []) if hasattr(spec, "matrix") else []
        controller = controllers[0] if len(controllers) == 1 else None
        return executor.validate(controller)
    finally:
        executor.close()
