"""The platform seam (:mod:`stormatrix.core.oscompat`): the CLI's Windows branches run here, on Linux, with
Windows' primitives stood in at the seam (tests/standins/windows_os.py: each behaves as its documented Windows
call), and the POSIX branches as they are.

What each test holds on any machine: a second writer of a run directory is refused while the first holds it and
admitted after; a journal append waits for a holder; Ctrl-Break ends the command with the one line and 128 + its
number; a process tree is ended whole; a child's own CPU time is read; the file-name rules are Windows' own; a
cp1252 console prints every message.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import psutil
import pytest

import paths
from standins.windows_os import StandInWindows
from stormatrix import cli, console
from stormatrix.analysis.write.savefiles import write_tidy_csv
from stormatrix.backends.vmware.pwsh import run_pwsh_process
from stormatrix.commands.outputs import check_output_name, name_problem
from stormatrix.commands.runlock import LOCK_NAME, hold_run_dir
from stormatrix.core import oscompat, osposix, oswindows
from stormatrix.core.errors import InputError
from stormatrix.journal import Journal, read_journal


@pytest.fixture
def windows(monkeypatch: pytest.MonkeyPatch) -> StandInWindows:
    """The seam answering as Windows does, through stood-in primitives."""
    prims = StandInWindows()
    monkeypatch.setattr(oscompat, "OS", oswindows.Windows(prims))
    return prims


# --- locks ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("system", ["posix", "windows"])
def test_a_second_writer_of_a_run_directory_is_refused_while_the_first_holds_it(
        system: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    prims = request.getfixturevalue("windows") if system == "windows" else None
    run_dir = tmp_path / "run"
    with hold_run_dir(run_dir, "run"):
        with pytest.raises(InputError) as refused:
            with hold_run_dir(run_dir, "suite run"):
                pytest.fail("a second writer got the run directory")
        # the message names who holds it, from the note the holder wrote at the start of the lock file
        assert f"is in use by stormatrix run (pid {os.getpid()}" in str(refused.value)
        assert (run_dir / LOCK_NAME).read_bytes().startswith(b'{"pid"')  # readable while held (Windows' lock is
        # on a byte past the end: a mandatory lock on the data would fail this read)
    with hold_run_dir(run_dir, "run"):  # released when the holder is done
        pass
    if prims is not None:
        locks = [args for name, args in prims.calls if name == "LockFileEx"]
        assert locks and all(offset == oswindows.WIN_LOCK_OFFSET and exclusive and fail_now
                             for _, offset, exclusive, fail_now in locks)
        assert oswindows.WIN_LOCK_OFFSET > 2**40  # past any journal
        assert any(name == "UnlockFile" for name, _ in prims.calls)


def test_a_run_directory_held_by_another_process_is_refused_on_windows(windows: StandInWindows,
                                                                       tmp_path: Path) -> None:
    """The lock is the other process's (a real second process, holding it through the stand-in's LockFileEx)."""
    run_dir = tmp_path / "run"
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {str(paths.ROOT / 'tests')!r})
        from standins.windows_os import StandInWindows
        from stormatrix.core import oscompat, oswindows
        oscompat.OS = oswindows.Windows(StandInWindows())
        from stormatrix.commands.runlock import hold_run_dir
        with hold_run_dir({str(run_dir)!r}, "run"):
            print("held", flush=True)
            sys.stdin.read()
        """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with pytest.raises(InputError, match=rf"is in use by stormatrix run \(pid {holder.pid} "):
            with hold_run_dir(run_dir, "run"):
                pass
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=30)
        if holder.stdout is not None:
            holder.stdout.close()
    with hold_run_dir(run_dir, "run"):  # the holder exited: the lock went with it
        pass


