"""The ``vmware`` backend: ESXi through VMware PowerCLI, run by ``pwsh`` on the controller workstation.

Every operation is one ``pwsh -NoLogo -NoProfile -NonInteractive -File windows/StormatrixVMware/
stormatrix-vmware.ps1`` process that reads one JSON request on stdin and answers with one JSON
document (the module's contract, see ``Invoke-StormatrixVMwareRequest``). Nothing is spliced into
script text: the command name is checked against the module's fixed list and the parameters are
splatted as data. Credentials never travel: the request names the environment variables (or the
PowerCLI credential store entry) and PowerShell reads them itself.

One cell: ``Set-StormatrixVMwareController`` moves the test disk to a controller of the cell's type
(creating one if needed, never deleting the disk), power-cycles the VM and waits for VMware Tools.
The backend checks the answer: the disk is on that type, backed by the same file, and the VM booted
again. Restore (at the end, on error, on Ctrl-C, and from a journaled original) puts the disk back
on its original controller, removes the controllers added, returns the VM to its power state and
the host tuning (``esxcli ... --sched-num-req-outstanding``, ``latencythreshold``) to the values
read before the run.

Nothing on the platform changes in :meth:`prepare` (it only reads the layout and the esxcli values), so
the runner has journaled the original before the first change: the host tuning is set by the first
:meth:`apply`.

What differs from Proxmox: there is no QEMU process, so no per-thread accounting, no block stats
cross-check and no context-switch count; host CPU comes from vSphere's realtime statistics
(:class:`VmwareCpuCollector`) or from ``esxtop`` batch output read over SSH (:class:`EsxtopCollector`,
``[vmware] host_cpu_source = "esxtop"``), and the record says which.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import shutil
import subprocess
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..core.errors import BackendError, CollectorError, EnvironmentProblem, GuestNotReady, InputError, MatrixError
from ..core.model import DiskConfig
from ..spec import Field, Section, register_section
from .base import Backend, GuestEndpoint, HostScope

log = logging.getLogger("stormatrix.backend.vmware")

#: stormatrix controller name -> the module's -Type value
CONTROLLER_TYPES: dict[str, str] = {
    "pvscsi": "ParaVirtual",
    "lsilogic-sas": "LsiLogicSAS",
    "lsilogic": "LsiLogic",
    "nvme": "NVMe",
}
MODULE_DIR = Path(__file__).resolve().parents[2] / "windows" / "StormatrixVMware"
ENTRY_SCRIPT = "stormatrix-vmware.ps1"
RESPONSE_PREFIX = "STORMATRIX-JSON:"
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
}

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _check_env_name(value: str) -> None:
    if value and not _ENV_NAME.fullmatch(value):
        raise ValueError(f"{value!r} is not an environment variable name (give the variable's NAME, never its value)")


def _check_disk_name(value: str) -> None:
    if not re.fullmatch(r"Hard disk [1-9][0-9]*", value):
        raise ValueError(f"{value!r} is not a vSphere disk name like \"Hard disk 2\"")


def _check_device(value: str) -> None:
    if value and not re.fullmatch(r"[A-Za-z0-9._:-]+", value):
        raise ValueError(f"{value!r} is not an esxcli device name (naa..., eui..., t10...)")


def _check_ssh_target(value: str) -> None:
    """user@host or host; never something ssh would read as an option (a leading '-')."""
    if value and not re.fullmatch(r"(?:[A-Za-z0-9_][A-Za-z0-9._-]*@)?[A-Za-z0-9][A-Za-z0-9.:_-]*", value):
        raise ValueError(f"{value!r} is not an ssh destination like root@esx01.lab")


VMWARE_SECTION = register_section(Section("vmware", {
    "server": Field(str, help="vCenter Server or ESXi host that PowerCLI connects to"),
    "vm": Field(str, help="the VM under test, by name (exactly one VM must have it)"),
    "test_disk": Field(str, check=_check_disk_name, help="the test disk as vSphere names it, e.g. \"Hard disk 2\""),
    "credential_source": Field(str, "env", choices=("env", "credential-store"),
                               help="env: user/password from the environment variables named below; "
                                    "credential-store: the PowerCLI credential store entry for server"),
    "user_env": Field(str, "STORMATRIX_VSPHERE_USER", check=_check_env_name,
                      help="NAME of the environment variable holding the user"),
    "password_env": Field(str, "STORMATRIX_VSPHERE_PASSWORD", check=_check_env_name,
                          help="NAME of the environment variable holding the password (never the password)"),
    "credential_store_user": Field(str, "", help="user of the credential store entry, when it holds several"),
    "verify_tls": Field(bool, True, help="verify the server's certificate; false only if you accept MITM risk"),
    "esx_host": Field(str, "", help="the ESXi host for esxcli tuning and host CPU (default: the VM's host for CPU)"),
    "device": Field(str, "", check=_check_device, help="the storage device for esxcli (naa..., eui..., t10...)"),
    "sched_num_req_outstanding": Field(int, 0, min=0, max=4096,
                                       help="esxcli --sched-num-req-outstanding during the run (technote: 1024); 0 = leave"),
    "latency_threshold_ms": Field(int, -1, min=-1, max=1_000_000,
                                  help="esxcli latencythreshold -t during the run (technote: 10); -1 = leave"),
    "guest_host": Field(str, "", help="address of the guest for fio-server/WinRM executors"),
    "guest_port": Field(int, 0, min=0, max=65535, help="port the guest executor listens on"),
    "pwsh": Field(str, "pwsh", help="the PowerShell 7 executable (with VMware.PowerCLI installed for it)"),
    "call_timeout": Field(float, 900.0, min=10, max=86400, help="seconds one PowerCLI call may take"),
    "stats_wait_seconds": Field(float, 60.0, min=0, max=3600,
                                help="how long to wait for vSphere's realtime sample that covers the window end"),
    "host_cpu_source": Field(str, "vsphere", choices=("vsphere", "esxtop"),
                             help="vsphere: Get-Stat realtime (20 s samples, prorated); esxtop: esxtop -b on the "
                                  "ESXi host over SSH during the window (needs esxtop_ssh)"),
    "esxtop_ssh": Field(str, "", check=_check_ssh_target,
                        help="ssh destination of the ESXi host for esxtop (e.g. root@esx01.lab); key-based login "
                             "only (ssh -o BatchMode=yes), the SSH service (TSM-SSH) must be running"),
    "esxtop_delay_seconds": Field(int, 5, min=2, max=300, help="esxtop -d: seconds between its snapshots"),
}, help="the VMware ESXi backend (PowerCLI through pwsh): server, VM, test disk, credentials by reference only"))


# --- errors ------------------------------------------------------------------------------------------------

class PowerCLIError(BackendError):
    """A module call failed; ``error_id`` is the FullyQualifiedErrorId, ``powercli`` PowerCLI's own message."""

    def __init__(self, message: str, *, error_id: str = "", powercli: str | None = None, command: str = "",
                 category: str = "", **kw: Any) -> None:
        super().__init__(message, **kw)
        self.error_id, self.powercli, self.command, self.category = error_id, powercli, command, category


