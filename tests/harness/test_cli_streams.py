"""What every command does with its streams and signals, seen from outside where that is the point
(``subprocess``, a real shell): a closed pipe ends quietly (141), a full device or a closed stdout is one
message, Ctrl-C / SIGTERM / SIGHUP end with one line and 128 + the signal and leave no temporary file, only
the resumable commands say "run the same command again to resume", and a secret typed on the command line
is never echoed by a usage error.

A Ctrl-C or SIGTERM in the command's first fraction of a second, while it is still starting, ends as it does
later: one line on stderr, exit 130 (SIGINT) or 143 (SIGTERM), no traceback.

The signal is sent the moment the started command shows that the ``stormatrix`` package is imported and
its own imports run (the interpreter's import-time report on stderr, PYTHONPROFILEIMPORTTIME, names the
module it just imported), not after a sleep, so each try lands there on any machine. Python's start-up
before that keeps its default: see :mod:`stormatrix.core.starting`.

The command is the installed console script (or ``python -m stormatrix`` without one).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from stormatrix.cli import main
from clirun import cli
import paths

ROOT = paths.ROOT
DATA = ROOT / "tests" / "data"
SAMPLE_RUN = DATA / "journal" / "sample_run"
DEMO_MATRIX = ROOT / "harness" / "matrices" / "demo.toml"
PY = sys.executable


def shell(script: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """A shell line whose redirections are the point of the test ($SMX is the command)."""
    env = {**os.environ, "SMX": f"{PY} -m stormatrix"}
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, timeout=timeout,
                          cwd=ROOT)


def plan(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    path = tmp_path / "m.toml"
    path.write_text(text)
    code = main(["plan", str(path)])
    out = capsys.readouterr()
    return code, out.out + out.err


# --- one place for stdout ---------------------------------------------------------------------------

@pytest.mark.parametrize("args", [f"plan {DEMO_MATRIX}", "--help", "--version", "plan --help"])
def test_a_closed_pipe_ends_quietly_with_141(args: str) -> None:
    # the reader exits before the command writes: every write meets EPIPE
    r = shell(f"$SMX {args} | (exec 0<&-; true); echo \"rc=${{PIPESTATUS[0]}}\"")
    assert "Traceback" not in r.stderr and "BrokenPipeError" not in r.stderr and "Exception ignored" not in r.stderr
    assert "rc=141" in r.stdout, r.stdout + r.stderr


def test_a_full_device_is_one_message_not_a_traceback() -> None:
    r = shell(f"$SMX plan {DEMO_MATRIX} >/dev/full")
    assert r.returncode == 1
    assert "Traceback" not in r.stderr
    assert "cannot write output: no space left" in r.stderr


def test_stdout_closed_from_the_start_takes_no_file_descriptor(tmp_path: Path) -> None:
    # report writes its files, then cannot say so: the files are whole, the message names stdout, exit 1
    out = tmp_path / "r.xlsx"
    r = shell(f"$SMX report {SAMPLE_RUN} -o {out} >&-")
    assert r.returncode == 1, r.stderr
    assert "Traceback" not in r.stderr and "standard output is closed" in r.stderr
    import openpyxl

    assert "Summary" in openpyxl.load_workbook(out).sheetnames  # a whole workbook, not print()s into it
    assert "wrote" not in (tmp_path / "r.csv").read_text()  # the CSV did not take descriptor 1 either


def test_the_valid_neighbour_stdout_still_prints(capsys: pytest.CaptureFixture[str]) -> None:
    code, text = cli(["plan", str(DEMO_MATRIX), "--quiet"], capsys)
    assert code == 0 and "cells" in text


# --- signals ----------------------------------------------------------------------------------------

TERM_DURING_SAVE = textwrap.dedent("""
    import os, signal, sys
    import openpyxl
    real_save = openpyxl.Workbook.save
    def save(self, filename):
        real_save(self, filename)          # the temporary file is on disk now
        os.kill(os.getpid(), signal.{sig})
    openpyxl.Workbook.save = save
    from stormatrix.cli import main
    sys.exit(main(sys.argv[1:]))
""")


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGHUP"])
def test_sigterm_and_sighup_run_cleanups_and_leave_no_temporary_file(tmp_path: Path, sig: str) -> None:
    out = tmp_path / "o" / "r.xlsx"
    out.parent.mkdir()
    out.write_bytes(b"earlier good workbook")
    r = subprocess.run([PY, "-c", TERM_DURING_SAVE.format(sig=sig), "report", str(SAMPLE_RUN), "-o", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 128 + getattr(signal, sig), r.stderr
    assert "Traceback" not in r.stderr and "terminated" in r.stderr
    assert "resume" not in r.stderr  # only run / suite run / demo can resume
    assert sorted(p.name for p in out.parent.iterdir()) == ["r.xlsx"]
    assert out.read_bytes() == b"earlier good workbook"


INTERRUPT_IMPORT = textwrap.dedent("""
    import sys
    sys.argv[0] = "stormatrix"             # as the console script starts it
    class CtrlC:                           # Ctrl-C arrives exactly while {module} is being imported
        def find_spec(self, name, path, target=None):
            if name == "{module}":
                raise KeyboardInterrupt
    sys.meta_path.insert(0, CtrlC())
    from stormatrix.cli import main
    sys.exit(main(["plan", "m.toml"]))
