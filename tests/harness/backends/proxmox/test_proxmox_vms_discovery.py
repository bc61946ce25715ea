"""Guest address discovery for a suite's VM list, against the HTTPS Proxmox stand-in.

The stand-in answers ``agent/network-get-interfaces`` as qemu-server does (``{"result": [...]}`` from the
guest agent; HTTP 500 with Proxmox's own text when the agent is not configured, the VM is not running,
or the agent does not answer) and validates every request against the API schema.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Iterator

import pytest
from standins.pve import PveStandin
from suite_pve import (LO, SECRET, SECRET_ENV, TOKEN, add_vm, eth, fio_server_on_host, suite_matrix, write_matrix,
                       write_pidfile)

from stormatrix.cli import main
from stormatrix.core.errors import InputError, MatrixError
from stormatrix.executors.fioserver.inputs import FioGuest
from stormatrix.journal import Journal
from stormatrix.registry import suite_from_dict
from stormatrix.backends.proxmox.vms import ProxmoxSuiteVms, guest_names, pick_address


@pytest.fixture
def standin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[PveStandin]:
    monkeypatch.setenv(SECRET_ENV, SECRET)
    s = PveStandin(tmp_path / "pve", tokens={TOKEN: SECRET})
    with s:
        yield s


def agent_requests(standin: PveStandin) -> list[str]:
    return [r["path"] for r in standin.requests if r["path"].endswith("/agent/network-get-interfaces")]


# --- the address rule ---------------------------------------------------------------------------------

def test_rule_skips_loopback_link_local_and_ipv6_and_keeps_agent_order() -> None:
    interfaces = [LO,
                  eth("eth0", "bc:24:11:00:00:01", "fe80::be24:11ff:fe00:1/64", "169.254.10.20/16", "10.0.0.11/24",
                      "10.0.0.99/24"),
                  eth("eth1", "bc:24:11:00:00:02", "192.168.50.11/24")]
    addr, seen = pick_address(interfaces)
    assert addr == "10.0.0.11"  # first usable one: not 127.0.0.1, not 169.254.x, not IPv6
    assert seen == ["lo 127.0.0.1/8", "eth0 169.254.10.20/16", "eth0 10.0.0.11/24", "eth0 10.0.0.99/24",
                    "eth1 192.168.50.11/24"]
    assert pick_address(interfaces, "192.168.50.0/24")[0] == "192.168.50.11"
    assert pick_address(interfaces, "10.0.0.64/26")[0] == "10.0.0.99"
    assert pick_address(interfaces, "172.16.0.0/12")[0] is None


def test_rule_on_a_windows_guest_and_on_odd_answers() -> None:
    # what a Windows guest's agent reports: a loopback pseudo-interface, then an APIPA address first
    windows = [eth("Ethernet", "bc:24:11:00:00:03", "fe80::1c2d:3e4f:5a6b:7c8d/64", "169.254.33.7/16"),
               eth("Ethernet 2", "bc:24:11:00:00:04", "10.1.2.3/16"),
               eth("Loopback Pseudo-Interface 1", None, "::1/128", "127.0.0.1/8")]
    assert pick_address(windows)[0] == "10.1.2.3"
    down = [LO, {"name": "eth0", "hardware-address": "bc:24:11:00:00:05"}]  # no ip-addresses while down
    assert pick_address(down) == (None, ["lo 127.0.0.1/8"])
    assert pick_address([{"name": "x", "ip-addresses": [{"ip-address": "not-an-ip", "ip-address-type": "ipv4"}]},
                         "garbage"]) == (None, [])
    assert pick_address(None) == (None, [])


def test_guest_names_from_vm_names() -> None:
    assert guest_names([(101, "vm01"), (102, "vm02")]) == {101: "vm01", 102: "vm02"}
    assert guest_names([(101, "bench"), (102, "bench"), (103, "other")]) == \
        {101: "bench-101", 102: "bench-102", 103: "other"}
    assert guest_names([(101, "VM 101"), (102, ""), (103, "x" * 70)]) == {101: "101", 102: "102", 103: "103"}
    assert guest_names([(101, "102"), (102, "")]) == {101: "101", 102: "102"}


# --- discovery through the API -------------------------------------------------------------------------

def test_discovery_asks_the_agent_of_every_vm(standin: PveStandin) -> None:
    add_vm(standin, 101, "vm01", interfaces=[LO, eth("ens18", "bc:24:11:00:01:01", "10.0.0.11/24", "fe80::1/64")])
    add_vm(standin, 102, "vm02", interfaces=[LO, eth("docker0", "02:42:ac:11:00:01", "172.17.0.1/16"),
                                             eth("ens18", "bc:24:11:00:01:02", "10.0.0.12/24")])
    add_vm(standin, 103, "vm03", interfaces=[eth("ens18", "bc:24:11:00:01:03", "10.0.0.13/24")])
    suite = suite_from_dict(suite_matrix(standin, [101, 102, "103"], port=8766), "s.toml")
    assert suite.vms == ("101", "102", "103") and suite.guests == ()
    with ProxmoxSuiteVms(suite) as vms:
        guests = vms.discover()
    # without a network, vm02's first usable address is docker0's: the rule is documented, and says why
    assert guests == [FioGuest("vm01", "10.0.0.11", 8766), FioGuest("vm02", "172.17.0.1", 8766),
                      FioGuest("vm03", "10.0.0.13", 8766)]
    assert agent_requests(standin) == [f"/nodes/pve/qemu/{v}/agent/network-get-interfaces" for v in (101, 102, 103)]
    assert [vm.pid for vm in vms.vms] == [standin.vms[v].qemu.pid for v in (101, 102, 103)]  # type: ignore[union-attr]

    suite = suite_from_dict(suite_matrix(standin, [101, 102, 103], network="10.0.0.0/24"), "s.toml")
    with ProxmoxSuiteVms(suite) as vms:
        assert [g.host for g in vms.discover()] == ["10.0.0.11", "10.0.0.12", "10.0.0.13"]
        assert vms.record()[1] == {"vmid": 102, "name": "vm02", "pid": standin.vms[102].qemu.pid,  # type: ignore[union-attr]
                                   "address": "10.0.0.12"}
    for r in standin.requests:
        assert SECRET not in json.dumps(r)


def test_every_problem_is_named_with_its_fix_in_one_error(standin: PveStandin) -> None:
    add_vm(standin, 101, "ok", interfaces=[LO, eth("ens18", "bc:24:11:00:02:01", "10.0.0.21/24")])
    add_vm(standin, 102, "agentdown", interfaces=[LO, eth("ens18", "bc:24:11:00:02:02", "10.0.0.22/24")])
    standin.guest_agent_down.add(102)
    add_vm(standin, 103, "stopped", running=False)
    add_vm(standin, 104, "noagent", agent="")
    add_vm(standin, 105, "otherlan", interfaces=[LO, eth("ens18", "bc:24:11:00:02:05", "192.168.7.5/24")])
    suite = suite_from_dict(suite_matrix(standin, [101, 102, 103, 104, 105, 106], network="10.0.0.0/24"), "s.toml")
    with ProxmoxSuiteVms(suite) as vms, pytest.raises(MatrixError) as info:
        vms.discover()
    err = info.value
    assert err.exit_code == 2 and err.key == "[suite] vms"
    msg = str(err)
    assert "VM 102 (agentdown): the QEMU guest agent is not running in the guest" in msg
    assert "VM 103 (stopped) is stopped" in msg
    assert "VM 104 (noagent): the guest agent is not enabled in its options" in msg
    assert "VM 105 (otherlan): no usable IPv4 address in 10.0.0.0/24 (the guest agent reports: lo 127.0.0.1/8, " \
           "ens18 192.168.7.5/24)" in msg
    assert "VM 106: Proxmox API error 500: Configuration file 'nodes/pve/qemu-server/106.conf' does not exist" in msg
    assert "VM 101" not in msg
    for fix in ("systemctl enable --now qemu-guest-agent", "qm start <vmid>", "qm set <vmid> --agent enabled=1",
                "set [suite] network", "check [suite] vms and [proxmox] node", "[suite] guests instead of vms"):
        assert fix in err.fix
    # the agent was asked only where Proxmox would answer: not for the stopped or unknown VM
    asked = agent_requests(standin)
    assert not any("/103/" in p or "/106/" in p for p in asked)


def test_two_vms_on_one_address_are_refused(standin: PveStandin) -> None:
    nat = [LO, eth("ens3", "52:54:00:12:34:56", "10.0.2.15/24")]  # QEMU user networking in both guests
    add_vm(standin, 101, "a", interfaces=nat)
    add_vm(standin, 102, "b", interfaces=nat)
    suite = suite_from_dict(suite_matrix(standin, [101, 102]), "s.toml")
    with ProxmoxSuiteVms(suite) as vms, pytest.raises(MatrixError, match="VMs 101, 102 all report 10.0.2.15"):
        vms.discover()


def test_a_refused_token_names_the_agent_privilege(standin: PveStandin) -> None:
    from stormatrix.backends.proxmox.api import PveAuthError

    add_vm(standin, 101, "a", interfaces=[LO, eth("ens18", "bc:24:11:00:03:01", "10.0.0.31/24")])
    standin.fail_request("GET", "/agent/network-get-interfaces", status=403,
                         message="Permission check failed (/vms/101, VM.GuestAgent.Audit|VM.GuestAgent.Unrestricted)")
    suite = suite_from_dict(suite_matrix(standin, [101]), "s.toml")
    with ProxmoxSuiteVms(suite) as vms, pytest.raises(PveAuthError) as info:
        vms.discover()
    assert "VM.GuestAgent.Audit (Proxmox VE 9) or VM.Monitor (8.x)" in str(info.value)
    assert SECRET not in str(info.value)


# --- the matrix file ------------------------------------------------------------------------------------

PROXMOX = {"host": "pve1", "node": "pve1", "token_id": "t", "token_secret_env": "X"}
BASE: dict[str, Any] = {"suite": {"filename": "/dev/sdb", "vms": [101, 102]}, "proxmox": PROXMOX}


@pytest.mark.parametrize("change, key, words", [
    ({"proxmox": None}, "[suite] vms", "needs a [proxmox] section"),
    ({"vmware": {"server": "esx1"}}, "[suite] vms", "not supported for the vmware backend"),
    ({"suite.vms": [101, "vm02"]}, "[suite] vms[2]", "'vm02' is not a Proxmox VM id"),
    ({"suite.vms": [101, 99]}, "[suite] vms[2]", "not a Proxmox VM id"),
    ({"suite.vms": [101, "101"]}, "[suite] vms", "lists VM 101 twice"),
    ({"suite.network": "10.0.0.0/33"}, "[suite] network", "not a network"),
    ({"suite.network": "fd00::/64"}, "[suite] network", "IPv4"),
    ({"suite.host_metrics": "maybe"}, "[suite] host_metrics", "not one of auto, require, off"),
    ({"proxmox.vmid": 101}, "[proxmox] vmid", "does not apply to a suite"),
    ({"proxmox.test_disk": "scsi1"}, "[proxmox] test_disk", "does not apply to a suite"),
    ({"proxmox.ssh": "-oProxyCommand=touch /tmp/x"}, "[proxmox] ssh", "not an ssh target"),
    ({"proxmox.hots": "x"}, "[proxmox] hots", "unknown key"),
    ({"proxmox.node": None}, "[proxmox] node", "required"),
    ({"run": {"backend": "qemu"}}, "[run] backend", "Proxmox VMs"),
    ({"suite.vms": None, "suite.guests": ["a=10.0.0.1"]}, "[proxmox]", "only used with [suite] vms"),
    ({"suite.vms": None, "suite.guests": ["a=10.0.0.1"], "proxmox": None, "suite.network": "10.0.0.0/24"},
     "[suite] network", "only applies to a VM list"),
])
def test_vm_list_mistakes_name_the_key(change: dict[str, Any], key: str, words: str) -> None:
    raw = json.loads(json.dumps(BASE))
    for path, value in change.items():
        section, _, name = path.partition(".")
        if not name:
            if value is None:
                raw.pop(section, None)
            else:
                raw[section] = value
        elif value is None:
            raw[section].pop(name, None)
        else:
            raw[section][name] = value
    with pytest.raises(MatrixError) as info:
        suite_from_dict(raw, "s.toml")
    assert info.value.key == key, str(info.value)
    assert words in str(info.value) and "Fix:" in str(info.value)


def test_a_valid_vm_list_keeps_its_settings() -> None:
    raw = json.loads(json.dumps(BASE))
    raw["suite"].update(network="10.0.0.0/24", host_metrics="require")
    raw["proxmox"]["ssh"] = "root@pve1"
    s = suite_from_dict(raw, "s.toml")
    assert (s.vms, s.network, s.host_metrics) == (("101", "102"), "10.0.0.0/24", "require")
    assert s.connection is not None and s.connection["ssh"] == "root@pve1" and s.connection["verify_tls"] is True
    assert "vmid" not in s.connection


# --- through the CLI -------------------------------------------------------------------------------------

def test_cli_run_with_a_failing_vm_exits_2_and_keeps_the_journal(standin: PveStandin, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    add_vm(standin, 101, "vm01", interfaces=[LO, eth("ens18", "bc:24:11:00:04:01", "10.0.0.41/24")])
    add_vm(standin, 102, "vm02", interfaces=[LO, eth("ens18", "bc:24:11:00:04:02", "10.0.0.42/24")])
    standin.guest_agent_down.add(102)
    matrix = write_matrix(tmp_path / "s.toml", suite_matrix(standin, [101, 102]))
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    earlier = json.dumps({"schema": "stormatrix/record-1", "type": "cell", "key": "unknown/randread-4k-qd1/rep1"})
    (run_dir / "journal.ndjson").write_text(earlier + "\n")
    before = (run_dir / "journal.ndjson").read_bytes()
    rc = main(["suite", "run", str(matrix), "-o", str(run_dir)])
    out, err = capsys.readouterr()
    assert rc == 2
    assert "VM 102 (vm02): the QEMU guest agent is not running in the guest" in err
    assert "systemctl enable --now qemu-guest-agent" in err and "Traceback" not in err
    assert SECRET not in out + err
    assert (run_dir / "journal.ndjson").read_bytes() == before  # nothing journaled, nothing lost


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")
def test_cli_run_on_a_discovered_guest_with_local_host_metrics(standin: PveStandin, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """End to end: the agent reports this machine's address, a real fio server listens there, the run
    finds it, measures the point, and (stormatrix being 'on the node': the pid file matches) measures
    the VM's QEMU process in the window."""
    with fio_server_on_host(tmp_path / "guest") as (host, port):
        add_vm(standin, 101, "vm01", interfaces=[LO, eth("ens18", "bc:24:11:00:05:01", f"{host}/24")])
        pid = write_pidfile(standin, 101)
        raw = suite_matrix(standin, [101], port=port, filename="target.dat", size="4m", measure_seconds=1.0)
        matrix = write_matrix(tmp_path / "s.toml", raw)
        rc = main(["suite", "run", str(matrix), "-o", str(tmp_path / "run")])
        out, err = capsys.readouterr()
        assert rc == 0, err
        assert f"VM 101 -> vm01 ({host}:{port}) (QEMU pid {pid})" in err
        assert "host metrics: local: 1 QEMU processes on this node (pve)" in err
    records = Journal(tmp_path / "run").records()
    run = next(r for r in records if r["type"] == "run")
    assert run["backend"] == "proxmox" and run["guests"] == [{"name": "vm01", "host": host, "port": port}]
    assert run["vms"] == [{"vmid": 101, "name": "vm01", "pid": pid, "address": host}]
    assert run["host_collector"]["mode"] == "local"
    assert run["environment"]["host_collector"].startswith("local: 1 QEMU processes")
    cell = next(r for r in records if r["type"] == "cell")
    assert cell["host"]["cpu_metric"] in ("cycles", "cpu_time") and cell["host"]["pid"] == pid
    assert cell["host"]["vms"] == ["vm01"]
    assert cell["per_mib"]["cpu_unit"] == {"cycles": "cycles/MiB", "cpu_time": "CPU-ms/MiB"}[cell["host"]["cpu_metric"]]
    assert SECRET not in (tmp_path / "run" / "journal.ndjson").read_text()


