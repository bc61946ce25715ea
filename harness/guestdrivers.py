"""The Windows guest's storage drivers, in one place: which driver each controller needs, which cells
a matrix plans for them, and which of the planned ones a guest can run.

Windows Server 2022 has in-box drivers for IDE, SATA/AHCI, NVMe and the LSI SAS controller (some
in-box statuses are unverified: :data:`WINDOWS_INBOX_UNVERIFIED`); the virtio controllers need a
virtio-win driver (:data:`WINDOWS_VIRTIO_DRIVER`). The rules apply twice:

- at plan time (:func:`plan_skip_reason`, :func:`windows_notes`, used by ``cells.expand``): ``[run]
  guest_drivers``, where the matrix sets it, decides which virtio controllers are planned; a controller
  with no in-box driver is skipped;
- at run time (:class:`DriverGate`, which the WinRM executor offers the runner as its driver gate): where
  ``guest_drivers`` is not set, the guest's facts (``Get-StormatrixGuestFacts``: the virtio-win drivers
  staged in its driver store, the controllers it shows and their bound drivers) decide which virtio
  cells the runner boots and which it journals as skipped.

Standard library and ``core`` only: the plan's expansion (below the executors) and the WinRM executor both read it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .core.model import Cell, DiskConfig

if TYPE_CHECKING:  # the spec is handed in; cells.py, which expands it, imports this module for its plan-time rules
    from .spec import MatrixSpec

log = logging.getLogger("stormatrix.runner")

# Windows Server 2022 guests: IDE and SATA/AHCI drivers are in-box. The virtio controllers need the
# virtio-win driver named here: declared in [run] guest_drivers, or (not set) read from the guest's driver
# store at its first boot (:class:`DriverGate`); the in-box status of the LSI 53C895A/53C810
# (lsi, lsi53c810), the MegaRAID SAS (megasas) and PVSCSI drivers is unverified: those are planned, and plan
# says so (a guest without the driver fails the cell at readiness, naming the controller, not retried).
WINDOWS_VIRTIO_DRIVER = {"virtio-blk": "viostor", "virtio-scsi-pci": "vioscsi", "virtio-scsi-single": "vioscsi"}
WINDOWS_INBOX_UNVERIFIED = {"lsi", "lsi53c810", "megasas", "pvscsi"}
WINDOWS_INBOX = {"ide", "sata", "lsilogic-sas", "nvme"} | WINDOWS_INBOX_UNVERIFIED
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


def declared_guest_drivers(spec: MatrixSpec) -> frozenset[str] | None:
    """``[run] guest_drivers`` where the matrix sets it (authoritative); None where it does
    not: then the guest's own facts (its driver store, read at the first boot) decide."""
    raw_run = spec.raw.get("run") if isinstance(spec.raw, dict) else None
    if not isinstance(raw_run, dict) or "guest_drivers" not in raw_run:
        return None
    return frozenset(spec.run.get("guest_drivers") or ())


def windows_notes(spec: MatrixSpec, drivers: set[str] | None) -> list[str]:
    """Per controller of a Windows matrix: which driver its cells rely on, where that is known from,
    and what is not verified (``drivers``: the declared virtio-win drivers, None for "ask the guest")."""
    if spec.run["guest_os"] != "windows2022":
        return []
    notes = []
    for ctrl in spec.matrix["controllers"]:
        need = WINDOWS_VIRTIO_DRIVER.get(ctrl)
        if need is not None and drivers is None:
            notes.append(f"{ctrl}: planned; it needs the virtio-win driver {need}, and [run] guest_drivers is not "
                         "set, so its cells run only if the guest's facts at its first boot (its driver store) "
                         f"show {need} installed, else they are skipped with the reason, not booted. To pin it, "
                         f"set [run] guest_drivers (e.g. [\"{need}\"]): then only the listed drivers' controllers "
                         "are planned")
        elif need is not None and drivers is not None and need in drivers:
            notes.append(f"{ctrl}: planned with the virtio-win driver {need} ([run] guest_drivers); if the guest's "
                         "driver store lacks it, its cells are skipped with the reason, not failed")
        elif ctrl in WINDOWS_INBOX_UNVERIFIED:
            lun = (f"; its disk sits at LUN {spec.matrix['disk_slot']} (lun=<slot>), whether Windows finds a disk "
                   "without a LUN 0 is unverified too" if ctrl == "megasas" and spec.matrix["disk_slot"] > 0 else "")
            notes.append(f"{ctrl}: planned, but whether Windows Server 2022 has an in-box driver for it is "
                         f"unverified; a guest without one fails the cell at readiness, naming the controller{lun}")
    return notes


def plan_skip_reason(controller: str, drivers: set[str] | None) -> str | None:
    """Why a Windows matrix plans no cells of ``controller``, or None: a virtio controller whose
    virtio-win driver ``[run] guest_drivers`` does not list (``drivers``: the listed ones, None when not
    set), a controller with no in-box driver."""
    need = WINDOWS_VIRTIO_DRIVER.get(controller)
    if need is not None and drivers is not None and need not in drivers:
        return (f"{controller} needs the virtio-win driver {need} in the guest and [run] guest_drivers does not "
                f"list it: add \"{need}\" to guest_drivers if the guest has it (Device Manager or `stormatrix "
                "guest check` shows it)")
    if need is None and controller not in WINDOWS_INBOX:
        return f"{controller} has no in-box Windows Server 2022 x64 driver (unverified)"
    return None


def awaiting_guest_facts(spec: MatrixSpec, cells: list[Cell]) -> list[Cell]:
    """The planned cells of a Windows matrix that run only if the guest's driver store has their virtio-win
    driver at the first boot (``[run] guest_drivers`` not set); none for any other matrix."""
    if spec.run["guest_os"] != "windows2022" or declared_guest_drivers(spec) is not None:
        return []
    return [c for c in cells if c.disk.controller in WINDOWS_VIRTIO_DRIVER]


# --- what the guest's facts say -------------------------------------------------------------------

def as_list(value: Any) -> list[Any]:
    """A facts field PowerShell's JSON may give as one value, a list or null, as a list."""
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def storage_drivers(facts: dict[str, Any]) -> dict[str, str]:
    """Controller name -> bound driver service, for every storage controller whose driver is bound
    (e.g. ``{"sata": "storahci", "virtio-scsi": "vioscsi"}``): what a Windows matrix may run on this
    guest. A controller Windows sees without a driver is left out."""
    return {str(c.get("Name")): str(c.get("Service") or "") for c in as_list(facts.get("Controllers"))
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
    return {str(d).lower() for d in as_list(listed)} | (bound & VIRTIO_WIN_DRIVERS)


def unbound_virtio_drivers(facts: dict[str, Any]) -> set[str]:
    """The virtio-win drivers of virtio controllers the guest shows without a driver (problem 28)."""
    return {GUEST_CONTROLLER_DRIVER[str(c.get("Name"))] for c in as_list(facts.get("Controllers"))
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