def test_a_journal_append_waits_for_the_lock_and_writes_utf8_lines(windows: StandInWindows, tmp_path: Path) -> None:
    journal = Journal(tmp_path).open()
    journal.append({"type": "run", "note": "first ≤ 5 %"})
    other = os.open(journal.path, os.O_RDWR)
    assert windows.lock_file(other, oswindows.WIN_LOCK_OFFSET, True, True) == 0  # another handle holds it
    appended = threading.Event()

    def append() -> None:
        journal.append({"type": "run", "note": "second"})
        appended.set()

    writer = threading.Thread(target=append)
    writer.start()
    try:
        assert not appended.wait(0.5), "the append did not wait for the lock's holder"
        assert len(read_journal(journal.path).records) == 1  # readers read while it is held
    finally:
        windows.unlock_file(other, oswindows.WIN_LOCK_OFFSET)
        os.close(other)
    writer.join(timeout=10)
    assert appended.is_set()
    data = journal.path.read_bytes()
    assert data.count(b"\n") == 2 and b"\r" not in data and "≤".encode("utf-8") in data


def test_the_tidy_csv_ends_lines_with_a_newline_on_every_system(monkeypatch: pytest.MonkeyPatch,
                                                                tmp_path: Path) -> None:
    import pandas as pd

    monkeypatch.setattr(os, "linesep", "\r\n")  # what pandas would end lines with on Windows
    out = write_tidy_csv(pd.DataFrame({"workload": ["r ≤ 4k", "w"], "mib_s": [1.5, 2.0]}), tmp_path / "t.csv")
    data = out.read_bytes()
    assert b"\r" not in data and data.count(b"\n") == 3 and "≤".encode("utf-8") in data


# --- signals ------------------------------------------------------------------------------------------------

def test_ctrl_break_ends_the_command_like_sigterm_with_one_line_and_128_plus_its_number(
        windows: StandInWindows, capsys: pytest.CaptureFixture[str]) -> None:
    assert oscompat.termination_signals() == (signal.SIGTERM, oswindows.WIN_SIGBREAK)
    handlers = console.install_signal_handlers()
    try:
        assert oswindows.WIN_SIGBREAK in handlers  # (21 is SIGTTIN on Linux: the number Windows gives Ctrl-Break)
        with pytest.raises(console.Terminated) as stopped:
            os.kill(os.getpid(), oswindows.WIN_SIGBREAK)
            time.sleep(5)
    finally:
        console.restore_signal_handlers(handlers)
    assert stopped.value.signum == oswindows.WIN_SIGBREAK
    assert cli._interrupted(stopped.value, argparse.Namespace(command="run")) == 128 + 21
    err = capsys.readouterr().err
    assert err == ("stormatrix: terminated; everything journaled so far is kept (run the same command again to "
                   "resume)\n")


def test_posix_keeps_sigterm_and_sighup() -> None:
    if oscompat.WINDOWS:  # pragma: no cover
        pytest.skip("POSIX only")
    assert osposix.Posix().termination_signals == (signal.SIGTERM, signal.SIGHUP)
    assert console.EXIT_BROKEN_PIPE == 141


def test_a_closed_pipe_on_windows_is_a_closed_pipe(windows: StandInWindows) -> None:
    import errno

    assert console.OutputFailed(errno.EINVAL).broken_pipe  # what a write to a gone reader gives on Windows
    assert console.EXIT_BROKEN_PIPE == 141


# --- process trees -----------------------------------------------------------------------------------------

TREE = textwrap.dedent("""
    import subprocess, sys, time
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    print(child.pid, flush=True)
    time.sleep(120)
    """)