def test_plan_discover_shows_guests_and_host_metrics(standin: PveStandin, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    add_vm(standin, 101, "vm01", interfaces=[LO, eth("ens18", "bc:24:11:00:06:01", "10.0.0.61/24")])
    elsewhere = {"qemu_server_dir": str(tmp_path / "controller")}  # not the node: no qemu-server pid files
    matrix = write_matrix(tmp_path / "s.toml", suite_matrix(standin, [101], proxmox=elsewhere))
    assert main(["suite", "plan", str(matrix)]) == 0
    out, _ = capsys.readouterr()
    assert "VMs (1, on node pve; each guest's address = the guest agent's first IPv4): 101" in out
    assert not agent_requests(standin)  # plain plan stays offline
    assert main(["suite", "plan", str(matrix), "--discover"]) == 0
    out, _ = capsys.readouterr()
    assert "guests (1): vm01 (10.0.0.61:8765)" in out
    # no pid file here and no [proxmox] ssh: the node is not reachable for the collector, and plan says so
    assert "host metrics: none: no host metrics: stormatrix is not on the node" in out


def test_require_host_metrics_refuses_an_unreachable_node(standin: PveStandin) -> None:
    add_vm(standin, 101, "vm01", interfaces=[LO, eth("ens18", "bc:24:11:00:07:01", "10.0.0.71/24")])
    elsewhere = {"qemu_server_dir": str(standin.workdir / "controller")}  # not the node, and no [proxmox] ssh
    suite = suite_from_dict(suite_matrix(standin, [101], host_metrics="require", proxmox=elsewhere), "s.toml")
    with ProxmoxSuiteVms(suite) as vms:
        vms.discover()
        with pytest.raises(InputError, match=r"\[suite\] host_metrics: \"require\", but the host collector cannot"):
            vms.host_collector()
    suite = suite_from_dict(suite_matrix(standin, [101], host_metrics="off"), "s.toml")
    with ProxmoxSuiteVms(suite) as vms:
        vms.discover()
        assert vms.host_collector() == (None, {"mode": "off", "detail": "[suite] host_metrics = \"off\""})