""")


@pytest.mark.parametrize("module", ["stormatrix.cli", "stormatrix.commands", "stormatrix.runner"])
def test_ctrl_c_while_importing_prints_no_traceback(module: str) -> None:
    r = subprocess.run([PY, "-c", INTERRUPT_IMPORT.format(module=module)], capture_output=True, text=True,
                       timeout=60)
    assert "Traceback" not in r.stderr and "interrupted while starting" in r.stderr, r.stderr
    assert r.returncode in (130, -signal.SIGINT)


def test_ctrl_c_in_main_before_parsing_is_quiet(monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    import stormatrix.cli as cli_module

    def interrupted() -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_module, "build_parser", interrupted)
    assert main(["plan", "x"]) == 130
    assert "interrupted while starting" in capsys.readouterr().err


@pytest.mark.parametrize("argv,resumes", [(["report", str(SAMPLE_RUN), "-o", "R"], False),
                                          (["compare", str(SAMPLE_RUN), str(SAMPLE_RUN), "-o", "R"], False),
                                          (["plan", str(DEMO_MATRIX)], False),
                                          (["run", str(DEMO_MATRIX), "-o", "R"], True),
                                          (["demo", "-o", "R"], True)])
def test_only_resumable_commands_say_resume(argv: list[str], resumes: bool, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from stormatrix.commands import compare, demo, plan, report, run

    def interrupted(args: object) -> int:
        raise KeyboardInterrupt

    for module in (report, compare, plan, run, demo):
        monkeypatch.setattr(module, "run", interrupted)
    argv = [str(tmp_path / "R.xlsx") if a == "R" and argv[0] in ("report", "compare") else
            str(tmp_path / "R") if a == "R" else a for a in argv]
    assert main(argv) == 130
    err = capsys.readouterr().err
    assert ("run the same command again to resume" in err) is resumes, err


# --- secrets on the command line ----------------------------------------------------------------------

SECRET = "hunter2-Pa55w0rd"


@pytest.mark.parametrize("argv", [
    ["guest", "check", "--host", "h", "--username", "u", f"--password={SECRET}", "--disk-serial", "S"],
    ["guest", "check", "--host", "h", "--username", "u", "--password-env", "X", "--disk-serial", "S",
     f"--pass={SECRET}"],
    ["report", str(SAMPLE_RUN), "-o", "x.xlsx", f"--token={SECRET}"],
    ["report", str(SAMPLE_RUN), "-o", "x.xlsx", "--api-token", SECRET]])
def test_usage_errors_never_echo_a_typed_secret(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, text = cli(argv, capsys)
    assert code == 2 and SECRET not in text
    assert "error:" in text


def test_redaction_keeps_the_words_that_say_what_is_wrong() -> None:
    from stormatrix.cli import redact_argv_text

    said = redact_argv_text(f"ambiguous option: --password={SECRET} could match --password-env, --password-file")
    assert said == "ambiguous option: --password=<hidden> could match --password-env, --password-file"
    assert redact_argv_text("unrecognized arguments: --bogus extra") == "unrecognized arguments: --bogus extra"


# --- a signal while the command is still starting -------------------------------------------------------

SCRIPT = Path(sys.executable).parent / "stormatrix"
COMMAND = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "stormatrix"]
IMPORT_TIME = re.compile(r"^import time:")
PACKAGE_IMPORTED = re.compile(r"^import time:.*\|\s+stormatrix\s*$")
TRIES = 3


def signal_while_starting(sig: int, stage: re.Pattern[str]) -> tuple[int, list[str]] | None:
    """Start ``stormatrix plan`` and send ``sig`` at the import-time line ``stage`` matches; returns the
    exit status and the stderr lines that are not the import-time report (None: no such line)."""
    env = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1", "NO_COLOR": "1"}
    with subprocess.Popen([*COMMAND, "plan", str(paths.ROOT / "harness" / "matrices" / "demo.toml")],
                          stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, env=env) as proc:
        assert proc.stderr is not None
        lines: list[str] = []
        try:
            for line in proc.stderr:
                lines.append(line.rstrip("\n"))
                if stage.match(line):
                    proc.send_signal(sig)
                    break
            else:
                proc.wait(timeout=60)
                return None
            lines += proc.stderr.read().splitlines()
            code = proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
    return code, [line for line in lines if not IMPORT_TIME.match(line)]


@pytest.mark.parametrize("sig,what", [(signal.SIGINT, "interrupted"), (signal.SIGTERM, "terminated")],
                         ids=["SIGINT", "SIGTERM"])
def test_a_signal_while_starting_ends_in_one_line_and_its_exit_code(sig: int, what: str) -> None:
    for attempt in range(TRIES):
        outcome = signal_while_starting(sig, PACKAGE_IMPORTED)
        assert outcome is not None, "the command never imported its package"
        code, said = outcome
        assert code == 128 + sig, f"try {attempt + 1}: exit {code} (a negative one: killed by the signal)\n{said}"
        assert not any("Traceback" in line for line in said), "\n".join(said)
        assert len(said) == 1 and said[0].startswith(f"stormatrix: {what}"), said
