"""Bad input, second round (issue 26): one test (or a few) per class, each failing on the code before
its fix, next to a valid neighbour that must keep working.

Real processes where the class is about the process: a closed or full stdout, signals and the
interpreter's start-up can only be seen from outside (``subprocess``). Real captures where the class is
about a reader: fio 3.33 with ``--status-interval`` and perf stat under a decimal-comma locale are
produced here by the installed fio/perf when they run, and otherwise come from tiny files in
``tests/data/badinput2`` captured the same way (see its README).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from stormatrix.cli import main

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
SAMPLE_RUN = DATA / "journal" / "sample_run"
DEMO_MATRIX = ROOT / "harness" / "matrices" / "demo.toml"
PY = sys.executable
SUITE = """[suite]
side = "A"
filename = "/dev/vdb"
guests = ["vm01=10.0.0.11:8765"]
"""


def cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own exit for a bad option value
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out + out.err


def shell(script: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """A shell line whose redirections are the point of the test ($SMX is the command)."""
    env = {**os.environ, "SMX": f"{PY} -m stormatrix"}
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, timeout=timeout,
                          cwd=ROOT)


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


# --- one output planner: an output never replaces an input of the same command ------------------------

FIO_FILE = DATA / "fio" / "fio3_randread_bs4k_qd1.json"
FIO_WRITE = DATA / "fio" / "fio3_randwrite_bs64k_qd4.json"
PERF_FILE = DATA / "perf" / "perf_stat_fio_process.csv"


def result_with_sidecar(folder: Path, stem: str = "r") -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    result, sidecar = folder / f"{stem}.json", folder / f"{stem}.csv"
    result.write_bytes(FIO_FILE.read_bytes())
    sidecar.write_bytes(PERF_FILE.read_bytes())
    return result, sidecar


def test_the_default_csv_never_replaces_the_perf_sidecar_it_reads(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    result, sidecar = result_with_sidecar(tmp_path)
    before = sidecar.read_bytes()
    code, text = cli(["report", str(result), "-o", str(tmp_path / "r.xlsx")], capsys)
    assert code == 2 and str(sidecar) in text and "Fix:" in text
    assert sidecar.read_bytes() == before and not (tmp_path / "r.xlsx").exists()
    # the valid neighbour: the same report with the CSV elsewhere works, and reads the sidecar
    code, text = cli(["report", str(result), "-o", str(tmp_path / "r.xlsx"), "--csv", str(tmp_path / "tidy.csv")],
                     capsys)
    assert code == 0, text
    assert sidecar.read_bytes() == before


@pytest.mark.parametrize("flag", ["--csv", "-o"])
def test_an_output_onto_a_file_found_inside_an_input_folder_is_refused(tmp_path: Path, flag: str,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    result, sidecar = result_with_sidecar(tmp_path / "in")
    other = tmp_path / "in" / "deep" / "w.json"
    other.parent.mkdir()
    other.write_bytes(FIO_WRITE.read_bytes())
    target = sidecar if flag == "--csv" else other.with_suffix(".xlsx")
    argv = ["report", str(tmp_path / "in"), "-o", str(tmp_path / "o.xlsx"), "--csv", str(sidecar)] \
        if flag == "--csv" else ["report", str(tmp_path / "in"), "-o", str(target)]
    if flag == "-o":  # the workbook's default CSV is deep/w.csv: not an input, so this one is fine
        code, text = cli(argv, capsys)
        assert code == 0, text
        return
    before = target.read_bytes()
    code, text = cli(argv, capsys)
    assert code == 2 and str(sidecar) in text
    assert target.read_bytes() == before


def test_compare_refuses_an_output_onto_either_sides_sidecar(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    a, a_csv = result_with_sidecar(tmp_path / "a")
    b, _ = result_with_sidecar(tmp_path / "b", "w")
    b.write_bytes(FIO_WRITE.read_bytes())
    before = a_csv.read_bytes()
    code, text = cli(["compare", str(a), str(b), "-o", str(tmp_path / "a" / "r.xlsx")], capsys)
    assert code == 2 and str(a_csv) in text
    assert a_csv.read_bytes() == before


@pytest.mark.parametrize("argv", [
    ["report", str(FIO_FILE), "-o", "{tmp}/" + "n" * 250 + ".xlsx"],
    ["report", str(FIO_FILE), "-o", "{tmp}/ok.xlsx", "--csv", "{tmp}/" + "c" * 240 + ".csv"],
    ["compare", str(FIO_FILE), str(FIO_WRITE), "-o", "{tmp}/" + "n" * 230 + ".xlsx"],
    ["run", str(DEMO_MATRIX), "-o", "{tmp}/" + "d" * 300],
    ["demo", "-o", "{tmp}/" + "d" * 300],
    ["demo", "-o", "{tmp}/d", "--workbook", "{tmp}/" + "w" * 250 + ".xlsx"],
    ["suite", "run", "{suite}", "-o", "{tmp}/" + "s" * 256]])
def test_over_long_output_names_are_refused_before_anything_is_created(
        argv: list[str], tmp_path: Path, tmp_path_factory: pytest.TempPathFactory,
        capsys: pytest.CaptureFixture[str]) -> None:
    suite = tmp_path_factory.mktemp("suite") / "s.toml"
    suite.write_text(SUITE)
    argv = [a.replace("{tmp}", str(tmp_path)).replace("{suite}", str(suite)) for a in argv]
    code, text = cli(argv, capsys)
    assert code == 2, text
    assert "Traceback" not in text and ("too long" in text or "bytes long" in text), text
    assert list(tmp_path.iterdir()) == []  # nothing created


def test_demo_refuses_a_workbook_it_could_not_write_before_booting_anything(tmp_path: Path,
                                                                            capsys: pytest.CaptureFixture[str]) -> None:
    code, text = cli(["demo", "-o", str(tmp_path / "d"), "--workbook", str(tmp_path / "w.txt")], capsys)
    assert code == 2 and ".xlsx" in text
    assert not (tmp_path / "d").exists()


# --- compare A B sharing a measurement -------------------------------------------------------------------

@pytest.mark.parametrize("how", ["symlink", "hardlink", "copy"])
def test_compare_names_a_measurement_found_on_both_sides(tmp_path: Path, how: str,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    shutil_copy = FIO_FILE.read_bytes()
    (tmp_path / "a" / "r.json").write_bytes(shutil_copy)
    (tmp_path / "b" / "w.json").write_bytes(FIO_WRITE.read_bytes())
    twin = tmp_path / "b" / "r-again.json"
    {"symlink": lambda: twin.symlink_to(tmp_path / "a" / "r.json"),
     "hardlink": lambda: os.link(tmp_path / "a" / "r.json", twin),
     "copy": lambda: twin.write_bytes(shutil_copy)}[how]()
    argv = ["compare", str(tmp_path / "a"), str(tmp_path / "b"), "-o", str(tmp_path / "c.xlsx")]
    code, text = cli(argv, capsys)
    assert code == 0 and "on both sides" in text and str(twin) in text
    code, text = cli(argv + ["--strict"], capsys)
    assert code == 2 and "on both sides" in text and "Fix:" in text


def test_compare_of_two_different_measurements_says_nothing_of_sharing(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    sides = DATA / "fio" / "compare"
    code, text = cli(["compare", str(sides / "A"), str(sides / "B"), "-o", str(tmp_path / "c.xlsx"), "--strict"],
                     capsys)
    assert code == 0 and "both sides" not in text, text
