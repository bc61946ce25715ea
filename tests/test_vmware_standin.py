"""A stand-in for ``pwsh`` + the StormatrixVMware module + vSphere, for the Python backend's tests.

PowerShell 7 and PowerCLI cannot be installed on this machine, so the backend's tests run this file as
its ``pwsh`` (a launcher in tmp_path imports :func:`main`). It implements the module's documented
contract, not "whatever Python sends":

- the command line must be exactly ``-NoLogo -NoProfile -NonInteractive -File <the module's
  stormatrix-vmware.ps1>``; a password found in argv or in the request is a hard failure;
- the command must be one of the module's allowed commands, and the parameters are bound against the
  real ``param()`` blocks of ``windows/StormatrixVMware/Public/*.ps1`` (unknown names, missing
  mandatory ones and ValidateSet violations fail with PowerShell's error ids);
- the connection reads credentials from the environment variables the request NAMES, refuses a
  self-signed server when certificate checks are on;
- the VM is a state file: controllers, disks, power state, boot count. Moving a disk needs the VM
  powered off and never removes it; a controller is only removed when empty; the guest sees a new
  controller only after a power-on (``booted_with``); esxcli values per device;
- faults can be injected at a named step (``Stop-VM``, ``Set-HardDisk``, ``New-ScsiController``,
  ``Start-VM``, ``Wait-Tools``, ``esxcli:storage.core.device.latencythreshold.set``, ...), leaving
  the half-done state the module documents;
- ``hang`` names a step at which the stand-in saves the VM as it is at that moment, writes its pid
  (``hung_pid``) and sleeps, so a test can kill the harness (and this process) in the middle of a
  reconfiguration, as a power loss of the workstation would.

The tests at the bottom check the stand-in itself enforces these rules.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MODULE = ROOT / "windows" / "StormatrixVMware"
ENTRY = MODULE / "stormatrix-vmware.ps1"
PREFIX = "STORMATRIX-JSON:"
ALLOWED = ("Get-StormatrixVMwareLayout", "Set-StormatrixVMwareController", "Restore-StormatrixVMwareLayout",
           "Get-StormatrixVMwareHostTuning", "Set-StormatrixVMwareHostTuning", "Get-StormatrixVMwareCpuUsage")
TYPES = ("ParaVirtual", "LsiLogicSAS", "LsiLogic", "BusLogic", "NVMe")
_STATE_PATH: Path | None = None  # set by main(): where a hung step saves the VM


# --- the module's parameter contract, read from its source -----------------------------------------------

def param_specs(path: Path) -> dict[str, dict[str, Any]]:
    """name -> {mandatory, choices} from a function's param() block (attributes before each $Name)."""
    text = path.read_text(encoding="utf-8")
    start = text.index("param(")
    depth, i = 0, start + len("param")
    while True:
        depth += text[i] == "("
        depth -= text[i] == ")"
        i += 1
        if depth == 0:
            break
    block = text[start + len("param("):i - 1]
    specs: dict[str, dict[str, Any]] = {}
    for m in re.finditer(r"((?:\[[^\]\[]*(?:\[[^\]]*\][^\]\[]*)*\]\s*)+)\$([A-Za-z]\w*)", block):
        attrs, name = m.group(1), m.group(2)
        choices = re.search(r"ValidateSet\(([^)]*)\)", attrs)
        specs[name] = {"mandatory": "Mandatory" in attrs,
                       "choices": re.findall(r"'([^']*)'", choices.group(1)) if choices else None}
    return specs


def contract() -> dict[str, dict[str, dict[str, Any]]]:
    return {p.stem: param_specs(p) for p in sorted((MODULE / "Public").glob("*.ps1"))}


# --- the stand-in ----------------------------------------------------------------------------------------

class Fault(Exception):
    def __init__(self, error_id: str, message: str, powercli: str | None = None, category: str = "InvalidOperation"):
        super().__init__(message)
        self.error_id, self.powercli, self.category = error_id, powercli, category


