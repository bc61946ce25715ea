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
