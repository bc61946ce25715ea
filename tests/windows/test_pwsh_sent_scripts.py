"""Every script text the Python side sends to PowerShell, checked by pwsh 7.6.9.

The WinRM executor builds PowerShell at run time (the presence check, the upload chunks, the module import
and call scripts, the restart) and sends each as ``powershell ... -EncodedCommand <base64 UTF-16LE>``;
the vmware backend runs ``stormatrix-vmware.ps1`` with a JSON request. None of that text is in a .ps1
file, so only this test shows it to PowerShell. The scripts are obtained exactly as the product builds
them, through its public entry points only: ``WinRMExecutor`` (constructor with ``protocol_factory``,
``ensure_module``, ``wait_ready``, ``run``, ``validate``, ``restart_guest``) with a recording pywinrm
``Protocol`` stand-in, so whatever the executor sends over WS-Man is what is checked; and
``vmware.pwsh_argv``, ``vmware.build_request`` and ``vmware.PYTHON_CALLS`` for the workstation side.

pwsh (tests/pwshengine.py, through tests/pwsh/Checks/Test-SentScript.ps1) then parses each script, looks
for what Windows PowerShell 5.1 lacks in the guest's scripts, checks that every command in them has a
provider (pwsh, a module, the fake guest or PowerCLI, Inventory.psd1), and binds every module call
statically (for calls whose parameters travel as base64 JSON, the call with the names in that JSON).
Each failure names the script by what it is for.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from stormatrix.backends.vmware import backend as vm
from stormatrix.core.model import Cell, DiskConfig, Timing, Workload
from stormatrix.executors.winrm import executor as w
from tests.pwshengine import PwshUnavailable, run_pwsh
import paths

ROOT = paths.ROOT
DRIVER = ROOT / "tests" / "pwsh" / "Checks" / "Test-SentScript.ps1"
CMD_LIMIT = 8191  # cmd.exe's longest command line (documented limit, not the product's constant)
PASSWORD = "Pa'ss\"w$rd"


@dataclass(frozen=True)
class Sent:
    purpose: str
    target: str  # "guest": powershell.exe 5.1 in the Windows guest; "workstation": pwsh 7 on the controller
    command_line: str
    script: str


class RecordingProtocol:
    """Duck-typed pywinrm ``Protocol``: records each command line and answers every command alike, with
    the markers a guest prints, so that the executor goes through all of its steps. The answer carries
    no knowledge of which script was sent (it is the same for all)."""

    def __init__(self, sent: list[str]) -> None:
        self.sent = sent
        self.boots = 0

    def open_shell(self, *args: Any, **kwargs: Any) -> str:
        return f"shell-{len(self.sent)}"

    def run_command(self, shell_id: str, command: str, arguments: Any = (), *args: Any, **kwargs: Any) -> str:
        self.sent.append(command if not arguments else " ".join([command, *arguments]))
        return f"command-{len(self.sent)}"

    def _raw_get_command_output(self, shell_id: str, command_id: str) -> tuple[bytes, bytes, int, bool]:
        self.boots += 1  # a new boot time on every answer, so restart_guest sees the guest come back
        result = json.dumps({"LastBootUpTime": f"boot-{self.boots}", "Passed": True, "Tests": []})
        out = f"##stormatrix:uploaded\r\n##stormatrix:engine-started\r\n##stormatrix:result {result}\r\n"
        return out.encode(), b"", 0, True

    def cleanup_command(self, *args: Any) -> None:
        return None

    def close_shell(self, *args: Any) -> None:
        return None


def decode_command_line(line: str) -> str:
    """The script in a ``powershell ... -EncodedCommand <base64>`` line, decoded as powershell.exe does
    (base64 of UTF-16LE); refuses any other shape, so a change of shape fails here by name."""
    words = line.split()
    assert words and words[0].lower() in ("powershell", "powershell.exe"), f"not a powershell command line: {line[:80]}"
    flags = [x.lower() for x in words[1:-1]]
    assert "-encodedcommand" in flags, f"no -EncodedCommand in {line[:120]}"
    try:
        return base64.b64decode(words[-1], validate=True).decode("utf-16-le")
    except (binascii.Error, UnicodeDecodeError) as exc:
        raise AssertionError(f"-EncodedCommand payload is not base64 of UTF-16LE: {exc}") from None


def _winrm_executor(sent: list[str], engine: str) -> w.WinRMExecutor:
    section = {"host": "192.0.2.10", "username": "Administrator", "password_env": "STORMATRIX_PW",
               "disk_serial": "STORMATRIX01", "engine": engine, "command_timeout_seconds": 5, "connect_retries": 0}
    return w.WinRMExecutor([], {"winrm": section}, protocol_factory=lambda s: RecordingProtocol(sent),
                           environ={"STORMATRIX_PW": PASSWORD}, sleep=lambda s: None)


class _Window:
    def measure_started(self) -> None:
        return None

    def measure_ended(self) -> None:
        return None


def _step(sent: list[str], out: list[Sent], purpose: str | None, action: Any) -> None:
    """Run one executor step and keep what it sent, named by the step (and by position within it);
    with no purpose, what it sent is dropped (a repeat of scripts already kept)."""
    before = len(sent)
    try:
        action()
    except Exception:  # noqa: BLE001 - the generic answer is not a real result; what was sent is what counts
        pass
    new = sent[before:]
    if purpose is None:
        return
    for i, line in enumerate(new, 1):
        name = purpose if len(new) == 1 else f"{purpose} ({i}/{len(new)})"
        out.append(Sent(name, "guest", line, decode_command_line(line)))


def winrm_sent() -> list[Sent]:
    """What the WinRM executor sends for everything it does: upload, facts, a fio cell (mixed, rate-limited),
    a DiskSpd cell, the validation and a restart."""
    out: list[Sent] = []
    for engine in ("fio", "diskspd"):
        sent: list[str] = []
        ex = _winrm_executor(sent, engine)
        try:
            if engine == "fio":
                _step(sent, out, "presence check and module upload", ex.ensure_module)
                _step(sent, out, "guest facts (wait_ready)", lambda: ex.wait_ready(deadline=float("inf")))
                _step(sent, out, "guest validation", lambda: ex.validate("virtio-scsi-single"))
                _step(sent, out, "restart and wait for the new boot", lambda: ex.restart_guest(deadline=float("inf")))
            else:
                _step(sent, out, None, ex.ensure_module)  # the same upload as above
            cell = Cell(DiskConfig("virtio-scsi-single", "native", False, "none"),
                        Workload("mixed", "randrw", 4096, 8, 2, rate_mib_s=5.0, rwmixread=70), 1)
            _step(sent, out, f"{engine} cell", lambda: ex.run(cell, Timing(1.0, 2.0), _Window()))
        finally:
            ex.close()
    return out


def vmware_sent() -> list[Sent]:
    """The workstation side: the fixed entry script run by pwsh_argv (its text is the file)."""
    argv = vm.pwsh_argv("pwsh")
    script_path = Path(argv[argv.index("-File") + 1])
    return [Sent(f"vmware entry script ({script_path.name})", "workstation", " ".join(argv),
                 script_path.read_text(encoding="utf-8"))]


def _unique(sent: list[Sent]) -> list[Sent]:
    """Each distinct script once, under the first step that sent it (after a restart the executor uploads
    the module again, the same scripts)."""
    seen: set[str] = set()
    return [s for s in sent if not (s.script in seen or seen.add(s.script))]


SENT = _unique(winrm_sent() + vmware_sent())


def vmware_calls() -> list[tuple[str, str, str]]:
    """(module, purpose, call text) for each request the backend can build: the command with every
    parameter name of its contract, and Connect-StormatrixVMware with the connection's names, read back
    from the request JSON that build_request makes (the module splats exactly these names)."""
    calls = []
    connection = {name: "x" for name in vm.PYTHON_CALLS["Connect-StormatrixVMware"]}
    for command, names in sorted(vm.PYTHON_CALLS.items()):
        if command == "Connect-StormatrixVMware":
            continue
        request = json.loads(vm.build_request(command, {n: "x" for n in names}, connection))
        calls.append(("StormatrixVMware", f"vmware request {command}",
                      request["command"] + "".join(f" -{n}:$v" for n in request["parameters"])))
    request = json.loads(vm.build_request("Get-StormatrixVMwareLayout", {}, connection))
    calls.append(("StormatrixVMware", "vmware request connection (Connect-StormatrixVMware)",
                  "Connect-StormatrixVMware" + "".join(f" -{n}:$v" for n in request["connection"])))
    return calls


DATA_CALLS = vmware_calls()


def _drive(folder: Path) -> subprocess.CompletedProcess[str]:
    """Test-SentScript.ps1 on the tests' pwsh (tests/pwshengine.py)."""
    try:
        return run_pwsh(DRIVER, str(folder), timeout=300)
    except PwshUnavailable as exc:
        pytest.fail(str(exc))