@pytest.mark.parametrize("system", ["posix", "windows"])
def test_kill_tree_ends_the_child_and_what_it_started(system: str, request: pytest.FixtureRequest) -> None:
    prims = request.getfixturevalue("windows") if system == "windows" else None
    proc = subprocess.Popen([sys.executable, "-c", TREE], stdout=subprocess.PIPE, text=True, **oscompat.new_group())
    assert proc.stdout is not None
    grandchild = int(proc.stdout.readline())
    oscompat.kill_tree(proc)
    proc.wait(timeout=30)
    proc.stdout.close()
    psutil.wait_procs([psutil.Process(grandchild)], timeout=30)
    assert not psutil.pid_exists(grandchild) or psutil.Process(grandchild).status() == psutil.STATUS_ZOMBIE
    if prims is not None:
        assert ("taskkill /T /F", proc.pid) in prims.calls and ("CREATE_NEW_PROCESS_GROUP", None) in prims.calls
    oscompat.kill_tree(proc)  # a tree already gone is fine


@pytest.mark.parametrize("system", ["posix", "windows"])
def test_interrupt_tree_asks_the_group_to_stop_and_reap_reads_its_own_cpu_time(
        system: str, request: pytest.FixtureRequest) -> None:
    request.getfixturevalue("windows") if system == "windows" else None
    script = textwrap.dedent("""
        import signal, sys, time
        def stop(signum, frame):
            print("stopping", flush=True)
            sys.exit(3)
        signal.signal(signal.SIGINT, stop)
        t = time.process_time()
        while time.process_time() - t < 0.3:
            pass
        print("busy", flush=True)
        time.sleep(120)
        """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, **oscompat.new_group())
    assert proc.stdout is not None and proc.stdout.readline() == "busy\n"
    assert oscompat.reap(proc) is None  # still running
    oscompat.interrupt_tree(proc)
    deadline = time.monotonic() + 30
    done = None
    while done is None and time.monotonic() < deadline:
        done = oscompat.reap(proc)
        time.sleep(0.02)
    assert proc.stdout.readline() == "stopping\n"
    proc.stdout.close()
    assert done is not None
    rc, usage = done
    assert rc == 3 and usage is not None and usage.user_s + usage.system_s >= 0.2


def test_a_pwsh_call_that_times_out_is_ended_with_its_whole_tree_on_windows(windows: StandInWindows,
                                                                            tmp_path: Path) -> None:
    """pwsh as a .NET tool is a launcher with pwsh.dll as its child: the timeout must end both."""
    launcher = tmp_path / "pwsh"
    launcher.write_text(f"#!/bin/sh\n{sys.executable} -c 'import time; time.sleep(120)' &\necho $! > {tmp_path}/child\n"
                        "wait\n")
    launcher.chmod(0o755)
    with pytest.raises(subprocess.TimeoutExpired):
        run_pwsh_process([str(launcher)], "{}", 2.0, dict(os.environ))
    child = int((tmp_path / "child").read_text())
    psutil.wait_procs([psutil.Process(child)], timeout=30) if psutil.pid_exists(child) else None
    assert not psutil.pid_exists(child) or psutil.Process(child).status() == psutil.STATUS_ZOMBIE
    assert any(name == "taskkill /T /F" for name, _ in windows.calls)


# --- what the file system allows ------------------------------------------------------------------------------

@pytest.mark.parametrize("name, word", [("CON.xlsx", "device name"), ("nul", "device name"), ("COM1.csv", "device"),
                                        ("a:b.xlsx", "':'"), ('r"1".xlsx', "'\"'"), ("r1.", "ends in a dot"),
                                        ("r1 ", "space"), ("a?.csv", "'?'")])
def test_windows_names_are_refused_before_anything_is_written(windows: StandInWindows, tmp_path: Path,
                                                              name: str, word: str) -> None:
    with pytest.raises(InputError) as refused:
        check_output_name("-o", tmp_path / name)
    assert word in str(refused.value) and "Fix: give another name" in str(refused.value)
    assert not (tmp_path / name).exists()


def test_the_same_names_are_fine_on_posix(tmp_path: Path) -> None:
    if oscompat.WINDOWS:  # pragma: no cover
        pytest.skip("POSIX only")
    for name in ("CON.xlsx", "a:b.xlsx", "r1."):
        check_output_name("-o", tmp_path / name)


