"""What a Proxmox fleet's journal (``fleet.ndjson``) says the fleet owns: its records, typed, replayed into the
workers' VMIDs and their volumes (:class:`OwnedVolume`) by the fleet journal's one loop
(:func:`stormatrix.fleet.records.replay`).

Records (``type``), keyed by VMID:

- ``fleet``: once, when the fleet is first deployed: ``fleet_id``, ``backend``, ``node``, ``template``,
  ``workers``, ``vmids``, ``marker`` (the description every worker carries);
- ``vm``: ``vmid``, ``name``, ``node`` — written *before* the clone call (the VM may or may not exist);
- ``vm-ready``: ``vmid`` — cloned, tagged and configured;
- ``volume``: ``storage``, ``vmid``, ``filename`` — written *before* the allocation call;
- ``volume-made``: ``storage``, ``filename``, ``volid`` — what the storage answered;
- ``attached`` / ``detached``: ``vmid``, ``slot`` (e.g. ``scsi1``), ``volid``;
- ``power-cycle``: ``storage``, ``point``, ``stop``, ``vmids`` (how many) — owns nothing;
- ``gone``: ``kind`` (``vm`` or ``volume``) and ``vmid`` or ``volid`` — removed (or found not to exist).

They are written by :mod:`.fleet` (``power-cycle`` by :mod:`.fleetsuite`), each before the call that creates what
it names.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from ...fleet.records import FleetRecord, JournalRecord, record_kinds


@dataclass(frozen=True, kw_only=True)
class ProxmoxFleetRecord(FleetRecord):
    vmids: list[int]
    node: str | None = None
    nodes: list[str] | None = None
    template: Any = None  # the template's VMID
    marker: str | None = None


@dataclass(frozen=True, kw_only=True)
class VmRecord(JournalRecord):
    KIND: ClassVar[str] = "vm"
    vmid: int
    name: str = ""
    node: str | None = None  # where it is cloned to (older journals: the fleet's node)


@dataclass(frozen=True, kw_only=True)
class VmReadyRecord(JournalRecord):
    KIND: ClassVar[str] = "vm-ready"
    vmid: int


@dataclass(frozen=True, kw_only=True)
class VolumeRecord(JournalRecord):
    KIND: ClassVar[str] = "volume"
    storage: str
    vmid: int
    filename: str


@dataclass(frozen=True, kw_only=True)
class VolumeMadeRecord(JournalRecord):
    KIND: ClassVar[str] = "volume-made"
    storage: str
    filename: str
    volid: str


@dataclass(frozen=True, kw_only=True)
class AttachedRecord(JournalRecord):
    KIND: ClassVar[str] = "attached"
    vmid: int | None = None
    slot: str
    volid: str | None


@dataclass(frozen=True, kw_only=True)
class DetachedRecord(JournalRecord):
    KIND: ClassVar[str] = "detached"
    vmid: int | None = None
    slot: str | None = None
    volid: str | None


@dataclass(frozen=True, kw_only=True)
class PowerCycleRecord(JournalRecord):
    KIND: ClassVar[str] = "power-cycle"
    storage: str | None = None
    point: str | None = None
    stop: bool = True
    vmids: int | None = None


@dataclass(frozen=True, kw_only=True)
class GoneRecord(JournalRecord):
    KIND: ClassVar[str] = "gone"
    kind: str  # "vm", else a volume
    vmid: int | None = None
    volid: str | None = None
    storage: str | None = None
    filename: str | None = None
    note: str | None = None

    def needs(self) -> tuple[str, ...]:
        return ("vmid",) if self.kind == "vm" else ()


RECORDS = record_kinds(ProxmoxFleetRecord, VmRecord, VmReadyRecord, VolumeRecord, VolumeMadeRecord, AttachedRecord,
                       DetachedRecord, PowerCycleRecord, GoneRecord)


@dataclass
class OwnedVolume:
    storage: str
    vmid: int
    filename: str
    volid: str | None = None  # None: the allocation may or may not have happened
    attached: str | None = None  # the slot it is attached at, if any


@dataclass
class ProxmoxFleetState:
    """What the journal says the fleet owns now."""

    BACKEND: ClassVar[str] = "proxmox"
    RECORDS: ClassVar[dict[str, type[JournalRecord]]] = RECORDS

    header: ProxmoxFleetRecord | None = None
    vms: dict[int, VmRecord] = field(default_factory=dict)  # vmid -> its "vm" record
    ready: set[int] = field(default_factory=set)
    volumes: dict[tuple[str, str], OwnedVolume] = field(default_factory=dict)  # (storage, filename) -> volume

    def live_vms(self) -> list[int]:
        return list(self.vms)

    def live_volumes(self) -> list[OwnedVolume]:
        return list(self.volumes.values())

    @property
    def empty(self) -> bool:
        return not self.vms and not self.volumes

    def apply(self, record: JournalRecord) -> None:
        match record:
            case ProxmoxFleetRecord():
                self.header = self.header or record
            case VmRecord():
                self.vms[record.vmid] = record
            case VmReadyRecord():
                self.ready.add(record.vmid)
            case VolumeRecord():
                self.volumes[(record.storage, record.filename)] = OwnedVolume(record.storage, record.vmid,
                                                                              record.filename)
            case VolumeMadeRecord():
                vol = self.volumes.get((record.storage, record.filename))
                if vol is not None:
                    vol.volid = record.volid
            case AttachedRecord() | DetachedRecord():
                for vol in self.volumes.values():
                    if vol.volid == record.volid:
                        vol.attached = record.slot if isinstance(record, AttachedRecord) else None
            case GoneRecord(kind="vm"):
                assert record.vmid is not None  # needs()
                self.vms.pop(record.vmid, None)
                self.ready.discard(record.vmid)
            case GoneRecord():
                named = (record.storage, record.filename)
                for key in [k for k, v in self.volumes.items()
                            if v.volid == record.volid or (v.volid is None and k == named)]:
                    del self.volumes[key]