def new_state(**over: Any) -> dict[str, Any]:
    """A VM with a pvscsi boot controller, an LSI SAS controller holding the test disk, an ESXi device."""
    state: dict[str, Any] = {
        "vm": {"name": "bench01", "id": "VirtualMachine-vm-42", "power": "PoweredOn", "boots": 1,
               "controllers": [{"key": 1000, "type": "ParaVirtual", "bus": 0},
                               {"key": 1001, "type": "LsiLogicSAS", "bus": 1}],
               "disks": [{"key": 2000, "name": "Hard disk 1", "file": "[ds1] bench01/bench01.vmdk", "controller": 1000, "unit": 0},
                         {"key": 2016, "name": "Hard disk 2", "file": "[ds1] bench01/bench01_1.vmdk", "controller": 1001, "unit": 0}],
               "booted_with": {}},
        "host": {"name": "esx01.lab", "devices": {"naa.600a": {"sched": 32, "latency": 0}}},
        "credentials": {"user": "administrator@vsphere.local", "password": "s3cr3t-Pa55"},
        "self_signed": False,
        "faults": {},
        "calls": [],
        "requests": [],
    }
    state.update(over)
    _boot(state["vm"])
    state["vm"]["boots"] = 1
    return state


def _boot(vm: dict[str, Any]) -> None:
    vm["boots"] += 1
    types = {c["key"]: c["type"] for c in vm["controllers"]}
    vm["booted_with"] = {d["name"]: types[d["controller"]] for d in vm["disks"]}


def _boot_time(vm: dict[str, Any]) -> str | None:
    if vm["power"] != "PoweredOn":
        return None
    return f"2026-11-22T03:{vm['boots'] % 60:02d}:00.0000000Z"


