"""The bad-input corpus through the CLI: matrix files, fio JSON, DiskSpd XML, perf
CSV, journals and CLI arguments, including huge values, unicode, NaN/Inf, negative and zero rates and
duplicate keys.

Every case must end with exit code 2 and one message that names the file (or the argument) and,
where one exists, the key and the fix; never a traceback; and no existing output overwritten (each
report/compare case starts with a workbook and a CSV already in place, and checks them byte for byte).

The 77 files of the malformed-analysis corpus (tests/data/malformed) run here through the CLI too,
under ``--strict``; test_analysis_malformed.py checks them through ingest() without ``--strict``.
"""

from __future__ import annotations

import gzip
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pytest

from stormatrix.cli import main
import paths

DATA = paths.DATA
SENTINEL = b"existing output: must not be overwritten\n"


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """The CLI in-process; argparse's own usage errors arrive as SystemExit(2)."""
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 2
    captured = capsys.readouterr()
    return code, captured.err + captured.out


def assert_clean_failure(code: int, text: str, *needles: str) -> None:
    assert code == 2, text
    assert "Traceback" not in text and "Error:" not in text.split("error:")[0], text
    for needle in needles:
        assert needle in text, (needle, text)


# --- 1. matrix files ----------------------------------------------------------------------------------

BASE = {
    "run": {"name": '"x"', "ramp_seconds": "1", "measure_seconds": "2"},
    "matrix": {"controllers": '["virtio-blk"]'},
    "workload": {"name": '"w"', "rw": '"randread"', "bs": '"4k"'},
}


def render(mut: dict[str, dict[str, str | None]] | None = None, extra: str = "") -> str:
    """BASE with some keys changed (value text) or removed (None), as TOML text."""
    mut = mut or {}
    out = []
    for section, keys in BASE.items():
        keys = {**keys, **mut.get(section, {})}
        out.append("[[workload]]" if section == "workload" else f"[{section}]")
        out += [f"{k} = {v}" for k, v in keys.items() if v is not None]
        out.append("")
    for section, keys in mut.items():
        if section not in BASE:
            out.append(f"[{section}]")
            out += [f"{k} = {v}" for k, v in keys.items() if v is not None]
            out.append("")
    return "\n".join(out) + extra


PROXMOX = {"host": '"127.0.0.1"', "node": '"pve"', "vmid": "100", "test_disk": '"scsi1"', "token_id": '"t"',
           "token_secret_env": '"X"'}

# (id, matrix text or bytes, things the message must name)
MATRIX_CASES: list[tuple[str, str | bytes, tuple[str, ...]]] = []


def mcase(case_id: str, text: str | bytes, *needles: str) -> None:
    MATRIX_CASES.append((case_id, text, needles))


def run_key(key: str, values: list[str], fix: str = "Fix:") -> None:
    for i, v in enumerate(values):
        mcase(f"run.{key}[{i}]={v[:20]}", render({"run": {key: v}}), f"[run] {key}", fix)


run_key("name", ["5", "true", "[]", "{a = 1}"])
run_key("backend", ['"esx"', "1", '"QEMU"', '"qemu\\u0000"'])
run_key("executor", ['"ssh"', '""'])
run_key("guest_os", ['"win10"'])
run_key("repeats", ["0", "-1", "101", "1.5", '"3"', "9223372036854775807", "-9223372036854775808"])
run_key("ramp_seconds", ["-1", "nan", "inf", "-inf", '"5s"', "86401", "1e308"])
run_key("measure_seconds", ["0", "0.5", "nan", "+inf", "-5", "1e20", "-0.0"])
run_key("cv_limit_pct", ["-1", "nan", "1e9"])
run_key("rate_tolerance_pct", ["101", "-0.1", "inf"])
run_key("crosscheck_tolerance_pct", ["nan", "-1"])
run_key("on_error", ['"continue"', '"SKIP"', "0"])
run_key("retries", ["-1", "11", "2.0", "true", "1e3"])
run_key("boot_timeout_seconds", ["0", "1e9", "-inf"])
run_key("allow_write", ['"yes"', "1"])
run_key("preflight", ['"true"'])
mcase("run.unknown-key", render({"run": {"ramp_second": "5"}}), "[run] ramp_second", "did you mean 'ramp_seconds'")
mcase("run.unicode-key", render({"run": {'"rämp_seconds"': "5"}}), "[run] rämp_seconds", "unknown key")


