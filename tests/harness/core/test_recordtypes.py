"""One typed record per journal type (core/recordtypes.py), named once (core/journalfile.py): the harness builds
them in one module (records.py; an executor adds only its own keys to a cell record), journals ``to_json()``, and
analysis reads ``from_json()``. A line read and written again is the same line, a record
built and read back is the same record, and a bad record names its file, line, key and fix."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest

from stormatrix import records
from stormatrix.analysis.read.journalrows import read_journal_rows
from stormatrix.core.errors import DataFileError, GuestDisconnected, WorkloadFailed
from stormatrix.core.journalfile import CELL_SKIPPED, RECORD_TYPES, RESTORED, RUN, SCHEMA
from stormatrix.core.model import Cell, DiskConfig, Workload
from stormatrix.core.recordtypes import (CellErrorRecord, CellRecord, CellSkippedRecord, RestoredRecord, RunRecord,
                                         record_from_json, resume_record)
from stormatrix.core.recordupgrades import UPGRADES, upgrade
from stormatrix.core.scope import BlockStats
from stormatrix.executors.base import EXECUTOR_RECORD_KEYS, WorkloadResult
from stormatrix.journal import Journal
from stormatrix.suite import UNKNOWN_DISK, SuitePoint
import paths

DATA = paths.ROOT / "tests" / "data"
CELL = Cell(DiskConfig("virtio-scsi-single", "native", True, "none"), Workload("rr", "randread", 4096, 4), 2)
MIXED = Cell(DiskConfig("sata", "threads", False, "none"),
             Workload("mix", "randrw", 8192, 8, numjobs=2, rate_mib_s=4.0, rwmixread=70), 1)
HOST = {"cpu_metric": "cpu_time", "cpu_unit": "s", "cpu_total": 0.5, "cpu_user": 0.2, "cpu_system": 0.3,
        "ctx_switches": 1200, "window_s": 10.0, "source": "perf+proc", "scope": "qemu pid 1",
        "by_role": {"vcpu": {"user_s": 0.1, "system_s": 0.1, "ctx_voluntary": 5, "ctx_involuntary": 1}}}


def _lines(path: Path) -> list[tuple[int, dict[str, Any]]]:
    out = []
    for number, raw in enumerate(path.read_bytes().split(b"\n"), start=1):
        try:
            value = json.loads(raw)
        except ValueError:
            continue
        if isinstance(value, dict) and value.get("schema") == SCHEMA:
            out.append((number, value))
    return out


def _dumps(obj: dict[str, Any]) -> str:
    return json.dumps(obj, ensure_ascii=False)


def _journals() -> list[Path]:
    return sorted(DATA.rglob("*.ndjson"))


def _built(cell: Cell, fio_doc: str) -> list[Any]:
    """One of each record, as the runner builds them from a real fio document."""
    doc = json.loads((DATA / "fio" / fio_doc).read_text())
    result = WorkloadResult(engine="fio", raw=json.dumps(doc), data=doc, guest={"kernel": "6.1"},
                            record={"times": {"window_offset_s": 0.25}, "skew": {"max_s": 0.1}})
    fio = records.summarize(result, cell)
    times = {"started": "2026-11-27T22:00:00+00:00", "ready": "2026-11-27T22:00:05+00:00",
             "measure_start": "2026-11-27T22:00:07+00:00", "measure_end": "2026-11-27T22:00:17+00:00",
             "finished": "2026-11-27T22:00:18+00:00", "boot_s": 4.5, "ramp_s": 2.0, "measure_s": 10.0,
             "window_s": 10.0, "booted_ahead": False}
    cell_rec = records.cell_record(
        run_id="r1", cell=cell, backend="qemu", side="A", vm="smx-1", times=times, fio=fio, host=HOST,
        result=result, rate=records.rate_check(cell, fio, 10.0),
        cross=records.crosscheck(fio, BlockStats(0, 0, 0, 0), BlockStats(4096, 1, 0, 0), 5.0),
        overlap={"vm": "smx-1", "paused_in_window": False, "cpu_s_in_window": 0.0}, fields={"suite": "s"})
    cell_rec.extra_repeat = {"basis": "cv", "reason": "CV 12 % over 10 %"}
    failed = WorkloadFailed("fio died", cell=cell.key)
    return [records.run_record(run_id="r1", matrix_path="m.toml", matrix={"repeats": 2}, backend="qemu", side="A",
                               environment={"accel": "tcg"}, original_config=None, cells=2, todo=2,
                               order="rounds", seed=7),
            cell_rec,
            records.error_record(run_id="r1", cell=cell, stage="window", attempt=1, exc=failed, console_tail="x" * 900),
            records.skipped_record(run_id="r1", cell=cell, side="A", reason="no vioscsi driver", drivers={"a": 1},
                                   readiness="booted"),
            records.skipped_record(run_id="r1", cell=cell, side=None, reason="no driver", drivers=None),
            records.restored_record(run_id="r1", backend="qemu"),
            records.restored_record(run_id="r1", vm="100", by="stormatrix restore")]


@pytest.mark.parametrize("cell, fio_doc", [(CELL, "fio3_randread_bs4k_qd1.json"),
                                           (MIXED, "fio3_randrw70_bs8k_qd8_numjobs2_group.json")])
def test_what_the_harness_builds_reads_back_as_the_same_record(cell: Cell, fio_doc: str) -> None:
    for rec in _built(cell, fio_doc):
        line = json.loads(_dumps(rec.to_json()))  # through the journal's text
        again = type(rec).from_json(line, "journal.ndjson:1")
        assert again == rec
        assert _dumps(again.to_json()) == _dumps(rec.to_json())
        assert record_from_json(line, "journal.ndjson:1") == rec


def test_a_cell_record_is_journaled_key_for_key_as_before() -> None:
    """The keys and their order the runner has always written; an executor's own keys and the run's come after."""
    built = _built(MIXED, "fio3_randrw70_bs8k_qd8_numjobs2_group.json")
    cell = built[1].to_json()
    assert list(cell) == ["schema", "type", "run_id", "key", "cell", "backend", "side", "vm", "engine", "times",
                          "fio", "host", "per_mib", "rate", "crosscheck", "clock", "guest", "window_source", "clients",
                          "raw", "overlap", "extra_repeat", "skew", "suite"]
    assert cell["cell"] == MIXED.to_dict() and cell["times"]["window_offset_s"] == 0.25
    assert cell["raw"] == {"engine": "fio", "output": built[1].raw["output"]}
    assert cell["host"] == HOST and cell["rate"]["directions"]["read"]["target_mib_s"] == pytest.approx(2.8)
    assert [list(r.to_json())[:2] for r in built] == [["schema", "type"]] * len(built)
    error = built[2].to_json()
    assert list(error) == ["schema", "type", "run_id", "key", "cell", "side", "stage", "attempt", "time", "error"]
    assert error["error"]["console_tail"] == "x" * 800 and "guests" not in error["error"]
    assert "readiness" not in built[4].to_json() and built[3].to_json()["readiness"] == "booted"
    assert list(built[5].to_json()) == ["schema", "type", "run_id", "time", "backend"]
    assert list(built[6].to_json()) == ["schema", "type", "run_id", "time", "vm", "by"]
    assert list(built[0].to_json())[-2:] == ["order", "seed"]


@pytest.mark.parametrize("path", _journals(), ids=lambda p: str(p.relative_to(DATA)))
def test_every_journal_line_in_tests_data_is_written_back_as_it_was_read(path: Path) -> None:
    read = 0
    for number, line in _lines(path):
        try:
            rec = record_from_json(line, f"{path}:{number}")
        except DataFileError as exc:  # the malformed journals' damaged lines: refused, naming the line
            assert exc.path == f"{path}:{number}" and exc.problem
            continue
        read += 1
        assert _dumps(rec.to_json()) == _dumps(line)
        assert type(rec).from_json(rec.to_json(), "again") == rec
    assert read or path.parent.name == "journal"  # every good journal has records that read


def test_the_sample_journals_hold_every_record_type() -> None:
    kinds = {type(record_from_json(line, "x")) for p in (DATA / "journal").rglob("*.ndjson") for _, line in _lines(p)}
    assert {RunRecord, CellRecord, CellErrorRecord, RestoredRecord} <= kinds


def _cell_line() -> dict[str, Any]:
    return json.loads(_dumps(_built(CELL, "fio3_randread_bs4k_qd1.json")[1].to_json()))


def test_an_older_record_has_its_engine_and_cpu_source_worked_out_once_and_written_back_unchanged() -> None:
    line = _cell_line()
    del line["engine"]  # older records: no engine key (fio's, or raw.engine) and no host.cpu_total_source
    assert "cpu_total_source" not in line["host"]
    rec = CellRecord.from_json(line, "j:3")
    assert rec.engine == "fio" and rec.host is not None and rec.host.cpu_total_source == "perf task-clock (ns)"
    assert rec.to_json() == line  # what was worked out is not written into the record
    line["raw"]["engine"] = "diskspd"
    assert CellRecord.from_json(line, "j:3").engine == "diskspd"
    line["host"]["source"] = "proc"
    assert _source(line) == "/proc/PID/stat utime + stime (clock ticks)"
    line["host"]["cpu_total_source"] = "named by the collector"
    assert _source(line) == "named by the collector"


def _source(line: dict[str, Any]) -> str | None:
    host = CellRecord.from_json(line, "j:3").host
    assert host is not None
    return host.cpu_total_source


@pytest.mark.parametrize("edit, key", [
    (lambda r: r["cell"]["workload"].update(bs="4k"), "'cell.workload.bs' is '4k', not an integer"),
    (lambda r: r["fio"].pop("total"), "cell record has no 'fio.total'"),
    (lambda r: r["fio"]["total"].update(iops="fast"), "'fio.total.iops' is 'fast', not a number"),
    (lambda r: r.update(host="busy"), "'host' is str, not an object or null"),
    (lambda r: r["host"].update(cpu_metric="jiffies"), "host.cpu_metric is 'jiffies'"),
    (lambda r: r["times"].update(window_s=0), "'times.window_s' is 0: it is above 0"),
    (lambda r: r.update(engine="diskspd"), "'engine' is 'diskspd' but 'raw.engine' is 'fio'"),
    (lambda r: r["host"].update(ctx_switches=None), "'host.ctx_switches' is null"),
    (lambda r: r["times"].update(started=17), "'times.started' is 17, not a string"),
    (lambda r: r.pop("run_id"), "cell record has no 'run_id'"),
    (lambda r: r.update(times=None), "cell record has no 'times'"),
    (lambda r: r["cell"]["workload"].pop("rw"), "cell record has no 'cell.workload.rw'"),
    (lambda r: r["cell"]["disk"].update(controller=None), "cell record has no 'cell.disk.controller'"),
])
def test_a_bad_cell_record_is_refused_naming_the_line_and_the_key(edit: Any, key: str) -> None:
    line = _cell_line()
    edit(line)
    with pytest.raises(DataFileError) as caught:
        CellRecord.from_json(line, "run/journal.ndjson:7")
    assert caught.value.path == "run/journal.ndjson:7" and key in caught.value.problem
    assert "unedited journal" in caught.value.fix  # and the fix


@pytest.mark.parametrize("edit, key", [
    (lambda r: r.pop("key"), "cell record has no 'key'"),
    (lambda r: r["cell"].pop("repeat"), "cell record has no 'cell.repeat'"),
    (lambda r: r["fio"].pop("total"), "cell record has no 'fio.total'"),
    (lambda r: r.update(key=None, run_id=3), "'run_id' is 3, not a string"),  # a wrong value before a missing key
])
def test_a_cell_line_without_a_key_the_harness_always_writes_is_refused_on_resume_too(edit: Any, key: str) -> None:
    """Required keys are the type's: the resume's reading refuses the line as analysis's does, so no reader of
    a CellRecord checks them for None."""
    line = _cell_line()
    edit(line)
    with pytest.raises(DataFileError) as caught:
        resume_record(line, "run/journal.ndjson:4")
    assert caught.value.path == "run/journal.ndjson:4" and key in caught.value.problem
    assert "unedited journal" in caught.value.fix


def test_an_older_line_is_upgraded_once_for_every_reader_and_written_back_as_it_was() -> None:
    line = _cell_line()
    del line["engine"]
    line["raw"]["engine"] = "diskspd"
    assert upgrade(line) is not line and upgrade(line)["engine"] == "diskspd" and "engine" not in line
    full = _cell_line()
    assert upgrade(full) is full and list(UPGRADES) == ["cell"]  # nothing lacking: read as it is
    for read in (resume_record, record_from_json):
        rec = read(line, "j:2")
        assert isinstance(rec, CellRecord) and rec.engine == "diskspd"
        assert _dumps(rec.to_json()) == _dumps(line)  # the worked-out engine is not written into the line
    del line["raw"]["engine"]
    assert CellRecord.read(line, "j:2").engine == "fio"  # before either key: fio's


def test_extra_repeats_decide_on_the_cells_analysis_reads_and_a_resume_counts_every_cell_done(tmp_path: Path) -> None:
    good, unusable = _cell_line(), _cell_line()
    unusable["key"] = unusable["cell"]["key"] = CELL.key.replace("rep2", "rep3")
    unusable["times"]["window_s"] = 0  # analysis refuses it (a window of 0 s); the runner wrote it: done
    journal = Journal(tmp_path).open()
    for line in (good, unusable):
        journal.append(line)
    assert [c.key for c in journal.measured_cells()] == [CELL.key]
    assert journal.done_keys() == {CELL.key, unusable["key"]}


def test_a_record_of_another_type_or_an_unknown_one_is_refused_with_the_fix() -> None:
    with pytest.raises(DataFileError, match="'type' is 'cell', not 'restored'.*unedited journal"):
        RestoredRecord.from_json(_cell_line(), "j:1")
    with pytest.raises(DataFileError, match="'type' is 'bogus'; expected one of cell, cell-error"):
        record_from_json({"schema": SCHEMA, "type": "bogus"}, "j:1")
    with pytest.raises(DataFileError, match="'key' is 3, not a string"):
        CellSkippedRecord.from_json({"schema": SCHEMA, "type": "cell-skipped", "key": 3}, "j:1")


def test_analysis_reports_a_bad_skipped_record_and_keeps_the_rest(tmp_path: Path) -> None:
    """A damaged line is a problem naming it; the journal's other records still count."""
    journal = tmp_path / "journal.ndjson"
    good = _cell_line()
    bad = {"schema": SCHEMA, "type": "cell-skipped", "run_id": "r1", "key": ["x"], "reason": "no driver"}
    journal.write_text("\n".join(_dumps(r) for r in (good, bad)) + "\n")
    rows, _, problems, _ = read_journal_rows(journal)
    assert [r["key"] for r in rows] == [CELL.key]
    assert [p.source for p in problems] == [f"{journal}:2"] and "'key' is ['x'], not a string" in problems[0].reason


