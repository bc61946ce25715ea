"""The one host check (core/names.py) and the path descriptions (core/paths.py) every key is judged by:
a host that is a URL, has a space or a port is refused ([proxmox] host and guest_host alike) and a secret
in such a URL is never echoed; [qemu] disk_path and binary are described without being opened, and a
binary that cannot run is named with the fix. Good values are tried next to bad ones.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from stormatrix.cli import main
from stormatrix.core.names import host_problem
from stormatrix.core.paths import disk_image_problem, executable_problem
from clirun import cli

SUITE = """[suite]
side = "A"
filename = "/dev/vdb"
guests = ["vm01=10.0.0.11:8765"]
"""


BASE = """[run]
name = "x"
ramp_seconds = 1
measure_seconds = 2
[matrix]
controllers = ["virtio-blk"]
[[workload]]
name = "w"
rw = "randread"
bs = "4k"
"""
PROXMOX = """[proxmox]
host = {host}
node = "pve"
vmid = 100
test_disk = "scsi1"
token_id = "root@pam!t"
token_secret_env = "PVE_TOKEN"
"""


def plan(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    path = tmp_path / "m.toml"
    path.write_text(text)
    code = main(["plan", str(path)])
    out = capsys.readouterr()
    return code, out.out + out.err


SECRET = "hunter2-Pa55w0rd"
SUITE = '''[suite]
side = "A"
filename = "/dev/vdb"
guests = ["vm01=10.0.0.11:8765"]
'''


def suite_file(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "s.toml"
    path.write_text(body)
    return path


GUEST = ["guest", "check", "--host", "127.0.0.1", "--port", "1", "--username", "u", "--password-env", "SMX_PW",
         "--disk-serial", "S1", "--timeout", "1"]


@pytest.mark.parametrize("host", ["10.0.0.2", "pve.lab.example", "pve-1", "fe80::1", "[fe80::1]", "::1"])
def test_host_problem_accepts_names_and_addresses(host: str) -> None:
    assert host_problem(host) is None


@pytest.mark.parametrize("host,words", [("http://pve:8006", "is a URL"), ("pve:8006/", "is a URL"),
                                        ("pve host", "no spaces"), ("pve\n", "no spaces"), ("", "not a host"),
                                        ("abc:8006", "IPv6"), ("10.0.0.2:8006", "not a host")])
def test_host_problem_refuses_urls_spaces_and_ports(host: str, words: str) -> None:
    assert words in (host_problem(host) or "")


@pytest.mark.parametrize("host", ['"http://pve:8006"', '"pve host"', '"pve:8006"'])
def test_proxmox_host_that_is_not_a_host_is_refused_at_plan(tmp_path: Path, host: str,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    code, text = plan(tmp_path, BASE + PROXMOX.format(host=host), capsys)
    assert code == 2 and "[proxmox] host" in text and str(tmp_path / "m.toml") in text
    assert "port goes in port" in text and "Traceback" not in text


def test_proxmox_host_name_or_address_plans(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for host in ('"10.0.0.2"', '"pve.lab"', '"fe80::1"'):
        code, text = plan(tmp_path, BASE + PROXMOX.format(host=host), capsys)
        assert code == 0, text


def test_disk_image_and_executable_are_described_without_opening(tmp_path: Path) -> None:
    image = tmp_path / "disk.img"
    image.write_bytes(b"\0" * 512)
    script = tmp_path / "qemu"
    script.write_text("#!/bin/sh\n")
    os.chmod(script, 0o644)
    os.mkfifo(tmp_path / "fifo")
    assert disk_image_problem(image) is None
    assert "character device" in (disk_image_problem("/dev/zero") or "")
    assert "named pipe" in (disk_image_problem(tmp_path / "fifo") or "")
    assert "directory, not a raw image file or a block device" in (disk_image_problem(tmp_path) or "")
    assert "does not exist" in (disk_image_problem(tmp_path / "nope") or "")
    assert "x permission" in (executable_problem(script) or "")
    os.chmod(script, 0o755)
    assert executable_problem(script) is None
    assert "directory, not an executable file" in (executable_problem(tmp_path) or "")
    assert "named pipe" in (executable_problem(tmp_path / "fifo") or "")


def test_qemu_disk_path_and_binary_kinds_at_plan(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    image = tmp_path / "disk.img"
    image.write_bytes(b"\0" * 512)
    code, text = plan(tmp_path, BASE + f'[qemu]\ndisk_path = "{image}"\n', capsys)
    assert code == 0, text
    code, text = plan(tmp_path, BASE + '[qemu]\ndisk_path = "/dev/zero"\n', capsys)
    assert code == 2 and "[qemu] disk_path" in text and "character device" in text and "raw image" in text
    code, text = plan(tmp_path, BASE + f'[qemu]\nbinary = "{tmp_path}"\n', capsys)
    assert code == 2 and "[qemu] binary" in text and "not an executable file" in text
    code, text = plan(tmp_path, BASE + f'[qemu]\nbinary = "{image}"\n', capsys)  # no x bit
    assert code == 2 and "[qemu] binary" in text and "x permission" in text
    code, text = plan(tmp_path, BASE + '[qemu]\nbinary = "qemu-system-x86_64 -enable-kvm"\n', capsys)
    assert code == 2 and "[qemu] binary" in text and "command line" in text
    code, text = plan(tmp_path, BASE + '[qemu]\nbinary = "qemu-system-x86_64"\n', capsys)  # a name on PATH
    assert code == 0, text


def test_proxmox_guest_host_is_checked_like_host(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = BASE + PROXMOX.format(host='"10.0.0.2"')
    code, out = plan(tmp_path, text + 'guest_host = "http://10.0.0.9:5985/wsman"\n', capsys)
    assert code == 2 and "[proxmox] guest_host" in out and "is a URL" in out and "guest_port" in out
    code, out = plan(tmp_path, text + 'guest_host = "10.0.0.9"\n', capsys)
    assert code == 0, out


# --- secrets in a URL are never echoed ------------------------------------------------------------------------

MATRIX = """[run]
name = "x"
[matrix]
controllers = ["virtio-blk"]
[[workload]]
name = "w"
rw = "randread"
bs = "4k"
"""


@pytest.mark.parametrize("host", [f"https://root:{SECRET}@pve.lab:8006", f"root:{SECRET}@pve.lab",
                                  f"https://root@pam!tok={SECRET}@pve:8006/api2/json"])
def test_a_secret_in_a_host_url_is_not_echoed(host: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    m = tmp_path / "m.toml"
    m.write_text(MATRIX + f'[proxmox]\nhost = "{host}"\nnode = "pve"\nvmid = 100\ntest_disk = "scsi1"\n'
                 'token_id = "root@pam!t"\ntoken_secret_env = "PVE_TOKEN"\n')
    code, text = cli(["plan", str(m)], capsys)
    assert code == 2 and "[proxmox] host" in text and SECRET not in text and "pve" in text


def test_a_secret_in_a_guest_url_is_not_echoed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    matrix = suite_file(tmp_path, SUITE.replace('"vm01=10.0.0.11:8765"', f'"vm01=http://u:{SECRET}@10.0.0.11:8765"'))
    code, text = cli(["suite", "plan", str(matrix)], capsys)
    assert code == 2 and SECRET not in text
    code, text = cli(GUEST[:2] + ["--host", f"http://u:{SECRET}@10.0.0.5:5985"] + GUEST[4:], capsys)
    assert code == 2 and SECRET not in text and "--host" in text


def test_qemu_version_names_a_binary_that_cannot_run(tmp_path: Path) -> None:
    """The run-time side of [qemu] binary (a file changed after plan): an EnvironmentProblem with the fix,
    not an OSError traceback; the package hint only for the default name."""
    from stormatrix.backends.qemu.vm import qemu_version
    from stormatrix.core.errors import EnvironmentProblem

    with pytest.raises(EnvironmentProblem, match=r"cannot be run .*\[qemu\]|\[qemu\] binary .* cannot be run"):
        qemu_version(str(tmp_path))
    with pytest.raises(EnvironmentProblem, match=r"set \[qemu\] binary"):
        qemu_version(str(tmp_path / "no-such-qemu"))


@pytest.mark.parametrize("module", ["stormatrix.suite", "stormatrix.backends.proxmox.settings", "stormatrix.backends.qemu.settings",
                                    "stormatrix.backends.qemu.backend"])
def test_the_modules_holding_these_checks_import_on_their_own(module: str) -> None:
    """The host check lives with the CLI's types; a module importing it at import time closed a cycle
    (commands -> suite -> the [proxmox] settings -> commands) that only a fresh interpreter shows."""
    done = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