class PowerCLIConnectError(PowerCLIError):
    """Connecting failed: credentials missing or rejected, certificate not trusted, server unreachable."""


class PowerCLINotFound(PowerCLIError):
    """The VM, disk, host or device named in [vmware] does not exist (or a name matched several)."""


class PowerCLIGuestNotReady(PowerCLIError, GuestNotReady):
    """VMware Tools did not start after the power-on."""


class PowerCLIStatsError(PowerCLIError, CollectorError):
    """vSphere had no usable realtime statistics for the window."""


class PowerCLIContractError(PowerCLIError):
    """Python and the module disagree (unknown command or parameter, malformed answer): a bug, not the lab."""


class PowerCLIUnavailable(PowerCLIError, EnvironmentProblem):
    """pwsh or PowerCLI is missing on this workstation."""


_ERROR_TYPES: dict[str, type[PowerCLIError]] = {
    "Stormatrix.VMware.CredentialMissing": PowerCLIConnectError,
    "Stormatrix.VMware.ConnectFailed": PowerCLIConnectError,
    "Stormatrix.VMware.ConfigurationFailed": PowerCLIConnectError,
    "Stormatrix.VMware.VmNotFound": PowerCLINotFound,
    "Stormatrix.VMware.DiskNotFound": PowerCLINotFound,
    "Stormatrix.VMware.HostNotFound": PowerCLINotFound,
    "Stormatrix.VMware.DeviceNotFound": PowerCLINotFound,
    "Stormatrix.VMware.GuestNotReady": PowerCLIGuestNotReady,
    "Stormatrix.VMware.StatsFailed": PowerCLIStatsError,
    "Stormatrix.VMware.StatsNotAvailable": PowerCLIStatsError,
    "Stormatrix.VMware.InvalidWindow": PowerCLIStatsError,
    "Stormatrix.VMware.BadRequest": PowerCLIContractError,
    "Stormatrix.VMware.UnknownCommand": PowerCLIContractError,
    "Stormatrix.VMware.PowerCLINotInstalled": PowerCLIUnavailable,
    "Stormatrix.VMware.ModuleLoadFailed": PowerCLIUnavailable,
}


