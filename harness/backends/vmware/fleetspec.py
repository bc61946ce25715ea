"""The ``[fleet]`` of an ESXi fleet (``backend = "vmware"``) and the fleet's ``[vmware]`` (how to reach vCenter,
nothing about one VM): their keys, the spec they validate into, and the pwsh runner of that connection.

What the fleet does with them is :mod:`.fleet`; what its journal says it owns, :mod:`.fleetstate`.

::

    [fleet]
    backend = "vmware"
    template = "smx-worker-tpl"   # a vSphere template: a Linux image with VMware Tools and fio
    vmhost = "esx01.lab"          # the ESXi host the workers run on
    workers = 32
    vcpus = 4
    memory_mib = 4096
    name_prefix = "smx-w"
    storages = ["bb-iscsi", "bb-nvme"]   # datastores under test; each is a side
    disk_size = "10G"
    controller = "pvscsi"         # pvscsi, lsilogic-sas, lsilogic, nvme
    storage_format = "eagerzeroedthick"
    power_cycle = "side"

and ``[vmware]`` holds only how to reach vCenter (server, credentials by reference, verify_tls, pwsh).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ... import secrets
from ...core.errors import MatrixError
from ...core.model import parse_size
from ...fleet.spec import MAX_WORKERS, NAME_PREFIX_RE
from ...schema import Field, Section, parse_section
from ...secrets import check_env_name, check_secret_file
from .pwsh import PwshRunner
from .settings import CONNECTION_KEYS, CONTROLLER_TYPES, VMWARE_SECTION, connection, credentials_for_child

STORAGE_FORMATS = {"eagerzeroedthick": "EagerZeroedThick", "thick": "Thick", "thin": "Thin"}


def _prefix_ok(value: str) -> None:
    if not NAME_PREFIX_RE.match(value):
        raise ValueError(f"{value!r} is not a name prefix: lower-case letters, digits and '-', starting with a letter")


def _size_ok(value: Any) -> None:
    size = parse_size(value)
    if not 2**20 <= size <= 62 * 2**40:
        raise ValueError(f"{str(value)[:40]} is outside 1 MiB to 62 TiB (a VMFS virtual disk's limit)")


VMWARE_FLEET_SECTION = Section("fleet", {
    "backend": Field(str, choices=("vmware",), help="where the workers are deployed"),
    "template": Field(str, help="the vSphere template the workers are cloned from, by exact name"),
    "vmhost": Field(str, help="the ESXi host the workers are placed on, by exact name"),
    "vm_datastore": Field(str, "", help="datastore for the workers' own disks (default: the template's)"),
    "workers": Field(int, 4, min=1, max=MAX_WORKERS),
    "vcpus": Field(int, 4, min=1, max=768),
    "memory_mib": Field(int, 4096, min=256, max=24 * 2**20),
    "name_prefix": Field(str, "smx-w", check=_prefix_ok),
    "storages": Field(str, list_of=True, help="the datastores under test; each is a side"),
    "disk_size": Field((str, int), "10G", check=_size_ok, help="each worker's test disk, like 10G"),
    "controller": Field(str, "pvscsi", choices=tuple(CONTROLLER_TYPES)),
    "storage_format": Field(str, "eagerzeroedthick", choices=tuple(STORAGE_FORMATS),
                            help="eagerzeroedthick (allocated and zeroed before the run), thick, or thin"),
    "power_cycle": Field(str, "side", choices=("side",),
                         help="side: stop and start the workers before each datastore's run (always on ESXi: the "
                              "test disk's new controller needs each worker powered off)"),
    "parallel": Field(int, 8, min=1, max=64, help="clone tasks running at once"),
    "ready_timeout": Field(float, 600.0, min=5, max=7200, help="seconds the workers may take to boot"),
    "guest_user_env": Field(str, "STORMATRIX_GUEST_USER", check=check_env_name,
                            help="NAME of the environment variable holding the guest account that runs `fio --version` "
                                 "in each worker before the first point (VMware Tools guest operations)"),
    "guest_password_env": Field(str, "STORMATRIX_GUEST_PASSWORD", check=check_env_name,
                                help="NAME of the environment variable holding that account's password (never the "
                                     "password)"),
    "guest_password_file": Field(str, "", check=check_secret_file,
                                 help="PATH of a file whose first line is the guest password (chmod 600), instead of "
                                      "guest_password_env"),
}, help="the worker VMs the suite deploys on ESXi, and the datastores under test they get a disk on in turn")

#: ``[vmware]`` for a fleet: how to reach vCenter, nothing about one VM
FLEET_VMWARE_SECTION = Section("vmware", {k: VMWARE_SECTION.fields[k] for k in CONNECTION_KEYS},
                               help="how the fleet reaches vCenter or the ESXi host")


@dataclass(frozen=True)
class VmwareFleetSpec:
    path: str
    template: str
    vmhost: str
    vm_datastore: str
    workers: int
    vcpus: int
    memory_mib: int
    name_prefix: str
    storages: tuple[str, ...]
    disk_size: int
    controller: str
    storage_format: str
    power_cycle: str
    parallel: int
    ready_timeout: float
    guest_user_env: str = "STORMATRIX_GUEST_USER"
    guest_password: secrets.SecretRef | None = None  # the guest account's password, by reference
    vmware: dict[str, Any] = field(default_factory=dict, compare=False)  # the validated [vmware] connection keys
    vmware_raw: dict[str, Any] = field(default_factory=dict, compare=False)

    def names(self) -> list[str]:
        width = max(2, len(str(self.workers)))
        return [f"{self.name_prefix}{i:0{width}d}" for i in range(1, self.workers + 1)]


def is_vmware_fleet(raw: dict[str, Any]) -> bool:
    """Whether a file's ``[fleet]`` is deployed on ESXi (``backend = "vmware"``)."""
    fleet = raw.get("fleet")
    return isinstance(fleet, dict) and fleet.get("backend") == "vmware"


