"""The [winrm] section, passwords and their redaction, transports and certificate validation."""

from __future__ import annotations

import logging
import pickle
from pathlib import Path

import pytest

from stormatrix.core.errors import EnvironmentProblem, InputError, MatrixError
from stormatrix.executors.winrm import executor as w
from stormatrix.registry import sections, spec_from_dict

PASSWORD = "s3cr3t:P@ss/word"


def base_section(**over: object) -> dict[str, object]:
    d: dict[str, object] = {"host": "w2022", "username": "Administrator", "password_env": "STORMATRIX_TEST_PW",
                            "disk_serial": "STORMATRIX01"}
    d.update(over)
    return d


def settings(**over: object) -> w.WinRMSettings:
    return w.WinRMSettings.from_section(base_section(**over), environ={"STORMATRIX_TEST_PW": PASSWORD})


def test_section_is_registered_and_validated_by_the_matrix_parser() -> None:
    assert sections().get("winrm") is w.WINRM_SECTION
    raw = {"matrix": {"controllers": ["sata"]}, "workload": [{"name": "r", "rw": "randread", "bs": "4k"}],
           "winrm": {"username": "Administrator", "password_env": "PW", "disk_serial": "S1", "transport": "https"}}
    spec = spec_from_dict(raw)
    section = spec.section("winrm")
    assert section["cert_validation"] is True
    assert section["transport"] == "https"
    raw["winrm"]["transport"] = "ntml"  # type: ignore[index]
    with pytest.raises(MatrixError, match="did you mean 'ntlm'"):
        spec_from_dict(raw)


def test_the_section_has_no_password_key() -> None:
    """A password in the matrix file would end up in the journal: there is no key for it."""
    raw = {"matrix": {"controllers": ["sata"]}, "workload": [{"name": "r", "rw": "randread", "bs": "4k"}],
           "winrm": {"username": "a", "password": "x", "disk_serial": "S1"}}
    with pytest.raises(MatrixError, match="unknown key"):
        spec_from_dict(raw)


def test_password_from_environment() -> None:
    s = settings()
    assert s.password is not None and s.password.reveal() == PASSWORD


def test_password_from_file(tmp_path: Path) -> None:
    f = tmp_path / "pw"
    f.write_text(PASSWORD + "\nignored\n")
    f.chmod(0o600)
    s = w.WinRMSettings.from_section(base_section(password_env="", password_file=str(f)), environ={})
    assert s.password is not None and s.password.reveal() == PASSWORD


@pytest.mark.parametrize("over, env, match", [
    ({"password_env": ""}, {}, "neither is set"),
    ({"password_file": "/x"}, {"STORMATRIX_TEST_PW": "x"}, "both are set"),
    ({}, {}, "STORMATRIX_TEST_PW, which is not set"),
    ({}, {"STORMATRIX_TEST_PW": ""}, "is empty"),
    ({"password_env": "", "password_file": "/nonexistent/pw"}, {}, "names no existing file"),
])
def test_password_problems_are_input_errors(over: dict[str, object], env: dict[str, str], match: str) -> None:
    with pytest.raises(InputError, match=match):
        w.WinRMSettings.from_section(base_section(**over), environ=env)


def test_secret_never_prints_itself() -> None:
    s = w.Secret(PASSWORD)
    assert PASSWORD not in repr(s) and PASSWORD not in str(s) and PASSWORD not in f"{s}" and PASSWORD not in f"{s!r}"
    assert PASSWORD not in repr(settings())
    with pytest.raises(TypeError):
        pickle.dumps(s)


def test_redact_removes_plain_quoted_and_base64_forms() -> None:
    import base64
    from urllib.parse import quote

    text = f"a {PASSWORD} b {quote(PASSWORD, safe='')} c {base64.b64encode(PASSWORD.encode()).decode()} d"
    out = w.redact(text, [w.Secret(PASSWORD), None, ""])
    assert PASSWORD not in out and quote(PASSWORD, safe="") not in out
    assert out.count("***") == 3


