"""The qemu backend builds exactly the test-disk devices qemu-server generates (-drive era).

Expected strings were derived by hand from qemu-server's print_drive_commandline_full,
print_drivedevice_full, the scsihw controller loop in config_to_command and PCI.pm's address map.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from stormatrix.backends.qemu.devices import disk_devices, drive_option
from stormatrix.backends.qemu.vm import QemuVm, VmSpec
from stormatrix.backends.qemu.vm import SOCKET_PATH_MAX, socket_path_problem
from stormatrix.cli import main
from stormatrix.core.errors import EnvironmentProblem
from stormatrix.core.model import DiskConfig

BR = ["-device", "pci-bridge,id=pci.1,chassis_nr=1,bus=pci.0,addr=0x1e",
      "-device", "pci-bridge,id=pci.2,chassis_nr=2,bus=pci.0,addr=0x1f"]
BR3 = BR + ["-device", "pci-bridge,id=pci.3,chassis_nr=3,bus=pci.0,addr=0x5"]


@pytest.mark.parametrize("disk, slot, front, device", [
    (DiskConfig("ide", "native", False, "none"), 1, BR, "ide-hd,bus=ide.0,unit=1,drive=drive-ide1,id=ide1"),
    (DiskConfig("ide", "native", False, "none"), 2, BR, "ide-hd,bus=ide.1,unit=0,drive=drive-ide2,id=ide2"),
    (DiskConfig("sata", "io_uring", False, "none"), 1,
     BR + ["-device", "ahci,id=ahci0,multifunction=on,bus=pci.0,addr=0x7"],
     "ide-hd,bus=ahci0.1,drive=drive-sata1,id=sata1"),
    (DiskConfig("virtio-blk", "native", True, "none"), 1,
     BR + ["-object", "iothread,id=iothread-virtio1"],
     "virtio-blk-pci,drive=drive-virtio1,id=virtio1,bus=pci.0,addr=0xb,iothread=iothread-virtio1"),
    (DiskConfig("virtio-blk", "threads", False, "none"), 7, BR,
     "virtio-blk-pci,drive=drive-virtio7,id=virtio7,bus=pci.2,addr=0x2"),
    (DiskConfig("virtio-scsi-pci", "native", False, "none"), 1,
     BR + ["-device", "virtio-scsi-pci,id=scsihw0,bus=pci.0,addr=0x5"],
     "scsi-hd,bus=scsihw0.0,channel=0,scsi-id=0,lun=1,drive=drive-scsi1,id=scsi1"),
    (DiskConfig("virtio-scsi-single", "native", True, "none"), 1,
     BR3 + ["-object", "iothread,id=iothread-virtioscsi1",
            "-device", "virtio-scsi-pci,id=virtioscsi1,bus=pci.3,addr=0x2,iothread=iothread-virtioscsi1"],
     "scsi-hd,bus=virtioscsi1.0,channel=0,scsi-id=0,lun=1,drive=drive-scsi1,id=scsi1"),
    (DiskConfig("pvscsi", "native", False, "none"), 1,
     BR + ["-device", "pvscsi,id=scsihw0,bus=pci.0,addr=0x5"],
     "scsi-hd,bus=scsihw0.0,scsi-id=1,drive=drive-scsi1,id=scsi1"),
    (DiskConfig("megasas", "native", False, "none"), 0,
     BR + ["-device", "megasas,id=scsihw0,bus=pci.0,addr=0x5"],
     "scsi-hd,bus=scsihw0.0,channel=0,scsi-id=0,lun=0,drive=drive-scsi0,id=scsi0"),
    (DiskConfig("lsi", "native", False, "none"), 8,
     BR + ["-device", "lsi,id=scsihw1,bus=pci.0,addr=0x6"],
     "scsi-hd,bus=scsihw1.0,scsi-id=1,drive=drive-scsi8,id=scsi8"),
    (DiskConfig("lsi53c810", "threads", False, "none"), 1,
     BR + ["-device", "lsi53c810,id=scsihw0,bus=pci.0,addr=0x5"],
     "scsi-hd,bus=scsihw0.0,scsi-id=1,drive=drive-scsi1,id=scsi1"),
])
def test_devices_match_qemu_server(disk: DiskConfig, slot: int, front: list[str], device: str) -> None:
    f, d = disk_devices(disk, "/img.raw", slot)
    assert f == front
    assert d == ["-drive", drive_option(disk, "/img.raw", slot), "-device", device]


def test_iothread_ignored_where_proxmox_ignores_it() -> None:
    f, d = disk_devices(DiskConfig("pvscsi", "native", True, "none"), "/x", 1)
    assert not any("iothread" in a for a in f + d)


@pytest.mark.parametrize("disk, expected", [
    (DiskConfig("virtio-scsi-single", "native", False, "none"),
     "file=/x,if=none,id=drive-scsi1,cache=none,format=raw,aio=native,detect-zeroes=on"),
    (DiskConfig("sata", "threads", False, "writeback"),
     "file=/x,if=none,id=drive-sata1,cache=writeback,format=raw,aio=threads,detect-zeroes=on"),
    # cache unset: qemu-server appends cache=none after the format for direct-capable storage; aio comes
        # last (aio_cmdline_option), as qemu-server's cfg2cmd expectations show
    (DiskConfig("ide", "io_uring", False, "default"),
     "file=/x,if=none,id=drive-ide1,format=raw,cache=none,aio=io_uring,detect-zeroes=on"),
])
def test_drive_option(disk: DiskConfig, expected: str) -> None:
    assert drive_option(disk, "/x", 1) == expected


def test_guest_module_load_order_puts_dependencies_first() -> None:
    """The guest image's module order (smx.mods= on the kernel command line): every module after what it
    needs, the same order for the same input, modules built into the kernel left out, a cycle named."""
    from stormatrix.core.errors import EnvironmentProblem
    from stormatrix.guestimage import topo_order

    deps = {"virtio_scsi": ("virtio", "virtio_ring", "scsi_mod"), "sd_mod": ("scsi_mod", "scsi_common"),
            "scsi_mod": ("scsi_common",), "scsi_common": (), "virtio": (), "virtio_ring": ("builtin_thing",),
            "ahci": ("libahci", "libata"), "libahci": ("libata",), "libata": ("scsi_mod",)}
    order = topo_order(deps)
    assert sorted(order) == sorted(deps) and order == topo_order(dict(reversed(list(deps.items()))))
    for m, needs in deps.items():
        assert all(order.index(d) < order.index(m) for d in needs if d in deps), (m, order)
    with pytest.raises(EnvironmentProblem, match="cycle: .*a.*b|cycle: .*b.*a"):
        topo_order({"a": ("b",), "b": ("a",), "c": ()})


def test_a_test_disk_another_qemu_holds_is_passed_over(tmp_path: Path) -> None:
    """Two runs on one machine: the second takes further copies of the test disk instead of waiting on the
    first run's image lock. The lock is a real QEMU's (an idle one, no guest), read with QEMU's own OFD
    byte-range convention."""
    import shutil
    import subprocess
    import time

    from stormatrix.backends.qemu.testdisks import free_test_disks, image_in_use

    if not shutil.which("qemu-system-x86_64"):
        pytest.skip("qemu-system-x86_64 is not installed")
    first = free_test_disks(tmp_path, 16, 2)
    assert [p.name for p in first] == ["test-16m.raw", "test-16m.b.raw"] and not image_in_use(first[0])
    qemu = subprocess.Popen(["qemu-system-x86_64", "-nodefaults", "-display", "none", "-S", "-machine", "none",
                             "-drive", f"file={first[0]},if=none,format=raw,id=d0"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 20
        while not image_in_use(first[0]):
            assert qemu.poll() is None, qemu.stderr.read() if qemu.stderr else ""
            assert time.monotonic() < deadline, "QEMU never locked the image"
            time.sleep(0.05)
        assert not image_in_use(first[1])
        second = free_test_disks(tmp_path, 16, 2)
        assert [p.name for p in second] == ["test-16m.b.raw", "test-16m.c.raw"]
    finally:
        qemu.kill()
        qemu.wait()
        if qemu.stderr:
            qemu.stderr.close()
    assert not image_in_use(first[0])


def test_a_run_claims_its_test_disks_until_it_releases_them(tmp_path: Path) -> None:
    """Two runs at once: the second claims other images even while the first has no VM running (between two
    cells), and gets the first ones back once they are released."""
    from stormatrix.backends.qemu.testdisks import claim_test_disks

    first = claim_test_disks(tmp_path, 16, 2)
    assert [p.name for p in first.paths] == ["test-16m.raw", "test-16m.b.raw"]
    second = claim_test_disks(tmp_path, 16, 2)
    assert [p.name for p in second.paths] == ["test-16m.c.raw", "test-16m.d.raw"]
    first.release()
    third = claim_test_disks(tmp_path, 16, 1)
    assert [p.name for p in third.paths] == ["test-16m.raw"]
    second.release()
    third.release()


# --- the run folder's depth: QEMU's control sockets ----------------------------------------------------

def _deep(root: Path, total: int) -> Path:
    """A folder under ``root`` whose path is ``total`` bytes long."""
    return root / ("d" * (total - len(os.fsencode(root)) - 1))


def test_socket_paths_up_to_107_bytes_pass_and_longer_ones_are_named_with_the_fix(tmp_path: Path) -> None:
    name = "stormatrix-vm"
    longest = len(f"/{name}.agent")  # the longer of the two sockets (.qmp, .agent)
    assert socket_path_problem(_deep(tmp_path, SOCKET_PATH_MAX - longest), name) is None
    too_deep = _deep(tmp_path, SOCKET_PATH_MAX - longest + 1)
    problem = socket_path_problem(too_deep, name)
    assert problem is not None
    assert f"{too_deep / name}.agent is 108 bytes" in problem and "1 bytes shorter (-o/--output)" in problem
    with pytest.raises(EnvironmentProblem, match="too long for QEMU's control sockets"):
        QemuVm(VmSpec(name=name, disk=DiskConfig("sata", "native", False, "none"), disk_image="x",
                      run_dir=too_deep, image=None))  # type: ignore[arg-type]  # refused before the image is read
    assert not too_deep.exists()  # nothing made for a VM that cannot start


def test_a_run_folder_too_deep_for_the_sockets_is_refused_before_any_vm_starts(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    matrix = tmp_path / "m.toml"
    matrix.write_text('[run]\nname = "deep"\nbackend = "qemu"\nramp_seconds = 1\nmeasure_seconds = 1\n'
                      '[matrix]\ncontrollers = ["sata"]\naio = ["native"]\n'
                      '[workload]\nname = "w"\nrw = "randread"\nbs = "4k"\n')
    out = _deep(tmp_path, 100)
    code = main(["run", str(matrix), "-o", str(out), "--no-progress"])
    text = capsys.readouterr().err
    assert code == EnvironmentProblem.exit_code, text
    assert "too long for QEMU's control sockets" in text and str(out / "vm") in text and "-o/--output" in text
    assert not (out / "vm").exists()  # no VM was started
    kinds = [json.loads(line)["type"] for line in (out / "journal.ndjson").read_text().splitlines()]
    assert set(kinds) <= {"run", "restored"}, kinds  # nothing measured or tried; the run ended in order