def matrix_key(key: str, values: list[str], *needles: str) -> None:
    for i, v in enumerate(values):
        mcase(f"matrix.{key}[{i}]={v[:20]}", render({"matrix": {key: v}}), f"[matrix] {key}", *needles)


matrix_key("controllers", ["[]", '["scsi"]', '["virtio-blk", "virtio-blk"]', "[1]", '["VIRTIO-BLK"]',
                           '["виртио"]', '["virtio-blk\\u0000"]', '["' + "x" * 5000 + '"]', "[[]]", "true"], "Fix:")
matrix_key("aio", ['["posix"]', "[]", '["native", "native"]', '["io_uring", 3]'], "Fix:")
matrix_key("iothread", ['["yes"]', "[1]", "[]"], "Fix:")
matrix_key("cache", ['["wb"]', '["none", "none"]', '["None"]'], "Fix:")
matrix_key("disk_slot", ["-1", "31", "99999", "1.5", "nan"], "Fix:")
matrix_key("skip_invalid", ['"true"'], "Fix:")
mcase("matrix.native-writeback", render({"matrix": {"aio": '["native"]', "cache": '["writeback"]'}}),
      "[matrix] aio/cache", "aio=native needs O_DIRECT", "Fix:")
mcase("matrix.ide-slot-4", render({"matrix": {"controllers": '["ide"]', "disk_slot": "4"}}),
      "[matrix] disk_slot", "ide0-ide3", "Fix:")
mcase("matrix.missing", "[run]\nname = \"x\"\n[[workload]]\nname = \"w\"\nrw = \"read\"\nbs = \"4k\"\n",
      "[matrix]", "is missing", "Fix:")
mcase("matrix.controllers-missing", render({"matrix": {"controllers": None, "aio": '["native"]'}}),
      "[matrix] controllers", "is required", "Fix:")
mcase("matrix.not-a-table", 'matrix = 5\n' + render().replace('[matrix]\ncontrollers = ["virtio-blk"]\n', ""),
      "[matrix]", "must be a table")


def workload_key(key: str, values: list[str], where: str = "") -> None:
    for i, v in enumerate(values):
        mcase(f"workload.{key}[{i}]={v[:20]}", render({"workload": {key: v}}), where or f"workload[1] {key}", "Fix:")


workload_key("rw", ['"randreads"', "1", '""', '"RANDREAD"'])
workload_key("bs", ['"4q"', "0", "-4096", '"1e999k"', '"99999999999999999999999k"', '""', '"4kk"', "4.5", "true",
                    '"½k"'], "workload[1]")
workload_key("bs", ['"1000"', "1000", '"513"'], "workload[1].bs")
workload_key("iodepth", ["0", "-1", "65537", '"8"', "nan", "1e3"])
workload_key("numjobs", ["0", "257", "-3"])
workload_key("rate_mib_s", ["-1", "nan", "inf", "-inf", "1e7", '"32m"', "-0.001"])
workload_key("rwmixread", ["101", "-1", "50.5"])
for k in ("name", "rw", "bs"):
    mcase(f"workload.{k}-missing", render({"workload": {k: None}}), f"workload[1] {k}", "is required", "Fix:")
mcase("workload.none", render().split("[[workload]]")[0], "[[workload]]", "no workload defined", "Fix:")
mcase("workload.not-array", "workload = 5\n" + render().split("[[workload]]")[0], "[[workload]]", "array of tables")
mcase("workload.duplicate-names", render() + '\n[[workload]]\nname = "w"\nrw = "read"\nbs = "4k"\n',
      "workload[2].name", "used by two workloads", "Fix:")
mcase("workload.unknown-key", render({"workload": {"blocksize": '"4k"'}}), "workload[1] blocksize", "unknown key")
mcase("workload.unicode-name-dup", render({"workload": {"name": '"wörk"'}}) +
      '\n[[workload]]\nname = "wörk"\nrw = "read"\nbs = "4k"\n', "workload[2].name", "'wörk'")

# sections
mcase("section.unknown", render({"runn": {"a": "1"}}), "[runn]", "unknown section", "did you mean [run]")
mcase("section.top-level-key", "foo = 1\n" + render(), "[foo]", "unknown section")
mcase("section.run-not-table", render().replace('[run]\nname = "x"\nramp_seconds = 1\nmeasure_seconds = 2\n', "")
      .replace("[matrix]", "run = 5\n[matrix]"), "[run]", "must be a table")
