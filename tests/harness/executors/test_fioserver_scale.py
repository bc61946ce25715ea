"""The issue's scale check: 32 ``fio --server`` processes on 127.0.0.1 driven as one suite point.

benchmarks/bench_fioserver_scale.py prints the same figures (and the controller's CPU time).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from standins.fioservers import LocalFioServers
from stormatrix.executors.fioserver.executor import run_point
from stormatrix.executors.fioserver.inputs import FioJob
from stormatrix.executors.fioserver.probe import probe_servers

pytestmark = [pytest.mark.slow, pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")]


def test_32_loopback_servers_as_one_point(tmp_path: Path) -> None:
    with LocalFioServers(32, tmp_path / "servers") as farm:
        assert all(p.ok for p in probe_servers(farm.guests, tmp_path / "probe"))
        # 200 IOPS per client: 32 jobs plus 32 servers on a 2-core machine must not just fight for CPU
        job = FioJob(name="randread-4k-qd1", rw="randread", bs=4096, iodepth=1, ramp_s=1.0, measure_s=2.0,
                     filename="target.dat", size=4 << 20, rate_iops=200)
        r = run_point(farm.guests, job, tmp_path / "point")
        names = [g.name for g in farm.guests]
    assert [c["name"] for c in r.clients] == names  # every client's result present
    bad = [(c["name"], c["fio"]["total"]["io_bytes"], c["fio"]["error"]) for c in r.clients
           if not (c["fio"]["total"]["io_bytes"] > 0 and c["fio"]["error"] == 0)]
    assert not bad, bad
    assert r.aggregate["total"]["io_bytes"] == sum(c["fio"]["total"]["io_bytes"] for c in r.clients)
    assert r.aggregate["total"]["iops"] == pytest.approx(sum(c["fio"]["total"]["iops"] for c in r.clients))
    assert r.aggregate_check["match"] is True, r.aggregate_check  # and fio's own "All clients" agrees
    assert r.skew["clients_dated"] == 32, r.skew
    # the skew is what it says (how far apart the first and the last client started); how small it is depends on
    # the machine's load, and benchmarks/bench_fioserver_scale.py reports it
    assert r.skew["start_skew_s"] == pytest.approx((r.skew["last_start_ms"] - r.skew["first_start_ms"]) / 1000.0)
    assert r.skew["start_skew_s"] >= 0 and r.skew["overlap_s"] is not None, r.skew
    assert r.controller["returncode"] == 0 and r.controller["cpu_s"] > 0
