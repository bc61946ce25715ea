"""The journal survives kills mid-write: a torn last line is reported and cut, never glued on."""

from __future__ import annotations

import json
import logging
from typing import Any
from pathlib import Path

import pytest

from stormatrix.core.errors import DataFileError
from stormatrix.core.recordtypes import CellRecord, RunRecord
from stormatrix.journal import Journal, read_journal
import paths


def _cell(key: str, **extra: Any) -> dict[str, Any]:
    """A cell line with the keys every cell record has (the type's required ones), and ``extra``."""
    return {"type": "cell", "run_id": "r", "key": key,
            "cell": {"disk": {"controller": "sata"}, "workload": {"rw": "read", "bs": 4096, "iodepth": 1}, "repeat": 1},
            "times": {}, "fio": {"total": {}}, **extra}


def test_append_read_and_done_keys(tmp_path: Path) -> None:
    j = Journal(tmp_path).open()
    j.append({"type": "run", "run_id": "r"})
    j.append(_cell("a"))
    j.append({"type": "cell-error", "run_id": "r", "key": "b", "cell": {}, "stage": "ready", "time": "t",
              "error": {}})
    j.append(_cell("c", value=float("nan")))
    assert j.done_keys() == {"a", "c"}
    lines = (tmp_path / "journal.ndjson").read_text().splitlines()
    assert len(lines) == 4 and all(json.loads(x)["schema"] == "stormatrix/record-1" for x in lines)
    assert json.loads(lines[3])["value"] is None  # NaN is not JSON: stored as null


