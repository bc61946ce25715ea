"""The Proxmox stand-in's fleet endpoints: clone, template, next free VMID, cluster resources, storages
with content types and capacity, volume allocation that runs out, volume deletion, VM destroy.

Requests are validated against ``tests/data/pve-api-fleet.json`` (the fleet endpoints of Proxmox's API
schema, copied from ``../shared/reference/pve-api-fleet.json``; ``test_pve_fleet_standin.py`` checks the
copy). What each call does follows qemu-server's ``API2/Qemu.pm`` (``clone_vm``, ``template``,
``destroy_vm``) and pve-storage's ``API2/Storage/Content.pm`` / ``Status.pm`` as documented, and never the
harness's own code:

- ``clone`` checks the new VMID is unused *when the request arrives* (``VM N already exists on node``),
  creates its config at once with ``lock: clone`` (so the VMID is taken), then finishes as a task that
  takes :attr:`FleetEndpoints.clone_seconds` (full clones :attr:`full_clone_seconds`) and can fail
  (``fail_next_task("qmclone", ...)``), after which the half-made VM and its volumes are gone again.
  A linked clone needs a template source; a normal VM is always copied in full;
- volumes live on any storage of ``storage.cfg`` (:meth:`add_storage`): dir-like storages name them
  ``sid:VMID/vm-VMID-disk-N.raw``, block storages (lvm, zfspool, iscsidirect, rbd...) ``sid:vm-VMID-disk-N``.
  A storage has a capacity (``total``); an allocation beyond what is left fails as the storage would;
  a linked clone's disks take no space (thin), a full clone's and an allocated volume's their size;
- ``DELETE /nodes/{node}/qemu/{vmid}`` (task ``qmdestroy``) refuses a running VM, then frees every volume
  its config references (disks and ``unusedN``) and, with ``destroy-unreferenced-disks``, every other
  volume owned by the VMID on any storage.
"""

from __future__ import annotations

import random
import re
import time
from pathlib import Path
from typing import Any

from .pve_schema import ApiError, param_error

DRIVE_RE = re.compile(r"^(ide|sata|scsi|virtio|efidisk|tpmstate)(\d+)$")
UNUSED_RE = re.compile(r"^unused(\d+)$")
#: storage types whose volumes are files in a per-VMID folder (volid ``sid:VMID/name.fmt``)
DIR_TYPES = frozenset({"dir", "nfs", "cifs", "btrfs", "glusterfs", "cephfs"})
TIB = 2**40


def _size_bytes(text: str) -> int:
    """``size`` of ``POST .../content``: KiB, or with an M/G suffix (pve-storage ``Content.pm``)."""
    m = re.fullmatch(r"(\d+)([MG]?)", text)
    if not m:
        raise param_error({"size": f"value does not match the regex pattern"})
    return int(m.group(1)) * {"": 2**10, "M": 2**20, "G": 2**30}[m.group(2)]


def _random_mac() -> str:
    """PVE::Tools::random_ether_addr with Proxmox's prefix BC:24:11."""
    return "BC:24:11:" + ":".join(f"{random.randint(0, 255):02X}" for _ in range(3))


