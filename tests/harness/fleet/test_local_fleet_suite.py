"""``stormatrix suite run`` on a local fleet (``[fleet] backend = "qemu"``), for real: 2 QEMU workers in fio
server mode, their volumes served over iSCSI (tgtd, opened by QEMU's libiscsi) then over NBD
(qemu-storage-daemon) on 127.0.0.1, 1 block size x 2 queue depths with short windows, the workers booted again
before the second point (``power_cycle = "point"``); the comparison workbook; nothing left behind; then a rerun
that serves nothing and boots nothing. ``stormatrix demo --suite`` is this
run on its shipped suite file (``test_local_fleet.py`` checks that file).
"""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path

import psutil
import pytest
from standins.processes import qemu_processes

from stormatrix.backends.qemu.fleetstate import LocalFleetState
from stormatrix.backends.qemu.storages import TGT_IPC_DIR
from stormatrix.cli import main
from stormatrix.fleet.journal import FleetJournal
from stormatrix.fleet.records import replay

SUITE = """\
[run]
name = "local-fleet"
on_error = "skip"

[suite]
name = "local-fleet"
rw = ["randread"]
block_sizes = ["4k"]
queue_depths = [1, 4]
ramp_seconds = 1
measure_seconds = 3
filename = "/dev/sda"

[fleet]
backend = "qemu"
workers = 2
storages = ["iscsi", "nbd"]
disk_size = "16M"
power_cycle = "point"
"""
SIDES = {"iscsi": ("iSCSI", "tgtd"), "nbd": ("NBD", "qemu-storage-daemon")}


def _records(journal: Path) -> list[dict]:
    return [json.loads(line) for line in journal.read_text().splitlines()]