class StandIn:
    def __init__(self, state: dict[str, Any]) -> None:
        self.s = state
        self.vm: dict[str, Any] = state["vm"]

    # PowerCLI-level steps, each one a recorded call that may carry an injected fault
    def step(self, name: str, **params: Any) -> None:
        self.s["calls"].append({"cmdlet": name, **params})
        if self.s.get("hang") == name and _STATE_PATH is not None:
            self.s["hang"] = None
            self.s["hung_pid"] = os.getpid()
            _STATE_PATH.write_text(json.dumps(self.s, indent=1))
            time.sleep(600)
        fault = self.s["faults"].pop(name, None)
        if fault:
            raise Fault("PowerCLI", fault)

    def _reconfigure_allowed(self, what: str) -> None:
        if self.vm["power"] != "PoweredOff":
            raise Fault("PowerCLI", f"{what}: The attempted operation cannot be performed in the current state (Powered on).")

    # --- layout
    def resolve(self, vm_name: str, disk_name: str | None) -> dict[str, Any] | None:
        if vm_name != self.vm["name"]:
            raise Fault("Stormatrix.VMware.VmNotFound", f"VM '{vm_name}' not found",
                        f"Get-VM\t\tVM with name '{vm_name}' was not found using the specified filter(s).", "ObjectNotFound")
        if disk_name is None:
            return None
        disks = [d for d in self.vm["disks"] if d["name"] == disk_name]
        if len(disks) != 1:
            raise Fault("Stormatrix.VMware.DiskNotFound", f"VM '{vm_name}' has no hard disk '{disk_name}'", None, "ObjectNotFound")
        return disks[0]

    def controllers(self) -> list[dict[str, Any]]:
        out = []
        for c in sorted(self.vm["controllers"], key=lambda c: c["key"]):
            names = {"NVMe": "NVMe controller"}
            out.append({"Key": c["key"], "Name": f"{names.get(c['type'], 'SCSI controller')} {c['bus']}", "Type": c["type"],
                        "Bus": c["bus"], "Disks": [d["key"] for d in self.vm["disks"] if d["controller"] == c["key"]]})
        return out

    def layout(self, disk: dict[str, Any]) -> dict[str, Any]:
        ctrls = self.controllers()
        own = [c for c in ctrls if c["Key"] == disk["controller"]]
        return {"VMName": self.vm["name"], "VMId": self.vm["id"], "PowerState": self.vm["power"],
                "BootTime": _boot_time(self.vm),
                "Disk": {"Name": disk["name"], "Filename": disk["file"], "Key": disk["key"], "ControllerKey": disk["controller"],
                         "UnitNumber": disk["unit"], "CapacityGB": 8.0},
                "Controller": {k: own[0][k] for k in ("Key", "Name", "Type", "Bus")} if own else None,
                "Controllers": ctrls}

    # --- power
    def power(self, state: str) -> None:
        if state == "Off":
            try:
                self.step("Stop-VM", VM=self.vm["name"], Confirm=False)
            except Fault as f:
                raise Fault("Stormatrix.VMware.PowerOffFailed", f"powering off VM '{self.vm['name']}' failed: {f}", str(f))
            self.vm["power"] = "PoweredOff"
            return
        try:
            self.step("Start-VM", VM=self.vm["name"], Confirm=False)
        except Fault as f:
            raise Fault("Stormatrix.VMware.PowerOnFailed", f"powering on VM '{self.vm['name']}' failed: {f}", str(f))
        self.vm["power"] = "PoweredOn"
        _boot(self.vm)
        try:
            self.step("Wait-Tools", VM=self.vm["name"])
        except Fault as f:
            raise Fault("Stormatrix.VMware.GuestNotReady", f"VMware Tools in VM '{self.vm['name']}' did not start: {f}",
                        str(f), "OperationTimeout")

    # --- controllers
    def _set_disk_controller(self, disk: dict[str, Any], key: int) -> None:
        self._reconfigure_allowed("Set-HardDisk")
        self.step("Set-HardDisk", HardDisk=disk["name"], Controller=key, Confirm=False)
        used = {d["unit"] for d in self.vm["disks"] if d["controller"] == key}
        disk["controller"] = key
        disk["unit"] = min(u for u in range(0, 65) if u not in used and u != 7)

    def _new_controller(self, type_: str) -> int:
        nvme = type_ == "NVMe"
        family = [c for c in self.vm["controllers"] if (c["type"] == "NVMe") == nvme]
        bus = min(b for b in range(4) if b not in {c["bus"] for c in family})
        key = (31000 if nvme else 1000) + bus
        self.vm["controllers"].append({"key": key, "type": type_, "bus": bus})
        return key

    def move(self, disk: dict[str, Any], type_: str, controller_key: int = -1) -> None:
        ctrls = self.controllers()
        target = next((c for c in ctrls if c["Key"] == controller_key), None) if controller_key >= 0 else None
        if target is None:
            target = next((c for c in ctrls if c["Type"] == type_ and not c["Disks"]), None)
        if target is None:
            family = [c for c in ctrls if (c["Type"] == "NVMe") == (type_ == "NVMe")]
            if len(family) >= 4:
                raise Fault("Stormatrix.VMware.ControllerLimit", f"VM '{self.vm['name']}' already has 4 controllers",
                            None, "LimitsExceeded")
        try:
            if target is not None:
                self._set_disk_controller(disk, target["Key"])
            elif type_ == "NVMe":
                self._reconfigure_allowed("New-NvmeController")
                self.step("New-NvmeController", VM=self.vm["name"])
                key = self._new_controller("NVMe")
                self._set_disk_controller(disk, key)
            else:
                self._reconfigure_allowed("New-ScsiController")
                powercli = {"ParaVirtual": "ParaVirtual", "LsiLogicSAS": "VirtualLsiLogicSAS", "LsiLogic": "VirtualLsiLogic"}
                self.step("New-ScsiController", HardDisk=disk["name"], Type=powercli[type_], Confirm=False)
                key = self._new_controller(type_)
                used = {d["unit"] for d in self.vm["disks"] if d["controller"] == key}
                disk["controller"], disk["unit"] = key, min(u for u in range(16) if u not in used)
        except Fault as f:
            if f.error_id.startswith("Stormatrix."):
                raise
            raise Fault("Stormatrix.VMware.DiskMoveFailed",
                        f"moving '{disk['name']}' of VM '{self.vm['name']}' to a {type_} controller failed: {f}", str(f))

    def remove_controller(self, key: int) -> None:
        ctrl = next(c for c in self.controllers() if c["Key"] == key)
        if ctrl["Disks"]:
            raise Fault("Stormatrix.VMware.ControllerNotEmpty", f"controller {key} still holds disks {ctrl['Disks']}: not removed")
        self._reconfigure_allowed("ReconfigVM")
        try:
            self.step("ReconfigVM", Operation="remove", Device=key)
        except Fault as f:
            raise Fault("Stormatrix.VMware.ControllerRemoveFailed", f"removing controller {key} failed: {f}", str(f))
        self.vm["controllers"] = [c for c in self.vm["controllers"] if c["key"] != key]

    # --- the module's public functions (same order of steps as the PowerShell)
    def get_layout(self, p: dict[str, Any]) -> dict[str, Any]:
        disk = self.resolve(p["VMName"], p["DiskName"])
        assert disk is not None
        return self.layout(disk)

    def set_controller(self, p: dict[str, Any]) -> dict[str, Any]:
        disk = self.resolve(p["VMName"], p["DiskName"])
        assert disk is not None
        before = self.layout(disk)
        if before["PowerState"] == "PoweredOn":
            self.power("Off")
        moved = False
        if not before["Controller"] or before["Controller"]["Type"] != p["Type"]:
            self.move(disk, p["Type"])
            moved = True
        keep = set(p.get("KeepControllerKey") or []) | {disk["controller"]}
        for c in self.controllers():
            if c["Key"] not in keep and not c["Disks"]:
                self.remove_controller(c["Key"])
        self.power("On")
        after = self.layout(disk)
        if after["Controller"]["Type"] != p["Type"]:
            raise Fault("Stormatrix.VMware.ControllerNotApplied", "not on the wanted controller")
        return {"Before": before, "After": after, "Moved": moved, "PowerCycled": True}

    def restore(self, p: dict[str, Any]) -> dict[str, Any]:
        disk = self.resolve(p["VMName"], p["DiskName"])
        assert disk is not None
        now = self.layout(disk)
        if disk["file"] != p["Filename"]:
            raise Fault("Stormatrix.VMware.DiskChanged", f"'{disk['name']}' is backed by {disk['file']}, not by {p['Filename']}")
        keep = set(p["KeepControllerKey"])
        extra = [c for c in now["Controllers"] if c["Key"] not in keep]
        needs_move = disk["controller"] != p["ControllerKey"]
        changed, removed = False, []
        if needs_move or extra:
            changed = True
            if self.vm["power"] == "PoweredOn":
                self.power("Off")
            if needs_move:
                self.move(disk, p["ControllerType"], p["ControllerKey"])
            for c in self.controllers():
                if c["Key"] not in keep and c["Key"] != disk["controller"]:
                    self.remove_controller(c["Key"])
                    removed.append(c["Key"])
        if p["PowerState"] == "PoweredOn" and self.vm["power"] != "PoweredOn":
            changed = True
            self.power("On")
        elif p["PowerState"] == "PoweredOff" and self.vm["power"] != "PoweredOff":
            changed = True
            self.power("Off")
        final = self.layout(disk)
        problems = []
        if disk["controller"] != p["ControllerKey"]:
            problems.append(f"the disk is on controller {disk['controller']}")
        if sorted(c["Key"] for c in final["Controllers"]) != sorted(keep):
            problems.append("controllers differ")
        if final["PowerState"] != p["PowerState"]:
            problems.append(f"the VM is {final['PowerState']}")
        if problems:
            raise Fault("Stormatrix.VMware.RestoreIncomplete", "; ".join(problems))
        unit = p.get("UnitNumber", -1)
        return {"Layout": final, "Changed": changed, "RemovedControllerKeys": removed,
                "UnitNumberChanged": unit >= 0 and final["Disk"]["UnitNumber"] != unit}

    def _device(self, host: str, device: str) -> dict[str, Any]:
        if host != self.s["host"]["name"]:
            raise Fault("Stormatrix.VMware.HostNotFound", f"Get-EsxCli -VMHost {host} failed",
                        f"Get-EsxCli\t\tVMHost with name '{host}' was not found using the specified filter(s).", "ObjectNotFound")
        dev = self.s["host"]["devices"].get(device)
        if dev is None:
            raise Fault("Stormatrix.VMware.DeviceNotFound", f"esxcli storage core device list -d {device} returned 0 devices",
                        None, "ObjectNotFound")
        return dev

    def _esxcli(self, namespace: str, **args: Any) -> None:
        try:
            self.step("esxcli:" + namespace, **args)
        except Fault as f:
            raise Fault("Stormatrix.VMware.EsxCliFailed", f"esxcli {namespace.replace('.', ' ')} failed: {f}", str(f))

    def get_tuning(self, p: dict[str, Any]) -> dict[str, Any]:
        dev = self._device(p["VMHost"], p["Device"])
        return {"VMHost": p["VMHost"], "Device": p["Device"], "SchedNumReqOutstanding": dev["sched"],
                "LatencySensitiveThreshold": dev["latency"]}

    def set_tuning(self, p: dict[str, Any]) -> dict[str, Any]:
        if "SchedNumReqOutstanding" not in p and "LatencySensitiveThreshold" not in p:
            raise Fault("Stormatrix.VMware.NothingToSet", "give -SchedNumReqOutstanding, -LatencySensitiveThreshold or both")
        if not 1 <= p.get("SchedNumReqOutstanding", 1) <= 4096:
            raise Fault("ParameterArgumentValidationError,Set-StormatrixVMwareHostTuning", "SchedNumReqOutstanding out of range")
        before = self.get_tuning(p)
        dev = self._device(p["VMHost"], p["Device"])
        done = []
        try:
            if "SchedNumReqOutstanding" in p:
                self._esxcli("storage.core.device.set", device=p["Device"], schednumreqoutstanding=p["SchedNumReqOutstanding"])
                dev["sched"] = p["SchedNumReqOutstanding"]
                done.append("sched")
            if "LatencySensitiveThreshold" in p:
                self._esxcli("storage.core.device.latencythreshold.set", device=p["Device"],
                             latencysensitivethreshold=p["LatencySensitiveThreshold"])
                dev["latency"] = p["LatencySensitiveThreshold"]
        except Fault as f:
            rollback = "nothing to roll back"
            if "sched" in done:
                self._esxcli("storage.core.device.set", device=p["Device"], schednumreqoutstanding=before["SchedNumReqOutstanding"])
                dev["sched"] = before["SchedNumReqOutstanding"]
                rollback = f"sched-num-req-outstanding put back to {before['SchedNumReqOutstanding']}"
            raise Fault("Stormatrix.VMware.TuningFailed", f"setting the storage tuning failed ({rollback}): {f}", f.powercli)
        return {"Before": before, "After": self.get_tuning(p)}

    def cpu_usage(self, p: dict[str, Any]) -> dict[str, Any]:
        self.resolve(p["VMName"], None)
        self.step("Get-Stat", Entity=p["VMName"], Realtime=True)
        t0 = datetime.fromisoformat(p["Start"].replace("Z", "+00:00"))
        t1 = datetime.fromisoformat(p["Finish"].replace("Z", "+00:00"))
        if t0.tzinfo is None or t1.tzinfo is None or t1 <= t0:
            raise Fault("Stormatrix.VMware.InvalidWindow", f"the window {p['Start']} .. {p['Finish']} is not valid", None, "InvalidArgument")
        window = (t1 - t0).total_seconds()
        used = 1.5 * window
        return {"cpu_metric": "cpu_time", "cpu_unit": "s", "cpu_total": used, "cpu_user": None, "cpu_system": None,
                "cpu_time_s": {"total": used, "user": None, "system": None}, "cycles": None,
                "ctx_switches": None, "ctx_voluntary": None, "ctx_involuntary": None,
                "source": "vsphere-realtime", "scope": "esxi-vm", "pid": None, "vm": p["VMName"], "window_s": window,
                "threads": [], "by_role": {}, "split_approximate": True,
                "unmatched": {"ctx_switches": "vSphere statistics have no context-switch counter for a VM"},
                "vmware": {"interval_s": 20, "prorated": True, "host": p.get("VMHost") or self.s["host"]["name"]}}

    def connect(self, c: dict[str, Any]) -> dict[str, Any]:
        if c.get("VerifyCertificate", True) and self.s["self_signed"]:
            raise Fault("Stormatrix.VMware.ConnectFailed", f"Connect-VIServer {c['Server']} failed",
                        "Connect-VIServer\t\tError: Invalid server certificate. Use Set-PowerCLIConfiguration to set the value "
                        "for the InvalidCertificateAction option to Prompt if you'd like to connect once or to add a permanent "
                        "exception for this server.", "ConnectionError")
        if c.get("CredentialSource", "Environment") == "Environment":
            names = (c.get("UserVariable", "STORMATRIX_VSPHERE_USER"), c.get("PasswordVariable", "STORMATRIX_VSPHERE_PASSWORD"))
            missing = [n for n in names if not os.environ.get(n)]
            if missing:
                raise Fault("Stormatrix.VMware.CredentialMissing", f"environment variable(s) {', '.join(missing)} not set",
                            None, "AuthenticationError")
            user, password = (os.environ[n] for n in names)
        else:
            store = self.s.get("credential_store", {})
            if c["Server"] not in store:
                raise Fault("Stormatrix.VMware.CredentialMissing", f"the PowerCLI credential store has no entry for {c['Server']}",
                            None, "AuthenticationError")
            user, password = store[c["Server"]]
        self.step("Connect-VIServer", Server=c["Server"], User=user)
        if (user, password) != (self.s["credentials"]["user"], self.s["credentials"]["password"]):
            raise Fault("Stormatrix.VMware.ConnectFailed", f"Connect-VIServer {c['Server']} failed: Cannot complete login due to "
                        "an incorrect user name or password.",
                        "Cannot complete login due to an incorrect user name or password.", "ConnectionError")
        return {"Server": c["Server"], "ProductLine": "embeddedEsx", "Version": "7.0.3", "Build": "19193900",
                "VerifyCertificate": c.get("VerifyCertificate", True)}


