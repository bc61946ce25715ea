"""``qm showcmd`` and the running QEMU's command line: before a cell is measured, the test disk as QEMU
gets it (device, controller, aio, cache, iothread) must be what the cell asked for, and both command
lines are kept in ``<run dir>/proxmox/``; the original VM's goes into the journal's environment.

``qm`` here is the stand-in's (tests/standins/pve.py ``install_node_tools``): it prints the command line
the stand-in's launcher runs for the current config, quoted like PVE::Tools::cmd2string, the way
qemu-server's ``vm_commandline`` does. The sleeping stand-in QEMU carries that command line, so
/proc/<pid>/cmdline is checked too. A config ``args:`` line is appended, as qemu-server does, and can
really change the test disk (``-set drive.drive-scsi1.aio=threads``): that must be caught.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path
from typing import Any, Iterator

import pytest

from standins.pve import PveStandin, SleepLauncher
from test_proxmox_local import on_the_node

from stormatrix.backends.proxmox import backend as pmx
from stormatrix.backends.proxmox.cmdline import cmdline_problems, parse_showcmd, qemu_opts
from stormatrix.backends.qemu.devices import disk_devices
from stormatrix.core.errors import BackendError
from stormatrix.core.model import CONTROLLERS, DiskConfig
from stormatrix.registry import spec_from_dict

SECRET = "showcmd-secret-0a1b2c3d4e"


@pytest.fixture
def node(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[PveStandin]:
    s = PveStandin(tmp_path / "pve", tokens={"root@pam!local": SECRET})
    vol = s.add_volume(100, "vm-100-disk-1.raw")
    s.add_vm(100, {"name": "bench", "scsihw": "lsi", "scsi1": f"{vol},cache=none", "boot": "order=scsi1"})
    with on_the_node(s, tmp_path, monkeypatch, SECRET):
        yield s


def local_backend(node: PveStandin, tmp_path: Path, **proxmox: Any) -> pmx.ProxmoxBackend:
    raw = {"run": {"backend": "proxmox"},
           "matrix": {"disk_slot": 1, "controllers": ["sata", "megasas", "virtio-blk"], "aio": ["threads", "native"]},
           "workload": [{"name": "r", "rw": "randread", "bs": "4k"}],
           "proxmox": {"transport": "local", "node": "pve", "vmid": 100, "test_disk": "scsi1", "task_timeout": 30,
                       "qemu_server_dir": str(node.run_dir), **proxmox}}
    return pmx.ProxmoxBackend(spec_from_dict(raw), tmp_path / "run")


def qm(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["qm", *args], capture_output=True, text=True, timeout=30)


# --- the stand-in's qm showcmd behaves like qemu-server's ------------------------------------------------

def test_qm_showcmd_prints_the_current_configs_command_line(node: PveStandin) -> None:
    vm = node.vms[100]
    plain = qm("showcmd", "100")
    assert plain.returncode == 0 and plain.stdout.count("\n") == 1
    assert shlex.split(plain.stdout) == node.launcher.argv(node.launch_spec(vm))  # type: ignore[attr-defined]  # argv: the sleeping launcher's
    pretty = qm("showcmd", "100", "--pretty")
    assert pretty.stdout.count(" \\\n  -") == plain.stdout.count(" -") and parse_showcmd(pretty.stdout) == \
        shlex.split(plain.stdout)
    assert "-drive file=" in plain.stdout and "id=drive-scsi1,cache=none,format=raw,aio=io_uring" in plain.stdout
    # quoted like PVE::Tools::cmd2string where a word needs it
    node.vms[100].conf["args"] = "-set 'device.scsi1.serial=a b'"
    assert "'device.scsi1.serial=a b'" in qm("showcmd", "100").stdout
    del node.vms[100].conf["args"]
    # a running VM's pending change is not in it: showcmd shows the current (running) config
    vm.qemu = node.launcher.start(node.launch_spec(vm))
    vm.pending["scsi1"] = vm.conf["scsi1"].replace("cache=none", "aio=native,cache=none")
    assert "aio=native" not in qm("showcmd", "100").stdout
    assert qm("showcmd", "100", "--pretty", "0").stdout == plain.stdout


@pytest.mark.parametrize("args, rc, message", [
    (["showcmd", "101"], 255, "Configuration file 'nodes/pve/qemu-server/101.conf' does not exist"),
    (["showcmd"], 255, "400 not enough arguments\nqm showcmd <vmid> [OPTIONS]"),
    (["showcmd", "abc"], 255, "vmid: invalid format"),
    (["showcmd", "100", "--prety"], 255, "Unknown option: prety"),
    (["showcmd", "100", "--snapshot", "before"], 255, "snapshot 'before' does not exist"),
    (["shwocmd", "100"], 255, "unknown command 'qm shwocmd'"),
])
def test_qm_errors_like_pve_cli(node: PveStandin, args: list[str], rc: int, message: str) -> None:
    res = qm(*args)
    assert res.returncode == rc and message in res.stderr and not res.stdout


# --- the backend: checks, keeps, journals ----------------------------------------------------------------

def test_cells_checked_and_kept_on_the_local_transport(node: PveStandin, tmp_path: Path) -> None:
    digest0 = node.digest(100)
    b = local_backend(node, tmp_path)
    facts = b.prepare()
    assert "id=drive-scsi1,cache=none,format=raw,aio=io_uring" in facts["qemu_cmdline"]
    assert shlex.split(facts["qemu_cmdline"])[0] == "/usr/bin/kvm"
    cells = [DiskConfig("sata", "threads", False, "none"), DiskConfig("megasas", "native", False, "none"),
             DiskConfig("virtio-blk", "native", True, "none")]
    for disk in cells:
        b.apply(disk)
    folder = tmp_path / "run" / "proxmox"
    names = sorted(p.name for p in folder.iterdir())
    assert names == ["001-sata_aio=threads_iothread=0_cache=none.running.txt",
                     "001-sata_aio=threads_iothread=0_cache=none.showcmd.txt",
                     "002-megasas_aio=native_iothread=0_cache=none.running.txt",
                     "002-megasas_aio=native_iothread=0_cache=none.showcmd.txt",
                     "003-virtio-blk_aio=native_iothread=1_cache=none.running.txt",
                     "003-virtio-blk_aio=native_iothread=1_cache=none.showcmd.txt",
                     "original.showcmd.txt"]
    last = parse_showcmd((folder / names[5]).read_text())
    running = parse_showcmd((folder / names[4]).read_text())
    assert running[-len(last):] == last  # the process runs exactly what qm showcmd says
    assert "virtio-blk-pci,drive=drive-virtio1,id=virtio1" in " ".join(last) and "iothread=iothread-virtio1" in " ".join(last)
    b.restore()
    b.close()
    assert node.digest(100) == digest0


def test_an_args_line_that_changes_the_test_disk_fails_the_cell(node: PveStandin, tmp_path: Path) -> None:
    # somebody's args: line overrides aio for the disk: Proxmox's config says native, QEMU runs threads
    node.vms[100].conf["args"] = "-set drive.drive-sata1.aio=threads"
    digest0 = node.digest(100)
    b = local_backend(node, tmp_path)
    b.prepare()
    b.apply(DiskConfig("sata", "threads", False, "none"))  # the override agrees with this cell
    with pytest.raises(BackendError) as exc:
        b.apply(DiskConfig("sata", "native", False, "none"))
    text = str(exc.value)
    assert "the test disk sata1 is not what the cell sata/aio=native/iothread=0/cache=none asked for" in text
    assert "qm showcmd has aio=threads (the cell has aio=native)" in text
    assert f"the running QEMU (pid {node.vms[100].qemu.pid}) has aio=threads" in text  # type: ignore[union-attr]  # started above
    assert "Nothing was measured" in text and "args: line" in text
    b.restore()
    b.close()
    assert node.digest(100) == digest0 and not node.destroyed


class IgnoresIothread(SleepLauncher):
    """A qemu-server that drops iothread (as it does, with a warning, where the controller has none)."""

    def argv(self, spec: Any) -> list[str]:
        from dataclasses import replace

        return super().argv(replace(spec, iothread=False))


def test_a_dropped_iothread_is_caught_on_the_api_transport_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # api transport, no ssh, QEMU on this machine: qm is not used, /proc/<pid>/cmdline is
    s = PveStandin(tmp_path / "pve", tokens={"root@pam!t": SECRET}, launcher=IgnoresIothread())
    vol = s.add_volume(100, "vm-100-disk-1.raw")
    s.add_vm(100, {"scsihw": "lsi", "scsi1": f"{vol},cache=none", "boot": "order=scsi1"})
    monkeypatch.setenv("SMX_SC_SECRET", SECRET)
    with s:
        raw = {"run": {"backend": "proxmox"}, "matrix": {"disk_slot": 1, "controllers": ["virtio-blk"]},
               "workload": [{"name": "r", "rw": "randread", "bs": "4k"}],
               "proxmox": {"host": "127.0.0.1", "port": s.port, "node": "pve", "vmid": 100, "test_disk": "scsi1",
                           "token_id": "t", "token_secret_env": "SMX_SC_SECRET", "ca_file": str(s.ca_file),
                           "task_timeout": 30, "qemu_server_dir": str(s.run_dir)}}
        b = pmx.ProxmoxBackend(spec_from_dict(raw), tmp_path / "run")
        assert "qemu_cmdline" not in b.prepare()
        b.apply(DiskConfig("virtio-blk", "native", False, "none"))
        with pytest.raises(BackendError, match=r"the running QEMU \(pid \d+\) has iothread missing \(the cell has "
                                               r"iothread=1\)"):
            b.apply(DiskConfig("virtio-blk", "native", True, "none"))
        # the same run with the check turned off measures what it gets
        b.opts["check_cmdline"] = False
        b.apply(DiskConfig("virtio-blk", "native", True, "none"))
        b.restore()
        b.close()
    names = sorted(p.name for p in (tmp_path / "run" / "proxmox").iterdir())
    assert names == ["001-virtio-blk_aio=native_iothread=0_cache=none.running.txt",
                     "002-virtio-blk_aio=native_iothread=1_cache=none.running.txt"]


def test_qm_missing_says_what_to_do(node: PveStandin, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (Path(os.environ["PATH"].split(os.pathsep)[0]) / "qm").unlink()
    b = local_backend(node, tmp_path)
    with pytest.raises(BackendError, match=r"qm not found on this machine.*check_cmdline = false"):
        b.prepare()
    b.close()
    b = local_backend(node, tmp_path, check_cmdline=False)
    assert "qemu_cmdline" not in b.prepare()
    b.apply(DiskConfig("sata", "threads", False, "none"))
    b.restore()
    b.close()


# --- the check itself --------------------------------------------------------------------------------------

ALL = [DiskConfig(c, a, i, k) for c, (bus, _) in CONTROLLERS.items() if bus != "esxi"
       for a in ("native", "io_uring", "threads") for i in (False, True)
       for k in ("none", "directsync", "writeback", "unsafe", "default")]


def as_checked(d: DiskConfig) -> tuple[Any, ...]:
    """What the check can see of a cell: iothread only where the controller takes one, unset cache = none."""
    holder = d.bus == "virtio" or d.scsihw == "virtio-scsi-single"
    return d.controller, d.aio, "none" if d.cache == "default" else d.cache, d.iothread and holder


def test_every_cell_matches_its_own_command_line_and_no_other() -> None:
    for disk in ALL:
        key = f"{disk.bus}1"
        front, drive = disk_devices(disk, "/var/lib/vz/images/100/vm-100-disk-1.raw", 1)
        argv = ["/usr/bin/kvm", "-id", "100", *front, *drive]
        assert cmdline_problems(argv, disk, key) == [], disk.key
        for other in ALL:
            if other.bus == disk.bus:
                problems = cmdline_problems(argv, other, key)
                assert bool(problems) == (as_checked(other) != as_checked(disk)), (disk.key, other.key, problems)


def test_blockdev_command_lines_of_pve9() -> None:
    # qemu-server 9 (QemuServer/Blockdev.pm): throttle -> raw format -> file node with aio and cache
    tree = {"driver": "throttle", "node-name": "drive-scsi1", "throttle-group": "throttle-drive-scsi1",
            "file": {"driver": "raw", "node-name": "f0123", "cache": {"direct": True, "no-flush": False},
                     "file": {"driver": "file", "filename": "/var/lib/vz/images/100/vm-100-disk-1.raw",
                              "aio": "native", "cache": {"direct": True, "no-flush": False},
                              "node-name": "e0123", "discard": "ignore"}}}
    argv = ["/usr/bin/kvm", "-object", "iothread,id=iothread-virtioscsi1",
            "-device", "virtio-scsi-pci,id=virtioscsi1,bus=pci.3,addr=0x2,iothread=iothread-virtioscsi1",
            "-blockdev", json.dumps(tree),
            "-device", "scsi-hd,bus=virtioscsi1.0,channel=0,scsi-id=0,lun=1,drive=drive-scsi1,id=scsi1,write-cache=on"]
    assert cmdline_problems(argv, DiskConfig("virtio-scsi-single", "native", True, "none"), "scsi1") == []
    assert cmdline_problems(argv, DiskConfig("virtio-scsi-single", "native", True, "default"), "scsi1") == []
    assert cmdline_problems(argv, DiskConfig("virtio-scsi-single", "io_uring", True, "none"), "scsi1") == [
        "aio=native (the cell has aio=io_uring)"]
    assert cmdline_problems(argv, DiskConfig("virtio-scsi-single", "native", True, "writeback"), "scsi1") == [
        "cache.direct=True (the cell has cache=writeback)"]
    assert cmdline_problems(argv, DiskConfig("virtio-scsi-single", "native", False, "none"), "scsi1") == [
        "iothread attached (the cell has iothread=0)"]
    assert cmdline_problems(argv, DiskConfig("pvscsi", "native", False, "none"), "scsi1") == [
        "controller virtio-scsi-pci (the cell needs pvscsi)", "iothread attached (the cell has iothread=0)"]
    with pytest.raises(BackendError, match="no test disk scsi2"):
        cmdline_problems(argv, DiskConfig("pvscsi", "native", False, "none"), "scsi2")


def test_showcmd_text_and_qemu_option_strings() -> None:
    text = "/usr/bin/kvm \\\n  -id 100 \\\n  -name 'my vm,debug-threads=on' \\\n  -drive 'file=/a,,b.raw,if=none,id=drive-ide0'\n"
    assert parse_showcmd(text) == ["/usr/bin/kvm", "-id", "100", "-name", "my vm,debug-threads=on",
                                      "-drive", "file=/a,,b.raw,if=none,id=drive-ide0"]
    assert qemu_opts("file=/a,,b.raw,if=none,id=drive-ide0,readonly") == (
        "", {"file": "/a,b.raw", "if": "none", "id": "drive-ide0", "readonly": "on"})
    assert qemu_opts("scsi-hd,bus=scsihw0.0,scsi-id=1")[0] == "scsi-hd"
    with pytest.raises(BackendError, match="cannot read the output of qm showcmd"):
        parse_showcmd("/usr/bin/kvm -name 'unterminated")
