"""Efficiency (technote 004) on a hand-computed table, end to end through `stormatrix report`.

Three configurations, two repeats each, cycles per MiB and context switches per MiB:

    config                  cpu/MiB        ctx/MiB
    virtio-blk aio=native   100, 110       10, 12
    virtio-scsi-pci native  120, 120        8,  9
    sata aio=threads        200, 180       30, 34

By hand: means cpu 105, 120, 190 and ctx 11, 8.5, 32.
normalized cpu = (v - 105) / 85  -> 0, 15/85, 1;  normalized ctx = (v - 8.5) / 23.5 -> 2.5/23.5, 0, 1
score = sqrt(ncpu^2 + nctx^2) -> 2.5/23.5, 15/85, sqrt(2);  ranks 1, 2, 3.
std(100, 110) = sqrt(50); CV = sqrt(50)/105; CI95 half-width = t(0.975, 1) * sqrt(50) / sqrt(2)
with t(0.975, 1) = tan(0.475 * pi) = 12.7062... (one degree of freedom is the Cauchy distribution).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import openpyxl
import pandas as pd
import pytest

from stormatrix.analysis.score.efficiency import min_max, score_cells
from stormatrix.analysis.read.ingest import frame_from_rows
from stormatrix.cli import main

T_975_1 = math.tan(0.475 * math.pi)
HAND = {
    "virtio-blk aio=native": {"cpu": [100.0, 110.0], "ctx": [10.0, 12.0], "controller": "virtio-blk", "aio": "native"},
    "virtio-scsi-pci aio=native": {"cpu": [120.0, 120.0], "ctx": [8.0, 9.0], "controller": "virtio-scsi-pci",
                                   "aio": "native"},
    "sata aio=threads": {"cpu": [200.0, 180.0], "ctx": [30.0, 34.0], "controller": "sata", "aio": "threads"},
}
EXPECTED = {
    "virtio-blk aio=native": dict(cpu_mean=105.0, ctx_mean=11.0, ncpu=0.0, nctx=2.5 / 23.5, score=2.5 / 23.5,
                                  rank=1, rank_cpu=1, rank_ctx=2, rank_in_aio=1,
                                  cpu_std=math.sqrt(50), cpu_cv=math.sqrt(50) / 105,
                                  cpu_ci_low=105 - T_975_1 * math.sqrt(50) / math.sqrt(2),
                                  ctx_std=math.sqrt(2), ctx_cv=math.sqrt(2) / 11),
    "virtio-scsi-pci aio=native": dict(cpu_mean=120.0, ctx_mean=8.5, ncpu=15 / 85, nctx=0.0, score=15 / 85,
                                       rank=2, rank_cpu=2, rank_ctx=1, rank_in_aio=2,
                                       cpu_std=0.0, cpu_cv=0.0, cpu_ci_low=120.0,
                                       ctx_std=math.sqrt(0.5), ctx_cv=math.sqrt(0.5) / 8.5),
    "sata aio=threads": dict(cpu_mean=190.0, ctx_mean=32.0, ncpu=1.0, nctx=1.0, score=math.sqrt(2),
                             rank=3, rank_cpu=3, rank_ctx=3, rank_in_aio=1,
                             cpu_std=math.sqrt(200), cpu_cv=math.sqrt(200) / 190,
                             cpu_ci_low=190 - T_975_1 * math.sqrt(200) / math.sqrt(2),
                             ctx_std=math.sqrt(8), ctx_cv=math.sqrt(8) / 32),
}


def cell_record(controller: str, aio: str, rep: int, cpu_per_mib: float, ctx_per_mib: float) -> dict:
    mib = 100.0
    key = f"{controller}/aio={aio}/iothread=0/cache=none/randread-64k/rep{rep}"
    return {"schema": "stormatrix/record-1", "type": "cell", "run_id": "hand", "key": key,
            "cell": {"disk": {"controller": controller, "aio": aio, "iothread": False, "cache": "none"},
                     "workload": {"name": "randread-64k", "rw": "randread", "bs": 65536, "iodepth": 8,
                                  "numjobs": 1, "rate_mib_s": None, "rwmixread": None},
                     "repeat": rep, "key": key},
            "backend": "qemu", "side": None, "vm": "=cmd|' /C calc'!A0",
            "times": {"measure_start": f"2026-11-22T03:0{rep}:00+00:00", "window_s": 10.0},
            "fio": {"version": "fio-3.33", "total": {"io_bytes": int(mib * 2**20), "bw_bytes": mib * 2**20 / 10,
                                                     "iops": 160.0, "total_ios": 1600, "runtime_ms": 10000,
                                                     "lat_mean_ns": 5e6, "lat_p99_ns": 9e6}},
            "host": {"cpu_metric": "cycles", "cpu_unit": "cycles", "cpu_total": cpu_per_mib * mib,
                     "cycles": {"user": cpu_per_mib * mib / 2, "kernel": cpu_per_mib * mib / 2},
                     "ctx_switches": ctx_per_mib * mib, "source": "perf", "scope": "cpus 2-5"},
            "per_mib": {"mib": mib, "cpu": cpu_per_mib, "cpu_unit": "cycles/MiB", "ctx": ctx_per_mib},
            "rate": None, "crosscheck": None, "clients": None, "raw": {"fio_json": ""}}


@pytest.fixture
def hand_run(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    lines = [{"schema": "stormatrix/record-1", "type": "run", "run_id": "hand", "started": "2026-11-22T03:00:00+00:00",
              "backend": "qemu", "side": "+Lab B", "environment": {"host": "@bench", "qemu": "7.2.22"}, "matrix": {}}]
    for name, v in HAND.items():
        for rep in (1, 2):
            lines.append(cell_record(v["controller"], v["aio"], rep, v["cpu"][rep - 1], v["ctx"][rep - 1]))
    (run / "journal.ndjson").write_text("".join(json.dumps(rec) + "\n" for rec in lines))
    return run


def rows_by(ws, key_header: str) -> dict[str, dict[str, object]]:
    headers = [c.value for c in ws[1]]
    out = {}
    for row in ws.iter_rows(min_row=2, values_only=True):
        rec = dict(zip(headers, row))
        out[rec[key_header]] = rec
    return out


def test_report_workbook_numbers_equal_the_hand_computation(hand_run: Path, tmp_path: Path, capsys):
    out = tmp_path / "x.xlsx"
    assert main(["report", str(hand_run), "-o", str(out), "--cv-limit", "0.1"]) == 0
    wb = openpyxl.load_workbook(out)
    scores = rows_by(wb["Scores"], "Configuration")
    assert set(scores) == set(EXPECTED)
    for name, e in EXPECTED.items():
        r = scores[name]
        assert r["CPU/MiB mean"] == pytest.approx(e["cpu_mean"], abs=1e-9)
        assert r["ctx/MiB mean"] == pytest.approx(e["ctx_mean"], abs=1e-9)
        assert r["Normalized CPU"] == pytest.approx(e["ncpu"], abs=1e-9)
        assert r["Normalized ctx"] == pytest.approx(e["nctx"], abs=1e-9)
        assert r["Efficiency score"] == pytest.approx(e["score"], abs=1e-9)
        assert r["CPU/MiB std"] == pytest.approx(e["cpu_std"], abs=1e-9)
        assert r["CPU/MiB CV"] == pytest.approx(e["cpu_cv"], abs=1e-9)
        assert r["CPU/MiB CI95 low"] == pytest.approx(e["cpu_ci_low"], abs=1e-9)
        assert r["ctx/MiB std"] == pytest.approx(e["ctx_std"], abs=1e-9)
        assert r["ctx/MiB CV"] == pytest.approx(e["ctx_cv"], abs=1e-9)
        assert (r["Rank"], r["Rank by CPU"], r["Rank by ctx"], r["Rank in aio mode"], r["Rank in controller"]) == \
            (e["rank"], e["rank_cpu"], e["rank_ctx"], e["rank_in_aio"], 1)
        assert r["CPU metric"] == "cycles" and r["CPU unit"] == "cycles/MiB"
    # CV limit 10 %: only virtio-blk's context switches (sqrt(2)/11 = 12.9 %) exceed it
    assert [n for n, r in scores.items() if "CV >" in r["CV flag"]] == ["virtio-blk aio=native"]
    assert "ctx CV > 10%" in scores["virtio-blk aio=native"]["CV flag"]
    # the tidy CSV is written next to the workbook with one row per repeat
    csv = pd.read_csv(out.with_suffix(".csv"))
    assert len(csv) == 6 and sorted(csv["cpu_per_mib"]) == [100, 110, 120, 120, 180, 200]
    assert "wrote" in capsys.readouterr().out


def test_max_equals_min_normalizes_to_zero():
    assert min_max(pd.Series([5.0, 5.0, 5.0])).tolist() == [0.0, 0.0, 0.0]
    assert min_max(pd.Series([7.0])).tolist() == [0.0]
    assert min_max(pd.Series([1.0, 3.0, 2.0])).tolist() == [0.0, 1.0, 0.5]


def _row(controller: str, aio: str, metric: str, cpu: float, ctx: float, rep: int = 1) -> dict:
    return {"controller": controller, "aio": aio, "iothread": False, "cache": "none", "workload": "w",
            "repeat": rep, "cpu_metric": metric, "cpu_per_mib_unit": {"cycles": "cycles/MiB", "cpu_time": "CPU-ms/MiB"}[metric],
            "cpu_per_mib": cpu, "ctx_per_mib": ctx}


def test_cycles_and_cpu_time_are_never_normalized_together():
    frame = frame_from_rows([_row("a", "native", "cycles", 1e6, 10), _row("b", "native", "cycles", 3e6, 30),
                             _row("c", "native", "cpu_time", 20.0, 10), _row("d", "native", "cpu_time", 40.0, 50)])
    result = score_cells(frame)
    assert sorted(result.groups) == ["w [CPU-ms/MiB]", "w [cycles/MiB]"]
    norm = dict(zip(result.cells["controller"], result.cells["norm_cpu"]))
    # each group has its own min and max: a mixed min-max would give c = 0 and d = 1/2999999 instead
    assert norm == {"a": 0.0, "b": 1.0, "c": 0.0, "d": 1.0}
    assert any("separate groups" in n for n in result.notes)


def test_group_of_identical_cells_scores_zero_with_one_repeat_and_no_ci():
    frame = frame_from_rows([_row("a", "native", "cycles", 5.0, 5.0), _row("b", "native", "cycles", 5.0, 5.0)])
    cells = score_cells(frame).cells
    assert cells["score"].tolist() == [0.0, 0.0]
    assert cells["rank"].tolist() == [1, 1]                 # ties share the lower rank
    assert cells["cpu_per_mib_ci_low"].isna().all()         # a single repeat has no interval


def test_rows_without_host_figures_are_left_out_and_said_so():
    rows = [_row("a", "native", "cycles", 5.0, 5.0), _row("b", "native", "cycles", 6.0, 7.0)]
    rows.append({**_row("c", "native", "cycles", 0, 0), "cpu_per_mib": None, "ctx_per_mib": None, "cpu_metric": None})
    result = score_cells(frame_from_rows(rows))
    assert len(result.cells) == 2
    assert any("1 of 3 measurements" in n for n in result.notes)


def test_measurements_say_which_p99_and_why_a_value_is_blank(hand_run: Path, tmp_path: Path):
    """A record without a p99 and one without a host record: blank cells (never 0) with the reason in the
    Measurements sheet's blank_reasons column; the p99 header says which latency it holds."""
    journal = hand_run / "journal.ndjson"
    lines = [json.loads(x) for x in journal.read_text().splitlines()]
    del lines[1]["fio"]["total"]["lat_p99_ns"]
    lines[2]["host"] = None
    lines[2].pop("per_mib")
    journal.write_text("".join(json.dumps(r) + "\n" for r in lines))
    out = tmp_path / "b.xlsx"
    assert main(["report", str(hand_run), "-o", str(out)]) == 0
    ws = openpyxl.load_workbook(out)["Measurements"]
    head = [c.value for c in ws[1]]
    p99 = next(h for h in head if h.startswith("lat_p99_us"))
    assert "clat" in p99 and "lat p99" in p99                           # lat where fio gave it, else clat
    assert "completion" in ws.cell(row=1, column=head.index(p99) + 1).comment.text
    rows = [dict(zip(head, r)) for r in ws.iter_rows(min_row=2, values_only=True)]
    no_p99 = next(r for r in rows if r["key"] == lines[1]["key"])
    no_host = next(r for r in rows if r["key"] == lines[2]["key"])
    assert no_p99[p99] is None and "lat_p99_us: not in the result" in no_p99["blank_reasons"]
    assert no_host["cpu_per_mib"] is None and no_host["ctx_per_mib"] is None
    assert "cpu_per_mib: no host record" in no_host["blank_reasons"]
    full = [r for r in rows if r["key"] not in (lines[1]["key"], lines[2]["key"])]
    # the hand records predate clat_p99_ns: their one p99 is the mix, so clat_p99_us is blank and says why
    assert full and all(r[p99] is not None for r in full)
    assert all(r["blank_reasons"].startswith("clat_p99_us: older record") and ";" not in r["blank_reasons"]
               for r in full)


