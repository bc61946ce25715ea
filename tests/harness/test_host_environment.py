"""The run record's environment describes the host that was measured, never the workstation as the host.

The Proxmox "node" is this machine reached over a private sshd (tests/standins/sshd.py) whose sessions
have a ``pveversion`` on their PATH that this machine's own PATH does not have: a fact that can only
have come from the ssh side tells the node's inventory apart from the workstation's.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path
from typing import Any, Iterator

import pytest
from standins.sshd import PrivateSshd, SshdUnavailable

from stormatrix.analysis.read.tidy import environment_frame
from stormatrix.backends.proxmox import backend as pmx
from stormatrix.backends.proxmox import node as pmxnode
from stormatrix.backends.base import Backend
from stormatrix.core.errors import BackendError
from stormatrix.core.recordtypes import RunRecord
from stormatrix.host.inventory import inventory, pve_manager
from stormatrix.records import run_environment

PVEVERSION = "pve-manager/9.0.3/025864202ebb6109 (running kernel: 6.14.8-2-pve)"


@pytest.fixture
def node(tmp_path: Path) -> Iterator[tuple[PrivateSshd, str]]:
    """A private sshd whose sessions find a ``pveversion`` (printing a PVE 9 line) that this machine lacks,
    and linux-host/ copied to the "node" the way the proxmox backend's prepare does."""
    if shutil.which("pveversion"):
        pytest.skip("this machine has pveversion: the node's facts could not be told from the workstation's")
    bindir = tmp_path / "node-bin"
    bindir.mkdir()
    tool = bindir / "pveversion"
    tool.write_text(f"#!/bin/sh\necho '{PVEVERSION}'\n")
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    server = PrivateSshd(tmp_path / "sshd", path=[bindir])
    try:
        server.start()
    except SshdUnavailable as exc:
        pytest.skip(f"sshd cannot run here: {exc}")
    node_dir = str(tmp_path / "node" / "linux-host")
    try:
        pmxnode.ensure_remote_collector(server.target, node_dir, ssh_config=str(server.ssh_config))
        yield server, node_dir
    finally:
        server.stop()


def test_pve_manager_is_read_from_pveversions_line() -> None:
    assert pve_manager(PVEVERSION) == "9.0.3"
    assert pve_manager(None) is None
    assert pve_manager("bash: pveversion: command not found") is None


def test_node_inventory_comes_from_the_node_over_ssh(node: tuple[PrivateSshd, str]) -> None:
    server, node_dir = node
    facts = pmxnode.node_inventory(pmxnode.NodeShell(server.target, str(server.ssh_config)), node_dir)
    assert "host_inventory_error" not in facts
    assert facts["host_inventory_source"] == f"ssh {server.target}:{node_dir}/inventory.py"
    assert facts["pveversion"] == PVEVERSION and facts["pve_manager"] == "9.0.3"  # only the node has it
    assert inventory()["pveversion"] is None
    for key in ("cpu_model", "cpus", "kernel", "qemu", "perf", "perf_event_paranoid", "hardware_counters"):
        assert key in facts


def test_unreachable_node_is_said_not_replaced_by_the_workstation(node: tuple[PrivateSshd, str]) -> None:
    server, node_dir = node
    server.stop()
    facts = pmxnode.node_inventory(pmxnode.NodeShell(server.target, str(server.ssh_config), timeout=20), node_dir)
    assert set(facts) == {"host_inventory_error"}
    assert f"ssh {server.target}:{node_dir}/inventory.py" in facts["host_inventory_error"]


def test_missing_inventory_script_on_the_node_is_said(node: tuple[PrivateSshd, str], tmp_path: Path) -> None:
    server, _ = node
    facts = pmxnode.node_inventory(pmxnode.NodeShell(server.target, str(server.ssh_config)), str(tmp_path / "nowhere"))
    assert set(facts) == {"host_inventory_error"}
    assert "exited" in facts["host_inventory_error"]


class _Host(Backend):
    """Only what run_environment calls: host_inventory (the abstract steps are never run here)."""

    name = "fake"

    def __init__(self, answer: Any) -> None:  # no spec: run_environment needs none
        self.answer = answer

    def host_inventory(self) -> dict[str, Any] | None:
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer

    def _prepare(self) -> dict[str, Any]:
        return {}

    def _apply(self, disk: Any) -> None:
        pass

    def _stop(self) -> None:
        pass

    def _restore(self) -> None:
        pass

    def scope(self) -> list[Any]:
        return []

    def endpoints(self) -> list[Any]:
        return []


def test_environment_keeps_the_workstation_apart_from_the_measured_host() -> None:
    here = inventory()
    env = run_environment(_Host({"cpu_model": "Node CPU", "kernel": "6.14.8-2-pve", "host_inventory_source": "x"}))
    assert env["cpu_model"] == "Node CPU" and env["kernel"] == "6.14.8-2-pve"
    assert env["workstation"]["cpu_model"] == here["cpu_model"]
    sheet = dict(environment_frame([RunRecord(run_id="r", environment=env)], [])[["item", "value"]].values.tolist())
    assert sheet["environment.cpu_model"] == "Node CPU"
    assert sheet["environment.workstation.kernel"] == here["kernel"]

    local = run_environment(_Host(None))  # the qemu backend: this machine is the host
    assert local["cpu_model"] == here["cpu_model"] and "workstation" not in local
    assert local["host_inventory_source"].startswith("this machine")


def test_a_host_that_could_not_be_read_has_no_host_facts() -> None:
    env = run_environment(_Host({"host_inventory_error": "ssh to node failed"}))
    assert env["host_inventory_error"] == "ssh to node failed" and "cpu_model" not in env
    env = run_environment(_Host(BackendError("PowerCLI failed")))
    assert env["host_inventory_error"] == "PowerCLI failed" and "cpu_model" not in env
    assert env["workstation"]["cpus"] == os.cpu_count()


def test_proxmox_over_the_api_only_says_it_cannot_describe_the_node(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from stormatrix.registry import spec_from_dict

    if shutil.which("pveversion"):
        pytest.skip("this machine is a Proxmox node")
    monkeypatch.setenv("SMX_HOSTENV_SECRET", "hostenv-secret-271828")
    raw = {"run": {"backend": "proxmox"},
           "matrix": {"controllers": ["virtio-scsi-single"], "aio": ["threads"], "iothread": [True],
                      "cache": ["none"], "disk_slot": 0},
           "workload": [{"name": "r", "rw": "randread", "bs": "64k", "iodepth": 4}],
           "proxmox": {"host": "pve.example", "node": "pve1", "vmid": 100, "test_disk": "scsi0",
                       "token_id": "t", "token_secret_env": "SMX_HOSTENV_SECRET"}}
    backend = pmx.ProxmoxBackend(spec_from_dict(raw, "api.toml"), tmp_path)
    env = run_environment(backend)
    assert "node pve1 not described: [proxmox] ssh is empty" in env["host_inventory_error"]
    assert "cpu_model" not in env and env["workstation"]["cpu_model"] == inventory()["cpu_model"]
