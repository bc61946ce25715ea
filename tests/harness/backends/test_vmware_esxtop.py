"""esxtop batch output: the parser (stormatrix.analysis.read.esxtop) on captures in the real format
(tests/data/esxtop, see make_fixtures.py there), with results computed by hand, malformed captures,
and the vmware backend's esxtop collector against a stand-in ``ssh`` (defined at the bottom of this
file) that enforces what the collector must send; vSphere is the fake PowerCLI (test_vmware_pwsh.FakeVCenter)
with the real module on the PowerShell engine.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from stormatrix.analysis.read.esxtop import UNMATCHED, parse_esxtop, read_esxtop, vm_cpu_record, vsphere_escaped
from stormatrix.core.errors import CollectorError, DataFileError, MatrixError
from stormatrix.executors.base import GuestExecutor, WorkloadResult
import paths

sys.path.insert(0, str(Path(__file__).resolve().parent))

DATA = paths.DATA / "esxtop"
GOOD = DATA / "esx01_two_vms_d5.csv"
ONE = DATA / "esx01_one_sample_d2.csv"
BAD = DATA / "malformed"
BENCH_USED = [150, 180, 170, 160, 190, 150]  # bench01's % Used per row in GOOD (make_fixtures.py)


def good_text() -> str:
    return GOOD.read_text()


# --- the format ----------------------------------------------------------------------------------------------

def test_fixtures_are_what_the_generator_writes(tmp_path: Path) -> None:
    """The committed captures are reproducible from make_fixtures.py (nobody edited them by hand)."""
    import importlib.util
    import shutil

    copy = tmp_path / "esxtop"
    shutil.copytree(DATA, copy)
    spec = importlib.util.spec_from_file_location("make_fixtures", copy / "make_fixtures.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main()
    for path in sorted(DATA.rglob("*.csv")):
        assert (copy / path.relative_to(DATA)).read_bytes() == path.read_bytes(), path.name


def test_header_hosts_groups_and_times() -> None:
    cap = read_esxtop(GOOD)
    assert cap.host == "esx01.lab" and cap.timezone == "UTC" and cap.bias_minutes == 0
    assert cap.groups() == [("1", "system"), ("2", "idle"), ("51234", "bench01"), ("60511", "db 01 (prod)")]
    assert cap.times[0] == datetime(2026, 11, 22, 3, 12, 5, tzinfo=timezone.utc)
    assert cap.times[-1] == datetime(2026, 11, 22, 3, 12, 30, tzinfo=timezone.utc)
    assert cap.lines == [2, 3, 4, 5, 6, 7]
    col = cap.column("Group Cpu", "60511:db 01 (prod)", "% Used")
    assert col is not None and col.name == "\\\\esx01.lab\\Group Cpu(60511:db 01 (prod))\\% Used"
    assert cap.values(col) == [40.0, 60.0, 50.0, None, 70.0, 30.0]
    mem = cap.column("Memory", None, "Machine MBytes")
    assert mem is not None and cap.values(mem) == [524288.0] * 6
    assert cap.column("Physical Cpu Load", None, "Cpu Load (1 Minute Avg)") is not None


def test_bench01_over_the_whole_capture_by_hand() -> None:
    """6 rows 03:12:05 .. 03:12:30 -> interval (30 - 5) / 5 = 5.0 s (the gaps 5,6,5,4,5 jitter).
    %USED sum 1000 -> 1000/100 x 5 = 50.0 s; %RUN 940 -> 47.0; %SYS 75 -> 3.75; %OVRLP 15 -> 0.75;
    %RDY 6.0 -> 0.3; %CSTP 0.2 -> 0.01; %WAIT 3770 -> 188.5; switches 13800/s x 5 = 69000.
    Host: %Util Time mean of 30,34,32,31,35,30 = 32.0; %Processor Time 28,32,30,29,33,28 -> 30.0."""
    host = vm_cpu_record(read_esxtop(GOOD), "bench01", delay_s=5)
    assert host["cpu_metric"] == "cpu_time" and host["cpu_unit"] == "s" and host["source"] == "esxtop"
    assert host["cpu_total"] == pytest.approx(50.0, abs=1e-9)
    assert host["cpu_time_s"] == {"total": host["cpu_total"], "user": None, "system": None}
    assert host["window_s"] == pytest.approx(30.0, abs=1e-9)
    v = host["vmware"]
    expected = {"vm_used_s": 50.0, "vm_run_s": 47.0, "vm_system_s": 3.75, "vm_overlap_s": 0.75, "vm_ready_s": 0.3,
                "vm_costop_s": 0.01, "vm_wait_s": 188.5, "vm_world_switches": 69000.0, "interval_s": 5.0,
                "covered_s": 30.0, "coverage": 1.0, "host_util_pct_avg": 32.0, "host_processor_pct_avg": 30.0}
    for key, value in expected.items():
        assert v[key] == pytest.approx(value, abs=1e-9), key
    assert v["vm_used_s"] == pytest.approx(v["vm_run_s"] + v["vm_system_s"] - v["vm_overlap_s"], abs=1e-9)
    assert v["host_core_util_pct_avg"] is None  # no hyperthreading on this host: the counter is absent
    assert v["vm_group"] == "51234:bench01" and v["vm_worlds"] == 8 and v["host"] == "esx01.lab"
    assert v["samples"] == 6 and v["samples_total"] == 6 and v["prorated"] is False and v["empty_cells"] == {}
    assert v["first_sample_end"] == "2026-11-22T03:12:05Z" and v["last_sample_end"] == "2026-11-22T03:12:30Z"


def test_what_esxtop_does_not_have_is_absent_with_a_reason_never_zero() -> None:
    host = vm_cpu_record(read_esxtop(GOOD), "bench01")
    for key in ("ctx_switches", "ctx_voluntary", "ctx_involuntary", "cycles", "cpu_user", "cpu_system"):
        assert host[key] is None, key
    for key in ("ctx_switches", "cycles", "cpu_user", "cpu_system", "threads", "cpu_total"):
        assert host["unmatched"][key] == UNMATCHED[key] and len(UNMATCHED[key]) > 30
    assert host["threads"] == [] and host["by_role"] == {}


def test_same_keys_as_the_linux_collector_and_the_vsphere_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from test_vmware_pwsh import FakeVCenter, runner

    linux_keys = {"cpu_metric", "cpu_unit", "cpu_total", "cpu_user", "cpu_system", "cpu_time_s", "cycles",
                  "ctx_switches", "ctx_voluntary", "ctx_involuntary", "source", "scope", "pid", "window_s",
                  "threads", "by_role", "split_approximate"}
    host = vm_cpu_record(read_esxtop(GOOD), "bench01")
    assert linux_keys <= set(host)
    lab = FakeVCenter(tmp_path, monkeypatch)  # the vSphere record from the real module (fake PowerCLI)
    lab.add_cpu_samples(datetime(2026, 11, 22, 3, 12, 15, tzinfo=timezone.utc))
    vsphere = runner().call("Get-StormatrixVMwareCpuUsage", {"VMName": "bench01", "Start": "2026-11-22T03:12:00.000Z",
                                                             "Finish": "2026-11-22T03:12:30.000Z", "WaitSeconds": 0})
    assert set(vsphere) - {"vmware"} == set(host) - {"vmware"}


def test_vm_name_with_spaces_and_parentheses_and_an_empty_row_is_prorated() -> None:
    """db 01 (prod): %USED 40, 60, 50, (empty), 70, 30 -> 250/100 x 5 = 12.5 s over 25 s of the 30 s
    window -> 12.5 x 30 / 25 = 15.0 s, coverage 25/30, its other counters empty in that row too."""
    host = vm_cpu_record(read_esxtop(GOOD), "db 01 (prod)")
    v = host["vmware"]
    assert host["cpu_total"] == pytest.approx(15.0, abs=1e-9)
    assert v["vm_used_s"] == pytest.approx(12.5, abs=1e-9)
    assert v["covered_s"] == pytest.approx(25.0) and v["coverage"] == pytest.approx(25 / 30)
    assert v["prorated"] is True and v["samples"] == 5 and v["vm_worlds"] == 6
    assert v["vm_ready_s"] == pytest.approx((0.4 + 0.6 + 0.5 + 0.7 + 0.3) / 100 * 5, abs=1e-12)
    assert v["empty_cells"]["% Used"] == 1 and v["empty_cells"]["% Ready"] == 1
    assert v["vm_group"] == "60511:db 01 (prod)"


@pytest.mark.parametrize("offset, window, used, prorated", [
    # window [0, 27]: rows 0-4 whole (25 s), row 5 (25..30) for 2 s: 42.5 + 1.5 x 2 = 45.5
    (0.0, 27.0, 45.5, False),
    # window [3, 23]: row0 2 s, rows 1-3 whole, row4 (20..25) 3 s, row5 none:
    # 1.5x2 + 1.8x5 + 1.7x5 + 1.6x5 + 1.9x3 = 3 + 9 + 8.5 + 8 + 5.7 = 34.2
    (3.0, 20.0, 34.2, False),
    # window [0, 40] is longer than the 30 s capture: 50 s over 30 covered -> 50 x 40/30
    (0.0, 40.0, 50.0 * 40 / 30, True),
])
def test_rows_count_with_the_part_of_their_interval_inside_the_window(offset: float, window: float, used: float,
                                                                      prorated: bool) -> None:
    host = vm_cpu_record(read_esxtop(GOOD), "bench01", window_s=window, offset_s=offset)
    assert host["cpu_total"] == pytest.approx(used, abs=1e-9)
    assert host["window_s"] == pytest.approx(window)
    assert host["vmware"]["prorated"] is prorated


def test_one_row_needs_the_delay() -> None:
    """One iteration with -d 2: %USED 150 -> 1.5 x 2 = 3.0 s; without -d the covered time is unknown."""
    cap = read_esxtop(ONE)
    host = vm_cpu_record(cap, "bench01", delay_s=2)
    assert host["cpu_total"] == pytest.approx(3.0) and host["vmware"]["interval_s"] == 2.0
    with pytest.raises(DataFileError, match=r"one sample row and no delay.*Fix: give esxtop's -d value"):
        vm_cpu_record(cap, "bench01")


def test_time_zone_bias_and_crlf_and_a_bom_are_read() -> None:
    """perfmon's convention: UTC = local time + bias minutes (esxtop always writes (UTC)(0))."""
    text = "\ufeff" + good_text().replace("(PDH-CSV 4.0) (UTC)(0)", "(PDH-CSV 4.0) (Pacific Standard Time)(480)")
    cap = parse_esxtop(text.replace("\n", "\r\n"), "crlf.csv")
    assert cap.timezone == "Pacific Standard Time"
    assert cap.times[0] == datetime(2026, 11, 22, 11, 12, 5, tzinfo=timezone.utc)
    assert vm_cpu_record(cap, "bench01")["cpu_total"] == pytest.approx(50.0)


