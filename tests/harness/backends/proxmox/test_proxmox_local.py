"""transport = "local": the backend drives ``pvesh`` on the node. Here ``pvesh`` is a small fake on
PATH that forwards its arguments to the stand-in the way pvesh maps them onto the API (get/set/create/
delete, ``--key value``, ``--output-format json``, errors on stderr with a non-zero exit)."""

from __future__ import annotations

import os
import sys
import textwrap
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from standins.pve import PveStandin

from stormatrix.backends.proxmox import backend as pmx
from stormatrix.backends.proxmox.api import PveshTransport
from stormatrix.core.errors import ConfigConflictError
from stormatrix.core.model import DiskConfig
from stormatrix.registry import spec_from_dict

SECRET = "local-transport-secret-77"

FAKE_PVESH = textwrap.dedent("""\
    #!{python}
    import json, os, sys, requests
    verb, path, *rest = sys.argv[1:]
    method = {{"get": "GET", "set": "PUT", "create": "POST", "delete": "DELETE"}}[verb]
    params, it = {{}}, iter(rest)
    for arg in it:
        value = next(it)
        if arg != "--output-format":
            params[arg[2:]] = value
    url = "https://127.0.0.1:" + os.environ["FAKE_PVE_PORT"] + "/api2/json" + path
    s = requests.Session(); s.trust_env = False; s.verify = os.environ["FAKE_PVE_CA"]
    s.headers["Authorization"] = "PVEAPIToken=root@pam!local=" + os.environ["FAKE_PVE_SECRET"]
    r = s.request(method, url, params=params if method in ("GET", "DELETE") else None,
                  data=params if method in ("POST", "PUT") else None)
    body = r.json()
    if r.status_code >= 400:
        head = r.reason if r.status_code == 500 else f"{{r.status_code}} {{r.reason}}"
        print(head, file=sys.stderr)
        for k, v in (body.get("errors") or {{}}).items():
            print(f"{{k}}: {{v}}", file=sys.stderr)
        sys.exit(255)
    print(json.dumps(body["data"]))
""")


@contextmanager
def on_the_node(s: PveStandin, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                secret: str = SECRET) -> Iterator[PveStandin]:
    """The stand-in running, seen as from its node: the fake ``pvesh`` (logging in with the token ``secret``)
    and the node's ``qm`` first on PATH."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "pvesh"
    fake.write_text(FAKE_PVESH.format(python=sys.executable))
    fake.chmod(0o755)
    with s:
        s.install_node_tools(bindir)
        monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
        monkeypatch.setenv("FAKE_PVE_PORT", str(s.port))
        monkeypatch.setenv("FAKE_PVE_CA", str(s.ca_file))
        monkeypatch.setenv("FAKE_PVE_SECRET", secret)
        yield s


@pytest.fixture
def node(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[PveStandin]:
    s = PveStandin(tmp_path / "pve", tokens={"root@pam!local": SECRET})
    vol = s.add_volume(100, "vm-100-disk-1.raw")
    s.add_vm(100, {"scsihw": "lsi", "scsi1": f"{vol},cache=none", "boot": "order=scsi1"})
    with on_the_node(s, tmp_path, monkeypatch):
        yield s


def test_pvesh_argv() -> None:
    t = PveshTransport(timeout=5)
    assert t.argv("PUT", "/nodes/pve/qemu/100/config", {"delete": "scsi1", "digest": "abc"}) == [
        "pvesh", "set", "/nodes/pve/qemu/100/config", "--output-format", "json", "--delete", "scsi1", "--digest", "abc"]


def test_local_transport_applies_and_restores(node: PveStandin, tmp_path: Path) -> None:
    digest0 = node.digest(100)
    raw = {"run": {"backend": "proxmox"}, "matrix": {"disk_slot": 1, "controllers": ["sata", "megasas"], "aio": ["threads"]},
           "workload": [{"name": "r", "rw": "randread", "bs": "4k"}],
           "proxmox": {"transport": "local", "node": "pve", "vmid": 100, "test_disk": "scsi1", "task_timeout": 30,
                       "qemu_server_dir": str(node.run_dir)}}
    b = pmx.ProxmoxBackend(spec_from_dict(raw), tmp_path / "run")
    b.prepare()
    b.apply(DiskConfig("sata", "threads", False, "none"))
    b.apply(DiskConfig("megasas", "threads", False, "none"))
    assert node.launch_spec(node.vms[100]).controller == "megasas"
    node.transient_edit("lock", "backup")
    with pytest.raises(ConfigConflictError):
        b.apply(DiskConfig("sata", "threads", False, "none"))
    b.restore()
    b.close()
    assert node.digest(100) == digest0 and not node.destroyed