def test_the_journal_writes_a_typed_record_as_its_json_and_reads_it_back_equal(tmp_path: Path) -> None:
    built = _built(CELL, "fio3_randread_bs4k_qd1.json")
    typed, plain = Journal(tmp_path / "typed").open(), Journal(tmp_path / "plain").open()
    for rec in built:
        typed.append(rec)
        plain.append(rec.to_json())
    assert typed.path.read_bytes() == plain.path.read_bytes()
    assert [record_from_json(r, "j") for r in typed.records()] == built


# --- a suite's run record and a point on many guests (SuiteInfo, PointInfo, ClientPart) -------------------

POINT = SuitePoint(UNKNOWN_DISK, Workload("randread-4k-qd8", "randread", 4096, 8), 1)
SUITE_RUN = {"suite": "proto", "executor": "fio-server", "points": 4,
             "guests": [{"name": "g1", "host": "10.0.0.1", "port": 8765}, {"name": "g2", "host": "10.0.0.2", "port": 8765}],
             "host_collector": {"mode": "ssh", "ssh": "root@node", "ssh_dir": "/tmp/smx", "ssh_config": "",
                                "processes": 2, "roles": ["vcpu"], "detail": "ssh root@node (copied)"},
             "vms": [{"vmid": 101, "name": "g1", "pid": 4242, "address": "10.0.0.1"},
                     {"vmid": 102, "name": "g2", "pid": 4243, "address": "10.0.0.2"}],
             "storage": {"kind": "iscsi", "server": "tgtd", "volumes": ["v1", "v2"], "urls": ["iscsi://x/1"],
                         "pid": 77, "port": 3260, "target": "iqn.2026-11.stormatrix:t"}}