def vmware_fleet_from_dict(raw: dict[str, Any], path: str) -> VmwareFleetSpec:
    """``[fleet]`` (``backend = "vmware"``) and ``[vmware]``'s connection keys, validated."""
    if not isinstance(raw.get("vmware"), dict):
        raise MatrixError(path, "[vmware]", "is missing: the fleet is deployed through vCenter or an ESXi host",
                          "add [vmware] with server and the credential settings (docs/esxi.md)")
    for key in ("vm", "test_disk"):
        if key in raw["vmware"]:
            raise MatrixError(path, f"[vmware] {key}", "does not apply to a fleet: it names one VM of a matrix run",
                              f"remove {key}; the fleet's VMs are described in [fleet]")
    f = parse_section(path, VMWARE_FLEET_SECTION, raw.get("fleet", {}))
    vmware = parse_section(path, FLEET_VMWARE_SECTION, raw["vmware"])
    # a guest_password_env the file sets itself wins over a guest_password_file (as [vmware]'s password)
    explicit = raw.get("fleet") or {}
    env_name = f["guest_password_env"] if ("guest_password_env" in explicit or not f["guest_password_file"]) else ""
    refs = {"guest_password_env": env_name, "guest_password_file": f["guest_password_file"]}
    guest_password = secrets.reference(refs, env_key="guest_password_env", file_key="guest_password_file",
                                       what="the workers' guest password", path=path, section="fleet")
    return VmwareFleetSpec(path=path, template=f["template"], vmhost=f["vmhost"], vm_datastore=f["vm_datastore"],
                           workers=f["workers"], vcpus=f["vcpus"], memory_mib=f["memory_mib"],
                           name_prefix=f["name_prefix"], storages=tuple(f["storages"]),
                           disk_size=parse_size(f["disk_size"]), controller=f["controller"],
                           storage_format=f["storage_format"], power_cycle=f["power_cycle"], parallel=f["parallel"],
                           ready_timeout=f["ready_timeout"], guest_user_env=f["guest_user_env"],
                           guest_password=guest_password, vmware=vmware, vmware_raw=dict(raw["vmware"]))


def make_runner(spec: VmwareFleetSpec) -> PwshRunner:
    """The pwsh runner of the fleet's ``[vmware]`` connection; a missing user or password fails here, by name."""
    o = spec.vmware
    conn = connection(o, spec.vmware_raw, spec.path)
    runner = PwshRunner(o["pwsh"], conn.parameters, timeout=o["call_timeout"], redact=conn.redact)
    runner.child_env.update(credentials_for_child(conn, o))
    return runner
