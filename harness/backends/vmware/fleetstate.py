"""What an ESXi fleet's journal (``fleet.ndjson``) says the fleet owns: its records, typed, replayed into the
workers (:class:`EsxVm`) and their test disks (:class:`EsxDisk`) by the fleet journal's one loop
(:func:`stormatrix.fleet.records.replay`).

The records (``type``; the Proxmox fleet's records are keyed by VMID, these by vCenter's ids and names):
``fleet`` (``backend = "vmware"``), ``esx-vm`` (``name``: before the clone), ``esx-vm-made`` (``name``, ``id``,
``disks``: the clone's own disk files), ``esx-vm-ready`` (``name``, ``id``), ``esx-disk`` (``vm``, ``id``,
``datastore``: before the disk), ``esx-disk-made`` (``vm``, ``datastore``, ``filename``), ``esx-disk-attached``,
``esx-gone`` (``kind`` ``vm`` with ``name``/``id``, or ``disk`` with ``vm``/``datastore``), ``esx-fio`` (a passed
fio check: ``controller``, ``vms``, ``versions``).

They are written by :mod:`.fleet`, each before the call that creates what it names.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from ...fleet.records import FleetRecord, JournalRecord, record_kinds


@dataclass(frozen=True, kw_only=True)
class VmwareFleetRecord(FleetRecord):
    server: str | None = None
    template: str | None = None
    vmhost: str | None = None
    names: list[str] | None = None
    marker: str | None = None


@dataclass(frozen=True, kw_only=True)
class EsxVmRecord(JournalRecord):
    KIND: ClassVar[str] = "esx-vm"
    name: str


@dataclass(frozen=True, kw_only=True)
class EsxVmMadeRecord(JournalRecord):
    KIND: ClassVar[str] = "esx-vm-made"
    name: str
    id: str
    disks: list[str] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class EsxVmReadyRecord(JournalRecord):
    KIND: ClassVar[str] = "esx-vm-ready"
    name: str
    id: str


@dataclass(frozen=True, kw_only=True)
class EsxDiskRecord(JournalRecord):
    KIND: ClassVar[str] = "esx-disk"
    vm: str
    id: str
    datastore: str


@dataclass(frozen=True, kw_only=True)
class EsxDiskMadeRecord(JournalRecord):
    KIND: ClassVar[str] = "esx-disk-made"
    vm: str
    datastore: str
    filename: str | None = None


@dataclass(frozen=True, kw_only=True)
class EsxDiskAttachedRecord(EsxDiskMadeRecord):
    KIND: ClassVar[str] = "esx-disk-attached"


@dataclass(frozen=True, kw_only=True)
class EsxGoneRecord(JournalRecord):
    KIND: ClassVar[str] = "esx-gone"
    kind: str  # "vm", else a disk
    name: str | None = None
    id: str | None = None
    vm: str | None = None
    datastore: str | None = None
    filename: str | None = None
    state: str | None = None

    def needs(self) -> tuple[str, ...]:
        return ("name",) if self.kind == "vm" else ("vm", "datastore")


@dataclass(frozen=True, kw_only=True)
class EsxFioRecord(JournalRecord):
    KIND: ClassVar[str] = "esx-fio"
    controller: str | None = None
    vms: list[str] | None = None
    versions: dict[str, str] = field(default_factory=dict)


RECORDS = record_kinds(VmwareFleetRecord, EsxVmRecord, EsxVmMadeRecord, EsxVmReadyRecord, EsxDiskRecord,
                       EsxDiskMadeRecord, EsxDiskAttachedRecord, EsxGoneRecord, EsxFioRecord)


@dataclass
class EsxVm:
    name: str
    id: str | None = None  # None: the clone may or may not have happened
    ready: bool = False
    disks: list[str] = field(default_factory=list)  # the clone's own disk files


@dataclass
class EsxDisk:
    vm: str
    id: str
    datastore: str
    filename: str | None = None  # None: the disk may or may not have been created
    attached: bool = False


@dataclass
class VmwareFleetState:
    BACKEND: ClassVar[str] = "vmware"
    RECORDS: ClassVar[dict[str, type[JournalRecord]]] = RECORDS

    header: VmwareFleetRecord | None = None
    vms: dict[str, EsxVm] = field(default_factory=dict)  # name -> VM
    disks: dict[tuple[str, str], EsxDisk] = field(default_factory=dict)  # (vm name, datastore) -> disk
    fio_checks: list[EsxFioRecord] = field(default_factory=list)  # the passed fio checks, in order

    @property
    def empty(self) -> bool:
        return not self.vms and not self.disks

    @property
    def volumes(self) -> list[EsxDisk]:
        """The test disks (the Proxmox fleet's volumes)."""
        return list(self.disks.values())

    def base_files(self) -> list[str]:
        return sorted({f for v in self.vms.values() for f in v.disks})

    def apply(self, record: JournalRecord) -> None:
        match record:
            case VmwareFleetRecord():
                self.header = self.header or record
            case EsxVmRecord():
                self.vms.setdefault(record.name, EsxVm(record.name))
            case EsxVmMadeRecord():
                vm = self.vms.setdefault(record.name, EsxVm(record.name))
                vm.id = record.id
                vm.disks = list(record.disks or vm.disks)
            case EsxVmReadyRecord():
                self.vms.setdefault(record.name, EsxVm(record.name, record.id)).ready = True
            case EsxDiskRecord():
                self.disks.setdefault((record.vm, record.datastore), EsxDisk(record.vm, record.id, record.datastore))
            case EsxDiskMadeRecord():  # and EsxDiskAttachedRecord, its subclass
                disk = self.disks.get((record.vm, record.datastore))
                if disk is not None:
                    disk.filename = record.filename or disk.filename
                    disk.attached = disk.attached or isinstance(record, EsxDiskAttachedRecord)
            case EsxGoneRecord(kind="vm"):
                self.vms.pop(str(record.name), None)
                for key in [k for k in self.disks if k[0] == record.name]:
                    del self.disks[key]
            case EsxGoneRecord():
                self.disks.pop((str(record.vm), str(record.datastore)), None)
            case EsxFioRecord():
                self.fio_checks.append(record)