def test_torn_tail_is_discarded_with_a_message_then_cut(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    j = Journal(tmp_path).open()
    j.append({"type": "cell", "key": "a"})
    with open(j.path, "ab") as fh:
        fh.write(b'{"type": "cell", "key": "torn", "fio": {"read"')  # killed mid-write
    with caplog.at_level(logging.WARNING):
        res = read_journal(j.path)
    assert res.torn_tail and [r["key"] for r in res.records] == ["a"]
    assert "torn last line" in caplog.text
    j2 = Journal(tmp_path).open()  # a resumed run cuts the torn line before appending
    j2.append({"type": "cell", "key": "b"})
    assert [r["key"] for r in j2.records()] == ["a", "b"]
    assert j.path.read_bytes().count(b"torn") == 0


def test_corrupt_middle_line_is_an_error_naming_the_line(tmp_path: Path) -> None:
    p = tmp_path / "journal.ndjson"
    p.write_text('{"type": "cell", "key": "a"}\nnot json\n{"type": "cell", "key": "b"}\n')
    with pytest.raises(DataFileError, match="line 2"):
        read_journal(p)


# --- a DiskSpd cell journals like a fio cell ---------------------------------------------------------

DISKSPD_XML = paths.DATA / "diskspd" / "diskspd_randrw70_8k_qd16_t2.xml"


def test_a_diskspd_cell_is_journaled_with_its_engine(tmp_path: Path) -> None:
    """The WinRM executor returns engine="diskspd" with DiskSpd's -Rxml document: the runner summarises
    by the result's engine (through the analysis DiskSpd parser), not as fio output."""
    import xml.etree.ElementTree as ET
    from typing import Any

    from stormatrix.analysis.read.diskspd import parse_diskspd_xml
    from stormatrix.analysis.read.ingest import ingest
    from stormatrix.backends.base import Backend, GuestEndpoint, HostScope
    from stormatrix.core.model import DiskConfig
    from stormatrix.executors.base import GuestExecutor, WorkloadResult
    from stormatrix.runner import Runner
    from stormatrix.runsource import RunOptions
    from stormatrix.registry import spec_from_dict

    xml = DISKSPD_XML.read_text()
    row = parse_diskspd_xml(xml)

    class Guest(GuestExecutor):
        name = "winrm"

        def wait_ready(self, deadline: float) -> dict[str, Any]:
            return {"disk": "PhysicalDrive1"}

        def run(self, cell: Any, timing: Any, window: Any) -> WorkloadResult:
            window.measure_started()
            window.measure_ended()
            return WorkloadResult(engine="diskspd", raw=xml, data={"Results": ET.fromstring(xml).tag},
                                  window_source="timed")

    class Vm(Backend):
        name = "proxmox"
        controllers = frozenset({"sata"})

        def _prepare(self) -> dict[str, Any]:
            return {}

        def _apply(self, disk: DiskConfig) -> None: ...

        def _stop(self) -> None: ...

        def _restore(self) -> None: ...

        def scope(self) -> list[HostScope]:
            return [HostScope(pid=1, vm="win")]

        def endpoints(self) -> list[GuestEndpoint]:
            return [GuestEndpoint("tcp", "127.0.0.1", 5985, "win")]

    class Host:
        def __init__(self, scope: Any) -> None: ...

        def start(self) -> None: ...

        def stop(self) -> dict[str, Any]:
            return {"cpu_metric": "cpu_time", "cpu_unit": "s", "cpu_total": 0.5, "ctx_switches": 1000}

    spec = spec_from_dict({"run": {"name": "dspd", "ramp_seconds": 0, "measure_seconds": 1, "retries": 0,
                                   "on_error": "stop"},
                           "matrix": {"controllers": ["sata"]},
                           "workload": [{"name": "randrw70-8k", "rw": "randrw", "bs": "8k", "iodepth": 16,
                                         "rwmixread": 70}]}, "dspd.toml")
    runner = Runner(spec, tmp_path / "run", RunOptions(progress=False, backend=Vm(spec, tmp_path / "run"),
                               executor_factory=lambda endpoints: Guest(endpoints), collector_factory=Host))
    summary = runner.run()
    assert summary.measured == 1 and not summary.failed
    cell = next(r for r in Journal(tmp_path / "run").records() if r["type"] == "cell")
    assert cell["engine"] == "diskspd" and cell["raw"]["engine"] == "diskspd" and cell["raw"]["output"] == xml
    assert cell["fio"]["total"]["io_bytes"] == row["io_bytes"] and cell["fio"]["total"]["total_ios"] == row["total_ios"]
    assert cell["fio"]["read"]["total_ios"] + cell["fio"]["write"]["total_ios"] == row["total_ios"]
    assert cell["per_mib"]["ctx"] == pytest.approx(1000 / row["mib"])
    frame = ingest([str(tmp_path / "run")]).frame
    assert len(frame) == 1 and frame["io_bytes"].iloc[0] == row["io_bytes"]


# --- resuming: only into the same run's journal (docs/journal.md, "Resuming") ---------------------------

def _matrix(**run: Any) -> dict[str, Any]:
    return {"run": {"name": "same", "ramp_seconds": 0, "measure_seconds": 1, **run},
            "matrix": {"controllers": ["virtio-blk"], "aio": ["io_uring"], "cache": ["none"]},
            "workload": [{"name": "w", "rw": "randread", "bs": "4k"}]}


def _run(run_dir: Path, raw: dict[str, Any], side: str | None = None) -> Any:
    from standins.agent import FakeCollector, FakeVmBackend

    from stormatrix.runner import Runner
    from stormatrix.runsource import RunOptions
    from stormatrix.registry import spec_from_dict

    spec = spec_from_dict(raw)
    spec.run["boot_timeout_seconds"] = 1.0
    return Runner(spec, run_dir, RunOptions(side=side, progress=False, backend=FakeVmBackend(spec, run_dir, {}),
                             collector_factory=FakeCollector)).run()


def _with(raw: dict[str, Any], section: str, **keys: Any) -> dict[str, Any]:
    out = json.loads(json.dumps(raw))
    if section == "workload":
        out["workload"][0].update(keys)
    else:
        out.setdefault(section, {}).update(keys)
    return out


@pytest.mark.parametrize("section, keys, named", [
    ("run", {"name": "other"}, "[run] name"),
    ("matrix", {"controllers": ["sata"]}, "[matrix] controllers"),
    ("workload", {"bs": "64k"}, "workload[1] bs"),
    ("run", {"measure_seconds": 2}, "[run] measure_seconds"),
    ("qemu", {"vcpus": 2}, "[qemu] vcpus"),
])
def test_resuming_into_another_matrix_journal_is_refused_and_appends_nothing(
        tmp_path: Path, section: str, keys: dict[str, Any], named: str) -> None:
    from stormatrix.core.errors import MatrixError

    run_dir = tmp_path / "run"
    assert _run(run_dir, _matrix()).measured == 1
    with open(run_dir / "journal.ndjson", "ab") as fh:
        fh.write(b'{"type": "cell", "key": "torn", "fio": {')  # that run was killed mid-write
    before = (run_dir / "journal.ndjson").read_bytes()
    with pytest.raises(MatrixError) as exc:
        _run(run_dir, _with(_matrix(), section, **keys))
    text = str(exc.value)
    assert named in text and str(run_dir) in text and "new run directory" in text and "another run" in text
    assert (run_dir / "journal.ndjson").read_bytes() == before  # not a record appended, not its torn tail cut


def test_resuming_with_more_repeats_or_other_credentials_is_the_same_run(tmp_path: Path) -> None:
    """How many repeats and how the machines are reached may change; defaults written out are no change."""
    run_dir = tmp_path / "run"
    _run(run_dir, _matrix())
    more = _with(_with(_matrix(repeats=2, retries=3, ramp_seconds=0.0), "qemu", boot_ahead=False, vcpus=1),
                 "workload", iodepth=1)
    summary = _run(run_dir, more)
    assert summary.already_done == 1 and summary.measured == 1
    keys = [r["key"] for r in read_journal(run_dir / "journal.ndjson").records if r["type"] == "cell"]
    assert len(keys) == 2 and keys[0].endswith("rep1") and keys[1].endswith("rep2")


def test_resuming_as_another_side_is_refused(tmp_path: Path) -> None:
    from stormatrix.core.errors import MatrixError

    run_dir = tmp_path / "run"
    _run(run_dir, _matrix(), side="Proxmox VE 8.2")
    with pytest.raises(MatrixError, match="side 'Proxmox VE 8.2'.*--side"):
        _run(run_dir, _matrix(repeats=2), side="iSCSI")
    assert _run(run_dir, _matrix(repeats=2), side="Proxmox VE 8.2").measured == 1


def test_run_command_refuses_another_matrix_journal_with_exit_2(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """Through the CLI: exit 2, the matrix file and the differing key named, the journal unchanged."""
    from stormatrix.cli import main

    run_dir = tmp_path / "run"
    _run(run_dir, _matrix())
    before = (run_dir / "journal.ndjson").read_bytes()
    m = tmp_path / "other.toml"
    m.write_text('[run]\nname = "other"\n[matrix]\ncontrollers = ["virtio-blk"]\n'
                 '[[workload]]\nname = "w"\nrw = "randread"\nbs = "4k"\n')
    assert main(["run", str(m), "-o", str(run_dir), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert str(m) in err and '[run] name: was "same", now "other"' in err and "Traceback" not in err
    assert (run_dir / "journal.ndjson").read_bytes() == before


def test_a_suite_journal_and_a_matrix_journal_do_not_mix(tmp_path: Path) -> None:
    from stormatrix.core.errors import MatrixError
    from stormatrix.resume import check_same_run
    from stormatrix.registry import spec_from_dict

    spec = spec_from_dict(_matrix())
    suite_rec = RunRecord.from_json({"type": "run", "run_id": "s1", "suite": "", "side": None, "matrix": {}},
                                    "j:1")  # even a suite named ""
    matrix_rec = RunRecord.from_json({"type": "run", "run_id": "m1", "side": None, "matrix": spec.raw}, "j:1")
    with pytest.raises(MatrixError, match="suite run's journal, this is a matrix run"):
        check_same_run([suite_rec], spec, tmp_path, side=None, kind="matrix")
    with pytest.raises(MatrixError, match="matrix run's journal, this is a suite run"):
        check_same_run([matrix_rec], spec, tmp_path, side=None, kind="suite")
    cell = CellRecord.read(_cell("k"), "j:2")
    check_same_run([matrix_rec, cell], spec, tmp_path, side=None, kind="matrix")  # the same run
