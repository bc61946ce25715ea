"""The host collector measures a real process's window: CPU time, context switches, per-thread roles."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from stormatrix.host import collector, perfrun, procfs
from stormatrix.host import perfstat
from stormatrix.host.collector import WindowCollector
import paths

DATA = paths.DATA / "perf"

# A child that burns CPU in one thread and switches context often in another.
BUSY = r"""
import ctypes, threading, time
def name(n):  # PR_SET_NAME, so /proc/<pid>/task/<tid>/comm shows it (as QEMU names its threads)
    ctypes.CDLL("libc.so.6").prctl(15, n.encode(), 0, 0, 0)
def spin():
    name("spin")
    end = time.time() + 30
    while time.time() < end:
        sum(range(1000))
def nap():
    name("nap")
    end = time.time() + 30
    while time.time() < end:
        time.sleep(0.001)
threading.Thread(target=spin, name="spin", daemon=True).start()
threading.Thread(target=nap, name="nap", daemon=True).start()
time.sleep(30)
"""


@pytest.fixture
def busy() -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, "-c", BUSY])
    # ready when both threads carry their names: how long the interpreter takes to get there depends on
    # the machine's load, so wait for the state instead of a fixed sleep
    deadline = time.monotonic() + 60
    while not {"spin", "nap"} <= _thread_names(proc.pid):
        assert proc.poll() is None and time.monotonic() < deadline, "the busy child never named its threads"
        time.sleep(0.05)
    yield proc
    proc.kill()
    proc.wait()


def test_parse_perf_csv_real_capture_without_cycles() -> None:
    # captured on this machine: perf stat -x, -e context-switches,cpu-clock,cycles,task-clock sleep 0.1
    text = ("2,,context-switches,949059,100.00,2.113,K/sec\n"
            "0.94,msec,cpu-clock,949059,100.00,0.009,CPUs utilized\n"
            "<not supported>,,cycles,0,100.00,,\n"
            "0.95,msec,task-clock,949059,100.00,0.009,CPUs utilized\n")
    stat = perfstat.parse(text)
    rows = stat.events
    assert rows["context-switches"].value == 2.0
    assert rows["task-clock"].value == 0.95 and rows["task-clock"].unit == "msec"
    assert rows["cycles"].value is None and rows["cycles"].status == "<not supported>"
    assert stat.bad_lines == [] and stat.value("cycles", "task-clock") == 0.95


def test_perfstat_finds_the_value_column_behind_interval_and_thread_columns() -> None:
    # perf stat -x, -I 1000 --per-thread: time, comm-pid, then value,unit,event; summed per event
    text = ("# started on Tue\n"
            "     1.001,qemu-1234,10,,context-switches,1000,100.00,,\n"
            "     1.001,worker-1240,5,,context-switches,1000,100.00,,\n"
            "     2.002,qemu-1234,<not counted>,,context-switches,0,0.00,,\n"
            "     2.002,qemu-1234,3.5,msec,task-clock,1000,100.00,0.1,CPUs utilized\n"
            "this is not perf output\n")
    stat = perfstat.parse(text)
    assert stat.events["context-switches"].value == 15.0
    assert stat.events["context-switches"].not_counted == 1 and stat.events["context-switches"].lines == 3
    assert stat.events["task-clock"].value == 3.5
    assert stat.bad_lines == [6]


@pytest.mark.parametrize("use_perf", [False, True])
def test_window_measures_real_process(busy: subprocess.Popen[bytes], use_perf: bool) -> None:
    if use_perf and not perfrun.perf_available():
        pytest.skip("perf stat cannot count software events on this machine")
    c = WindowCollector(busy.pid, {}, use_perf=use_perf)
    c.start()
    time.sleep(1.5)
    res = c.stop()
    # relations that hold however loaded the machine is (no rates, no upper bounds on time)
    assert res["source"] == ("perf+proc" if use_perf else "proc")
    assert res["cpu_metric"] in ("cycles", "cpu_time")
    assert res["window_s"] >= 1.5  # the window spans at least the sleep inside it
    names = {t["name"] for t in res["threads"]}
    assert {"spin", "nap"} <= names
    spin = next(t for t in res["threads"] if t["name"] == "spin")
    nap = next(t for t in res["threads"] if t["name"] == "nap")
    assert spin["user_s"] + spin["system_s"] > nap["user_s"] + nap["system_s"]  # spinning costs more CPU
    assert nap["ctx_voluntary"] > 0  # every sleep is a voluntary switch
    assert res["ctx_voluntary"] == sum(t["ctx_voluntary"] for t in res["threads"]) > 0
    assert res["ctx_switches"] > 0
    if res["cpu_metric"] == "cpu_time":
        # no more CPU than the window had on every CPU of the machine; some, since a thread spun throughout
        assert 0 < res["cpu_total"] <= res["window_s"] * (os.cpu_count() or 1) + 0.1
    assert res["by_role"]["main-loop"]["threads"] == 1
    # the user/system split is what the kernel measured (utime/stime ticks) or perf's cycles:u/k, never
    # cpu_total cut by a ratio: with perf's task-clock as the total, the two may differ by the ticks' grain
    if res["cpu_metric"] == "cpu_time":
        assert (res["cpu_user"], res["cpu_system"]) == (res["cpu_time_s"]["user"], res["cpu_time_s"]["system"])
        assert res["cpu_split"].startswith("/proc/PID/stat")
        if not use_perf:
            assert res["cpu_user"] + res["cpu_system"] == pytest.approx(res["cpu_total"])
            assert res["cpu_total_source"].startswith("/proc") and "cpu_split_note" not in res
        else:
            assert res["cpu_total_source"] == "perf task-clock (ns)"
            split = res["cpu_user"] + res["cpu_system"]
            # the note is there exactly when the two readings of the process's CPU differ by more than 3 %
            assert ("cpu_split_note" in res) == (abs(split / res["cpu_total"] - 1) > collector.SPLIT_TOLERANCE)
    else:
        assert (res["cpu_user"], res["cpu_system"]) == (res["cycles"]["user"], res["cycles"]["kernel"])
    assert "null_reasons" not in res  # this kernel has schedstat and the status counters


def test_split_note_says_which_accounting_agrees() -> None:
    """user + system 10 % above the task-clock: the threads' ns run time decides what the gap is."""
    assert collector.split_note(2.0, 1.5, 0.5, [1.0, 1.0]) is None                    # equal: nothing to say
    assert collector.split_note(2.0, 1.52, 0.5, [2.02]) is None                       # 1 % apart: within 3 %
    missed = collector.split_note(2.0, 1.7, 0.5, [1.6, 0.6])                          # threads ran 2.2 s
    assert missed is not None and "10.0 % above perf's task-clock" in missed
    assert "nearer user + system" in missed and "not tick granularity" in missed
    ticks = collector.split_note(2.0, 1.7, 0.5, [1.5, 0.5])                           # threads ran 2.0 s
    assert ticks is not None and "nearer the task-clock" in ticks and "granularity" in ticks
    unknown = collector.split_note(2.0, 1.7, 0.5, [1.5, None])                        # a thread without schedstat
    assert unknown is not None and "schedstat" not in unknown


