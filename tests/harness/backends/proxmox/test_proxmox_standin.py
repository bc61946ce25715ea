"""The Proxmox stand-in itself behaves like Proxmox documents (so backend tests against it mean something)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Iterator

import pytest
import requests

from standins.pve import PveStandin, SleepLauncher

SECRET = "standin-secret-0123456789"
AUTH = {"Authorization": f"PVEAPIToken=root@pam!t={SECRET}"}


@pytest.fixture
def pve(tmp_path: Path) -> Iterator[tuple[PveStandin, requests.Session, str]]:
    s = PveStandin(tmp_path / "pve", tokens={"root@pam!t": SECRET})
    vol = s.add_volume(100, "vm-100-disk-1.raw")
    s.add_vm(100, {"scsihw": "lsi", "scsi1": f"{vol},aio=native", "boot": "order=scsi1"})
    with s, requests.Session() as http:
        http.verify = str(s.ca_file)
        http.trust_env = False  # REQUESTS_CA_BUNDLE would override the session's CA otherwise
        http.headers.update(AUTH)
        yield s, http, f"https://127.0.0.1:{s.port}/api2/json/nodes/pve/qemu/100"


def test_token_required(pve: tuple[PveStandin, requests.Session, str]) -> None:
    s, http, base = pve
    r = requests.get(base + "/config", verify=str(s.ca_file), headers={"Authorization": "PVEAPIToken=root@pam!t=x"})
    assert r.status_code == 401


def test_schema_rejects_unknown_and_invalid(pve: tuple[PveStandin, requests.Session, str]) -> None:
    _, http, base = pve
    r = http.put(base + "/config", data={"bogus": "1"})
    assert r.status_code == 400 and r.reason == "Parameter verification failed."
    assert "bogus" in r.json()["errors"]
    r = http.put(base + "/config", data={"scsi1": "local:100/vm-100-disk-1.raw,aio=fast"})
    assert "scsi1.aio" in r.json()["errors"]
    r = http.put(base + "/config", data={"sata1": "local:100/vm-100-disk-1.raw,iothread=1"})
    assert "sata1.iothread" in r.json()["errors"]  # iothread is not in the sata schema
    r = http.put(base + "/config", data={"scsi31": "local:100/x.raw"})
    assert "scsi31" in r.json()["errors"]
    r = http.put(base + "/config", data={"force": "1"})
    assert "force" in r.json()["errors"]  # force requires delete


def test_delete_makes_unused_and_unused_delete_destroys(pve: tuple[PveStandin, requests.Session, str]) -> None:
    s, http, base = pve
    assert http.put(base + "/config", data={"delete": "scsi1"}).status_code == 200
    conf = http.get(base + "/config").json()["data"]
    assert conf["unused0"] == "local:100/vm-100-disk-1.raw" and "boot" not in conf
    assert http.put(base + "/config", data={"ide1": "local:100/vm-100-disk-1.raw"}).status_code == 200
    assert "unused0" not in http.get(base + "/config").json()["data"]
    http.put(base + "/config", data={"delete": "ide1"})
    assert http.put(base + "/config", data={"delete": "unused0"}).status_code == 200
    assert s.destroyed == ["local:100/vm-100-disk-1.raw"] and not s.volumes()


def test_digest_and_pending(pve: tuple[PveStandin, requests.Session, str]) -> None:
    s, http, base = pve
    d0 = http.get(base + "/config").json()["data"]["digest"]
    r = http.put(base + "/config", data={"scsihw": "pvscsi", "digest": "0" * 40})
    assert r.status_code == 500 and "detected modified configuration" in r.reason
    upid = http.post(base + "/status/start").json()["data"]
    while http.get(f"https://127.0.0.1:{s.port}/api2/json/nodes/pve/tasks/{upid}/status").json()["data"]["status"] == "running":
        pass
    assert http.put(base + "/config", data={"scsihw": "pvscsi", "digest": d0}).status_code == 200
    assert http.get(base + "/config").json()["data"]["scsihw"] == "pvscsi"
    assert http.get(base + "/config", params={"current": 1}).json()["data"]["scsihw"] == "lsi"
    pending = {p["key"]: p for p in http.get(base + "/pending").json()["data"]}
    assert pending["scsihw"] == {"key": "scsihw", "value": "lsi", "pending": "pvscsi"}
    pid0 = http.get(base + "/status/current").json()["data"]["pid"]
    upid = http.post(base + "/status/reboot").json()["data"]
    wait_task(s, http, upid)
    # the reboot task only shut the guest down; qm cleanup starts it again in a task of its own
    wait_running(http, base, other_than=pid0)
    assert http.get(base + "/config", params={"current": 1}).json()["data"]["scsihw"] == "pvscsi"
    assert all("pending" not in p for p in http.get(base + "/pending").json()["data"])


def wait_task(s: PveStandin, http: requests.Session, upid: str) -> dict:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        st = http.get(f"https://127.0.0.1:{s.port}/api2/json/nodes/pve/tasks/{upid}/status").json()["data"]
        if st["status"] == "stopped":
            return st
        time.sleep(0.02)
    raise AssertionError(f"task {upid} still running")


def wait_running(http: requests.Session, base: str, other_than: int) -> int:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        st = http.get(base + "/status/current").json()["data"]
        if st["status"] == "running" and st["pid"] != other_than:
            return st["pid"]
        time.sleep(0.02)
    raise AssertionError("the VM did not come back")


def test_reboot_is_shutdown_then_a_new_qemu_started_by_qm_cleanup(pve: tuple[PveStandin, requests.Session, str]) -> None:
    s, http, base = pve
    node = f"https://127.0.0.1:{s.port}/api2/json/nodes/pve"
    r = http.post(base + "/status/reboot")
    assert r.status_code == 500 and r.reason == "VM 100 not running"  # refused before any task starts
    wait_task(s, http, http.post(base + "/status/start").json()["data"])
    pid0 = http.get(base + "/status/current").json()["data"]["pid"]
    d0 = http.get(base + "/config").json()["data"]["digest"]
    assert http.put(base + "/config", data={"scsihw": "megasas", "digest": d0}).status_code == 200
    upid = http.post(base + "/status/reboot").json()["data"]
    assert wait_task(s, http, upid)["exitstatus"] == "OK"
    # right after the reboot task: QEMU is gone, the change still pending (nothing started yet)
    assert http.get(base + "/status/current").json()["data"]["status"] == "stopped"
    assert any(p.get("pending") == "megasas" for p in http.get(base + "/pending").json()["data"])
    pid1 = wait_running(http, base, other_than=pid0)
    assert not s.reboot_request(100).exists()
    tasks = http.get(node + "/tasks", params={"vmid": 100, "source": "all"}).json()["data"]
    restart = [t for t in tasks if t["type"] == "qmstart" and "tokenid" not in t]
    assert len(restart) == 1 and restart[0]["user"] == "root@pam"
    assert wait_task(s, http, restart[0]["upid"])["exitstatus"] == "OK"
    assert [t["type"] for t in tasks][:2] == ["qmstart", "qmreboot"] and tasks[1]["tokenid"] == "t"
    assert http.get(base + "/config", params={"current": 1}).json()["data"]["scsihw"] == "megasas"
    assert not [p for p in http.get(base + "/pending").json()["data"] if "pending" in p or "delete" in p]
    assert pid1 != pid0 and s.launcher.started[-1].controller == "megasas"  # type: ignore[attr-defined]


def test_reboot_of_a_guest_that_ignores_acpi_times_out(tmp_path: Path) -> None:
    s = PveStandin(tmp_path / "pve", tokens={"root@pam!t": SECRET}, launcher=SleepLauncher(guest_acpi=False),
                   auditors=set())
    vol = s.add_volume(100, "vm-100-disk-1.raw")
    s.add_vm(100, {"scsihw": "lsi", "scsi1": f"{vol},aio=native", "boot": "order=scsi1"})
    with s, requests.Session() as http:
        http.verify, http.trust_env = str(s.ca_file), False
        http.headers.update(AUTH)
        base = f"https://127.0.0.1:{s.port}/api2/json/nodes/pve/qemu/100"
        wait_task(s, http, http.post(base + "/status/start").json()["data"])
        pid0 = http.get(base + "/status/current").json()["data"]["pid"]
        d0 = http.get(base + "/config").json()["data"]["digest"]
        http.put(base + "/config", data={"scsihw": "megasas", "digest": d0})
        st = wait_task(s, http, http.post(base + "/status/reboot", data={"timeout": 1}).json()["data"])
        assert st["exitstatus"] == "VM quit/powerdown failed - got timeout"
        assert not s.reboot_request(100).exists()  # cleared, so a later shutdown is not taken for a reboot
        time.sleep(0.5)
        cur = http.get(base + "/status/current").json()["data"]
        assert cur["status"] == "running" and cur["pid"] == pid0
        assert any(p.get("pending") == "megasas" for p in http.get(base + "/pending").json()["data"])
        # a token without Sys.Audit on the node sees only its own tasks
        s._task("qmstart", 100, "root@pam", lambda t: None)
        node = f"https://127.0.0.1:{s.port}/api2/json/nodes/pve"
        assert {t["user"] for t in http.get(node + "/tasks", params={"source": "all"}).json()["data"]} == {"root@pam"}
        assert all(t.get("tokenid") == "t" for t in http.get(node + "/tasks", params={"source": "all"}).json()["data"])
        other = next(u for u, t in s.tasks.items() if t.user == "root@pam")
        r = http.get(f"{node}/tasks/{other}/status")
        assert r.status_code == 403 and "Sys.Audit" in r.reason


def test_boot_order_must_name_existing_devices(pve: tuple[PveStandin, requests.Session, str]) -> None:
    _, http, base = pve
    r = http.put(base + "/config", data={"boot": "order=sata3"})
    assert r.status_code == 400 and "boot" in r.json()["errors"]


# --- the stand-in's QEMU command line is qemu-server's, checked against qemu-server's own test data ------

from standins import pve_cmdline  # noqa: E402
import paths

#: the copy of proxmox/qemu-server's src/test/cfg2cmd pairs (tests/data/qemu-server-cfg2cmd/README.md)
CFG2CMD = paths.DATA / "qemu-server-cfg2cmd"
_DISK_DEVICES = ("pci-bridge", "ahci", "lsi", "lsi53c810", "megasas", "pvscsi", "virtio-scsi-pci", "scsi-hd", "scsi-cd",
                 "ide-hd", "ide-cd", "virtio-blk-pci")

# Excerpts of qemu-server's cfg2cmd pairs (drive era), so the check runs without the copy:
# the config's drive lines, and the disk arguments of the expected command line.
EXCERPTS = {
    "simple1.conf (virtio-scsi-pci, legacy bootdisk, an empty CD-ROM)": (
        {"bootdisk": "scsi0", "ide2": "none,media=cdrom", "scsihw": "virtio-scsi-pci",
         "scsi0": "local:8006/vm-8006-disk-0.qcow2,discard=on,size=104858K"},
        ["-device", "pci-bridge,id=pci.1,chassis_nr=1,bus=pci.0,addr=0x1e",
         "-device", "pci-bridge,id=pci.2,chassis_nr=2,bus=pci.0,addr=0x1f",
         "-drive", "if=none,id=drive-ide2,media=cdrom,aio=io_uring",
         "-device", "ide-cd,bus=ide.1,unit=0,drive=drive-ide2,id=ide2,bootindex=200",
         "-device", "virtio-scsi-pci,id=scsihw0,bus=pci.0,addr=0x5",
         "-drive", "file=/var/lib/vz/images/8006/vm-8006-disk-0.qcow2,if=none,id=drive-scsi0,discard=on,format=qcow2,"
                   "cache=none,aio=io_uring,detect-zeroes=unmap",
         "-device", "scsi-hd,bus=scsihw0.0,channel=0,scsi-id=0,lun=0,drive=drive-scsi0,id=scsi0,bootindex=100"]),
    "bootorder.conf (lsi, virtio-blk with iothreads, boot order)": (
        {"boot": "order=virtio1;net0;scsi4;ide2", "ide2": "none,media=cdrom",
         "scsi4": "local:8006/vm-8006-disk-0.qcow2,discard=on,size=104858K",
         "virtio0": "local:8006/vm-8006-disk-0.qcow2,discard=on,iothread=1,size=104858K",
         "virtio1": "local:8006/vm-8006-disk-0.qcow2,discard=on,iothread=1,size=104858K"},
        ["-object", "iothread,id=iothread-virtio0", "-object", "iothread,id=iothread-virtio1",
         "-device", "pci-bridge,id=pci.1,chassis_nr=1,bus=pci.0,addr=0x1e",
         "-device", "pci-bridge,id=pci.2,chassis_nr=2,bus=pci.0,addr=0x1f",
         "-drive", "if=none,id=drive-ide2,media=cdrom,aio=io_uring",
         "-device", "ide-cd,bus=ide.1,unit=0,drive=drive-ide2,id=ide2,bootindex=103",
         "-device", "lsi,id=scsihw0,bus=pci.0,addr=0x5",
         "-drive", "file=/var/lib/vz/images/8006/vm-8006-disk-0.qcow2,if=none,id=drive-scsi4,discard=on,format=qcow2,"
                   "cache=none,aio=io_uring,detect-zeroes=unmap",
         "-device", "scsi-hd,bus=scsihw0.0,scsi-id=4,drive=drive-scsi4,id=scsi4,bootindex=102",
         "-drive", "file=/var/lib/vz/images/8006/vm-8006-disk-0.qcow2,if=none,id=drive-virtio0,discard=on,format=qcow2,"
                   "cache=none,aio=io_uring,detect-zeroes=unmap",
         "-device", "virtio-blk-pci,drive=drive-virtio0,id=virtio0,bus=pci.0,addr=0xa,iothread=iothread-virtio0",
         "-drive", "file=/var/lib/vz/images/8006/vm-8006-disk-0.qcow2,if=none,id=drive-virtio1,discard=on,format=qcow2,"
                   "cache=none,aio=io_uring,detect-zeroes=unmap",
         "-device", "virtio-blk-pci,drive=drive-virtio1,id=virtio1,bus=pci.0,addr=0xb,iothread=iothread-virtio1,"
                    "bootindex=100"]),
}


def _local_path(volid: str) -> str:
    """Proxmox's ``local`` directory storage: ``local:VMID/NAME`` is /var/lib/vz/images/VMID/NAME."""
    storage, _, rel = volid.partition(":")
    assert storage == "local", volid
    return f"/var/lib/vz/template/iso/{rel[4:]}" if rel.startswith("iso/") else f"/var/lib/vz/images/{rel}"


