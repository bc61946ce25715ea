"""The fleet journal's one replay (``stormatrix.fleet.records.replay``): every platform's ``fleet.ndjson``, as the
fleets write it (and as older versions wrote it), read into typed records and applied by the same loop; a bad line
named by file, line and field.

The journals here are written out line by line, as they are on disk, not through the fleets: the format is what is
tested.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import paths

from stormatrix.backends.proxmox.fleetstate import OwnedVolume, ProxmoxFleetState
from stormatrix.backends.qemu.fleetstate import LocalFleetState, OwnedProcess
from stormatrix.backends.vmware.fleetstate import EsxDisk, EsxVm, VmwareFleetState
from stormatrix.core.errors import DataFileError
from stormatrix.fleet.journal import FleetJournal
from stormatrix.fleet.records import FleetRecord, JournalRecord, record_kinds, replay


def journal(tmp_path: Path, *records: dict[str, Any], tail: str = "") -> FleetJournal:
    run = tmp_path / "run"
    run.mkdir(exist_ok=True)
    (run / "fleet.ndjson").write_text("".join(json.dumps(r) + "\n" for r in records) + tail)
    return FleetJournal(run)


def test_a_proxmox_fleet_replays_into_its_vms_and_volumes(tmp_path: Path) -> None:
    j = journal(tmp_path,
                {"type": "fleet", "fleet_id": "f1", "backend": "proxmox", "node": "pve", "nodes": ["pve"],
                 "template": 9000, "workers": 2, "vmids": [300, 301], "marker": "m", "time": 1.0},
                {"type": "vm", "vmid": 300, "name": "w1", "node": "pve"}, {"type": "vm-ready", "vmid": 300},
                {"type": "vm", "vmid": 301, "name": "w2", "node": "pve2"},
                {"type": "volume", "storage": "lvm", "vmid": 300, "filename": "vm-300-disk-9"},
                {"type": "volume-made", "storage": "lvm", "filename": "vm-300-disk-9", "volid": "lvm:vm-300-disk-9"},
                {"type": "attached", "vmid": 300, "slot": "scsi1", "volid": "lvm:vm-300-disk-9"},
                {"type": "volume", "storage": "lvm", "vmid": 301, "filename": "vm-301-disk-9"},
                {"type": "power-cycle", "storage": "lvm", "point": None, "stop": True, "vmids": 2},
                {"type": "gone", "kind": "vm", "vmid": 301, "note": "not ours: left alone"})
    st = replay(j, ProxmoxFleetState())
    assert st.header is not None and (st.header.fleet_id, st.header.vmids, st.header.template) == ("f1", [300, 301],
                                                                                                   9000)
    assert st.live_vms() == [300] and st.ready == {300} and st.vms[300].node == "pve"
    assert st.live_volumes() == [OwnedVolume("lvm", 300, "vm-300-disk-9", "lvm:vm-300-disk-9", "scsi1"),
                                 OwnedVolume("lvm", 301, "vm-301-disk-9")]
    more = journal(tmp_path, *[json.loads(line) for line in j.path.read_text().splitlines()],
                   {"type": "detached", "vmid": 300, "slot": "scsi1", "volid": "lvm:vm-300-disk-9"},
                   {"type": "gone", "kind": "volume", "volid": "lvm:vm-300-disk-9", "storage": "lvm",
                    "filename": "vm-300-disk-9"},
                   {"type": "gone", "kind": "volume", "volid": None, "storage": "lvm", "filename": "vm-301-disk-9"},
                   {"type": "gone", "kind": "vm", "vmid": 300})
    assert replay(more, ProxmoxFleetState()).empty


def test_an_old_proxmox_journal_still_replays(tmp_path: Path) -> None:
    """Before multi-node fleets a ``fleet`` record had no ``backend`` or ``nodes`` and a ``vm`` no ``node``; numbers
    journaled as text are read as numbers, as they always were; keys no kind declares are left alone; a torn last
    line is a write a crash cut short."""
    j = journal(tmp_path, {"type": "fleet", "fleet_id": "old", "node": "pve", "template": 9000, "workers": 1,
                           "vmids": ["300"], "marker": "m", "time": 1.0},
                {"type": "vm", "vmid": "300", "name": "w1", "time": 2.0, "extra": {"x": 1}},
                {"type": "vm-ready", "vmid": 300}, tail='{"type": "volume", "stor')
    st = replay(j, ProxmoxFleetState())
    assert st.header is not None and st.header.backend is None and st.header.vmids == [300]
    assert st.vms[300].node is None and st.vms[300].name == "w1" and st.ready == {300} and not st.volumes


def test_an_esxi_fleet_replays_into_its_vms_disks_and_fio_checks(tmp_path: Path) -> None:
    j = journal(tmp_path,
                {"type": "fleet", "fleet_id": "e1", "backend": "vmware", "server": "vc", "template": "t",
                 "vmhost": "h", "workers": 2, "names": ["w1", "w2"], "marker": "m"},
                {"type": "esx-vm", "name": "w1"}, {"type": "esx-vm", "name": "w2"},
                {"type": "esx-vm-made", "name": "w1", "id": "vm-1", "disks": ["[ds] w1/w1.vmdk"]},
                {"type": "esx-vm-ready", "name": "w1", "id": "vm-1"},
                {"type": "esx-disk", "vm": "w1", "id": "vm-1", "datastore": "ds2"},
                {"type": "esx-disk-made", "vm": "w1", "datastore": "ds2", "filename": "[ds2] w1/t.vmdk"},
                {"type": "esx-disk-attached", "vm": "w1", "datastore": "ds2", "filename": None},
                {"type": "esx-fio", "controller": "fio-3.33", "vms": ["vm-1"], "versions": {"w1": "fio-3.33"}},
                {"type": "esx-gone", "kind": "vm", "name": "w2", "id": None, "state": "None"})
    st = replay(j, VmwareFleetState())
    assert st.header is not None and st.header.names == ["w1", "w2"] and st.header.backend == "vmware"
    assert st.vms == {"w1": EsxVm("w1", "vm-1", True, ["[ds] w1/w1.vmdk"])}
    assert st.volumes == [EsxDisk("w1", "vm-1", "ds2", "[ds2] w1/t.vmdk", attached=True)]
    assert [(c.controller, c.vms, c.versions) for c in st.fio_checks] == [("fio-3.33", ["vm-1"], {"w1": "fio-3.33"})]
    gone = journal(tmp_path, *[json.loads(line) for line in j.path.read_text().splitlines()],
                   {"type": "esx-gone", "kind": "disk", "vm": "w1", "datastore": "ds2", "filename": None},
                   {"type": "esx-gone", "kind": "vm", "name": "w1", "id": "vm-1"})
    assert replay(gone, VmwareFleetState()).empty


def test_a_local_fleet_replays_into_its_processes_and_volumes(tmp_path: Path) -> None:
    j = journal(tmp_path, {"type": "fleet", "fleet_id": "q1", "backend": "qemu"},
                {"type": "local-volume", "storage": "nbd", "worker": "g1", "path": "volumes/nbd-g1.raw"},
                {"type": "local-process", "role": "qemu-storage-daemon", "pid": 41, "started": 5.5, "name": "nbd",
                 "storage": "nbd", "control": None},
                {"type": "local-process", "role": "qemu", "pid": 42, "started": 6, "name": None, "storage": "nbd"},
                {"type": "local-gone", "kind": "process", "pid": 41})
    st = replay(j, LocalFleetState())
    assert st.header is not None and st.header.fleet_id == "q1"
    assert st.vms == [OwnedProcess("qemu", 42, 6.0, "", "nbd")] and st.servers == []
    assert st.volumes == {"volumes/nbd-g1.raw": "nbd"}
    gone = journal(tmp_path, *[json.loads(line) for line in j.path.read_text().splitlines()],
                   {"type": "local-gone", "kind": "process", "pid": 42},
                   {"type": "local-gone", "kind": "volume", "path": "volumes/nbd-g1.raw", "storage": "nbd"})
    assert replay(gone, LocalFleetState()).empty


@pytest.mark.parametrize(("state", "records", "words"), [
    (ProxmoxFleetState, [{"type": "vm", "name": "w1"}], "line 2: the 'vm' record has no 'vmid'"),
    (ProxmoxFleetState, [{"type": "volume", "storage": "lvm", "vmid": "x3", "filename": "f"}],
     "line 2: the 'volume' record's 'vmid' is 'x3', not an integer"),
    (ProxmoxFleetState, [{"type": "gone", "kind": "vm"}], "line 2: the 'gone' record has no 'vmid'"),
    (ProxmoxFleetState, [{"type": "vm-reddy", "vmid": 300}], "line 2 is a 'vm-reddy' record, which a proxmox fleet "
                                                              "does not write (its records: fleet, vm, vm-ready,"),
    (VmwareFleetState, [{"type": "esx-disk", "vm": "w1", "datastore": "ds"}], "line 2: the 'esx-disk' record has "
                                                                               "no 'id'"),
    (VmwareFleetState, [{"type": "esx-gone", "kind": "disk", "vm": "w1"}], "line 2: the 'esx-gone' record has no "
                                                                            "'datastore'"),
    (VmwareFleetState, [{"type": "esx-vm-made", "name": "w1", "id": "vm-1", "disks": "[ds] w1.vmdk"}],
     "line 2: the 'esx-vm-made' record's 'disks' is '[ds] w1.vmdk', not a list of texts"),
    (LocalFleetState, [{"type": "local-process", "role": "qemu", "pid": 7}], "line 2: the 'local-process' record "
                                                                             "has no 'started'"),
    (LocalFleetState, [{"type": "local-gone", "kind": "volume"}], "line 2: the 'local-gone' record has no 'path'"),
    (LocalFleetState, [{"type": "vm", "vmid": 300}], "line 2 is a 'vm' record, which a qemu fleet does not write "
                                                     "(its records: fleet, local-volume, local-process, local-gone); "
                                                     "its fleet record (line 1) says backend 'proxmox'"),
])
def test_a_bad_record_is_named_by_file_line_and_field(tmp_path: Path, state: Any, records: list[dict[str, Any]],
                                                      words: str) -> None:
    backend = "qemu" if state is LocalFleetState and records[0]["type"] != "vm" else "proxmox"
    header = {"type": "fleet", "fleet_id": "f", "backend": backend, "vmids": [300]}
    j = journal(tmp_path, header if state is not VmwareFleetState else {**header, "backend": "vmware"}, *records)
    with pytest.raises(DataFileError) as err:
        replay(j, state())
    assert err.value.path == str(j.path) and str(err.value).startswith(f"{j.path}: ")
    assert words in str(err.value), str(err.value)
    assert "Fix: " in str(err.value)


def test_a_header_without_its_id_is_refused(tmp_path: Path) -> None:
    j = journal(tmp_path, {"type": "fleet", "backend": "qemu"})
    with pytest.raises(DataFileError, match=r"fleet.ndjson: line 1: the 'fleet' record has no 'fleet_id'"):
        replay(j, LocalFleetState())


def test_every_record_a_fleet_writes_is_a_kind_its_state_declares() -> None:
    """What a platform's fleet appends (``"type": "..."`` in its modules) is in its state's table: a new kind
    written without its record class would fail every later replay."""
    for state, modules in ((ProxmoxFleetState, ("proxmox/fleet.py", "proxmox/fleetsuite.py")),
                           (VmwareFleetState, ("vmware/fleet.py",)), (LocalFleetState, ("qemu/fleet.py",))):
        source = "".join((paths.ROOT / "harness" / "backends" / m).read_text() for m in modules)
        written = set(re.findall(r'journal\.append\(\{"type": "([a-z-]+)"', source))
        written |= set(re.findall(r'"(esx-disk-(?:made|attached))"', source))
        assert written and written <= set(state.RECORDS), (state.__name__, written - set(state.RECORDS))
        assert all(issubclass(state.RECORDS[k], JournalRecord) for k in state.RECORDS)
        assert issubclass(state.RECORDS["fleet"], FleetRecord)


def test_a_kind_is_declared_once() -> None:
    class A(JournalRecord):
        KIND = "a"

    class B(JournalRecord):
        KIND = "a"

    assert set(record_kinds(A)) == {"a"}
    with pytest.raises(ValueError, match="declared twice"):
        record_kinds(A, B)
