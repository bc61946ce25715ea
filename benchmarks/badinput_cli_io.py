"""Bad-input families of the corpus about command-line I/O, one family per class, each with valid neighbours that
must keep working: outputs onto inputs (perf sidecars, files inside input folders), over-long output
names, fio --status-interval and pasted outputs, block-size ranges, DiskSpd multi-target, decimal-comma
perf CSV, compare sides sharing a measurement, the walk (linked folders, loops, paths past PATH_MAX), an
unwritable or closed stdout, signals, resume wording, suite matrices and guest check options refused before
starting, secrets in URLs and on the command line, and two writers in one run directory.

Used by benchmarks/badinput_corpus.py (its FAMILIES); each case is judged by badinput_runner.py, which
also fails a case that leaves a temporary file behind.
"""

from __future__ import annotations

import json
from typing import Any, Iterable

from badinput_runner import DATA, SECRETS, Case, Deep, Link

FIO_TEXT = (DATA / "fio" / "fio3_randread_bs4k_qd1.json").read_text()
FIO_W_TEXT = (DATA / "fio" / "fio3_randwrite_bs64k_qd4.json").read_text()
FIO_RW_TEXT = (DATA / "fio" / "fio3_randrw70_bs8k_qd8_numjobs2_group.json").read_text()
PERF = (DATA / "perf" / "perf_stat_fio_process.csv").read_text()
AMBIGUOUS = DATA / "ambiguous"
SAMPLE_RUN = DATA / "journal" / "sample_run"
SIDECAR_A = {"in/r.json": FIO_TEXT, "in/r.csv": PERF}
WROTE = ("wrote",)
LONG = "n" * 250


def _outs(*names: str) -> tuple[str, ...]:
    return tuple(f"{{tmp}}/{n}" for n in names)


def _fio_options(**options: Any) -> str:
    doc = json.loads(FIO_TEXT)
    opts = doc["jobs"][0]["job options"]
    for key, value in options.items():
        if value is None:
            opts.pop(key, None)
        else:
            opts[key] = value
    return json.dumps(doc)


