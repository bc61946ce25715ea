"""The host CPU collectors of the vmware backend: vSphere's realtime statistics for the window
(:class:`VmwareCpuCollector`, through the module's Get-StormatrixVMwareCpuUsage) or ``esxtop -b`` on the
ESXi host over SSH (:class:`EsxtopCollector`). Both return a host record with the Linux collector's keys.
"""

from __future__ import annotations

import logging
import math
import re
import subprocess
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...analysis.read.esxtop import read_esxtop, vm_cpu_record
from ...core.errors import CollectorError, InputError
from ...ssh import SshOptions

if TYPE_CHECKING:
    from .backend import VmwareBackend

log = logging.getLogger("stormatrix.backend.vmware")

#: the least part of the window a host CPU source's samples must cover (vSphere realtime samples, esxtop
#: rows): less is refused, not scaled up (the window is not measured); more is scaled to the whole window
#: and the record says so (``vmware.coverage``, ``vmware.prorated``)
MIN_COVERAGE = 0.8


def check_coverage(host: dict[str, Any], source: str, window_s: float, fix: str) -> None:
    """Refuse a host record whose samples cover less than :data:`MIN_COVERAGE` of the window (CollectorError
    naming the source, the coverage and the fix); a record without its coverage is refused too: whether
    its CPU total stands for the window is then unknown."""
    v = host.get("vmware")
    coverage = v.get("coverage") if isinstance(v, dict) else None
    if isinstance(coverage, bool) or not isinstance(coverage, (int, float)) or not math.isfinite(coverage):
        raise CollectorError(f"{source}: the record has no sample coverage of the window (vmware.coverage is "
                             f"{coverage!r}); the window is not measured")
    if coverage < MIN_COVERAGE:
        raise CollectorError(f"{source}: it covers {coverage:.0%} of the {window_s:.1f} s window (minimum "
                             f"{MIN_COVERAGE:.0%}); the window is not measured. Fix: {fix}")


def iso_utc(t: datetime) -> str:
    """The window edge as the request carries it: ISO 8601 UTC with milliseconds and Z (the module binds
    it to a [datetime]; ConvertFrom-Json on PowerShell 6+ has already made it one, Kind Utc)."""
    return t.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class VmwareCpuCollector:
    """The host collector for ESXi: remembers the window's edges and asks vSphere for the VM's and
    the host's CPU over exactly that window when it closes (realtime samples are kept ~1 hour). Like the
    esxtop source, a window its samples cover less than :data:`MIN_COVERAGE` of is refused; above, the
    module has scaled the CPU total up to the window and the record says so (``vmware.coverage``)."""

    def __init__(self, backend: VmwareBackend, vm: str) -> None:
        self.backend = backend
        self.vm = vm
        self.t0: datetime | None = None
        self.t1: datetime | None = None

    def start(self) -> None:
        self.t0 = datetime.now(timezone.utc)
        self.t1 = None

    def stop(self) -> dict[str, Any]:
        if self.t0 is None:
            raise CollectorError("the vSphere collector was stopped before it started")
        self.t1 = datetime.now(timezone.utc)
        o = self.backend.opts
        params: dict[str, Any] = {"VMName": self.vm, "Start": iso_utc(self.t0), "Finish": iso_utc(self.t1),
                                  "WaitSeconds": int(o["stats_wait_seconds"])}
        if o["esx_host"]:
            params["VMHost"] = o["esx_host"]
        host = self.backend.runner.call("Get-StormatrixVMwareCpuUsage", params)
        if not isinstance(host, dict) or host.get("cpu_metric") != "cpu_time":
            raise CollectorError(f"Get-StormatrixVMwareCpuUsage answered {type(host).__name__}, not a host record")
        window = (self.t1 - self.t0).total_seconds()
        check_coverage(host, f"vSphere realtime statistics of VM {self.vm!r}", window,
                       "a larger [vmware] stats_wait_seconds, so the sample that covers the window's end exists "
                       "when it is read, and a measure_seconds of a minute or more (realtime samples are 20 s)")
        if isinstance(host.get("vmware"), dict):
            host["vmware"]["tuning_in_force"] = self.backend.tuning_in_force
        return host

    def abort(self) -> None:
        self.t0 = None


class EsxtopCollector:
    """The host collector for ESXi from ``esxtop -b`` on the host, over SSH, for the window.

    ``start()`` runs ``ssh -o BatchMode=yes <esxtop_ssh> -- esxtop -b -d D -n N`` (:mod:`stormatrix.ssh`) with
    N iterations covering the planned window plus one (a window runs a little longer than measure_seconds), writing
    the capture into the run directory (``esxtop/<time>-<vm>.csv``, kept as evidence). ``stop()`` waits
    for esxtop to finish its last iteration (at most about 2 x D after the window) and turns the capture
    into the host record with :func:`stormatrix.analysis.read.esxtop.vm_cpu_record`: the window is taken to
    start with esxtop's first snapshot (the SSH connect, well under a second on a LAN, is not corrected
    for) and to last as long as this machine measured. BatchMode means a key login or nothing: ssh never
    asks for a password.
    """

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
        return SshOptions(self.backend.opts["esxtop_ssh"]).ssh_argv(
            ["esxtop", "-b", "-d", str(self.delay), "-n", str(iterations)])

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

        try:
            capture = read_esxtop(self.path)
            host = vm_cpu_record(capture, self.vm, delay_s=self.delay, window_s=window)
        except InputError as exc:
            raise CollectorError(f"esxtop capture: {exc}") from None
        check_coverage(host, f"esxtop capture {self.path}", window,
                       "check that esxtop ran for the whole window (its stderr is next to the capture)")
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
