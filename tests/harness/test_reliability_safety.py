"""Safety: write workloads never destroy a disk that holds data unless the user said
so; Proxmox never deletes ``unusedN`` or uses ``force``; TLS is verified unless explicitly (and
loudly) turned off; no shell and no command strings anywhere; untrusted text cannot become a
spreadsheet formula.
"""

from __future__ import annotations

import ast
import hashlib
import json
import logging
import re
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from standins.agent import FakeCollector, FakeVmBackend

from stormatrix.core.errors import UnsafeWrite
from stormatrix.journal import read_journal
from stormatrix.core.model import Cell, DiskConfig, Workload
from stormatrix.core.model import WRITE_MODES
from stormatrix.runner import Runner
from stormatrix.runsource import RunOptions
from stormatrix.safety import check_write_allowed
from stormatrix.spec import RUN_SECTION
from stormatrix.registry import spec_from_dict
import paths

ROOT = paths.ROOT
PY_DIRS = ["harness", "analysis", "linux-host", "tests", "benchmarks", "scripts"]


def python_files() -> list[Path]:
    return sorted(p for d in PY_DIRS for p in (ROOT / d).rglob("*.py") if ".venv" not in p.parts)


# --- allow_write -------------------------------------------------------------------------------------

def cell(rw: str) -> Cell:
    return Cell(DiskConfig("virtio-blk", "io_uring", False, "none"), Workload("w", rw, 4096, 1, 1), 1)


@pytest.mark.parametrize("signature", ["partitions", "gpt", "mbr", "ext", "xfs", "btrfs", "lvm2", "luks", "swap",
                                       "unknown", "unreadable"])
@pytest.mark.parametrize("rw", sorted(WRITE_MODES))
def test_write_workload_refused_on_a_disk_with_data(signature: str, rw: str) -> None:
    guest = {"disk": "/dev/vda", "signature": signature}
    with pytest.raises(UnsafeWrite, match=r"allow_write = true") as exc:
        check_write_allowed(cell(rw), guest, allow_write=False)
    assert exc.value.exit_code == 2 and exc.value.cell == cell(rw).key
    check_write_allowed(cell(rw), guest, allow_write=True)  # the explicit flag


@pytest.mark.parametrize("rw", ["read", "randread"])
def test_reads_never_refused(rw: str) -> None:
    check_write_allowed(cell(rw), {"disk": "/dev/vda", "signature": "ext"}, allow_write=False)


def test_blank_disk_takes_writes_and_the_flag_defaults_off() -> None:
    check_write_allowed(cell("randwrite"), {"disk": "/dev/vda", "signature": "none"}, allow_write=False)
    assert RUN_SECTION.fields["allow_write"].default is False


def test_refused_write_through_the_runner_is_not_retried_and_reads_still_run(tmp_path: Path) -> None:
    raw = {"run": {"ramp_seconds": 0, "measure_seconds": 1, "retries": 3, "on_error": "skip"},
           "matrix": {"controllers": ["virtio-blk"], "aio": ["io_uring"], "cache": ["none"]},
           "workload": [{"name": "wr", "rw": "randwrite", "bs": "4k"}, {"name": "rd", "rw": "randread", "bs": "4k"}]}
    spec = spec_from_dict(raw)
    backend = FakeVmBackend(spec, tmp_path / "run", {"agent": {"signature": "ext"}})
    summary = Runner(spec, tmp_path / "run", RunOptions(progress=False, backend=backend, collector_factory=FakeCollector)).run()
    records = read_journal(tmp_path / "run" / "journal.ndjson").records
    errors = [r for r in records if r["type"] == "cell-error"]
    assert len(errors) == 1 and errors[0]["stage"] == "safety" and errors[0]["error"]["type"] == "UnsafeWrite"
    assert "allow_write" in errors[0]["error"]["message"]
    assert summary.failed == [errors[0]["key"]] and summary.measured == 1
    assert backend.config == FakeVmBackend.ORIGINAL


# --- the real guest reads the disk's first sectors -------------------------------------------------------

QEMU_MATRIX = """
[run]
name = "safety"
ramp_seconds = 0
measure_seconds = 1
retries = 2
on_error = "{on_error}"
allow_write = {allow}

[matrix]
controllers = ["virtio-blk"]
aio = ["io_uring"]
cache = ["none"]

[[workload]]
name = "wr"
rw = "randwrite"
bs = "64k"
iodepth = 1

[qemu]
disk_path = "{disk}"
disk_size_mib = 16
"""