def test_redacting_filter_scrubs_log_records(caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("stormatrix.executor.winrm")
    f = w.RedactingFilter([w.Secret(PASSWORD)])
    logger.addFilter(f)
    try:
        with caplog.at_level(logging.INFO, logger="stormatrix.executor.winrm"):
            logger.info("connecting with %s", PASSWORD)
    finally:
        logger.removeFilter(f)
    assert PASSWORD not in caplog.text
    assert "connecting with ***" in caplog.text


@pytest.mark.parametrize("transport, tls, endpoint, pywinrm", [
    ("ntlm", False, "http://w2022:5985/wsman", "ntlm"),
    ("ntlm", True, "https://w2022:5986/wsman", "ntlm"),
    ("kerberos", False, "http://w2022:5985/wsman", "kerberos"),
    ("credssp", False, "https://w2022:5986/wsman", "credssp"),
    ("https", False, "https://w2022:5986/wsman", "ssl"),
])
def test_transports_map_to_pywinrm(transport: str, tls: bool, endpoint: str, pywinrm: str) -> None:
    s = settings(transport=transport, use_tls=tls)
    kw = s.protocol_kwargs()
    assert kw["endpoint"] == endpoint
    assert kw["transport"] == pywinrm
    assert kw["password"] == PASSWORD
    assert PASSWORD not in s.describe()


def test_explicit_port_and_ipv6_host() -> None:
    assert settings(host="fe80::1", port=15986, transport="https").endpoint == "https://[fe80::1]:15986/wsman"


def test_certificate_validation_is_on_unless_turned_off() -> None:
    assert settings(transport="https").protocol_kwargs()["server_cert_validation"] == "validate"
    kw = settings(transport="https", ca_file="/etc/ca.pem").protocol_kwargs()
    assert kw["ca_trust_path"] == "/etc/ca.pem"
    off = settings(transport="https", cert_validation=False)
    assert off.protocol_kwargs()["server_cert_validation"] == "ignore"
    assert "cert-validation=OFF" in off.describe()


def test_read_timeout_must_exceed_operation_timeout() -> None:
    with pytest.raises(InputError, match="must exceed"):
        settings(operation_timeout_seconds=30, read_timeout_seconds=30)


def test_disk_serial_is_checked() -> None:
    with pytest.raises(InputError, match="disk serial"):
        settings(disk_serial="x'; Remove-Item C:\\ #")


def test_missing_auth_plugin_is_an_environment_problem(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "requests_kerberos" else real(name, *a))
    with pytest.raises(EnvironmentProblem, match="python3-requests-kerberos"):
        w.check_transport_available("kerberos")
    w.check_transport_available("https")  # nothing needed


def test_the_section_is_a_plain_constant() -> None:
    from stormatrix.executors.winrm.settings import WINRM_SECTION

    assert WINRM_SECTION is w.WINRM_SECTION and WINRM_SECTION.name == "winrm"
    assert WINRM_SECTION.fields["transport"].default == "ntlm"


def test_ntlm_and_kerberos_over_http_always_encrypt_the_messages() -> None:
    assert settings().protocol_kwargs()["message_encryption"] == "always"
    assert settings(use_tls=True).protocol_kwargs()["message_encryption"] == "auto"
    assert "message_encryption" not in settings(transport="https").protocol_kwargs()


def test_kerberos_needs_a_host_name_not_an_address() -> None:
    with pytest.raises(InputError, match="needs the guest's host name"):
        settings(transport="kerberos", host="192.168.50.21")
    with pytest.raises(InputError, match="host name"):
        settings(transport="kerberos", host="fe80::1")
    assert settings(transport="kerberos", host="w2022.lab.example").endpoint == "http://w2022.lab.example:5985/wsman"


def _workload(name: str, bs: int, iodepth: int, numjobs: int = 1) -> object:
    from stormatrix.core.model import Workload

    return Workload(name, "randread", bs, iodepth, numjobs)


def test_workloads_beyond_the_shell_memory_quota_are_refused_at_plan_time() -> None:
    fits = _workload("ok", 65536, 32, 4)  # 8 MiB of buffers
    w.check_workload_memory([fits], 1024)
    big = _workload("huge", 64 * 2**20, 64, 1)  # 4 GiB of buffers
    with pytest.raises(InputError) as info:
        w.check_workload_memory([fits, big], 1024)
    message = str(info.value)
    assert "'huge'" in message and "'ok'" not in message and "MaxMemoryPerShellMB = 1024" in message
    assert "max_memory_per_shell_mb" in message and "4352" in message  # 4096 MiB + the 256 MB headroom
    w.check_workload_memory([big], 4352)  # raised quota: accepted
    edge = _workload("edge", 2**20, 768, 1)  # exactly quota - headroom
    w.check_workload_memory([edge], 1024)
    with pytest.raises(InputError):
        w.check_workload_memory([_workload("edge+", 2**20, 769, 1)], 1024)


def test_storage_drivers_from_guest_facts() -> None:
    facts = {"Controllers": [{"Name": "sata", "DriverBound": True, "Service": "storahci"},
                             {"Name": "virtio-scsi", "DriverBound": False, "Service": ""},
                             {"Name": "unknown", "DriverBound": True, "Service": "x"}]}
    assert w.storage_drivers(facts) == {"sata": "storahci"}
    assert w.storage_drivers({"Controllers": {"Name": "virtio-blk", "DriverBound": True, "Service": "viostor"}}) == {
        "virtio-blk": "viostor"}  # ConvertTo-Json unwraps a one-element array


def test_plan_refuses_a_workload_larger_than_the_winrm_shell_quota(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """bs x iodepth x numjobs past MaxMemoryPerShellMB (1024 by default) would be killed mid-run by WinRM:
    refused by ``plan`` before any VM is touched, naming the workload and the quota to raise."""
    from stormatrix.cli import main

    m = tmp_path / "m.toml"
    m.write_text('[run]\nname = "w"\nbackend = "proxmox"\nexecutor = "winrm"\nguest_os = "windows2022"\n'
                 '[matrix]\ncontrollers = ["sata"]\naio = ["native"]\ncache = ["none"]\n'
                 '[[workload]]\nname = "huge"\nrw = "randread"\nbs = "64m"\niodepth = 32\n'
                 '[proxmox]\nhost = "pve.example"\nnode = "pve"\nvmid = 100\ntest_disk = "sata1"\n'
                 'token_id = "root@pam!bench"\ntoken_secret_env = "PVE_TOKEN"\n'
                 '[winrm]\nhost = "10.0.0.5"\nusername = "bench"\npassword_env = "WINRM_PASSWORD"\ndisk_serial = "smx-test"\n')
    assert main(["plan", str(m)]) == 2
    err = capsys.readouterr().err
    assert "'huge'" in err and "MaxMemoryPerShellMB" in err and "max_memory_per_shell_mb" in err
    m.write_text(m.read_text().replace("iodepth = 32", "iodepth = 4"))
    assert main(["plan", str(m), "--quiet"]) == 0


@pytest.mark.parametrize("option, value, says", [
    ("--timeout", "nan", "above 0"), ("--timeout", "-3", "above 0"), ("--timeout", "inf", "above 0"),
    ("--timeout", "soon", "not a number of seconds"),
    ("--host", "http://127.0.0.1:5985/wsman", "is a URL, not a host"), ("--host", "my host", "no spaces"),
    ("--host", "", "not a host name"),
])
def test_guest_check_refuses_nonsense_options_before_connecting(option: str, value: str, says: str,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """A NaN timeout would retry forever, a URL or a name with spaces is no host: exit 2 naming the option."""
    from stormatrix.cli import main

    argv = ["guest", "check", "--host", "10.0.0.5", "--username", "u", "--password-env", "PW",
            "--disk-serial", "x", option, value]
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {option}" in err and says in err


@pytest.mark.parametrize("host", ["W2022", "w2022.lab.example", "10.0.0.5", "::1", "[fe80::1]", "fd00::5"])
def test_guest_check_takes_names_and_addresses(host: str) -> None:
    from stormatrix.commands.guest import host_name

    assert host_name(host) == host.strip("[]")  # brackets go: the endpoint adds them for an IPv6 address
