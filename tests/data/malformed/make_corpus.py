"""Builds the malformed-input corpus in this folder from the real captures next door.

Each file has one defect, named by its file name. ``tests/analysis/test_analysis_malformed.py`` checks that each
gives one clear per-file message and no traceback. Re-running this script reproduces the files exactly.

    python tests/data/malformed/make_corpus.py
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

HERE = Path(__file__).parent
DATA = HERE.parent
GOOD_FIO = (DATA / "fio" / "fio3_randread_bs4k_qd1.json").read_text()
GOOD_CLIENT = (DATA / "fio" / "client_server_2clients.json").read_text()
GOOD_XML = (DATA / "diskspd" / "diskspd_randread_64k_qd8_t1.xml").read_text()
GOOD_JOURNAL = (DATA / "journal" / "sample_run" / "journal.ndjson").read_text().splitlines()
GOOD_CELL = next(line for line in GOOD_JOURNAL if '"type": "cell"' in line)


def doc() -> dict:
    return json.loads(GOOD_FIO)


def dump(d: object) -> str:
    return json.dumps(d, indent=2)


def fio_cases() -> dict[str, str | bytes]:
    rng = random.Random(20261122)
    c: dict[str, str | bytes] = {}
    c["empty.json"] = ""
    c["whitespace_only.json"] = "  \n\t\n"
    n = len(GOOD_FIO)
    for pct in (10, 50, 90):
        c[f"truncated_at_{pct}pct.json"] = GOOD_FIO[: n * pct // 100]
    c["truncated_last_brace.json"] = GOOD_FIO.rstrip()[:-1]
    c["truncated_client_server.json"] = GOOD_CLIENT[: len(GOOD_CLIENT) // 2]
    c["garbage_prefix_same_line.json"] = "fio: some warning" + GOOD_FIO.lstrip()
    c["garbage_prefix_then_truncated.json"] = "\x1b[1;32mJobs: 1 (f=1)\x1b[0m\n" + GOOD_FIO[: n // 3]
    c["binary_junk.json"] = bytes(rng.randrange(256) for _ in range(2048))
    c["binary_nul.json"] = b"\x00" * 1024
    c["gzip_compressed.json"] = b"\x1f\x8b\x08\x00" + bytes(rng.randrange(256) for _ in range(512))
    c["json_array.json"] = "[1, 2, 3]\n"
    c["json_string.json"] = '"fio output"\n'
    c["json_number.json"] = "42\n"
    c["json_null.json"] = "null\n"
    c["empty_object.json"] = "{}\n"
    d = doc(); del d["jobs"]; c["no_jobs_key.json"] = dump(d)
    d = doc(); d["jobs"] = {"0": d["jobs"][0]}; c["jobs_not_list.json"] = dump(d)
    d = doc(); d["jobs"] = []; c["jobs_empty.json"] = dump(d)
    d = doc(); d["jobs"] = [1]; c["job_not_object.json"] = dump(d)
    d = doc(); del d["jobs"][0]["jobname"]; c["job_without_jobname.json"] = dump(d)
    d = doc(); d["jobs"][0]["jobname"] = 7; c["jobname_number.json"] = dump(d)
    d = doc(); d["jobs"][0]["read"] = "fast"; c["read_not_object.json"] = dump(d)
    d = doc(); d["jobs"][0]["read"]["iops"] = "8540"; c["iops_string.json"] = dump(d)
    d = doc(); d["jobs"][0]["read"]["iops"] = True; c["iops_bool.json"] = dump(d)
    d = doc(); d["jobs"][0]["read"]["io_bytes"] = None; c["io_bytes_null.json"] = dump(d)
    d = doc(); d["jobs"][0]["read"]["io_bytes"] = -4096; c["io_bytes_negative.json"] = dump(d)
    c["iops_overflow_inf.json"] = _replace_number(dump(doc()), "iops", "1e999")
    d = doc(); d["jobs"][0]["read"]["lat_ns"] = [1, 2]; c["lat_ns_not_object.json"] = dump(d)
    d = doc(); d["jobs"][0]["read"]["lat_ns"]["mean"] = "115.9us"; c["lat_mean_string.json"] = dump(d)
    d = doc()
    for k in ("read", "write", "trim"):
        d["jobs"][0].pop(k, None)
    c["no_directions.json"] = dump(d)
    d = doc()
    for k in ("read", "write", "trim"):
        for f in ("io_bytes", "io_kbytes", "total_ios"):
            d["jobs"][0][k][f] = 0
    c["zero_io.json"] = dump(d)
    d = doc(); d["jobs"][0]["error"] = 5; c["job_error_eio.json"] = dump(d)
    d = doc(); d["jobs"][0]["error"] = "EIO"; c["error_string.json"] = dump(d)
    d = doc(); d["global options"] = ["rw=randread"]; c["global_options_list.json"] = dump(d)
    d = doc(); d["jobs"][0]["job options"] = "rw=randread"; c["job_options_string.json"] = dump(d)
    d = json.loads(GOOD_CLIENT[GOOD_CLIENT.index("{"):])
    d["client_stats"] = [j for j in d["client_stats"] if j["jobname"] == "All clients"]
    c["client_stats_only_all_clients.json"] = dump(d)
    d = json.loads(GOOD_CLIENT[GOOD_CLIENT.index("{"):]); d["client_stats"] = "none"
    c["client_stats_not_list.json"] = dump(d)
    c["two_truncated_documents.json"] = GOOD_FIO[: n // 2] + "\n" + GOOD_FIO[: n // 2]
    c["html_error_page.json"] = "<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>\n"
    c["fio_human_output.json"] = (HERE / "_src_fio_human_output.txt").read_text()
    c["fio_terse_output.json"] = (HERE / "_src_fio_terse_output.txt").read_text()
    c["nan_literal.json"] = _replace_number(GOOD_FIO, "bw_agg", "-nan")
    c["deeply_nested.json"] = "[" * 100000 + "]" * 100000
    c["utf8_invalid_bytes.json"] = GOOD_FIO[: n // 2].encode() + b"\xff\xfe\xfa" + GOOD_FIO[n // 2:].encode()
    return c


def _replace_number(text: str, key: str, new: str) -> str:
    i = text.index(f'"{key}"')
    j = text.index(":", i) + 1
    k = j
    while text[k] in " \t":
        k += 1
    end = k
    while text[end] not in ",\n}":
        end += 1
    return text[:j] + " " + new + text[end:]


def xml_cases() -> dict[str, str | bytes]:
    c: dict[str, str | bytes] = {}
    c["diskspd_empty.xml"] = ""
    c["diskspd_truncated.xml"] = GOOD_XML[: len(GOOD_XML) // 2]
    c["diskspd_not_xml.xml"] = "Command Line: diskspd -b64K -d60 -o8 -t1 -r -w0 -Sh -L #1\n\nInput parameters:\n"
    c["diskspd_wrong_root.xml"] = "<Report><Value>1</Value></Report>\n"
    c["diskspd_no_timespan.xml"] = GOOD_XML[: GOOD_XML.index("  <TimeSpan>\n    <TestTimeSeconds>")] + "</Results>\n"
    c["diskspd_no_testtime.xml"] = GOOD_XML.replace("<TestTimeSeconds>60.00</TestTimeSeconds>", "")
    c["diskspd_testtime_zero.xml"] = GOOD_XML.replace("<TestTimeSeconds>60.00</TestTimeSeconds>",
                                                      "<TestTimeSeconds>0.00</TestTimeSeconds>")
    c["diskspd_testtime_text.xml"] = GOOD_XML.replace("<TestTimeSeconds>60.00</TestTimeSeconds>",
                                                      "<TestTimeSeconds>sixty</TestTimeSeconds>")
    start = GOOD_XML.index("    <Thread>")
    end = GOOD_XML.index("    </Thread>") + len("    </Thread>\n")
    c["diskspd_no_threads.xml"] = GOOD_XML[:start] + GOOD_XML[end:]
    c["diskspd_missing_readcount.xml"] = GOOD_XML.replace("<ReadCount>937500</ReadCount>", "")
    c["diskspd_zero_io.xml"] = GOOD_XML.replace("<ReadCount>937500</ReadCount>", "<ReadCount>0</ReadCount>")
    c["diskspd_binary.xml"] = bytes(range(256)) * 4
    c["diskspd_external_entity.xml"] = ('<?xml version="1.0"?>\n<!DOCTYPE Results [<!ENTITY host SYSTEM '
                                        '"file:///etc/hostname">]>\n' + GOOD_XML.replace(
                                            "<ComputerName>W2022-BENCH</ComputerName>",
                                            "<ComputerName>&host;</ComputerName>"))
    return c


def perf_cases() -> dict[str, str | bytes]:
    real_not_counted = (DATA / "perf" / "perf_stat_per_thread_not_counted.csv").read_text()
    good = (DATA / "perf" / "perf_stat_fio_process.csv").read_text()
    return {
        "perf_empty": "",
        "perf_only_comments": "# started on Sun Nov 22 01:17:25 2026\n\n",
        "perf_garbage_text": "Performance counter stats for 'sleep 1':\n\n   1.23 msec task-clock\n",
        "perf_binary": bytes(range(1, 255)) * 3,
        "perf_all_not_counted": real_not_counted,
        "perf_no_context_switches": "\n".join(l for l in good.splitlines() if "context-switches" not in l),
        "perf_no_cpu_clock": "\n".join(l for l in good.splitlines() if "cpu-clock" not in l and "cycles" not in l),
        "perf_wrong_clock_unit": good.replace(",msec,cpu-clock", ",parsecs,cpu-clock"),
        "perf_semicolon_separated": good.replace(",", ";"),
    }


def journal_cases() -> dict[str, str | bytes]:
    cell = json.loads(GOOD_CELL)

    def line(rec: dict) -> str:
        return json.dumps(rec) + "\n"

    c: dict[str, str | bytes] = {"journal_empty.ndjson": ""}
    c["journal_garbage_line.ndjson"] = GOOD_CELL + "\n{not json at all\n" + GOOD_CELL.replace("rep1", "rep9") + "\n"
    r = dict(cell); r["schema"] = "other/record-9"; c["journal_wrong_schema.ndjson"] = line(r)
    r = json.loads(GOOD_CELL); del r["cell"]["disk"]["aio"]; c["journal_cell_missing_aio.ndjson"] = line(r)
    r = json.loads(GOOD_CELL); r["cell"]["workload"]["bs"] = "64k"; c["journal_cell_bs_string.ndjson"] = line(r)
    r = json.loads(GOOD_CELL); r["host"]["cpu_metric"] = "jiffies"; c["journal_bad_cpu_metric.ndjson"] = line(r)
    r = json.loads(GOOD_CELL); r["per_mib"]["cpu_unit"] = "cycles/MiB"
    c["journal_unit_contradicts_metric.ndjson"] = line(r)
    c["journal_array_line.ndjson"] = "[1, 2]\n"
    r = json.loads(GOOD_CELL); r["fio"]["total"] = None; c["journal_cell_no_fio_total.ndjson"] = line(r)
    return c


def write(folder: Path, cases: dict[str, str | bytes]) -> None:
    folder.mkdir(exist_ok=True)
    for name, content in cases.items():
        data = content.encode("utf-8") if isinstance(content, str) else content
        (folder / name).write_bytes(data)


def main() -> None:
    for sub in ("fio", "diskspd", "perf", "journal"):
        shutil.rmtree(HERE / sub, ignore_errors=True)
    write(HERE / "fio", fio_cases())
    write(HERE / "diskspd", xml_cases())
    perf = HERE / "perf"
    perf.mkdir()
    for stem, content in perf_cases().items():
        (perf / f"{stem}.json").write_text(GOOD_FIO)  # a good result whose host counters are bad
        (perf / f"{stem}.perf.csv").write_bytes(content.encode() if isinstance(content, str) else content)
    write(HERE / "journal", journal_cases())


if __name__ == "__main__":
    main()
