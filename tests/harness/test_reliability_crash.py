"""Crash and resume: SIGKILL the harness 10 times (twice in each phase; ``SMX_CRASH_KILLS=N`` for a longer
soak) at random moments spread over the phases of a cell (QEMU start, warm-up, measurement, journal write) and over ``report``; run again
after each kill. At the end every cell is in the journal exactly once, no line is torn (a torn last
line left by a kill is detected and cut with a message on the next run), no QEMU, fio or perf process
is left, and the report is written.

Real QEMU (software emulation), the real guest and fio; the delays come from a fixed seed. The harness
runs through ``standins/crashable.py``, which only adds phase marks (and splits a cell record's write
in two, so that a kill there really tears the line). About 1-2 minutes on a 2-core machine.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import pytest

from qemumatrix import small_matrix
import paths

pytestmark = [pytest.mark.qemu, pytest.mark.slow]

HERE = paths.TESTS
SEED = 20260508
KILLS = int(os.environ.get("SMX_CRASH_KILLS", "10"))  # a multiple of the 5 phases: each as often
PHASES = ["qemu-start", "warm-up", "measure", "journal-write", "report"]
# seconds after entering the phase where the kill may land (the phase's length in this matrix)
WINDOW = {"qemu-start": (0.0, 2.5), "warm-up": (0.0, 0.9), "measure": (0.1, 4.8), "journal-write": (0.05, 0.4),
          "report": (0.2, 4.0)}
MATRIX = small_matrix("crash", ["virtio-blk", "sata", "ide"], aio="io_uring")
CELLS = 3


@dataclass
class Kill:
    n: int
    phase: str
    occurrence: int  # which cell's phase (1 = the first pending cell)
    delay_s: float
    run_dir: str
    done_before: int
    torn_after: bool = False
    repaired_message: bool = False
    leftovers: int = 0


def processes() -> dict[int, tuple[int, bytes]]:
    """pid -> (parent pid, command line) of every process."""
    out = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
                cmd = (d / "cmdline").read_bytes()
            except OSError:
                continue
            out[int(d.name)] = (int(stat.rsplit(")", 1)[1].split()[1]), cmd)
    return out


def descendants(root: int) -> set[int]:
    procs = processes()
    found, frontier = set(), {root}
    while frontier:
        frontier = {pid for pid, (ppid, _) in procs.items() if ppid in frontier} - found
        found |= frontier
    return found


def ours(marker: str) -> list[int]:
    """QEMU, fio and perf processes that belong to this test (QEMU's command line names the run dir;
    perf and a host fio would be children of a harness we started, caught by ``descendants``)."""
    return [pid for pid, (_, cmd) in processes().items()
            if marker.encode() in cmd and (b"qemu-system" in cmd or b"fio" in cmd.split(b"\0")[0])]


def running(pid: int) -> bool:
    """``pid`` exists and is not a zombie; one that ends while its stat is read (ESRCH, ENOENT) is not running."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (ProcessLookupError, FileNotFoundError):
        return False


