"""The stand-in node's ``/etc/pve/storage.cfg`` and ``GET /storage/{storage}``.

The answer is what pve-manager's ``PVE/API2/Storage/Config.pm`` ``read`` returns: the storage's section
(``type`` and the properties Proxmox's storage documentation and ``pvesm add`` name: ``path``,
``content``, ``vgname``, ``thinpool``, ``pool``, ``krbd``, ``nocow``, ``server``, ``share``...; booleans
0/1), plus ``storage`` and the file's ``digest``. It needs ``Datastore.Allocate`` on
``/storage/{storage}``: a token outside :attr:`storage_admins` gets 403 as from Proxmox. (The qemu API
subset schema has no /storage path: ``pve_schema.EXTRA_SCHEMA`` adds its one parameter.)
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from .pve_schema import ApiError


class StorageConfig:
    """The storages part of :class:`~.pve.PveStandin` (its state is set up by ``PveStandin.__init__``)."""

    lock: Any
    storage: str
    storage_dir: Path
    storages: dict[str, dict[str, Any]]
    storage_admins: set[str] | None

    def set_storage(self, type: str, **props: Any) -> None:  # noqa: A002 - storage.cfg's own key
        """Make the stand-in's storage one of ``type`` with the section properties ``props`` as
        storage.cfg holds them (``krbd=1``, ``nocow=1``, ``vgname="pve"``...); defaults for the keys
        each type requires (pvesm add's mandatory options) are filled in."""
        required: dict[str, dict[str, Any]] = {
            "dir": {"path": str(self.storage_dir)}, "btrfs": {"path": str(self.storage_dir)},
            "lvm": {"vgname": "pve"}, "lvmthin": {"vgname": "pve", "thinpool": "data"},
            "rbd": {"pool": "rbd"}, "cifs": {"server": "192.0.2.10", "share": "vmstore",
                                             "path": f"/mnt/pve/{self.storage}"},
            "nfs": {"server": "192.0.2.11", "export": "/export/vm", "path": f"/mnt/pve/{self.storage}"},
            "zfspool": {"pool": "rpool/data"}}
        with self.lock:
            self.storages[self.storage] = {"type": type, "content": "images,rootdir",
                                           **required.get(type, {}), **props}

    def storage_cfg_digest(self) -> str:
        text = "".join(f"{cfg['type']}: {sid}\n" + "".join(f"\t{k} {v}\n" for k, v in cfg.items() if k != "type")
                       + "\n" for sid, cfg in sorted(self.storages.items()))
        return hashlib.sha1(text.encode()).hexdigest()


    def _api_GET_storage_storage(self, p: dict[str, Any], raw: Any, user: str, *_: Any) -> Any:
        """pve-manager ``PVE/API2/Storage/Config.pm`` ``read``: the section, ``digest`` of storage.cfg."""
        sid = p["storage"]
        if self.storage_admins is not None and user not in self.storage_admins:
            raise ApiError(403, f"Permission check failed (/storage/{sid}, Datastore.Allocate)")
        with self.lock:
            scfg = self.storages.get(sid)
            if scfg is None:
                raise ApiError(500, f"storage '{sid}' does not exist")
            return {**scfg, "storage": sid, "digest": self.storage_cfg_digest()}
