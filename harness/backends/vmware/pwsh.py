"""The Python <-> PowerShell protocol of the vmware backend: one ``pwsh -NoLogo -NoProfile -NonInteractive
-File windows/StormatrixVMware/stormatrix-vmware.ps1`` process per call, one JSON request on stdin, one
``STORMATRIX-JSON:`` line back; the typed errors the module's error ids map to.

Nothing is spliced into script text: the command name is checked against the module's fixed list and the
parameters are splatted as data. Credentials never travel: the request names the environment variables
(or the PowerCLI credential store entry) and PowerShell reads them itself; :class:`PwshRunner` only scrubs
the password's value from what it logs or raises.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any, Callable

from ... import secrets
from ...core import oscompat
from ...core.errors import (PowerCLIConnectError, PowerCLIContractError, PowerCLIError, PowerCLIGuestNotReady,
                            PowerCLINotFound, PowerCLIStatsError, PowerCLIUnavailable, StormatrixError)

log = logging.getLogger("stormatrix.backend.vmware")

MODULE_DIR = Path(__file__).resolve().parents[3] / "windows" / "StormatrixVMware"
ENTRY_SCRIPT = "stormatrix-vmware.ps1"
RESPONSE_PREFIX = "STORMATRIX-JSON:"
#: one object a command wrote, printed the moment it was written (before the response): the fleet functions'
#: VMs and disks, which the caller journals at once
ITEM_PREFIX = "STORMATRIX-ITEM:"
SCHEMA = "stormatrix/vmware-1"

#: what Python passes to each module function, by parameter name (a static test checks each name
#: against the function's param() block; the Pester compliance test does it with the real parser)
PYTHON_CALLS: dict[str, tuple[str, ...]] = {
    "Connect-StormatrixVMware": ("Server", "CredentialSource", "UserVariable", "PasswordVariable",
                                 "CredentialStoreUser", "VerifyCertificate"),
    "Get-StormatrixVMwareLayout": ("VMName", "DiskName"),
    "Set-StormatrixVMwareController": ("VMName", "DiskName", "Type", "KeepControllerKey", "ReadyTimeoutSeconds"),
    "Restore-StormatrixVMwareLayout": ("VMName", "DiskName", "ControllerKey", "ControllerType", "KeepControllerKey",
                                       "Filename", "PowerState", "UnitNumber", "ReadyTimeoutSeconds"),
    "Get-StormatrixVMwareHostTuning": ("VMHost", "Device"),
    "Set-StormatrixVMwareHostTuning": ("VMHost", "Device", "SchedNumReqOutstanding", "LatencySensitiveThreshold"),
    "Get-StormatrixVMwareCpuUsage": ("VMName", "VMHost", "Start", "Finish", "WaitSeconds"),
    "Get-StormatrixVMwareHostInfo": ("VMName", "VMHost"),
    # the worker fleet of a comparison suite (stormatrix.backends.vmware.fleet)
    "Get-StormatrixVMwareFleetTarget": ("Template", "VMHost", "Datastore", "Name", "RunId"),
    "New-StormatrixVMwareFleet": ("Name", "Template", "VMHost", "Datastore", "RunId", "NumCpu", "MemoryGB", "Parallel"),
    "Add-StormatrixVMwareFleetDisk": ("VMId", "RunId", "Datastore", "CapacityGB", "ControllerType", "StorageFormat",
                                      "BaseFilename"),
    "Restart-StormatrixVMwareFleet": ("VMId", "RunId", "ReadyTimeoutSeconds"),
    "Get-StormatrixVMwareFleetFioVersion": ("VMId", "RunId", "GuestUserVariable", "GuestPasswordVariable"),
    "Remove-StormatrixVMwareFleetDisk": ("VMId", "RunId", "Datastore", "BaseFilename"),
    "Remove-StormatrixVMwareFleet": ("VMId", "VMName", "RunId"),
}


# --- errors ------------------------------------------------------------------------------------------------

_ERROR_TYPES: dict[str, type[StormatrixError]] = {
    "Stormatrix.VMware.CredentialMissing": PowerCLIConnectError,
    "Stormatrix.VMware.ConnectFailed": PowerCLIConnectError,
    "Stormatrix.VMware.ConfigurationFailed": PowerCLIConnectError,
    "Stormatrix.VMware.VmNotFound": PowerCLINotFound,
    "Stormatrix.VMware.DiskNotFound": PowerCLINotFound,
    "Stormatrix.VMware.HostNotFound": PowerCLINotFound,
    "Stormatrix.VMware.DeviceNotFound": PowerCLINotFound,
    "Stormatrix.VMware.TemplateNotFound": PowerCLINotFound,
    "Stormatrix.VMware.DatastoreNotFound": PowerCLINotFound,
    "Stormatrix.VMware.GuestNotReady": PowerCLIGuestNotReady,
    "Stormatrix.VMware.StatsFailed": PowerCLIStatsError,
    "Stormatrix.VMware.StatsNotAvailable": PowerCLIStatsError,
    "Stormatrix.VMware.InvalidWindow": PowerCLIStatsError,
    "Stormatrix.VMware.BadRequest": PowerCLIContractError,
    "Stormatrix.VMware.UnknownCommand": PowerCLIContractError,
    "Stormatrix.VMware.PowerCLINotInstalled": PowerCLIUnavailable,
    "Stormatrix.VMware.ModuleLoadFailed": PowerCLIUnavailable,
}


def error_from_response(doc: dict[str, Any]) -> StormatrixError:
    """The typed error for a failed response: by the module's error id, else a contract error when
    PowerShell itself refused the call (a parameter binding problem is Python's bug), else the base."""
    err = doc.get("error") or {}
    error_id = str(err.get("id") or "")
    base = error_id.split(",", 1)[0]
    cls = _ERROR_TYPES.get(base)
    if cls is None:
        binding = ("NamedParameterNotFound", "MissingMandatoryParameter", "ParameterArgumentValidationError",
                   "ParameterArgumentTransformationError", "PositionalParameterNotFound")
        cls = PowerCLIContractError if base in binding else PowerCLIError
    command = str(doc.get("command") or "")
    message = f"{command or 'pwsh'}: {err.get('message') or 'failed without a message'}"
    return cls(message, error_id=error_id, powercli=err.get("powercli"), command=command,
               category=str(err.get("category") or ""))


# --- the pwsh call -------------------------------------------------------------------------------------------

#: where a pwsh installed as a .NET tool lives when ``[vmware] pwsh`` is a bare name that PATH does not find:
#: ``dotnet tool install -g PowerShell`` (often not on a service's PATH) and this checkout's pinned copy
#: (``scripts/install-pwsh.sh``, what ``make test`` runs on)
TOOL_DIRS = (Path("~/.dotnet/tools"), MODULE_DIR.parents[1] / ".tools" / "pwsh")

INSTALL_HINT = ("install PowerShell 7 (`dotnet tool install -g PowerShell --version 7.6.9`, or Microsoft's "
                "`powershell` package) and VMware.PowerCLI from the PowerShell Gallery (`pwsh -Command "
                "'Install-Module VMware.PowerCLI -Scope CurrentUser'`), or set [vmware] pwsh to its path "
                "(docs/esxi.md)")


def run_pwsh_process(argv: list[str], request: str, timeout: float,
                     env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run one pwsh call in a process group of its own; on timeout kill the whole group.

    Why the group: pwsh installed as a .NET tool (``dotnet tool install PowerShell``) is a launcher that
    starts ``dotnet pwsh.dll`` as a child. Killing only the launcher (what ``subprocess.run`` does on a
    timeout) leaves that child running and holding the output pipes, so the call would hang until pwsh
    ends by itself. Raises :class:`subprocess.TimeoutExpired` once every process of the group is gone."""
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            encoding="utf-8", env=env, **oscompat.new_group())
    try:
        out, err = proc.communicate(request, timeout=timeout)
    except subprocess.TimeoutExpired:
        oscompat.kill_tree(proc)
        proc.communicate()
        raise
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def run_pwsh_streaming(argv: list[str], request: str, timeout: float, env: dict[str, str],
                       on_line: Callable[[str], None]) -> subprocess.CompletedProcess[str]:
    """:func:`run_pwsh_process`, with each stdout line handed to ``on_line`` as soon as pwsh prints it.

    The whole group is killed when ``timeout`` passes (:class:`subprocess.TimeoutExpired`) or when
    ``on_line`` raises (the error is re-raised): pwsh must not go on creating what its caller can no
    longer write down."""
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            encoding="utf-8", env=env, **oscompat.new_group())
    err: list[str] = []
    out: list[str] = []
    expired = threading.Event()

    def kill() -> None:
        oscompat.kill_tree(proc)

    def on_timeout() -> None:
        expired.set()
        kill()

    reader = threading.Thread(target=lambda: err.append(proc.stderr.read() if proc.stderr else ""), daemon=True)
    reader.start()
    timer = threading.Timer(timeout, on_timeout)
    timer.start()
    try:
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(request)
            proc.stdin.close()
        except BrokenPipeError:
            pass
        for line in proc.stdout:
            out.append(line)
            on_line(line.rstrip("\n"))
        proc.wait()
    except BaseException:
        kill()
        proc.wait()
        raise
    finally:
        timer.cancel()
        reader.join(timeout=10)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    if expired.is_set():
        raise subprocess.TimeoutExpired(argv, timeout)
    return subprocess.CompletedProcess(argv, proc.returncode, "".join(out), "".join(err))


def find_pwsh(pwsh: str, tool_dirs: tuple[Path, ...] | None = None) -> tuple[str | None, list[str]]:
    """The executable ``[vmware] pwsh`` names, and the places searched (for the error when there is none).

    A path (with a slash) is used as it is; a bare name is looked up on PATH, then in ``tool_dirs``."""
    if os.sep in pwsh or (os.altsep and os.altsep in pwsh):
        path = os.path.expanduser(pwsh)
        return (path if os.path.isfile(path) and os.access(path, os.X_OK) else None), [path]
    found = shutil.which(pwsh)
    if found:
        return found, ["PATH"]
    searched = ["PATH"]
    for folder in TOOL_DIRS if tool_dirs is None else tool_dirs:
        candidate = folder.expanduser() / pwsh
        searched.append(str(candidate))
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate), searched
    return None, searched


def pwsh_argv(pwsh: str, module_dir: Path = MODULE_DIR) -> list[str]:
    """The whole command line: no -Command, no value from the matrix other than the executable."""
    return [pwsh, "-NoLogo", "-NoProfile", "-NonInteractive", "-File", str(module_dir / ENTRY_SCRIPT)]


def build_request(command: str, parameters: dict[str, Any], connection: dict[str, Any]) -> str:
    """The JSON request; refuses a parameter name the module does not take from Python (a typo here
    would otherwise surface as a PowerShell binding error on the workstation)."""
    allowed = PYTHON_CALLS.get(command)
    if allowed is None or command == "Connect-StormatrixVMware":
        raise PowerCLIContractError(f"{command!r} is not a module command the backend calls", command=command)
    unknown = sorted(set(parameters) - set(allowed))
    unknown += sorted(set(connection) - set(PYTHON_CALLS["Connect-StormatrixVMware"]))
    if unknown:
        raise PowerCLIContractError(f"{command}: parameters {', '.join(unknown)} are not in the module's contract",
                                    command=command)
    return json.dumps({"command": command, "parameters": parameters, "connection": connection})


def parse_response(stdout: str) -> tuple[dict[str, Any] | None, list[str]]:
    """(the response document, the other stdout lines): the document is the last prefixed line."""
    doc: dict[str, Any] | None = None
    noise: list[str] = []
    for line in stdout.splitlines():
        if line.startswith(RESPONSE_PREFIX):
            try:
                doc = json.loads(line[len(RESPONSE_PREFIX):])
            except json.JSONDecodeError as exc:
                raise PowerCLIContractError(f"pwsh answered with malformed JSON ({exc})") from None
        elif line.strip() and not line.startswith(ITEM_PREFIX):
            noise.append(line)
    return doc, noise


class PwshRunner:
    """Runs module commands through ``pwsh``; one process per call (no state survives in PowerShell).

    ``redact`` lists environment variable names whose values must never appear in what we log or
    raise (the password): PowerShell reads them itself, this class only scrubs its output.
    """

    def __init__(self, pwsh: str, connection: dict[str, Any], *, timeout: float = 900.0,
                 module_dir: Path = MODULE_DIR, redact: tuple[str, ...] = ()) -> None:
        self.pwsh = pwsh
        self.connection = dict(connection)
        self.timeout = timeout
        self.module_dir = Path(module_dir)
        self.redact = redact
        #: variables added to pwsh's environment only (a password read from a file, under the name the
        #: connection's PasswordVariable gives); registered with stormatrix.secrets by whoever sets them
        self.child_env: dict[str, str] = {}
        self.calls: list[str] = []
        self.server: Any = None  # product/version/build from the last connection (environment facts)

    def _scrub(self, text: str) -> str:
        text = secrets.scrub(text)
        for name in self.redact:
            value = os.environ.get(name)
            if value:
                text = secrets.redact(text, [value])
        return text

    def _scrub_doc(self, value: Any) -> Any:
        """Every string of a parsed answer scrubbed (JSON escaping would hide a secret from a
        replace on the raw text)."""
        if isinstance(value, str):
            return self._scrub(value)
        if isinstance(value, list):
            return [self._scrub_doc(v) for v in value]
        if isinstance(value, dict):
            return {k: self._scrub_doc(v) for k, v in value.items()}
        return value

    def call(self, command: str, parameters: dict[str, Any],
             on_item: Callable[[dict[str, Any]], None] | None = None) -> Any:
        """Run ``command`` and return its result; ``on_item`` (for the fleet functions) is called with each
        object the command writes, scrubbed, as soon as pwsh prints it, before the call returns."""
        request = build_request(command, parameters, self.connection)
        exe, searched = find_pwsh(self.pwsh)
        if exe is None:
            raise PowerCLIUnavailable(f"pwsh not found ({self.pwsh!r}; searched {', '.join(searched)}): {INSTALL_HINT}",
                                      command=command)
        argv = pwsh_argv(exe, self.module_dir)
        self.calls.append(command)
        log.debug("pwsh %s %s", command, sorted(parameters))
        env = {**os.environ, **self.child_env, "POWERSHELL_TELEMETRY_OPTOUT": "1",
               # plain text: pwsh 7 writes ANSI colour into redirected errors
               "NO_COLOR": "1"}

        def item(line: str) -> None:
            if on_item is not None and line.startswith(ITEM_PREFIX):
                try:
                    doc = json.loads(line[len(ITEM_PREFIX):])
                except json.JSONDecodeError as exc:
                    raise PowerCLIContractError(f"{command}: pwsh wrote a malformed item ({exc})",
                                                command=command) from None
                on_item(self._scrub_doc(doc))

        try:
            if on_item is None:
                proc = run_pwsh_process(argv, request, self.timeout, env=env)
            else:
                proc = run_pwsh_streaming(argv, request, self.timeout, env, item)
        except subprocess.TimeoutExpired:
            raise PowerCLIError(f"{command}: pwsh did not answer within {self.timeout:g} s ([vmware] call_timeout)",
                                command=command) from None
        except OSError as exc:
            raise PowerCLIUnavailable(f"{command}: cannot run {exe}: {exc}", command=command) from None
        stderr = self._scrub(proc.stderr)
        doc, noise = parse_response(proc.stdout)
        doc = self._scrub_doc(doc)
        noise = [self._scrub(line) for line in noise]
        if doc is None:
            tail = (stderr.strip() or "\n".join(noise))[-800:]
            raise PowerCLIError(f"{command}: pwsh exited {proc.returncode} without an answer: {tail}", command=command)
        if doc.get("schema") != SCHEMA:
            raise PowerCLIContractError(f"{command}: answer has schema {doc.get('schema')!r}, expected {SCHEMA}",
                                        command=command)
        for warning in doc.get("warnings") or []:
            log.warning("%s: %s", command, self._scrub(str(warning)))
        if not doc.get("ok"):
            raise error_from_response(doc)
        if proc.returncode != 0:
            raise PowerCLIContractError(f"{command}: pwsh exited {proc.returncode} after answering ok", command=command)
        self.server = doc.get("server")
        return doc.get("result")
