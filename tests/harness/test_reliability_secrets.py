"""Secrets: credentials only by reference (an environment variable or a file the user
can read), and never in any output. Recognisable secrets go into every credential input (the Proxmox
token secret from the environment and from a file, the WinRM password from the environment and from a
file); runs, faults, refused logins, the report and the guest check follow; then every log line, the
journal and every file in the run directory, the workbook (all its zip members), the CSV, stdout,
stderr and every exception's text and details are searched for them.
"""

from __future__ import annotations

import argparse
import re
import logging
import zipfile
from pathlib import Path
from typing import Any, Iterator

import pytest
from winrm.protocol import Protocol

from standins.agent import AgentFaults, AgentStandin, FakeCollector
from standins.pve import PveStandin

from stormatrix.cli import build_parser, main
from stormatrix.commands import guest as guest_cmd
from stormatrix.core.errors import InputError, StormatrixError
from stormatrix.executors.winrm import executor as w
from stormatrix.runner import Runner
from stormatrix.runsource import RunOptions
from stormatrix.registry import spec_from_dict
from tests.standins.wsman import WSManStandIn


PVE_ENV_SECRET = "SMXSECRET-pve-env-7f3a9c"
PVE_FILE_SECRET = "SMXSECRET-pve-file-2b8d41"
WINRM_ENV_SECRET = "SMXSECRET-winrm-env-c0ffee"
WINRM_FILE_SECRET = "SMXSECRET-winrm-file-decaf0"
ALL = (PVE_ENV_SECRET, PVE_FILE_SECRET, WINRM_ENV_SECRET, WINRM_FILE_SECRET)
VMID = 100


def assert_nowhere(texts: list[str]) -> None:
    for text in texts:
        for secret in ALL:
            assert secret not in text, (secret, text[:300])
            assert secret.encode().hex() not in text  # nor hex-encoded


def files_text(*roots: Path) -> list[str]:
    out = []
    for root in roots:
        for path in ([root] if root.is_file() else root.rglob("*")):
            if not path.is_file():
                continue
            if path.suffix == ".xlsx":
                with zipfile.ZipFile(path) as z:
                    out += [z.read(n).decode("utf-8", "replace") for n in z.namelist()]
            else:
                out.append(path.read_bytes().decode("utf-8", "replace"))
    return out


@pytest.fixture
def pve(tmp_path: Path) -> Iterator[PveStandin]:
    s = PveStandin(tmp_path / "pve", tokens={"root@pam!smx": PVE_ENV_SECRET, "root@pam!smxfile": PVE_FILE_SECRET})
    vol = s.add_volume(VMID, "vm-100-disk-1.raw")
    s.add_vm(VMID, {"name": "bench", "memory": "512", "cores": "1", "scsihw": "virtio-scsi-single",
                    "scsi1": f"{vol},aio=native,cache=none,iothread=1,size=64M", "boot": "order=scsi1",
                    "serial1": "socket"})
    with s:
        agent = AgentStandin(s.run_dir / f"{VMID}.serial1", AgentFaults())
        try:
            yield s
        finally:
            agent.close()


def pve_matrix(s: PveStandin, **proxmox: Any) -> dict[str, Any]:
    return {"run": {"backend": "proxmox", "executor": "local-agent", "ramp_seconds": 0, "measure_seconds": 1,
                    "retries": 0, "name": "secrets"},
            "matrix": {"disk_slot": 1, "controllers": ["sata", "virtio-blk", "ide"], "aio": ["io_uring"]},
            "workload": [{"name": "r", "rw": "randread", "bs": "4k"}],
            "proxmox": {"host": "127.0.0.1", "port": s.port, "node": "pve", "vmid": VMID, "test_disk": "scsi1",
                        "token_id": "smx", "ca_file": str(s.ca_file), "timeout": 20, "task_timeout": 30,
                        "qemu_server_dir": str(s.run_dir), "guest_channel": "serial1", "ready": "executor",
                        **proxmox}}


