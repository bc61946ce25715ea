"""The I/O-path lens: everything of QEMU but its vCPU threads, from the record's per-thread
split, scored the way the whole process is; blank with the reason where a record has no split."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import openpyxl
import pytest

from stormatrix.analysis.score.efficiency import score_cells
from stormatrix.analysis.read.ingest import ingest
from stormatrix.cli import main
from stormatrix.core.recordtypes import CellRecord

MIB = 100.0


def qemu_record(controller: str, aio: str, rep: int, *, vcpu_s: float, io_s: float, io_ctx: int,
                vcpu_ctx: int = 50, workload: str = "randread-64k", by_role: Any = "split") -> dict[str, Any]:
    """A QEMU cell record as the collector journals it (docs/journal.md): the whole process is the vCPU
    thread plus the I/O path (main loop 40 %, iothread/aio workers the rest of ``io_s`` and ``io_ctx``)."""
    key = f"{controller}/aio={aio}/iothread=0/cache=none/{workload}/rep{rep}"
    roles = {"vcpu": {"threads": 1, "user_s": vcpu_s * 0.9, "system_s": vcpu_s * 0.1, "runtime_s": vcpu_s,
                      "ctx_voluntary": vcpu_ctx, "ctx_involuntary": 0},
             "main-loop": {"threads": 1, "user_s": io_s * 0.2, "system_s": io_s * 0.2, "runtime_s": io_s * 0.4,
                           "ctx_voluntary": io_ctx * 0.4, "ctx_involuntary": 0},
             "aio-worker": {"threads": 4, "user_s": io_s * 0.1, "system_s": io_s * 0.5, "runtime_s": io_s * 0.6,
                            "ctx_voluntary": io_ctx * 0.5, "ctx_involuntary": io_ctx * 0.1}}
    total = vcpu_s + io_s
    ctx = vcpu_ctx + io_ctx
    host = {"cpu_metric": "cpu_time", "cpu_unit": "s", "cpu_total": total, "cpu_user": total / 2,
            "cpu_system": total / 2, "cycles": None, "ctx_switches": ctx, "source": "perf+proc",
            "scope": "qemu-process", "window_s": 10.0,
            "by_role": roles if by_role == "split" else by_role}
    return {"schema": "stormatrix/record-1", "type": "cell", "run_id": "iopath", "key": key,
            "cell": {"disk": {"controller": controller, "aio": aio, "iothread": False, "cache": "none"},
                     "workload": {"name": workload, "rw": "randread", "bs": 65536, "iodepth": 8, "numjobs": 1,
                                  "rate_mib_s": None, "rwmixread": None},
                     "repeat": rep, "key": key},
            "backend": "qemu", "side": None, "vm": "bench01",
            "times": {"measure_start": f"2026-11-22T03:0{rep}:00+00:00", "window_s": 10.0},
            "fio": {"version": "fio-3.33", "total": {"io_bytes": int(MIB * 2**20), "bw_bytes": MIB * 2**20 / 10,
                                                     "iops": 160.0, "total_ios": 1600, "runtime_ms": 10000,
                                                     "lat_mean_ns": 5e6, "lat_p99_ns": 9e6}},
            "host": host, "per_mib": {"mib": MIB, "cpu": total * 1000 / MIB, "cpu_unit": "CPU-ms/MiB",
                                      "ctx": ctx / MIB},
            "rate": None, "crosscheck": None, "clients": None, "raw": {"engine": "fio", "output": ""}}


def write_journal(folder: Path, records: list[dict[str, Any]], accel: str = "tcg") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    run = {"schema": "stormatrix/record-1", "type": "run", "run_id": "iopath", "started": "2026-11-22T03:00:00+00:00",
           "backend": "qemu", "side": None, "environment": {"host": "lab", "accel": accel}, "matrix": {}}
    (folder / "journal.ndjson").write_text("".join(json.dumps(r) + "\n" for r in [run, *records]))
    return folder


# per configuration: (vCPU seconds, I/O-path seconds, I/O-path switches) per repeat; the vCPU dominates the
# whole process and reverses its order: threads looks cheaper as a whole, but its I/O path costs more
# (vCPU seconds, I/O-path seconds, I/O-path switches, vCPU switches)
CONFIGS = {("virtio-blk", "native"): [(9.0, 0.50, 2000, 8000), (9.2, 0.52, 2100, 8100), (9.1, 0.51, 2050, 7900)],
           ("virtio-blk", "threads"): [(7.0, 1.50, 6000, 1000), (7.1, 1.55, 6100, 1100), (7.2, 1.52, 6050, 900)]}


def test_io_path_is_everything_but_the_vcpus_and_is_scored_on_its_own(tmp_path: Path) -> None:
    recs = [qemu_record(c, a, rep, vcpu_s=v, io_s=io, io_ctx=n, vcpu_ctx=vn) for (c, a), reps in CONFIGS.items()
            for rep, (v, io, n, vn) in enumerate(reps, start=1)]
    result = score_cells(ingest([write_journal(tmp_path / "r", recs)], strict=True).frame)
    whole = {r["config"]: r for _, r in result.cells.iterrows()}
    io = {r["config"]: r for _, r in result.iopath.scored.cells.iterrows()}
    # by hand: I/O-path CPU-ms/MiB = mean(io_s) x 1000 / MiB; switches/MiB = mean(io_ctx) / MiB
    assert io["virtio-blk aio=native"]["cpu_per_mib_mean"] == pytest.approx(0.51 * 1000 / MIB)
    assert io["virtio-blk aio=threads"]["ctx_per_mib_mean"] == pytest.approx(6050 / MIB)
    # whole process: threads ranks first (less vCPU time); the I/O path alone ranks native first
    assert whole["virtio-blk aio=threads"]["rank"] == 1 and io["virtio-blk aio=native"]["rank"] == 1
    assert io["virtio-blk aio=native"]["evidence"] == "significant"
    assert result.iopath.emulated == ["tcg"]


def test_records_without_the_split_are_blank_with_the_reason(tmp_path: Path) -> None:
    recs = [qemu_record("sata", "native", rep, vcpu_s=5.0, io_s=0.5, io_ctx=100) for rep in (1, 2)]
    recs += [qemu_record("sata", "threads", rep, vcpu_s=5.0, io_s=0.6, io_ctx=100, by_role={}) for rep in (1, 2)]
    recs += [qemu_record("pvscsi", "native", rep, vcpu_s=5.0, io_s=0.6, io_ctx=100,
                         by_role={"vcpu": {"threads": 1, "user_s": 1.0, "system_s": 0.0, "ctx_voluntary": 1,
                                           "ctx_involuntary": 0}}) for rep in (1, 2)]
    run = write_journal(tmp_path / "r", recs, accel="kvm")
    result = score_cells(ingest([run], strict=True).frame)
    io = result.iopath
    assert list(io.scored.cells["config"]) == ["sata aio=native"]          # only the one with a split is scored
    missing = dict(zip(io.missing["config"], io.missing["io_note"]))
    assert "no per-thread split" in missing["sata aio=threads"]
    assert "no main-loop thread" in missing["pvscsi aio=native"]
    assert io.emulated == []
    out = tmp_path / "r.xlsx"
    assert main(["report", str(run), "-o", str(out)]) == 0
    wb = openpyxl.load_workbook(out)
    ws = wb["IO path"]
    head = [c.value for c in ws[1]]
    rows = {r[head.index("Configuration")]: dict(zip(head, r)) for r in ws.iter_rows(min_row=2, values_only=True)
            if r[head.index("Configuration")]}
    blank = rows["sata aio=threads"]
    assert blank["I/O-path CPU/MiB mean (CPU-ms/MiB)"] is None and blank["I/O-path ctx/MiB mean"] is None
    assert "no per-thread split" in blank["Why blank"]
    assert rows["sata aio=native"]["I/O-path CPU/MiB mean (CPU-ms/MiB)"] == pytest.approx(5.0)
    method = " ".join(str(c.value) for row in wb["Method"].iter_rows() for c in row if c.value)
    assert "main loop, iothreads, aio workers" in method and "Software emulation" not in method


def test_method_says_the_vcpu_is_the_emulated_guest_under_tcg(tmp_path: Path) -> None:
    recs = [qemu_record("sata", a, rep, vcpu_s=5.0, io_s=0.5 + rep / 100, io_ctx=100) for a in ("native", "threads")
            for rep in (1, 2)]
    out = tmp_path / "t.xlsx"
    assert main(["report", str(write_journal(tmp_path / "t", recs, accel="tcg")), "-o", str(out)]) == 0
    method = " ".join(str(c.value) for row in openpyxl.load_workbook(out)["Method"].iter_rows() for c in row if c.value)
    assert "the vCPU thread's CPU is mostly the emulated guest" in method


def test_split_carried_by_ingest_is_used_as_it_is(tmp_path: Path) -> None:
    """When ingest carries the split (io_path_cpu_s, io_path_ctx, io_path_note), the I/O path uses those
    columns and reads no journal: the same figures as reading the records back."""
    from stormatrix.analysis.read.byrole import split_of
    from stormatrix.analysis.score.iopath import iopath_frame

    recs = [qemu_record("sata", "native", rep, vcpu_s=5.0, io_s=0.5 + rep / 10, io_ctx=100 * rep) for rep in (1, 2)]
    recs.append(qemu_record("sata", "threads", 1, vcpu_s=5.0, io_s=0.6, io_ctx=100, by_role={}))
    run = write_journal(tmp_path / "r", recs)
    frame = ingest([run], strict=True).frame
    read_back, _ = iopath_frame(frame)
    by_key = {r["key"]: split_of(CellRecord.from_json(r, "test")) for r in recs}
    carried = frame.assign(io_path_cpu_s=[by_key[k][0] for k in frame["key"]],
                           io_path_ctx=[by_key[k][1] for k in frame["key"]],
                           io_path_note=[by_key[k][2] for k in frame["key"]])
    (run / "journal.ndjson").unlink()                                        # nothing left to read back
    used, _ = iopath_frame(carried)
    assert used["cpu_per_mib"].tolist()[:2] == pytest.approx([6.0, 7.0])     # (0.6 s, 0.7 s) x 1000 / 100 MiB
    assert used["cpu_per_mib"].fillna(-1).tolist() == read_back["cpu_per_mib"].fillna(-1).tolist()
    assert used["ctx_per_mib"].fillna(-1).tolist() == read_back["ctx_per_mib"].fillna(-1).tolist()
    assert used["io_note"].tolist()[2] == read_back["io_note"].tolist()[2] and "no per-thread split" in used["io_note"].tolist()[2]


def test_io_path_sheet_needs_no_second_read_of_the_journal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ingest carries the split and the run's accel, so the I/O-path lens reads no journal again: a run whose
    journal is gone after ingest still gets its I/O-path figures, its emulation note and its sheet."""
    import stormatrix.analysis.score.iopath as iopath
    from stormatrix.analysis.write.workbook import write_efficiency_workbook

    recs = [qemu_record(c, a, rep, vcpu_s=v, io_s=io, io_ctx=n, vcpu_ctx=vn) for (c, a), reps in CONFIGS.items()
            for rep, (v, io, n, vn) in enumerate(reps, start=1)]
    run = write_journal(tmp_path / "r", recs, accel="tcg")
    data = ingest([run], strict=True)
    (run / "journal.ndjson").unlink()
    reads: list[list[str]] = []
    real = iopath.journal_records
    monkeypatch.setattr(iopath, "journal_records", lambda sources: reads.append(sources) or real(sources))
    result = score_cells(data.frame)
    assert reads == []                                                       # the journal is not read again
    io = {r["config"]: r for _, r in result.iopath.scored.cells.iterrows()}
    assert io["virtio-blk aio=native"]["cpu_per_mib_mean"] == pytest.approx(0.51 * 1000 / MIB)
    assert result.iopath.emulated == ["tcg"]
    out = write_efficiency_workbook(tmp_path / "r.xlsx", data, result, [])
    ws = openpyxl.load_workbook(out)["IO path"]
    head = [c.value for c in ws[1]]
    rows = {r[head.index("Configuration")]: dict(zip(head, r)) for r in ws.iter_rows(min_row=2, values_only=True)
            if r[head.index("Configuration")]}
    assert rows["virtio-blk aio=threads"]["I/O-path CPU/MiB mean (CPU-ms/MiB)"] == pytest.approx((1.50 + 1.55 + 1.52) / 3 * 1000 / MIB)
    # the findings below the table: a row's number, evidence and finding start on one line when printed (a number
    # at the bottom of a tall row stood beside the next finding's evidence)
    title = next(c.row for c in ws["A"] if c.value == "Findings on the I/O path alone")
    numbered = [row for row in ws.iter_rows(min_row=title + 2) if isinstance(row[0].value, int)]
    assert numbered
    for row in numbered:
        assert {row[j].alignment.vertical for j in (0, 1, 2)} == {"top"}, row[0].value


def test_frame_without_the_carried_split_reads_the_journal(tmp_path: Path) -> None:
    """A frame built without the carried columns (not by ingest) still gets the split and the accel from the
    journal lines its ``source`` names."""
    from stormatrix.analysis.score.iopath import iopath_frame

    recs = [qemu_record("sata", "native", rep, vcpu_s=5.0, io_s=0.5 + rep / 10, io_ctx=100 * rep) for rep in (1, 2)]
    frame = ingest([write_journal(tmp_path / "r", recs, accel="tcg")], strict=True).frame
    bare = frame.drop(columns=["io_path_cpu_s", "io_path_ctx", "io_path_note", "accel"])
    used, accels = iopath_frame(bare)
    assert used["cpu_per_mib"].tolist() == pytest.approx([6.0, 7.0]) and accels == ["tcg"]