class FleetEndpoints:
    """A mixin of :class:`~.pve.PveStandin`; the state lives there."""

    lock: Any
    node: str
    workdir: Path
    vms: dict[int, Any]
    storages: dict[str, dict[str, Any]]
    _task_faults: dict[str, list[str]]
    storage_capacity: dict[str, int]  # bytes per storage (not a storage.cfg key); TIB when not set
    volume_sizes: dict[str, int]
    destroyed_vms: list[int]
    vm_node: dict[int, str]
    nodes: list[str]
    storage_on: Any

    #: how long a clone task runs (seconds), linked and full
    clone_seconds = 0.2
    full_clone_seconds = 0.5
    #: how long a destroy task runs
    destroy_seconds = 0.1

    # --- storages and volumes ------------------------------------------------------------------------
    def add_storage(self, sid: str, *, type: str = "lvm", content: str = "images",  # noqa: A002 - storage.cfg key
                    total: int = TIB, shared: bool = False, **props: Any) -> None:
        """A storage in ``storage.cfg`` with ``total`` bytes of capacity."""
        with self.lock:
            self.storages[sid] = {"type": type, "content": content, "shared": int(shared), **props}
            self.storage_capacity[sid] = int(total)

    def storage_root(self, sid: str) -> Path:
        return self.workdir / "storage" / sid / "images"

    def volume_path(self, volid: str) -> Path:
        sid, _, rel = volid.partition(":")
        if sid not in self.storages or not rel:
            raise ApiError(500, f"unable to parse volume ID '{volid}'")
        if "/" in rel:
            vmid, _, name = rel.partition("/")
            return self.storage_root(sid) / vmid / name
        return self.storage_root(sid) / rel

    def volid_for(self, sid: str, vmid: int, name: str) -> str:
        return f"{sid}:{vmid}/{name}" if self.storages[sid]["type"] in DIR_TYPES else f"{sid}:{name}"

    def volumes(self) -> set[str]:
        """Every volume on every storage."""
        out = set()
        for sid in self.storages:
            root = self.storage_root(sid)
            out |= {f"{sid}:{p.parent.name}/{p.name}" for p in root.glob("*/*") if p.is_file()}
            out |= {f"{sid}:{p.name}" for p in root.glob("*") if p.is_file()}
        return out

    def volume_owner(self, volid: str) -> int | None:
        m = re.search(r"(?:^|[:/])(?:vm|base)-(\d+)-", volid)
        return int(m.group(1)) if m else None

    def _make_volume(self, volid: str, size: int, *, thin: bool = False) -> None:
        path = self.volume_path(volid)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as fh:
            fh.truncate(size)
        self.volume_sizes[volid] = 0 if thin else size

    def used(self, sid: str) -> int:
        return sum(self.volume_sizes.get(v, self.volume_path(v).stat().st_size if self.volume_path(v).exists() else 0)
                   for v in self.volumes() if v.startswith(f"{sid}:"))

    def _storage_status(self, sid: str) -> dict[str, Any]:
        cfg = self.storages[sid]
        total = self.storage_capacity.get(sid, TIB)
        used = self.used(sid)
        return {"storage": sid, "type": cfg["type"], "content": cfg.get("content", ""), "active": 1, "enabled": 1,
                "shared": int(cfg.get("shared", 0)), "total": total, "used": used, "avail": max(0, total - used)}

    def _storage(self, sid: str) -> dict[str, Any]:
        cfg = self.storages.get(sid)
        if cfg is None:
            raise ApiError(500, f"storage '{sid}' does not exist")
        return cfg

    def _api_GET_nodes_node_storage(self, p: dict[str, Any], *_: Any) -> Any:
        with self.lock:
            out = []
            for sid in sorted(self.storages):
                if (p.get("storage") and p["storage"] != sid) or not self.storage_on(sid, str(p["node"])):
                    continue
                st = self._storage_status(sid)
                if p.get("content") and not set(str(p["content"]).split(",")) <= set(st["content"].split(",")):
                    continue
                out.append(st)
            return out

    def _api_GET_nodes_node_storage_storage_status(self, p: dict[str, Any], *_: Any) -> Any:
        with self.lock:
            self._storage(p["storage"])
            st = self._storage_status(p["storage"])
            st.pop("storage")
            return st

    def _api_GET_nodes_node_storage_storage_content(self, p: dict[str, Any], *_: Any) -> Any:
        with self.lock:
            self._storage(p["storage"])
            out = []
            for volid in sorted(v for v in self.volumes() if v.startswith(f"{p['storage']}:")):
                owner = self.volume_owner(volid)
                if p.get("vmid") and owner != int(p["vmid"]):
                    continue
                out.append({"volid": volid, "content": "images", "format": "raw", "vmid": owner,
                            "size": self.volume_path(volid).stat().st_size})
            return out

    def _api_POST_nodes_node_storage_storage_content(self, p: dict[str, Any], *_: Any) -> Any:
        """``pvesm alloc``: pve-storage ``Content.pm`` create -> ``vdisk_alloc``."""
        sid, vmid, name = p["storage"], int(p["vmid"]), str(p["filename"])
        size = _size_bytes(str(p["size"]))
        with self.lock:
            cfg = self._storage(sid)
            if "images" not in cfg.get("content", "").split(","):
                raise ApiError(500, f"storage '{sid}' does not support content-type 'images'")
            m = re.fullmatch(r"(.+?)(?:\.(raw|qcow2|vmdk|subvol))?", name)
            assert m is not None
            if m.group(2) and p.get("format") and p["format"] != m.group(2):
                raise param_error({"format": f"different storage formats ({p['format']} != {m.group(2)})"})
            if not re.match(rf"^vm-{vmid}-", name):
                raise ApiError(500, f"illegal name '{name}' - should be 'vm-{vmid}-*'")
            if cfg["type"] in DIR_TYPES and not m.group(2):
                name = f"{name}.{p.get('format') or 'raw'}"
            volid = self.volid_for(sid, vmid, name)
            if self.volume_path(volid).exists():
                raise ApiError(500, f"volume '{volid}' already exists")
            avail = self._storage_status(sid)["avail"]
            if size > avail:
                if cfg["type"] == "lvm":
                    raise ApiError(500, f"lvcreate '{cfg.get('vgname', sid)}/{name}' error:   Volume group "
                                        f"\"{cfg.get('vgname', sid)}\" has insufficient free space "
                                        f"({avail // 2**22} extents): {size // 2**22} required.")
                raise ApiError(500, f"unable to create volume '{volid}': not enough free space on storage "
                                    f"'{sid}' ({avail} bytes available, {size} requested)")
            self._make_volume(volid, size)
            return volid

    def _api_DELETE_nodes_node_storage_storage_content_volume(self, p: dict[str, Any], raw: Any, user: str,
                                                             *_: Any) -> Any:
        """pve-storage ``Content.pm`` delete: a task (``imgdel``) that frees the volume. It does not look
        at VM configs: a volume still attached is freed all the same (detach first)."""
        volume = str(p["volume"])
        volid = volume if ":" in volume else f"{p['storage']}:{volume}"
        with self.lock:
            self._storage(volid.partition(":")[0])
            if not self.volume_path(volid).exists():
                raise ApiError(500, f"volume '{volid}' does not exist")
            owner = self.volume_owner(volid) or 0

        def free(task: Any) -> None:
            with self.lock:
                self._destroy(volid)
                self.volume_sizes.pop(volid, None)
            task.log.append(f"removed volume '{volid}'")

        return self._task("imgdel", owner, user, free)

    # --- cluster -------------------------------------------------------------------------------------
    def _api_GET_cluster_nextid(self, p: dict[str, Any], *_: Any) -> Any:
        with self.lock:
            if p.get("vmid") is not None:
                vmid = int(p["vmid"])
                if vmid in self.vms:
                    raise param_error({"vmid": f"VM {vmid} already exists"})
                return str(vmid)
            return str(next(i for i in range(100, 1_000_000_000) if i not in self.vms))

    def _api_GET_cluster_resources(self, p: dict[str, Any], *_: Any) -> Any:
        kind = p.get("type")
        with self.lock:
            out: list[dict[str, Any]] = []
            if kind in (None, "node"):
                out += [{"id": f"node/{n}", "type": "node", "node": n, "status": "online"} for n in self.nodes]
            if kind in (None, "vm"):
                for vmid, vm in sorted(self.vms.items()):
                    conf = self.merged(vm)
                    out.append({"id": f"qemu/{vmid}", "type": "qemu", "vmid": vmid,
                                "node": self.vm_node.get(vmid, self.node),
                                "name": conf.get("name", f"VM {vmid}"),
                                "status": "running" if vm.running else "stopped",
                                "template": int(conf.get("template", "0") == "1"), "tags": conf.get("tags", ""),
                                "maxmem": int(conf.get("memory", "512")) * 2**20,
                                "maxcpu": int(conf.get("cores", "1")) * int(conf.get("sockets", "1")),
                                **({"lock": conf["lock"]} if "lock" in conf else {})})
            if kind in (None, "storage"):
                for node, sid in [(n, sid) for n in self.nodes for sid in sorted(self.storages)
                                  if self.storage_on(sid, n)]:
                    st = self._storage_status(sid)
                    out.append({"id": f"storage/{node}/{sid}", "type": "storage", "storage": sid,
                                "node": node, "content": st["content"], "plugintype": st["type"],
                                "disk": st["used"], "maxdisk": st["total"], "shared": st["shared"],
                                "status": "available"})
            return out

    # --- clone, template, destroy --------------------------------------------------------------------
    def _disks(self, conf: dict[str, str]) -> list[tuple[str, str]]:
        return [(k, v) for k, v in sorted(conf.items()) if DRIVE_RE.match(k) and "media=cdrom" not in v
                and v.split(",")[0] not in ("none", "cdrom") and not v.startswith("/")]

    def _api_POST_nodes_node_qemu_vmid_clone(self, p: dict[str, Any], raw: Any, user: str, *_: Any) -> Any:
        """qemu-server ``clone_vm``."""
        newid = int(p["newid"])
        with self.lock:
            src = self._vm(p)
            conf = self.merged(src)
            template = conf.get("template") == "1"
            full = bool(p["full"]) if p.get("full") is not None else not template
            here = self.vm_node.get(src.vmid, self.node)
            target = str(p.get("target") or here)
            if target not in self.nodes:
                raise ApiError(500, f"no such cluster node '{target}'")
            local = [k for k, v in self._disks(conf) if not self.storage_on(v.partition(":")[0], target)]
            if target != here and local:  # qemu-server: a clone to another node needs shared storage
                raise ApiError(500, f"can't clone VM to node '{target}' (VM uses local storage)")
            if not full:
                if p.get("storage"):
                    raise param_error({"storage": "parameter 'storage' not allowed for linked clones"})
                if not template:
                    disk = next((k for k, _ in self._disks(conf)), "scsi0")
                    raise ApiError(500, f"Linked clone feature is not supported for drive '{disk}'")
            if newid in self.vms:
                raise ApiError(500, f"VM {newid} already exists on node '{self.vm_node.get(newid, self.node)}'")
            target_sid = p.get("storage")
            if target_sid:
                self._storage(target_sid)
            # the new config exists (locked) from the request on: the VMID is taken
            from .pve_power import Vm

            self.vms[newid] = Vm(newid, {"lock": "clone"})
            self.vm_node[newid] = target
            made: list[str] = []
            # an injected failure (fail_next_task) happens inside the clone, so its clean-up runs too
            injected = self._task_faults.get("qmclone", [])
            fault = injected.pop(0) if injected else None

        def clone(task: Any) -> None:
            try:
                time.sleep(self.full_clone_seconds if full else self.clone_seconds)
                if fault is not None:
                    raise ApiError(500, fault)
                with self.lock:
                    new = {k: v for k, v in conf.items()
                           if k not in ("template", "lock", "name", "description", "digest") and not UNUSED_RE.match(k)}
                    for n, (key, value) in enumerate(self._disks(conf)):
                        vol, _, opts = value.partition(",")
                        sid = target_sid or vol.partition(":")[0]
                        ext = ".raw" if self.storages[sid]["type"] in DIR_TYPES else ""
                        volid = self.volid_for(sid, newid, f"vm-{newid}-disk-{n}{ext}")
                        size = self.volume_path(vol).stat().st_size if self.volume_path(vol).exists() else 0
                        if full and size > self._storage_status(sid)["avail"]:
                            raise ApiError(500, f"clone failed: not enough free space on storage '{sid}'")
                        self._make_volume(volid, size, thin=not full)
                        made.append(volid)
                        new[key] = volid + ("," + opts if opts else "")
                    for key in [k for k in new if re.fullmatch(r"net\d+", k)]:  # a clone gets new MACs
                        new[key] = re.sub(r"=(?:[0-9A-Fa-f]{2}:){5}[0-9A-Fa-f]{2}", "=" + _random_mac(), new[key], 1)
                    new["name"] = str(p.get("name") or f"Copy-of-VM-{conf.get('name', src.vmid)}")
                    if p.get("description") is not None:
                        new["description"] = str(p["description"])
                    self.vms[newid].conf = new
                task.log.append(f"{'full' if full else 'linked'} clone of VM {src.vmid} as {newid}: {', '.join(made)}")
            except BaseException:
                with self.lock:  # qemu-server removes the half-made clone
                    for volid in made:
                        self._destroy(volid)
                        self.volume_sizes.pop(volid, None)
                    self.vms.pop(newid, None)
                raise

        return self._task("qmclone", src.vmid, user, clone)

    def _api_POST_nodes_node_qemu_vmid_template(self, p: dict[str, Any], raw: Any, user: str, *_: Any) -> Any:
        with self.lock:
            vm = self._vm(p)
            if vm.running:
                raise ApiError(500, "you can't convert a VM to template if VM is running")
            if self.merged(vm).get("template") == "1":
                raise ApiError(500, "you can't convert a template to a template")

        def convert(task: Any) -> None:
            with self.lock:
                vm.conf["template"] = "1"

        return self._task("qmtemplate", vm.vmid, user, convert)

    def _api_DELETE_nodes_node_qemu_vmid(self, p: dict[str, Any], raw: Any, user: str, *_: Any) -> Any:
        """qemu-server ``destroy_vm``: stopped VMs only; frees referenced (and owned) volumes."""
        with self.lock:
            vm = self._vm(p)
            if vm.running:
                raise ApiError(500, f"VM {vm.vmid} is running - destroy failed")
            if "lock" in vm.conf and not p.get("skiplock"):
                raise ApiError(500, f"VM is locked ({vm.conf['lock']})")
            unreferenced = bool(p.get("destroy-unreferenced-disks"))

        def destroy(task: Any) -> None:
            time.sleep(self.destroy_seconds)
            with self.lock:
                conf = {**vm.conf, **vm.pending}
                referenced = [v.split(",")[0] for k, v in conf.items()
                              if (DRIVE_RE.match(k) or UNUSED_RE.match(k)) and v.split(",")[0] not in ("none", "cdrom")
                              and "media=cdrom" not in v and not v.startswith("/")]
                owned = [v for v in self.volumes() if self.volume_owner(v) == vm.vmid] if unreferenced else []
                for volid in dict.fromkeys(referenced + owned):
                    if self.volume_path(volid).exists():
                        self._destroy(volid)
                        self.volume_sizes.pop(volid, None)
                        task.log.append(f"Removing image: {volid}")
                self.vms.pop(vm.vmid, None)
                self.destroyed_vms.append(vm.vmid)

        return self._task("qmdestroy", vm.vmid, user, destroy)