def error_from_response(doc: dict[str, Any]) -> PowerCLIError:
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
        elif line.strip():
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
        self.calls: list[str] = []
        self.server: Any = None  # product/version/build from the last connection (environment facts)

    def _scrub(self, text: str) -> str:
        for name in self.redact:
            value = os.environ.get(name)
            if value:
                text = text.replace(value, "***")
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

    def call(self, command: str, parameters: dict[str, Any]) -> Any:
        request = build_request(command, parameters, self.connection)
        exe = shutil.which(self.pwsh) or (self.pwsh if os.path.isfile(self.pwsh) else None)
        if exe is None:
            raise PowerCLIUnavailable(f"pwsh not found ({self.pwsh!r}): install PowerShell 7 and VMware.PowerCLI on "
                                      "this workstation, or set [vmware] pwsh to its path", command=command)
        argv = pwsh_argv(exe, self.module_dir)
        self.calls.append(command)
        log.debug("pwsh %s %s", command, sorted(parameters))
        try:
            proc = subprocess.run(argv, input=request, capture_output=True, text=True, timeout=self.timeout,
                                  check=False, env={**os.environ, "POWERSHELL_TELEMETRY_OPTOUT": "1"})
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


def _iso(t: datetime) -> str:
    return t.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# --- the journaled original ----------------------------------------------------------------------------------

def check_original(original: dict[str, Any]) -> None:
    """Refuse a journaled original that lacks what restore sends to the module (a hand-edited or damaged
    journal), naming the key: better no restore than half a layout sent to vSphere."""
    def need(path: str, kind: type | tuple[type, ...], choices: tuple[str, ...] = ()) -> Any:
        value: Any = original
        for part in path.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        ok = isinstance(value, kind) and not isinstance(value, bool) and (not choices or value in choices)
        if not ok:
            what = f"one of {', '.join(choices)}" if choices else {int: "a whole number", str: "a string",
                                                                  list: "a list"}.get(kind, str(kind))  # type: ignore[call-overload]
            raise InputError(f"original_config.{path} is {value!r}, not {what}. Fix: the journal was edited or "
                             "damaged; restore journal.ndjson from a backup, or put the VM back by hand with the "
                             "values the run record still shows")
        return value

    need("layout.Disk.Filename", str)
    need("layout.Disk.ControllerKey", int)
    need("layout.Disk.UnitNumber", int)
    need("layout.Controller.Type", str, tuple(CONTROLLER_TYPES.values()))
    need("layout.PowerState", str, ("PoweredOn", "PoweredOff"))
    for i, ctrl in enumerate(need("layout.Controllers", list)):
        if not isinstance(ctrl, dict) or not isinstance(ctrl.get("Key"), int) or isinstance(ctrl.get("Key"), bool):
            raise InputError(f"original_config.layout.Controllers[{i}].Key is missing or not a whole number. Fix: the "
                             "journal was edited or damaged; restore journal.ndjson from a backup")
    if original.get("tuning") is not None:
        need("tuning.VMHost", str)
        need("tuning.Device", str)
        need("tuning.SchedNumReqOutstanding", int)
        need("tuning.LatencySensitiveThreshold", int)


# --- the backend ---------------------------------------------------------------------------------------------