def _suite_built() -> list[Any]:
    """A suite's run record, a point's cell record and a failed point's error, as the runner builds them from
    the suite source's fields and the fio-server executor's record (the keys and order it journals)."""
    doc = json.loads((DATA / "fio" / "fio3_randread_bs4k_qd1.json").read_text())
    fio = records.summarize(WorkloadResult(engine="fio", raw="", data=doc), POINT)
    clients = [{"name": g["name"], "host": g["host"], "port": 8765, "fio": fio,
                "window": {"start_ms": 1764280000000 + i, "end_ms": 1764280010000, "last_sample_ms": 1764280009900,
                           "samples": 10}} for i, g in enumerate(SUITE_RUN["guests"])]
    point = {"vm": ["g1", "g2"], "times": {"window_offset_s": -0.2}, "clients": clients, "fio_all_clients": fio,
             "aggregate_check": {"clients": 2, "fio_all_clients": True, "match": True, "rule": "sums equal",
                                 "read": {"sum_io_bytes": 1}, "total": {"sum_io_bytes": 1}},
             "skew": {"source": "iops logs", "clients_dated": 2, "start_skew_s": 0.01, "end_skew_s": 0.02,
                      "first_start_ms": 1764280000000, "last_start_ms": 1764280000001, "overlap_s": 9.9},
             "controller": {"returncode": 0, "timed_out": False, "elapsed_s": 12.5, "user_s": 0.1, "system_s": 0.2,
                            "cpu_s": 0.3, "max_rss_kib": 20480},
             "noise": ["<g1> hostname=g1"], "raw": {"engine": "fio", "fio_json": "{}", "stderr": ""}}
    result = WorkloadResult(engine="fio", raw="{}", data={}, guest={"fio": "fio-3.33", "guests": 2},
                            window_source="timed", record=point)
    times = {"started": "2026-11-27T22:00:00+00:00", "window_s": 10.0}
    lost = GuestDisconnected("g2 dropped out", cell=POINT.key, guests=["g2"], partial=[clients[0]])
    return [records.run_record(run_id="s1", matrix_path="s.toml", matrix={"suite": {}}, backend="proxmox", side="A",
                               environment={}, original_config=None, cells=4, todo=4, order="rounds", seed=7,
                               extra=json.loads(json.dumps(SUITE_RUN))),
            records.cell_record(run_id="s1", cell=POINT, backend="proxmox", side="A", vm="g1, g2", times=times,
                                fio=fio, host=None, result=result, rate=None, cross=None, fields={"suite": "proto"}),
            records.error_record(run_id="s1", cell=POINT, stage="run", attempt=1, exc=lost, side="A")]