for i, (k, v) in enumerate([("vmid", "5"), ("test_disk", '"scsi99"'), ("test_disk", '"sata9"'), ("test_disk", '"disk1"'),
                            ("pin_cpus", '"3-1"'), ("pin_cpus", '"all"'), ("guest_channel", '"serial9"'),
                            ("port", "0"), ("port", "70000"), ("transport", '"ssh"'), ("timeout", "0"),
                            ("token_secret", '"s3cr3t-do-not-echo"'), ("verify_tls", '"no"'), ("task_timeout", "nan")]):
    text = render({"run": {"backend": '"proxmox"'}, "proxmox": {**PROXMOX, k: v}})
    mcase(f"proxmox.{k}[{i}]", text, f"[proxmox] {k}", "Fix:")
mcase("proxmox.node-missing", render({"run": {"backend": '"proxmox"'}, "proxmox": {**PROXMOX, "node": None}}),
      "[proxmox] node", "is required")
for i, (k, v) in enumerate([("transport", '"telnet"'), ("port", "-1"), ("password", '"hunter2-do-not-echo"'),
                            ("cert_validation", '"off"'), ("engine", '"iometer"')]):
    mcase(f"winrm.{k}[{i}]", render({"winrm": {"host": '"g"', "username": '"u"', "disk_serial": '"S"', k: v}}), f"[winrm] {k}", "Fix:")

# the file itself
mcase("toml.duplicate-key", render().replace('name = "x"', 'name = "x"\nname = "y"'), "not valid TOML", "duplicate")
mcase("toml.duplicate-table", render() + '\n[run]\nname = "z"\n', "not valid TOML", "Fix:")
mcase("toml.unterminated-string", render().replace('"x"', '"x'), "not valid TOML", "Fix:")
mcase("toml.invalid-utf8", render().encode() + b'\n# \xff\xfe\xfd\n', "is not UTF-8 text", "save the file as UTF-8")
mcase("toml.nul-byte", render() + "\x00", "not valid TOML")
mcase("toml.bom", "\ufeff" + render(), "not valid TOML")
mcase("toml.utf16", render().encode("utf-16"), "is not UTF-8 text")
mcase("toml.binary", bytes(range(256)) * 4, "is not UTF-8 text")
mcase("toml.gzip", gzip.compress(render().encode()), "is not UTF-8 text")
mcase("toml.empty", "", "[matrix]", "is missing")
mcase("toml.whitespace", "\n\n   \n", "[matrix]", "is missing")
mcase("toml.json-instead", json.dumps({"run": {}, "matrix": {"controllers": ["ide"]}}), "not valid TOML")
mcase("toml.yaml-instead", "run:\n  name: x\nmatrix:\n  controllers: [ide]\n", "not valid TOML")
mcase("toml.deep-nesting", "a = " + "[" * 5000 + "]" * 5000 + "\n" + render(), "Fix:")
mcase("toml.huge-int", render({"run": {"repeats": "1" + "0" * 400}}), "[run] repeats")
mcase("toml.huge-float", render({"run": {"ramp_seconds": "1e400"}}), "[run] ramp_seconds", "finite")
mcase("toml.long-line", render({"run": {"name": '"' + "x" * 200_000 + '"'}}).replace(
    "[matrix]", "[matrix]\nbogus = 1"), "[matrix] bogus", "unknown key")