@pytest.fixture(scope="module")
def engine_findings(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, str, str]]:
    folder = tmp_path_factory.mktemp("sent")
    index = []
    for i, s in enumerate(SENT):
        name = f"{i:03d}.ps1"
        (folder / name).write_text(s.script, encoding="utf-8")
        index.append(f"{name}\t{s.target}\t{s.purpose}")
    (folder / "index.tsv").write_text("\n".join(index) + "\n", encoding="utf-8")
    (folder / "calls.tsv").write_text("".join(f"{m}\t{p}\t{t}\n" for m, p, t in DATA_CALLS), encoding="utf-8")
    proc = _drive(folder)
    assert proc.returncode == 0, f"Test-SentScript.ps1 failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}"
    rows = [tuple(line.split("\t", 2)) for line in proc.stdout.splitlines() if line.count("\t") >= 2]
    assert any(r[0] == "SCRIPT" for r in rows), \
        f"the engine read no script:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    return rows  # type: ignore[return-value]


def _findings(rows: list[tuple[str, str, str]], kind: str, purpose: str) -> list[str]:
    return [detail for k, p, detail in rows if k == kind and p == purpose]


def test_every_step_of_the_executor_was_captured(engine_findings: list[tuple[str, str, str]]) -> None:
    purposes = [s.purpose for s in SENT]
    assert sum("module upload" in p for p in purposes) >= 4, "presence check, reset, chunks, unpack"
    rebuilt = {d.split()[0] for k, _, d in engine_findings if k == "CALLDATA"}
    assert set(w.PYTHON_CALLS) <= rebuilt, f"module calls not seen in what was sent: {set(w.PYTHON_CALLS) - rebuilt}"
    commands = {d for k, _, d in engine_findings if k == "CALL"}
    assert set(vm.PYTHON_CALLS) <= commands, f"vmware calls not bound: {set(vm.PYTHON_CALLS) - commands}"
    assert any(re.search(r"\bRestart-Computer\b", s.script) for s in SENT)


