"""``[fleet]``'s worker disk is one :class:`DiskConfig`, judged by the same aio/cache rule as a matrix's
cells: a fleet and a matrix never disagree on whether QEMU starts with a disk (cache unset is O_DIRECT,
so aio=native runs there, in both)."""

from __future__ import annotations

from typing import Any

import pytest

from stormatrix.core.errors import MatrixError
from stormatrix.core.model import DiskConfig
from stormatrix.backends.proxmox.fleetspec import fleet_from_dict
from stormatrix.registry import spec_from_dict
from stormatrix.spec import expand


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