def test_a_suite_run_and_point_are_typed_and_journaled_key_for_key_as_before() -> None:
    run, point, error = _suite_built()
    assert list(run.to_json()) == ["schema", "type", "run_id", "started", "matrix_path", "matrix", "backend", "side",
                                   "environment", "original_config", "cells", "todo", "order", "seed", *SUITE_RUN]
    assert run.rest == {} and run.kind == "suite" and (run.order, run.seed) == ("rounds", 7)
    info = run.suite_info
    assert info is not None and info.guest_names() == ["g1", "g2"] and info.guests and info.guests[1].host == "10.0.0.2"
    assert info.host_collector and info.host_collector.ssh == "root@node" and info.vms and info.vms[1].pid == 4243
    assert info.storage and info.storage.target == "iqn.2026-11.stormatrix:t" and info.points == 4
    assert list(point.to_json())[-7:] == ["overlap", "fio_all_clients", "aggregate_check", "skew", "controller", "noise",
                                          "suite"]
    assert point.rest == {} and point.point_info and point.point_info.suite == "proto"
    assert point.point_info.skew and point.point_info.skew.start_skew_s == 0.01
    assert point.point_info.controller and point.point_info.controller.returncode == 0
    assert point.clients and point.clients[1].window and point.clients[1].window.samples == 10
    assert point.clients[0].fio and point.clients[0].fio.total and point.clients[0].fio.total.io_bytes
    assert error.partial_clients and [c.name for c in error.partial_clients] == ["g1"]
    assert list(error.partial_clients[0].to_json()) == ["name", "fio"]
    for rec in (run, point, error):
        line = json.loads(_dumps(rec.to_json()))
        again = record_from_json(line, "journal.ndjson:1")
        assert again == rec and _dumps(again.to_json()) == _dumps(line)
    matrix_run = _built(CELL, "fio3_randread_bs4k_qd1.json")[0]
    assert matrix_run.kind == "matrix" and matrix_run.suite_info is None  # even with order and seed
    assert RunRecord.from_json({**line_of(run), "suite": ""}, "j:1").kind == "suite"  # a suite named ""