def make_disk(path: Path, kind: str) -> Path:
    with open(path, "wb") as fh:
        fh.truncate(16 * 2**20)
    if kind == "ext4":
        subprocess.run(["mkfs.ext4", "-q", "-F", str(path)], check=True)
    elif kind == "mbr":  # one Linux partition from sector 2048, 8 MiB (no sfdisk on Debian's minimal image)
        import struct

        entry = struct.pack("<B3sB3sII", 0, b"\x00\x02\x00", 0x83, b"\xff\xff\xff", 2048, 16384)
        with open(path, "r+b") as fh:
            fh.seek(446)
            fh.write(entry)
            fh.seek(510)
            fh.write(b"\x55\xaa")
    return path


@pytest.mark.qemu
@pytest.mark.slow
@pytest.mark.parametrize("kind", ["ext4", "mbr"])
def test_real_guest_reports_the_disk_and_the_write_is_refused(kind: str, tmp_path: Path) -> None:
    disk = make_disk(tmp_path / f"{kind}.raw", kind)
    before = hashlib.sha256(disk.read_bytes()).hexdigest()
    m = tmp_path / "m.toml"
    m.write_text(QEMU_MATRIX.format(on_error="stop", allow="false", disk=disk))
    res = subprocess.run([sys.executable, "-m", "stormatrix", "run", str(m), "-o", str(tmp_path / "run"),
                          "--no-progress"], capture_output=True, text=True, timeout=300)
    assert res.returncode == 2, res.stderr
    assert "refusing the write workload 'wr'" in res.stderr and "allow_write = true" in res.stderr
    assert ("partitions" if kind == "mbr" else "a ext signature") in res.stderr
    assert "Traceback" not in res.stderr
    errors = [r for r in read_journal(tmp_path / "run" / "journal.ndjson").records if r["type"] == "cell-error"]
    assert len(errors) == 1  # not retried
    assert hashlib.sha256(disk.read_bytes()).hexdigest() == before  # not a byte written