@pytest.mark.parametrize("name", sorted(EXCERPTS))
def test_disk_arguments_are_qemu_servers(name: str) -> None:
    conf, expected = EXCERPTS[name]
    assert pve_cmdline.disk_args(conf, _local_path) == expected


def _conf(path: Path) -> dict[str, str]:
    conf: dict[str, str] = {}
    for line in path.read_text().splitlines():
        if line.startswith("["):
            break  # a snapshot section
        if line and not line.startswith("#") and ":" in line:
            key, _, value = line.partition(":")
            conf[key.strip()] = value.strip()
    return conf


def _expected(cmd: Path, *, devices_only: bool = False) -> list[str]:
    import shlex

    argv = shlex.split(cmd.read_text().replace("\\\n", " "))
    out: list[str] = []
    for flag, value in zip(argv, argv[1:]):
        if flag == "-device" and value.split(",")[0] in _DISK_DEVICES:
            if devices_only:  # blockdev era: the same devices, plus properties the drive era did not have
                value = ",".join(p for p in value.split(",") if not p.startswith(("device_id=", "write-cache=")))
            out += [flag, value]
        elif not devices_only and (flag == "-drive" or (flag == "-object" and value.startswith("iothread"))):
            out += [flag, value]
    return out


def test_disk_arguments_match_every_drive_era_pair_on_directory_storage() -> None:
    """Every pair of qemu-server's test data whose drives are on ``local`` (the stand-in's one storage)
    or empty CD-ROMs: the disk arguments are exactly qemu-server's."""
    folder = CFG2CMD / "drive-era"
    if not folder.is_dir():
        pytest.skip(f"no copy of qemu-server's cfg2cmd test data at {folder} (the excerpts above still ran)")
    checked = []
    for conf_path in sorted(folder.glob("*.conf")):
        cmd = conf_path.with_suffix(".conf.cmd")
        conf = _conf(conf_path)
        vols = [v.split(",")[0] for k, v in conf.items() if pve_cmdline.DRIVE_RE.match(k)]
        if not cmd.exists() or not vols or "template" in conf or "q35" in conf.get("machine", "") or \
                any(v not in ("none", "cdrom") and not v.startswith("local:") for v in vols):
            continue
        try:
            got = pve_cmdline.disk_args(conf, _local_path)
        except pve_cmdline.NoExpectation:
            continue
        assert got == _expected(cmd), conf_path.name
        checked.append(conf_path.name)
    assert len(checked) >= 5 and {"simple1.conf", "simple-virtio-blk.conf", "bootorder.conf"} <= set(checked), checked


@pytest.mark.parametrize("model", ["lsi", "lsi53c810", "megasas", "pvscsi", "virtio-scsi-single"])
def test_scsi_controller_models_address_disks_as_qemu_server_does(model: str) -> None:
    """The blockdev era's ``scsihw-*`` pairs: one per SCSI model, disks at slots 0, 1, 5, 9 and 16 (so
    the 7-disk lsi controllers and the per-disk virtio-scsi-single controllers show). Their controller
    and disk devices are the drive era's (the blockdev era only adds device_id and write-cache)."""
    conf_path = CFG2CMD / "blockdev-era" / f"scsihw-{model}.conf"
    if not conf_path.is_file():
        pytest.skip(f"no copy of qemu-server's cfg2cmd test data at {conf_path.parent}")
    conf = _conf(conf_path)
    got = pve_cmdline.disk_args(conf, lambda volid: f"/dev/veegee/{volid.partition(':')[2]}")
    devices = [x for flag, value in zip(got[::2], got[1::2]) if flag == "-device" for x in (flag, value)]
    assert devices == _expected(conf_path.with_suffix(".conf.cmd"), devices_only=True)
