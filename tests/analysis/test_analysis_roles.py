"""The per-role figures (analysis/score/roles.py): they add up to the process's, the aio-worker role is empty for
aio=native, and the native-vs-threads verdict rests on the I/O-path switches per I/O.

The first tests read journal records written here by hand (each figure chosen so that a wrong sum or a
wrong role shows); the last one runs real QEMU (two cells, aio=native and aio=threads) and checks the same
relations on what the collector measured.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from qemumatrix import small_matrix
from rolerecords import journal, record

from stormatrix.analysis.read.ingest import ingest
from stormatrix.analysis.write.rolesheet import answer_rows, headline, with_config
from stormatrix.analysis.score.roles import ROLES, STEM, aio_verdicts, per_io_frame, role_table


def _frame(tmp_path: Path, records: list[dict]):
    return with_config(ingest([journal(tmp_path, records)]).frame)


def test_roles_add_up_to_the_process_and_workers_are_empty_for_native(tmp_path: Path) -> None:
    recs = [record("sata", aio, rep, 2000 + rep, 3000 + 7 * rep) for aio in ("native", "threads") for rep in (1, 2, 3)]
    per_io = per_io_frame(_frame(tmp_path, recs))
    assert len(per_io) == 6
    for row, rec in zip(per_io.sort_values(["aio", "repeat"]).itertuples(), sorted(recs, key=lambda r: (
            r["cell"]["disk"]["aio"], r["cell"]["repeat"]))):
        host = rec["host"]
        # every role's switches together are the process's (voluntary + involuntary over its threads)
        assert row.roles_ctx_io * row.ios == pytest.approx(host["ctx_voluntary"] + host["ctx_involuntary"])
        # and their run time is the threads' run time summed, role by role
        run = sum(r["runtime_s"] for r in host["by_role"].values())
        assert row.roles_cpu_us_io * row.ios / 1e6 == pytest.approx(run)
        if row.aio == "native":
            assert row.aio_worker_ctx_io == 0 and row.aio_worker_cpu_us_io == 0
        else:
            assert row.aio_worker_ctx_io == pytest.approx((2000 + row.repeat + 11) / 1000)
    table = role_table(per_io)
    assert set(table["config"]) == {"sata aio=native", "sata aio=threads"}
    assert {f"{STEM[r]}_ctx_io_mean" for r in ROLES} <= set(table.columns)


def test_verdict_rests_on_the_io_path_not_the_vcpu(tmp_path: Path) -> None:
    """The vCPU's switches differ wildly between repeats (here in the same way for both modes); the verdict
    is on the I/O path's switches per I/O, which the aio workers' 2 per I/O separate."""
    recs = [record("virtio-blk", aio, rep, 2000, 3000 + 5 * rep) for aio in ("native", "threads")
            for rep in (1, 2, 3)]
    for i, r in enumerate(recs):  # a vCPU that swings by 3x between repeats
        r["host"]["by_role"]["vcpu"]["ctx_voluntary"] = (1000, 9000, 3000)[i % 3]
    frame = _frame(tmp_path, recs)
    (v,) = aio_verdicts(per_io_frame(frame))
    assert v.controller == "virtio-blk" and v.decided and v.diff > 0
    assert v.diff == pytest.approx(2.011, rel=1e-3)  # the workers' 2,000 + 11 switches per 1,000 I/Os
    assert v.per_mib == pytest.approx(v.diff * 16)  # 16 I/Os of 64 KiB per MiB
    assert v.low <= v.diff <= v.high
    rows = answer_rows(frame)
    assert rows[0][0] == "virtio-blk" and "costs" in rows[0][1] and rows[0][5].startswith("decided")
    assert headline(frame).startswith("aio=threads costs more than aio=native for 1 of 1 controllers")


def test_a_single_repeat_is_not_decided(tmp_path: Path) -> None:
    frame = _frame(tmp_path, [record("ide", "native", 1, 0, 3000), record("ide", "threads", 1, 2000, 3000)])
    (v,) = aio_verdicts(per_io_frame(frame))
    assert not v.decided and "indicative" in answer_rows(frame)[0][5]


def test_records_without_a_split_give_no_role_figures(tmp_path: Path) -> None:
    recs = [record("sata", "native", 1, 0, 3000), record("sata", "threads", 1, 2000, 3000)]
    for r in recs:
        del r["host"]["by_role"]
    frame = _frame(tmp_path, recs)
    assert frame["vcpu_ctx"].isna().all()
    assert per_io_frame(frame).empty and answer_rows(frame) == [] and headline(frame) == ""


@pytest.mark.qemu
@pytest.mark.slow
def test_real_cells_roles_add_up_and_native_has_no_workers(tmp_path: Path) -> None:
    """One controller, aio=native and aio=threads, 3 s windows, on real QEMU: the collector's per-role
    figures add up to its per-thread process totals, and aio=native's thread pool stays empty."""
    text = small_matrix("roles", ["virtio-blk"], measure_seconds=3).replace('aio = ["native"]',
                                                                             'aio = ["native", "threads"]')
    matrix = tmp_path / "m.toml"
    matrix.write_text(text)
    run = tmp_path / "run"
    res = subprocess.run([sys.executable, "-m", "stormatrix", "run", str(matrix), "-o", str(run), "--no-progress"],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr + res.stdout
    recs = [r for r in map(json.loads, (run / "journal.ndjson").read_text().splitlines()) if r["type"] == "cell"]
    assert sorted(r["cell"]["disk"]["aio"] for r in recs) == ["native", "threads"]
    per_io = per_io_frame(with_config(ingest([run]).frame))
    assert len(per_io) == 2
    for rec in recs:
        host = rec["host"]
        proc = host.get("process") or host  # scope "cpus": the QEMU process's own figures are under process
        row = per_io[per_io["aio"] == rec["cell"]["disk"]["aio"]].iloc[0]
        assert row.roles_ctx_io * row.ios == pytest.approx(proc["ctx_voluntary"] + proc["ctx_involuntary"])
        # CPU: each role's threads' own run time (schedstat); a role where a thread's was not read (it ended
        # in the window) falls back to user + system, as the Roles sheet says
        expect = 0.0
        for role, agg in host["by_role"].items():
            run = agg.get("runtime_s")
            expect += run if run is not None else agg["user_s"] + agg["system_s"]
        assert row.roles_cpu_us_io * row.ios / 1e6 == pytest.approx(expect, rel=1e-6)
        if all(t.get("runtime_s") is not None for t in host["threads"]):
            assert expect == pytest.approx(sum(t["runtime_s"] for t in host["threads"]), rel=1e-6)
        if rec["cell"]["disk"]["aio"] == "native":
            # no I/O goes through the thread pool: at most an idle worker left from the VM's start (a restore
            # loads its state through it) ending in the window, against 2 switches per I/O with aio=threads
            assert row.aio_worker_ctx_io < 0.01, host["by_role"].get("aio-worker")
        else:
            assert host["by_role"]["aio-worker"]["threads"] >= 1 and row.aio_worker_ctx_io > 1.5


def test_the_workbook_names_the_verdict_figure_and_answers_per_controller(tmp_path: Path) -> None:
    import openpyxl

    from stormatrix.cli import main

    recs = [record(c, aio, rep, 2000 + rep, 3000 + 9 * rep + (500 if c == "ide" else 0))
            for c in ("sata", "ide") for aio in ("native", "threads") for rep in (1, 2, 3)]
    out = tmp_path / "w.xlsx"
    assert main(["report", str(journal(tmp_path, recs)), "-o", str(out)]) == 0
    wb = openpyxl.load_workbook(out)
    method = {str(r[0]): str(r[1]) for r in wb["Method"].iter_rows(values_only=True) if r[0] and r[1]}
    assert method["Verdict figure"].startswith("I/O-path context switches per I/O")
    assert "CV" in method["Whole-process noise"] and "vCPU" in method["Whole-process noise"]
    answer = [r for r in wb["Answer"].iter_rows(values_only=True)]
    start = next(i for i, r in enumerate(answer) if r[0] == "Controller")
    rows = {r[0]: r for r in answer[start + 1:start + 3]}
    assert set(rows) == {"sata", "ide"}
    for r in rows.values():
        assert r[1].startswith("aio=threads costs") and r[5].startswith("decided at 95 %")
        assert r[2] == pytest.approx(2.011, rel=1e-3)  # threads - native: the workers' switches per I/O
    assert "for 2 of 2 controllers" in str(answer[1][0])
    assert "Roles" in wb.sheetnames
    # the per-role table prints readable: the Workload text is set off from the right-aligned CV beside it
    roles = wb["Roles"]
    head = next(c.row for c in roles["A"] if c.value == "Configuration")
    workload = roles.cell(row=head + 1, column=10)
    assert roles.cell(row=head, column=10).value == "Workload" and workload.value
    assert workload.alignment.horizontal == "left" and workload.alignment.indent >= 1
    assert roles.column_dimensions["J"].width >= len(str(workload.value))


def test_the_method_names_the_hand_offs_only_where_every_native_window_shows_them() -> None:
    """The Method sheet's cause of the I/O path's spread follows from the numbers: the main loop's switches
    equal to the vCPU's in every aio=native window (within 10 %), else no such sentence."""
    import pandas as pd

    from stormatrix.analysis.write.rolesheet import _handoff_line

    rows = [{"aio": "native", "vcpu_ctx_io": v, "main_loop_ctx_io": m} for v, m in ((4.5, 4.6), (7.6, 7.4))]
    rows.append({"aio": "threads", "vcpu_ctx_io": 5.0, "main_loop_ctx_io": 3.0})  # threads windows: not asked
    line = _handoff_line(pd.DataFrame(rows))
    assert "(2)" in line and "4.60-7.40 main-loop switches per I/O" in line and "2.6%" in line
    rows[1]["main_loop_ctx_io"] = 5.0  # one native window where the main loop did not follow the vCPU
    assert _handoff_line(pd.DataFrame(rows)) == ""
    assert _handoff_line(pd.DataFrame(rows[:1])) == ""  # one window shows no relation


def test_the_method_says_how_the_guest_paced_only_where_the_records_give_its_fio_timer_slack(tmp_path: Path) -> None:
    """guest.fio_timerslack_ns of the cell records (the local guest's READY line) reaches the tidy frame and the
    Method sheet's "Guest pacing" line, with how many measurements had it; records without it give no line."""
    from stormatrix.analysis.write.rolesheet import method_lines

    recs = [record(c, a, r, 2000 + r, 3000 + 7 * r) for c in ("sata",) for a in ("native", "threads")
            for r in (1, 2, 3)]
    for rec in recs[:5]:
        rec["guest"] = {"kernel": "6.1.0", "fio_timerslack_ns": "20000000"}
    recs[5]["guest"] = {"kernel": "6.1.0", "fio_timerslack_ns": ""}  # no fio was waiting: nothing reported
    frame = _frame(tmp_path, recs)
    assert frame["guest_fio_timerslack_ns"].dropna().tolist() == [20_000_000.0] * 5
    pacing = dict(x for x in method_lines(frame) if isinstance(x, tuple))["Guest pacing"]
    assert "20 ms timer slack in 5 of 6 measurements" in pacing
    for rec in recs:
        rec.pop("guest")
    (tmp_path / "run").rename(tmp_path / "before")
    assert "Guest pacing" not in dict(x for x in method_lines(_frame(tmp_path, recs)) if isinstance(x, tuple))


def test_the_noise_line_gives_the_vcpus_share_and_names_other_tasks_on_the_set_only_when_they_were_there() -> None:
    import pandas as pd

    from stormatrix.analysis.write.rolesheet import OTHERS_LOUD_S, _noise_line

    per_io = pd.DataFrame({"vcpu_ctx_io": [1.0, 1.0], "roles_ctx_io": [4.0, 4.0],
                           "vcpu_cpu_us_io": [900.0, 900.0], "roles_cpu_us_io": [1000.0, 1000.0]})
    table = pd.DataFrame()
    quiet = _noise_line(table, True, per_io, pd.DataFrame({"on_set_cpu_s": [0.0, OTHERS_LOUD_S / 2]}))
    assert "it holds 90% of the QEMU threads' CPU and 25% of their switches" in quiet
    assert "Other tasks" not in quiet
    loud = _noise_line(table, True, per_io, pd.DataFrame({"on_set_cpu_s": [0.1, 2.0, 0.2]}))
    assert "in 1 of 3 windows (up to 2.0 s" in loud


def test_the_noise_line_splits_the_cpu_sets_spread_into_qemus_threads_and_the_rest() -> None:
    """The scored CPU-set figure's spread, measured per window: the set's CPU time is QEMU's threads on it
    (proc_set_cpu_total) plus the rest; whichever spreads within a configuration is named, with the numbers."""
    import pandas as pd

    from stormatrix.analysis.write.rolesheet import _noise_line

    per_io = pd.DataFrame({"vcpu_ctx_io": [1.0], "roles_ctx_io": [4.0], "vcpu_cpu_us_io": [9.0],
                           "roles_cpu_us_io": [10.0]})
    table = pd.DataFrame({"path_cpu_us_io_cv": [0.02, 0.12], "path_ctx_io_cv": [0.01, 0.03]})
    base = {"controller": ["sata"] * 3 + ["ide"] * 3, "aio": ["native"] * 6,
            "cpu_per_mib": [2.0, 2.0, 2.0, 1.0, 2.0, 3.0], "on_set_cpu_s": [0.05, 0.07, 0.04] * 2}
    qemu_moves = pd.DataFrame({**base, "cpu_total": [0.5, 0.5, 0.5, 0.4, 0.5, 0.6],
                               "proc_set_cpu_total": [0.3, 0.3, 0.3, 0.2, 0.3, 0.4]})
    line = _noise_line(table, True, per_io, qemu_moves)
    assert "CPU per MiB (the scored figure) varies by CV 0%-50%" in line  # sata 0, ide sd 1 / mean 2
    assert "QEMU's threads that ran on it (0.20-0.40 s) plus the rest" in line and "(0.20-0.20 s)" in line
    assert "pooled sd of 0.071 s and the rest by 0.000 s: the set's spread is mostly QEMU's own threads'." in line
    assert "took up to 0.07 CPU-s of a window" in line
    assert "the I/O path's switches per I/O by 1%-3% and its CPU per I/O by 2%-12%" in line
    rest_moves = qemu_moves.assign(proc_set_cpu_total=[0.3] * 6)
    assert "the set's spread is mostly the rest's." in _noise_line(table, True, per_io, rest_moves)
    alike = qemu_moves.assign(cpu_total=[0.5, 0.5, 0.5, 0.3, 0.5, 0.7])  # the rest moves as much as QEMU's threads
    assert "the two spread alike (neither sd is twice the other)." in _noise_line(table, True, per_io, alike)
    # with the vCPUs on the set (KVM) the set's spread holds the guest's: no such line
    assert "scored figure" not in _noise_line(table, False, per_io, qemu_moves)


def test_a_decided_verdict_gives_the_cpu_difference_with_its_own_interval_and_says_when_it_is_within_noise() -> None:
    from stormatrix.analysis.score.roles import AioVerdict, verdict_sentence

    def verdict(cpu: float, low: float, high: float, cpu_p: float) -> AioVerdict:
        return AioVerdict("sata", "w", "", [2.6, 2.7], [4.0, 4.1], 1.4, 1.2, 1.6, 0.001, 22.4, cpu, low, high,
                          cpu_p, 0.01, 0.01)

    loose = verdict_sentence(verdict(7.1, -33.2, 47.4, 0.65))
    assert loose.startswith("sata: aio=threads costs 1.40 I/O-path switches per I/O (22.4 per MiB) more")
    assert "I/O-path CPU +7.1 µs per I/O (95 % CI -33.2 to +47.4, p = 0.65: within noise)." in loose
    tight = verdict_sentence(verdict(52.0, 32.7, 71.3, 0.0006))
    assert "I/O-path CPU +52.0 µs per I/O (95 % CI +32.7 to +71.3, p = 0.0006)." in tight
    assert "within noise" not in tight


def test_the_steal_line_names_the_stolen_windows_and_the_verdict_figures_spread_without_them() -> None:
    import pandas as pd

    from stormatrix.analysis.write.rolesheet import STEAL_LOUD_S, _steal_line

    per_io = pd.DataFrame({"controller": ["sata"] * 4 + ["ide"] * 3, "aio": ["native"] * 7,
                           "path_ctx_io": [2.6, 2.6, 2.6, 2.0, 2.5, 2.5, 2.5]})
    frame = pd.DataFrame({"set_steal_s": [0.0, 0.1, 0.0, 1.6, 0.0, 0.0, 0.02]})
    line = _steal_line(per_io, frame)
    assert f"more than {STEAL_LOUD_S:g} s in 1 of 7 windows (up to 1.60 s" in line
    assert "lies -0.60 to -0.60 switches per I/O from the median" in line
    assert "0.0%-12.2% with those windows and 0.0%-0.0% without them" in line  # sata: sd 0.3 / mean 2.45
    assert _steal_line(per_io, frame.assign(set_steal_s=[0.1] * 7)) == ""  # no window lost enough
    assert _steal_line(per_io, pd.DataFrame({"x": [1] * 7})) == ""  # records without the set's /proc/stat
