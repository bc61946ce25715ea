"""The ``[vmware]`` matrix section: which vCenter/ESXi, VM and test disk, the credentials BY REFERENCE
(names of environment variables or a password file, see :mod:`stormatrix.secrets`, or the PowerCLI
credential store), the esxcli tuning and the host CPU source. Checks run when the matrix is read, so a
bad value is exit 2 naming the key, before PowerShell starts.

``VMWARE_SECTION`` is a plain constant: whoever needs the section (the config-section registry) imports
it from here or from :mod:`stormatrix.backends.vmware`.
"""

from __future__ import annotations

import re

from ..secrets import check_env_name, check_secret_file
from ..spec import Field, Section
from ..ssh import check_target

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
