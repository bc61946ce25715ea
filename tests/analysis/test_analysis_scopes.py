"""The workbook under the two host scopes (issue 33): a CPU set's figures are scored, the QEMU process's are
beside them on the Scopes sheet with the share outside QEMU's threads, the leak and the rank under each scope;
the Method sheet says which scope was measured. The records are written here from a data description (the
shape docs/journal.md gives a CPU-set host block); the expected figures are worked out by hand below."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import openpyxl
import pytest
from test_analysis_iopath import MIB, qemu_record, write_journal

from stormatrix.analysis.read.ingest import ingest
from stormatrix.analysis.write.scopes import scope_table
from stormatrix.analysis.score.efficiency import score_cells
from stormatrix.cli import main

# per configuration, per repeat: (set CPU s, set switches, process CPU s, process switches,
# storage interrupts outside the set, on it, other tasks' CPU s on the set). native's completions run in
# interrupt and softirq context on the set, outside QEMU's threads: cheaper as a process, dearer as the set
CONFIGS = {("virtio-blk", "native"): [(6.0, 30000, 3.0, 10000, 10, 990, 0.2), (6.2, 31000, 3.1, 10500, 12, 988, 0.2)],
           ("virtio-blk", "threads"): [(4.0, 20000, 3.6, 18000, 0, 1000, 0.1), (4.1, 20500, 3.7, 18200, 0, 1000, 0.1)]}


def cpuset_record(controller: str, aio: str, rep: int, figures: tuple[float, ...]) -> dict[str, Any]:
    set_s, set_ctx, proc_s, proc_ctx, out, on, others = figures
    rec = qemu_record(controller, aio, rep, vcpu_s=proc_s * 0.8, io_s=proc_s * 0.2, io_ctx=int(proc_ctx * 0.9),
                      vcpu_ctx=proc_ctx - int(proc_ctx * 0.9))
    process = copy.deepcopy(rec["host"])
    rec["host"] = {**process, "scope": "cpus", "cpus": "1", "cpu_total": set_s, "cpu_user": set_s / 2,
                   "cpu_system": set_s / 2, "ctx_switches": set_ctx, "process": process,
                   "leak": {"outside_cpus": "0", "interrupts": {"40": {"name": "nvme0q1", "outside": out, "on_set": on}},
                            "softirqs": {}, "io_interrupts": {"outside": out, "on_set": on},
                            "io_softirqs": {"outside": 0, "on_set": 0}},
                   "on_set": [{"pid": 777, "comm": "intruder", "cpu_s": others, "threads": 1}]}
    rec["per_mib"] = {"mib": MIB, "cpu": set_s * 1000 / MIB, "cpu_unit": "CPU-ms/MiB", "ctx": set_ctx / MIB}
    return rec


def journal(tmp_path: Path) -> Path:
    recs = [cpuset_record(c, a, rep, f) for (c, a), reps in CONFIGS.items() for rep, f in enumerate(reps, start=1)]
    return write_journal(tmp_path / "run", recs)


def test_the_set_is_scored_and_the_process_is_beside_it_ranked_on_its_own(tmp_path: Path) -> None:
    frame = ingest([journal(tmp_path)], strict=True).frame
    result = score_cells(frame)
    table = {r["config"]: r for _, r in scope_table(frame, result).iterrows()}
    native, threads = table["virtio-blk aio=native"], table["virtio-blk aio=threads"]
    n = CONFIGS[("virtio-blk", "native")]
    # by hand: the set's CPU-ms/MiB (scored) and the process's, means over the repeats
    assert native["set_cpu_per_mib"] == pytest.approx((6.0 + 6.2) / 2 * 1000 / MIB)
    assert native["proc_cpu_per_mib"] == pytest.approx((3.0 + 3.1) / 2 * 1000 / MIB)
    assert native["cpu_outside_share"] == pytest.approx(1 - (3.0 + 3.1) / (6.0 + 6.2))
    assert native["ctx_outside_share"] == pytest.approx(1 - (10000 + 10500) / (30000 + 31000))
    assert native["irq_leak_share"] == pytest.approx((10 + 12) / (10 + 990 + 12 + 988))
    assert threads["irq_leak_share"] == 0
    assert native["on_set_cpu_s"] == pytest.approx(0.2) and "intruder (777)" in native["on_set_top"]
    assert native["host_cpus"] == "1" and len(n) == native["n"]
    # the set ranks threads first (less CPU and fewer switches); the process alone ranks native first
    assert (threads["rank_set"], native["rank_set"]) == (1, 2)
    assert (native["rank_process"], threads["rank_process"]) == (1, 2)
    assert native["ranks_differ"] == "yes"
    scored = {r["config"]: r for _, r in result.cells.iterrows()}
    assert scored["virtio-blk aio=threads"]["rank"] == 1  # Scores use the set's figures


def test_the_workbook_says_which_scope_it_scored_and_shows_both(tmp_path: Path) -> None:
    out = tmp_path / "wb.xlsx"
    assert main(["report", str(journal(tmp_path)), "-o", str(out)]) == 0
    wb = openpyxl.load_workbook(out)
    assert "Scopes" in wb.sheetnames and wb.sheetnames.index("Scopes") == wb.sheetnames.index("Scores") + 1
    method = {r[0]: r[1] for r in wb["Method"].iter_rows(values_only=True) if r[0]}
    assert method["Collector scope"].startswith("cpus: the host CPU set 1 measured system-wide")
    assert "use the CPU set's figures" in method["Collector scope"]
    ranking = method["randread-64k (cpu_time)"]
    assert ranking.startswith("the scopes rank the configurations differently")
    assert "Set (scored): virtio-blk aio=threads (1), virtio-blk aio=native (2)" in ranking
    assert "QEMU process: virtio-blk aio=native (1), virtio-blk aio=threads (2)" in ranking
    rows = list(wb["Scopes"].iter_rows(values_only=True))
    head = rows[0]
    first = dict(zip(head, rows[1]))
    assert first["Configuration"] == "virtio-blk aio=threads" and first["Rank, set"] == 1
    assert first["Rank, QEMU process"] == 2 and first["Ranks differ"] == "yes"


def test_a_process_scope_data_set_has_no_scopes_sheet_and_says_what_it_misses(tmp_path: Path) -> None:
    recs = [qemu_record("virtio-blk", "native", 1, vcpu_s=1.0, io_s=0.2, io_ctx=100)]
    out = tmp_path / "wb.xlsx"
    assert main(["report", str(write_journal(tmp_path / "run", recs)), "-o", str(out)]) == 0
    wb = openpyxl.load_workbook(out)
    assert "Scopes" not in wb.sheetnames
    method = {r[0]: r[1] for r in wb["Method"].iter_rows(values_only=True) if r[0]}
    assert method["Collector scope"].startswith("qemu-process: the QEMU process alone")
    assert "outside QEMU's threads" in method["Collector scope"]


def _texts(ws: Any) -> str:
    return " ".join(str(v) for row in ws.iter_rows(values_only=True) for v in row if v is not None)


def test_the_answer_page_names_the_cpu_set_it_scored(tmp_path: Path) -> None:
    out = tmp_path / "wb.xlsx"
    assert main(["report", str(journal(tmp_path)), "-o", str(out)]) == 0
    answer = _texts(openpyxl.load_workbook(out)["Answer"])
    assert "of the host CPU set 1, measured system-wide" in answer and "of the whole QEMU process" not in answer


def test_esxi_measurements_keep_their_own_cpu_source_and_say_so(tmp_path: Path) -> None:
    rec = qemu_record("virtio-blk", "native", 1, vcpu_s=1.0, io_s=0.2, io_ctx=100)
    rec["host"].update(scope="esxi-vm", source="esxtop")
    out = tmp_path / "wb.xlsx"
    assert main(["report", str(write_journal(tmp_path / "run", [rec])), "-o", str(out)]) == 0
    wb = openpyxl.load_workbook(out)
    method = {r[0]: r[1] for r in wb["Method"].iter_rows(values_only=True) if r[0]}
    assert "ESXi: esxtop, the VM's own CPU figures" in method["Collector scope"]
    assert "no CPU set is measured there" in method["Collector scope"] and "Scopes" not in wb.sheetnames


def test_a_workload_measured_under_both_scopes_is_warned_about(tmp_path: Path) -> None:
    recs = [cpuset_record("virtio-blk", "native", 1, CONFIGS[("virtio-blk", "native")][0]),
            qemu_record("virtio-blk", "threads", 1, vcpu_s=1.0, io_s=0.2, io_ctx=100)]
    out = tmp_path / "wb.xlsx"
    assert main(["report", str(write_journal(tmp_path / "run", recs)), "-o", str(out)]) == 0
    method = {r[0]: r[1] for r in openpyxl.load_workbook(out)["Method"].iter_rows(values_only=True) if r[0]}
    assert "WARNING: workload randread-64k holds measurements of a CPU set and of the QEMU process" in \
        method["Collector scope"]


def test_with_the_vcpus_beside_the_harness_the_share_outside_qemu_is_of_the_threads_on_the_set(tmp_path: Path) -> None:
    # accel = tcg: the vCPU threads (the emulated guest) ran off the set, so the set holds the process's other
    # threads only; the share outside QEMU is 1 - (process - its vCPU role) / set, by hand below
    recs = []
    for (c, a), reps in CONFIGS.items():
        for rep, f in enumerate(reps, start=1):
            rec = cpuset_record(c, a, rep, f)
            rec["host"]["placement"] = {"pinned": True, "scope": "cpus", "set_cpus": "1", "harness_cpus": "0",
                                        "vcpu_on_set": False, "roles": {}}
            recs.append(rec)
    out = tmp_path / "wb.xlsx"
    folder = write_journal(tmp_path / "run", recs)
    frame = ingest([folder], strict=True).frame
    table = {r["config"]: r for _, r in scope_table(frame, score_cells(frame)).iterrows()}
    native = table["virtio-blk aio=native"]
    (s1, x1, p1, c1, *_), (s2, x2, p2, c2, *_) = CONFIGS[("virtio-blk", "native")]
    on_set_s = (p1 - p1 * 0.8) + (p2 - p2 * 0.8)  # the process minus its vCPU role's run time
    on_set_ctx = int(c1 * 0.9) + int(c2 * 0.9)  # minus the vCPU role's switches
    assert native["cpu_outside_share"] == pytest.approx(1 - on_set_s / (s1 + s2))
    assert native["ctx_outside_share"] == pytest.approx(1 - on_set_ctx / (x1 + x2))
    assert native["proc_cpu_per_mib"] == pytest.approx((p1 + p2) / 2 * 1000 / MIB)  # the whole process, as before
    assert native["vcpu_place"] == "beside the harness"
    assert main(["report", str(folder), "-o", str(out)]) == 0
    wb = openpyxl.load_workbook(out)
    method = {r[0]: r[1] for r in wb["Method"].iter_rows(values_only=True) if r[0]}
    assert "its vCPU threads kept off it with the harness" in method["Collector scope"]
    assert "emulated guest" in method["Collector scope"]
    assert "the CPU set's do not (the vCPUs ran beside the harness" in method["Whole-process noise"]
    head = [c.value for c in wb["Scopes"][1]]
    assert "vCPU threads ran" in head
    # the set-wide default (KVM, or a record from before the place was recorded) keeps the whole process
    frame = ingest([journal(tmp_path / "kvm")], strict=True).frame
    assert {r["vcpu_place"] for _, r in scope_table(frame, score_cells(frame)).iterrows()} == {"on the set"}


def test_the_sets_steal_is_a_column_and_absent_where_the_record_has_none(tmp_path: Path) -> None:
    recs = [cpuset_record(c, a, rep, f) for (c, a), reps in CONFIGS.items() for rep, f in enumerate(reps, start=1)]
    recs[0]["host"]["cpu_stat"] = {"user": 1.0, "system": 1.0, "idle": 4.0, "iowait": 0.0, "steal": 1.25}
    frame = ingest([write_journal(tmp_path / "run", recs)], strict=True).frame
    assert frame["set_steal_s"].iloc[0] == pytest.approx(1.25)
    assert frame["set_steal_s"].iloc[1:].isna().all()  # no cpu_stat in the record: blank, never 0
