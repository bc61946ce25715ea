"""Host CPU and context switches per MiB, A against B, on the Comparison sheet.

Hand-built journals (suite point records as docs/journal.md describes them, without ``per_mib`` so that
ingest derives it from the ``host`` block) with round numbers; every expected value below is computed in
this file from those numbers with the method's formulas (the Method sheet, docs/workbook.md), never by the code under test:

- cycles/MiB = (user + kernel cycles) / MiB, CPU-ms/MiB = CPU seconds x 1000 / MiB, ctx/MiB = ctx / MiB;
- per point and side: the mean over the repeats; reduction % = (1 - B / A) x 100, ratio = B / A.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import openpyxl
import pytest

from stormatrix.analysis.score.compare import compare
from stormatrix.analysis.read.ingest import ingest
from stormatrix.cli import main

MIB = 2**20
LA, LB = "ESXi 8", "Proxmox VE 8"


def cycles(user: float, kernel: float, ctx: float) -> dict[str, Any]:
    return {"cpu_metric": "cycles", "cpu_unit": "cycles", "cpu_total": user + kernel, "cpu_user": user,
            "cpu_system": kernel, "cycles": {"user": user, "kernel": kernel}, "ctx_switches": ctx,
            "source": "perf+proc", "scope": "2 qemu processes"}


def cpu_time(seconds: float, ctx: float) -> dict[str, Any]:
    return {"cpu_metric": "cpu_time", "cpu_unit": "s", "cpu_total": seconds, "cpu_user": seconds * 0.75,
            "cpu_system": seconds * 0.25, "cycles": None, "ctx_switches": ctx, "source": "proc",
            "scope": "2 qemu processes"}


# (bs, qd) -> per repeat: (MiB moved, host block or None)
A_POINTS = {
    (4096, 1): [(100, cycles(3.0e9, 1.0e9, 5000)), (200, cycles(5.0e9, 1.0e9, 8000))],
    (4096, 8): [(400, cycles(8.0e9, 4.0e9, 10000)), (400, cycles(6.0e9, 4.0e9, 12000))],
    (65536, 1): [(100, cycles(1.0e9, 1.0e9, 1000)), (100, cpu_time(0.5, 3000))],
    (65536, 8): [(1000, cycles(10.0e9, 10.0e9, 20000)), (1000, cycles(12.0e9, 8.0e9, 30000))],
}
B_POINTS = {
    (4096, 1): [(150, cycles(2.0e9, 1.0e9, 3000)), (120, cycles(2.5e9, 0.5e9, 3600))],
    (4096, 8): [(500, cpu_time(2.5, 10000)), (500, cpu_time(3.0, 15000))],
    (65536, 1): [(100, cycles(1.0e9, 0.5e9, 1000)), (100, cycles(1.0e9, 0.5e9, 1000))],
    (65536, 8): [(1000, None), (1000, None)],
}


def write_journal(run_dir: Path, side: str, points: dict[tuple[int, int], list[tuple[int, Any]]]) -> Path:
    run_dir.mkdir(parents=True)
    lines = [{"schema": "stormatrix/record-1", "type": "run", "run_id": f"r-{side}", "side": side, "suite": "s",
              "executor": "fio-server", "environment": {"host_collector": "ssh: 2 QEMU processes on root@node"}}]
    for (bs, qd), reps in points.items():
        for rep, (mib, host) in enumerate(reps, start=1):
            io = mib * MIB
            name = f"randread-{bs // 1024}k-qd{qd}"
            lines.append({
                "schema": "stormatrix/record-1", "type": "cell", "run_id": f"r-{side}", "side": side,
                "key": f"unknown/{name}/rep{rep}",
                "cell": {"disk": {"controller": "unknown", "aio": None, "iothread": None, "cache": None,
                                  "bus": None, "scsihw": None},
                         "workload": {"name": name, "rw": "randread", "bs": bs, "iodepth": qd, "numjobs": 1,
                                      "rate_mib_s": None, "rwmixread": None},
                         "repeat": rep, "key": f"unknown/{name}/rep{rep}"},
                "fio": {"version": "fio-3.33", "total": {"io_bytes": io, "iops": io / bs / 10.0, "bw_bytes": io / 10.0,
                                                         "runtime_ms": 10000.0, "total_ios": io // bs,
                                                         "lat_mean_ns": 100000.0 * qd}},
                "times": {"measure_start": "2026-01-01T00:00:00+00:00", "window_s": 10.0},
                "host": host,
            })
    path = run_dir / "journal.ndjson"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    return run_dir


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path]:
    return write_journal(tmp_path / "a", LA, A_POINTS), write_journal(tmp_path / "b", LB, B_POINTS)


def mean(v: list[float]) -> float:
    return sum(v) / len(v)


# hand-computed from the numbers above
A_4K1_CPU = mean([(3.0e9 + 1.0e9) / 100, (5.0e9 + 1.0e9) / 200])   # 4.0e7, 3.0e7 -> 3.5e7 cycles/MiB
B_4K1_CPU = mean([(2.0e9 + 1.0e9) / 150, (2.5e9 + 0.5e9) / 120])   # 2.0e7, 2.5e7 -> 2.25e7
A_4K1_CTX, B_4K1_CTX = mean([5000 / 100, 8000 / 200]), mean([3000 / 150, 3600 / 120])  # 45, 25
A_4K8_CPU = mean([12.0e9 / 400, 10.0e9 / 400])                        # 2.75e7 cycles/MiB
B_4K8_CPU = mean([2.5 * 1000 / 500, 3.0 * 1000 / 500])              # 5.5 CPU-ms/MiB
A_4K8_CTX, B_4K8_CTX = mean([10000 / 400, 12000 / 400]), mean([10000 / 500, 15000 / 500])  # 27.5, 25
A_64K1_CTX, B_64K1_CTX = mean([1000 / 100, 3000 / 100]), mean([1000 / 100, 1000 / 100])    # 20, 10
B_64K1_CPU = 1.5e9 / 100
A_64K8_CPU, A_64K8_CTX = mean([20.0e9 / 1000, 20.0e9 / 1000]), mean([20000 / 1000, 30000 / 1000])


def test_hand_computed_host_columns(runs: tuple[Path, Path]) -> None:
    a, b = ingest([runs[0]]), ingest([runs[1]])
    assert not a.problems and not b.problems  # suite records with aio null are read
    r = compare(a.frame, b.frame, label_a=LA, label_b=LB)
    p = {(row.bs, row.iodepth): row._asdict() for row in r.points.itertuples(index=False)}
    assert (A_4K1_CPU, B_4K1_CPU, A_4K1_CTX, B_4K1_CTX) == (3.5e7, 2.25e7, 45.0, 25.0)

    x = p[(4096, 1)]  # both cycles: compared
    assert x["cpu_metric"] == "cycles" and x["cpu_per_mib_unit"] == "cycles/MiB"
    assert x["cpu_per_mib_a"] == pytest.approx(A_4K1_CPU, rel=1e-12)
    assert x["cpu_per_mib_b"] == pytest.approx(B_4K1_CPU, rel=1e-12)
    assert x["cpu_ratio"] == pytest.approx(2.25 / 3.5, rel=1e-12)
    assert x["cpu_reduction_pct"] == pytest.approx((1 - 2.25 / 3.5) * 100, rel=1e-12)  # 35.714...
    assert x["ctx_per_mib_a"] == pytest.approx(45.0) and x["ctx_per_mib_b"] == pytest.approx(25.0)
    assert x["ctx_reduction_pct"] == pytest.approx((1 - 25 / 45) * 100, rel=1e-12)  # 44.444...
    assert x["b_wins_cpu"] is True and x["host_note"] is None

    x = p[(4096, 8)]  # cycles against CPU time: each side shown, never compared
    assert x["cpu_per_mib_a"] == pytest.approx(A_4K8_CPU) and x["cpu_unit_a"] == "cycles/MiB"
    assert x["cpu_per_mib_b"] == pytest.approx(B_4K8_CPU) and x["cpu_unit_b"] == "CPU-ms/MiB"
    assert x["cpu_ratio"] != x["cpu_ratio"] and x["cpu_reduction_pct"] != x["cpu_reduction_pct"]  # NaN
    assert x["b_wins_cpu"] is None
    assert x["ctx_reduction_pct"] == pytest.approx((1 - B_4K8_CTX / A_4K8_CTX) * 100, rel=1e-12)  # 9.0909...
    assert x["cpu_metric"] == f"{LA}: cycles / {LB}: cpu_time"
    assert x["host_note"] == f"{LA} measured cycles, {LB} cpu_time: CPU/MiB not comparable"

    x = p[(65536, 1)]  # A mixes metrics over its repeats: no CPU mean for A; ctx still compared
    assert x["cpu_per_mib_a"] != x["cpu_per_mib_a"] and x["cpu_per_mib_b"] == pytest.approx(B_64K1_CPU)
    assert x["ctx_ratio"] == pytest.approx(B_64K1_CTX / A_64K1_CTX) and x["ctx_reduction_pct"] == pytest.approx(50.0)
    assert x["host_note"] == f"{LA} mixes cycles and CPU time over its repeats: no CPU/MiB mean"

    x = p[(65536, 8)]  # B without host metrics: B blank, nothing compared
    assert x["cpu_per_mib_a"] == pytest.approx(A_64K8_CPU) and x["ctx_per_mib_a"] == pytest.approx(A_64K8_CTX)
    for k in ("cpu_per_mib_b", "ctx_per_mib_b", "cpu_reduction_pct", "ctx_reduction_pct"):
        assert x[k] != x[k], k
    assert x["host_note"] == f"{LB} has no host metrics"

    s = r.summary
    assert (s["host_cpu_points"], s["host_cpu_wins"], s["host_ctx_points"]) == (1, 1, 3)
    assert s["mean_cpu_reduction_pct"] == pytest.approx((1 - 2.25 / 3.5) * 100)
    assert s["mean_ctx_reduction_pct"] == pytest.approx(((1 - 25 / 45) + (1 - 25 / 27.5) + 0.5) / 3 * 100)
    assert (s["host_metric_a"], s["host_metric_b"]) == ("cpu_time, cycles", "cpu_time, cycles")
    assert any("1 points have cycles on one side and CPU time on the other" in n for n in r.notes)


def test_a_side_without_any_host_metrics_is_noted(tmp_path: Path) -> None:
    a = write_journal(tmp_path / "a", LA, {(4096, 1): A_POINTS[(4096, 1)]})
    b = write_journal(tmp_path / "b", LB, {(4096, 1): [(100, None)]})
    partial = write_journal(tmp_path / "p", "partial", {(4096, 1): [(100, cycles(1e9, 1e9, 100)), (100, None)]})
    r = compare(ingest([a]).frame, ingest([b]).frame, label_a=LA, label_b=LB)
    assert any(n.startswith(f"{LB} has no host metrics (the host collector did not run for it") for n in r.notes)
    assert r.summary["host_cpu_points"] == 0 and r.summary["host_metric_b"] is None
    r = compare(ingest([a]).frame, ingest([partial]).frame, label_a=LA, label_b="partial")
    row = r.points.iloc[0]
    assert row["cpu_per_mib_b"] == pytest.approx(2e9 / 100)  # the repeat that has host figures
    assert row["host_note"] == "partial has host metrics for 1 of 2 repeats"
    assert row["cpu_reduction_pct"] == pytest.approx((1 - 2e7 / A_4K1_CPU) * 100)


def table(ws: Any) -> tuple[list[str], dict[tuple[int, int], dict[str, Any]]]:
    headers = [c.value for c in ws[1]]
    rows = {}
    for row in ws.iter_rows(min_row=2):
        d = dict(zip(headers, row))
        rows[(d["Block size (bytes)"].value, d["QD"].value)] = d
    return headers, rows


def test_comparison_sheet_roundtrip(runs: tuple[Path, Path], tmp_path: Path) -> None:
    out = tmp_path / "ab.xlsx"
    assert main(["compare", str(runs[0]), str(runs[1]), "-o", str(out)]) == 0
    wb = openpyxl.load_workbook(out)
    headers, rows = table(wb["Comparison"])
    # the existing columns keep their places; the host columns follow them
    assert headers[:8] == ["rw", "Block size", "Block size (bytes)", "QD", f"Repeats {LA}", f"Repeats {LB}",
                           f"IOPS {LA}", f"IOPS {LB}"]
    unit = "unit per row: see Host CPU metric"  # cycles at some points, CPU time at others
    assert headers[headers.index("Latency significance") + 1:] == [
        "Host CPU metric", f"Host CPU/MiB {LA} ({unit})", f"Host CPU/MiB {LB} ({unit})", "Host CPU/MiB ratio B/A",
        "Host CPU/MiB reduction %", f"ctx/MiB {LA}", f"ctx/MiB {LB}", "ctx/MiB ratio B/A", "ctx/MiB reduction %",
        "B wins host CPU/MiB", "Host metrics note"]
    cpu_a, cpu_b = f"Host CPU/MiB {LA} ({unit})", f"Host CPU/MiB {LB} ({unit})"
    r = rows[(4096, 1)]
    assert r["Host CPU metric"].value == "cycles"
    assert r[cpu_a].value == pytest.approx(3.5e7) and r[cpu_a].number_format == "#,##0"
    assert r[cpu_b].value == pytest.approx(2.25e7)
    assert r["Host CPU/MiB ratio B/A"].value == pytest.approx(2.25 / 3.5)
    assert r["Host CPU/MiB reduction %"].value == pytest.approx(35.714285714285715)
    assert r[f"ctx/MiB {LA}"].value == pytest.approx(45.0) and r[f"ctx/MiB {LB}"].value == pytest.approx(25.0)
    assert r["ctx/MiB reduction %"].value == pytest.approx(44.44444444444444)
    assert r["B wins host CPU/MiB"].value is True and r["Host metrics note"].value is None
    r = rows[(4096, 8)]
    assert r[cpu_b].value == pytest.approx(5.5)
    assert r["Host CPU/MiB reduction %"].value is None and r["Host CPU/MiB ratio B/A"].value is None
    assert r["Host metrics note"].value == f"{LA} measured cycles, {LB} cpu_time: CPU/MiB not comparable"
    r = rows[(65536, 8)]
    assert r[cpu_a].value == pytest.approx(2e7)
    assert r[cpu_b].value is None and r[f"ctx/MiB {LB}"].value is None and r["ctx/MiB reduction %"].value is None
    assert r["Host metrics note"].value == f"{LB} has no host metrics"
    method = [c.value for c in wb["Method"]["A"]]
    assert "Host CPU/MiB reduction %" in method and "ctx/MiB reduction %" in method
    summary = {row[0].value: row[1].value for row in wb["Summary"].iter_rows(min_row=3, max_row=20)}
    assert summary["Host CPU metric A / B"] == "cpu_time, cycles / cpu_time, cycles"
    assert summary[f"Points where {LB} needs less host CPU/MiB"] == "1 of 1 comparable"
    env = [(r[1].value, r[2].value) for r in wb["Environment"].iter_rows(min_row=2)]
    assert ("environment.host_collector", "ssh: 2 QEMU processes on root@node") in env


def test_header_names_the_unit_when_one_holds(tmp_path: Path) -> None:
    a = write_journal(tmp_path / "a", LA, {(4096, 1): A_POINTS[(4096, 1)]})
    b = write_journal(tmp_path / "b", LB, {(4096, 1): B_POINTS[(4096, 1)]})
    out = tmp_path / "ab.xlsx"
    assert main(["compare", str(a), str(b), "-o", str(out)]) == 0
    headers, rows = table(openpyxl.load_workbook(out)["Comparison"])
    assert f"Host CPU/MiB {LA} (cycles/MiB)" in headers and f"Host CPU/MiB {LB} (cycles/MiB)" in headers
    assert rows[(4096, 1)][f"Host CPU/MiB {LB} (cycles/MiB)"].value == pytest.approx(2.25e7)

    # CPU time on both sides: CPU-ms/MiB, three decimals
    a = write_journal(tmp_path / "a2", LA, {(4096, 1): [(100, cpu_time(2.0, 500))]})
    b = write_journal(tmp_path / "b2", LB, {(4096, 1): [(100, cpu_time(1.5, 400))]})
    assert main(["compare", str(a), str(b), "-o", str(out)]) == 0
    headers, rows = table(openpyxl.load_workbook(out)["Comparison"])
    cell = rows[(4096, 1)][f"Host CPU/MiB {LB} (CPU-ms/MiB)"]
    assert cell.value == pytest.approx(15.0) and cell.number_format == "0.000"  # 1.5 s x 1000 / 100 MiB
    assert rows[(4096, 1)]["Host CPU/MiB reduction %"].value == pytest.approx(25.0)  # (1 - 15/20) x 100


def test_cpu_without_context_switches_is_compared_and_noted() -> None:
    """A host that gives CPU but no context switches (an ESXi host's statistics): the CPU columns are
    compared, the ctx columns stay blank and the note says why."""
    import pandas as pd

    from stormatrix.analysis.read.ingest import frame_from_rows

    def row(side: str, cpu: float, ctx: float | None) -> dict[str, Any]:
        return {"side": side, "rw": "randread", "bs": 4096, "iodepth": 1, "repeat": 1, "iops": 100.0,
                "lat_mean_us": 10.0, "bw_mib_s": 0.4, "mib": 4.0, "cpu_metric": "cpu_time",
                "cpu_per_mib_unit": "CPU-ms/MiB", "cpu_per_mib": cpu, "ctx_per_mib": ctx}

    a = frame_from_rows([row("esx", 8.0, None)])
    b = frame_from_rows([row("pve", 6.0, 30.0)])
    assert isinstance(a, pd.DataFrame)
    p = compare(a, b, label_a="esx", label_b="pve").points.iloc[0]
    assert p["cpu_reduction_pct"] == pytest.approx(25.0)  # (1 - 6/8) x 100
    assert p["ctx_per_mib_a"] != p["ctx_per_mib_a"] and p["ctx_reduction_pct"] != p["ctx_reduction_pct"]
    assert p["host_note"] == "esx has no context-switch counts"