def line_of(rec: Any) -> dict[str, Any]:
    return dict(json.loads(_dumps(rec.to_json())))


def test_a_suite_records_unknown_keys_are_kept_where_they_were() -> None:
    """A key this version does not type (a newer stormatrix's, a collector's own) stays, in its place."""
    run, point, _ = _suite_built()
    line = line_of(run)
    items = list(line.items())
    line = dict(items[:14] + [("future", {"x": 1})] + items[14:])  # between seed and suite
    line["storage"]["lun"] = 3
    line["guests"][0]["mac"] = "52:54:00:00:00:01"
    rec = RunRecord.from_json(line, "j:1")
    assert rec.rest == {"future": {"x": 1}} and rec.suite_info and rec.suite_info.storage
    assert rec.suite_info.storage.rest == {"lun": 3} and rec.suite_info.guests
    assert rec.suite_info.guests[0].rest == {"mac": "52:54:00:00:00:01"}
    assert _dumps(rec.to_json()) == _dumps(line)
    cell = line_of(point)
    cell["skew"]["clock"] = "ntp"
    cell["clients"][1]["extra"] = True
    assert _dumps(CellRecord.from_json(cell, "j:2").to_json()) == _dumps(cell)


def _set(path: str, value: Any) -> Any:
    """An edit of one key (dotted; ``name[i]`` indexes a list) of a record line."""
    def edit(line: dict[str, Any]) -> None:
        node: Any = line
        parts = path.replace("[", ".").replace("]", "").split(".")
        for part in parts[:-1]:
            node = node[int(part)] if part.isdigit() else node[part]
        node[parts[-1]] = value
    return edit


