"""The ``[winrm]`` matrix section and its validated form, :class:`WinRMSettings`.

Transports, and what a stock Windows Server 2022 guest accepts:

- ``ntlm`` (the default) over HTTP 5985 with NTLM message encryption: works on a stock guest for the
  built-in Administrator; other local administrators in a workgroup need
  ``LocalAccountTokenFilterPolicy = 1`` (UAC strips their token over the network otherwise).
- ``kerberos``: needs the guest's host name (the SPN is ``HTTP/<name>``), never an IP address; the
  backends discover IP addresses, so a Kerberos matrix must set ``[winrm] host``.
- ``https``: Basic authentication inside TLS on 5986. The WinRM service has Basic auth OFF by
  default (``winrm/config/service/auth Basic = false``): prefer ``ntlm`` with ``use_tls = true``.
- ``credssp``: TLS on 5986, needs CredSSP enabled in the guest.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from ...core.errors import EnvironmentProblem, InputError
from ...core.names import host_problem
from ...core.paths import ca_bundle_problem
from ...core.model import Workload
from ...secrets import Secret, check_env_name, check_secret_file, reference, resolve
from ...spec import Field, Section

TRANSPORTS = ("ntlm", "kerberos", "credssp", "https")
# our transport -> (pywinrm transport, scheme, default port)
_TRANSPORT_MAP = {
    "ntlm": ("ntlm", "http", 5985),
    "kerberos": ("kerberos", "http", 5985),
    "credssp": ("credssp", "https", 5986),
    "https": ("ssl", "https", 5986),  # Basic authentication inside TLS
}
_TRANSPORT_PACKAGES = {"ntlm": "requests_ntlm", "kerberos": "requests_kerberos", "credssp": "requests_credssp"}


def load_password(*, password_env: str = "", password_file: str = "",
                  environ: Mapping[str, str] | None = None, path: str = "") -> Secret:
    """The WinRM password from the environment variable or the file (first line) the section names,
    through :mod:`stormatrix.secrets` (the one place that resolves secrets and keeps them out of every
    output). Never from argv (it would sit in the shell history and in ``ps``); unlike an API token it is
    not stripped: a password may end in a space."""
    ref = reference({"password_env": password_env, "password_file": password_file}, env_key="password_env",
                    file_key="password_file", what="the WinRM password", path=path, section="winrm")
    return resolve(ref, environ=environ, strip=False)


#: WinRM's default winrm/config/winrs MaxMemoryPerShellMB on Windows Server 2012 and later.
DEFAULT_SHELL_MEMORY_MB = 1024
#: What powershell.exe, the module and the engine's own code take inside the quota besides the
#: I/O buffers (powershell.exe alone is ~100 MB resident after Import-Module).
SHELL_MEMORY_HEADROOM_MB = 256

WINRM_SECTION = Section("winrm", {
    "host": Field(str, "", help="guest host name or address; empty: the one the backend reports",
                  check=lambda v: _check_host(v)),
    "port": Field(int, 0, min=0, max=65535, help="0 means 5985 for ntlm/kerberos, 5986 for https/credssp"),
    "transport": Field(str, "ntlm", choices=TRANSPORTS,
                       help="ntlm (default; message-encrypted over HTTP) or kerberos (needs a host name); "
                            "https = Basic auth over TLS, off in a stock guest; credssp over TLS"),
    "use_tls": Field(bool, False, help="ntlm/kerberos over HTTPS (port 5986) instead of HTTP"),
    "username": Field(str, help="e.g. Administrator or DOMAIN\\\\user", check=lambda v: _check_username(v)),
    "password_env": Field(str, "", help="name of the environment variable holding the password",
                          check=check_env_name),
    "password_file": Field(str, "", help="file whose first line is the password", check=check_secret_file),
    "cert_validation": Field(bool, True, help="verify the guest's TLS certificate; false only for lab "
                                              "guests with self-signed certificates"),
    "ca_file": Field(str, "", help="CA bundle (PEM) that signed the guest's certificate",
                     check=lambda v: _check_ca_file(v)),
    "operation_timeout_seconds": Field(int, 20, min=1, max=3600,
                                       help="how long one WS-Man request may block in the guest"),
    "read_timeout_seconds": Field(int, 30, min=2, max=3600,
                                  help="HTTP read timeout; must exceed operation_timeout_seconds"),
    "command_timeout_seconds": Field(float, 600.0, min=1, max=86400,
                                     help="a guest command (beyond the workload's own duration) "
                                          "must finish within this"),
    "connect_retries": Field(int, 3, min=0, max=20, help="retries of a connection error before giving up"),
    "reboot_timeout_seconds": Field(float, 600.0, min=10, max=7200,
                                    help="how long a guest may take to come back after a reboot"),
    "disk_serial": Field(str, help="serial number of the raw test disk in the guest (Get-Disk's SerialNumber)",
                         check=lambda v: _check_serial(v)),
    "engine": Field(str, "fio", choices=("fio", "diskspd")),
    "fio_path": Field(str, "C:\\Program Files\\fio\\fio.exe"),
    "diskspd_path": Field(str, "C:\\Program Files\\DiskSpd\\diskspd.exe"),
    "max_memory_per_shell_mb": Field(int, DEFAULT_SHELL_MEMORY_MB, min=64, max=2**31 - 1,
                                     help="the guest's winrm/config/winrs MaxMemoryPerShellMB; workloads "
                                          "whose buffers exceed it are refused at plan time"),
    "allow_partitioned_disk": Field(bool, False, help="let write workloads run on a test disk that has a "
                                                      "partition table (destroys it); default: RAW only"),
}, help="Windows guests over WinRM",
   # how the guest is reached and how patiently, where its tools are: not what a cell measures
   may_change_on_resume=frozenset({
       "host", "port", "transport", "use_tls", "username", "password_env", "password_file", "cert_validation",
       "ca_file", "operation_timeout_seconds", "read_timeout_seconds", "command_timeout_seconds",
       "connect_retries", "reboot_timeout_seconds", "fio_path", "diskspd_path", "max_memory_per_shell_mb"}))

#: ``guest check``'s option for each ``[winrm]`` key it sets (harness/commands/guest.py section_from_args)
CLI_OPTIONS = {
    "host": "--host", "port": "--port", "transport": "--transport", "use_tls": "--tls", "username": "--username",
    "password_env": "--password-env", "password_file": "--password-file", "cert_validation": "--no-cert-validation",
    "ca_file": "--ca-file", "disk_serial": "--disk-serial", "engine": "--engine", "fio_path": "--fio-path",
    "diskspd_path": "--diskspd-path", "read_timeout_seconds": "--timeout", "operation_timeout_seconds": "--timeout",
}

_SERIAL_RE = re.compile(r"[A-Za-z0-9_.:-]{1,64}")


def _check_host(value: str) -> None:
    """A ``[winrm] host`` (empty = the backend's address): a name or an IP address, not a URL."""
    problem = host_problem(value) if value else None
    if problem:
        raise ValueError(f"{problem}: write only the name or address; the port has its own key (port), TLS too "
                         "(use_tls)")


def _check_username(value: str) -> None:
    if not value.strip() or any(not c.isprintable() for c in value):
        raise ValueError("is empty or holds line breaks or control characters: give the account, e.g. "
                         "Administrator or DOMAIN\\user")


def _check_serial(value: str) -> None:
    if not _SERIAL_RE.fullmatch(value):
        raise ValueError(f"{value[:80]!r} is not a disk serial (1-64 letters, digits, _ . : -): copy the test "
                         "disk's SerialNumber from Get-Disk in the guest")


def _check_ca_file(value: str) -> None:
    if value:
        problem = ca_bundle_problem(value)
        if problem:
            raise ValueError(f"{value!r} {problem}: give the path of the PEM file holding the CA that signed the "
                             "guest's certificate")


def _is_ip_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


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
    max_memory_per_shell_mb: int = DEFAULT_SHELL_MEMORY_MB
    allow_partitioned_disk: bool = False
    #: where the values came from: "matrix" (a ``[winrm]`` section) or "cli" (``guest check``'s options),
    #: so that a message names what the user actually wrote (:meth:`spelled`)
    origin: str = field(default="matrix", compare=False)

    def spelled(self, key: str) -> str:
        """How the user wrote ``key``: ``--no-cert-validation`` on the command line,
        ``[winrm] cert_validation = false`` in a matrix file. Messages name this, never a key the user
        did not write."""
        if self.origin == "cli":
            return CLI_OPTIONS.get(key, f"--{key.replace('_', '-')}")
        value = getattr(self, key, None)
        if isinstance(value, bool):
            return f"[winrm] {key} = {'true' if value else 'false'}"
        return f"[winrm] {key}"

    def __post_init__(self) -> None:
        if self.transport not in TRANSPORTS:
            raise InputError(f"{self.spelled('transport')}: {self.transport!r} is not one of {', '.join(TRANSPORTS)}")
        if self.read_timeout_seconds <= self.operation_timeout_seconds:
            raise InputError(f"[winrm] read_timeout_seconds ({self.read_timeout_seconds}) must exceed "
                             f"operation_timeout_seconds ({self.operation_timeout_seconds}): the guest may "
                             "block a request for the whole operation timeout")
        if not self.username.strip() or any(not c.isprintable() for c in self.username):
            raise InputError(f"{self.spelled('username')} is empty or holds control characters. Fix: give the "
                             "guest account, e.g. Administrator")
        if self.disk_serial and not _SERIAL_RE.fullmatch(self.disk_serial):
            raise InputError(f"{self.spelled('disk_serial')}: {self.disk_serial!r} has characters a disk serial "
                             "cannot have (letters, digits, _ . : - only). Fix: copy the serial from Get-Disk "
                             "(SerialNumber) in the guest")
        if self.transport == "kerberos" and _is_ip_address(self.host):
            cli = self.origin == "cli"
            said = "--transport kerberos" if cli else '[winrm] transport = "kerberos"'
            other = "--transport ntlm" if cli else 'transport = "ntlm"'
            raise InputError(f"{said} needs the guest's host name, not the address {self.host} (Kerberos finds "
                             f"the service by its name, HTTP/<host>). Fix: set {self.spelled('host')} to the "
                             f"guest's DNS name, or use {other}")

    @classmethod
    def from_section(cls, section: Mapping[str, Any], *, host: str = "",
                     environ: Mapping[str, str] | None = None, origin: str = "matrix") -> "WinRMSettings":
        """From a parsed ``[winrm]`` table; loads the password from the environment or file it names.
        ``origin="cli"`` when the table was made from ``guest check``'s options: messages then name them."""
        values = {k: v for k, v in section.items() if k in {f.name for f in dataclasses.fields(cls)}}
        values["host"] = section.get("host") or host
        values["origin"] = origin
        if not values["host"]:
            raise InputError("no WinRM host: set [winrm] host or let the backend report the guest's address")
        if origin == "cli":
            ref = reference({"--password-env": section.get("password_env", ""),
                             "--password-file": section.get("password_file", "")}, env_key="--password-env",
                            file_key="--password-file", what="the WinRM password")
            password = resolve(ref, environ=environ, strip=False)
        else:
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
        user turned it off; a CA file pins the trust; NTLM/Kerberos/CredSSP over plain HTTP always
        encrypt the messages (the password and the results never cross the wire in clear)."""
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
        if self.transport in ("ntlm", "kerberos", "credssp"):
            kwargs["message_encryption"] = "always" if self.scheme == "http" else "auto"
        if self.cert_validation and self.ca_file:
            kwargs["ca_trust_path"] = self.ca_file
        return kwargs

    def describe(self) -> str:
        """For logs and messages: everything but the password."""
        tls = "" if self.scheme == "http" else (
            " cert-validation=on" if self.cert_validation else " cert-validation=OFF")
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
                                 f"installed. Fix: apt-get install {debian} "
                                 f"(or pip install {package.replace('_', '-')})")


# --- the shell memory quota ----------------------------------------------------------------------------

def workload_buffer_bytes(workload: Workload) -> int:
    """The I/O buffers a workload holds at once: fio allocates ``bs x iodepth`` per job, DiskSpd
    ``-b x -o`` per thread."""
    return workload.bs * workload.iodepth * workload.numjobs


def check_workload_memory(workloads: Iterable[Workload], quota_mb: int = DEFAULT_SHELL_MEMORY_MB) -> None:
    """Refuse (InputError, exit 2) workloads whose buffers do not fit the guest's WinRM shell quota.

    WinRM runs every command in a job object limited to MaxMemoryPerShellMB (default 1024); a
    process that grows past it is killed mid-run with an out-of-memory error. The engine's buffers
    (``bs x iodepth x numjobs``) plus :data:`SHELL_MEMORY_HEADROOM_MB` for powershell.exe must fit.
    Called at plan time, before any VM is touched.
    """
    room = (quota_mb - SHELL_MEMORY_HEADROOM_MB) * 2**20
    over = [(w, workload_buffer_bytes(w)) for w in workloads if workload_buffer_bytes(w) > room]
    if not over:
        return
    need_mb = max(-(-b // 2**20) for _, b in over) + SHELL_MEMORY_HEADROOM_MB
    names = "; ".join(f"workload {w.name!r}: bs {w.bs} x iodepth {w.iodepth} x numjobs {w.numjobs} = "
                      f"{b / 2**20:.0f} MiB of I/O buffers" for w, b in over)
    raise InputError(f"{names} - more than the guest's WinRM shell memory quota MaxMemoryPerShellMB = {quota_mb} "
                     f"allows ({quota_mb} MB minus {SHELL_MEMORY_HEADROOM_MB} MB for powershell.exe). Fix: lower "
                     f"bs, iodepth or numjobs, or raise the quota in the guest to at least {need_mb} "
                     f"(Set-Item WSMan:\\localhost\\Shell\\MaxMemoryPerShellMB {need_mb}) and set "
                     f"[winrm] max_memory_per_shell_mb = {need_mb}")