def output_cases() -> Iterable[Case]:
    """One output planner: an output never replaces any input of the command."""
    yield Case("out.default-csv-is-the-perf-sidecar", ["report", "{tmp}/in/r.json", "-o", "{tmp}/in/r.xlsx"],
               dict(SIDECAR_A), ("r.csv", "perf sidecar"))
    yield Case("out.csv-onto-the-perf-sidecar", ["report", "{tmp}/in/r.json", "-o", "{tmp}/o.xlsx", "--csv",
                                                 "{tmp}/in/r.csv"], dict(SIDECAR_A), ("r.csv",))
    yield Case("out.csv-onto-a-perf-csv-sidecar", ["report", "{tmp}/in", "-o", "{tmp}/o.xlsx", "--csv",
                                                   "{tmp}/in/r.perf.csv"],
               {"in/r.json": FIO_TEXT, "in/r.perf.csv": PERF}, ("r.perf.csv",))
    yield Case("out.csv-onto-a-file-inside-an-input-folder", ["report", "{tmp}/in", "-o", "{tmp}/o.xlsx", "--csv",
                                                              "{tmp}/in/deep/w.json"],
               {"in/r.json": FIO_TEXT, "in/deep/w.json": FIO_W_TEXT}, ("w.json",))
    yield Case("out.csv-onto-the-run-journal", ["report", "{tmp}/run", "-o", "{tmp}/o.xlsx", "--csv",
                                                "{tmp}/run/journal.ndjson"],
               {"run/journal.ndjson": (SAMPLE_RUN / "journal.ndjson").read_text()}, ("journal.ndjson",))
    yield Case("out.compare-onto-side-a-sidecar", ["compare", "{tmp}/in/r.json", "{tmp}/b/w.json", "-o",
                                                   "{tmp}/in/r.xlsx"],
               {**SIDECAR_A, "b/w.json": FIO_W_TEXT}, ("r.csv",))
    yield Case("out.compare-onto-side-b-sidecar", ["compare", "{tmp}/a/w.json", "{tmp}/in", "-o",
                                                   "{tmp}/o.xlsx", "--csv", "{tmp}/in/r.csv"],
               {**SIDECAR_A, "a/w.json": FIO_W_TEXT}, ("r.csv",))
    yield Case("out.csv-through-a-link-to-the-sidecar", ["report", "{tmp}/in/r.json", "-o", "{tmp}/o.xlsx",
                                                         "--csv", "{tmp}/alias.csv"],
               {**SIDECAR_A, "alias.csv": Link("in/r.csv")}, ("r.csv",))
    yield Case("out.demo-workbook-not-xlsx", ["demo", "-o", "{tmp}/d", "--workbook", "{tmp}/w.txt"], {}, (".xlsx",))
    yield Case("out.demo-workbook-is-the-matrix-journal", ["demo", "--matrix", "{m}", "-o", "{tmp}/d", "--workbook",
                                                           "{tmp}/d/journal.ndjson"],
               {"m.toml": (DATA.parent.parent / "harness" / "matrices" / "demo.toml").read_text()}, (".xlsx",))
    # over-long names, refused before anything is created
    for cmd, argv in (("report", ["report", "{tmp}/in/r.json", "-o", "{tmp}/" + LONG + ".xlsx"]),
                      ("report-csv", ["report", "{tmp}/in/r.json", "-o", "{tmp}/o.xlsx", "--csv",
                                      "{tmp}/" + LONG + ".csv"]),
                      ("compare", ["compare", "{tmp}/in/r.json", "{tmp}/in/r.json", "-o", "{tmp}/" + LONG + ".xlsx"]),
                      ("run", ["run", "{m}", "-o", "{tmp}/" + LONG + "xxxxxxxxxx"]),
                      ("demo", ["demo", "-o", "{tmp}/" + LONG + "xxxxxxxxxx"]),
                      ("demo-workbook", ["demo", "-o", "{tmp}/d", "--workbook", "{tmp}/" + LONG + ".xlsx"]),
                      ("suite-run", ["suite", "run", "{tmp}/s.toml", "-o", "{tmp}/" + LONG + "xxxxxxxxxx"])):
        yield Case(f"out.name-too-long.{cmd}", argv,
                   {**SIDECAR_A, "m.toml": (DATA.parent.parent / "harness" / "matrices" / "demo.toml").read_text(),
                    "s.toml": SUITE}, ("bytes long",))
    # valid neighbours: the CSV elsewhere, a name just short enough, outputs next to inputs but not on them
    yield Case("out.ok.csv-elsewhere", ["report", "{tmp}/in/r.json", "-o", "{tmp}/in/r.xlsx", "--csv",
                                        "{tmp}/tidy.csv"], dict(SIDECAR_A), WROTE, code=0, bad=False,
               changes=_outs("in/r.xlsx", "tidy.csv"))
    yield Case("out.ok.workbook-in-the-input-folder", ["report", "{tmp}/in", "-o", "{tmp}/in/report.xlsx"],
               dict(SIDECAR_A), WROTE, code=0, bad=False, changes=_outs("in/report.xlsx", "in/report.csv"))
    yield Case("out.ok.name-of-200-bytes", ["report", "{tmp}/in/r.json", "-o", "{tmp}/" + "n" * 200 + ".xlsx"],
               dict(SIDECAR_A), WROTE, code=0, bad=False,
               changes=_outs("n" * 200 + ".xlsx", "n" * 200 + ".csv"))
    yield Case("out.ok.compare-next-to-its-inputs", ["compare", "{tmp}/a", "{tmp}/b", "-o", "{tmp}/a/c.xlsx"],
               {"a/r.json": FIO_TEXT, "b/r.json": FIO_TEXT.replace('"timestamp"', '"timestamp_x"', 1)}, WROTE,
               code=0, bad=False, changes=_outs("a/c.xlsx", "a/c.csv"))