class VmwareBackend(Backend):
    name = "vmware"
    controllers = frozenset(CONTROLLER_TYPES)
    default_executor = "fio-server"

    def __init__(self, spec: Any, workdir: Path, *, runner: PwshRunner | None = None) -> None:
        super().__init__(spec, workdir)
        if "vmware" not in spec.sections:
            raise MatrixError(spec.path, "[vmware]", "is missing",
                              "add a [vmware] section with server, vm, test_disk and the credential settings")
        # ESXi has no aio, cache or iothread setting: expand() plans each controller once, as the
        # controller alone, whatever [matrix] lists for them (and `plan` says so)
        self.opts: dict[str, Any] = dict(spec.section("vmware"))
        o = self.opts
        if o["credential_source"] == "env":
            connection: dict[str, Any] = {"Server": o["server"], "CredentialSource": "Environment",
                                          "UserVariable": o["user_env"], "PasswordVariable": o["password_env"],
                                          "VerifyCertificate": bool(o["verify_tls"])}
            redact: tuple[str, ...] = (o["password_env"],)
        else:
            connection = {"Server": o["server"], "CredentialSource": "CredentialStore",
                          "CredentialStoreUser": o["credential_store_user"], "VerifyCertificate": bool(o["verify_tls"])}
            redact = ()
        if not o["verify_tls"]:
            log.warning("TLS verification of %s is turned off ([vmware] verify_tls = false)", o["server"])
        if o["host_cpu_source"] == "esxtop" and not o["esxtop_ssh"]:
            raise MatrixError(spec.path, "[vmware] esxtop_ssh", "is empty, but host_cpu_source = \"esxtop\" runs esxtop "
                              "on the ESXi host over SSH", "set esxtop_ssh = \"root@<esxi host>\" (key-based login), "
                              "or host_cpu_source = \"vsphere\"")
        self.runner = runner or PwshRunner(o["pwsh"], connection, timeout=o["call_timeout"], redact=redact)
        self._original: dict[str, Any] | None = None
        self._want: dict[str, int] = {}
        self._tuned = False  # the host tuning may differ from the original: restore must set it back
        self._tuning_applied = False  # the wanted tuning is in force
        self.tuning_in_force: dict[str, Any] | None = None
        self._restored = False
        self.last_apply: dict[str, Any] | None = None

    # --- connection facts and checks ------------------------------------------------------------------
    def _check_credentials(self) -> None:
        """Fail before the first pwsh call when the environment lacks the variables (names only)."""
        o = self.opts
        if o["credential_source"] == "env":
            missing = [n for n in (o["user_env"], o["password_env"]) if not os.environ.get(n)]
            if missing:
                raise InputError(f"[vmware] credential_source = \"env\": environment variable(s) {', '.join(missing)} "
                                 "not set; set them in the shell that runs stormatrix (never in the matrix file)")

    def _ready_timeout(self) -> int:
        return int(min(7200, max(5, self.spec.run["boot_timeout_seconds"])))

    def _tuning_wanted(self) -> dict[str, int]:
        o = self.opts
        want: dict[str, int] = {}
        if o["sched_num_req_outstanding"] > 0:
            want["SchedNumReqOutstanding"] = o["sched_num_req_outstanding"]
        if o["latency_threshold_ms"] >= 0:
            want["LatencySensitiveThreshold"] = o["latency_threshold_ms"]
        if want and not (o["esx_host"] and o["device"]):
            raise InputError("[vmware] host tuning needs esx_host and device (the esxcli device under test)")
        return want

    # --- prepare ----------------------------------------------------------------------------------------
    def _prepare(self) -> dict[str, Any]:
        """Reads only: the layout and the esxcli values. The runner journals :meth:`original_config`
        after this, and the tuning is changed by the first :meth:`apply`, so a crash at any moment
        leaves a journal from which ``stormatrix restore`` puts everything back."""
        self._check_credentials()
        want = self._tuning_wanted()
        o = self.opts
        layout = self.runner.call("Get-StormatrixVMwareLayout", {"VMName": o["vm"], "DiskName": o["test_disk"]})
        if not layout.get("Controller"):
            raise InputError(f"[vmware] test_disk = {o['test_disk']!r} of VM {o['vm']!r} is not on a SCSI or NVMe "
                             "controller (IDE/SATA disks are not moved by stormatrix)")
        server = getattr(self.runner, "server", None)
        tuning: dict[str, Any] | None = None
        if o["esx_host"] and o["device"]:
            tuning = self.runner.call("Get-StormatrixVMwareHostTuning", {"VMHost": o["esx_host"], "Device": o["device"]})
        self._original = {"kind": "vmware", "server": o["server"], "vm": o["vm"], "test_disk": o["test_disk"],
                          "layout": layout, "tuning": tuning}
        self._want = want
        self._tuned = self._tuning_applied = False
        self.tuning_in_force = tuning
        self._restored = False
        return {"vsphere": server, "vm": o["vm"], "test_disk": o["test_disk"], "volume": layout["Disk"]["Filename"],
                "original_controller": layout["Controller"]["Type"], "tuning_original": tuning,
                "tuning_wanted": want or None, "host_cpu_source": o["host_cpu_source"]}

    def _apply_tuning(self) -> None:
        """The technote's esxcli settings, once per run, before the first cell's change."""
        if not self._want or self._tuning_applied:
            return
        o = self.opts
        self._tuned = True  # from here on restore puts the originals back, even if this call fails half-way
        result = self.runner.call("Set-StormatrixVMwareHostTuning", {"VMHost": o["esx_host"], "Device": o["device"],
                                                                    **self._want})
        after = result.get("After") or {}
        wrong = {k: after.get(k) for k, v in self._want.items() if after.get(k) != v}
        if wrong:
            raise BackendError(f"esxcli on {o['esx_host']} {o['device']}: asked for {self._want}, the host reports {wrong}")
        self.tuning_in_force = after
        self._tuning_applied = True

    def original_config(self) -> dict[str, Any] | None:
        return self._original

    def load_original(self, original: dict[str, Any]) -> None:
        """For ``stormatrix restore``: the journaled original instead of one read by :meth:`prepare`.
        Checked key by key, since a damaged journal must not send half a layout to vSphere."""
        if original.get("kind") != "vmware":
            raise InputError("the journaled original configuration is not a VMware one")
        if original.get("vm") != self.opts["vm"] or original.get("test_disk") != self.opts["test_disk"]:
            raise InputError(f"the journaled original configuration is for VM {original.get('vm')!r} "
                             f"{original.get('test_disk')!r}, the journaled matrix's [vmware] section for "
                             f"{self.opts['vm']!r} {self.opts['test_disk']!r}")
        check_original(original)
        self._check_credentials()
        self._original = original
        self._tuned = bool(original.get("tuning"))
        self._tuning_applied = False
        self._restored = False

    # --- apply ----------------------------------------------------------------------------------------
    def _keep_keys(self) -> list[int]:
        assert self._original is not None
        return [int(c["Key"]) for c in self._original["layout"]["Controllers"]]

    def _apply(self, disk: DiskConfig) -> None:
        if self._original is None:
            raise BackendError("apply before prepare: the original layout is not known")
        if disk.controller not in CONTROLLER_TYPES:
            raise InputError(f"controller {disk.controller!r} does not exist on ESXi "
                             f"(use one of: {', '.join(sorted(CONTROLLER_TYPES))})")
        if disk.has_options:  # the cell would be journaled with an aio/cache ESXi never had
            raise InputError(f"{disk.key}: ESXi has no aio, iothread or cache setting; an ESXi cell is the "
                             f"controller alone (DiskConfig.controller_only({disk.controller!r}), as expand() "
                             "plans it)")
        o = self.opts
        want = CONTROLLER_TYPES[disk.controller]
        self._restored = False
        self._apply_tuning()
        result = self.runner.call("Set-StormatrixVMwareController", {
            "VMName": o["vm"], "DiskName": o["test_disk"], "Type": want, "KeepControllerKey": self._keep_keys(),
            "ReadyTimeoutSeconds": self._ready_timeout()})
        self.last_apply = result
        self._verify_apply(result, want)

    def _verify_apply(self, result: dict[str, Any], want: str) -> None:
        """Trust but verify the module's answer: the cell is only valid if the guest booted with the
        disk (the same file) on a controller of the cell's type."""
        assert self._original is not None
        after = result.get("After") or {}
        before = result.get("Before") or {}
        where = f"VM {self.opts['vm']!r} {self.opts['test_disk']!r}"
        if (after.get("Controller") or {}).get("Type") != want:
            raise BackendError(f"{where}: after the change it is on {(after.get('Controller') or {}).get('Type')!r}, "
                               f"not {want}")
        original_file = self._original["layout"]["Disk"]["Filename"]
        if (after.get("Disk") or {}).get("Filename") != original_file:
            raise BackendError(f"{where}: backed by {(after.get('Disk') or {}).get('Filename')!r}, "
                               f"originally {original_file!r}")
        if after.get("PowerState") != "PoweredOn" or not result.get("PowerCycled") or \
                (before.get("BootTime") and after.get("BootTime") == before.get("BootTime")):
            raise BackendError(f"{where}: the VM was not power-cycled, so the guest may still see the old controller")

    # --- scope, endpoints ---------------------------------------------------------------------------
    def scope(self) -> list[HostScope]:
        """No QEMU process on ESXi: pid 0 and no threads. Use :meth:`collector_factory`, not the
        Linux collector, for this scope."""
        return [HostScope(pid=0, threads={}, vm=self.opts["vm"], ssh=None)]

    def collector_factory(self, scope: HostScope) -> "VmwareCpuCollector | EsxtopCollector":
        vm = scope.vm or self.opts["vm"]
        if self.opts["host_cpu_source"] == "esxtop":
            return EsxtopCollector(self, vm)
        return VmwareCpuCollector(self, vm)

    def endpoints(self) -> list[GuestEndpoint]:
        if self.opts["guest_host"]:
            return [GuestEndpoint(kind="tcp", address=self.opts["guest_host"], port=self.opts["guest_port"] or None,
                                  name=self.opts["vm"])]
        raise InputError("[vmware] says nothing about how to reach the guest: set guest_host (and guest_port) "
                         "for the fio-server or WinRM executor")

    # --- stop, restore -------------------------------------------------------------------------------
    def _stop(self) -> None:
        """Nothing between cells: each apply power-cycles the VM; restore decides its final state."""

    def _restore(self) -> None:
        if self._original is None or self._restored:
            return
        errors: list[BaseException] = []
        o, layout = self.opts, self._original["layout"]
        try:
            self.runner.call("Restore-StormatrixVMwareLayout", {
                "VMName": o["vm"], "DiskName": o["test_disk"], "ControllerKey": int(layout["Disk"]["ControllerKey"]),
                "ControllerType": layout["Controller"]["Type"], "KeepControllerKey": self._keep_keys(),
                "Filename": layout["Disk"]["Filename"], "PowerState": layout["PowerState"],
                "UnitNumber": int(layout["Disk"]["UnitNumber"]), "ReadyTimeoutSeconds": self._ready_timeout()})
        except BackendError as exc:  # the host tuning is still put back; this error is raised after
            errors.append(exc)
        tuning = self._original.get("tuning")
        if self._tuned and tuning:
            try:
                self.runner.call("Set-StormatrixVMwareHostTuning", {
                    "VMHost": tuning["VMHost"], "Device": tuning["Device"],
                    "SchedNumReqOutstanding": int(tuning["SchedNumReqOutstanding"]),
                    "LatencySensitiveThreshold": int(tuning["LatencySensitiveThreshold"])})
                self._tuned = self._tuning_applied = False
                self.tuning_in_force = tuning
            except BackendError as exc:
                errors.append(exc)
        if errors:
            if len(errors) > 1:
                log.error("restoring the host tuning failed too: %s", errors[1])
            raise errors[0]
        self._restored = True


