"""Pure Proxmox config logic: drive strings, bus options against the real schema, minimal plans."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from standins import pve_cmdline

from stormatrix.backends.proxmox.cmdline import read_disk
from stormatrix.core.errors import UnsafeChange
from stormatrix.backends.proxmox.change import (Write, _check_write, boot_renamed, boot_without, plan_cell,
                                                plan_restore)
from stormatrix.backends.proxmox.drives import (BUS_OPTIONS, DRIVE_ALIASES, DRIVE_KEY_RE, disk_config_of, drive_for,
                                                parse_drive, print_drive, split_drive_key)
from stormatrix.core.model import CONTROLLERS, DiskConfig
import paths

SCHEMA = json.loads((paths.DATA / "pve-api-qemu.json").read_text())
PUT_PROPS = SCHEMA["/nodes/{node}/qemu/{vmid}/config"]["PUT"]["parameters"]["properties"]
VOL = "local:100/vm-100-disk-1.raw"
ORIGINAL = {"scsihw": "virtio-scsi-single", "scsi1": f"{VOL},aio=native,iothread=1,queues=4,serial=TEST1,size=64M",
            "boot": "order=scsi1;net0", "name": "t", "digest": "d0"}


@pytest.mark.parametrize("bus", ["ide", "sata", "scsi", "virtio"])
def test_bus_options_match_the_api_schema(bus: str) -> None:
    fmt = PUT_PROPS[f"{bus}[n]"]["format"]
    assert BUS_OPTIONS[bus] == {k for k, v in fmt.items() if "alias" not in v}
    assert {k: v["alias"] for k, v in fmt.items() if "alias" in v} == DRIVE_ALIASES


def test_drive_round_trip_is_proxmox_order() -> None:
    opts = parse_drive("volume=local:100/x.raw,size=8G,aio=native,cache=none")
    assert opts == {"file": "local:100/x.raw", "size": "8G", "aio": "native", "cache": "none"}
    assert print_drive(opts) == "local:100/x.raw,aio=native,cache=none,size=8G"
    with pytest.raises(ValueError):
        parse_drive("a:b,aio=native,aio=threads")
    with pytest.raises(ValueError):
        parse_drive("aio=native")


def test_disk_config_of_reads_defaults() -> None:
    assert disk_config_of(ORIGINAL, "scsi1") == DiskConfig("virtio-scsi-single", "native", True, "default")
    assert disk_config_of({"sata1": VOL}, "sata1") == DiskConfig("sata", "io_uring", False, "default")
    assert disk_config_of({"scsi2": f"{VOL},iothread=1"}, "scsi2").controller == "lsi"


def test_drive_for_keeps_only_options_of_the_new_bus() -> None:
    base = parse_drive(ORIGINAL["scsi1"])
    sata = drive_for(DiskConfig("sata", "threads", False, "writeback"), base)
    assert sata == {"file": VOL, "aio": "threads", "cache": "writeback", "serial": "TEST1", "size": "64M"}
    virtio = drive_for(DiskConfig("virtio-blk", "io_uring", True, "default"), base)
    assert virtio["iothread"] == "1" and "queues" not in virtio and "cache" not in virtio
    with pytest.raises(UnsafeChange):
        drive_for(DiskConfig("ide", "native", True, "none"), base)


@pytest.mark.parametrize("controller", sorted(c for c, (bus, _) in CONTROLLERS.items() if bus in ("scsi", "virtio")))
def test_drive_for_writes_an_iothread_only_where_qemu_server_gives_one(controller: str) -> None:
    """qemu-server: iothread=1 takes effect for virtio-blk and virtio-scsi-single; on any other SCSI model
    the API takes it and qemu-server ignores it. What QEMU gets is the stand-in's rendering (qemu-server's
    cfg2cmd expectations), read back with the backend's reader."""
    disk = DiskConfig(controller, "io_uring", True, "none")
    bus, scsihw = CONTROLLERS[controller]
    if controller not in ("virtio-blk", "virtio-scsi-single"):
        with pytest.raises(UnsafeChange, match="no effect"):
            drive_for(disk, {"file": VOL})
        return
    conf = {f"{bus}1": print_drive(drive_for(disk, {"file": VOL})), **({"scsihw": scsihw} if scsihw else {})}
    argv = pve_cmdline.disk_args(conf, lambda volid: "/var/lib/vz/images/100/vm-100-disk-1.raw")
    assert read_disk(argv, f"{bus}1").iothread and disk_config_of(conf, f"{bus}1") == disk


def test_same_bus_change_is_one_write_without_boot() -> None:
    cfg = dict(ORIGINAL)
    plan = plan_cell(cfg, ORIGINAL, "scsi1", DiskConfig("virtio-scsi-single", "io_uring", True, "none"), 1)
    assert not plan.bus_move and len(plan.writes) == 1
    assert plan.writes[0].set == {"scsi1": f"{VOL},aio=io_uring,cache=none,iothread=1,queues=4,serial=TEST1,size=64M"}
    assert plan.writes[0].delete == ()