def test_vanished_process_is_a_clear_error() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    with pytest.raises(procfs.CollectorProblem, match="gone"):
        WindowCollector(proc.pid, {}, use_perf=False).start()


def test_every_host_collector_satisfies_the_one_protocol() -> None:
    """The local, the many-process, the remote (multicollector over ssh) and the ESXi collectors all have
    HostCollector's methods with its signatures: the runner needs nothing else of them."""
    import inspect

    from stormatrix.backends.vmware.backend import EsxtopCollector, VmwareCpuCollector
    from stormatrix.collect import HostCollector, ProcessesCollector, RemoteProcessesCollector

    for cls in (WindowCollector, ProcessesCollector, RemoteProcessesCollector, VmwareCpuCollector, EsxtopCollector):
        for name in ("start", "stop", "abort"):
            want = inspect.signature(getattr(HostCollector, name))
            have = inspect.signature(getattr(cls, name))
            assert list(have.parameters) == list(want.parameters), (cls.__name__, name, have)


def test_merge_hosts_is_the_identity_for_one_and_adds_up_many() -> None:
    from stormatrix.collect import merge_hosts

    def host(pid: int, cpu: float, ctx: int) -> dict[str, object]:
        return {"cpu_metric": "cpu_time", "cpu_total": cpu, "cpu_user": cpu / 2, "cpu_system": cpu / 2,
                "ctx_switches": ctx, "ctx_voluntary": ctx, "ctx_involuntary": 0, "pid": pid, "window_s": 1.0,
                "threads": [{"tid": pid}], "by_role": {"vcpu": {"threads": 1, "user_s": cpu}}}

    one = host(1, 1.0, 10)
    assert merge_hosts([one]) is one and merge_hosts([]) is None and merge_hosts([None, one]) is one
    both = merge_hosts([one, host(2, 3.0, 30)])
    assert both is not None and both["cpu_total"] == 4.0 and both["ctx_switches"] == 40 and both["pid"] == [1, 2]
    assert both["by_role"]["vcpu"] == {"threads": 2, "user_s": 4.0} and both["scope"] == "2 qemu processes"


