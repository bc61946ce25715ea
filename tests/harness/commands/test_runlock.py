"""One writer per run directory (commands/runlock.py): `run`, `suite run` and `demo` hold it, a second
writer is refused naming the holder, a kill -9 releases it, and a run directory that cannot be created is
named.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from clirun import cli
import paths

ROOT = paths.ROOT
DATA = ROOT / "tests" / "data"
SAMPLE_RUN = DATA / "journal" / "sample_run"
DEMO_MATRIX = ROOT / "harness" / "matrices" / "demo.toml"
PY = sys.executable
SUITE = """[suite]
side = "A"
filename = "/dev/vdb"
guests = ["vm01=10.0.0.11:8765"]
"""


def suite_file(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "s.toml"
    path.write_text(body)
    return path


# --- one writer per run directory ----------------------------------------------------------------------------

HOLD = textwrap.dedent("""
    import sys, time
    from stormatrix.commands.runlock import hold_run_dir
    with hold_run_dir(sys.argv[1], "run"):
        print("held", flush=True)
        time.sleep(60)
""")


def test_a_second_writer_is_refused_naming_the_holder_and_kill_9_releases_it(tmp_path: Path,
                                                                             capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = tmp_path / "run"
    holder = subprocess.Popen([PY, "-c", HOLD, str(run_dir)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        code, text = cli(["run", str(DEMO_MATRIX), "-o", str(run_dir)], capsys)
        assert code == 2 and "in use by" in text and f"pid {holder.pid}" in text and "Fix:" in text
        assert not (run_dir / "journal.ndjson").exists()
        code, text = cli(["report", str(SAMPLE_RUN), "-o", str(tmp_path / "r.xlsx")], capsys)
        assert code == 0  # readers are never held up
    finally:
        holder.kill()
        holder.wait()
        assert holder.stdout is not None
        holder.stdout.close()
    from stormatrix.commands.runlock import hold_run_dir

    with hold_run_dir(run_dir, "run"):  # the kernel dropped the killed holder's lock: no stale lock
        pass


def test_a_run_directory_that_cannot_be_created_is_refused_naming_it(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """The lock creates the run directory first: a path under a regular file is exit 2 naming it, not a
    traceback from mkdir."""
    (tmp_path / "f").write_text("a file, not a folder")
    run_dir = tmp_path / "f" / "r"
    code, text = cli(["run", str(DEMO_MATRIX), "-o", str(run_dir)], capsys)
    assert code == 2 and str(run_dir) in text and "Fix:" in text and "Traceback" not in text


def test_suite_run_takes_the_same_lock(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = tmp_path / "run"
    holder = subprocess.Popen([PY, "-c", HOLD, str(run_dir)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        code, text = cli(["suite", "run", str(suite_file(tmp_path, SUITE)), "-o", str(run_dir), "--fio", PY], capsys)
        assert code == 2 and "in use by" in text
    finally:
        holder.kill()
        holder.wait()
        assert holder.stdout is not None
        holder.stdout.close()