@pytest.mark.qemu
@pytest.mark.slow
def test_suite_run_on_a_local_fleet_two_storages_then_nothing_left_then_resume(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import openpyxl

    suite = tmp_path / "suite.toml"
    suite.write_text(SUITE)
    run_dir = tmp_path / "run"
    try:
        assert main(["suite", "plan", str(suite), "-o", str(run_dir)]) == 0
        planned = capsys.readouterr().out
        assert "2 local QEMU workers" in planned and "storage iscsi: tgtd" in planned and not run_dir.exists()

        assert main(["suite", "run", str(suite), "-o", str(run_dir), "--fio", "/usr/bin/fio"]) == 0
        for storage, (label, server) in SIDES.items():
            records = _records(run_dir / storage / "journal.ndjson")
            run = next(r for r in records if r["type"] == "run")
            # the side's volumes were served over its protocol on loopback, one per worker, by a server that
            # is gone now
            served = run["storage"]
            assert served["kind"] == storage and served["server"] == server and len(served["volumes"]) == 2
            assert all(u.startswith(f"{storage}://127.0.0.1:{served['port']}/") for u in served["urls"])
            assert not psutil.pid_exists(served["pid"]) or \
                psutil.Process(served["pid"]).status() == psutil.STATUS_ZOMBIE
            assert run["host_collector"]["mode"] == "local" and run["host_collector"]["processes"] == 2
            env = run["environment"]  # the workers are QEMU processes here: this machine is the measured host
            assert env["host_inventory_source"] == "this machine (the measured host)"
            assert env["kernel"] == platform.release() and env["cpus"] == os.cpu_count()
            cells = [r for r in records if r["type"] == "cell"]
            assert [c["cell"]["workload"]["iodepth"] for c in cells] == [1, 4]
            for c in cells:
                assert c["side"] == label and c["cell"]["disk"]["controller"] == "virtio-scsi-single"
                assert c["cell"]["disk"]["aio"] == "native" and c["cell"]["disk"]["iothread"] is True
                clients = c["clients"]
                assert [cl["name"] for cl in clients] == ["g1", "g2"]
                assert all(cl["host"] == "127.0.0.1" and cl["fio"]["total"]["io_bytes"] > 0 for cl in clients)
                for field in ("io_bytes", "total_ios"):
                    assert c["fio"]["total"][field] == sum(cl["fio"]["total"][field] for cl in clients)
                assert c["aggregate_check"]["match"]
                host = c["host"]
                assert host["scope"] == "2 qemu processes" and len(host["pid"]) == 2
                assert host["vms"] == [f"{storage}-g1", f"{storage}-g2"]
                assert host["cpu_total"] > 0 and host["ctx_switches"] > 0 and "vcpu" in host["by_role"]
                pm = c["per_mib"]
                assert pm["mib"] == pytest.approx(c["fio"]["total"]["io_bytes"] / 2**20)
                assert pm["cpu"] > 0 and pm["ctx"] > 0 and pm["cpu_unit"] in ("CPU-ms/MiB", "cycles/MiB")
                assert c["guest"]["device"] == "/dev/sda"  # the workers' only disk, as their READY line said
            # power_cycle = "point": the second point ran on workers booted again (new QEMU processes, journaled)
            assert not set(cells[0]["host"]["pid"]) & set(cells[1]["host"]["pid"])
            booted = [r for r in _records(run_dir / "fleet.ndjson")
                      if r.get("role") == "qemu" and r["storage"] == storage]
            assert sorted(r["pid"] for r in booted) == sorted(cells[0]["host"]["pid"] + cells[1]["host"]["pid"])

        wb = openpyxl.load_workbook(run_dir / "comparison.xlsx")
        for sheet in ("Summary", "Measurements", "Comparison", "Averages", "Environment"):
            assert sheet in wb.sheetnames
        header = [c.value for c in wb["Comparison"][1]]
        assert "IOPS iSCSI" in header and "IOPS NBD" in header and wb["Comparison"].max_row == 3
        unit = next(h for h in header if h.startswith("Host CPU/MiB iSCSI (")).split("(", 1)[1][:-1]
        for row in wb["Comparison"].iter_rows(min_row=2, values_only=True):
            r = dict(zip(header, row))
            assert r[f"Host CPU/MiB iSCSI ({unit})"] > 0 and r[f"Host CPU/MiB NBD ({unit})"] > 0
            assert r["Host CPU/MiB reduction %"] == pytest.approx(
                (1 - r[f"Host CPU/MiB NBD ({unit})"] / r[f"Host CPU/MiB iSCSI ({unit})"]) * 100)
        env_rows = list(wb["Environment"].iter_rows(values_only=True))
        for side in ("A", "B"):
            items = {r[1]: r[2] for r in env_rows if str(r[0]).startswith(f"{side}: ")}
            assert items["environment.kernel"] == platform.release()

        # nothing left: every journaled process ended, every volume removed, tgtd's control socket gone
        state = replay(FleetJournal(run_dir), LocalFleetState())
        assert state.empty and not (run_dir / "volumes").exists()
        controls = [r["control"] for r in _records(run_dir / "fleet.ndjson") if r.get("role") == "tgtd"]
        assert controls and not any((TGT_IPC_DIR / f"socket.{n}").exists() for n in controls)
        assert not qemu_processes(str(run_dir))
        journaled = len(_records(run_dir / "fleet.ndjson"))

        # a rerun: every point is journaled, so no storage is served, no worker boots, nothing is measured again
        capsys.readouterr()
        assert main(["suite", "run", str(suite), "-o", str(run_dir), "--fio", "/usr/bin/fio"]) == 0
        said = capsys.readouterr().err
        assert said.count("every point is journaled") == 2
        new = _records(run_dir / "fleet.ndjson")[journaled:]
        assert not [r for r in new if r["type"] in ("local-volume", "local-process")]
        for storage in SIDES:
            assert len([r for r in _records(run_dir / storage / "journal.ndjson") if r["type"] == "cell"]) == 2
    finally:
        assert not qemu_processes(str(run_dir)), "QEMU left running"