def test_a_window_closed_at_once_still_has_perfs_counts(busy: subprocess.Popen[bytes]) -> None:
    """The window ends with a SIGINT to perf; start() returns only once perf handles it, so even a window
    closed immediately (a loaded machine, a short window) gets perf's counts instead of a killed perf."""
    if not perfrun.perf_available():
        pytest.skip("perf stat cannot count software events on this machine")
    for _ in range(3):
        c = WindowCollector(busy.pid, {}, use_perf=True)
        c.start()
        res = c.stop()
        assert res["source"] == "perf+proc" and "context-switches" in res["perf"]


def _without(monkeypatch: pytest.MonkeyPatch, tid: int, what: str, line: str | None = None) -> None:
    """Read /proc as a kernel would that lacks ``what`` for thread ``tid``: the file missing (schedstat
    without CONFIG_SCHEDSTATS), or ``status`` without the counter line ``line``."""
    real = procfs._read

    def read(path: str) -> str:
        if path.endswith(f"/task/{tid}/{what}"):
            if line is None:
                raise FileNotFoundError(2, "No such file or directory", path)
            return "".join(x for x in real(path).splitlines(keepends=True) if not x.startswith(line))
        return real(path)

    monkeypatch.setattr(procfs, "_read", read)


def _thread_names(pid: int) -> set[str]:
    names = set()
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            names.add(Path(f"/proc/{pid}/task/{t}/comm").read_text().strip())
        except FileNotFoundError:  # a thread that ended between the listing and the read
            pass
    return names


def _tid_named(pid: int, name: str) -> int:
    for t in os.listdir(f"/proc/{pid}/task"):
        if Path(f"/proc/{pid}/task/{t}/comm").read_text().strip() == name:
            return int(t)
    raise AssertionError(f"no thread {name} in {pid}")


def test_a_thread_without_schedstat_makes_its_run_time_and_its_roles_sum_null_with_the_thread_named(
        busy: subprocess.Popen[bytes], monkeypatch: pytest.MonkeyPatch) -> None:
    nap = _tid_named(busy.pid, "nap")
    _without(monkeypatch, nap, "schedstat")
    c = WindowCollector(busy.pid, {nap: "iothread"}, use_perf=False)
    c.start()
    time.sleep(0.5)
    res = c.stop()
    row = next(t for t in res["threads"] if t["tid"] == nap)
    assert row["runtime_s"] is None and "schedstat" in row["null_reasons"]["runtime_s"]
    assert res["by_role"]["iothread"]["runtime_s"] is None  # not 0 added to a sum
    why = res["null_reasons"]["by_role.iothread.runtime_s"]
    assert f"{nap} (nap)" in why and "1 of 1 threads" in why
    # the threads that have it keep theirs; the counters schedstat does not feed are untouched
    spin = next(t for t in res["threads"] if t["name"] == "spin")
    assert spin["runtime_s"] is not None and res["by_role"]["other"]["runtime_s"] is not None
    assert row["ctx_voluntary"] is not None and res["ctx_switches"] is not None