@pytest.mark.parametrize("case_id,text,needles", MATRIX_CASES, ids=[c[0] for c in MATRIX_CASES])
def test_bad_matrix_file(case_id: str, text: str | bytes, needles: tuple[str, ...], tmp_path: Path,
                         capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad matrix ü.toml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    code, out = run_cli(["plan", str(path)], capsys)
    assert_clean_failure(code, out, str(path), *needles)
    for secret in ("s3cr3t-do-not-echo", "hunter2-do-not-echo"):
        assert secret not in out  # a misplaced secret is named by its key, never echoed
    assert len(out) < 3000, out[:500]  # one message, not a dump of the file
    if case_id.startswith(("run.repeats", "matrix.controllers", "toml.empty")):  # `run` refuses before anything
        code, out = run_cli(["run", str(path), "-o", str(tmp_path / "run")], capsys)
        assert_clean_failure(code, out, str(path))
        assert not (tmp_path / "run").exists()


def test_matrix_paths_that_are_not_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run_cli(["plan", str(tmp_path / "missing.toml")], capsys)
    assert_clean_failure(code, out, "missing.toml", "file not found", "Fix:")
    code, out = run_cli(["plan", str(tmp_path)], capsys)
    assert_clean_failure(code, out, str(tmp_path), "cannot be read", "Fix:")


# --- 2. data files: fio JSON, DiskSpd XML, perf CSV, journals -----------------------------------------

FIO = json.loads((DATA / "fio" / "fio3_randread_bs4k_qd1.json").read_text())
JOURNAL_LINES = (DATA / "journal" / "sample_run" / "journal.ndjson").read_text().splitlines()
DISKSPD = (DATA / "diskspd" / "diskspd_randread_64k_qd8_t1.xml").read_text()


@dataclass(frozen=True)
class DataCase:
    id: str
    name: str  # file name (suffix decides the parser)
    content: bytes
    extra: tuple[tuple[str, bytes], ...] = ()  # sidecar files (perf CSV next to a fio JSON)


DATA_CASES: list[DataCase] = []


def fio_case(case_id: str, mutate: Callable[[dict[str, Any]], Any], *, raw: Callable[[str], str] | None = None) -> None:
    doc = json.loads(json.dumps(FIO))
    mutate(doc)
    text = json.dumps(doc)
    if raw:
        text = raw(text)
    DATA_CASES.append(DataCase(f"fio.{case_id}", f"{case_id}.json", text.encode("utf-8")))


def setp(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def f(doc: dict[str, Any]) -> None:
        node: Any = doc
        parts = path.split(".")
        for p in parts[:-1]:
            node = node[int(p)] if p.isdigit() else node[p]
        last = parts[-1]
        node[int(last) if last.isdigit() else last] = value
    return f


for direction in ("read",):
    for field_name, values in {"io_bytes": [-1, -(2**63), 10**400 if False else 1e308 * 10, "NaN"],
                               "runtime": [-5, 0], "iops": [-1.0, "∞"], "bw_bytes": [-3]}.items():
        for i, v in enumerate(values):
            fio_case(f"{direction}.{field_name}[{i}]", setp(f"jobs.0.{direction}.{field_name}", v))
fio_case("nan-literal-io_bytes", lambda d: None, raw=lambda t: t.replace('"io_bytes": ', '"io_bytes": NaN, "x": ', 1))
fio_case("infinity-runtime", setp("jobs.0.read.runtime", float("inf")))
fio_case("neg-infinity-iops", lambda d: None, raw=lambda t: t.replace('"iops": ', '"iops": -Infinity, "z": ', 1))
fio_case("huge-exponent", lambda d: None, raw=lambda t: t.replace('"io_bytes": ', '"io_bytes": 1e999, "w": ', 1))
# Duplicate keys in JSON are accepted, last one wins (as json.loads, jq and fio's own tools do): they
# are not in this corpus. Duplicate keys in a matrix file are an error (TOML forbids them): above.
fio_case("zero-runtime-all", lambda d: [d["jobs"][0][k].update(runtime=0) for k in ("read", "write", "trim")])
fio_case("total-ios-negative", setp("jobs.0.read.total_ios", -100))
fio_case("jobs-null-entry", setp("jobs", [None]))
fio_case("jobs-string", setp("jobs", "measure"))
fio_case("error-nonzero", setp("jobs.0.error", 5))
fio_case("unicode-garbage-jobname-and-no-io", lambda d: [d["jobs"][0].update(jobname="测试\u202e"),
                                                        *(d["jobs"][0][k].update(io_bytes=0, total_ios=0)
                                                          for k in ("read", "write", "trim"))])
fio_case("read-is-list", setp("jobs.0.read", [1, 2]))
# counts past 64-bit signed (fio's counters are unsigned 64-bit): read without a traceback, refused as data
for i, v in enumerate([2**63, 2**64 - 1, 2**64, 10**30]):
    fio_case(f"io_bytes-2^64[{i}]", setp("jobs.0.read.io_bytes", v))
for i, v in enumerate([2**63, 2**64]):
    fio_case(f"total_ios-2^64[{i}]", setp("jobs.0.read.total_ios", v))
# rates that disagree with the bytes, I/Os and runtime next to them: flagged, not written as data
for i, (name, v) in enumerate([("iops", 1e300), ("iops", 1e6), ("bw_bytes", 2**64), ("bw_bytes", 1.0),
                               ("bw_bytes", 2**40), ("runtime", 1)]):
    fio_case(f"impossible-rate[{i}]-{name}", setp(f"jobs.0.read.{name}", v))
fio_case("35MB-in-1s-at-2^64-B/s".replace("/", "per"), lambda d: d["jobs"][0]["read"].update(
    io_bytes=35_000_000, total_ios=8545, runtime=1000, bw_bytes=2**64, iops=8545.0))
fio_case("35MB-in-1s-at-1e300-IOPS", lambda d: d["jobs"][0]["read"].update(
    io_bytes=35_000_000, total_ios=8545, runtime=1000, bw_bytes=35_000_000.0, iops=1e300))
fio_case("deep-nesting", lambda d: None, raw=lambda t: "[" * 100_000 + "]" * 100_000)
DATA_CASES.append(DataCase("fio.bom-then-garbage", "bom.json", b"\xef\xbb\xbf" + b"{not json"))
DATA_CASES.append(DataCase("fio.huge-single-line-garbage", "huge.json", b"x" * 3_000_000))


def diskspd_case(case_id: str, old: str, new: str, count: int = 1) -> None:
    assert old in DISKSPD, old
    DATA_CASES.append(DataCase(f"diskspd.{case_id}", f"{case_id}.xml", DISKSPD.replace(old, new, count).encode()))


m = re.search(r"<TestTimeSeconds>([^<]*)</TestTimeSeconds>", DISKSPD)
assert m
for i, v in enumerate(["NaN", "inf", "-1", "1e999", "-0"]):
    diskspd_case(f"testtime[{i}]", m.group(0), f"<TestTimeSeconds>{v}</TestTimeSeconds>")
rc = re.search(r"<ReadCount>([^<]*)</ReadCount>", DISKSPD)
rb = re.search(r"<ReadBytes>([^<]*)</ReadBytes>", DISKSPD)
assert rc and rb
for i, v in enumerate(["-5", "NaN", "1e999", "12abc", ""]):
    diskspd_case(f"readcount[{i}]", rc.group(0), f"<ReadCount>{v}</ReadCount>", count=-1)
for i, v in enumerate(["-65536", "inf"]):
    diskspd_case(f"readbytes[{i}]", rb.group(0), f"<ReadBytes>{v}</ReadBytes>", count=-1)
DATA_CASES.append(DataCase("diskspd.billion-laughs", "laughs.xml", (
    '<?xml version="1.0"?><!DOCTYPE r [<!ENTITY a "aaaaaaaaaa">' +
    "".join(f'<!ENTITY {chr(98 + i)} "{("&" + chr(97 + i) + ";") * 10}">' for i in range(8)) +
    ']><Results><System>&i;</System></Results>').encode()))
DATA_CASES.append(DataCase("diskspd.utf16-garbage", "u16.xml", "<Results><<<".encode("utf-16")))


def perf_case(case_id: str, csv_text: str) -> None:
    DATA_CASES.append(DataCase(f"perf.{case_id}", f"{case_id}.json", json.dumps(FIO).encode(),
                               ((f"{case_id}.perf.csv", csv_text.encode()),)))


for i, (ctx, clock) in enumerate([("nan", "1000.0"), ("-5", "1000.0"), ("inf", "1000.0"), ("12", "NaN"),
                                  ("12", "-1000"), ("12", "inf"), ("1e999", "1")]):
    perf_case(f"values[{i}]", f"{ctx},,context-switches,1000,100.00,,\n{clock},msec,cpu-clock,1000,100.00,,\n")


def journal_case(case_id: str, mutate: Callable[[dict[str, Any]], Any] | None = None, *,
                 raw: Callable[[str], str] | None = None) -> None:
    run, cell = JOURNAL_LINES[0], json.loads(JOURNAL_LINES[1])
    if mutate:
        mutate(cell)
    line = json.dumps(cell)
    if raw:
        line = raw(line)
    DATA_CASES.append(DataCase(f"journal.{case_id}", "journal.ndjson", (run + "\n" + line + "\n").encode("utf-8")))


journal_case("per_mib-negative", setp("per_mib.ctx", -3.0))
journal_case("cpu_total-negative", setp("host.cpu_total", -1.0))
journal_case("ctx-negative", setp("host.ctx_switches", -100))
journal_case("io_bytes-negative", setp("fio.total.io_bytes", -1))
journal_case("io_bytes-zero", lambda c: [c["fio"]["total"].update(io_bytes=0), c["per_mib"].update(mib=0.0)])
journal_case("nan-literal", raw=lambda t: t.replace('"ctx_switches": ', '"ctx_switches": NaN, "q": ', 1))
journal_case("infinity-literal", raw=lambda t: t.replace('"cpu_total": ', '"cpu_total": Infinity, "q": ', 1))
journal_case("huge-number", raw=lambda t: t.replace('"ctx_switches": ', '"ctx_switches": 1e999, "q": ', 1))
journal_case("duplicate-key", raw=lambda t: t.replace('"type": "cell"', '"type": "cell", "type": "bogus"', 1))
journal_case("cell-is-string", setp("cell", "virtio-blk"))
journal_case("bs-negative", setp("cell.workload.bs", -4096))
journal_case("bs-huge", setp("cell.workload.bs", 10**30))
journal_case("iodepth-zero", setp("cell.workload.iodepth", 0))
journal_case("rate-negative", setp("cell.workload.rate_mib_s", -32.0))
journal_case("repeat-string", setp("cell.repeat", "first"))
journal_case("host-string", setp("host", "n/a"))
journal_case("window-negative", setp("host.window_s", -10.0))
journal_case("io_bytes-2^64", setp("fio.total.io_bytes", 2**64))
journal_case("total_ios-2^63", setp("fio.total.total_ios", 2**63))
journal_case("iops-1e300", setp("fio.total.iops", 1e300))
journal_case("bw-2^64", setp("fio.total.bw_bytes", 2**64))
journal_case("engine-unknown", setp("raw.engine", "iometer"))
DATA_CASES.append(DataCase("journal.only-run-record", "journal.ndjson", (JOURNAL_LINES[0] + "\n").encode()))
DATA_CASES.append(DataCase("journal.torn-only-line", "journal.ndjson", JOURNAL_LINES[1][:500].encode()))
DATA_CASES.append(DataCase("journal.nul-bytes", "journal.ndjson", b"\x00" * 4096))

MALFORMED = sorted(p for p in (DATA / "malformed").rglob("*") if p.is_file() and p.parent.name != "malformed"
                   and not p.name.endswith(".perf.csv"))


def _existing_outputs(tmp_path: Path) -> tuple[Path, Path]:
    out, csv = tmp_path / "out" / "report.xlsx", tmp_path / "out" / "report.csv"
    out.parent.mkdir()
    out.write_bytes(SENTINEL)
    csv.write_bytes(SENTINEL)
    return out, csv


@pytest.mark.parametrize("case", DATA_CASES, ids=[c.id for c in DATA_CASES])
def test_bad_data_file_report(case: DataCase, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "in"
    src.mkdir()
    path = src / case.name
    path.write_bytes(case.content)
    for name, content in case.extra:
        (src / name).write_bytes(content)
    out, csv = _existing_outputs(tmp_path)
    code, text = run_cli(["report", str(path), "-o", str(out), "--strict"], capsys)
    named = src / case.extra[0][0] if case.extra else path
    assert_clean_failure(code, text, str(named), "Fix:")
    assert out.read_bytes() == SENTINEL and csv.read_bytes() == SENTINEL


@pytest.mark.parametrize("path", MALFORMED, ids=[f"{p.parent.name}/{p.name}" for p in MALFORMED])
def test_malformed_corpus_file_compare(path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = DATA / "fio" / "fio3_randread_bs4k_qd1.json"
    out, csv = _existing_outputs(tmp_path)
    code, text = run_cli(["compare", str(good), str(path), "-o", str(out), "--strict"], capsys)
    named = path.with_name(path.stem + ".perf.csv") if path.parent.name == "perf" else path
    assert_clean_failure(code, text, str(named))
    assert out.read_bytes() == SENTINEL and csv.read_bytes() == SENTINEL


# --- 3. CLI arguments ----------------------------------------------------------------------------------

GOOD_FIO = str(DATA / "fio" / "fio3_randread_bs4k_qd1.json")
GOOD_RUN = str(DATA / "journal" / "sample_run")

# (id, argv with {out} {csv} {tmp} placeholders, things the message must name)
CLI_CASES: list[tuple[str, list[str], tuple[str, ...]]] = [
    ("no-args-at-all", [], ("usage",)),
    ("unknown-command", ["frobnicate"], ("invalid choice", "frobnicate")),
    ("unknown-option", ["report", GOOD_FIO, "-o", "{out}", "--frob"], ("unrecognized arguments", "--frob")),
    ("report-no-output", ["report", GOOD_FIO], ("-o/--output",)),
    ("report-no-input", ["report", "-o", "{out}"], ("INPUT",)),
    ("report-output-txt", ["report", GOOD_FIO, "-o", "{tmp}/x.txt"], ("x.txt", ".xlsx")),
    ("report-output-no-suffix", ["report", GOOD_FIO, "-o", "{tmp}/report"], (".xlsx",)),
    ("report-output-is-dir", ["report", GOOD_FIO, "-o", "{tmp}/dir.xlsx"], ("dir.xlsx", "directory")),
    ("report-output-is-input", ["report", "{tmp}/copy.xlsx", "-o", "{tmp}/copy.xlsx"], ("copy.xlsx",)),
    ("report-csv-is-input", ["report", "{tmp}/run", "-o", "{out}", "--csv", "{tmp}/run/journal.ndjson"],
     ("journal.ndjson", "would overwrite a run journal")),
    ("report-csv-is-input-fio", ["report", "{tmp}/in.json", "-o", "{out}", "--csv", "{tmp}/in.json"], ("in.json", "input")),
    ("report-csv-same-as-output", ["report", GOOD_FIO, "-o", "{out}", "--csv", "{out}"], ("--csv",)),
    ("report-missing-input", ["report", "{tmp}/nope.json", "-o", "{out}"], ("nope.json",)),
    ("report-missing-input-strict", ["report", "{tmp}/nope.json", "-o", "{out}", "--strict"], ("nope.json",)),
    ("report-empty-dir", ["report", "{tmp}/empty", "-o", "{out}"], ("empty", "no usable results")),
    ("report-glob-matches-nothing", ["report", "{tmp}/*.nothing", "-o", "{out}"], ("*.nothing",)),
    ("report-unicode-missing-input", ["report", "{tmp}/résultats-测试.json", "-o", "{out}"], ("résultats-测试.json",)),
    ("report-huge-path", ["report", "{tmp}/" + "a" * 5000 + ".json", "-o", "{out}"], ("aaaa",)),
    # inputs that are not files: refused without reading them (they would never end, or block)
    ("report-dev-zero", ["report", "/dev/zero", "-o", "{out}"], ("/dev/zero", "character device", "Fix:")),
    ("report-dev-urandom", ["report", "/dev/urandom", "-o", "{out}"], ("/dev/urandom", "Fix:")),
    ("report-dev-null", ["report", "/dev/null", "-o", "{out}"], ("/dev/null", "Fix:")),
    ("report-good-and-dev-zero", ["report", GOOD_FIO, "/dev/zero", "-o", "{out}"], ("/dev/zero",)),
    ("compare-dev-zero", ["compare", "/dev/zero", GOOD_RUN, "-o", "{out}"], ("/dev/zero",)),
    # outputs that cannot be files: refused before anything is read, naming the culprit
    ("report-output-under-a-file", ["report", GOOD_FIO, "-o", "{tmp}/in.json/r.xlsx"], ("-o", "in.json", "not a directory")),
    ("report-output-deep-under-a-file", ["report", GOOD_FIO, "-o", "{tmp}/in.json/a/b/r.xlsx"], ("in.json",)),
    ("report-csv-under-a-file", ["report", GOOD_FIO, "-o", "{out}", "--csv", "{tmp}/in.json/r.csv"],
     ("--csv", "in.json", "not a directory")),
    ("report-csv-on-a-device", ["report", GOOD_FIO, "-o", "{out}", "--csv", "/dev/null"], ("--csv", "/dev/null")),
    ("compare-output-under-a-file", ["compare", GOOD_FIO, GOOD_RUN, "-o", "{tmp}/in.json/c.xlsx"], ("-o", "in.json")),
    ("compare-csv-under-a-file", ["compare", GOOD_FIO, GOOD_RUN, "-o", "{out}", "--csv", "{tmp}/in.json/c.csv"],
     ("--csv", "in.json")),
]
for i, v in enumerate(["abc", "nan", "-1", "inf", "-inf", "0", "1e309", "", "0x10", "10", "1.5", "5000%", "%",
                       "-10%", "nan%"]):
    CLI_CASES.append((f"report-cv-limit[{i}]={v}", ["report", GOOD_FIO, "-o", "{out}", "--cv-limit", v], ("--cv-limit",)))
for i, v in enumerate(["0", "1", "nan", "-0.5", "2", "inf", "x"]):
    CLI_CASES.append((f"compare-alpha[{i}]={v}", ["compare", GOOD_FIO, GOOD_RUN, "-o", "{out}", "--alpha", v], ("--alpha",)))
CLI_CASES += [
    ("compare-one-side", ["compare", GOOD_FIO, "-o", "{out}"], ("B",)),
    ("compare-side-b-missing", ["compare", GOOD_FIO, "{tmp}/nope", "-o", "{out}"], ("nope",)),
    ("compare-side-a-empty-dir", ["compare", "{tmp}/empty", GOOD_FIO, "-o", "{out}"], ("side A", "empty")),
    ("compare-output-csv", ["compare", GOOD_FIO, GOOD_RUN, "-o", "{tmp}/x.csv"], (".xlsx",)),
    ("compare-csv-is-input", ["compare", "{tmp}/in.json", GOOD_RUN, "-o", "{out}", "--csv", "{tmp}/in.json"],
     ("in.json", "input")),
    ("plan-no-matrix", ["plan"], ("matrix",)),
    ("run-no-output", ["run", "{tmp}/m.toml"], ("-o/--output",)),
    ("run-output-is-a-file", ["run", "{tmp}/m.toml", "-o", "{tmp}/in.json"], ("in.json",)),
    ("run-matrix-missing", ["run", "{tmp}/nope.toml", "-o", "{tmp}/r"], ("nope.toml", "file not found")),
    ("run-verbose-garbage", ["-v=3", "run"], ("-v",)),
    ("restore-no-journal", ["restore", "{tmp}/empty"], ("empty", "journal.ndjson")),
    ("restore-not-a-dir", ["restore", "{tmp}/in.json"], ("in.json",)),
    ("restore-torn-garbage-journal", ["restore", "{tmp}/garbled"], ("journal.ndjson", "line 1")),
    ("suite-no-action", ["suite"], ("ACTION",)),
    ("suite-plan-no-suite-section", ["suite", "plan", "{tmp}/m.toml"], ("[suite]",)),
    ("guest-check-no-host", ["guest", "check", "--username", "u", "--password-env", "X", "--disk-serial", "S"], ("--host",)),
    ("guest-check-password-on-cli", ["guest", "check", "--host", "h", "--username", "u", "--password", "pw",
                                     "--disk-serial", "S"], ("--password",)),
    ("guest-check-both-passwords", ["guest", "check", "--host", "h", "--username", "u", "--password-env", "X",
                                    "--password-file", "f", "--disk-serial", "S"], ("not allowed with",)),
    ("guest-check-unset-env", ["guest", "check", "--host", "127.0.0.1", "--username", "u", "--password-env",
                               "SMX_SURELY_UNSET_VAR", "--disk-serial", "S", "--timeout", "1"], ("SMX_SURELY_UNSET_VAR", "Fix:")),
    ("guest-check-missing-password-file", ["guest", "check", "--host", "127.0.0.1", "--username", "u", "--password-file",
                                           "{tmp}/nope.pw", "--disk-serial", "S", "--timeout", "1"],
     ("--password-file", "names no existing file", "Fix:")),  # not repeated: it could be a pasted secret
    ("guest-check-port-text", ["guest", "check", "--host", "h", "--username", "u", "--password-env", "X",
                               "--disk-serial", "S", "--port", "http"], ("--port",)),
    ("guest-check-port-huge", ["guest", "check", "--host", "127.0.0.1", "--username", "u", "--password-env", "X",
                               "--disk-serial", "S", "--port", "99999999999"], ("--port",)),
]


@pytest.mark.parametrize("case_id,argv,needles", CLI_CASES, ids=[c[0] for c in CLI_CASES])
def test_bad_cli_arguments(case_id: str, argv: list[str], needles: tuple[str, ...], tmp_path: Path,
                           capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("X", "pw")
    out, csv = _existing_outputs(tmp_path)
    (tmp_path / "empty").mkdir()
    (tmp_path / "dir.xlsx").mkdir()
    (tmp_path / "in.json").write_bytes((DATA / "fio" / "fio3_randread_bs4k_qd1.json").read_bytes())
    (tmp_path / "copy.xlsx").write_bytes(SENTINEL)
    (tmp_path / "run").mkdir()
    journal = (DATA / "journal" / "sample_run" / "journal.ndjson").read_bytes()
    (tmp_path / "run" / "journal.ndjson").write_bytes(journal)
    (tmp_path / "garbled").mkdir()
    (tmp_path / "garbled" / "journal.ndjson").write_bytes(b"garbage\n" + journal)
    (tmp_path / "m.toml").write_text(render())
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    argv = [a.replace("{out}", str(out)).replace("{tmp}", str(tmp_path)) for a in argv]
    code, text = run_cli(argv, capsys)
    assert_clean_failure(code, text, *needles)
    for p, content in before.items():  # nothing that existed was overwritten
        assert p.read_bytes() == content, p


def test_corpus_size() -> None:
    total = len(MATRIX_CASES) + 2 + len(DATA_CASES) + len(MALFORMED) + len(CLI_CASES)
    assert total >= 200, total
    assert not math.isnan(total)
