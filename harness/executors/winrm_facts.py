"""What the executor reads from ``Get-StormatrixGuestFacts``: is the test disk there, and if not, why.

A test disk that Windows does not show is almost always a controller without a bound driver (a
virtio controller before the virtio-win drivers are installed shows with ConfigManagerErrorCode 28,
"drivers not installed"). That does not heal by restarting the VM, so :func:`check_test_disk`
raises :class:`TestDiskMissing`, which says so (``retryable = False``) and names each controller,
its PnP device and whether a driver is bound; it carries the facts (``details.guest_facts``).

Which virtio-win storage drivers the guest has (``InstalledStorageDrivers``: the packages staged in its
driver store, whatever controller the VM has now) decides, through :class:`DriverGate`, which virtio
cells of a Windows matrix the runner boots and which it journals as skipped.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from ..core.errors import TestDiskMissing
from ..core.model import Cell, DiskConfig
from ..spec import WINDOWS_VIRTIO_DRIVER, MatrixSpec, declared_guest_drivers

log = logging.getLogger("stormatrix.runner")

#: Windows device problem code 28 (CM_PROB_FAILED_INSTALL): "The drivers for this device are not installed."
PROBLEM_DRIVER_MISSING = "28"

#: The driver each controller needs in a Windows guest, and where it comes from. In-box status of the
#: LSI 53C895A (lsi) and MegaRAID SAS (megasas) drivers in Windows Server 2022 is unverified.
CONTROLLER_DRIVERS = {
    "virtio-blk": "viostor (virtio-win)",
    "virtio-scsi": "vioscsi (virtio-win)",
    "pvscsi": "pvscsi (VMware Tools / in-box)",
    "sata": "storahci (in-box)",
    "ide": "pciide/atapi (in-box)",
    "nvme": "stornvme (in-box)",
    "megasas": "megasas/megasas2i (in-box in Server 2022: unverified)",
    "lsi": "symmpi/lsi_scsi (53C895A: in-box in Server 2022 unverified)",
    "lsilogic-sas": "lsi_sas (in-box)",
}


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def describe_controller(c: dict[str, Any]) -> str:
    """One controller as a user reads it: name, PnP device, driver bound or not (and why not)."""
    name = c.get("Name") or "unknown"
    bound = bool(c.get("DriverBound"))
    problem = str(c.get("ProblemCode") or "")
    if bound:
        driver = f"driver {c.get('Service') or '?'} bound"
    elif problem == PROBLEM_DRIVER_MISSING or problem == "CM_PROB_FAILED_INSTALL":
        driver = "NO driver bound (device problem 28: drivers not installed)"
    else:
        driver = f"NO driver bound (status {c.get('Status') or '?'}, problem {problem or '?'})"
    return f"{name} controller '{c.get('FriendlyName') or ''}' (PnP device {c.get('InstanceId') or '?'}): {driver}"


def check_test_disk(facts: dict[str, Any], serial: str, host: str) -> dict[str, Any]:
    """The facts plus what the runner reads (``disk``, ``signature``, ``test_disk``); raises
    :class:`TestDiskMissing` when no disk with ``serial`` is visible."""
    disks = [d for d in _as_list(facts.get("Disks")) if isinstance(d, dict)]
    if not serial:
        return facts
    number = facts.get("TestDisk")
    match = [d for d in disks if d.get("Number") == number] if number is not None else []
    if not match:
        controllers = [c for c in _as_list(facts.get("Controllers")) if isinstance(c, dict)]
        unbound = [c for c in controllers if not c.get("DriverBound")]
        listed = "; ".join(describe_controller(c) for c in unbound + [c for c in controllers if c not in unbound])
        seen = ", ".join(f"#{d.get('Number')} serial '{d.get('SerialNumber')}' ({d.get('BusType')})" for d in disks)
        if unbound:
            names = sorted({str(c.get("Name")) for c in unbound})
            needs = "; ".join(f"{n}: {CONTROLLER_DRIVERS.get(n, 'its vendor driver')}" for n in names)
            fix = (f"install the driver of the controller without one ({needs}), e.g. pnputil /add-driver "
                   "<virtio-win>\\vioscsi\\2k22\\amd64\\vioscsi.inf /install, then reboot the guest")
        else:
            fix = (f"give the test disk the serial '{serial}' on the hypervisor (Proxmox: serial=..., ESXi: "
                   "disk.EnableUUID = TRUE)")
        raise TestDiskMissing(  # with the facts: the runner reads the guest's installed drivers from them
            f"no disk with serial '{serial}' is visible in {host} (disks seen: {seen or 'none'}). Storage "
            f"controllers: {listed or 'none found'}. Fix: {fix}. Not retried: restarting the VM does not "
            "install a driver", guest_facts=facts)
    disk = match[0]
    style = str(disk.get("PartitionStyle") or "")
    return {**facts,
            "disk": f"disk {number} (serial {serial})",
            "signature": "none" if style == "RAW" else "partitions",
            "test_disk": {k: disk.get(k) for k in ("Number", "FriendlyName", "BusType", "Size", "PartitionStyle",
                                                   "IsOffline", "IsReadOnly", "OfflineReason")}}


def storage_drivers(facts: dict[str, Any]) -> dict[str, str]:
    """Controller name -> bound driver service, for every storage controller whose driver is bound
    (e.g. ``{"sata": "storahci", "virtio-scsi": "vioscsi"}``): what a Windows matrix may run on this
    guest. A controller Windows sees without a driver is left out."""
    return {str(c.get("Name")): str(c.get("Service") or "") for c in _as_list(facts.get("Controllers"))
            if isinstance(c, dict) and c.get("DriverBound") and c.get("Name") not in (None, "unknown")}


#: The virtio-win driver of each virtio controller as the guest names it (Get-StormatrixStorageController).
GUEST_CONTROLLER_DRIVER = {"virtio-blk": "viostor", "virtio-scsi": "vioscsi"}
VIRTIO_WIN_DRIVERS = frozenset(WINDOWS_VIRTIO_DRIVER.values())


def installed_storage_drivers(facts: dict[str, Any]) -> set[str] | None:
    """The virtio-win storage drivers the guest has: those staged in its driver store
    (``InstalledStorageDrivers``) and those bound to a controller now. None when the guest could not read
    its driver store (``InstalledStorageDrivers`` null or absent): then only a controller present without
    its driver can tell that one is missing."""
    listed = facts.get("InstalledStorageDrivers")
    if listed is None:
        return None
    bound = set(storage_drivers(facts).values())
    return {str(d).lower() for d in _as_list(listed)} | (bound & VIRTIO_WIN_DRIVERS)


def unbound_virtio_drivers(facts: dict[str, Any]) -> set[str]:
    """The virtio-win drivers of virtio controllers the guest shows without a driver (problem 28)."""
    return {GUEST_CONTROLLER_DRIVER[str(c.get("Name"))] for c in _as_list(facts.get("Controllers"))
            if isinstance(c, dict) and str(c.get("Name")) in GUEST_CONTROLLER_DRIVER and not c.get("DriverBound")}


@dataclass
class DriverGate:
    """Which virtio controllers of a Windows matrix this guest can run, learned from its facts.

    The runner asks :meth:`skip_reason` before it boots a disk configuration and feeds every readiness's
    facts (also those a :class:`TestDiskMissing` carries) to :meth:`learn`. The driver store lists every
    installed driver whatever controller the VM has now, so the first readiness of any cell decides for
    all later ones: a controller whose driver is missing costs at most the boot that found it missing.
    ``declared`` is ``[run] guest_drivers`` (None: not set, the guest's facts decide); cells of drivers it
    does not list were skipped at plan time already.
    """

    declared: frozenset[str] | None
    installed: set[str] = field(default_factory=set)  # known present (driver store or bound)
    missing: set[str] = field(default_factory=set)  # known absent
    store_read: bool = False  # the guest listed its driver store
    source: str = ""  # where the facts came from, for the records
    warned: set[str] = field(default_factory=set)

    @classmethod
    def for_spec(cls, spec: MatrixSpec) -> "DriverGate | None":
        """A gate for a Windows matrix, None for any other guest."""
        if spec.run.get("guest_os") != "windows2022":
            return None
        return cls(declared=declared_guest_drivers(spec))

    def learn(self, facts: Any, where: str) -> None:
        """Take what a readiness reported (``where``: the cell whose boot reported it); warn once per
        driver the guest has that ``[run] guest_drivers`` does not list."""
        if not isinstance(facts, dict):
            return
        self._learn(facts, where)
        for message in self.undeclared_warnings():
            log.warning(message)

    def _learn(self, facts: dict[str, Any], where: str) -> None:
        host = facts.get("ComputerName") or "the guest"
        installed = installed_storage_drivers(facts)
        if installed is not None:
            self.store_read = True
            self.installed = installed & VIRTIO_WIN_DRIVERS
            self.missing = set(VIRTIO_WIN_DRIVERS - self.installed)
            self.source = f"guest facts: the driver store of {host}, read when {where} booted"
            return
        bound = set(storage_drivers(facts).values()) & VIRTIO_WIN_DRIVERS
        unbound = unbound_virtio_drivers(facts) - bound
        self.installed |= bound
        self.missing = (self.missing | unbound) - self.installed
        if bound or unbound:
            self.source = (f"guest facts: the controllers {host} showed when {where} booted (its driver store "
                           "could not be read)")

    def needs_driver(self, controller: str) -> bool:
        """True for a controller whose cells need a virtio-win driver (they run after the others)."""
        return controller in WINDOWS_VIRTIO_DRIVER

    def group_order(self, group: tuple[tuple[DiskConfig, int], list[Cell]]) -> bool:
        """Sort key of the runner's (disk, repeat) groups: those needing no virtio-win driver first."""
        return self.needs_driver(group[0][0].controller)

    def skip_reason(self, controller: str) -> str | None:
        """Why the cells of ``controller`` cannot run on this guest, or None."""
        need = WINDOWS_VIRTIO_DRIVER.get(controller)
        if need is None or need not in self.missing:
            return None
        what = "the guest's driver store has no" if self.store_read else "the guest shows its controller without"
        listed = (f"[run] guest_drivers lists {need}, but {what} {need}" if self.declared is not None
                  else f"{what} {need}")
        unlist = f" and {need} from [run] guest_drivers" if self.declared is not None else ""
        return (f"{controller} needs the virtio-win driver {need}: {listed} ({self.source}). Install virtio-win in "
                f"the guest (virtio-win-guest-tools.exe, or pnputil /add-driver <virtio-win>\\{need}\\2k22\\amd64\\"
                f"{need}.inf /install) and reboot it, or remove {controller} from [matrix] controllers{unlist}")

    def annotate(self, guest: dict[str, Any]) -> dict[str, Any]:
        """The readiness facts a cell records: :func:`with_storage_drivers` with this gate's view."""
        return with_storage_drivers(guest, self)

    def describe(self) -> dict[str, Any]:
        """Where a cell's driver facts came from, for its record: the matrix or the guest's facts."""
        out: dict[str, Any] = {
            "from": "matrix: [run] guest_drivers" if self.declared is not None
            else "guest facts: [run] guest_drivers not set (auto)",
            "declared": sorted(self.declared) if self.declared is not None else None,
            "installed": sorted(self.installed) if self.store_read or self.installed else None,
            "missing": sorted(self.missing)}
        if self.source:
            out["guest_facts"] = self.source
        return out

    def undeclared_warnings(self) -> list[str]:
        """Once per driver: the guest has a virtio-win driver ``[run] guest_drivers`` does not list, so its
        controllers' cells were skipped at plan time."""
        if self.declared is None:
            return []
        out = []
        for driver in sorted(self.installed - self.declared - self.warned):
            self.warned.add(driver)
            out.append(f"the guest has the virtio-win driver {driver} installed, but [run] guest_drivers does not "
                       f"list it, so its controllers' cells were skipped: add \"{driver}\" to guest_drivers to plan "
                       "them, or remove guest_drivers to let the guest's facts decide")
        return out


def with_storage_drivers(guest: dict[str, Any], gate: DriverGate | None = None) -> dict[str, Any]:
    """The guest's facts plus ``storage_drivers`` (controller -> bound driver service) where the guest
    reported its storage controllers (Windows: ``Get-StormatrixGuestFacts``), so every cell records which
    driver served its controller, and ``driver_facts`` (with a gate): whether the virtio controllers were
    planned from ``[run] guest_drivers`` or from the guest's facts (its driver store)."""
    if not isinstance(guest, dict) or "Controllers" not in guest:
        return guest
    out = {**guest, "storage_drivers": storage_drivers(guest)}
    if gate is not None:
        out["driver_facts"] = gate.describe()
    return out