def test_a_thread_without_its_switch_counter_makes_the_process_sum_null_unless_perf_counted_it(
        busy: subprocess.Popen[bytes], monkeypatch: pytest.MonkeyPatch) -> None:
    nap = _tid_named(busy.pid, "nap")
    _without(monkeypatch, nap, "status", "voluntary_ctxt_switches:")
    c = WindowCollector(busy.pid, {}, use_perf=False)
    c.start()
    time.sleep(0.5)
    res = c.stop()
    row = next(t for t in res["threads"] if t["tid"] == nap)
    assert row["ctx_voluntary"] is None and row["ctx_involuntary"] is not None
    assert res["ctx_voluntary"] is None and res["ctx_switches"] is None
    assert f"{nap} (nap)" in res["null_reasons"]["ctx_voluntary"]
    assert "ctx_voluntary" in res["null_reasons"]["ctx_switches"]
    assert res["ctx_involuntary"] == sum(t["ctx_involuntary"] for t in res["threads"])
    if perfrun.perf_available():  # perf counts the process's switches itself: that total stands
        c = WindowCollector(busy.pid, {}, use_perf=True)
        c.start()
        res = c.stop()
        assert res["ctx_voluntary"] is None and res["ctx_switches"] is not None
        assert "ctx_switches" not in res["null_reasons"]


def test_merge_hosts_keeps_a_processs_unknown_figure_unknown_with_its_reason() -> None:
    from stormatrix.collect import merge_hosts

    known = {"cpu_metric": "cpu_time", "cpu_total": 1.0, "cpu_user": 0.5, "cpu_system": 0.5, "ctx_switches": 10,
             "ctx_voluntary": 6, "ctx_involuntary": 4, "pid": 1, "window_s": 1.0, "threads": [],
             "by_role": {"iothread": {"threads": 1, "runtime_s": 0.2}}}
    lacking = {**known, "pid": 2, "ctx_voluntary": None, "ctx_switches": None,
               "by_role": {"iothread": {"threads": 1, "runtime_s": None}},
               "null_reasons": {"ctx_voluntary": "ctx_voluntary unknown for 1 of 3 threads: 7 (worker)"}}
    both = merge_hosts([known, lacking])
    assert both is not None
    assert both["ctx_voluntary"] is None and both["ctx_switches"] is None and both["ctx_involuntary"] == 8
    assert both["by_role"]["iothread"] == {"threads": 2, "runtime_s": None}
    assert both["null_reasons"]["ctx_voluntary"] == "pid 2: ctx_voluntary unknown for 1 of 3 threads: 7 (worker)"
    assert both["cpu_total"] == 2.0


def test_perf_is_probed_once_per_process_not_at_every_window(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A window collector left to decide (use_perf=None) asks perf_available() at every start, which sits
    between the guest's measure-start marker and its GO: the probe runs perf once per process, as the
    cycles probe does."""
    calls = tmp_path / "calls"
    fake = tmp_path / "perf"
    fake.write_text(f"#!/bin/sh\necho probe >> {calls}\necho '7,,context-switches,100,100.00,,' >&2\n")
    fake.chmod(0o755)
    monkeypatch.setattr(perfrun, "PERF", str(fake))
    monkeypatch.setattr(perfrun, "_perf_available", None)
    assert perfrun.perf_available() and perfrun.perf_available() and perfrun.perf_available()
    assert calls.read_text().splitlines() == ["probe"]
    monkeypatch.setattr(perfrun, "_perf_available", None)
    fake.write_text(f"#!/bin/sh\necho probe >> {calls}\necho 'perf: not permitted' >&2\nexit 1\n")
    assert not perfrun.perf_available() and not perfrun.perf_available()
    assert calls.read_text().splitlines() == ["probe", "probe"]
