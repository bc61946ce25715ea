"""``stormatrix demo --suite``: fio servers in local QEMU guests, two sides, the comparison workbook.

These check the pieces on real processes (the multi-VM host collector, merging host blocks) and the demo's
own arguments. The demo runs its shipped suite file through the local fleet (``[fleet] backend = "qemu"``):
the suite file is checked in ``fleet/test_local_fleet.py``, and the real run (2 workers, iSCSI then NBD,
the workbook, a resume that boots nothing) in ``fleet/test_local_fleet_suite.py``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import pytest

from stormatrix.backends.base import HostScope
from stormatrix.collect import ProcessesCollector, merge_hosts
from stormatrix.demosuite import run_demo_suite
from stormatrix.core.errors import CollectorError, InputError


def _busy() -> subprocess.Popen[bytes]:
    code = "import time\nt = time.time()\nwhile time.time() - t < 30:\n    time.sleep(0.0005)\n"
    return subprocess.Popen([sys.executable, "-c", code])


def _host(pid: int, cpu: float, ctx: int, cycles: tuple[float, float] | None = None) -> dict:
    return {"cpu_metric": "cycles" if cycles else "cpu_time", "cpu_unit": "cycles" if cycles else "s",
            "cpu_total": sum(cycles) if cycles else cpu, "cpu_user": cycles[0] if cycles else cpu / 2,
            "cpu_system": cycles[1] if cycles else cpu / 2,
            "cpu_time_s": {"total": cpu, "user": cpu / 2, "system": cpu / 2},
            "cycles": {"user": cycles[0], "kernel": cycles[1]} if cycles else None,
            "ctx_switches": ctx, "ctx_voluntary": ctx, "ctx_involuntary": 0, "source": "proc",
            "scope": "qemu-process", "pid": pid, "window_s": 2.0 + pid / 100,
            "threads": [{"tid": pid, "role": "main-loop"}],
            "by_role": {"main-loop": {"threads": 1, "user_s": cpu / 2, "system_s": cpu / 2, "runtime_s": cpu,
                                      "ctx_voluntary": ctx, "ctx_involuntary": 0}},
            "split_approximate": False, "perf": {}}


def test_merge_hosts_adds_cycles_roles_and_cpu_time_of_every_vm() -> None:
    from stormatrix.records import per_mib

    merged = merge_hosts([_host(1, 1.0, 10, (100.0, 50.0)), _host(2, 3.0, 30, (300.0, 150.0))])
    assert merged is not None
    assert merged["cycles"] == {"user": 400.0, "kernel": 200.0}
    assert merged["cpu_total"] == 600.0 and merged["ctx_switches"] == 40
    assert merged["cpu_time_s"]["total"] == 4.0
    assert merged["by_role"]["main-loop"]["threads"] == 2 and merged["by_role"]["main-loop"]["ctx_voluntary"] == 40
    assert merged["pid"] == [1, 2] and merged["window_s"] == pytest.approx(2.02)
    # the suite's per_mib reads the cycles split: 600 cycles over 2 MiB, not the first VM's 150
    assert per_mib(2 * 2**20, merged)["cpu"] == pytest.approx(300.0)


def test_collector_measures_every_process_and_merges() -> None:
    procs = [_busy(), _busy()]
    try:
        scopes = [HostScope(pid=p.pid, threads={}, vm=f"vm{i}") for i, p in enumerate(procs)]
        collector = ProcessesCollector(lambda: scopes, use_perf=False)
        collector.start()
        time.sleep(0.6)
        host = collector.stop()
    finally:
        for p in procs:
            p.kill()
            p.wait()
    assert host is not None
    assert host["pid"] == [p.pid for p in procs] and host["vms"] == ["vm0", "vm1"]
    assert host["scope"] == "2 qemu processes" and host["cpu_metric"] in ("cycles", "cpu_time")
    assert host["ctx_switches"] > 0 and host["cpu_total"] > 0
    assert {t["tid"] for t in host["threads"]} >= {p.pid for p in procs}


def test_collector_start_failure_is_a_collector_error_and_stops_the_started_ones() -> None:
    proc = _busy()
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    try:
        scopes = [HostScope(pid=proc.pid, vm="alive"), HostScope(pid=gone.pid, vm="gone")]
        collector = ProcessesCollector(lambda: scopes, use_perf=False)
        with pytest.raises(CollectorError, match="gone"):
            collector.start()
        assert collector._running == []  # noqa: SLF001 - nothing left measuring
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize(("flag", "value"), [("matrix", "m.toml"), ("full", True)])
def test_matrix_and_full_do_not_combine_with_suite(tmp_path: Path, flag: str, value: object) -> None:
    args = argparse.Namespace(matrix=None, full=False, output=str(tmp_path), workbook=None, no_progress=True,
                              guests=2)
    setattr(args, flag, value)
    with pytest.raises(InputError, match=f"--{flag}"):
        run_demo_suite(args)
    assert list(tmp_path.iterdir()) == []  # refused before the suite file is written
