"""Repeats until the answer is stable: ``[run] cv_limit_pct``, ``max_repeats``,
``time_budget_minutes``, through the real runner with the in-process stand-ins (the agent stand-in as
the guest, a VM stand-in that keeps its config, a collector whose CPU per window the test scripts).

The expected CVs are worked out here from the scripted values (sample standard deviation / mean),
not taken from the code under test.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

import pytest

from standins.agent import FakeCollector, FakeVmBackend

from stormatrix.cli import main
from stormatrix.core.errors import MatrixError
from stormatrix.journal import read_journal
from stormatrix.runner import Runner
from stormatrix.runsource import RunOptions, RunSummary
from stormatrix.registry import spec_from_dict

# CPU seconds the host "spends" in each successive window, per controller
CPU: dict[str, list[float]] = {}


def matrix(**run: Any) -> dict[str, Any]:
    # extra repeats by CV alone (tests/harness/test_runner_verdicts.py: the open-verdict ones)
    return {"run": {"name": "rep", "ramp_seconds": 0, "measure_seconds": 1, "repeat_policy": "cv", **run},
            "matrix": {"controllers": ["virtio-blk", "sata"], "aio": ["io_uring"], "cache": ["none"]},
            "workload": [{"name": "w", "rw": "randread", "bs": "4k"}]}


def run_matrix(tmp_path: Path, raw: dict[str, Any], series: dict[str, list[float]]) -> RunSummary:
    spec = spec_from_dict(raw)
    spec.run["boot_timeout_seconds"] = 1.0
    backend = FakeVmBackend(spec, tmp_path / "run", {})
    left = {k: list(v) for k, v in series.items()}

    class Collector(FakeCollector):
        def stop(self) -> dict[str, Any]:
            host = super().stop()
            host["cpu_total"] = left[backend.config["controller"]].pop(0)
            return host

    return Runner(spec, tmp_path / "run", RunOptions(progress=False, backend=backend, collector_factory=Collector)).run()


def cells(tmp_path: Path) -> list[dict[str, Any]]:
    return [r for r in read_journal(tmp_path / "run" / "journal.ndjson").records if r["type"] == "cell"]


def cv(values: list[float]) -> float:
    return statistics.stdev(values) / statistics.fmean(values) * 100


def test_an_unstable_configuration_gets_extra_repeats_up_to_max_repeats(tmp_path: Path) -> None:
    noisy = [1.0, 2.0, 1.5, 1.5, 9.0]  # CV 47 %, then 33 %, then 27 %: never under 10 %
    summary = run_matrix(tmp_path, matrix(repeats=2, max_repeats=4, cv_limit_pct=10),
                         {"virtio-blk": noisy, "sata": [1.0, 1.0, 1.0]})
    recs = cells(tmp_path)
    keys = [r["key"] for r in recs]
    assert sorted(k for k in keys if k.startswith("sata")) == [f"sata/aio=io_uring/iothread=0/cache=none/w/rep{i}"
                                                               for i in (1, 2)]  # stable: no extra
    vb = [r for r in recs if r["key"].startswith("virtio-blk")]
    assert [r["cell"]["repeat"] for r in vb] == [1, 2, 3, 4]  # capped at max_repeats
    assert all("extra_repeat" not in r for r in recs if r["cell"]["repeat"] <= 2)
    third, fourth = vb[2]["extra_repeat"], vb[3]["extra_repeat"]
    assert third["cv_pct"]["cpu"] == pytest.approx(cv(noisy[:2]))
    assert fourth["cv_pct"]["cpu"] == pytest.approx(cv(noisy[:3]))
    assert third["after_repeats"] == 2 and fourth["after_repeats"] == 3
    assert "cpu per MiB" in third["reason"] and "cv_limit_pct = 10" in third["reason"]
    assert third["cv_pct"]["ctx"] == pytest.approx(0.0)  # the ctx count is the same every window
    assert summary.extra_repeats == [r["key"] for r in vb[2:]]


def test_a_stable_configuration_stops_as_soon_as_its_cv_is_under_the_limit(tmp_path: Path) -> None:
    run_matrix(tmp_path, matrix(repeats=2, max_repeats=6, cv_limit_pct=15),
               {"virtio-blk": [1.0, 1.5, 1.25, 1.25, 1.25, 1.25], "sata": [1.0, 1.0]})
    vb = [r for r in cells(tmp_path) if r["key"].startswith("virtio-blk")]
    reps = [r["cell"]["repeat"] for r in vb]
    # stop at the first n whose CV is <= 15 %, worked out independently here
    series = [1.0, 1.5, 1.25, 1.25, 1.25, 1.25]
    want = next(n for n in range(2, 7) if cv(series[:n]) <= 15)
    assert reps == list(range(1, want + 1)) and want < 6


def test_one_planned_repeat_gets_a_second_to_judge_the_cv(tmp_path: Path) -> None:
    run_matrix(tmp_path, matrix(repeats=1, max_repeats=2), {"virtio-blk": [1.0, 1.0], "sata": [1.0, 1.0]})
    recs = cells(tmp_path)
    assert sorted(r["key"].rsplit("/", 1)[1] for r in recs) == ["rep1", "rep1", "rep2", "rep2"]
    assert all("single measured repeat" in r["extra_repeat"]["reason"] for r in recs if r["cell"]["repeat"] == 2)


def test_resume_continues_the_extra_repeats_from_the_journal(tmp_path: Path) -> None:
    noisy = [1.0, 2.0, 1.5, 1.5]
    run_matrix(tmp_path, matrix(repeats=2, max_repeats=3), {"virtio-blk": noisy[:3], "sata": [1.0, 1.0]})
    assert len(cells(tmp_path)) == 5
    # the same run directory, a higher max_repeats: only virtio-blk's rep4 is left to do
    summary = run_matrix(tmp_path, matrix(repeats=2, max_repeats=4), {"virtio-blk": noisy[3:], "sata": []})
    assert summary.measured_keys == ["virtio-blk/aio=io_uring/iothread=0/cache=none/w/rep4"]
    last = cells(tmp_path)[-1]
    assert last["extra_repeat"]["cv_pct"]["cpu"] == pytest.approx(cv(noisy[:3]))
    # and once more: nothing is owed, nothing runs
    again = run_matrix(tmp_path, matrix(repeats=2, max_repeats=4), {"virtio-blk": [], "sata": []})
    assert again.measured == 0 and len(cells(tmp_path)) == 6


def test_the_time_budget_stops_extra_repeats_and_says_so(tmp_path: Path) -> None:
    summary = run_matrix(tmp_path, matrix(repeats=2, max_repeats=4, time_budget_minutes=0.001),
                         {"virtio-blk": [1.0, 2.0], "sata": [1.0, 1.0]})
    assert len(cells(tmp_path)) == 4  # the planned repeats always run
    assert "time_budget_minutes = 0.001" in summary.extra_not_run


def test_plan_shows_the_possible_extra_repeats_in_the_eta(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    m = tmp_path / "m.toml"
    body = ('[matrix]\ncontrollers = ["virtio-blk", "sata"]\n[[workload]]\nname = "w"\nrw = "randread"\nbs = "4k"\n')
    m.write_text('[run]\nrepeats = 2\nmax_repeats = 5\ncv_limit_pct = 5\n' + body)
    assert main(["plan", "--quiet", str(m)]) == 0
    out = capsys.readouterr().out
    assert "up to 6 more cells (2 configurations x 3)" in out and "cv_limit_pct = 5 %" in out
    m.write_text('[run]\nrepeats = 2\n' + body)
    assert main(["plan", "--quiet", str(m)]) == 0
    assert "extra repeats" not in capsys.readouterr().out


def test_preflight_is_refused_with_a_migration_message() -> None:
    with pytest.raises(MatrixError) as err:
        spec_from_dict(matrix(preflight=True))
    assert "[run] preflight" in str(err.value) and "guest check" in str(err.value)


def test_max_repeats_below_repeats_is_refused() -> None:
    with pytest.raises(MatrixError, match=r"\[run\] max_repeats"):
        spec_from_dict(matrix(repeats=3, max_repeats=2))


# --- Windows guests: virtio with the virtio-win drivers ---------------------

PROXMOX_NINE = ["ide", "sata", "virtio-blk", "virtio-scsi-pci", "virtio-scsi-single", "pvscsi", "megasas", "lsi",
                "lsi53c810"]


def windows(drivers: list[str] | None, backend: str = "proxmox", slot: int = 0) -> dict[str, Any]:
    run: dict[str, Any] = {"name": "win", "guest_os": "windows2022", "backend": backend}
    if drivers is not None:
        run["guest_drivers"] = drivers
    return {"run": run, "matrix": {"controllers": PROXMOX_NINE, "aio": ["native"], "cache": ["none"],
                                   "disk_slot": slot},
            "workload": [{"name": "w", "rw": "randread", "bs": "4k"}]}


def test_a_windows_matrix_with_virtio_win_drivers_plans_all_nine_proxmox_controllers() -> None:
    from stormatrix.cells import expand

    plan = expand(spec_from_dict(windows(["viostor", "vioscsi"])))
    assert {c.disk.controller for c in plan.cells} == set(PROXMOX_NINE) and not plan.skipped
    unverified = [n for n in plan.notes if "unverified" in n]
    assert {n.split(":")[0] for n in unverified} == {"lsi", "lsi53c810", "megasas", "pvscsi"}


def test_without_a_driver_only_its_controllers_are_skipped_naming_the_driver() -> None:
    from stormatrix.cells import expand

    plan = expand(spec_from_dict(windows(["vioscsi"])))
    skipped = {s.disk.controller: s.reason for s in plan.skipped}
    assert set(skipped) == {"virtio-blk"} and "viostor" in skipped["virtio-blk"]
    assert "guest_drivers" in skipped["virtio-blk"]
    # not set: all nine are planned, the guest's facts decide at its first boot (tests/harness/executors/test_winrm_drivers.py)
    plan = expand(spec_from_dict(windows(None)))
    assert {c.disk.controller for c in plan.cells} == set(PROXMOX_NINE) and not plan.skipped


def test_megasas_lun_rule_applies_where_qemu_server_attaches_at_lun_slot() -> None:
    from stormatrix.cells import expand

    raw = windows(None, slot=1)
    raw["run"]["guest_os"] = "linux"
    plan = expand(spec_from_dict(raw))
    assert any(s.disk.controller == "megasas" and "LUN 1" in s.reason for s in plan.skipped)
    win = expand(spec_from_dict(windows(["viostor", "vioscsi"], slot=1)))
    assert any(n.startswith("megasas") and "LUN 1" in n and "unverified" in n for n in win.notes)


def test_windows_on_the_qemu_backend_is_refused_at_plan(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    m = tmp_path / "m.toml"
    m.write_text('[run]\nguest_os = "windows2022"\n[matrix]\ncontrollers = ["sata"]\n'
                 '[[workload]]\nname = "w"\nrw = "randread"\nbs = "4k"\n')
    assert main(["plan", str(m)]) == 2
    err = capsys.readouterr().err
    assert "[run] guest_os" in err and "proxmox" in err


def test_each_cell_records_the_drivers_the_windows_guest_had_bound() -> None:
    from stormatrix.guestdrivers import with_storage_drivers

    facts = {"Controllers": [{"Name": "virtio-scsi", "Service": "vioscsi", "DriverBound": True},
                             {"Name": "virtio-blk", "Service": "", "DriverBound": False}]}
    assert with_storage_drivers(facts)["storage_drivers"] == {"virtio-scsi": "vioscsi"}
    assert "storage_drivers" not in with_storage_drivers({"disk": "vdb"})


# --- Section.check: cross-key checks at matrix-read time ---------------------------------------------

def test_a_section_check_runs_when_the_matrix_is_read() -> None:
    from stormatrix.spec import Field, Section, parse_section

    seen: list[tuple[str, dict[str, Any]]] = []

    def both(path: str, values: dict[str, Any]) -> None:
        seen.append((path, values))
        if values["a"] and values["b"]:
            raise MatrixError(path, "[x] b", "is set together with a", "set one of them")

    sec = Section("x", {"a": Field(str, ""), "b": Field(str, "")}, check=both)
    assert parse_section("m.toml", sec, {"a": "1"}) == {"a": "1", "b": ""}
    assert seen == [("m.toml", {"a": "1", "b": ""})]  # defaults filled in before the check
    with pytest.raises(MatrixError, match=r"\[x\] b"):
        parse_section("m.toml", sec, {"a": "1", "b": "2"})


def test_a_proxmox_section_without_a_token_reference_fails_when_read() -> None:
    from stormatrix.core.errors import InputError

    raw = matrix(backend="proxmox")
    raw["proxmox"] = {"host": "pve1", "node": "pve1", "vmid": 100, "token_id": "bench@pve!t", "test_disk": "scsi1"}
    with pytest.raises(InputError, match="token"):
        spec_from_dict(raw)


# --- bad input ---------------------------------------------------------------

@pytest.mark.parametrize("name", ["", "   ", "rand\nread", "a/b", "tab\there"])
def test_a_workload_name_that_breaks_keys_or_the_plan_table_is_refused(name: str) -> None:
    raw = matrix()
    raw["workload"][0]["name"] = name
    with pytest.raises(MatrixError) as err:
        spec_from_dict(raw)
    assert "workload[1] name" in str(err.value) and "Fix:" in str(err.value)


def test_list_values_and_workloads_are_both_counted_from_1_and_say_so() -> None:
    raw = matrix()
    raw["matrix"]["controllers"] = ["sata", "nosuch"]
    with pytest.raises(MatrixError) as err:
        spec_from_dict(raw)
    assert "[matrix] controllers[2]" in str(err.value) and "counting from 1" in str(err.value)
    raw = matrix()
    raw["workload"].append({"name": "x", "rw": "nosuch", "bs": "4k"})
    with pytest.raises(MatrixError) as err:
        spec_from_dict(raw)
    assert "workload[2] rw" in str(err.value) and "counting from 1" in str(err.value)


@pytest.mark.parametrize("where", ["missing", "dir"])
def test_a_qemu_disk_path_that_is_missing_or_a_directory_exits_2_at_plan(
        where: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "nothing.img" if where == "missing" else tmp_path
    m = tmp_path / "m.toml"
    m.write_text(f'[matrix]\ncontrollers = ["sata"]\n[[workload]]\nname = "w"\nrw = "randread"\nbs = "4k"\n'
                 f'[qemu]\ndisk_path = "{target}"\n')
    assert main(["plan", str(m)]) == 2
    err = capsys.readouterr().err
    assert "[qemu] disk_path" in err and ("does not exist" if where == "missing" else "is a directory") in err
    image = tmp_path / "t.img"
    image.write_bytes(b"\0" * 4096)
    m.write_text(m.read_text().replace(str(target), str(image)))
    assert main(["plan", "--quiet", str(m)]) == 0


# --- misleading messages ---------------------------------------------------------------

def test_restore_on_an_empty_or_qemu_journal_does_not_claim_a_vm_was_put_back(tmp_path: Path) -> None:
    import json

    from stormatrix.commands.restore import restore_run

    (tmp_path / "journal.ndjson").write_text("")
    msg = restore_run(tmp_path)
    assert "put back" not in msg and "no run record" in msg
    (tmp_path / "journal.ndjson").write_text(json.dumps({"type": "run", "run_id": "r", "backend": "qemu",
                                                         "original_config": None}) + "\n")
    msg = restore_run(tmp_path)
    assert "put back" not in msg and "backend qemu" in msg


def test_a_binary_journal_is_named_as_binary_not_as_one_bad_line(tmp_path: Path) -> None:
    from stormatrix.core.errors import DataFileError

    (tmp_path / "journal.ndjson").write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 4)
    with pytest.raises(DataFileError) as err:
        read_journal(tmp_path / "journal.ndjson")
    assert "binary" in str(err.value) and "delete line" not in str(err.value)


def test_every_damaged_journal_line_is_named_and_a_torn_last_line_is_skipped(tmp_path: Path) -> None:
    from stormatrix.core.errors import DataFileError

    path = tmp_path / "journal.ndjson"
    path.write_text('{"type": "run"}\nnot json\n{"type": "cell"}\n[1, 2]\n{"type": "cell", "ke')
    with pytest.raises(DataFileError) as err:
        read_journal(path)
    assert "lines 2, 4 are" in str(err.value) and "other 2 records" in str(err.value)
    path.write_text('{"type": "run"}\n{"type": "cell"}\n{"type": "cell", "ke')
    res = read_journal(path)
    assert res.torn_tail and [r["type"] for r in res.records] == ["run", "cell"]


def test_a_matrix_with_a_utf8_byte_order_mark_is_refused_naming_the_bom(tmp_path: Path) -> None:
    from stormatrix.registry import load_spec

    m = tmp_path / "m.toml"
    m.write_bytes(b"\xef\xbb\xbf" + b'[matrix]\ncontrollers = ["sata"]\n[[workload]]\nname = "w"\nrw = "read"\nbs = "4k"\n')
    with pytest.raises(MatrixError) as err:
        load_spec(m)
    assert "byte-order mark" in str(err.value) and "without BOM" in str(err.value)


def test_help_texts_say_what_the_commands_do() -> None:
    import subprocess
    import sys

    def helptext(*args: str) -> str:
        return subprocess.run([sys.executable, "-m", "stormatrix", *args, "--help"], capture_output=True,
                              text=True, check=True).stdout

    assert "``" not in helptext("restore")
    demo = helptext("demo")
    assert "20 min" not in demo and "17 min" in demo
    assert demo.split("--no-progress")[-1].strip()  # the option has a help line
    for sub in ("plan", "run"):
        text = helptext("suite", sub)
        assert text.split("\n\n")[1].strip() and not text.split("\n\n")[1].startswith("positional")


def test_progress_shows_the_possible_extra_repeats_beside_the_eta() -> None:
    import io

    from stormatrix.progress import Progress

    out = io.StringIO()
    p = Progress(2, 10.0, out, extra_max=3)
    p.update("starting")
    assert "ETA 20s (up to 50s with 3 extra repeats)" in out.getvalue()
    p.add(3)  # scheduled: they join the total
    p.update("x")
    assert p.total == 5 and "extra repeats" not in out.getvalue().splitlines()[-1]


def test_a_bound_virtio_win_driver_the_matrix_does_not_list_is_named_once(caplog: pytest.LogCaptureFixture) -> None:
    import logging

    from stormatrix.guestdrivers import DriverGate

    gate = DriverGate.for_spec(spec_from_dict(windows(["viostor"])))
    assert gate is not None and gate.declared == {"viostor"}
    guest = {"Controllers": [{"Name": "virtio-scsi", "Service": "vioscsi", "DriverBound": True},
                             {"Name": "virtio-blk", "Service": "viostor", "DriverBound": True},
                             {"Name": "sata", "Service": "storahci", "DriverBound": True}]}
    with caplog.at_level(logging.WARNING, logger="stormatrix.runner"):
        gate.learn(guest, "k1")
        gate.learn(guest, "k2")
    warned = [r.getMessage() for r in caplog.records if "guest_drivers" in r.getMessage()]
    assert len(warned) == 1 and '"vioscsi"' in warned[0] and "viostor" not in warned[0].split("add")[1]
