"""A fixed rate on a mixed read/write workload, run by the real fio 3.33.

fio applies ``rate=`` to reads and writes separately: one ``rate=1m`` on a 70/30 randrw runs 1 MiB/s of
reads plus 1 MiB/s of writes, twice the target and a 50/50 mix. Both Linux executors (the local agent's
job file and the fio-server job) must give fio ``read,write`` split by rwmixread, as the Windows guest
module does; and the record's rate check must flag a cell that ran faster than its target, not only
slower. The runs here are short (2-3 s) and assert relations that hold on a loaded machine too: the
read share near 70 % (not 50 %) and the total well below twice the target.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from stormatrix.core.model import Cell, DiskConfig, Timing, Workload
from stormatrix.executors.fioserver.executor import FioServerExecutor
from stormatrix.executors.fioserver.inputs import fio_rate
from stormatrix.executors.localagent import fio_job
from stormatrix.records import MIB, rate_check

needs_fio = pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")

MIXED = Workload("randrw70-4k", "randrw", 4096, 1, rate_mib_s=1.0, rwmixread=70)
DISK = DiskConfig("virtio-blk", "io_uring", False, "none")


def shares(fio: dict[str, Any]) -> tuple[float, float]:
    """(achieved MiB/s over all directions, read share of the bytes)."""
    runtime_s = fio["total"]["runtime_ms"] / 1000.0
    read, write = fio.get("read", {}).get("io_bytes", 0), fio.get("write", {}).get("io_bytes", 0)
    return (read + write) / MIB / runtime_s, read / (read + write)


def test_the_rate_is_split_per_job_and_direction() -> None:
    assert fio_rate(None, "randrw", 70, 1) is None
    assert fio_rate(8.0, "randread", None, 2) == str(4 * MIB)
    # the Windows module's example: 5 MiB/s at 70/30 -> --rate=3670016,1572864
    assert fio_rate(5.0, "randrw", 70, 1) == "3670016,1572864"
    assert fio_rate(5.0, "randrw", 70, 1, shares=2) == "1835008,786432"
    read, write = (int(v) for v in fio_rate(1.0, "rw", 100, 1).split(","))  # type: ignore[union-attr]
    assert read == MIB and write >= 1  # 0 would mean "unlimited" to fio


def test_rate_check_flags_overshoot_and_a_wrong_mix() -> None:
    cell = Cell(DISK, MIXED, 1)

    def fio(read_mib: float, write_mib: float) -> dict[str, Any]:
        r, w = int(read_mib * MIB), int(write_mib * MIB)
        return {"read": {"io_bytes": r}, "write": {"io_bytes": w},
                "total": {"io_bytes": r + w, "runtime_ms": 1000.0}}

    right = rate_check(cell, fio(0.7, 0.3), 5.0)
    assert right is not None and not right["missed"] and not right["overshot"]
    doubled = rate_check(cell, fio(1.0, 1.0), 5.0)  # what one rate=1m gave
    assert doubled is not None and doubled["missed"] and doubled["overshot"]
    assert doubled["achieved_mib_s"] == pytest.approx(2.0)
    half = rate_check(cell, fio(0.5, 0.5), 5.0)  # the right total, the wrong mix
    assert half is not None and half["missed"] and half["directions"]["write"]["miss_pct"] < -5.0
    slow = rate_check(cell, fio(0.35, 0.15), 5.0)
    assert slow is not None and slow["missed"] and not slow["overshot"]


@needs_fio
def test_local_agent_job_runs_the_mix_at_the_target(tmp_path: Path) -> None:
    target = tmp_path / "disk.img"
    with open(target, "wb") as fh:
        fh.truncate(32 * MIB)
    job = fio_job(MIXED, Timing(0, 3), str(target), ioengine="psync", markers=False)
    assert "rate=734003,314573" in job
    (tmp_path / "job.fio").write_text(job)
    out = subprocess.run(["fio", "--output-format=json", str(tmp_path / "job.fio")], capture_output=True,
                         text=True, timeout=60, check=True).stdout
    doc = json.loads(out[out.index("{"):])
    measure = next(j for j in doc["jobs"] if j["jobname"] == "measure")
    runtime = measure["read"]["runtime"] or measure["write"]["runtime"]
    fio = {d: {"io_bytes": measure[d]["io_bytes"]} for d in ("read", "write")}
    fio["total"] = {"io_bytes": fio["read"]["io_bytes"] + fio["write"]["io_bytes"], "runtime_ms": runtime}
    total, read_share = shares(fio)
    assert 0.6 < read_share < 0.8  # one rate for both directions gives 0.5
    assert total < 1.5  # ... and 2 MiB/s


@needs_fio
def test_fio_server_cell_runs_the_mix_at_the_target_across_guests(tmp_path: Path) -> None:
    from standins.fioservers import LocalFioServers

    with LocalFioServers(2, tmp_path / "servers") as farm:
        ex = FioServerExecutor.for_guests(farm.guests, {"filename": "target.dat", "size": "16m", "direct": False,
                                                        "ioengine": "psync", "workdir": tmp_path / "ex"})
        ex.wait_ready(time.monotonic() + 20)

        class NoWindow:
            def measure_started(self) -> None: ...

            def measure_ended(self) -> None: ...

        cell = Cell(DISK, MIXED, 1)
        assert ex.job_for(cell, Timing(0.5, 2)).rate == "367002,157286"  # half the cell per guest
        res = ex.run(cell, Timing(0.5, 2.0), NoWindow())
    assert res.summary is not None
    total, read_share = shares(res.summary)
    assert 0.6 < read_share < 0.8
    assert total < 1.5  # both guests together: the cell's 1 MiB/s, not 2 (per guest) or 4