def bind(command: str, params: dict[str, Any], specs: dict[str, dict[str, Any]]) -> None:
    """PowerShell's parameter binding, as far as the backend can get it wrong."""
    for name, value in params.items():
        if name not in specs:
            raise Fault(f"NamedParameterNotFound,{command}", f"A parameter cannot be found that matches parameter name '{name}'.",
                        None, "InvalidArgument")
        choices = specs[name]["choices"]
        if choices and value not in choices:
            raise Fault(f"ParameterArgumentValidationError,{command}",
                        f"Cannot validate argument on parameter '{name}'. The argument \"{value}\" does not belong to the set "
                        f"\"{','.join(choices)}\" specified by the ValidateSet attribute.", None, "InvalidData")
    missing = [n for n, s in specs.items() if s["mandatory"] and n not in params]
    if missing:
        raise Fault(f"MissingMandatoryParameter,{command}",
                    f"Cannot process command because of one or more missing mandatory parameters: {' '.join(missing)}.",
                    None, "InvalidArgument")


def handle(state: dict[str, Any], request_text: str) -> tuple[dict[str, Any], int]:
    response: dict[str, Any] = {"schema": "stormatrix/vmware-1", "ok": False, "command": None, "server": None,
                                "result": None, "warnings": []}
    s = StandIn(state)
    try:
        try:
            request = json.loads(request_text)
        except json.JSONDecodeError:
            raise Fault("Stormatrix.VMware.BadRequest", "the request is not a JSON document") from None
        if not isinstance(request, dict):
            raise Fault("Stormatrix.VMware.BadRequest", "the request must be a JSON object")
        command = str(request.get("command"))
        response["command"] = command
        if command not in ALLOWED:
            raise Fault("Stormatrix.VMware.UnknownCommand", f"'{command}' is not a command this module runs")
        params, conn = request.get("parameters") or {}, request.get("connection") or {}
        if not isinstance(params, dict) or not isinstance(conn, dict):
            raise Fault("Stormatrix.VMware.BadRequest", "parameters and connection must be JSON objects")
        specs = contract()
        bind("Connect-StormatrixVMware", conn, specs["Connect-StormatrixVMware"])
        bind(command, params, specs[command])
        response["server"] = s.connect(conn)
        if conn.get("VerifyCertificate") is False:
            response["warnings"].append(f"certificate validation of {conn['Server']} is turned off for this session")
        handler = {"Get-StormatrixVMwareLayout": s.get_layout, "Set-StormatrixVMwareController": s.set_controller,
                   "Restore-StormatrixVMwareLayout": s.restore, "Get-StormatrixVMwareHostTuning": s.get_tuning,
                   "Set-StormatrixVMwareHostTuning": s.set_tuning, "Get-StormatrixVMwareCpuUsage": s.cpu_usage}[command]
        response["result"] = handler(params)
        response["ok"] = True
    except Fault as f:
        response["error"] = {"id": f.error_id, "category": f.category, "message": str(f), "powercli": f.powercli}
    return response, 0 if response["ok"] else 1


