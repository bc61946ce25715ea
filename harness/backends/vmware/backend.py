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

The pieces: :mod:`.settings` (the ``[vmware]`` section), :mod:`.pwsh` (the pwsh call, the JSON
protocol and the typed errors), :mod:`.cpu` (the two host CPU collectors) and this module (the
backend and the journaled original); everything is importable from here.

What differs from Proxmox: there is no QEMU process, so no per-thread accounting, no block stats
cross-check and no context-switch count; host CPU comes from vSphere's realtime statistics
(:class:`VmwareCpuCollector`) or from ``esxtop`` batch output read over SSH (:class:`EsxtopCollector`,
``[vmware] host_cpu_source = "esxtop"``), and the record says which.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from ...core.errors import (BackendError, InputError, MatrixError, PowerCLIConnectError, PowerCLIContractError,
                            PowerCLIError, PowerCLIGuestNotReady, PowerCLINotFound, PowerCLIStatsError,
                            PowerCLIUnavailable, StormatrixError)
from ...core.model import DiskConfig
from ...core.scope import GuestEndpoint, HostScope
from ...spec import MatrixSpec
from ..base import Backend
from .cpu import EsxtopCollector, VmwareCpuCollector, iso_utc
from .pwsh import (ENTRY_SCRIPT, MODULE_DIR, PYTHON_CALLS, RESPONSE_PREFIX, SCHEMA, PwshRunner, build_request,
                   error_from_response, parse_response, pwsh_argv)
from .settings import (CONTROLLER_TYPES, FILE_PASSWORD_VARIABLE, VMWARE_SECTION, connection,
                       credentials_for_child)

__all__ = ["CONTROLLER_TYPES", "ENTRY_SCRIPT", "EsxtopCollector", "FILE_PASSWORD_VARIABLE", "MODULE_DIR",
           "PYTHON_CALLS", "PowerCLIConnectError", "PowerCLIContractError", "PowerCLIError", "PowerCLIGuestNotReady",
           "PowerCLINotFound", "PowerCLIStatsError", "PowerCLIUnavailable", "PwshRunner", "RESPONSE_PREFIX",
           "SCHEMA", "VMWARE_SECTION", "VmwareBackend", "VmwareCpuCollector", "build_request", "check_original",
           "error_from_response", "iso_utc", "parse_response", "pwsh_argv"]

log = logging.getLogger("stormatrix.backend.vmware")

# --- the journaled original ----------------------------------------------------------------------------------

# How a wrong-typed journal value is described (keyed by object: a kind may also be a tuple of types)
_KIND_NAMES: dict[object, str] = {int: "a whole number", str: "a string", list: "a list"}