def test_vsphere_escaped_names_match() -> None:
    assert vsphere_escaped("a/b%c\\d") == "a%2fb%25c%5cd"
    text = good_text().replace("db 01 (prod)", "db%2f01 (prod)")
    assert vm_cpu_record(parse_esxtop(text, "x.csv"), "db/01 (prod)")["cpu_total"] == pytest.approx(15.0)


# --- malformed captures: a clear message naming the file, line and column, and the fix ---------------------

@pytest.mark.parametrize("name, vm, expected", [
    ("truncated_row.csv", "bench01", r"truncated_row\.csv: line 7 is cut off in column \d+ of 59 .*Fix: .*delete line 7"),
    ("wrong_header.csv", "bench01", r"wrong_header\.csv: line 1, column 1 is 'MetricId': this is not esxtop batch "
                                    r"output.*Fix: capture it again .*esxtop -b -d"),
    ("non_numeric_cell.csv", "bench01", r"non_numeric_cell\.csv: line 4, column 31 "
                                        r"\(\\\\esx01\.lab\\Group Cpu\(51234:bench01\)\\% Used\): 'n/a' is not a number"
                                        r".*Fix: "),
    ("two_captures.csv", "bench01", r"two_captures\.csv: line 8, column 1: '11/22/2026 03:12:05' is not later than "
                                    r"the row before it \(line 7\).*Fix: keep one esxtop run per file"),
    ("../esx01_two_vms_d5.csv", "bench02", r"esx01_two_vms_d5\.csv: VM 'bench02' has no Group Cpu columns \(the capture "
                                           r"holds the groups 'bench01', 'db 01 \(prod\)', 'idle', 'system'\)"
                                           r".*Fix: give the VM's name exactly"),
])
def test_malformed_capture_names_file_line_column_and_fix(name: str, vm: str, expected: str) -> None:
    with pytest.raises(DataFileError, match=expected) as info:
        vm_cpu_record(read_esxtop(BAD / name), vm)
    assert info.value.exit_code == 2


