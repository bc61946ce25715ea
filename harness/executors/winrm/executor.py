"""The WinRM guest executor: runs the ``windows/StormatrixGuest`` module inside a Windows guest.

The pieces, one job each:

- :mod:`.settings` - the ``[winrm]`` section (:data:`WINRM_SECTION`), :class:`WinRMSettings`,
  the password it names (:func:`load_password`, a :class:`Secret` from :mod:`stormatrix.secrets`), and the
  plan-time check of the shell memory quota (:func:`check_workload_memory`);
- :mod:`.encoding` - command lines for cmd.exe, the module upload, call scripts;
- :mod:`.parse` - the ``##stormatrix:`` output protocol and typed errors from it;
- :mod:`.channel` - pywinrm with deadlines, retries and typed transport errors;
- :mod:`.testdisk` - guest facts: the test disk, and why it is missing (the driver rules are
  :mod:`stormatrix.guestdrivers`');
- this module - the executor: readiness, reboots, workloads, the guest validation.

A reboot is known, not guessed: :meth:`WinRMExecutor.restart_guest` waits until WinRM answers with a
new boot time, and :meth:`WinRMExecutor.wait_ready` polls until the deadline, through connection
errors, timeouts and the WS-Man faults a starting WinRM service answers - but not through a bad
password or a missing test disk, which waiting does not fix.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

from ...analysis.read.fio import parse_fio_json
from ...core.errors import (AuthenticationFailed, GuestDisconnected, GuestNotReady, InputError, RemoteCommandError,
                            RemoteTimeout, TestDiskMissing, WSManServiceError, WorkloadFailed)
from ...core.model import Cell, Timing
from ...core.scope import GuestEndpoint
from ...guestdrivers import DriverGate, storage_drivers, with_storage_drivers
from ...secrets import RedactingFilter, Secret, redact
from ..base import GuestExecutor, WindowListener, WorkloadResult
from .channel import ProtocolFactory, WinRMChannel, _default_protocol, map_transport_error
from .encoding import (
                       CMD_LIMIT,
                       CMD_MARGIN,
                       MODULE_NAME,
                       POWERSHELL_PREFIX,
                       PRELUDE,
                       ModulePayload,
                       call_script,
                       default_module_dir,
                       encode_command,
                       encode_parameters,
                       max_chunk_chars,
                       present_script,
                       restart_script,
                       upload_scripts,
                       )
from .testdisk import check_test_disk
from .parse import (
                    STARTED_MARK,
                    CheckReport,
                    CheckResult,
                    CommandOutput,
                    clean_clixml,
                    diskspd_document,
                    parse_call_output,
                    )
from .settings import (
                       DEFAULT_SHELL_MEMORY_MB,
                       TRANSPORTS,
                       WINRM_SECTION,
                       WinRMSettings,
                       check_transport_available,
                       check_workload_memory,
                       load_password,
                       )

if TYPE_CHECKING:
    from ...spec import MatrixSpec

__all__ = [
    "CMD_LIMIT", "CMD_MARGIN", "MODULE_NAME", "POWERSHELL_PREFIX", "PRELUDE", "PYTHON_CALLS", "TRANSPORTS",
    "WINRM_SECTION", "CheckReport", "CheckResult", "CommandOutput", "ModulePayload", "RedactingFilter", "Secret",
    "TestDiskMissing", "VALIDATION_RUNNERS", "WSManServiceError", "WinRMChannel", "WinRMExecutor", "WinRMSettings",
    "call_script",
    "check_transport_available", "check_workload_memory", "clean_clixml", "default_module_dir", "encode_command",
    "encode_parameters", "load_password", "map_transport_error", "max_chunk_chars", "parse_call_output",
    "present_script", "redact", "storage_drivers", "upload_scripts", "workload_parameters",
    "_default_protocol",  # tests/harness/test_reliability_safety.py checks the TLS opt-out warning through it
]

log = logging.getLogger("stormatrix.executor.winrm")

#: The module functions Python calls by name, and the parameters it passes (the compliance tests on
#: the PowerShell side check the same list).
PYTHON_CALLS: dict[str, tuple[str, ...]] = {
    "Invoke-StormatrixFio": ("Serial", "Workload", "IoEngine", "FioPath", "AllowPartitioned", "WriteMarkers"),
    "Invoke-StormatrixDiskSpd": ("Serial", "Workload", "DiskSpdPath", "AllowPartitioned", "WriteMarkers"),
    "Get-StormatrixGuestFacts": ("Serial",),
    "Invoke-StormatrixGuestValidation": ("Serial", "Controller", "Engine", "FioPath", "DiskSpdPath", "Runner"),
}

#: ``stormatrix guest check --runner`` -> Invoke-StormatrixGuestValidation -Runner
VALIDATION_RUNNERS = {"auto": "Auto", "builtin": "Builtin", "pester": "Pester"}

_ENGINE_RW = ("read", "write", "randread", "randwrite", "rw", "readwrite", "randrw")
# matrix controller names -> the names the guest module reports
GUEST_CONTROLLER_NAMES = {"virtio-scsi-pci": "virtio-scsi", "virtio-scsi-single": "virtio-scsi"}
# the result fields that describe what the engine did; journaled with every cell
_RESULT_GUEST_KEYS = ("Engine", "Target", "DiskNumber", "FioVersion", "Arguments", "EngineFlags", "TestDisk",
                      "Started", "Ended")


def workload_parameters(cell: Cell, timing: Timing, settings: WinRMSettings) -> tuple[str, dict[str, Any]]:
    """(function, parameters) for one cell: what the guest module is asked to run."""
    w = cell.workload
    if w.rw not in _ENGINE_RW:
        raise InputError(f"workload {w.name!r}: rw={w.rw} is not supported in Windows guests "
                         f"(use one of {', '.join(_ENGINE_RW)})")
    workload = {
        "ReadWrite": w.rw,
        "BlockSize": w.bs,
        "IoDepth": w.iodepth,
        "NumJobs": w.numjobs,
        "RampSeconds": int(math.ceil(timing.ramp_s)),
        "RuntimeSeconds": max(1, int(math.ceil(timing.measure_s))),
        "RateMiBps": float(w.rate_mib_s or 0.0),
        "RwMixRead": w.rwmixread if w.rwmixread is not None else 50,
    }
    params: dict[str, Any] = {"Serial": settings.disk_serial, "Workload": workload, "WriteMarkers": True}
    if settings.allow_partitioned_disk:
        params["AllowPartitioned"] = True
    if settings.engine == "fio":
        params["FioPath"] = settings.fio_path
        return "Invoke-StormatrixFio", params
    params["DiskSpdPath"] = settings.diskspd_path
    return "Invoke-StormatrixDiskSpd", params


class WinRMExecutor(GuestExecutor):
    """Runs fio or DiskSpd in a Windows guest through the StormatrixGuest module over WinRM."""

    name = "winrm"

    @classmethod
    def check_spec(cls, spec: MatrixSpec) -> None:
        """Workloads whose I/O buffers outgrow the guest's WinRM shell memory quota are refused at plan time."""
        quota = spec.section("winrm").get("max_memory_per_shell_mb", DEFAULT_SHELL_MEMORY_MB)
        check_workload_memory(spec.workloads, quota)

    @classmethod
    def driver_gate(cls, spec: MatrixSpec) -> DriverGate | None:
        """A Windows guest's virtio-win drivers (its driver store, read at each readiness) decide which
        virtio cells run: :class:`~stormatrix.guestdrivers.DriverGate`."""
        return DriverGate.for_spec(spec)

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
        """Poll until WinRM answers and the module reports guest facts with the test disk in them.

        Connection errors, timeouts and WS-Man faults/5xx (a WinRM service still starting) are retried
        until ``deadline``; a bad password (:class:`AuthenticationFailed`) and a test disk Windows
        does not show (:class:`TestDiskMissing`, usually a controller without a driver) fail at once;
        the latter carries the guest's facts, from which the runner learns which virtio-win drivers the
        guest has installed (its driver store) and skips the cells of controllers it cannot run.
        """
        last: Exception | None = None
        serial = self.settings.disk_serial
        while True:
            try:
                self._uploaded = False  # a rebooted or reverted guest may have lost its temp folder
                facts = self.call("Get-StormatrixGuestFacts", {"Serial": serial} if serial else {})
                # every cell records which driver served its controller (storage_drivers)
                return with_storage_drivers(check_test_disk(facts, serial, self.settings.host))
            except AuthenticationFailed:
                raise
            except (GuestDisconnected, RemoteTimeout, WSManServiceError) as exc:
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
            self.run_script(restart_script(), "restart the guest", timeout=60)
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
        ``measure_s`` later (window_source "timed": the engine's own warm-up and runtime match those edges)."""
        function, params = workload_parameters(cell, timing, self.settings)
        if not self.settings.disk_serial:
            raise InputError("[winrm] disk_serial is required to run a workload (the test disk is found by serial)")
        ramp, runtime = params["Workload"]["RampSeconds"], params["Workload"]["RuntimeSeconds"]
        started = threading.Event()
        box: dict[str, Any] = {}

        def watch(text: str) -> None:
            if STARTED_MARK in text and not started.is_set():
                box["started_at"] = self._clock()
                started.set()

        def work() -> None:
            try:
                timeout = timing.ramp_s + timing.measure_s + self.settings.command_timeout_seconds
                box["result"] = self.call(function, params, on_stdout=watch, timeout=timeout)
            except BaseException as exc:  # any failure: handed to the caller's thread
                box["error"] = exc
            finally:
                started.set()

        self.ensure_module()
        thread = threading.Thread(target=work, name=f"winrm-{cell.key}", daemon=True)
        thread.start()
        started.wait(self.settings.command_timeout_seconds)
        if "started_at" in box and "error" not in box:
            t0 = box["started_at"]
            self._sleep_until(t0 + ramp, thread)
            if thread.is_alive():
                window.measure_started()
                self._sleep_until(t0 + ramp + runtime, thread)
                window.measure_ended()
        thread.join(self.settings.command_timeout_seconds + timing.ramp_s + timing.measure_s)
        if thread.is_alive():
            raise RemoteTimeout(f"{function} did not return", cell=cell.key)
        if "error" in box:
            exc = box["error"]
            if isinstance(exc, RemoteCommandError) and not isinstance(exc, (AuthenticationFailed, RemoteTimeout)):
                raise WorkloadFailed(str(exc), cell=cell.key, details=exc.details) from exc
            raise exc
        if "started_at" not in box:
            raise WorkloadFailed(f"{function} returned without the engine-started marker", cell=cell.key)
        return self._result(box["result"], cell)

    def _result(self, result: dict[str, Any], cell: Cell) -> WorkloadResult:
        """The guest's answer as a WorkloadResult; the engine's flags and the test disk's state go into
        ``guest`` so the journal records what each engine did."""
        raw = result.get("Raw", "")
        guest = {k: result.get(k) for k in _RESULT_GUEST_KEYS if k in result}
        guest["host"] = self.settings.host
        if result.get("Engine") == "diskspd":
            import xml.parsers.expat

            try:
                data = diskspd_document(raw)
            except xml.parsers.expat.ExpatError as exc:
                raise WorkloadFailed(f"DiskSpd XML does not parse: {exc}", cell=cell.key, stdout=raw[:2000]) from None
            return WorkloadResult(engine="diskspd", raw=raw, data=data, guest=guest, window_source="timed")

        data = parse_fio_json(raw, source=f"fio in {self.settings.host}")
        return WorkloadResult(engine="fio", raw=raw, data=data, guest=guest, window_source="timed")

    def _sleep_until(self, when: float, thread: threading.Thread) -> None:
        while thread.is_alive():
            remaining = when - self._clock()
            if remaining <= 0:
                return
            thread.join(min(remaining, 0.5))

    def validate(self, controller: str | None = None, runner: str = "builtin") -> CheckReport:
        """Run the guest validation in the guest; never raises for a failed check. ``runner``: ``builtin``
        (no Pester needed), ``pester`` (Pester 5 in the guest) or ``auto`` (Pester where the guest has
        Pester 5); the report's ``runner`` says which one ran."""
        if runner not in VALIDATION_RUNNERS:
            raise ValueError(f"runner {runner!r}: one of {', '.join(VALIDATION_RUNNERS)}")
        params: dict[str, Any] = {"Serial": self.settings.disk_serial, "Engine": self.settings.engine,
                                  "FioPath": self.settings.fio_path, "DiskSpdPath": self.settings.diskspd_path,
                                  "Runner": VALIDATION_RUNNERS[runner]}
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
            host=self.settings.host, passed=bool(result.get("Passed")), runner=str(result.get("Runner", "")),
            tests=[CheckResult(str(t.get("Name", "")), str(t.get("Block", "")), str(t.get("Result", "")),
                               str(t.get("Message") or "")) for t in tests])

    def close(self) -> None:
        log.removeFilter(self._filter)
        self.channel.reset()
