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
from test_badinput_roots import cli  # the CLI in-process: (exit code, stdout + stderr), argparse's exits too
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


# --- readers: a number that cannot be read exactly is refused, never guessed ------------------------------

R2 = DATA / "badinput2"


def report(paths: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str]:
    return cli(["report", *map(str, paths), "-o", str(tmp_path / "r.xlsx"), *extra], capsys)


def test_status_interval_output_is_read_at_its_final_report(tmp_path: Path) -> None:
    from stormatrix.analysis.fio import extract_json_documents, parse_fio_json

    text = (R2 / "fio333-status-interval-1s.json").read_text()
    docs = extract_json_documents(text)
    assert len(docs) >= 3  # interim reports, then the final one
    doc = parse_fio_json(text, "x")
    final = docs[-1]["jobs"][0]["read"]
    assert doc["jobs"][0]["read"]["io_bytes"] == final["io_bytes"] > docs[0]["jobs"][0]["read"]["io_bytes"]
    from stormatrix.analysis.ingest import ingest

    frame = ingest([R2 / "fio333-status-interval-1s.json"]).frame
    assert int(frame["io_bytes"].iloc[0]) == final["io_bytes"]


def test_status_interval_is_read_from_a_fresh_fio_run_too(tmp_path: Path) -> None:
    import shutil as sh

    if sh.which("fio") is None:
        pytest.skip("fio is not installed")
    out = tmp_path / "si.json"
    subprocess.run(["fio", "--name=si", f"--filename={tmp_path / 'f'}", "--size=1m", "--rw=randread", "--bs=4k",
                    "--runtime=2", "--time_based", "--output-format=json", "--status-interval=1", f"--output={out}"],
                   check=True, capture_output=True, timeout=60)
    from stormatrix.analysis.fio import extract_json_documents
    from stormatrix.analysis.ingest import ingest

    docs = extract_json_documents(out.read_text())
    frame = ingest([out]).frame
    assert len(docs) >= 2 and int(frame["io_bytes"].iloc[0]) == docs[-1]["jobs"][0]["read"]["io_bytes"]


def test_two_runs_pasted_into_one_file_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pasted = tmp_path / "two.json"
    pasted.write_text(FIO_FILE.read_text() + "\n" + FIO_WRITE.read_text())
    code, text = report([pasted], tmp_path, capsys, "--strict")
    assert code == 2 and "two.json" in text and "different jobs" in text


@pytest.mark.parametrize("bs,rw,says", [("4k-64k", "randread", "range"), ("4k,64k", "randrw", "reads 4k, writes 64k"),
                                        ("4k-8k,16k", "randread", "range")])
