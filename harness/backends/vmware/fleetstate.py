"""What an ESXi fleet's journal (``fleet.ndjson``) says the fleet owns: its records replayed into the workers
(:class:`EsxVm`) and their test disks (:class:`EsxDisk`).

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
from typing import Any

from ...fleet.journal import FleetJournal


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
    header: dict[str, Any] | None = None
    vms: dict[str, EsxVm] = field(default_factory=dict)  # name -> VM
    disks: dict[tuple[str, str], EsxDisk] = field(default_factory=dict)  # (vm name, datastore) -> disk

    @property
    def empty(self) -> bool:
        return not self.vms and not self.disks

    @property
    def volumes(self) -> list[EsxDisk]:
        """The test disks (the Proxmox fleet's volumes)."""
        return list(self.disks.values())

    def base_files(self) -> list[str]:
        return sorted({f for v in self.vms.values() for f in v.disks})


def replay(journal: FleetJournal) -> VmwareFleetState:
    st = VmwareFleetState()
    for rec in journal.records():
        kind = rec["type"]
        if kind == "fleet":
            st.header = st.header or rec
        elif kind == "esx-vm":
            st.vms.setdefault(rec["name"], EsxVm(rec["name"]))
        elif kind == "esx-vm-made":
            vm = st.vms.setdefault(rec["name"], EsxVm(rec["name"]))
            vm.id = rec["id"]
            vm.disks = list(rec.get("disks") or vm.disks)
        elif kind == "esx-vm-ready":
            st.vms.setdefault(rec["name"], EsxVm(rec["name"], rec["id"])).ready = True
        elif kind == "esx-disk":
            st.disks.setdefault((rec["vm"], rec["datastore"]), EsxDisk(rec["vm"], rec["id"], rec["datastore"]))
        elif kind in ("esx-disk-made", "esx-disk-attached"):
            disk = st.disks.get((rec["vm"], rec["datastore"]))
            if disk is not None:
                disk.filename = rec.get("filename") or disk.filename
                disk.attached = disk.attached or kind == "esx-disk-attached"
        elif kind == "esx-gone":
            if rec["kind"] == "vm":
                st.vms.pop(rec["name"], None)
                for key in [k for k in st.disks if k[0] == rec["name"]]:
                    del st.disks[key]
            else:
                st.disks.pop((rec["vm"], rec["datastore"]), None)
    return st
