"""The root causes behind the corpus' AWAITING cases (benchmarks/badinput_corpus.py), each checked where
it lives: the one host check, the path descriptions a [qemu] key is judged by, and the matrix keys that
now refuse what they used to accept. Good values are tried next to bad ones, so a check that refused
everything would fail here too.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from stormatrix.cli import main
from stormatrix.core.names import host_problem
from stormatrix.core.paths import disk_image_problem, executable_problem
import paths

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


# --- DiskSpd XML: a present but bad count is an error naming the file and tag, an absent one falls back --

DISKSPD = (paths.DATA / "diskspd" / "diskspd_randread_64k_qd8_t1.xml").read_text()
TARGET_QD = "<RequestCount>8</RequestCount>"
SETTINGS = "<ThreadCount>0</ThreadCount>\n        <RequestCount>0</RequestCount>"


def diskspd(text: str, name: str = "diskspd_randread_64k_qd8_t1.xml") -> dict:
    from stormatrix.analysis.diskspd import parse_diskspd_xml

    return parse_diskspd_xml(text, name)


@pytest.mark.parametrize("tag,good", [("BlockSize", "<BlockSize>65536</BlockSize>"), ("RequestCount", TARGET_QD),
                                      ("ThreadsPerFile", "<ThreadsPerFile>1</ThreadsPerFile>"),
                                      ("ThreadCount", "<ThreadCount>0</ThreadCount>"),
                                      ("TestTimeSeconds", "<TestTimeSeconds>60.00</TestTimeSeconds>")])
@pytest.mark.parametrize("value", ["abc", "NaN", "-1", "1" + "0" * 40, "", "4294967296"])
def test_a_present_but_bad_diskspd_number_is_an_error_naming_file_and_tag(tag: str, good: str, value: str) -> None:
    from stormatrix.core.errors import DataFileError

    assert DISKSPD.count(good) == 1
    if tag == "TestTimeSeconds" and value == "4294967296":
        value = "4.3e9"  # seconds are a decimal number in DiskSpd's XML
    with pytest.raises(DataFileError) as exc:
        diskspd(DISKSPD.replace(good, f"<{tag}>{value}</{tag}>"), "run7/diskspd_randread_64k_qd8_t1.xml")
    text = str(exc.value)
    assert "run7/diskspd_randread_64k_qd8_t1.xml" in text and f"<{tag}>" in text and "diskspd -Rxml" in text


def test_diskspd_counts_read_as_written_and_absent_tags_fall_back_as_documented() -> None:
    row = diskspd(DISKSPD)
    assert (row["bs"], row["iodepth"], row["numjobs"]) == (65536, 8, 1)
    # absent: the file name says bs/iodepth; without ThreadsPerFile and no numjobs in the name: blank, with why
    bare = (DISKSPD.replace("<BlockSize>65536</BlockSize>", "").replace(TARGET_QD, "")
            .replace("<ThreadsPerFile>1</ThreadsPerFile>", ""))
    row = diskspd(bare, "diskspd_randread_16k_qd4.xml")
    assert (row["bs"], row["iodepth"], row["numjobs"]) == (16384, 4, None) and "ThreadsPerFile" in row["null_reasons"]
    # -F 4 -O 32: four threads share the target, 32 requests each in flight
    fixed = diskspd(DISKSPD.replace(SETTINGS, "<ThreadCount>4</ThreadCount>\n<RequestCount>32</RequestCount>"))
    assert (fixed["iodepth"], fixed["numjobs"]) == (32, 4)
    assert diskspd(DISKSPD.replace("<BlockSize>65536</BlockSize>", "<BlockSize>4096</BlockSize>"))["bs"] == 4096


def test_a_diskspd_block_size_of_zero_is_refused() -> None:
    from stormatrix.core.errors import DataFileError

    with pytest.raises(DataFileError, match="BlockSize"):
        diskspd(DISKSPD.replace("<BlockSize>65536</BlockSize>", "<BlockSize>0</BlockSize>"))


@pytest.mark.parametrize("module", ["stormatrix.suite", "stormatrix.backends.proxmox.settings", "stormatrix.backends.qemu.backend"])
def test_the_modules_holding_these_checks_import_on_their_own(module: str) -> None:
    """The host check lives with the CLI's types; a module importing it at import time closed a cycle
    (commands -> suite -> the [proxmox] settings -> commands) that only a fresh interpreter shows."""
    import subprocess

    done = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


# --- [suite]: the side label, block sizes and size, refused as [[workload]] and --side refuse them -------

SUITE = '[suite]\nside = {side}\nfilename = "/dev/vdb"\nguests = ["vm01=10.0.0.11:8765"]\nblock_sizes = {bs}\n'


def suite_plan(tmp_path: Path, capsys: pytest.CaptureFixture[str], *, side: str = '"Proxmox VE 8.2"',
               bs: str = '["4k"]', extra: str = "") -> tuple[int, str]:
    path = tmp_path / "s.toml"
    path.write_text(SUITE.format(side=side, bs=bs) + extra)
    code = main(["suite", "plan", str(path)])
    out = capsys.readouterr()
    return code, out.out + out.err


@pytest.mark.parametrize("side", ['""', '"  "', '"A\\nB"', '"' + "x" * 101 + '"', '"a\\u0000"'])
def test_a_suite_side_that_is_no_label_is_refused(side: str, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    code, text = suite_plan(tmp_path, capsys, side=side)
    assert code == 2 and "[suite] side" in text and str(tmp_path / "s.toml") in text and "Fix:" in text


def test_suite_block_sizes_and_size_limits(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, text = suite_plan(tmp_path, capsys, bs='["4k", "1g"]', extra=f"size = {2**63 - 1}\n")
    assert code == 0 and "side 'Proxmox VE 8.2'" in text, text
    for bs in ('["4k", "2g"]', f"[{2**30 + 512}]", f"[{2**70}]"):
        code, text = suite_plan(tmp_path, capsys, bs=bs)
        assert code == 2 and "[suite] block_sizes" in text and "above 1 GiB" in text, text
    for size in (str(2**63), str(2**70), '"8388608t"'):
        code, text = suite_plan(tmp_path, capsys, extra=f"size = {size}\n")
        assert code == 2 and "[suite] size" in text and "2^63" in text, text


# --- demo: --guests outside 2-4 and an -o that is a file are exit 2 before anything boots --------------

def cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own exit for a bad option value
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out + out.err


@pytest.mark.parametrize("guests", ["0", "1", "5", "-2", "two"])
def test_demo_suite_guests_outside_2_to_4_is_exit_2(guests: str, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    code, text = cli(["demo", "--suite", "--guests", guests, "-o", str(tmp_path / "d")], capsys)
    assert code == 2 and "--guests" in text and "2 to 4" in text and "Traceback" not in text
    assert not (tmp_path / "d").exists()


def test_demo_guests_without_suite_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, text = cli(["demo", "--guests", "3", "-o", str(tmp_path / "d")], capsys)
    assert code == 2 and "--guests" in text and "--suite" in text and not (tmp_path / "d").exists()


@pytest.mark.parametrize("suite", [[], ["--suite"]])
def test_demo_output_that_is_a_file_is_exit_2_and_untouched(suite: list[str], tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "d"
    target.write_text("keep me")
    code, text = cli(["demo", *suite, "-o", str(target)], capsys)
    assert code == 2 and f"-o {target} is a file" in text and "Fix:" in text and "Traceback" not in text
    assert target.read_text() == "keep me"


def test_qemu_version_names_a_binary_that_cannot_run(tmp_path: Path) -> None:
    """The run-time side of [qemu] binary (a file changed after plan): an EnvironmentProblem with the fix,
    not an OSError traceback; the package hint only for the default name."""
    from stormatrix.backends.qemu.vm import qemu_version
    from stormatrix.core.errors import EnvironmentProblem

    with pytest.raises(EnvironmentProblem, match=r"cannot be run .*\[qemu\]|\[qemu\] binary .* cannot be run"):
        qemu_version(str(tmp_path))
    with pytest.raises(EnvironmentProblem, match=r"set \[qemu\] binary"):
        qemu_version(str(tmp_path / "no-such-qemu"))


def test_proxmox_guest_host_is_checked_like_host(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = BASE + PROXMOX.format(host='"10.0.0.2"')
    code, out = plan(tmp_path, text + 'guest_host = "http://10.0.0.9:5985/wsman"\n', capsys)
    assert code == 2 and "[proxmox] guest_host" in out and "is a URL" in out and "guest_port" in out
    code, out = plan(tmp_path, text + 'guest_host = "10.0.0.9"\n', capsys)
    assert code == 0, out