SUITE = '[suite]\nside = "A"\nfilename = "/dev/vdb"\nguests = ["vm01=10.0.0.11:8765"]\n'


def reader_cases() -> Iterable[Case]:
    """Readers refuse a number they cannot read exactly; valid neighbours read it right."""
    rep = ["report", "{tmp}/in", "-o", "{tmp}/o/r.xlsx", "--strict"]
    ok = dict(code=0, bad=False, changes=_outs("o/r.xlsx", "o/r.csv"))
    status = (AMBIGUOUS / "fio333-status-interval-1s.json").read_text()
    yield Case("read.ok.fio-status-interval", rep, {"in/si.json": status}, ("1 measurements",), **ok)  # type: ignore
    yield Case("read.ok.fio-status-interval-with-noise", rep, {"in/si.json": "fio: note\n" + status},
               ("1 measurements",), **ok)  # type: ignore[arg-type]
    yield Case("read.fio-two-runs-pasted", rep, {"in/two.json": FIO_TEXT + "\n" + FIO_W_TEXT}, ("different jobs",))
    later_first = json.loads(status.split("\n}\n")[0] + "\n}")
    later_first["timestamp_ms"] += 10**9
    yield Case("read.fio-same-jobs-time-backwards", rep,
               {"in/back.json": json.dumps(later_first) + "\n" + status}, ("backwards",))
    for label, opts, needle in (("bs-range", {"bs": "4k-64k"}, "range"), ("bs-range-k", {"bs": "4K-64K"}, "range"),
                                ("bs-range-per-dir", {"bs": "4k-8k,16k"}, "range"),
                                ("bs-per-dir-randrw", {"bs": "4k,64k", "rw": "randrw"}, "reads 4k, writes 64k"),
                                ("bs-per-dir-trimwrite", {"bs": "4k,64k,8k", "rw": "trimwrite"}, "trims"),
                                ("bsrange", {"bs": None, "bsrange": "4k-64k"}, "bsrange"),
                                ("blocksize_range", {"bs": None, "blocksize_range": "4k-64k"}, "blocksize_range"),
                                ("bssplit", {"bs": None, "bssplit": "4k/50:64k/50"}, "bssplit"),
                                ("bssplit-with-bs", {"bssplit": "4k/10:64k/90"}, "bssplit")):
        yield Case(f"read.{label}", rep, {"in/randread-bs4k-qd1.json": _fio_options(**opts)}, (needle,))
    yield Case("read.fio333-bs-range-capture", rep,
               {"in/x.json": (AMBIGUOUS / "fio333-randread-bs4k-64k.json").read_text()}, ("range",))
    for label, opts in (("bs-per-dir-read-only", {"bs": "4k,64k", "rw": "randread"}),
                        ("bs-per-dir-write-only", {"bs": ",64k", "rw": "randwrite"}),
                        ("bs-per-dir-equal", {"bs": "8k,8k", "rw": "randrw"}),
                        ("bs-upper-case", {"bs": "4K"}), ("bs-bytes", {"bs": "4096"}),
                        ("bs-kib", {"bs": "4KiB"})):
        yield Case(f"read.ok.{label}", rep, {"in/x.json": _fio_options(**opts)}, ("1 measurements",),
                   **ok)  # type: ignore[arg-type]
    yield Case("read.diskspd-two-workloads", rep,
               {"in/x.xml": (AMBIGUOUS / "diskspd_two_targets_64k_4k.xml").read_text()}, ("2 targets",))
    yield Case("read.ok.diskspd-two-targets-one-workload", rep,
               {"in/x.xml": (AMBIGUOUS / "diskspd_two_targets_64k_64k.xml").read_text()}, ("1 measurements",),
               **ok)  # type: ignore[arg-type]
    for name in ("perf_stat_de_DE.csv", "perf_stat_de_DE_interval.csv", "perf_stat_de_DE_per_cpu.csv"):
        yield Case(f"read.perf-decimal-comma.{name}", rep,
                   {"in/r.json": FIO_TEXT, "in/r.perf.csv": (AMBIGUOUS / name).read_text()}, ("decimal comma", "LC_ALL=C"))
    for path in sorted(p for p in (DATA / "perf").glob("*.csv") if "not_counted" not in p.name):
        yield Case(f"read.ok.perf-c-locale.{path.name}", rep, {"in/r.json": FIO_TEXT, "in/r.perf.csv":
                                                               path.read_text()}, ("1 measurements",),
                   **ok)  # type: ignore[arg-type]