@pytest.mark.parametrize("which, edit, problem", [
    (0, _set("guests.1.port", "8765"), "'guests[1].port' is '8765', not an integer"),
    (0, _set("guests", "g1,g2"), "'guests' is 'g1,g2', not a list"),
    (0, _set("guests", ["g1"]), "'guests[0]' is 'g1', not an object"),
    (0, _set("host_collector", "ssh"), "'host_collector' is 'ssh', not an object"),
    (0, _set("vms.0.vmid", "101"), "'vms[0].vmid' is '101', not an integer"),
    (0, _set("points", 4.5), "'points' is 4.5, not an integer"),
    (0, _set("seed", "7"), "'seed' is '7', not an integer"),
    (0, _set("suite", 3), "'suite' is 3, not a string"),
    (1, _set("clients.0.fio.total.iops", "fast"), "'clients[0].fio.total.iops' is 'fast', not a number"),
    (1, _set("clients.1.window", 5), "'clients[1].window' is 5, not an object"),
    (1, _set("skew.start_skew_s", "soon"), "'skew.start_skew_s' is 'soon', not a number"),
    (1, _set("controller.returncode", "0"), "'controller.returncode' is '0', not an integer"),
    (1, _set("noise", "x"), "'noise' is 'x', not a list"),
    (1, _set("fio_all_clients", []), "'fio_all_clients' is [], not an object"),
    (2, _set("partial_clients.0.name", 2), "'partial_clients[0].name' is 2, not a string"),
])
def test_a_bad_suite_value_is_refused_naming_the_line_key_and_fix(which: int, edit: Any, problem: str) -> None:
    line = line_of(_suite_built()[which])
    edit(line)
    with pytest.raises(DataFileError) as caught:
        record_from_json(line, "runs/A/journal.ndjson:3")
    assert caught.value.path == "runs/A/journal.ndjson:3" and problem in caught.value.problem
    assert "unedited journal" in caught.value.fix


# --- records are built in records.py only, of the named types; an executor adds only its own keys -------

ROOT = paths.ROOT


