"""The Proxmox stand-in itself behaves like Proxmox documents (so backend tests against it mean something)."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest
import requests

from standins.pve import PveStandin

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
    upid = http.post(base + "/status/reboot").json()["data"]
    while http.get(f"https://127.0.0.1:{s.port}/api2/json/nodes/pve/tasks/{upid}/status").json()["data"]["status"] == "running":
        pass
    assert http.get(base + "/config", params={"current": 1}).json()["data"]["scsihw"] == "pvscsi"
    assert all("pending" not in p for p in http.get(base + "/pending").json()["data"])


def test_boot_order_must_name_existing_devices(pve: tuple[PveStandin, requests.Session, str]) -> None:
    _, http, base = pve
    r = http.put(base + "/config", data={"boot": "order=sata3"})
    assert r.status_code == 400 and "boot" in r.json()["errors"]