class VmwareCpuCollector:
    """The host collector for ESXi: remembers the window's edges and asks vSphere for the VM's and
    the host's CPU over exactly that window when it closes (realtime samples are kept ~1 hour)."""

    def __init__(self, backend: VmwareBackend, vm: str) -> None:
        self.backend = backend
        self.vm = vm
        self.t0: datetime | None = None

    def start(self) -> None:
        self.t0 = datetime.now(timezone.utc)

    def stop(self) -> dict[str, Any]:
        if self.t0 is None:
            raise CollectorError("the vSphere collector was stopped before it started")
        t1 = datetime.now(timezone.utc)
        o = self.backend.opts
        params: dict[str, Any] = {"VMName": self.vm, "Start": _iso(self.t0), "Finish": _iso(t1),
                                  "WaitSeconds": int(o["stats_wait_seconds"])}
        if o["esx_host"]:
            params["VMHost"] = o["esx_host"]
        host = self.backend.runner.call("Get-StormatrixVMwareCpuUsage", params)
        if not isinstance(host, dict) or host.get("cpu_metric") != "cpu_time":
            raise CollectorError(f"Get-StormatrixVMwareCpuUsage answered {type(host).__name__}, not a host record")
        if isinstance(host.get("vmware"), dict):
            host["vmware"]["tuning_in_force"] = self.backend.tuning_in_force
        return host

    def abort(self) -> None:
        self.t0 = None