def sharing_and_walk_cases() -> Iterable[Case]:
    out = ["-o", "{tmp}/o/c.xlsx"]
    changed = _outs("o/c.xlsx", "o/c.csv")
    base = {"a/r.json": FIO_TEXT, "b/w.json": FIO_W_TEXT}
    for label, twin in (("symlink", Link("a/r.json")), ("hardlink", Link("a/r.json", hard=True)),
                        ("copy", FIO_TEXT)):
        files = {**base, "b/r-again.json": twin}
        yield Case(f"share.{label}", ["compare", "{tmp}/a", "{tmp}/b", *out], files, ("on both sides",), code=0,
                   changes=changed)
        yield Case(f"share.{label}-strict", ["compare", "{tmp}/a", "{tmp}/b", *out, "--strict"], files,
                   ("on both sides",))
    yield Case("share.ok.different-runs", ["compare", str(DATA / "fio" / "compare" / "A"),
                                           str(DATA / "fio" / "compare" / "B"), *out, "--strict"], {}, WROTE, code=0,
               bad=False, changes=changed)
    rep = ["report", "{tmp}/top", "-o", "{tmp}/o/r.xlsx"]
    ok_changes = _outs("o/r.xlsx", "o/r.csv")
    walk = {"real/a.json": FIO_TEXT, "top/w.json": FIO_W_TEXT}
    yield Case("walk.ok.linked-folder-followed", rep, {**walk, "top/linked": Link("real")}, ("2 measurements",),
               code=0, bad=False, changes=ok_changes)
    yield Case("walk.linked-twice", rep, {**walk, "top/l1": Link("real"), "top/l2": Link("real")},
               ("2 measurements", "already read"), code=0, changes=ok_changes)
    yield Case("walk.loop-to-ancestor", rep, {**walk, "top/loop": Link("top")}, ("1 measurements", "already read"),
               code=0, changes=ok_changes)
    yield Case("walk.path-past-path-max", rep, {**walk, "top/deep": Deep(FIO_TEXT.encode())},
               ("more than this system allows", "1 measurements"), code=0, changes=ok_changes)
    yield Case("walk.path-past-path-max-strict", rep + ["--strict"], {**walk, "top/deep": Deep(FIO_TEXT.encode())},
               ("more than this system allows",))