def main(argv: list[str] | None = None) -> int:
    global _STATE_PATH
    argv = sys.argv[1:] if argv is None else argv
    state_path = _STATE_PATH = Path(os.environ["STORMATRIX_FAKE_VSPHERE"])
    state = json.loads(state_path.read_text())
    expected = ["-NoLogo", "-NoProfile", "-NonInteractive", "-File"]
    if argv[:4] != expected or len(argv) != 5 or Path(argv[4]).resolve() != ENTRY.resolve():
        sys.stderr.write(f"stand-in pwsh: unexpected command line {argv!r} (the backend must run -File {ENTRY})\n")
        return 64
    request_text = sys.stdin.read()
    secret = state["credentials"]["password"]
    if any(secret in a for a in argv) or secret in request_text:
        sys.stderr.write("stand-in pwsh: THE PASSWORD WAS PASSED ON THE COMMAND LINE OR IN THE REQUEST\n")
        return 99
    state["requests"].append(json.loads(request_text) if request_text.strip().startswith("{") else request_text)
    response, code = handle(state, request_text)
    state_path.write_text(json.dumps(state, indent=1))
    sys.stdout.write("WARNING: Please consider joining the VMware Customer Experience Improvement Program\n")
    sys.stdout.write(PREFIX + json.dumps(response) + "\n")
    return code


