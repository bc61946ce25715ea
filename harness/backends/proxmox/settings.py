"""The ``[proxmox]`` matrix section: its keys, the checks a single key cannot make, and the API transport
the section describes.

Every check that can run without the node runs when the matrix is parsed or planned, so that a typo
is an exit 2 naming the key before anything is changed on a VM: the disk key's form, the CPU list, the
ssh target, the CA file, and the token secret's reference (an environment variable's NAME or a file's
PATH, exactly one, never the secret itself: :mod:`stormatrix.secrets`).
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any, Mapping

from ... import secrets
from ...core.names import host_problem
from ...core.paths import ca_bundle_problem
from ...core.scope import parse_cpuset
from ...spec import Field, Section
from ...ssh import check_target
from .api import ProxmoxerTransport, PveshTransport
from .drives import split_drive_key

log = logging.getLogger("stormatrix.backend.proxmox")

# Where linux-host/ goes on the node: the ssh user's home (a fixed /tmp path could be pre-created by
# another local user and its scripts run as root).
REMOTE_COLLECTOR_DIR = ".cache/stormatrix/linux-host"


def _check_host(value: str) -> None:
    """``[proxmox] host`` and ``guest_host``: a name or an IP address (empty: transport = "local" or the
    backend's own address, or said by check_section); a URL would become a host name with a slash in it
    and fail only at the first connection, after plan said yes."""
    problem = host_problem(value) if value else None
    if problem:
        raise ValueError(problem)  # the fix is the key's help: host name or IP only, the port in port


def _check_disk_key(value: str) -> None:
    split_drive_key(value)


def _check_cpuset(value: str) -> None:
    if value:
        parse_cpuset(value)


def _check_node_root(value: str) -> None:
    if not value.startswith("/") or any(c in value for c in "\0\n"):
        raise ValueError(f"{value!r} is not an absolute directory path")


def _check_serial(value: str) -> None:
    if value and not re.fullmatch(r"serial[0-3]", value):
        raise ValueError(f"{value!r} is not serial0-serial3")


def _check_remote_dir(value: str) -> None:
    if not value or value.startswith("-") or any(c in value for c in "\0\n'\"$`\\ "):
        raise ValueError(f"{value!r} is not a plain directory path (no spaces, quotes or $)")


def _check_ca_file(value: str) -> None:
    """A CA bundle must exist now and hold PEM certificates: a missing or wrong one would fail the first
    connection (as an opaque SSL error), after plan said yes. Looked at without opening a FIFO or device."""
    if value:
        problem = ca_bundle_problem(Path(value).expanduser())
        if problem:
            raise ValueError(f"{value!r} is not a file of PEM certificates: it {problem}")


PROXMOX_SECTION = Section("proxmox", {
    "transport": Field(str, "api", choices=("api", "local"),
                       help="api: REST API over HTTPS with a token; local: pvesh on the node itself"),
    "host": Field(str, "", check=_check_host,
                  help="the node's host name or IP address only, e.g. \"10.0.0.2\", for the API (transport = \"api\"); "
                       "the port goes in port (8006 by default), and the API is always HTTPS"),
    "port": Field(int, 8006, min=1, max=65535),
    "node": Field(str, help="the Proxmox node name, as in /nodes/{node}"),
    "vmid": Field(int, min=100, max=999999999, help="the VM under test"),
    "test_disk": Field(str, check=_check_disk_key, help="the VM's test disk key, e.g. scsi1"),
    "user": Field(str, "root@pam", help="the token's user, USER@REALM"),
    "token_id": Field(str, "", help="the API token's id (the part after '!')"),
    "token_secret_env": Field(str, "", check=secrets.check_env_name,
                              help="NAME of the environment variable holding the token secret (never the secret)"),
    "token_secret_file": Field(str, "", check=secrets.check_secret_file,
                               help="PATH of a file holding the token secret (never the secret itself)"),
    "verify_tls": Field(bool, True, help="verify the node's certificate; false only if you accept MITM risk"),
    "ca_file": Field(str, "", check=_check_ca_file,
                     help="give the path of the CA bundle (or the node's /etc/pve/pve-root-ca.pem, copied here) that "
                          "verifies the node's certificate, or leave it empty for the system's CAs"),
    "timeout": Field(float, 60.0, min=1, max=3600, help="seconds per API request (proxmoxer's 5 s is too short)"),
    "task_timeout": Field(float, 300.0, min=5, max=86400, help="seconds a start/stop task may take"),
    "restart": Field(str, "stop-start", choices=("stop-start", "reboot"),
                     help="how pending changes are applied: API stop+start, or API reboot when the disk stays "
                          "on its bus"),
    "ready": Field(str, "auto", choices=("auto", "agent", "tcp", "executor"),
                   help="readiness: guest agent ping, a TCP port (guest_host:guest_port), or the executor's own"),
    "guest_host": Field(str, "", check=_check_host,
                        help="the guest's host name or IP address only, for fio-server/WinRM executors; the port "
                             "goes in guest_port"),
    "guest_port": Field(int, 0, min=0, max=65535,
                        help="port the guest executor listens on (fio server 8765, WinRM 5985/5986)"),
    "guest_channel": Field(str, "", check=_check_serial,
                           help="serialN configured as 'socket' that carries the local agent (node-local runs)"),
    "qemu_server_dir": Field(str, "/var/run/qemu-server", help="where the node keeps <vmid>.pid/.qmp/.serialN"),
    "ssh": Field(str, "", check=check_target,
                 help="ssh target (user@node) for the host collector, pinning and qm showcmd; empty = this machine"),
    "ssh_config": Field(str, "",
                        help="give the path of an ssh_config file for ssh/scp to the node (Port, IdentityFile, "
                             "UserKnownHostsFile), passed as ssh -F, or leave it empty for your usual ssh "
                             "configuration"),
    "ssh_dir": Field(str, REMOTE_COLLECTOR_DIR, check=_check_remote_dir,
                     help="where linux-host/ is copied on the node (relative = the ssh user's home)"),
    "node_root": Field(str, "/", check=_check_node_root,
                       help="where the node's /proc and /sys are, for [host] scope = \"cpus\" (\"/\" on the node "
                            "itself; a container that mounts the host's at /host: \"/host\")"),
    "pin_cpus": Field(str, "", check=_check_cpuset,
                      help="pin vCPU and iothreads to these host CPUs during each cell, a list like 2-3 or 0,2,4"),
    "reboot_timeout": Field(int, 60, min=1, max=3600,
                            help="seconds the guest gets to shut down on an API reboot (restart = \"reboot\"); "
                                 "Proxmox's default is 60"),
    "check_cmdline": Field(bool, True, help="before measuring, check the test disk's options in qm showcmd and the "
                                            "running QEMU's command line (where the node is reachable)"),
    "allow_shared_scsihw": Field(bool, False,
                                 help="run SCSI-controller cells although other scsiN disks of the VM (its boot disk) "
                                      "move to the cell's controller with it (scsihw is one setting per VM); the "
                                      "journal names them in every cell"),
}, help="the Proxmox VE backend: node, VM, test disk, credentials (secrets by reference only)",
   check=lambda path, values: check_section(values, path),
   # how the node and the guest are reached, and how patiently: not what a cell measures
   may_change_on_resume=frozenset({
       "transport", "host", "port", "user", "token_id", "token_secret_env", "token_secret_file", "verify_tls",
       "ca_file", "timeout", "task_timeout", "ready", "guest_host", "guest_port", "guest_channel", "qemu_server_dir",
       "ssh", "ssh_config", "ssh_dir", "reboot_timeout", "check_cmdline", "node_root"}))


def token_reference(o: Mapping[str, Any], path: str = "") -> secrets.SecretRef:
    """The token secret's reference, checked (exactly one of token_secret_env / token_secret_file)."""
    return secrets.reference(o, env_key="token_secret_env", file_key="token_secret_file",
                             what="the Proxmox API token secret", path=path, section="proxmox")


def check_section(o: Mapping[str, Any], path: str) -> None:
    """The checks of ``[proxmox]`` that need more than one key. Called at plan time and by the backend.

    ``transport = "api"`` needs host, token_id and exactly one reference to the token secret; with
    ``transport = "local"`` (pvesh on the node) a token key would be ignored, which is said, not hidden."""
    if o.get("transport", "api") == "api":
        for key, what in (("host", "the node's address"), ("token_id", "the API token's id (after '!')")):
            if not o.get(key):
                raise secrets.config_error(path, f"[proxmox] {key}", "is empty, but transport = \"api\" needs it",
                                           f"set {key} = ... ({what}), or transport = \"local\" when stormatrix "
                                           "runs on the node")
        token_reference(o, path)
    elif o.get("token_secret_env") or o.get("token_secret_file"):
        log.warning("%s: [proxmox] transport = \"local\" runs pvesh on the node and uses no token: "
                    "token_secret_env/token_secret_file are ignored", path)


def make_transport(o: Mapping[str, Any], path: str = "") -> Any:
    """The API transport a ``[proxmox]`` section describes: ``pvesh`` on the node, or HTTPS with a token
    (secret by reference, TLS verified unless turned off). Also used by the suite's VM discovery."""
    secrets.install_log_scrubber()
    if o["transport"] == "local":
        return PveshTransport(timeout=o["timeout"])
    check_section(o, path)
    secret = secrets.resolve(token_reference(o, path))
    verify: bool | str = (str(Path(o["ca_file"]).expanduser()) if o["ca_file"] else True) if o["verify_tls"] else False
    if not o["verify_tls"]:
        log.warning("TLS verification of %s is turned off ([proxmox] verify_tls = false)", o["host"])
    return ProxmoxerTransport(o["host"], port=o["port"], user=o["user"], token_name=o["token_id"],
                              token_value=secret.reveal(), verify=verify, timeout=o["timeout"])