def _edit(line: int, **replace: str) -> str:
    lines = good_text().splitlines()
    for old, new in replace.items():
        lines[line - 1] = lines[line - 1].replace(old, new)
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("text, expected", [
    # a row with whole cells but fewer of them than the header
    ("\n".join(good_text().splitlines()[:-1] + [",".join(good_text().splitlines()[-1].split(",")[:20])]) + "\n",
     r"bad\.csv: line 7 has 20 cells, the header has 59 \(the row is cut off"),
    ("", r"bad\.csv: is empty"),
    (good_text().splitlines()[0] + "\n", r"has the header but no sample rows"),
    (_edit(1, **{"\\Group Cpu(51234:bench01)\\% Used": "Group Cpu(51234:bench01)% Used"}),
     r"line 1, column 31: .* is not a counter name"),
    (_edit(3, **{'"11/22/2026 03:12:10"': '"2026-11-22T03:12:10Z"'}), r"line 3, column 1: .* is not a sample time"),
    (_edit(2, **{'"150.00"': '"-150.00"'}), r"line 2, column 31 .*'-150.00' is a negative percentage"),
    (_edit(2, **{'"150.00"': '"nan"'}), r"line 2, column 31 .*'nan' is not a number"),
    (good_text().replace("Group Cpu(51234:bench01)\\% Idle", "Group Cpu(51234:bench01)\\% Used", 1),
     r"columns 31, 37 all name .*% Used.*Fix: keep one esxtop run per file"),
    (good_text().replace("Group Cpu(51234:bench01)\\% Used", "Group Cpu(51234:bench01)\\% Usage"),
     r"has no '% Used' column for VM 'bench01'.*Fix: run esxtop -b without -c"),
    (good_text().replace("\\\\esx01.lab\\Memory\\Machine", "\\\\esx02.lab\\Memory\\Machine"),
     r"the header names several hosts \(esx01\.lab, esx02\.lab\)"),
], ids=["short-row", "empty", "header-only", "bad-counter-name", "bad-time", "negative", "nan", "duplicate-column",
        "no-used-column", "two-hosts"])