def process_cases() -> Iterable[Case]:
    """stdout that cannot be written, signals, resume wording: through a shell, as a user meets them."""
    m = str(DATA.parent.parent / "harness" / "matrices" / "demo.toml")
    run = str(SAMPLE_RUN)
    for label, cmd in (("plan", f"plan {m}"), ("help", "--help"), ("version", "--version"),
                       ("report-help", "report --help"), ("suite-plan", "suite plan {tmp}/s.toml")):
        yield Case(f"stdout.closed-pipe.{label}", [], {"s.toml": SUITE}, ("rc=141",), code=0,
                   bash_line=f'$SMX {cmd} | (exec 0<&-; true); echo "rc=${{PIPESTATUS[0]}}"')
        yield Case(f"stdout.full-device.{label}", [], {"s.toml": SUITE}, ("no space left",), code=1,
                   bash_line=f"$SMX {cmd} >/dev/full")
    yield Case("stdout.closed-from-start.report", [], {}, ("standard output is closed",), code=1,
               bash_line=f"$SMX report {run} -o {{tmp}}/o/r.xlsx >&-", changes=_outs("o/r.xlsx", "o/r.csv"))
    yield Case("stdout.ok.plan-into-a-file", [], {}, ("cells",), code=0, bad=False,
               bash_line=f"$SMX plan {m} > {{tmp}}/plan.txt && cat {{tmp}}/plan.txt", changes=_outs("plan.txt"))
    hook = ("import os, signal, sys, openpyxl\nreal = openpyxl.Workbook.save\n"
            "def save(self, f):\n    real(self, f)\n    os.kill(os.getpid(), signal.SIG{sig})\n"
            "openpyxl.Workbook.save = save\nfrom stormatrix.cli import main\nsys.exit(main(sys.argv[1:]))\n")
    for sig, code in (("TERM", 143), ("HUP", 129), ("INT", 130)):
        yield Case(f"signal.{sig.lower()}-while-writing-the-workbook", [], {"o/r.xlsx": b"earlier good workbook"},
                   ("terminated" if sig != "INT" else "interrupted",), code=code,
                   bash_line=f'$PY -c "$HOOK" report {run} -o {{tmp}}/o/r.xlsx', env={"HOOK": hook.format(sig=sig)},
                   absent=("resume",))
    ctrl_c = ("import sys\nsys.argv[0] = 'stormatrix'\nclass C:\n    def find_spec(self, n, p, t=None):\n"
              "        if n == '{mod}':\n            raise KeyboardInterrupt\nsys.meta_path.insert(0, C())\n"
              "from stormatrix.cli import main\nsys.exit(main(['plan', 'm.toml']))\n")
    for mod in ("stormatrix.cli", "stormatrix.commands", "stormatrix.runner", "stormatrix.spec"):
        yield Case(f"signal.ctrl-c-while-importing-{mod}", [], {}, ("interrupted while starting",), code=130,
                   bash_line='$PY -c "$HOOK"; exit $?', env={"HOOK": ctrl_c.format(mod=mod)})
    resume = ("import sys\nfrom stormatrix.commands import {mod} as m\n"
              "def boom(a):\n    raise KeyboardInterrupt\nm.run = boom\n"
              "from stormatrix.cli import main\nsys.exit(main(sys.argv[1:]))\n")
    for mod, argv, says in (("report", f"report {run} -o {{tmp}}/o/r.xlsx", "only ever replaced whole"),
                            ("compare", f"compare {run} {run} -o {{tmp}}/o/c.xlsx", "only ever replaced whole"),
                            ("run", f"run {m} -o {{tmp}}/r", "run the same command again to resume")):
        yield Case(f"signal.resume-wording.{mod}", [], {}, (says,), code=130, bash_line=f'$PY -c "$HOOK" {argv}',
                   env={"HOOK": resume.format(mod=mod)}, absent=() if mod == "run" else ("resume",))