def test_windows_paths_are_parsed_with_their_drive_and_backslashes(windows: StandInWindows) -> None:
    check_output_name("-o", r"C:\Users\me\runs\pve-2026\stormatrix.xlsx")  # the drive's colon is no name's
    check_output_name("-o", r"\\fileserver\share\runs\r1.xlsx")
    check_output_name("-o", "C:/Users/me/runs/r1.xlsx")
    with pytest.raises(InputError, match="device name"):
        check_output_name("-o", r"C:\Users\me\runs\AUX\r1.xlsx")


def test_name_lengths_are_counted_as_the_file_system_counts_them(windows: StandInWindows, tmp_path: Path) -> None:
    # 200 "é": 400 bytes (too long for ext4's 255) but 200 UTF-16 units (NTFS allows 255)
    name = "é" * 200 + ".xlsx"
    assert oscompat.name_length(name) == 205
    assert name_problem("C:/" + name, room=40) is None
    assert "characters long" in (name_problem("C:/" + "x" * 250, room=40) or "")
    # MAX_PATH without long paths; 32767 with them
    deep = "C:/" + "/".join(["d" * 50] * 5) + "/r.xlsx"
    assert "this system allows 260" in (name_problem(deep) or "")
    windows.long_paths = True
    assert name_problem(deep) is None


def test_posix_counts_bytes(tmp_path: Path) -> None:
    if oscompat.WINDOWS:  # pragma: no cover
        pytest.skip("POSIX only")
    assert "bytes long" in (name_problem(tmp_path / ("é" * 200 + ".xlsx")) or "")


def test_a_secret_file_on_windows_is_not_said_to_be_readable_by_others(windows: StandInWindows) -> None:
    assert not oscompat.others_may_read(0o100666)  # what os.stat says of every writable file on Windows
    assert osposix.Posix().others_may_read(0o100644) and not osposix.Posix().others_may_read(0o100600)


def test_cpus_and_load_where_the_system_has_none(windows: StandInWindows) -> None:
    assert oscompat.usable_cpus() == list(range(os.cpu_count() or 1))
    assert oscompat.load_average() is None
    from stormatrix.analysis.read.ingest import _idle_cpus

    assert 1 <= _idle_cpus() <= 4


# --- the console's encoding ---------------------------------------------------------------------------------------

def test_a_cp1252_console_prints_every_message(tmp_path: Path) -> None:
    """A workload named in Cyrillic with a '≤' on stdout and a file name in it on stderr: cp1252 has neither."""
    matrix = tmp_path / "матрица.toml"
    matrix.write_text(textwrap.dedent("""
        [run]
        backend = "qemu"
        [matrix]
        controllers = ["virtio-blk"]
        aio = ["threads"]
        [[workload]]
        name = "чтение≤4k"
        rw = "randread"
        bs = "4k"
        """), encoding="utf-8")
    env = {**os.environ, "PYTHONIOENCODING": "cp1252", "PYTHONUTF8": "0", "LC_ALL": "C.UTF-8"}  # (UTF-8 file names)
    exe = Path(sys.executable).with_name("stormatrix")
    out = subprocess.run([str(exe), "plan", str(matrix)], capture_output=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr.decode("cp1252", "replace")
    assert b"Traceback" not in out.stderr
    shown = out.stdout.decode("cp1252")
    assert "\\u0447\\u0442\\u0435\\u043d\\u0438\\u0435\\u22644k" in shown  # the workload, escaped, not a crash
    missing = subprocess.run([str(exe), "plan", str(tmp_path / "нет.toml")], capture_output=True, env=env, timeout=120)
    assert missing.returncode == 2 and b"Traceback" not in missing.stderr
    assert "\\u043d\\u0435\\u0442.toml" in missing.stderr.decode("cp1252") and b"file not found" in missing.stderr