def test_more_malformed_inputs(text: str, expected: str) -> None:
    with pytest.raises(DataFileError, match=expected):
        vm_cpu_record(parse_esxtop(text, "bad.csv"), "bench01")


def test_a_duplicated_vm_name_is_ambiguous() -> None:
    text = good_text().replace("60511:db 01 (prod)", "60511:bench01")
    with pytest.raises(DataFileError, match=r"matches several CPU groups \(51234:bench01, 60511:bench01\)"):
        vm_cpu_record(parse_esxtop(text, "x.csv"), "bench01")


def test_an_empty_cell_elsewhere_and_a_non_numeric_counter_we_do_not_read_are_fine() -> None:
    """Virtual Disk Commands/sec is empty in row 2 and Memctl? is Y/N: neither is read for the record."""
    cap = read_esxtop(GOOD)
    disk = cap.column("Virtual Disk", "bench01:scsi1:0", "Commands/sec")
    assert disk is not None and cap.values(disk)[1] is None
    assert vm_cpu_record(cap, "bench01")["cpu_total"] == pytest.approx(50.0)


def test_unreadable_files_are_clear(tmp_path: Path) -> None:
    with pytest.raises(DataFileError, match="cannot be read"):
        read_esxtop(tmp_path / "missing.csv")
    gz = tmp_path / "c.csv.gz"
    gz.write_bytes(b"\x1f\x8b\x08\x00binary")
    with pytest.raises(DataFileError, match="not text"):
        read_esxtop(gz)
    latin = tmp_path / "l.csv"
    latin.write_bytes(good_text().replace("bench01", "b\u00e9nch01").encode("latin-1"))
    with pytest.raises(DataFileError, match="not UTF-8"):
        read_esxtop(latin)


# --- the esxtop collector of the vmware backend, against a stand-in ssh ---------------------------------------

def test_vmware_section_checks_the_esxtop_settings(tmp_path: Path) -> None:
    from stormatrix.backends.vmware import backend as vm
    from stormatrix.registry import spec_from_dict
    from test_vmware_pwsh import matrix

    with pytest.raises(MatrixError, match=r"esxtop_ssh.*is empty.*Fix: set esxtop_ssh"):
        vm.VmwareBackend(spec_from_dict(matrix(host_cpu_source="esxtop")), tmp_path)
    for bad in ("-oProxyCommand=touch /tmp/x", "root@esx01.lab; reboot", "root@"):
        with pytest.raises(MatrixError, match="not an ssh target"):
            spec_from_dict(matrix(host_cpu_source="esxtop", esxtop_ssh=bad))
    with pytest.raises(MatrixError, match="esxtop_delay_seconds"):
        spec_from_dict(matrix(esxtop_delay_seconds=1))
    with pytest.raises(MatrixError, match="host_cpu_source"):
        spec_from_dict(matrix(host_cpu_source="get-esxtop"))
    assert spec_from_dict(matrix()).section("vmware")["host_cpu_source"] == "vsphere"