def record_literals(folder: Path) -> list[str]:
    """``file:line`` of every dict literal whose ``"type"`` is a record type, outside records.py."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        if path.name == "records.py" and path.parent.name == "harness":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Dict):
                for key, value in zip(node.keys, node.values):
                    if (isinstance(key, ast.Constant) and key.value == "type" and isinstance(value, ast.Constant)
                            and value.value in RECORD_TYPES):
                        found.append(f"{path.relative_to(folder.parent)}:{node.lineno}")
    return found


def test_records_are_built_in_records_py_only() -> None:
    assert record_literals(ROOT / "harness") == []


def test_the_scan_finds_a_record_built_elsewhere(tmp_path: Path) -> None:
    (tmp_path / "harness").mkdir()
    (tmp_path / "harness" / "runner.py").write_text('rec = {"type": "restored", "run_id": "x"}\n')
    assert record_literals(tmp_path / "harness") == ["harness/runner.py:1"]


def test_every_builder_writes_a_known_type() -> None:
    cell = Cell(DiskConfig("sata", "threads", False, "none"), Workload("w", "randread", 4096, 1), 1)
    built = [records.run_record(run_id="r", matrix_path="m.toml", matrix={}, backend="qemu", side=None,
                                environment={}, original_config=None, cells=1, todo=1),
             records.skipped_record(run_id="r", cell=cell, side=None, reason="no driver", drivers={}),
             records.restored_record(run_id="r", backend="qemu")]
    assert [r.to_json()["type"] for r in built] == [RUN, CELL_SKIPPED, RESTORED]
    assert built[1].key == cell.key and "readiness" not in built[1].to_json()


def test_an_executor_sets_only_its_own_record_keys() -> None:
    WorkloadResult(engine="fio", raw="", data={}, record={"clients": [], "times": {"window_offset_s": 0.1}})
    with pytest.raises(ValueError, match="per_mib"):
        WorkloadResult(engine="fio", raw="", data={}, record={"per_mib": {}, "skew": {}})
    assert "per_mib" not in EXECUTOR_RECORD_KEYS and "host" not in EXECUTOR_RECORD_KEYS


def _cpuset_line() -> dict[str, Any]:
    """A cell record whose host block is a CPU set's (issue 33): the set's figures, the process's beside them."""
    line = _cell_line()
    process = dict(line["host"])
    line["host"] = {**process, "scope": "cpus", "cpus": "1", "cpu_total": process["cpu_total"] + 0.8,
                    "ctx_switches": 15000.0, "cpu_total_source": "/proc/stat: the set's busy time",
                    "process": process,
                    "leak": {"outside_cpus": "0", "interrupts": {"40": {"name": "nvme0q1", "outside": 3, "on_set": 97}},
                             "softirqs": {"BLOCK": {"outside": 0, "on_set": 50}},
                             "io_interrupts": {"outside": 3, "on_set": 97}, "io_softirqs": {"outside": 0, "on_set": 50}},
                    "on_set": [{"pid": 777, "comm": "intruder", "cpu_s": 0.5, "threads": 1}],
                    "cpu_stat": {"user": 3.0, "idle": 0.0}}
    return line


def test_a_cpu_set_host_block_reads_back_typed_and_is_written_as_it_was() -> None:
    line = _cpuset_line()
    rec = CellRecord.from_json(line, "j:3")
    host = rec.host
    assert host is not None and host.measured_cpus and host.cpus == "1"
    assert host.process is not None and host.process.cpu_total == line["host"]["process"]["cpu_total"]
    assert host.process.scope == line["host"]["process"]["scope"] and not host.process.given("leak")
    assert host.leak is not None and host.leak.escaped_share() == pytest.approx(3 / 100)
    assert host.leak.escaped_share("io_softirqs") == 0
    assert host.on_set is not None and host.on_set[0].comm == "intruder" and host.on_set[0].rest == {"threads": 1}
    assert rec.to_json() == line and CellRecord.from_json(rec.to_json(), "again") == rec
    assert "process" not in _cell_line()["host"]  # a process-scope record has none of the set's keys


@pytest.mark.parametrize("edit, key", [
    (lambda h: h["on_set"][0].update(pid="x"), "'host.on_set[0].pid' is 'x', not an integer"),
    (lambda h: h["leak"].update(interrupts=[1]), "'host.leak.interrupts' is [1], not an object"),
    (lambda h: h["process"].update(cpu_total="a lot"), "'host.process.cpu_total' is 'a lot', not a number"),
])
def test_a_bad_cpu_set_block_is_refused_naming_the_key(edit: Any, key: str) -> None:
    line = _cpuset_line()
    edit(line["host"])
    with pytest.raises(DataFileError) as caught:
        CellRecord.from_json(line, "run/journal.ndjson:7")
    assert key in caught.value.problem