def test_measurements_label_lat_p99_total_when_records_keep_clat_apart(hand_run: Path, tmp_path: Path):
    """Records that keep clat_p99_ns apart: lat_p99_us is the total latency's p99 and clat_p99_us the
    completion latency's, each header says so, and no row is blank for a p99."""
    journal = hand_run / "journal.ndjson"
    lines = [json.loads(x) for x in journal.read_text().splitlines()]
    for rec in lines[1:]:
        rec["fio"]["total"]["clat_p99_ns"] = 8e6
    journal.write_text("".join(json.dumps(r) + "\n" for r in lines))
    out = tmp_path / "c.xlsx"
    assert main(["report", str(hand_run), "-o", str(out)]) == 0
    ws = openpyxl.load_workbook(out)["Measurements"]
    head = [c.value for c in ws[1]]
    lat = next(h for h in head if h.startswith("lat_p99_us"))
    clat = next(h for h in head if h.startswith("clat_p99_us"))
    assert "total" in lat and "clat" not in lat
    assert "completion" in clat
    rows = [dict(zip(head, r)) for r in ws.iter_rows(min_row=2, values_only=True)]
    assert rows and all(r[lat] == pytest.approx(9000.0) and r[clat] == pytest.approx(8000.0) for r in rows)
    assert "blank_reasons" not in head  # no measurement is blank: no column of nothing
