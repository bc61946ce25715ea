"""The test disk's QEMU devices exactly as Proxmox's qemu-server writes them (-drive era).

The device strings follow qemu-server's ``print_drive_commandline_full`` / ``print_drivedevice_full``
and its PCI address map (``PVE/QemuServer.pm``, ``PVE/QemuServer/PCI.pm`` of the -drive era, which is
what QEMU 7.2 machines get): option order, ids (``drive-scsi1``, ``scsihw0``, ``virtioscsi1``),
iothread objects, PCI bridges and addresses. The local disk stands for a directory storage (O_DIRECT
when cache is unset). ``tests/harness/backends/proxmox/test_pve_cfg2cmd_conformance.py`` compares them with
qemu-server's own expectations for every controller.
"""

from __future__ import annotations

from ...core.errors import EnvironmentProblem
from ...core.model import CONTROLLERS, DiskConfig

# qemu-server's PCI address map (PVE/QemuServer/PCI.pm) for the devices the test disk can need.
PCI_ADDR: dict[str, tuple[int, int]] = {
    "scsihw0": (0, 5), "pci.3": (0, 5), "scsihw1": (0, 6), "ahci0": (0, 7),
    **{f"virtio{i}": (0, 10 + i) for i in range(6)},
    **{f"virtio{i}": (2, i - 5) for i in range(6, 16)},
    **{f"virtioscsi{i}": (3, i + 1) for i in range(31)},
    "scsihw2": (4, 1), "scsihw3": (4, 2), "scsihw4": (4, 3),
    "net0": (0, 18), "pci.1": (0, 30), "pci.2": (0, 31),
}


def pci_addr(dev_id: str, bridges: set[int]) -> str:
    bus, addr = PCI_ADDR[dev_id]
    bridges.add(bus)
    return f",bus=pci.{bus},addr={addr:#x}"


def drive_option(disk: DiskConfig, path: str, slot: int) -> str:
    """qemu-server's ``-drive`` string for the test disk (print_drive_commandline_full)."""
    ds = f"{disk.bus}{slot}"
    opts = ""
    if disk.cache != "default":
        opts += f",cache={disk.cache}"
    opts += ",format=raw"
    if disk.cache == "default":  # unset cache with a direct-capable storage: qemu-server adds cache=none
        opts += ",cache=none"
    opts += f",aio={disk.aio}"  # qemu-server's aio_cmdline_option comes after the cache
    opts += ",detect-zeroes=on"
    return f"file={path},if=none,id=drive-{ds}{opts}"


def disk_devices(disk: DiskConfig, path: str, slot: int) -> tuple[list[str], list[str]]:
    """(``-object`` and ``-device`` args including PCI bridges, ``-drive`` args) for the test disk.

    Returns two argument lists: the first goes before the drive (objects, bridges, controllers),
    the second is the drive and its device, in qemu-server's order.
    """
    if disk.controller not in CONTROLLERS or CONTROLLERS[disk.controller][0] == "esxi":
        raise EnvironmentProblem(f"the qemu backend cannot build controller {disk.controller!r}")
    bridges: set[int] = set()
    objects: list[str] = []
    controllers: list[str] = []
    ds = f"{disk.bus}{slot}"
    if disk.bus == "virtio":
        if disk.iothread:
            objects += ["-object", f"iothread,id=iothread-{ds}"]
        device = f"virtio-blk-pci,drive=drive-{ds},id={ds}{pci_addr(ds, bridges)}"
        if disk.iothread:
            device += f",iothread=iothread-{ds}"
    elif disk.bus == "scsi":
        scsihw = disk.scsihw or "lsi"
        maxdev = 7 if scsihw.startswith("lsi") else 1 if scsihw == "virtio-scsi-single" else 256
        ctrl = slot // maxdev
        unit = slot % maxdev
        prefix = "virtioscsi" if scsihw == "virtio-scsi-single" else "scsihw"
        hw_type = "virtio-scsi-pci" if scsihw == "virtio-scsi-single" else scsihw
        iothread = ""
        if scsihw == "virtio-scsi-single" and disk.iothread:
            iothread = f",iothread=iothread-{prefix}{ctrl}"
            objects += ["-object", f"iothread,id=iothread-{prefix}{ctrl}"]
        if scsihw == "virtio-scsi-single":
            bridges.add(3)  # qemu-server always adds the pci.3 bridge for virtio-scsi-single
        controllers += ["-device", f"{hw_type},id={prefix}{ctrl}{pci_addr(f'{prefix}{ctrl}', bridges)}{iothread}"]
        if scsihw.startswith("lsi") or scsihw == "pvscsi":
            device = f"scsi-hd,bus={prefix}{ctrl}.0,scsi-id={unit}"
        else:
            device = f"scsi-hd,bus={prefix}{ctrl}.0,channel=0,scsi-id=0,lun={slot}"
        device += f",drive=drive-{ds},id={ds}"
    elif disk.bus == "sata":
        ctrl, unit = slot // 6, slot % 6
        controllers += ["-device", f"ahci,id=ahci{ctrl},multifunction=on{pci_addr(f'ahci{ctrl}', bridges)}"]
        device = f"ide-hd,bus=ahci{ctrl}.{unit},drive=drive-{ds},id={ds}"
    elif disk.bus == "ide":
        ctrl, unit = slot // 2, slot % 2
        device = f"ide-hd,bus=ide.{ctrl},unit={unit},drive=drive-{ds},id={ds}"
    else:  # pragma: no cover - CONTROLLERS is closed
        raise EnvironmentProblem(f"unknown bus {disk.bus}")
    # i440fx machines >= 2.3 always get bridges pci.1 and pci.2; pci.4 would nest in pci.1.
    bridges |= {1, 2}
    bridge_args: list[str] = []
    for k in sorted((b for b in bridges if b > 0), reverse=True):
        bus, addr = PCI_ADDR[f"pci.{k}"]
        bridge_args = ["-device", f"pci-bridge,id=pci.{k},chassis_nr={k},bus=pci.{bus},addr={addr:#x}"] + bridge_args
    return bridge_args + objects + controllers, ["-drive", drive_option(disk, path, slot), "-device", device]