# --- tests of the stand-in itself -------------------------------------------------------------------------

def _req(command: str, params: dict[str, Any], **conn: Any) -> str:
    return json.dumps({"command": command, "parameters": params,
                       "connection": {"Server": "esx01.lab", "CredentialSource": "Environment", **conn}})


def _env(monkeypatch: Any) -> None:
    monkeypatch.setenv("STORMATRIX_VSPHERE_USER", "administrator@vsphere.local")
    monkeypatch.setenv("STORMATRIX_VSPHERE_PASSWORD", "s3cr3t-Pa55")


def test_contract_is_read_from_the_module_source() -> None:
    specs = contract()
    assert specs["Set-StormatrixVMwareController"]["Type"] == {
        "mandatory": True, "choices": ["ParaVirtual", "LsiLogicSAS", "LsiLogic", "NVMe"]}
    assert specs["Set-StormatrixVMwareController"]["KeepControllerKey"]["mandatory"] is False
    assert set(specs["Connect-StormatrixVMware"]) == {"Server", "CredentialSource", "UserVariable", "PasswordVariable",
                                                      "CredentialStoreUser", "VerifyCertificate"}


def test_unknown_and_missing_parameters_fail_like_powershell(monkeypatch: Any) -> None:
    _env(monkeypatch)
    resp, code = handle(new_state(), _req("Get-StormatrixVMwareLayout", {"VMName": "bench01", "Disk": "Hard disk 2"}))
    assert code == 1 and resp["error"]["id"] == "NamedParameterNotFound,Get-StormatrixVMwareLayout"
    resp, _ = handle(new_state(), _req("Get-StormatrixVMwareLayout", {"VMName": "bench01"}))
    assert resp["error"]["id"] == "MissingMandatoryParameter,Get-StormatrixVMwareLayout"
    resp, _ = handle(new_state(), _req("Set-StormatrixVMwareController",
                                       {"VMName": "bench01", "DiskName": "Hard disk 2", "Type": "BusLogic"}))
    assert resp["error"]["id"] == "ParameterArgumentValidationError,Set-StormatrixVMwareController"