def test_unchanged_cell_plans_nothing() -> None:
    disk = disk_config_of(ORIGINAL, "scsi1")
    assert plan_cell(dict(ORIGINAL), ORIGINAL, "scsi1", disk, 1).empty


def test_scsihw_change_for_another_scsi_controller() -> None:
    plan = plan_cell(dict(ORIGINAL), ORIGINAL, "scsi1", DiskConfig("pvscsi", "native", False, "none"), 1)
    assert plan.writes[0].set["scsihw"] == "pvscsi"
    assert "iothread" not in parse_drive(plan.writes[0].set["scsi1"])


def test_bus_move_deletes_first_then_sets_and_re_sets_boot() -> None:
    plan = plan_cell(dict(ORIGINAL), ORIGINAL, "scsi1", DiskConfig("sata", "native", False, "none"), 1)
    assert plan.bus_move
    first, second = plan.writes
    assert first.params() == {"delete": "scsi1"}
    assert second.set["sata1"].startswith(VOL + ",aio=native,cache=none")
    assert second.set["boot"] == "order=sata1;net0"
    assert "scsihw" not in second.set  # the SCSI controller is left alone when the disk is not on SCSI
    for w in plan.writes:
        assert "force" not in w.params()


def test_after_the_delete_the_volume_is_found_in_unused() -> None:
    # The state Proxmox leaves after `delete=scsi1`: unused0 holds the volume, boot lost scsi1.
    cfg = {"scsihw": "virtio-scsi-single", "unused0": VOL, "boot": "order=net0", "name": "t"}
    plan = plan_cell(cfg, ORIGINAL, "scsi1", DiskConfig("sata", "native", False, "none"), 1)
    assert len(plan.writes) == 1 and not plan.bus_move
    assert set(plan.writes[0].set) == {"sata1", "boot"} and plan.writes[0].delete == ()


def test_restore_from_unused_and_from_another_bus() -> None:
    cfg = {"scsihw": "pvscsi", "unused0": VOL, "name": "t"}
    plan = plan_restore(cfg, ORIGINAL, "scsi1")
    (w,) = plan.writes
    assert w.set == {"scsi1": ORIGINAL["scsi1"], "scsihw": "virtio-scsi-single", "boot": "order=scsi1;net0"}
    cfg = {"scsihw": "virtio-scsi-single", "virtio1": f"{VOL},aio=threads", "boot": "order=virtio1;net0", "name": "t"}
    plan = plan_restore(cfg, ORIGINAL, "scsi1")
    assert plan.writes[0].params() == {"delete": "virtio1"}
    assert plan.writes[1].set == {"scsi1": ORIGINAL["scsi1"], "boot": "order=scsi1;net0"}


def test_restore_deletes_keys_that_were_absent() -> None:
    original = {"scsi1": VOL, "digest": "x"}
    cfg = {"scsi1": f"{VOL},aio=threads", "scsihw": "megasas"}
    (w,) = plan_restore(cfg, original, "scsi1").writes
    assert w.set == {"scsi1": VOL} and w.delete == ("scsihw",)


def test_refuses_a_slot_held_by_another_volume() -> None:
    cfg = {**ORIGINAL, "sata1": "local:100/other.raw"}
    with pytest.raises(UnsafeChange, match="sata1 already holds"):
        plan_cell(cfg, ORIGINAL, "scsi1", DiskConfig("sata", "native", False, "none"), 1)


def test_refuses_when_the_volume_is_gone() -> None:
    with pytest.raises(UnsafeChange, match="not referenced"):
        plan_restore({"name": "t"}, ORIGINAL, "scsi1")


def test_never_deletes_or_sets_unused() -> None:
    with pytest.raises(UnsafeChange):
        _check_write(Write(delete=("unused0",)))
    with pytest.raises(UnsafeChange):
        _check_write(Write(set={"unused1": VOL}))


def test_boot_helpers() -> None:
    assert boot_renamed("order=scsi0;scsi1", "scsi1", "ide1") == "order=scsi0;ide1"
    assert boot_renamed("cdn", "scsi1", "ide1") == "cdn"
    assert boot_without("order=scsi1", ["scsi1"]) is None
    assert boot_without("order=scsi0;scsi1", ["scsi1"]) == "order=scsi0"


def test_every_controller_plans_valid_params_per_schema() -> None:
    """Every value a plan writes passes the API schema's drive format for its bus."""
    for ctrl, (bus, _) in CONTROLLERS.items():
        if bus == "esxi":
            continue
        for aio in ("native", "io_uring", "threads"):
            iothread = ctrl in ("virtio-blk", "virtio-scsi-single")
            plan = plan_cell(dict(ORIGINAL), ORIGINAL, "scsi1", DiskConfig(ctrl, aio, iothread, "none"), 1)
            for w in plan.writes:
                for key, value in w.set.items():
                    if DRIVE_KEY_RE.match(key):
                        fmt = PUT_PROPS[f"{split_drive_key(key)[0]}[n]"]["format"]
                        assert set(parse_drive(value)) <= set(fmt), (ctrl, value)
                    elif key == "scsihw":
                        assert value in PUT_PROPS["scsihw"]["enum"]
