"""The [suite] section: validation, the point grid, and the seeds' arithmetic (56 x 21 min = 19.6 h)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from stormatrix.cli import main
from stormatrix.core.errors import MatrixError
from stormatrix.executors.fioserver.inputs import FioGuest
from stormatrix.records import per_mib
from stormatrix.suite import eta
from stormatrix.registry import suite_from_dict

SEED: dict[str, Any] = {"suite": {
    "side": "Proxmox VE 7.2", "filename": "/dev/sdb",
    "guests": [f"vm{i:02d}=10.0.0.{10 + i}:8765" for i in range(1, 33)],
}}


def with_(**suite: Any) -> dict[str, Any]:
    raw = copy.deepcopy(SEED)
    raw["suite"].update(suite)
    return raw


def test_seed_suite_is_56_points_and_19_6_hours() -> None:
    s = suite_from_dict(SEED)
    points = s.points()
    assert len(points) == 56  # 7 block sizes x 8 queue depths, the seeds' defaults
    assert (s.ramp_s, s.measure_s) == (60, 1200)
    e = eta(s)
    assert e.points == 56 and e.measured_seconds == 56 * 1260
    assert round(e.measured_seconds / 3600, 1) == 19.6
    assert e.describe().startswith("56 points x 21 min = 19.6 h")
    assert len(s.guests) == 32


def test_points_in_seed_order_and_keys() -> None:
    s = suite_from_dict(with_(block_sizes=["512", "4k"], queue_depths=[1, 32]))
    assert [p.workload.name for p in s.points()] == ["randread-512-qd1", "randread-512-qd32",
                                                     "randread-4k-qd1", "randread-4k-qd32"]
    p = s.points()[3]
    assert (p.workload.bs, p.workload.iodepth, p.workload.rw) == (4096, 32, "randread")
    assert p.key == "unknown/randread-4k-qd32/rep1"
    job = s.job_for(p).render().splitlines()
    assert {"filename=/dev/sdb", "bs=4096", "iodepth=32", "runtime=1200", "ramp_time=60"} <= set(job)


def test_eta_after_resume_counts_the_rest() -> None:
    s = suite_from_dict(SEED)
    assert eta(s, done=6).points == 50


def test_side_disk_config_goes_into_the_key_and_record() -> None:
    s = suite_from_dict(with_(controller="virtio-scsi", aio="native", iothread=False, cache="none"))
    assert s.disk_key == "virtio-scsi-pci/aio=native/iothread=0/cache=none"
    assert s.disk_record()["bus"] == "scsi"
    assert suite_from_dict(SEED).disk_record()["controller"] == "unknown"


def test_guest_tables_and_default_port() -> None:
    s = suite_from_dict(with_(port=9000, guests=["a=10.0.0.1", {"name": "b", "host": "10.0.0.2", "filename": "/dev/vdb"}]))
    assert s.guests == (FioGuest("a", "10.0.0.1", 9000), FioGuest("b", "10.0.0.2", 9000, "/dev/vdb"))


def test_vm_list_instead_of_guests() -> None:
    raw = copy.deepcopy(SEED)
    del raw["suite"]["guests"]
    raw["suite"]["vms"] = [101, 102]
    with pytest.raises(MatrixError, match=r"needs a \[proxmox\] section"):
        suite_from_dict(raw)  # the node to ask for the addresses (tests/harness/backends/proxmox/test_proxmox_vms_discovery.py)
    raw["proxmox"] = {"host": "pve1", "node": "pve1", "token_id": "t", "token_secret_env": "X"}
    s = suite_from_dict(raw)
    assert s.vms == ("101", "102") and s.guests == ()
    assert len(s.with_guests([FioGuest("101", "10.0.0.1")]).guests) == 1


@pytest.mark.parametrize("change, key", [
    (dict(guests=None), "[suite] guests"),
    (dict(vms=[1]), "[suite] guests"),
    (dict(guests=["a=h:1", "a=h:2"]), "[suite] guests"),
    (dict(guests=["a=h:1", "b=h:1"]), "[suite] guests"),
    (dict(guests=[{"name": "a", "host": "h", "prot": 1}]), "[suite] guests[1]"),
    (dict(guests=["not a guest"]), "[suite] guests[1]"),
    (dict(block_sizes=["4k", "4096"]), "[suite] block_sizes"),
    (dict(block_sizes=["1000"]), "[suite] block_sizes"),
    (dict(queue_depths=[0]), "[suite] queue_depths[1]"),
    (dict(rw=["randwrite"]), "[suite] rw"),
    (dict(aio="native"), "[suite] controller"),
    (dict(filename="/dev/sdb\n"), "[suite] filename"),
    (dict(size="1k", block_sizes=["4k"]), "[suite] size"),
    (dict(ramp_second=1), "[suite] ramp_second"),
])
def test_mistakes_name_the_key(change: dict[str, Any], key: str) -> None:
    raw = with_(**{k: v for k, v in change.items() if v is not None})
    if change.get("guests", "x") is None:
        del raw["suite"]["guests"]
    with pytest.raises(MatrixError) as info:
        suite_from_dict(raw, "m.toml")
    assert info.value.key == key, str(info.value)
    assert "Fix:" in str(info.value)


def test_filename_is_required() -> None:
    raw = copy.deepcopy(SEED)
    del raw["suite"]["filename"]
    with pytest.raises(MatrixError, match="filename"):
        suite_from_dict(raw)


def test_writes_to_a_device_need_allow_write() -> None:
    raw = with_(rw=["randwrite"])
    raw["run"] = {"allow_write": True}
    assert suite_from_dict(raw).rw == ("randwrite",)
    assert suite_from_dict(with_(rw=["randwrite"], filename="scratch.dat")).rw == ("randwrite",)


def test_matrix_sections_do_not_belong_in_a_suite_file() -> None:
    raw = copy.deepcopy(SEED)
    raw["matrix"] = {"controllers": ["ide"]}
    with pytest.raises(MatrixError, match="does not belong"):
        suite_from_dict(raw)


def test_per_mib_follows_the_journal_units() -> None:
    assert per_mib(2**30, {"cpu_metric": "cpu_time", "cpu_total": 2.048, "ctx_switches": 4096}) == \
        {"mib": 1024.0, "cpu": 2.0, "cpu_unit": "CPU-ms/MiB", "ctx": 4.0}
    cyc = per_mib(2**20, {"cpu_metric": "cycles", "cycles": {"user": 10, "kernel": 5}})
    assert (cyc["cpu"], cyc["cpu_unit"]) == (15, "cycles/MiB")
    assert per_mib(2**20, None)["cpu"] is None


def test_cli_plan_prints_points_and_eta(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    guests = ", ".join(f'"vm{i:02d}=10.0.0.{10 + i}:8765"' for i in range(1, 33))
    path = tmp_path / "suite.toml"
    path.write_text(f'[suite]\nside = "ESXi 7.0u3"\nfilename = "/dev/sdb"\nguests = [{guests}]\n')
    assert main(["suite", "plan", str(path)]) == 0
    out = capsys.readouterr().out
    assert "56 points; ETA 56 points x 21 min = 19.6 h" in out
    assert "side 'ESXi 7.0u3'" in out and "guests (32)" in out


def test_suite_built_in_code_for_the_demo() -> None:
    from stormatrix.core.model import DiskConfig
    from stormatrix.suite import suite_for_guests

    s = suite_for_guests([("g1", "127.0.0.1", 10001), FioGuest("g2", "127.0.0.1", 10002, "/dev/vdc")],
                         side="B: virtio-blk", filename="/dev/vdb", block_sizes=["4k", "64k"], queue_depths=[1, 8],
                         ramp_s=2, measure_s=10, disk=DiskConfig("virtio-blk", "native", True, "none"),
                         run={"on_error": "stop", "retries": 0})
    assert len(s.points()) == 4 and s.side == "B: virtio-blk"
    assert s.points()[0].key == "virtio-blk/aio=native/iothread=1/cache=none/randread-4k-qd1/rep1"
    assert s.guests[1].filename == "/dev/vdc" and (s.on_error, s.retries) == ("stop", 0)
    with pytest.raises(MatrixError, match="queue_depths"):
        suite_for_guests([("g1", "127.0.0.1", 1)], side="A", filename="x", queue_depths=[0])


def test_an_esxi_side_is_its_controller_alone() -> None:
    """ESXi has no aio, iothread or cache: an ESXi side's points are keyed and journaled without them."""
    nvme = suite_from_dict(with_(controller="nvme"))                      # nvme exists only on ESXi
    assert nvme.disk_key == "nvme" and nvme.points()[0].key == "nvme/randread-512-qd1/rep1"
    record = nvme.disk_record()
    assert (record["controller"], record["aio"], record["iothread"], record["cache"]) == ("nvme", None, None, None)
    esx = with_(controller="pvscsi")
    esx["run"] = {"backend": "vmware"}                                   # ESXi's PVSCSI, not QEMU's
    assert suite_from_dict(esx).disk_key == "pvscsi"
    # QEMU's pvscsi keeps its aio (the suite's default when not given)
    assert suite_from_dict(with_(controller="pvscsi")).disk_key == "pvscsi/aio=io_uring/iothread=0/cache=none"


@pytest.mark.parametrize("given", [dict(aio="native"), dict(cache="none"), dict(iothread=False)])
def test_an_esxi_side_with_an_aio_names_the_key_and_fix(given: dict[str, Any]) -> None:
    with pytest.raises(MatrixError) as info:
        suite_from_dict(with_(controller="lsilogic-sas", **given), "m.toml")
    (key,) = given
    assert info.value.key == f"[suite] {key}"
    assert f"ESXi has no {key} setting" in str(info.value) and f"Fix: drop {key} from [suite]" in str(info.value)