def gone(pids: set[int], timeout: float = 8.0) -> set[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = {p for p in pids if running(p)}
        if not alive:
            return set()
        time.sleep(0.1)
    return alive


def journal_keys(run_dir: Path) -> list[str]:
    path = run_dir / "journal.ndjson"
    if not path.exists():
        return []
    keys = []
    for line in path.read_bytes().split(b"\n"):
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if rec.get("type") == "cell":
            keys.append(rec["key"])
    return keys


def phase_count(phase_file: Path, phase: str) -> tuple[int, float]:
    if not phase_file.exists():
        return 0, 0.0
    hits = [float(line.split()[1]) for line in phase_file.read_text().splitlines() if line.split()[:1] == [phase]]
    return len(hits), hits[-1] if hits else 0.0


def harness(matrix: Path, run_dir: Path, phase_file: Path, log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "SMX_PHASE_FILE": str(phase_file),
           "PYTHONPATH": os.pathsep.join([str(HERE), str(HERE.parent)])}
    phase_file.unlink(missing_ok=True)
    with open(log, "wb") as err:
        return subprocess.Popen([sys.executable, str(HERE / "standins" / "crashable.py"), "run", str(matrix),
                                 "-o", str(run_dir), "--no-progress"], stdout=subprocess.DEVNULL, stderr=err, env=env)


def check_run_dir(run_dir: Path) -> None:
    data = (run_dir / "journal.ndjson").read_bytes()
    assert data.endswith(b"\n"), "the journal ends in a torn line"
    records = [json.loads(line) for line in data.splitlines()]  # every line whole
    keys = [r["key"] for r in records if r["type"] == "cell"]
    assert len(keys) == CELLS and len(set(keys)) == CELLS, keys


def test_sigkills_in_every_phase_then_every_cell_once(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    matrix = tmp_path / "m.toml"
    matrix.write_text(MATRIX)
    marker = str(tmp_path)
    schedule = [PHASES[i % len(PHASES)] for i in range(KILLS)]
    rng.shuffle(schedule)
    kills: list[Kill] = []
    generation = 0
    run_dir = tmp_path / f"run{generation}"
    phase_file = tmp_path / "phases"
    pending_torn: Kill | None = None
    logs = 0
    for n, phase in enumerate(schedule, 1):
        delay = rng.uniform(*WINDOW[phase])
        while True:
            done = len(set(journal_keys(run_dir)))
            if done >= CELLS:  # this run directory is finished: check it, start a fresh one
                check_run_dir(run_dir)
                generation += 1
                run_dir = tmp_path / f"run{generation}"
                continue
            occurrence = rng.randint(1, min(2, CELLS - done))
            if phase == "report":
                if done == 0:
                    phase, occurrence = "measure", 1  # nothing to report yet: kill a measurement instead
                else:
                    kill = Kill(n, phase, 0, delay, run_dir.name, done)
                    if not (run_dir / "report.xlsx").exists():  # so a kill must keep a whole previous workbook
                        subprocess.run([sys.executable, "-m", "stormatrix", "report", str(run_dir), "-o",
                                        str(run_dir / "report.xlsx")], capture_output=True, check=True, timeout=120)
                    proc = subprocess.Popen([sys.executable, "-m", "stormatrix", "report", str(run_dir), "-o",
                                             str(run_dir / "report.xlsx")], stdout=subprocess.DEVNULL,
                                            stderr=subprocess.DEVNULL)
                    time.sleep(delay)
                    children = descendants(proc.pid)
                    proc.send_signal(signal.SIGKILL)
                    proc.wait()
                    kill.leftovers = len(gone(children))
                    if (run_dir / "report.xlsx").exists():  # the previous workbook or none, never half of one
                        import openpyxl

                        openpyxl.load_workbook(run_dir / "report.xlsx")
                    kills.append(kill)
                    break
            logs += 1
            log = tmp_path / f"harness-{logs}.log"
            proc = harness(matrix, run_dir, phase_file, log)
            if pending_torn is not None:  # this run follows a kill mid-write: it must say it cut the line
                pending_torn.repaired_message = "torn last line" in wait_for_text(log, "torn last line", proc)
                pending_torn = None
            deadline = time.monotonic() + 240
            entered = 0.0
            while time.monotonic() < deadline and proc.poll() is None:
                count, entered = phase_count(phase_file, phase)
                if count >= occurrence:
                    break
                time.sleep(0.02)
            if proc.poll() is not None:  # the matrix finished before the phase came round
                assert proc.returncode == 0, log.read_text()
                continue
            assert entered, f"phase {phase} never entered: {log.read_text()}"
            time.sleep(max(0.0, entered + delay - time.monotonic()))
            children = descendants(proc.pid)
            kill = Kill(n, phase, occurrence, delay, run_dir.name, done)
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            kill.leftovers = len(gone(children)) + len(gone(set(ours(marker))))
            data = (run_dir / "journal.ndjson").read_bytes() if (run_dir / "journal.ndjson").exists() else b""
            kill.torn_after = bool(data) and not data.endswith(b"\n")
            if kill.torn_after:
                pending_torn = kill
            kills.append(kill)
            break

    # the final re-run finishes the matrix
    log = tmp_path / "final.log"
    proc = harness(matrix, run_dir, phase_file, log)
    assert proc.wait(timeout=300) == 0, log.read_text()
    if pending_torn is not None:
        pending_torn.repaired_message = "torn last line" in log.read_text()
    check_run_dir(run_dir)
    report = subprocess.run([sys.executable, "-m", "stormatrix", "report", str(run_dir), "-o",
                             str(run_dir / "report.xlsx")], capture_output=True, text=True, timeout=120)
    assert report.returncode == 0, report.stderr
    import openpyxl

    openpyxl.load_workbook(run_dir / "report.xlsx")  # whole, after kills mid-write of earlier reports
    assert not ours(marker)

    table = [asdict(k) for k in kills]
    print("\nkill  phase          cell  delay_s  done_before  torn  cut-with-message  leftovers")
    for k in kills:
        print(f"{k.n:>4}  {k.phase:<13} {k.occurrence:>5}  {k.delay_s:7.2f}  {k.done_before:>11}  "
              f"{'yes' if k.torn_after else 'no':>4}  {'yes' if k.repaired_message else '-':>16}  {k.leftovers:>9}")
    out = os.environ.get("SMX_RELIABILITY_CRASH_JSON")
    if out:
        Path(out).write_text(json.dumps(table, indent=1))
    assert len(kills) == KILLS
    assert {k.phase for k in kills} == set(PHASES), "the kills must cover every phase"
    assert all(k.leftovers == 0 for k in kills), table
    torn = [k for k in kills if k.torn_after]
    assert torn, "no kill landed inside a journal write"
    assert all(k.repaired_message for k in torn), table


def wait_for_text(log: Path, text: str, proc: subprocess.Popen[bytes], timeout: float = 20.0) -> str:
    """The harness's stderr once it contains ``text`` (or whatever it said before the timeout)."""
    deadline = time.monotonic() + timeout
    content = ""
    while time.monotonic() < deadline:
        content = log.read_text(errors="replace") if log.exists() else ""
        if text in content or proc.poll() is not None:
            break
        time.sleep(0.05)
    return content