def run_collecting(raw: dict[str, Any], run_dir: Path, errors: list[str]) -> None:
    spec = spec_from_dict(raw, "secrets.toml")
    runner = Runner(spec, run_dir, RunOptions(progress=False, collector_factory=FakeCollector))
    # no monitor in the stand-in; the class's own methods are put back afterwards (a del would remove them)
    cls = runner.backend_cls
    saved = {name: cls.__dict__[name] for name in ("thread_roles", "blockstats")}
    cls.thread_roles = lambda self: {}  # type: ignore[method-assign]
    cls.blockstats = lambda self: None  # type: ignore[method-assign]
    try:
        runner.run()
    except StormatrixError as exc:
        errors += [str(exc), repr(exc), repr(exc.details), repr(exc.__dict__)]
    finally:
        for name, method in saved.items():
            setattr(cls, name, method)


@pytest.mark.parametrize("source", ["env", "file"])
def test_proxmox_token_secret_is_in_no_output(source: str, pve: PveStandin, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    caplog.set_level(logging.DEBUG)
    for name in ("proxmoxer", "urllib3", "requests"):
        logging.getLogger(name).setLevel(logging.DEBUG)
    if source == "env":
        monkeypatch.setenv("SMX_TOKEN", PVE_ENV_SECRET)
        cred: dict[str, Any] = {"token_secret_env": "SMX_TOKEN"}
    else:
        secret_file = tmp_path / "token"
        secret_file.write_text(PVE_FILE_SECRET + "\n")
        secret_file.chmod(0o600)
        cred = {"token_secret_file": str(secret_file), "token_id": "smxfile"}
    errors: list[str] = []
    run_dir = tmp_path / "run"
    # a run with a fault in it (an API 500 and a failed task carry server text into messages)
    pve.fail_request("PUT", "/config", status=500, message="unable to write config", count=1)
    pve.fail_next_task("qmstart", "start failed: QEMU exited with code 1")
    run_collecting(pve_matrix(pve, **cred), run_dir, errors)
    # a refused token: the error must say so without the secret
    wrong = dict(cred, token_id="nobody")
    run_collecting(pve_matrix(pve, **wrong), tmp_path / "run-refused", errors)
    assert any("401" in e or "refused" in e.lower() or "authentic" in e.lower() for e in errors), errors
    # the reports of it
    out = tmp_path / "out" / "report.xlsx"
    assert main(["report", str(run_dir), "-o", str(out)]) == 0
    assert main(["-vv", "restore", str(run_dir), "--force"]) in (0, 2)
    captured = capsys.readouterr()
    journal = (run_dir / "journal.ndjson").read_text()
    assert "SMX_TOKEN" in journal or "token_secret_file" in journal  # the reference is journaled...
    assert_nowhere([*errors, caplog.text, captured.out, captured.err,
                    *files_text(run_dir, tmp_path / "run-refused", out.parent)])  # ...never the value


def test_secret_file_readable_by_others_is_warned_about(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from stormatrix import secrets

    f = tmp_path / "token"
    f.write_text(PVE_FILE_SECRET)
    f.chmod(0o644)
    ref = secrets.reference({"token_secret_file": str(f)}, env_key="token_secret_env", file_key="token_secret_file",
                            what="the token secret", path="m.toml", section="proxmox")
    with caplog.at_level(logging.WARNING):
        assert secrets.resolve(ref).reveal() == PVE_FILE_SECRET
    assert "readable by other users" in caplog.text and PVE_FILE_SECRET not in caplog.text
    pw = tmp_path / "pw"
    pw.write_text(WINRM_FILE_SECRET + "\n")
    pw.chmod(0o644)
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert w.load_password(password_file=str(pw)).reveal() == WINRM_FILE_SECRET
    assert "readable by other users" in caplog.text and WINRM_FILE_SECRET not in caplog.text


def test_credentials_are_never_taken_as_values() -> None:
    """No CLI option takes a secret, and a matrix cannot hold one (unknown key, value not echoed)."""
    parser = build_parser()
    options = {opt for action in parser._actions for opt in action.option_strings}  # noqa: SLF001
    for sub in parser._subparsers._group_actions[0].choices.values():  # type: ignore[union-attr]  # noqa: SLF001
        options |= {opt for a in sub._actions for opt in a.option_strings}  # noqa: SLF001
        for a in sub._actions:  # noqa: SLF001
            for subsub in getattr(a, "choices", None) or {}:
                if isinstance(a.choices, dict):
                    options |= {o for aa in a.choices[subsub]._actions for o in aa.option_strings}  # noqa: SLF001
    assert "--password-env" in options and "--password-file" in options
    assert not {o for o in options if re.search(r"(password|secret|token)$", o)}, options
    for section, key in (("proxmox", "token_secret"), ("proxmox", "token_value"), ("winrm", "password")):
        raw: dict[str, Any] = {"matrix": {"controllers": ["sata"]}, "workload": [{"name": "r", "rw": "read", "bs": "4k"}],
                               section: {key: PVE_ENV_SECRET}}
        with pytest.raises(InputError) as exc:
            spec_from_dict(raw)
        assert "unknown key" in str(exc.value) and PVE_ENV_SECRET not in str(exc.value)


@pytest.mark.parametrize("source", ["env", "file"])
def test_winrm_password_is_in_no_output_of_guest_check(source: str, tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """A refused login against the WS-Man stand-in, through ``stormatrix guest check``'s own code."""
    secret = WINRM_ENV_SECRET if source == "env" else WINRM_FILE_SECRET
    caplog.set_level(logging.DEBUG)
    for name in ("winrm", "urllib3", "requests", "requests_ntlm"):
        logging.getLogger(name).setLevel(logging.DEBUG)
    pw_file = tmp_path / "pw"
    pw_file.write_text(secret + "\n")
    pw_file.chmod(0o600)

    def guest(line: str, run: Any) -> None:
        run.finish(0)

    errors: list[str] = []
    with WSManStandIn(guest, password="the-right-one") as server:
        args = argparse.Namespace(host="127.0.0.1", port=server.port, transport="ntlm", tls=False, username="Administrator",
                                  password_env="SMX_PW" if source == "env" else None,
                                  password_file=str(pw_file) if source == "file" else None,
                                  no_cert_validation=False, ca_file="", disk_serial="S1", controller=None, engine="fio",
                                  fio_path="fio.exe", diskspd_path="diskspd.exe", timeout=3.0)

        def factory(s: w.WinRMSettings) -> Any:
            assert s.password is not None
            errors.append(repr(s))
            return Protocol(server.url, transport="plaintext", username=s.username, password=s.password.reveal(),
                            read_timeout_sec=5, operation_timeout_sec=1)

        try:
            guest_cmd.run_check(args, protocol_factory=factory, environ={"SMX_PW": WINRM_ENV_SECRET})
        except StormatrixError as exc:
            errors += [str(exc), repr(exc), repr(exc.details), repr(getattr(exc, "stdout", "")),
                       repr(getattr(exc, "stderr", ""))]
    assert any("Administrator" in e or "refused" in e.lower() or "401" in e for e in errors), errors
    captured = capsys.readouterr()
    assert_nowhere([*errors, caplog.text, captured.out, captured.err])





# --- a secret pasted where its reference belongs is refused without being repeated -----------------------

PASTED = "3f9c2a7e-51b4-4c1d-9e8a-0b6d5f4c3a21"  # what a Proxmox API token secret looks like


def plan_matrix(tmp_path: Path, proxmox: str) -> Path:
    path = tmp_path / "m.toml"
    path.write_text("""[run]
backend = "proxmox"
[matrix]
controllers = ["sata"]
disk_slot = 1
[[workload]]
name = "r"
rw = "randread"
bs = "4k"
[proxmox]
host = "pve1.lab"
node = "pve"
vmid = 100
test_disk = "scsi1"
token_id = "smx"
""" + proxmox)
    return path


@pytest.mark.parametrize("command", ["plan", "run"])
@pytest.mark.parametrize("key", ["token_secret_env", "token_secret_file"])
def test_a_pasted_token_secret_is_refused_and_never_echoed(key: str, command: str, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    path = plan_matrix(tmp_path, f'{key} = "{PASTED}"\n')
    argv = [command, str(path)] + (["-o", str(tmp_path / "run"), "--no-progress"] if command == "run" else [])
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert PASTED not in out + err and PASTED[:8] not in out + err
    assert f"[proxmox] {key}" in err and str(path) in err and "36-character value" in err, err
    assert ("not an environment-variable name" if key.endswith("env") else "names no existing file") in err
    assert "Traceback" not in err and not (tmp_path / "run").exists()


@pytest.mark.parametrize("proxmox, words", [
    ("", ["[proxmox] token_secret_env / token_secret_file", "neither is set", "Fix: set token_secret_env"]),
    ('token_secret_env = "SMX_TOKEN"\ntoken_secret_file = "{file}"\n',
     ["[proxmox] token_secret_env / token_secret_file", "both are set", "silently ignored", "keep exactly one"]),
    ('token_secret_env = "SMX_TOKEN"\nca_file = "{missing}"\n', ["[proxmox] ca_file", "is not a file"]),
])
def test_proxmox_credential_mistakes_fail_plan_with_exit_2(proxmox: str, words: list[str], tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    secret_file = tmp_path / "token"
    secret_file.write_text(PVE_FILE_SECRET)
    secret_file.chmod(0o600)
    path = plan_matrix(tmp_path, proxmox.format(file=secret_file, missing=tmp_path / "no-such-ca.pem"))
    assert main(["plan", str(path)]) == 2
    out, err = capsys.readouterr()
    for word in words:
        assert word in err, err
    assert str(path) in err and "Traceback" not in err and PVE_FILE_SECRET not in out + err


def test_transport_local_needs_no_token(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = plan_matrix(tmp_path, 'transport = "local"\n')
    assert main(["plan", str(path)]) == 0, capsys.readouterr().err


def test_an_unset_variable_is_named_only_when_it_looks_like_a_name(monkeypatch: pytest.MonkeyPatch) -> None:
    from stormatrix import secrets

    monkeypatch.delenv("SMX_UNSET_TOKEN", raising=False)
    monkeypatch.delenv("Hunter2isMyPassword", raising=False)
    for name, shown in (("SMX_UNSET_TOKEN", True), ("Hunter2isMyPassword", False)):
        ref = secrets.reference({"password_env": name}, env_key="password_env", file_key="password_file",
                                what="the WinRM password", path="m.toml", section="winrm")
        with pytest.raises(InputError) as exc:
            secrets.resolve(ref)
        text = str(exc.value)
        assert exc.value.exit_code == 2 and "[winrm] password_env" in text and "is not set" in text
        assert (name in text) is shown, text
        if not shown:
            assert "19-character value" in text


def test_a_command_line_reference_is_checked_without_echo(tmp_path: Path) -> None:
    from stormatrix import secrets

    with pytest.raises(InputError) as exc:
        secrets.check_option("--password-env", "P@ssw0rd!2024", kind="env")
    assert "--password-env" in str(exc.value) and "P@ssw0rd" not in str(exc.value)
    assert "13-character value" in str(exc.value)
    with pytest.raises(InputError) as exc:
        secrets.check_option("--password-file", "P@ssw0rd!2024", kind="file")
    assert "P@ssw0rd" not in str(exc.value) and "names no existing file" in str(exc.value)
    secrets.check_option("--password-env", "SMX_PW", kind="env")
    (tmp_path / "pw").write_text("x")
    secrets.check_option("--password-file", str(tmp_path / "pw"), kind="file")


def test_registered_secrets_are_scrubbed_in_every_form() -> None:
    import base64
    from urllib.parse import quote

    from stormatrix import secrets

    value = "SMXSECRET-scrub/+= me"
    secrets.register(value)
    text = f"a {value} b {quote(value, safe='')} c {base64.b64encode(value.encode()).decode()} d"
    assert secrets.scrub(text) == "a *** b *** c *** d"
    assert repr(secrets.Secret(value)) == "Secret('***')" and f"{secrets.Secret(value)}" == "***"