@pytest.mark.qemu
@pytest.mark.slow
def test_real_guest_writes_with_allow_write(tmp_path: Path) -> None:
    disk = make_disk(tmp_path / "ext4.raw", "ext4")
    m = tmp_path / "m.toml"
    m.write_text(QEMU_MATRIX.format(on_error="stop", allow="true", disk=disk))
    res = subprocess.run([sys.executable, "-m", "stormatrix", "run", str(m), "-o", str(tmp_path / "run"),
                          "--no-progress"], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    cells = [r for r in read_journal(tmp_path / "run" / "journal.ndjson").records if r["type"] == "cell"]
    assert cells[0]["guest"]["signature"] == "ext" and cells[0]["fio"]["total"]["io_bytes"] > 0


# --- no shell, no command strings ------------------------------------------------------------------------

SUBPROCESS_CALLS = {"run", "Popen", "call", "check_call", "check_output"}
FORBIDDEN_CALLS = {("os", "system"), ("os", "popen"), ("subprocess", "getoutput"), ("subprocess", "getstatusoutput"),
                   ("os", "execl"), ("os", "execlp"), ("os", "spawnl"), ("os", "spawnlp")}


def _is_text(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return True
    if isinstance(node, ast.JoinedStr):
        return True
    return isinstance(node, ast.BinOp) and (_is_text(node.left) or _is_text(node.right))


def shell_problems(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    problems = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        owner = func.value.id if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) else ""
        where = f"{path.relative_to(ROOT)}:{node.lineno}"
        for kw in node.keywords:
            if kw.arg == "shell" and not (isinstance(kw.value, ast.Constant) and kw.value.value is False):
                problems.append(f"{where}: shell={ast.unparse(kw.value)}")
        if (owner, name) in FORBIDDEN_CALLS:
            problems.append(f"{where}: {owner}.{name}() runs a command string")
        from_subprocess = owner == "subprocess" or (owner == "" and name in ("Popen", "check_output", "check_call"))
        if name in SUBPROCESS_CALLS and from_subprocess and node.args and _is_text(node.args[0]):
            problems.append(f"{where}: {name}() with a command string, not an argument list")
    return problems


def test_scanner_catches_what_it_should(tmp_path: Path) -> None:
    bad = ROOT / "tests" / ".scan-probe.py"
    try:
        bad.write_text("import os, subprocess\nsubprocess.run('ls -l', shell=True)\nos.system('x')\n"
                       "subprocess.Popen(f'rm {x}')\nsubprocess.run(['ls'], shell=False)\n")
        found = shell_problems(bad)
    finally:
        bad.unlink()
    assert len(found) == 4, found


def test_no_shell_and_no_command_strings_anywhere() -> None:
    files = python_files()
    assert len(files) > 50
    problems = [p for f in files for p in shell_problems(f)]
    assert not problems, "\n".join(problems)


def test_guest_module_builds_no_commands_from_strings() -> None:
    offenders = []
    for ps in (ROOT / "windows").rglob("*.ps*1"):
        for n, line in enumerate(ps.read_text(encoding="utf-8-sig").splitlines(), 1):
            code = line.split("#", 1)[0]
            if re.search(r"\b(Invoke-Expression|iex)\b|\[scriptblock\]::Create|cmd(\.exe)?\s+/c", code, re.I):
                offenders.append(f"{ps.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


# --- Proxmox: never unusedN, never force --------------------------------------------------------------

def test_proxmox_code_never_sends_force_or_deletes_unused() -> None:
    """Static half (the runtime half checks every request in the stand-in tests): no code path of the
    backend puts ``force`` into a request, and the planner refuses to delete ``unusedN``."""
    folder = ROOT / "harness" / "backends" / "proxmox"
    names = sorted(p.name for p in folder.glob("*.py"))
    assert {"backend.py", "restore.py", "change.py", "drives.py", "api.py"} <= set(names)
    for name in names:
        tree = ast.parse((folder / name).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Dict):
                keys = [k.value for k in node.keys if isinstance(k, ast.Constant)]
                assert "force" not in keys, f"{name}:{node.lineno}"
            if isinstance(node, ast.keyword):
                assert node.arg != "force" or name != "api.py", f"{name}:{node.value.lineno}"
            if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
                assert node.slice.value != "force" or isinstance(node.ctx, ast.Load), f"{name}:{node.lineno}"
    from stormatrix.core.errors import UnsafeChange
    from stormatrix.backends.proxmox.change import Write, _check_write

    with pytest.raises(UnsafeChange, match="destroys its volume"):
        _check_write(Write(delete=("unused0",)))


# --- TLS ------------------------------------------------------------------------------------------------

def test_tls_verification_is_on_by_default() -> None:
    from stormatrix.backends.proxmox.settings import PROXMOX_SECTION
    from stormatrix.executors.winrm.executor import WINRM_SECTION

    assert PROXMOX_SECTION.fields["verify_tls"].default is True
    assert WINRM_SECTION.fields["cert_validation"].default is True
    vmware = pytest.importorskip("stormatrix.backends.vmware.backend")
    assert vmware.VMWARE_SECTION.fields["verify_tls"].default is True


def test_vmware_tls_opt_out_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    from stormatrix.backends.vmware.settings import connection

    o = {"server": "vc.lab", "credential_source": "credential_store", "credential_store_user": "u",
         "verify_tls": False}
    with caplog.at_level(logging.WARNING):  # building the connection is what logs (PowerCLI is not here to run)
        conn = connection(o, o, "m.toml")
    assert conn.parameters["VerifyCertificate"] is False
    assert "TLS verification of vc.lab is turned off" in caplog.text


def test_proxmox_tls_opt_out_is_logged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       caplog: pytest.LogCaptureFixture) -> None:
    from stormatrix.backends.proxmox import backend as pmx

    monkeypatch.setenv("SMX_T", "secret-value")
    raw = {"run": {"backend": "proxmox"}, "matrix": {"controllers": ["sata"], "disk_slot": 1},
           "workload": [{"name": "r", "rw": "randread", "bs": "4k"}],
           "proxmox": {"host": "127.0.0.1", "port": 1, "node": "pve", "vmid": 100, "test_disk": "scsi1",
                       "token_id": "t", "token_secret_env": "SMX_T", "verify_tls": False}}
    b = pmx.ProxmoxBackend(spec_from_dict(raw), tmp_path)
    with caplog.at_level(logging.WARNING):
        b.client  # noqa: B018 - building the client is what logs
    b.close()
    assert "TLS verification of 127.0.0.1 is turned off" in caplog.text


def test_winrm_tls_opt_out_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    from stormatrix.executors.winrm import executor as w

    settings = w.WinRMSettings.from_section({"host": "127.0.0.1", "username": "u", "password_env": "PW",
                                             "use_tls": True, "cert_validation": False, "disk_serial": "S"},
                                            environ={"PW": "pw-secret"})
    with caplog.at_level(logging.WARNING):
        from stormatrix.executors.winrm.channel import WinRMChannel

        channel = WinRMChannel(settings)
        channel.protocol  # noqa: B018 - reconnecting must not repeat the warning
        channel.reset()
        channel.protocol  # noqa: B018
    assert "certificate validation of 127.0.0.1 is turned off ([winrm] cert_validation = false)" in caplog.text
    assert caplog.text.count("is turned off") == 1 and "pw-secret" not in caplog.text


def test_winrm_tls_opt_out_on_the_command_line_names_the_option(caplog: pytest.LogCaptureFixture,
                                                                 capsys: pytest.CaptureFixture[str],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """guest check --no-cert-validation: the warning names the flag, not a matrix key the user never wrote."""
    from stormatrix.cli import main

    monkeypatch.setenv("SMX_TLS_PW", "pw-secret-2")
    with caplog.at_level(logging.WARNING):  # port 1: nothing listens; the deadline ends the command
        code = main(["guest", "check", "--host", "127.0.0.1", "--port", "1", "--tls", "--no-cert-validation",
                     "--username", "u", "--password-env", "SMX_TLS_PW", "--disk-serial", "S", "--timeout", "0.5"])
    capsys.readouterr()
    assert code == 1
    assert "turned off (--no-cert-validation)" in caplog.text, caplog.text
    assert "[winrm]" not in caplog.text and "cert_validation" not in caplog.text.replace("cert-validation", "")
    assert caplog.text.count("is turned off") == 1 and "pw-secret-2" not in caplog.text


# --- formulas from untrusted text --------------------------------------------------------------------------

FORMULAS = ["=cmd|' /C calc'!A0", "+SUM(1,2)", "-2+3", "@SUM(A1)", "\t=1", "\r=1", "=HYPERLINK(\"http://x\")"]


def test_untrusted_text_never_becomes_a_formula_in_workbook_or_csv(tmp_path: Path) -> None:
    """Labels, VM names, file names from the user or a remote system, through the CLI to both outputs."""
    from stormatrix.cli import main

    src = ROOT / "tests" / "data" / "fio" / "fio3_randread_bs4k_qd1.json"
    inputs = tmp_path / "in"
    inputs.mkdir()
    for i, text in enumerate(FORMULAS):
        name = re.sub(r"[/\\\t\r]", "_", text)
        (inputs / f"{name}-{i}.json").write_bytes(src.read_bytes())
    out = tmp_path / "x.xlsx"
    assert main(["report", str(inputs), "-o", str(out), "--label", FORMULAS[0]]) == 0
    with zipfile.ZipFile(out) as z:
        sheets = [z.read(n).decode() for n in z.namelist() if n.startswith("xl/worksheets/sheet")]
        strings = z.read("xl/sharedStrings.xml").decode() if "xl/sharedStrings.xml" in z.namelist() else ""
    assert not any("<f>" in s and "cmd|" in s for s in sheets)
    import openpyxl

    wb = openpyxl.load_workbook(out)
    for ws in wb.worksheets:
        for row in ws.iter_rows():
            for c in row:
                if isinstance(c.value, str):
                    assert c.data_type != "f" or not any(f[1:4] in c.value for f in FORMULAS), (ws.title, c.coordinate)
                    assert not c.value.startswith(("=", "+", "@", "\t", "\r")), (ws.title, c.coordinate, c.value)
    assert "cmd|" in strings or any("cmd|" in s for s in sheets)  # the text is there, as text
    import csv

    with open(out.with_suffix(".csv"), newline="") as fh:
        for row in csv.reader(fh):
            for value in row:
                assert not value.startswith(("=", "+", "@", "\t", "\r")), value