def suite_and_guest_cases() -> Iterable[Case]:
    for label, fio, needle in (("missing", "{tmp}/nope/fio", "does not exist"),
                               ("folder", "{tmp}/adir", "not an executable"),
                               ("not-on-path", "fio-nowhere-zz", "no such program"), ("empty", "", "--fio is empty"),
                               ("not-executable", "{tmp}/plain", "no x permission")):
        yield Case(f"suite.fio-{label}", ["suite", "run", "{tmp}/s.toml", "-o", "{tmp}/run", "--fio", fio],
                   {"s.toml": SUITE, "adir/x": "", "plain": "#!/bin/sh\n"}, (needle,))
    for label, guests in (("name-case", '["vm1=10.0.0.1:8765", "VM1=10.0.0.2:8765"]'),
                          ("host-case", '["a=BENCH-VM1.lab:8765", "b=bench-vm1.LAB:8765"]'),
                          ("host-case-table", '[{name = "a", host = "Pve1"}, {name = "b", host = "pve1"}]')):
        yield Case(f"suite.guests-{label}", ["suite", "plan", "{tmp}/s.toml"],
                   {"s.toml": SUITE.replace('["vm01=10.0.0.11:8765"]', guests)}, ("[suite] guests", "case"))
    yield Case("suite.ok.guests-distinct", ["suite", "plan", "{tmp}/s.toml"],
               {"s.toml": SUITE.replace('["vm01=10.0.0.11:8765"]', '["a=pve1:8765", "b=pve2:8765", "c=pve1:8766"]')},
               ("points",), code=0, bad=False)
    vms = ('[suite]\nside = "A"\nfilename = "/dev/sdb"\nvms = [101, 102, 103]\nnetwork = "{net}"\n[proxmox]\n'
           'host = "10.0.0.2"\nnode = "pve"\ntoken_id = "root@pam!t"\ntoken_secret_env = "PVE_TOKEN"\n')
    for net, needle in (("127.0.0.0/8", "loopback"), ("127.0.0.1/32", "loopback"), ("10.0.0.5/32", "1 address"),
                        ("10.0.0.4/31", "2 address"), ("10.0.0.0/30", "2 address"), ("239.1.1.0/24", "multicast")):
        yield Case(f"suite.network-{net}", ["suite", "plan", "{tmp}/s.toml"], {"s.toml": vms.format(net=net)},
                   ("[suite] network", needle))
    for net in ("10.0.0.0/29", "192.168.1.0/24", "10.0.0.0/8"):
        yield Case(f"suite.ok.network-{net}", ["suite", "plan", "{tmp}/s.toml"], {"s.toml": vms.format(net=net)},
                   ("points",), code=0, bad=False)
    other_side = json.dumps({"schema": "stormatrix/record-1", "type": "run", "suite": "s", "side": "B",
                             "guests": [{"name": "vm01"}]}) + "\n"
    yield Case("suite.plan-output-holds-another-side", ["suite", "plan", "{tmp}/s.toml", "-o", "{tmp}/run"],
               {"s.toml": SUITE, "run/journal.ndjson": other_side}, ("[suite] side",))
    yield Case("suite.plan-output-holds-other-guests", ["suite", "plan", "{tmp}/s.toml", "-o", "{tmp}/run"],
               {"s.toml": SUITE, "run/journal.ndjson": other_side.replace('"B"', '"A"').replace("vm01", "vm99")},
               ("[suite] guests",))
    guest = ["guest", "check", "--host", "127.0.0.1", "--port", "1", "--username", "u", "--password-env", "SMX_PW",
             "--disk-serial", "S1"]
    env = {"SMX_PW": "pw-good-1"}
    for v in ("bogus", "virtio-scsi-singel", "scsi", "", "IDE2"):
        yield Case(f"guest.controller={v!r}", guest + ["--timeout", "1", "--controller", v], {}, ("--controller",),
                   env=env)
    for v in ("3600000", "86400", "10801", "1e6"):
        yield Case(f"guest.timeout-upper={v}", guest + ["--timeout", v], {}, ("--timeout", "hours"), env=env)
    for v in ("virtio-scsi", "VIRTIO-BLK", "virtio", "nvme", "lsilogic-sas"):
        yield Case(f"guest.ok.controller={v}", guest + ["--timeout", "1", "--controller", v], {}, ("--timeout 1",),
                   code=1, env=env, bad=False)