@pytest.mark.parametrize("sent", [s for s in SENT if s.target == "guest"], ids=lambda s: s.purpose)
def test_command_line_fits_cmd_exe(sent: Sent) -> None:
    assert len(sent.command_line) <= CMD_LIMIT, f"{sent.purpose}: {len(sent.command_line)} characters"


@pytest.mark.parametrize("sent", SENT, ids=lambda s: s.purpose)
def test_sent_script_passes_the_engine_checks(sent: Sent, engine_findings: list[tuple[str, str, str]]) -> None:
    """Parses; for the guest, nothing Windows PowerShell 5.1 lacks; every command has a provider on the
    test engine; every module call in it binds (a splatted call by the names in its JSON)."""
    assert _findings(engine_findings, "SCRIPT", sent.purpose), f"{sent.purpose}: not checked by the engine"
    problems = {kind: _findings(engine_findings, kind, sent.purpose) for kind in ("PARSE", "PS51", "UNKNOWN", "BIND")}
    assert {k: v for k, v in problems.items() if v} == {}


@pytest.mark.parametrize("module, purpose, text", DATA_CALLS, ids=[p for _, p, _ in DATA_CALLS])
def test_module_call_binds(module: str, purpose: str, text: str, engine_findings: list[tuple[str, str, str]]) -> None:
    assert _findings(engine_findings, "CALL", purpose), f"{purpose}: the engine saw no call in {text!r}"
    assert _findings(engine_findings, "BIND", purpose) == []


def test_fake_folders_exist(engine_findings: list[tuple[str, str, str]]) -> None:
    assert [d for k, _, d in engine_findings if k == "SOURCE"] == []


def test_the_engine_check_catches_a_broken_script(tmp_path: Path) -> None:
    """The driver itself: a script with a parse error, a 5.1-only operator, an unknown command and a bad
    module call is reported on each count (so an empty result above means something)."""
    (tmp_path / "000.ps1").write_text("\"at $Filename: x\"\n", encoding="utf-8")
    (tmp_path / "001.ps1").write_text("Find-StormatrixTestDisk -Bogus 1\n", encoding="utf-8")
    (tmp_path / "002.ps1").write_text("$a = $b ?? 1\nGet-NoSuchThing\n", encoding="utf-8")
    blob = base64.b64encode(json.dumps({"Serial": "x", "Nope": 1}).encode()).decode()
    splat = f"$j=[Convert]::FromBase64String('{blob}');$a=@{{}};& 'Get-StormatrixGuestFacts' @a\n"
    (tmp_path / "003.ps1").write_text(splat, encoding="utf-8")
    (tmp_path / "index.tsv").write_text("000.ps1\tguest\tbroken\n001.ps1\tguest\tbad call\n002.ps1\tguest\tnewer\n"
                                        "003.ps1\tguest\tbad splat\n", encoding="utf-8")
    (tmp_path / "calls.tsv").write_text("StormatrixGuest\tbad data call\tInvoke-StormatrixFio -Serial $v -Nope $v\n",
                                        encoding="utf-8")
    proc = _drive(tmp_path)
    rows = [tuple(line.split("\t", 2)) for line in proc.stdout.splitlines() if line.count("\t") >= 2]
    kinds = {(k, p) for k, p, _ in rows}
    assert ("PARSE", "broken") in kinds, proc.stdout + proc.stderr
    assert ("PS51", "newer") in kinds and ("UNKNOWN", "newer") in kinds
    assert ("BIND", "bad call") in kinds
    assert any(k == "BIND" and p == "bad splat" and "Nope" in d for k, p, d in rows), rows
    bad = [d for k, p, d in rows if k == "BIND" and p == "bad data call"]
    assert any("Nope" in d for d in bad), rows