def check_original(original: dict[str, Any]) -> None:
    """Refuse a journaled original that lacks what restore sends to the module (a hand-edited or damaged
    journal), naming the key: better no restore than half a layout sent to vSphere."""
    def need(path: str, kind: type | tuple[type, ...], choices: tuple[str, ...] = ()) -> Any:
        value: Any = original
        for part in path.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        ok = isinstance(value, kind) and not isinstance(value, bool) and (not choices or value in choices)
        if not ok:
            what = f"one of {', '.join(choices)}" if choices else _KIND_NAMES.get(kind, str(kind))
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
    host_scope_why = ("ESXi's CPU figures are its own, per VM (vSphere statistics or esxtop: [vmware] "
                      "host_cpu_source), not a Linux CPU set")
    spec: MatrixSpec  # a matrix run's: the backend reads the executor's section (the test disk's serial)

    def __init__(self, spec: MatrixSpec, workdir: Path, *, runner: PwshRunner | None = None) -> None:
        super().__init__(spec, workdir)
        if "vmware" not in spec.sections:
            raise MatrixError(spec.path, "[vmware]", "is missing",
                              "add a [vmware] section with server, vm, test_disk and the credential settings")
        # ESXi has no aio, cache or iothread setting: expand() plans each controller once, as the
        # controller alone, whatever [matrix] lists for them (and `plan` says so)
        self.opts: dict[str, Any] = dict(spec.section("vmware"))
        o = self.opts
        explicit = (spec.raw.get("vmware") or {}) if isinstance(spec.raw, dict) else {}
        self._connection = connection(o, explicit, spec.path)
        if o["host_cpu_source"] == "esxtop" and not o["esxtop_ssh"]:
            raise MatrixError(spec.path, "[vmware] esxtop_ssh",
                              "is empty, but host_cpu_source = \"esxtop\" runs esxtop on the ESXi host over SSH",
                              "set esxtop_ssh = \"root@<esxi host>\" (key-based login), "
                              "or host_cpu_source = \"vsphere\"")
        self.runner = runner or PwshRunner(o["pwsh"], self._connection.parameters, timeout=o["call_timeout"],
                                           redact=self._connection.redact)
        self._original: dict[str, Any] | None = None
        self._want: dict[str, int] = {}
        self._tuned = False  # the host tuning may differ from the original: restore must set it back
        self._tuning_applied = False  # the wanted tuning is in force
        self.tuning_in_force: dict[str, Any] | None = None
        self._restored = False
        self.last_apply: dict[str, Any] | None = None

    # --- connection facts and checks ------------------------------------------------------------------
    def _check_credentials(self) -> None:
        """Fail before the first pwsh call when the user or the password is missing (by name only); a
        password from a file is read here and given to pwsh's environment, registered for scrubbing."""
        child_env = credentials_for_child(self._connection, self.opts)
        if isinstance(self.runner, PwshRunner):
            self.runner.child_env.update(child_env)

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
        self._check_disk_serial(layout)
        server = getattr(self.runner, "server", None)
        tuning: dict[str, Any] | None = None
        if o["esx_host"] and o["device"]:
            tuning = self.runner.call("Get-StormatrixVMwareHostTuning",
                                      {"VMHost": o["esx_host"], "Device": o["device"]})
        self._original = {"kind": "vmware", "server": o["server"], "vm": o["vm"], "test_disk": o["test_disk"],
                          "layout": layout, "tuning": tuning}
        self._want = want
        self._tuned = self._tuning_applied = False
        self.tuning_in_force = tuning
        self._restored = False
        return {"vsphere": server, "vm": o["vm"], "test_disk": o["test_disk"], "volume": layout["Disk"]["Filename"],
                "original_controller": layout["Controller"]["Type"], "tuning_original": tuning,
                "tuning_wanted": want or None, "host_cpu_source": o["host_cpu_source"],
                "disk_enable_uuid": layout.get("DiskEnableUUID")}

    def host_inventory(self) -> dict[str, Any] | None:
        """The ESXi host that runs the VM (or ``[vmware] esx_host``), from PowerCLI's VMHost object: ESXi
        version and build, CPU model and counts. The keys are inventory.py's where they mean the same
        (``host``, ``cpu_model``, ``cpus`` = logical CPUs); a failure is said, not filled with this machine's."""
        o = self.opts
        try:
            info = self.runner.call("Get-StormatrixVMwareHostInfo", {"VMName": o["vm"], "VMHost": o["esx_host"]})
        except StormatrixError as exc:  # any failed module call (PowerCLI missing too): said, not guessed
            return {"host_inventory_error": f"ESXi host of VM {o['vm']} not described: {exc}"}
        return {"host": info.get("Name"), "esxi_version": info.get("Version"), "esxi_build": info.get("Build"),
                "cpu_model": info.get("CpuModel"), "cpus": info.get("CpuThreads"),
                "cpu_packages": info.get("CpuPackages"), "cpu_cores": info.get("CpuCores"),
                "cpu_mhz": info.get("CpuMhz"),
                "host_inventory_source": f"PowerCLI Get-VMHost through {o['server']}"}

    def _check_disk_serial(self, layout: dict[str, Any]) -> None:
        """The WinRM executor finds the test disk by its serial number, and ESXi gives a guest's disks a
        serial (the disk UUID) only when the VM has disk.EnableUUID = TRUE: without it the run would
        reconfigure and power-cycle the VM and then fail in the guest. Say exactly what to set, now."""
        if self.spec.run.get("executor") != "winrm":
            return
        name = self.opts["vm"]
        uuid = str((layout.get("Disk") or {}).get("Uuid") or "")
        if layout.get("DiskEnableUUID") is not False:
            wanted = str(self.spec.section("winrm").get("disk_serial") or "")
            expected = uuid.replace("-", "").lower()
            if wanted and expected and wanted.replace("-", "").replace(" ", "").lower() != expected:
                # a warning, not an error: the serial format is VMware's convention, not checked on a real guest here
                log.warning("[winrm] disk_serial = %r, but %s of VM %r has the UUID %s: with disk.EnableUUID = TRUE "
                            "the guest should see the serial %s", wanted, self.opts["test_disk"], name, uuid, expected)
            return
        serial = (f" (for {self.opts['test_disk']}: {uuid.replace('-', '').lower()}, its UUID without dashes)"
                  if uuid else "")
        quoted = name.replace("'", "''")
        raise InputError(
            f"VM {name!r} does not have disk.EnableUUID = TRUE, so ESXi gives its disks no serial number and the "
            "WinRM executor cannot find the test disk by [winrm] disk_serial. Fix: with the VM powered off, in the "
            "vSphere Client open Edit Settings > VM Options > Advanced > Configuration Parameters > Edit "
            "Configuration and add disk.EnableUUID = TRUE; or in PowerCLI run\n"
            f"New-AdvancedSetting -Entity (Get-VM -Name '{quoted}') -Name disk.EnableUUID -Value TRUE "
            "-Force -Confirm:$false\n"
            f"then power the VM on: the guest sees each disk's UUID as its serial{serial}")

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
            raise BackendError(
                f"esxcli on {o['esx_host']} {o['device']}: asked for {self._want}, the host reports {wrong}")
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
        except StormatrixError as exc:  # any failed call (VMware Tools late too): the host tuning is still put
            # back; this error is raised after
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
            except StormatrixError as exc:
                errors.append(exc)
        if errors:
            if len(errors) > 1:
                log.error("restoring the host tuning failed too: %s", errors[1])
            raise errors[0]
        self._restored = True