class EsxtopCollector:
    """The host collector for ESXi from ``esxtop -b`` on the host, over SSH, for the window.

    ``start()`` runs ``ssh -o BatchMode=yes <esxtop_ssh> -- esxtop -b -d D -n N`` with N iterations
    covering the planned window plus one (a window runs a little longer than measure_seconds), writing
    the capture into the run directory (``esxtop/<time>-<vm>.csv``, kept as evidence). ``stop()`` waits
    for esxtop to finish its last iteration (at most about 2 x D after the window) and turns the capture
    into the host record with :func:`stormatrix.analysis.esxtop.vm_cpu_record`: the window is taken to
    start with esxtop's first snapshot (the SSH connect, well under a second on a LAN, is not corrected
    for) and to last as long as this machine measured. BatchMode means a key login or nothing: ssh never
    asks for a password.
    """

    MIN_COVERAGE = 0.8  # a capture covering less of the window is refused, not prorated

    def __init__(self, backend: VmwareBackend, vm: str) -> None:
        self.backend = backend
        self.vm = vm
        self.delay = int(backend.opts["esxtop_delay_seconds"])
        self.clock = time.monotonic
        self.proc: subprocess.Popen[bytes] | None = None
        self.path: Path | None = None
        self.iterations = 0
        self.t0: float | None = None

    def argv(self, iterations: int) -> list[str]:
        return ["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10", self.backend.opts["esxtop_ssh"], "--",
                "esxtop", "-b", "-d", str(self.delay), "-n", str(iterations)]

    def start(self) -> None:
        self.iterations = max(1, math.ceil(self.backend.spec.timing.measure_s / self.delay)) + 1
        folder = self.backend.workdir / "esxtop"
        folder.mkdir(parents=True, exist_ok=True)
        slug = re.sub(r"[^A-Za-z0-9._-]+", "_", self.vm).strip("_") or "vm"
        self.path = folder / f"{datetime.now(timezone.utc):%Y%m%dT%H%M%S%f}-{slug}.csv"
        argv = self.argv(self.iterations)
        log.debug("esxtop: %s", argv)
        with open(self.path, "wb") as out, open(self.path.with_suffix(".stderr"), "wb") as err:
            try:
                self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
            except OSError as exc:
                raise CollectorError(f"cannot run ssh for esxtop: {exc}. Fix: install an OpenSSH client on this "
                                     "workstation") from None
        self.t0 = self.clock()

    def _stderr(self) -> str:
        assert self.path is not None
        try:
            return self.path.with_suffix(".stderr").read_text(errors="replace").strip()[-500:]
        except OSError:
            return ""

    def stop(self) -> dict[str, Any]:
        if self.proc is None or self.t0 is None or self.path is None:
            raise CollectorError("the esxtop collector was stopped before it started")
        window = self.clock() - self.t0
        target = self.backend.opts["esxtop_ssh"]
        try:
            rc = self.proc.wait(timeout=self.iterations * self.delay + 60)
        except subprocess.TimeoutExpired:
            self.abort()
            raise CollectorError(f"esxtop on {target} did not finish {self.iterations} iterations of "
                                 f"{self.delay} s within {self.iterations * self.delay + 60} s") from None
        finally:
            self.proc = None
        if rc != 0:
            raise CollectorError(f"ssh {target} esxtop exited {rc}: {self._stderr() or 'no message'}. Fix: start the "
                                 "SSH service on the host (TSM-SSH) and put this workstation's public key into "
                                 "/etc/ssh/keys-root/authorized_keys, or set [vmware] host_cpu_source = \"vsphere\"")
        from ..analysis.esxtop import read_esxtop, vm_cpu_record

        try:
            capture = read_esxtop(self.path)
            host = vm_cpu_record(capture, self.vm, delay_s=self.delay, window_s=window)
        except InputError as exc:
            raise CollectorError(f"esxtop capture: {exc}") from None
        coverage = host["vmware"]["coverage"]
        if coverage < self.MIN_COVERAGE:
            raise CollectorError(f"esxtop capture {self.path}: it covers {coverage:.0%} of the {window:.1f} s window "
                                 f"(minimum {self.MIN_COVERAGE:.0%}); the window is not measured")
        try:
            host["vmware"]["capture"] = str(self.path.relative_to(self.backend.workdir))
        except ValueError:
            host["vmware"]["capture"] = str(self.path)
        host["vmware"]["iterations"] = self.iterations
        host["vmware"]["tuning_in_force"] = self.backend.tuning_in_force
        return host

    def abort(self) -> None:
        """Stop esxtop (the cell failed mid-window); the partial capture stays for a look."""
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
