"""What a local fleet's journal (``fleet.ndjson``) says the fleet owns: its records, typed, replayed into the
processes it runs (:class:`OwnedProcess`: the QEMU workers, the storages' servers) and its volumes by the fleet
journal's one loop (:func:`stormatrix.fleet.records.replay`).

Records (``type``): ``fleet`` (``backend = "qemu"``, ``workers``, ``names``, ``storages``), ``local-volume``
(``storage``, ``worker``, ``path``: relative to the run directory; before the file is made), ``local-process``
(``role``: ``qemu``, ``tgtd`` or ``qemu-storage-daemon``; ``storage``, ``name``, ``pid``, ``started``, ``control``:
a tgtd's control socket number; the moment it runs), ``local-gone`` (``kind`` ``volume`` with ``path``, or
``process`` with ``pid``). They are written by :mod:`.fleet`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from ...fleet.records import FleetRecord, JournalRecord, record_kinds


@dataclass(frozen=True, kw_only=True)
class LocalFleetRecord(FleetRecord):
    names: list[str] | None = None
    storages: list[str] | None = None


@dataclass(frozen=True, kw_only=True)
class LocalVolumeRecord(JournalRecord):
    KIND: ClassVar[str] = "local-volume"
    storage: str
    worker: str | None = None
    path: str  # relative to the run directory


@dataclass(frozen=True, kw_only=True)
class LocalProcessRecord(JournalRecord):
    KIND: ClassVar[str] = "local-process"
    role: str
    pid: int
    started: float
    name: str = ""
    storage: str = ""
    control: int | None = None


@dataclass(frozen=True, kw_only=True)
class LocalGoneRecord(JournalRecord):
    KIND: ClassVar[str] = "local-gone"
    kind: str  # "process", else a volume
    pid: int | None = None
    path: str | None = None
    storage: str | None = None

    def needs(self) -> tuple[str, ...]:
        return ("pid",) if self.kind == "process" else ("path",)


RECORDS = record_kinds(LocalFleetRecord, LocalVolumeRecord, LocalProcessRecord, LocalGoneRecord)


@dataclass
class OwnedProcess:
    role: str
    pid: int
    started: float  # psutil's create_time: with the pid, names this process and no later one
    name: str = ""
    storage: str = ""
    control: int | None = None  # a tgtd's control socket number


@dataclass
class LocalFleetState:
    """What the journal says the fleet owns now (``vms``: the QEMU workers, ``servers``: the storages')."""

    BACKEND: ClassVar[str] = "qemu"
    RECORDS: ClassVar[dict[str, type[JournalRecord]]] = RECORDS

    header: LocalFleetRecord | None = None
    processes: dict[int, OwnedProcess] = field(default_factory=dict)
    volumes: dict[str, str] = field(default_factory=dict)  # path (relative to the run directory) -> storage

    @property
    def vms(self) -> list[OwnedProcess]:
        return [p for p in self.processes.values() if p.role == "qemu"]

    @property
    def servers(self) -> list[OwnedProcess]:
        return [p for p in self.processes.values() if p.role != "qemu"]

    @property
    def empty(self) -> bool:
        return not self.processes and not self.volumes

    def apply(self, record: JournalRecord) -> None:
        match record:
            case LocalFleetRecord():
                self.header = self.header or record
            case LocalVolumeRecord():
                self.volumes[record.path] = record.storage
            case LocalProcessRecord():
                self.processes[record.pid] = OwnedProcess(record.role, record.pid, record.started, record.name,
                                                          record.storage, record.control)
            case LocalGoneRecord(kind="process"):
                assert record.pid is not None  # needs()
                self.processes.pop(record.pid, None)
            case LocalGoneRecord():
                assert record.path is not None  # needs()
                self.volumes.pop(record.path, None)
