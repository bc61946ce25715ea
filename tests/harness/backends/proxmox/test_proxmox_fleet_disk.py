"""The fleet's worker disk on Proxmox.

``[fleet]``'s worker disk is one :class:`DiskConfig`, judged by the same aio/cache rule as a matrix's
cells: a fleet and a matrix never disagree on whether QEMU starts with a disk (cache unset is O_DIRECT,
so aio=native runs there, in both).

The fleet attaches its test volumes with the Proxmox backend's one drive builder, and the config it
writes says what QEMU runs: ``iothread=1`` only where qemu-server gives the disk an iothread.

What QEMU gets is the Proxmox stand-in's own rendering of a config (``standins/pve_cmdline.py``, written
from qemu-server's cfg2cmd expectations and code, not from ours), read back with the backend's reader.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from standins import pve_cmdline

from stormatrix.backends.proxmox.cmdline import read_disk
from stormatrix.backends.proxmox.drives import disk_config_of, parse_drive
from stormatrix.backends.proxmox.fleet import ProxmoxFleet
from stormatrix.backends.proxmox.fleetspec import fleet_from_dict
from stormatrix.core.errors import MatrixError
from stormatrix.core.model import CONTROLLERS, DiskConfig
from stormatrix.registry import spec_from_dict
from stormatrix.cells import expand


def fleet(**disk: Any) -> dict[str, Any]:
    return {"fleet": {"template": 9000, "storages": ["bb-iscsi", "bb-nvme"], **disk}}


def matrix_problem(aio: str, cache: str) -> str | None:
    raw = {"run": {"backend": "qemu"}, "matrix": {"controllers": ["virtio-scsi-single"], "aio": [aio],
                                                  "iothread": [True], "cache": [cache]},
           "workload": [{"name": "r", "rw": "randread", "bs": "4k"}]}
    try:
        expand(spec_from_dict(raw, "m.toml"))
    except MatrixError as exc:
        return exc.problem
    return None


def fleet_problem(aio: str, cache: str) -> str | None:
    try:
        fleet_from_dict(fleet(controller="virtio-scsi-single", aio=aio, iothread=True, cache=cache), "f.toml", "pve1")
    except MatrixError as exc:
        assert exc.key == "[fleet] aio"
        return exc.problem
    return None


def test_the_workers_disk_is_one_disk_config() -> None:
    spec = fleet_from_dict(fleet(controller="virtio-blk", aio="threads", iothread=False, cache="writeback"),
                           "f.toml", "pve1")
    assert spec.disk == DiskConfig("virtio-blk", "threads", False, "writeback")


@pytest.mark.parametrize(("aio", "cache"), [("native", "writeback"), ("native", "unsafe"), ("native", "default"),
                                            ("native", "none"), ("io_uring", "writeback")])
def test_a_fleet_and_a_matrix_judge_aio_and_cache_alike(aio: str, cache: str) -> None:
    from_matrix = matrix_problem(aio, cache)
    assert fleet_problem(aio, cache) == from_matrix
    assert (from_matrix is None) == (aio != "native" or cache in ("none", "directsync", "default"))


# --- the config the fleet writes says what QEMU runs ----------------------------------------------------

PROXMOX_CONTROLLERS = sorted(c for c, (bus, _) in CONTROLLERS.items() if bus != "esxi")
#: qemu-server: iothread=1 takes effect for virtio-blk, or scsi with scsihw=virtio-scsi-single
IOTHREAD_TAKES_EFFECT = {"virtio-blk", "virtio-scsi-single"}


def attach_config(tmp_path: Path, controller: str, iothread: bool) -> tuple[dict[str, str], str]:
    raw = {"fleet": {"template": 9000, "workers": 1, "storages": ["bb-iscsi"], "controller": controller,
                     "iothread": iothread, "aio": "native", "cache": "none"}}
    fleet = ProxmoxFleet(fleet_from_dict(raw, "fleet.toml", "pve1"), None, tmp_path)
    conf = fleet.disk_option("bb-iscsi:vm-300-disk-smx1")
    return conf, next(k for k in conf if k != "scsihw")


@pytest.mark.parametrize("iothread", [True, False])
@pytest.mark.parametrize("controller", PROXMOX_CONTROLLERS)
def test_the_fleets_config_says_what_qemu_runs(tmp_path: Path, controller: str, iothread: bool) -> None:
    conf, key = attach_config(tmp_path, controller, iothread)
    argv = pve_cmdline.disk_args(conf, lambda volid: f"/dev/bb/{volid.split(':')[-1]}")
    running = read_disk(argv, key)
    claimed = disk_config_of(conf, key)
    assert running.iothread == (iothread and controller in IOTHREAD_TAKES_EFFECT)
    assert claimed.iothread == running.iothread  # no iothread=1 that qemu-server would ignore
    assert (claimed.controller, claimed.aio, claimed.cache) == (controller, "native", "none")
    assert parse_drive(conf[key])["file"] == "bb-iscsi:vm-300-disk-smx1"