class EsxLab:
    """The fake vCenter's lab (test_vmware_pwsh.FakeVCenter) plus a stand-in ``ssh`` for the ESXi host."""

    def __init__(self, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        from test_vmware_pwsh import FakeVCenter

        self.vsphere = FakeVCenter(tmp, monkeypatch)
        (tmp / "bin").mkdir(exist_ok=True)
        monkeypatch.setenv("PATH", f"{tmp / 'bin'}:{os.environ.get('PATH', '/usr/bin:/bin')}")
        self.path = tmp / "esxi-ssh.json"
        self.write({"target": "root@esx01.lab", "authorized": True, "vm_running": True,
                    "used": [150.0, 180.0, 170.0, 160.0], "scale": 0.0, "calls": [], "pid": None})
        launcher = tmp / "bin" / "ssh"
        launcher.write_text(f"#!{sys.executable}\nimport sys\nsys.path[:0] = [{str(Path(__file__).parent)!r}, {str(paths.TESTS)!r}]\n"
                            "from test_vmware_esxtop import ssh_main\nsys.exit(ssh_main())\n")
        launcher.chmod(0o755)
        monkeypatch.setenv("STORMATRIX_FAKE_ESXI_SSH", str(self.path))

    def read(self) -> dict[str, Any]:
        return json.loads(self.path.read_text())

    def write(self, state: dict[str, Any]) -> None:
        write_state(self.path, state)

    def set(self, **over: Any) -> None:
        self.write({**self.read(), **over})


@pytest.fixture()
def esx(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> EsxLab:
    return EsxLab(tmp_path, monkeypatch)


@pytest.fixture()
def esx_backend(esx: EsxLab, tmp_path: Path) -> Iterator[Any]:
    from stormatrix.backends.vmware import backend as vm
    from stormatrix.registry import spec_from_dict
    from test_vmware_pwsh import matrix

    raw = matrix(host_cpu_source="esxtop", esxtop_ssh="root@esx01.lab", esxtop_delay_seconds=5)
    raw["run"]["measure_seconds"] = 10
    b = vm.VmwareBackend(spec_from_dict(raw), tmp_path / "run")
    yield b
    b.close()


def fixed_clock(*times: float) -> Any:
    it = iter(times)
    return lambda: next(it)


def test_esxtop_collector_measures_the_window_over_ssh(esx: EsxLab, esx_backend: Any, tmp_path: Path) -> None:
    """measure 10 s, -d 5: 10/5 + 1 = 3 iterations; %USED 150, 180, 170: the window [0, 10] holds the
    first two rows -> 1.5 x 5 + 1.8 x 5 = 16.5 s; the third (past the window's end) counts 0."""
    from stormatrix.backends.vmware.backend import EsxtopCollector
    from stormatrix.core.model import DiskConfig

    esx_backend.prepare()
    esx_backend.apply(DiskConfig.controller_only("pvscsi"))
    (scope,) = esx_backend.scope()
    collector = esx_backend.collector_factory(scope)
    assert isinstance(collector, EsxtopCollector)
    collector.clock = fixed_clock(100.0, 110.0)
    collector.start()
    host = collector.stop()
    assert esx.read()["calls"] == [["-o", "BatchMode=yes", "-o", "ConnectTimeout=10", "root@esx01.lab", "--",
                                    "esxtop -b -d 5 -n 3"]]
    assert host["cpu_total"] == pytest.approx(16.5, abs=1e-9) and host["window_s"] == pytest.approx(10.0)
    assert host["source"] == "esxtop" and host["ctx_switches"] is None and "ctx_switches" in host["unmatched"]
    v = host["vmware"]
    assert v["samples"] == 2 and v["samples_total"] == 3 and v["iterations"] == 3 and v["prorated"] is False
    assert v["vm_run_s"] == pytest.approx((140 + 170) / 100 * 5) and v["host_util_pct_avg"] == pytest.approx(25.0)
    assert v["tuning_in_force"] == {"VMHost": "esx01.lab", "Device": "naa.600a", "SchedNumReqOutstanding": 1024,
                                    "LatencySensitiveThreshold": 10}
    capture = tmp_path / "run" / v["capture"]
    assert v["capture"].startswith("esxtop/") and v["capture"].endswith("-bench01.csv") and capture.is_file()
    assert read_esxtop(capture).groups()[-1] == ("70001", "bench01")  # the raw capture is kept as evidence


def test_a_refused_key_login_is_a_collector_error_with_the_fix(esx: EsxLab, esx_backend: Any) -> None:
    esx.set(authorized=False)
    esx_backend.prepare()
    collector = esx_backend.collector_factory(esx_backend.scope()[0])
    collector.start()
    with pytest.raises(CollectorError, match=r"exited 255: root@esx01\.lab: Permission denied \(publickey.*Fix: start "
                                             r"the SSH service on the host \(TSM-SSH\).*authorized_keys"):
        collector.stop()


def test_a_vm_missing_from_the_capture_names_the_file_and_the_fix(esx: EsxLab, esx_backend: Any) -> None:
    esx.set(vm_running=False)  # powered off when esxtop started: batch mode has no group for it
    esx_backend.prepare()
    collector = esx_backend.collector_factory(esx_backend.scope()[0])
    collector.start()
    with pytest.raises(CollectorError, match=r"esxtop capture: .*esxtop/.*-bench01\.csv: VM 'bench01' has no Group Cpu "
                                             r"columns.*Fix: "):
        collector.stop()


def test_a_capture_that_covers_too_little_of_the_window_is_refused(esx: EsxLab, esx_backend: Any) -> None:
    """3 iterations of 5 s cannot cover a 40 s window (the fio run took far longer than planned)."""
    esx_backend.prepare()
    collector = esx_backend.collector_factory(esx_backend.scope()[0])
    collector.clock = fixed_clock(0.0, 40.0)
    collector.start()
    with pytest.raises(CollectorError, match=r"covers 38% of the 40\.0 s window \(minimum 80%\)"):
        collector.stop()


def test_abort_stops_a_running_esxtop(esx: EsxLab, esx_backend: Any) -> None:
    esx.set(scale=1.0)  # the stand-in sleeps like esxtop: 3 x 5 s
    esx_backend.prepare()
    collector = esx_backend.collector_factory(esx_backend.scope()[0])
    collector.start()
    proc = collector.proc
    deadline = time.monotonic() + 20
    while esx.read()["pid"] is None and time.monotonic() < deadline:
        time.sleep(0.05)
    t0 = time.monotonic()
    collector.abort()
    # a relation, not a speed: the stand-in's capture runs 3 x 5 s, and abort ends it well before that
    assert time.monotonic() - t0 < 15 and proc is not None and proc.poll() is not None
    assert collector.proc is None


# --- the stand-in ssh -----------------------------------------------------------------------------------------

def write_state(path: Path, state: dict[str, Any]) -> None:
    """Replace the stand-in's state at once: the test polls it while the stand-in ssh writes it, and a read
    between a plain write's truncate and its text found an empty file (JSONDecodeError, seen under load)."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(state))
    os.replace(tmp, path)


def ssh_main(argv: list[str] | None = None) -> int:
    """``ssh`` to an ESXi host whose esxtop writes batch output for the configured VM.

    Enforces what the collector must do: BatchMode=yes (a key login or nothing, never a password
    prompt), the configured destination, and exactly ``esxtop -b -d <int >= 2> -n <int >= 1>`` as the
    remote command. Rows are written one per iteration (sleeping ``scale`` x the delay), with UTC times.
    """
    argv = sys.argv[1:] if argv is None else argv
    path = Path(os.environ["STORMATRIX_FAKE_ESXI_SSH"])
    state = json.loads(path.read_text())
    state["calls"].append(argv)
    state["pid"] = os.getpid()
    write_state(path, state)
    if argv[:4] != ["-o", "BatchMode=yes", "-o", "ConnectTimeout=10"] or len(argv) < 6 or argv[5] != "--":
        sys.stderr.write(f"stand-in ssh: expected -o BatchMode=yes -o ConnectTimeout=10 <dest> -- ..., got {argv!r}\n")
        return 98
    if argv[4] != state["target"]:
        sys.stderr.write(f"ssh: Could not resolve hostname {argv[4]}: Name or service not known\n")
        return 255
    if not state["authorized"]:
        sys.stderr.write(f"{argv[4]}: Permission denied (publickey,keyboard-interactive).\n")
        return 255
    remote = shlex.split(" ".join(argv[6:]))  # ssh joins the words; the host's login shell splits them again
    ok = len(remote) == 6 and remote[:3] == ["esxtop", "-b", "-d"] and remote[4] == "-n" \
        and remote[3].isdigit() and int(remote[3]) >= 2 and remote[5].isdigit() and int(remote[5]) >= 1
    if not ok:
        sys.stderr.write(f"esxtop: invalid arguments {remote!r}\n")
        return 1
    delay, iterations = int(remote[3]), int(remote[5])
    names = ["\\\\esx01.lab\\Physical Cpu(_Total)\\% Util Time", "\\\\esx01.lab\\Group Cpu(1:system)\\% Used"]
    counters = ["Members", "% Used", "% Run", "% System", "% Overlap", "% Ready"]
    if state["vm_running"]:
        names += [f"\\\\esx01.lab\\Group Cpu(70001:bench01)\\{c}" for c in counters]
    out = sys.stdout
    out.write(",".join(f'"{n}"' for n in ["(PDH-CSV 4.0) (UTC)(0)"] + names) + "\n")
    out.flush()
    start = datetime.now(timezone.utc).replace(microsecond=0)
    for i in range(iterations):
        time.sleep(delay * state["scale"])
        used = state["used"][i % len(state["used"])]
        cells = [(start + timedelta(seconds=delay * (i + 1))).strftime("%m/%d/%Y %H:%M:%S"), "25.00", "9.00"]
        if state["vm_running"]:
            cells += ["8", f"{used:.2f}", f"{used - 10:.2f}", "12.00", "2.00", "1.00"]
        out.write(",".join(f'"{c}"' for c in cells) + "\n")
        out.flush()
    return 0


# --- a whole run: the real runner, the vmware backend, esxtop over the stand-in ssh ----------------------------

FIO_OUTPUT = (paths.DATA / "fio" / "fio3_randread_bs4k_qd1.json").read_text()


class WindowExecutor(GuestExecutor):
    """The guest: opens and closes the measurement window around a captured fio result (a GuestExecutor,
    as every registered executor is: the runner asks its class for its capabilities)."""

    name = "fio-server"

    def connect(self, deadline: float) -> None:
        pass

    def check_ready(self, cell: Any) -> None:
        pass

    def wait_ready(self, deadline: float) -> dict[str, Any]:
        return {"disk": "/dev/sdb", "signature": "none"}

    def run(self, cell: Any, timing: Any, window: Any) -> Any:
        from stormatrix.analysis.read.fio import parse_fio_json

        window.measure_started()
        window.measure_ended()
        return WorkloadResult(engine="fio", raw=FIO_OUTPUT, data=parse_fio_json(FIO_OUTPUT), window_source="timed")

    def close(self) -> None:
        pass


def test_a_run_journals_esxtop_host_records(esx: EsxLab, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            use_executor: Callable[[str, str], None]) -> None:
    from stormatrix.journal import Journal
    from stormatrix.runner import Runner
    from stormatrix.runsource import RunOptions
    from stormatrix.registry import spec_from_dict
    from test_vmware_pwsh import PASSWORD, matrix

    use_executor("fio-server", "test_vmware_esxtop:WindowExecutor")
    raw = matrix(["pvscsi", "nvme"], host_cpu_source="esxtop", esxtop_ssh="root@esx01.lab", esxtop_delay_seconds=2)
    raw["run"].update(measure_seconds=4, ramp_seconds=0, order="grouped")  # cells in matrix order
    before = esx.vsphere.layout()
    summary = Runner(spec_from_dict(raw), tmp_path / "run", RunOptions(progress=False)).run()
    assert summary.measured == 2 and summary.failed == []
    assert esx.vsphere.layout() == before
    cells = [r for r in Journal(tmp_path / "run").records() if r["type"] == "cell"]
    assert [c["cell"]["disk"]["controller"] for c in cells] == ["pvscsi", "nvme"]
    # ESXi has no aio, iothread or cache: null in the journal, and the key is the controller alone
    assert [c["key"] for c in cells] == ["pvscsi/r/rep1", "nvme/r/rep1"]
    assert all((c["cell"]["disk"]["aio"], c["cell"]["disk"]["iothread"], c["cell"]["disk"]["cache"]) ==
               (None, None, None) for c in cells)
    for cell in cells:
        host = cell["host"]
        assert host["source"] == "esxtop" and host["ctx_switches"] is None and host["cpu_total"] > 0
        assert host["vmware"]["tuning_in_force"]["SchedNumReqOutstanding"] == 1024
        assert (tmp_path / "run" / host["vmware"]["capture"]).is_file()
        assert cell["per_mib"]["cpu_unit"] == "CPU-ms/MiB" and cell["per_mib"]["ctx"] is None
    assert len(esx.read()["calls"]) == 2 and all(c[-1].endswith(" -n 3") for c in esx.read()["calls"])
    assert not [p for p in (tmp_path / "run").rglob("*") if p.is_file() and PASSWORD in p.read_text(errors="replace")]


def test_report_reads_an_esxi_run(esx: EsxLab, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                  use_executor: Callable[[str, str], None]) -> None:
    """What docs/esxi.md ("Reports and comparisons of an ESXi run") promises, on a run the backend journaled:
    ctx columns blank with the collector's reason, the score on CPU/MiB alone, and compare against a side
    with context-switch counts keeping the CPU comparison and leaving ctx blank with a note."""
    import csv

    import openpyxl

    from stormatrix.analysis.read.ingest import ingest
    from stormatrix.cli import main
    from stormatrix.journal import Journal
    from stormatrix.runner import Runner
    from stormatrix.runsource import RunOptions
    from stormatrix.registry import spec_from_dict
    from test_vmware_pwsh import matrix

    use_executor("fio-server", "test_vmware_esxtop:WindowExecutor")
    raw = matrix(["pvscsi", "nvme"], host_cpu_source="esxtop", esxtop_ssh="root@esx01.lab", esxtop_delay_seconds=2)
    raw["run"].update(measure_seconds=4, ramp_seconds=0, order="grouped")  # cells in matrix order
    Runner(spec_from_dict(raw), tmp_path / "run", RunOptions(progress=False)).run()
    data = ingest([str(tmp_path / "run")], strict=True)
    assert len(data.frame) == 2 and (data.frame["cpu_per_mib"] > 0).all()

    reason = UNMATCHED["ctx_switches"]
    out = tmp_path / "esx.xlsx"
    assert main(["report", str(tmp_path / "run"), "-o", str(out)]) == 0
    wb = openpyxl.load_workbook(out)

    def rows(ws: Any) -> list[dict[str, Any]]:
        head = [c.value for c in ws[1]]
        return [dict(zip(head, r)) for r in ws.iter_rows(min_row=2, values_only=True)]

    scores = rows(wb["Scores"])
    assert len(scores) == 2
    # no aio, iothread or cache ESXi does not have: the configuration is the controller alone
    assert sorted(s["Configuration"] for s in scores) == ["nvme", "pvscsi"]
    assert {(s["aio"], s["iothread"], s["cache"]) for s in scores} == {("n/a", None, "n/a")}
    assert sorted(m["key"] for m in rows(wb["Measurements"])) == ["nvme/r/rep1", "pvscsi/r/rep1"]
    for s in scores:
        for blank in ("ctx/MiB mean", "ctx/MiB std", "ctx/MiB CV", "Normalized ctx", "Rank by ctx"):
            assert s[blank] is None, blank                                     # blank, never 0
        assert s["ctx/MiB note"] == reason
        assert s["Score basis"] == "CPU/MiB alone: no configuration in this group has context-switch counts"
        assert s["Efficiency score"] == pytest.approx(s["Normalized CPU"], abs=1e-12)
    for m in rows(wb["Measurements"]):
        assert m["ctx_per_mib"] is None and m["ctx_switches"] is None and m["ctx_note"] == reason
    with open(out.with_suffix(".csv"), newline="") as fh:
        tidy = list(csv.DictReader(fh))
    assert [r["ctx_per_mib"] for r in tidy] == ["", ""] and {r["ctx_note"] for r in tidy} == {reason}
    summary = " ".join(str(c.value) for row in wb["Summary"].iter_rows() for c in row if c.value)
    assert "The efficiency scores rest on CPU/MiB alone" in summary

    # the same cells as a QEMU host would journal them, with 2 context switches per KiB: B of a compare
    qemu = tmp_path / "qemu"
    qemu.mkdir()
    lines = []
    for rec in Journal(tmp_path / "run").records():
        if rec["type"] == "cell":
            rec["backend"] = "qemu"
            rec["cell"]["disk"].update(controller="virtio-scsi-single", bus="scsi", scsihw="virtio-scsi-single",
                                       aio="io_uring", iothread=False, cache="none")   # QEMU disks have them
            rec["host"].pop("unmatched")
            rec["host"]["ctx_switches"] = rec["per_mib"]["mib"] * 2048
            rec["per_mib"]["ctx"] = 2048.0
            rec["per_mib"]["cpu"] /= 2
        lines.append(json.dumps(rec) + "\n")
    (qemu / "journal.ndjson").write_text("".join(lines))
    cmp_out = tmp_path / "cmp.xlsx"
    assert main(["compare", str(tmp_path / "run"), str(qemu), "--label-a", "esx", "--label-b", "pve",
                 "-o", str(cmp_out)]) == 0
    cmp_book = openpyxl.load_workbook(cmp_out)
    assert {(m["side"], m["aio"]) for m in rows(cmp_book["Measurements"])} == {("esx", "n/a"), ("pve", "io_uring")}
    (point,) = rows(cmp_book["Comparison"])
    assert point["Host CPU/MiB reduction %"] == pytest.approx(50.0)            # B's CPU/MiB is half of A's
    assert point["ctx/MiB esx"] is None and point["ctx/MiB reduction %"] is None
    assert point["ctx/MiB pve"] == pytest.approx(2048.0)
    assert "esx has no context-switch counts" in point["Host metrics note"]
