"""The ``[vmware]`` matrix section: which vCenter/ESXi, VM and test disk, the credentials BY REFERENCE
(names of environment variables or a password file, see :mod:`stormatrix.secrets`, or the PowerCLI
credential store), the esxcli tuning and the host CPU source. Checks run when the matrix is read, so a
bad value is exit 2 naming the key, before PowerShell starts.

``VMWARE_SECTION`` is a plain constant: whoever needs the section (the config-section registry) imports
it from here or from :mod:`stormatrix.backends.vmware.backend`.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass
from typing import Any

from ... import secrets
from ...core.errors import InputError
from ...secrets import check_env_name, check_secret_file
from ...spec import Field, Section
from ...ssh import check_target

#: stormatrix controller name -> the module's -Type value
CONTROLLER_TYPES: dict[str, str] = {
    "pvscsi": "ParaVirtual",
    "lsilogic-sas": "LsiLogicSAS",
    "lsilogic": "LsiLogic",
    "nvme": "NVMe",
}


def _check_disk_name(value: str) -> None:
    if not re.fullmatch(r"Hard disk [1-9][0-9]*", value):
        raise ValueError(f"{value!r} is not a vSphere disk name like \"Hard disk 2\"")


def _check_device(value: str) -> None:
    if value and not re.fullmatch(r"[A-Za-z0-9._:-]+", value):
        raise ValueError(f"{value!r} is not an esxcli device name (naa..., eui..., t10...)")


VMWARE_SECTION = Section("vmware", {
    "server": Field(str, help="vCenter Server or ESXi host that PowerCLI connects to"),
    "vm": Field(str, help="the VM under test, by name (exactly one VM must have it)"),
    "test_disk": Field(str, check=_check_disk_name, help="the test disk as vSphere names it, e.g. \"Hard disk 2\""),
    "credential_source": Field(str, "env", choices=("env", "credential-store"),
                               help="env: user/password from the environment variables named below; "
                                    "credential-store: the PowerCLI credential store entry for server"),
    "user_env": Field(str, "STORMATRIX_VSPHERE_USER", check=check_env_name,
                      help="NAME of the environment variable holding the user"),
    "password_env": Field(str, "STORMATRIX_VSPHERE_PASSWORD", check=check_env_name,
                          help="NAME of the environment variable holding the password (never the password)"),
    "password_file": Field(str, "", check=check_secret_file,
                           help="PATH of a file whose first line is the password (chmod 600), instead of password_env; "
                                "stormatrix hands it to pwsh in the child's environment, never on a command line"),
    "credential_store_user": Field(str, "", help="user of the credential store entry, when it holds several"),
    "verify_tls": Field(bool, True, help="verify the server's certificate; false only if you accept MITM risk"),
    "esx_host": Field(str, "", help="the ESXi host for esxcli tuning and host CPU (default: the VM's host for CPU)"),
    "device": Field(str, "", check=_check_device, help="the storage device for esxcli (naa..., eui..., t10...)"),
    "sched_num_req_outstanding": Field(int, 0, min=0, max=4096,
                                       help="esxcli --sched-num-req-outstanding during the run (technote: 1024); "
                                            "0 = leave"),
    "latency_threshold_ms": Field(int, -1, min=-1, max=1_000_000,
                                  help="esxcli latencythreshold -t during the run (technote: 10); -1 = leave"),
    "guest_host": Field(str, "", help="address of the guest for fio-server/WinRM executors"),
    "guest_port": Field(int, 0, min=0, max=65535, help="port the guest executor listens on"),
    "pwsh": Field(str, "pwsh", help="the PowerShell 7 executable (with VMware.PowerCLI installed for it): a path, "
                  "or a name looked up on PATH, then in ~/.dotnet/tools and the checkout's .tools/pwsh"),
    "call_timeout": Field(float, 900.0, min=10, max=86400, help="seconds one PowerCLI call may take"),
    "stats_wait_seconds": Field(float, 60.0, min=0, max=3600,
                                help="how long to wait for vSphere's realtime sample that covers the window end"),
    "host_cpu_source": Field(str, "vsphere", choices=("vsphere", "esxtop"),
                             help="vsphere: Get-Stat realtime (20 s samples, prorated); esxtop: esxtop -b on the "
                                  "ESXi host over SSH during the window (needs esxtop_ssh)"),
    "esxtop_ssh": Field(str, "", check=check_target,
                        help="ssh destination of the ESXi host for esxtop (e.g. root@esx01.lab); key-based login "
                             "only (ssh -o BatchMode=yes), the SSH service (TSM-SSH) must be running"),
    "esxtop_delay_seconds": Field(int, 5, min=2, max=300, help="esxtop -d: seconds between its snapshots"),
}, help="the VMware ESXi backend (PowerCLI through pwsh): server, VM, test disk, credentials by reference only",
   # how vCenter, the guest and the host's statistics are reached, and how patiently
   may_change_on_resume=frozenset({
       "server", "credential_source", "user_env", "password_env", "password_file", "credential_store_user",
       "verify_tls", "guest_host", "guest_port", "pwsh", "call_timeout", "stats_wait_seconds", "esxtop_ssh",
       "esxtop_delay_seconds"}))


log = logging.getLogger("stormatrix.backend.vmware")

#: the variable of pwsh's own environment that carries a password read from [vmware] password_file
FILE_PASSWORD_VARIABLE = "STORMATRIX_VSPHERE_PASSWORD_FROM_FILE"

#: the [vmware] keys that say how to reach vCenter (what a fleet, which names no single VM, takes from it)
CONNECTION_KEYS = ("server", "credential_source", "user_env", "password_env", "password_file",
                   "credential_store_user", "verify_tls", "pwsh", "call_timeout")


@dataclass(frozen=True)
class Connection:
    """How pwsh connects: Connect-StormatrixVMware's parameters (names of variables, never a password), the
    variables whose values are scrubbed from what is logged, and the password by reference."""

    parameters: dict[str, Any]
    redact: tuple[str, ...]
    password: secrets.SecretRef | None


def connection(o: dict[str, Any], explicit: dict[str, Any], path: str) -> Connection:
    """The connection of a validated ``[vmware]`` table ``o``; ``explicit`` is the table as written (a
    password_env the file sets itself wins over a password_file)."""
    if o["credential_source"] == "env":
        # the password by reference (stormatrix.secrets): an environment variable pwsh reads itself, or a
        # file whose first line this process reads and hands to pwsh in the child's environment only
        env_name = o["password_env"] if ("password_env" in explicit or not o["password_file"]) else ""
        ref = secrets.reference({"password_env": env_name, "password_file": o["password_file"]},
                                env_key="password_env", file_key="password_file",
                                what="the vSphere password", path=path, section="vmware")
        params: dict[str, Any] = {"Server": o["server"], "CredentialSource": "Environment",
                                  "UserVariable": o["user_env"], "PasswordVariable": env_name or FILE_PASSWORD_VARIABLE,
                                  "VerifyCertificate": bool(o["verify_tls"])}
        conn = Connection(params, (env_name,) if env_name else (), ref)
    else:
        conn = Connection({"Server": o["server"], "CredentialSource": "CredentialStore",
                           "CredentialStoreUser": o["credential_store_user"],
                           "VerifyCertificate": bool(o["verify_tls"])}, (), None)
    if not o["verify_tls"]:
        log.warning("TLS verification of %s is turned off ([vmware] verify_tls = false)", o["server"])
    return conn


def credentials_for_child(conn: Connection, o: dict[str, Any]) -> dict[str, str]:
    """Fail before the first pwsh call when the user or the password is missing (by name only); returns what
    pwsh's environment needs besides ours (a password read from a file, registered for scrubbing)."""
    if o["credential_source"] != "env" or conn.password is None:
        return {}
    if not os.environ.get(o["user_env"]):
        raise InputError(f"[vmware] credential_source = \"env\": environment variable {o['user_env']} (the vSphere "
                         "user) is not set; set it in the shell that runs stormatrix")
    password = secrets.resolve(conn.password, strip=False)
    return {FILE_PASSWORD_VARIABLE: password.reveal()} if conn.password.file else {}