def test_block_sizes_that_are_not_one_size_are_refused(bs: str, rw: str, says: str, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    import json

    doc = json.loads(FIO_FILE.read_text())
    doc["jobs"][0]["job options"].update(bs=bs, rw=rw)
    path = tmp_path / "read-rand-bs4096-qd1.json"  # a name that would give 4k if the option were skipped
    path.write_text(json.dumps(doc))
    code, text = report([path], tmp_path, capsys, "--strict")
    assert code == 2 and says in text and path.name in text


@pytest.mark.parametrize("option", [{"bsrange": "4k-64k"}, {"bssplit": "4k/50:64k/50"}])
def test_bsrange_and_bssplit_are_refused_not_taken_from_the_name(option: dict[str, str], tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    import json

    doc = json.loads(FIO_FILE.read_text())
    doc["jobs"][0]["job options"].pop("bs", None)
    doc["jobs"][0]["job options"].update(option)
    path = tmp_path / "randread-bs4k-qd1.json"
    path.write_text(json.dumps(doc))
    code, text = report([path], tmp_path, capsys, "--strict")
    assert code == 2 and next(iter(option)) in text


def test_a_real_fio_range_capture_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, text = report([R2 / "fio333-randread-bs4k-64k.json"], tmp_path, capsys, "--strict")
    assert code == 2 and "range" in text


@pytest.mark.parametrize("bs,rw,expected", [("4k,64k", "randread", 4096), ("4k,64k", "randwrite", 65536),
                                            (",64k", "write", 65536), ("64k,64k", "randrw", 65536),
                                            ("65536", "randrw", 65536), ("8k,32k,", "randrw", None)])
def test_per_direction_block_sizes_are_read_for_the_directions_used(bs: str, rw: str, expected: int | None) -> None:
    from stormatrix.analysis.params import block_size

    value, why = block_size(bs, rw)
    assert value == expected and (why is None) == (expected is not None)


def test_diskspd_targets_with_different_workloads_are_refused(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    code, text = report([R2 / "diskspd_two_targets_64k_4k.xml"], tmp_path, capsys, "--strict")
    assert code == 2 and "2 targets" in text and "65536" in text and "4096" in text


def test_diskspd_targets_of_one_workload_are_summed() -> None:
    from stormatrix.analysis.diskspd import parse_diskspd_xml

    one = parse_diskspd_xml((DATA / "diskspd" / "diskspd_randread_64k_qd8_t1.xml").read_text(), "one")
    two = parse_diskspd_xml((R2 / "diskspd_two_targets_64k_64k.xml").read_text(), "two")
    assert two["bs"] == one["bs"] == 65536 and two["iodepth"] == one["iodepth"]
    assert two["io_bytes"] == 2 * one["io_bytes"] and two["numjobs"] == 2 * one["numjobs"]


@pytest.mark.parametrize("name", ["perf_stat_de_DE.csv", "perf_stat_de_DE_interval.csv",
                                  "perf_stat_de_DE_per_cpu.csv"])
def test_a_decimal_comma_perf_csv_is_refused_with_the_fix(name: str, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "r.json").write_bytes(FIO_FILE.read_bytes())
    (tmp_path / "in" / "r.perf.csv").write_bytes((R2 / name).read_bytes())
    code, text = report([tmp_path / "in" / "r.json"], tmp_path, capsys, "--strict")
    assert code == 2 and "decimal comma" in text and "LC_ALL=C" in text and "r.perf.csv" in text


def test_perf_csvs_in_the_c_locale_still_read() -> None:
    from stormatrix.analysis.perfcsv import host_metrics, parse_perf_csv

    for path in (DATA / "perf").glob("*.csv"):
        parse_perf_csv(path.read_text(), str(path))  # none refused
    m = host_metrics(parse_perf_csv((DATA / "perf" / "perf_stat_fio_process.csv").read_text()))
    assert m["ctx_switches"] > 0


@pytest.fixture(scope="module")
def de_locale(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import shutil as sh

    if sh.which("localedef") is None or not Path("/usr/share/i18n/locales/de_DE").exists():
        pytest.skip("localedef or the de_DE locale source is not installed")
    where = tmp_path_factory.mktemp("locale")
    r = subprocess.run(["localedef", "-i", "de_DE", "-f", "UTF-8", str(where / "de_DE.UTF-8")], capture_output=True)
    if not (where / "de_DE.UTF-8").exists():
        pytest.skip(f"localedef failed: {r.stderr[:200]!r}")
    return where


def test_the_collector_runs_perf_in_the_c_locale(de_locale: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from stormatrix.host import collector

    if not collector.perf_available():
        pytest.skip("perf stat cannot count software events here")
    monkeypatch.setenv("LOCPATH", str(de_locale))
    monkeypatch.setenv("LC_ALL", "de_DE.UTF-8")
    probe = subprocess.run(["perf", "stat", "-x,", "-e", "task-clock", "--", "sleep", "0.01"],
                           capture_output=True, text=True)
    assert any(line.split(",")[1:2] and line.split(",")[1].isdigit() for line in probe.stderr.splitlines()
               if "task-clock" in line), probe.stderr  # this perf does print decimal commas under de_DE
    busy = subprocess.Popen([PY, "-c", "import time\nt=time.time()\nwhile time.time()-t<30: pass"])
    try:
        c = collector.WindowCollector(busy.pid, {}, use_perf=True)
        c.start()
        import time

        time.sleep(1.0)
        res = c.stop()
    finally:
        busy.kill()
        busy.wait()
    task_clock_s = res["perf"]["task-clock"]["value"] / 1000.0  # msec
    proc_s = res["cpu_time_s"]["user"] + res["cpu_time_s"]["system"]  # /proc's ticks, read apart from perf
    assert res["cpu_total_source"] == "perf task-clock (ns)"
    assert abs(task_clock_s - proc_s) <= 0.2 * proc_s + 0.05, (task_clock_s, proc_s)


# --- the walk reports what it cannot read ------------------------------------------------------------------

def deep_folder(parent: Path, depth: int = 22) -> None:
    """A folder whose path is longer than PATH_MAX (4096), holding one result file, made with dir fds."""
    fd = os.open(parent, os.O_RDONLY)
    try:
        for _ in range(depth):
            os.mkdir("d" * 200, dir_fd=fd)
            nfd = os.open("d" * 200, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = nfd
        f = os.open("deep.json", os.O_WRONLY | os.O_CREAT, dir_fd=fd)
        os.write(f, FIO_WRITE.read_bytes())
        os.close(f)
    finally:
        os.close(fd)


def test_the_walk_follows_a_linked_folder_once_and_names_a_loop(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "a.json").write_bytes(FIO_FILE.read_bytes())
    top = tmp_path / "top"
    top.mkdir()
    (top / "w.json").write_bytes(FIO_WRITE.read_bytes())
    (top / "linked").symlink_to(tmp_path / "real")
    (top / "again").symlink_to(tmp_path / "real")
    (top / "loop").symlink_to(top)
    from stormatrix.analysis.ingest import ingest

    data = ingest([top])
    assert len(data.frame) == 2  # w.json, and a.json once (through the first link)
    said = " ".join(data.notes)
    assert "loop" in said and "again" in said and "already read" in said


def test_the_walk_names_a_folder_past_the_path_limit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.json").write_bytes(FIO_FILE.read_bytes())
    deep_folder(tmp_path / "in")
    code, text = report([tmp_path / "in"], tmp_path, capsys)
    assert code == 0 and "more than this system allows" in text and len(text) < 3000
    code, text = report([tmp_path / "in"], tmp_path, capsys, "--strict")
    assert code == 2 and "more than this system allows" in text
    import shutil as sh

    for _ in range(3):  # (rmtree cannot reach past PATH_MAX by path: remove the chain bottom-up by fd)
        sh.rmtree(tmp_path / "in", ignore_errors=True)


def test_the_walk_names_a_folder_it_may_not_list(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if os.geteuid() == 0:
        pytest.skip("root may list any folder")
    (tmp_path / "in" / "locked").mkdir(parents=True)
    (tmp_path / "in" / "a.json").write_bytes(FIO_FILE.read_bytes())
    (tmp_path / "in" / "locked").chmod(0)
    try:
        code, text = report([tmp_path / "in"], tmp_path, capsys)
    finally:
        (tmp_path / "in" / "locked").chmod(0o755)
    assert code == 0 and "locked" in text and "cannot be listed" in text


# --- suite matrices that cannot run are refused before starting --------------------------------------------

def suite_file(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "s.toml"
    path.write_text(body)
    return path


@pytest.mark.parametrize("fio,says", [("/nonexistent/fio", "does not exist"), ("{dir}", "not an executable"),
                                      ("no-such-fio-binary", "no such program on PATH"), ("", "--fio is empty")])
def test_suite_run_refuses_a_fio_client_it_cannot_run_before_any_point(fio: str, says: str, tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    matrix = suite_file(tmp_path, SUITE)
    (tmp_path / "adir").mkdir()
    code, text = cli(["suite", "run", str(matrix), "-o", str(tmp_path / "run"),
                      "--fio", fio.replace("{dir}", str(tmp_path / "adir"))], capsys)
    assert code == 2 and says in text and "Fix:" in text
    assert not (tmp_path / "run" / "journal.ndjson").exists()  # no point journaled as an error


@pytest.mark.parametrize("guests", ['["a=BENCH-VM1.lab:8765", "b=bench-vm1.LAB:8765"]',
                                    '["vm1=10.0.0.1:8765", "VM1=10.0.0.2:8765"]'])
def test_one_guest_listed_twice_in_other_letter_case_is_refused(guests: str, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    matrix = suite_file(tmp_path, SUITE.replace('["vm01=10.0.0.11:8765"]', guests))
    code, text = cli(["suite", "plan", str(matrix)], capsys)
    assert code == 2 and "[suite] guests" in text and "case" in text, text


def test_different_guests_are_still_accepted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    matrix = suite_file(tmp_path, SUITE.replace('["vm01=10.0.0.11:8765"]',
                                                '["vm1=10.0.0.1:8765", "vm2=10.0.0.2:8765", "vm3=10.0.0.1:8766"]'))
    code, text = cli(["suite", "plan", str(matrix)], capsys)
    assert code == 0, text


VMS_SUITE = """[suite]
side = "A"
filename = "/dev/sdb"
vms = [101, 102, 103]
network = "{net}"
[proxmox]
host = "10.0.0.2"
node = "pve"
token_id = "root@pam!t"
token_secret_env = "PVE_TOKEN"
"""


@pytest.mark.parametrize("net,says", [("127.0.0.0/8", "loopback"), ("10.0.0.5/32", "1 address(es) for 3 VMs"),
                                      ("10.0.0.4/31", "2 address(es)"), ("224.0.0.0/24", "multicast")])
def test_a_network_that_cannot_hold_the_vms_is_refused(net: str, says: str, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    code, text = cli(["suite", "plan", str(suite_file(tmp_path, VMS_SUITE.format(net=net)))], capsys)
    assert code == 2 and "[suite] network" in text and says in text, text


def test_a_network_with_room_for_the_vms_is_accepted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, text = cli(["suite", "plan", str(suite_file(tmp_path, VMS_SUITE.format(net="10.0.0.0/29")))], capsys)
    assert code == 0, text


def test_suite_plan_output_refuses_what_suite_run_refuses(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "journal.ndjson").write_text(json.dumps({"schema": "stormatrix/record-1", "type": "run", "suite": "s",
                                                        "side": "B", "guests": [{"name": "vm01"}]}) + "\n")
    matrix = suite_file(tmp_path, SUITE)
    code, plan_text = cli(["suite", "plan", str(matrix), "-o", str(run_dir)], capsys)
    assert code == 2 and "side" in plan_text
    code, run_text = cli(["suite", "run", str(matrix), "-o", str(run_dir)], capsys)
    assert code == 2 and plan_text.splitlines()[-1] == run_text.splitlines()[-1]


# --- guest check options are checked before connecting ------------------------------------------------------

GUEST = ["guest", "check", "--host", "127.0.0.1", "--port", "1", "--username", "u", "--password-env", "SMX_PW",
         "--disk-serial", "S1", "--timeout", "1"]


@pytest.mark.parametrize("opt,value,says", [("--controller", "bogus", "not a controller"),
                                            ("--controller", "virtio-scsi-singel", "not a controller"),
                                            ("--timeout", "3600000", "hours"), ("--timeout", "86400", "hours")])
def test_guest_check_options_are_refused_before_connecting(opt: str, value: str, says: str,
                                                           monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("SMX_PW", "pw")
    from stormatrix.executors.winrm import executor as winrm

    def never(*a: object, **k: object) -> None:
        raise AssertionError("connected before checking the options")

    monkeypatch.setattr(winrm.WinRMExecutor, "wait_ready", never)
    argv = list(GUEST)
    if opt in argv:
        argv[argv.index(opt) + 1] = value
    else:
        argv += [opt, value]
    code, text = cli(argv, capsys)
    assert code == 2 and opt in text and says in text


@pytest.mark.parametrize("value,canonical", [("virtio-scsi", "virtio-scsi-pci"), ("VIRTIO-BLK", "virtio-blk"),
                                             ("virtio", "virtio-blk"), ("pvscsi", "pvscsi"), ("nvme", "nvme")])
def test_guest_check_takes_the_controllers_the_guest_module_knows(value: str, canonical: str) -> None:
    from stormatrix.cli import build_parser

    args = build_parser().parse_args(GUEST + ["--controller", value, "--timeout", "10800"])
    assert args.controller == canonical and args.timeout == 10800


# --- secrets in a URL are never echoed ------------------------------------------------------------------------

MATRIX = """[run]
name = "x"
[matrix]
controllers = ["virtio-blk"]
[[workload]]
name = "w"
rw = "randread"
bs = "4k"
"""


@pytest.mark.parametrize("host", [f"https://root:{SECRET}@pve.lab:8006", f"root:{SECRET}@pve.lab",
                                  f"https://root@pam!tok={SECRET}@pve:8006/api2/json"])
def test_a_secret_in_a_host_url_is_not_echoed(host: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    m = tmp_path / "m.toml"
    m.write_text(MATRIX + f'[proxmox]\nhost = "{host}"\nnode = "pve"\nvmid = 100\ntest_disk = "scsi1"\n'
                 'token_id = "root@pam!t"\ntoken_secret_env = "PVE_TOKEN"\n')
    code, text = cli(["plan", str(m)], capsys)
    assert code == 2 and "[proxmox] host" in text and SECRET not in text and "pve" in text


def test_a_secret_in_a_guest_url_is_not_echoed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    matrix = suite_file(tmp_path, SUITE.replace('"vm01=10.0.0.11:8765"', f'"vm01=http://u:{SECRET}@10.0.0.11:8765"'))
    code, text = cli(["suite", "plan", str(matrix)], capsys)
    assert code == 2 and SECRET not in text
    code, text = cli(GUEST[:2] + ["--host", f"http://u:{SECRET}@10.0.0.5:5985"] + GUEST[4:], capsys)
    assert code == 2 and SECRET not in text and "--host" in text


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


@pytest.mark.parametrize("rate,rw,mib", [("10m,20m", "randwrite", 20.0), ("10m,20m", "randread", 10.0),
                                         ("10m,20m", "randrw", None), ("32m", "randrw", 32.0), (",20m", "write", 20.0),
                                         (",20m", "read", None)])
def test_a_per_direction_rate_is_read_for_the_directions_used(rate: str, rw: str, mib: float | None,
                                                              tmp_path: Path) -> None:
    import json

    from stormatrix.analysis.ingest import ingest

    doc = json.loads(FIO_FILE.read_text())
    doc["jobs"][0]["job options"].update(rate=rate, rw=rw)
    path = tmp_path / "x.json"
    path.write_text(json.dumps(doc))
    frame = ingest([path]).frame
    value = frame["rate_mib_s"].iloc[0]
    assert (value == mib) if mib is not None else not (value == value)  # (NaN: no one rate)