def test_moving_needs_a_power_cycle_and_never_drops_the_disk(monkeypatch: Any) -> None:
    _env(monkeypatch)
    state = new_state()
    files = sorted(d["file"] for d in state["vm"]["disks"])
    resp, code = handle(state, _req("Set-StormatrixVMwareController",
                                    {"VMName": "bench01", "DiskName": "Hard disk 2", "Type": "NVMe", "KeepControllerKey": [1000, 1001]}))
    assert code == 0, resp
    assert resp["result"]["After"]["Controller"]["Type"] == "NVMe"
    assert sorted(d["file"] for d in state["vm"]["disks"]) == files
    assert state["vm"]["booted_with"]["Hard disk 2"] == "NVMe"
    cmdlets = [c["cmdlet"] for c in state["calls"]]
    assert cmdlets.index("Stop-VM") < cmdlets.index("New-NvmeController") < cmdlets.index("Set-HardDisk") < cmdlets.index("Start-VM")


def test_a_reconfigure_of_a_running_vm_is_refused() -> None:
    s = StandIn(new_state())
    disk = s.resolve("bench01", "Hard disk 2")
    assert disk is not None
    try:
        s.move(disk, "ParaVirtual")
    except Fault as f:
        assert f.error_id == "Stormatrix.VMware.DiskMoveFailed" and "current state" in str(f.powercli)
    else:
        raise AssertionError("a powered-on VM was reconfigured")


def test_a_controller_holding_a_disk_is_never_removed() -> None:
    state = new_state()
    state["vm"]["power"] = "PoweredOff"
    try:
        StandIn(state).remove_controller(1000)
    except Fault as f:
        assert f.error_id == "Stormatrix.VMware.ControllerNotEmpty"
    else:
        raise AssertionError("the boot disk's controller was removed")


def test_wrong_password_is_a_connect_error_with_powercli_words(monkeypatch: Any) -> None:
    _env(monkeypatch)
    monkeypatch.setenv("STORMATRIX_VSPHERE_PASSWORD", "wrong")
    resp, _ = handle(new_state(), _req("Get-StormatrixVMwareLayout", {"VMName": "bench01", "DiskName": "Hard disk 2"}))
    assert resp["error"]["id"] == "Stormatrix.VMware.ConnectFailed"
    assert "incorrect user name or password" in resp["error"]["powercli"]