def secret_and_lock_cases() -> Iterable[Case]:
    from badinput_corpus import matrix

    secret = SECRETS[0]
    for label, host in (("https-userinfo", f"https://root:{secret}@pve.lab:8006"),
                        ("userinfo-no-scheme", f"root:{secret}@pve.lab"),
                        ("token-in-userinfo", f"https://root@pam!tok={secret}@pve:8006/api2/json"),
                        ("query", f"https://pve:8006/?token={secret}")):
        for section in ("proxmox", "winrm"):
            text = matrix({section: {"host": json.dumps(host)}})
            yield Case(f"secret.url.{section}-host.{label}", ["plan", "{m}"], {"m.toml": text},
                       (f"[{section}] host",), secrets=(secret,))
    guest = ["guest", "check", "--host", "127.0.0.1", "--username", "u", "--disk-serial", "S1"]
    for label, argv in (("password=", guest + [f"--password={secret}"]),
                        ("pass=", guest + ["--password-env", "X", f"--pass={secret}"]),
                        ("password-file=", guest + [f"--password-fil={secret}"]),
                        ("token-unknown", ["report", "{tmp}/x.json", "-o", "{tmp}/o.xlsx", "--token", secret]),
                        ("api-key=", ["plan", "{m}", f"--api-key={secret}"]),
                        ("host-url", ["guest", "check", "--host", f"http://u:{secret}@10.0.0.5:5985", "--username",
                                      "u", "--password-env", "X", "--disk-serial", "S1"])):
        yield Case(f"secret.cli.{label}", argv, {"m.toml": matrix(), "x.json": FIO_TEXT}, (), secrets=(secret,))
    yield Case("secret.suite-guest-url", ["suite", "plan", "{tmp}/s.toml"],
               {"s.toml": SUITE.replace('"vm01=10.0.0.11:8765"', f'"vm01=http://u:{secret}@10.0.0.11:8765"')},
               ("[suite] guests",), secrets=(secret,))
    hold = ("import sys, time\nfrom stormatrix.commands.runlock import hold_run_dir\n"
            "with hold_run_dir(sys.argv[1], 'run'):\n    print('held', flush=True)\n    time.sleep(30)\n")
    m = str(DATA.parent.parent / "harness" / "matrices" / "demo.toml")
    for label, cmd in (("run", f"run {m} -o {{tmp}}/r"), ("suite-run", "suite run {tmp}/s.toml -o {tmp}/r --fio $PY"),
                       ("demo", "demo -o {tmp}/r")):
        yield Case(f"lock.second-writer.{label}", [], {"s.toml": SUITE}, ("in use by", "pid"), code=2,
                   bash_line='$PY -c "$HOLD" {tmp}/r > {tmp}/held & h=$!; '
                             'while ! grep -q held {tmp}/held 2>/dev/null; do sleep 0.05; done; '
                             f'$SMX {cmd}; rc=$?; kill -9 $h; wait $h 2>/dev/null; exit $rc',
                   env={"HOLD": hold}, changes=_outs("held"))
    yield Case("lock.ok.released-by-kill-9", [], {}, ("released",), code=0, bad=False,
               bash_line='$PY -c "$HOLD" {tmp}/r > {tmp}/held & h=$!; '
                         'while ! grep -q held {tmp}/held 2>/dev/null; do sleep 0.05; done; kill -9 $h; wait $h; '
                         '$PY -c "from stormatrix.commands.runlock import hold_run_dir as h\n'
                         'with h(\'{tmp}/r\', \'run\'): print(\'released\')"',
               env={"HOLD": hold}, changes=_outs("held"))
    yield Case("lock.ok.reader-not-held", [], {}, ("wrote",), code=0, bad=False,
               bash_line='$PY -c "$HOLD" {tmp}/r > {tmp}/held & h=$!; '
                         'while ! grep -q held {tmp}/held 2>/dev/null; do sleep 0.05; done; '
                         f'$SMX report {SAMPLE_RUN} -o {{tmp}}/o.xlsx; rc=$?; '
                         'kill -9 $h; wait $h 2>/dev/null; exit $rc',
               env={"HOLD": hold}, changes=_outs("held", "o.xlsx", "o.csv"))


FAMILIES = {
    "outputs onto inputs, long names": output_cases,
    "readers (status-interval, bs, DiskSpd, perf locale)": reader_cases,
    "compare sharing, the walk": sharing_and_walk_cases,
    "stdout, signals, resume wording": process_cases,
    "suite matrices, guest check options": suite_and_guest_cases,
    "secrets in URLs and argv, run-dir lock": secret_and_lock_cases,
}
