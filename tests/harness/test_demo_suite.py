"""``stormatrix demo --suite``: fio servers in local QEMU guests, two sides, the comparison workbook.

The fast tests check the pieces on real processes (the multi-VM host collector, merging host
blocks); the ``qemu``-marked test boots the guests for real: 2 guests per side, their test disks over
iSCSI (tgtd + QEMU's libiscsi) on one side and NBD (qemu-storage-daemon) on the other, 1 block size x
2 queue depths, short windows, then a resume that boots nothing and starts no storage server.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from standins.processes import qemu_processes

from stormatrix.backends.base import HostScope
from stormatrix.collect import ProcessesCollector, merge_hosts
from stormatrix.demosuite import DEMO_SIDES, DemoSuiteConfig, demo_suite, run_demo_suite
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


def test_config_rejects_guest_counts_outside_2_to_4(tmp_path: Path) -> None:
    for n in (1, 5):
        with pytest.raises(InputError, match="2 to 4"):
            DemoSuiteConfig(run_dir=tmp_path, workbook=tmp_path / "w.xlsx", guests=n)


@pytest.mark.parametrize(("flag", "value"), [("matrix", "m.toml"), ("full", True)])
def test_matrix_and_full_do_not_combine_with_suite(tmp_path: Path, flag: str, value: object) -> None:
    args = argparse.Namespace(matrix=None, full=False, output=str(tmp_path), workbook=None, no_progress=True,
                              guests=2)
    setattr(args, flag, value)
    with pytest.raises(InputError, match=f"--{flag}"):
        run_demo_suite(args)


# --- real guests ---------------------------------------------------------------------------------------

def _cells(journal: Path) -> list[dict]:
    return [r for r in map(json.loads, journal.read_text().splitlines()) if r["type"] == "cell"]


@pytest.mark.qemu
@pytest.mark.slow
def test_demo_suite_two_sides_on_real_guests_then_resume(tmp_path: Path) -> None:
    import openpyxl

    run_dir = tmp_path / "suite"
    config = DemoSuiteConfig(run_dir=run_dir, workbook=run_dir / "ab.xlsx", guests=2, block_sizes=("4k",),
                             queue_depths=(1, 4), ramp_s=1.0, measure_s=3.0, disk_size_mib=64,
                             disk_dir=tmp_path / "disks")  # QEMU write-locks images: not shared with other runs
    try:
        outcome = demo_suite(config, progress=False)
        assert not outcome.failed
        assert set(outcome.sides) == {"iscsi", "nbd"}
        for side in DEMO_SIDES:
            run = next(r for r in map(json.loads, (run_dir / side.key / "journal.ndjson").read_text().splitlines())
                       if r["type"] == "run")
            # the side's volumes were served over its protocol on loopback, one per guest, by a server
            # that is gone now
            storage = run["storage"]
            assert storage["kind"] == side.storage and len(storage["volumes"]) == 2
            assert all(u.startswith(f"{side.storage}://127.0.0.1:{storage['port']}/") for u in storage["urls"])
            assert storage["server"] == {"iscsi": "tgtd", "nbd": "qemu-storage-daemon"}[side.storage]
            assert not psutil.pid_exists(storage["pid"]) or \
                psutil.Process(storage["pid"]).status() == psutil.STATUS_ZOMBIE
            cells = _cells(run_dir / side.key / "journal.ndjson")
            assert [c["cell"]["workload"]["iodepth"] for c in cells] == [1, 4]
            for c in cells:
                assert c["side"] == side.label and c["cell"]["disk"]["controller"] == side.disk.controller
                clients = c["clients"]
                assert [cl["name"] for cl in clients] == ["g1", "g2"]
                assert all(cl["host"] == "127.0.0.1" and cl["fio"]["total"]["io_bytes"] > 0 for cl in clients)
                for field in ("io_bytes", "total_ios"):
                    assert c["fio"]["total"][field] == sum(cl["fio"]["total"][field] for cl in clients)
                assert c["aggregate_check"]["match"]
                host = c["host"]
                assert host["scope"] == "2 qemu processes" and len(host["pid"]) == 2
                assert host["vms"] == [f"{side.key}-g1", f"{side.key}-g2"]
                assert host["cpu_total"] > 0 and host["ctx_switches"] > 0 and "vcpu" in host["by_role"]
                pm = c["per_mib"]
                assert pm["mib"] == pytest.approx(c["fio"]["total"]["io_bytes"] / 2**20)
                assert pm["cpu"] > 0 and pm["ctx"] > 0 and pm["cpu_unit"] in ("CPU-ms/MiB", "cycles/MiB")
            # the guests' test device came from their READY line: sda, the virtio-scsi disk
            assert {c["guest"]["device"] for c in cells} == {"/dev/sda"}
        assert outcome.workbook is not None and outcome.workbook.exists()
        wb = openpyxl.load_workbook(outcome.workbook)
        for sheet in ("Summary", "Measurements", "Comparison", "Averages"):
            assert sheet in wb.sheetnames
        header = [c.value for c in wb["Comparison"][1]]
        assert f"IOPS {DEMO_SIDES[0].label}" in header and f"IOPS {DEMO_SIDES[1].label}" in header
        assert wb["Comparison"].max_row == 3  # header + 2 points
        a_label, b_label = DEMO_SIDES[0].label, DEMO_SIDES[1].label
        unit = next(h for h in header if h.startswith(f"Host CPU/MiB {a_label} (")).split("(", 1)[1][:-1]
        assert unit in ("CPU-ms/MiB", "cycles/MiB")  # one metric on this machine: named in the header
        for row in wb["Comparison"].iter_rows(min_row=2, values_only=True):
            r = dict(zip(header, row))
            assert r[f"Host CPU/MiB {a_label} ({unit})"] > 0 and r[f"Host CPU/MiB {b_label} ({unit})"] > 0
            assert r["Host CPU/MiB reduction %"] == pytest.approx(
                (1 - r[f"Host CPU/MiB {b_label} ({unit})"] / r[f"Host CPU/MiB {a_label} ({unit})"]) * 100)
            assert r[f"ctx/MiB {a_label}"] > 0 and r["Host metrics note"] is None
        for side in DEMO_SIDES:
            run = next(json.loads(line) for line in (run_dir / side.key / "journal.ndjson").read_text().splitlines()
                       if json.loads(line)["type"] == "run")
            assert run["host_collector"]["mode"] == "local" and run["host_collector"]["processes"] == 2
            # the guests are QEMU processes on this machine: it is the measured host, and says so
            env = run["environment"]
            assert env["host_inventory_source"] == "this machine (the measured host)"
            assert env["kernel"] == platform.release() and env["cpus"] == os.cpu_count()
        env_rows = list(wb["Environment"].iter_rows(values_only=True))
        for side in ("A", "B"):  # the comparison workbook shows each side's host (A and B: its own naming)
            items = {r[1]: r[2] for r in env_rows if str(r[0]).startswith(f"{side}: ")}
            assert items["environment.host_inventory_source"] == "this machine (the measured host)"
            assert items["environment.kernel"] == platform.release()
        m = wb["Measurements"]
        cols = [c.value for c in m[1]]
        cpu = [row[cols.index("cpu_per_mib")] for row in m.iter_rows(min_row=2, values_only=True)]
        assert len(cpu) == 4 and all(v and v > 0 for v in cpu)
        assert not qemu_processes(str(run_dir))

        # resume: every point is journaled, so no guest boots and no point is measured again
        again = demo_suite(config, progress=False)
        assert again.sides == {"iscsi": None, "nbd": None} and again.boot_s == {}
        for side in DEMO_SIDES:
            assert len(_cells(run_dir / side.key / "journal.ndjson")) == 2
    finally:
        assert not qemu_processes(str(run_dir)), "QEMU left running"
