"""Reliability and security summary: run the suites, print cases tried / passed per category.

    .venv/bin/python benchmarks/reliability_summary.py            # everything (~6-8 min: real QEMU kills)
    .venv/bin/python benchmarks/reliability_summary.py --quick    # without the QEMU tests (~2 min)
    .venv/bin/python benchmarks/reliability_summary.py --junit results.xml   # only tabulate a JUnit file
    .venv/bin/python benchmarks/reliability_summary.py --quick --no-corpus  # the pytest suites only

Category 6 is the bad-input corpus (benchmarks/badinput_corpus.py, ~1000 command lines through the
real CLI, each in a forked child with a time limit; ~5 min); its cases are counted one by one.

The categories collect the reliability suites (tests/harness/test_reliability_*.py) and the other tests that
cover part of it (journal torn lines, Proxmox and WinRM faults, the malformed analysis corpus, report
and compare bad input -- counts past 2^63, impossible rates, devices and pipes as inputs, the same data
given twice, outputs that cannot be written --, matrix validation, token/password leaks, TLS, formula
safety), so nothing is counted twice and nothing is duplicated. The crash test's 20 kills are listed one by one.
Exit code: 0 when every case passed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Category:
    name: str
    # (test file stem, regex on the test name or None for the whole file)
    selectors: list[tuple[str, str | None]]
    tried: int = 0
    passed: int = 0
    skipped: int = 0
    failed: list[str] = field(default_factory=list)


def categories() -> list[Category]:
    return [
        Category("1 crash / resume (SIGKILL, torn journal)", [
            ("test_reliability_crash", None), ("test_journal", None),
            ("test_qemu_e2e", "sigkill"), ("test_proxmox_backend", "sigkill"),
            ("test_fioserver_live", "killed_mid_point|abandoned_point|leave_no_process")]),
        Category("2 fault injection (backends, executors, disk full)", [
            ("test_reliability_faults", None),
            ("test_proxmox_backend", "api_500|digest_conflict|failed_task|never_ready|ctrl_c|refuses_pending"),
            ("test_winrm_standin", "authentication|connection_errors|past_its_deadline|guest_errors|run_failure"),
            ("test_reliability_deadline", None),
            ("test_fioserver_live", "dead_guest|collector_that_fails")]),
        Category("3 bad input (matrix, fio, DiskSpd, perf, journal, CLI)", [
            ("test_reliability_badinput", None), ("test_analysis_malformed", None), ("test_spec", None),
            ("test_analysis_badinput", None), ("test_badinput_corpus", None)]),
        Category("4 secrets (env/file only, never in outputs)", [
            ("test_reliability_secrets", None), ("test_proxmox_backend", "token|secret|wrong_token"),
            ("test_winrm_standin", "no_password"), ("test_winrm_settings", "password|secret"),
            ("test_proxmox_qemu", None)]),
        Category("5 safety (allow_write, force/unusedN, TLS, no shell, formulas)", [
            ("test_reliability_safety", None), ("test_winrm_standin", "https|cert"),
            ("test_workbook_roundtrip", "formula|inject|neutral"), ("test_windows_module_static", "string|command")]),
    ]


def files_for(cats: list[Category]) -> list[str]:
    """Each selector's test file, wherever it sits in the folders that mirror the code (tests/harness/..., ...)."""
    stems = {stem for c in cats for stem, _ in c.selectors}
    return sorted(str(p) for p in (ROOT / "tests").rglob("test_*.py") if p.stem in stems)


def run_pytest(files: list[str], junit: Path, quick: bool, crash_json: Path) -> int:
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={junit}", *files]
    if quick:
        argv += ["-m", "not qemu"]
    env = {**os.environ, "SMX_RELIABILITY_CRASH_JSON": str(crash_json)}
    print("running:", " ".join(argv[2:4]), f"{len(files)} test files", "(quick: no QEMU)" if quick else "",
          file=sys.stderr, flush=True)
    return subprocess.run(argv, cwd=ROOT, env=env).returncode


def tabulate(junit: Path, cats: list[Category]) -> None:
    tree = ET.parse(junit)
    for case in tree.iter("testcase"):
        stem = case.get("classname", "").split(".")[-1]
        name = case.get("name", "")
        outcome = "passed"
        for child in case:
            if child.tag == "skipped":
                outcome = "skipped"
            elif child.tag in ("failure", "error"):
                outcome = "failed"
        for cat in cats:
            if any(stem == s and (rx is None or re.search(rx, name)) for s, rx in cat.selectors):
                if outcome == "skipped":
                    cat.skipped += 1
                    continue
                cat.tried += 1
                if outcome == "passed":
                    cat.passed += 1
                else:
                    cat.failed.append(f"{stem}::{name}")
                break  # each case in one category only


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="leave out the tests that boot QEMU")
    parser.add_argument("--junit", type=Path, help="tabulate this JUnit XML instead of running the suites")
    parser.add_argument("--crash-json", type=Path, help="the crash test's kill list (with --junit)")
    parser.add_argument("--no-corpus", action="store_true", help="leave out the bad-input corpus")
    args = parser.parse_args(argv)
    cats = categories()
    tmp = Path(tempfile.mkdtemp(prefix="smx-reliability-"))
    crash_json = args.crash_json or tmp / "crash.json"
    junit = args.junit
    if junit is None:
        junit = tmp / "junit.xml"
        run_pytest(files_for(cats), junit, args.quick, crash_json)
    tabulate(junit, cats)
    corpus: list[dict[str, object]] = []
    if not args.no_corpus:
        corpus_json = tmp / "corpus.json"
        print("running: benchmarks/badinput_corpus.py", file=sys.stderr, flush=True)
        subprocess.run([sys.executable, str(ROOT / "benchmarks" / "badinput_corpus.py"), "--json", str(corpus_json)],
                       cwd=ROOT, stdout=subprocess.DEVNULL)
        corpus = json.loads(corpus_json.read_text()) if corpus_json.exists() else []
        cat = Category("6 bad-input corpus (badinput_corpus.py)", [])
        cat.tried, cat.passed = len(corpus), sum(1 for c in corpus if c["passed"])
        cat.failed = [f"corpus::{c['id']}: {'; '.join(map(str, c['problems']))}" for c in corpus
                      if not c["passed"]]
        cats.append(cat)

    print()
    print(f"{'category':<62} {'tried':>6} {'passed':>7} {'failed':>7} {'skipped':>8}")
    print("-" * 94)
    kills = json.loads(crash_json.read_text()) if crash_json.exists() else []
    for i, c in enumerate(cats):
        print(f"{c.name:<62} {c.tried:>6} {c.passed:>7} {len(c.failed):>7} {c.skipped:>8}")
        if i == 0 and kills:  # the crash test is one pytest case; here are its kills
            ok = sum(1 for k in kills if k["leftovers"] == 0 and (not k["torn_after"] or k["repaired_message"]))
            print(f"{'  in the crash test: SIGKILL at a random moment + re-run':<62} {len(kills):>6} {ok:>7} "
                  f"{len(kills) - ok:>7} {0:>8}")
    total_tried, total_passed = sum(c.tried for c in cats), sum(c.passed for c in cats)
    print("-" * 94)
    print(f"{'total':<62} {total_tried:>6} {total_passed:>7} {total_tried - total_passed:>7} "
          f"{sum(c.skipped for c in cats):>8}")
    if corpus:
        bad = [c for c in corpus if c["bad"]]
        print(f"bad-input corpus: {len(bad)} bad inputs tried, {sum(1 for c in bad if c['passed'])} handled "
              f"(exit 2, file/option and fix named, no traceback, hang or echoed secret, nothing overwritten); "
              f"{len(corpus) - len(bad)} awkward valid inputs, {sum(1 for c in corpus if c['passed'] and not c['bad'])} "
              "worked")
        waiting = [c for c in corpus if not c["passed"] and c.get("awaiting")]
        if waiting:
            print(f"  of the failed, {len(waiting)} have their root cause in files owned elsewhere "
                  "(badinput_corpus.py AWAITING names each file and the change)")
    if kills:
        print(f"\ncrash test: {len(kills)} SIGKILLs (fixed seed), each followed by a re-run")
        print(f"{'kill':>4}  {'phase':<13} {'cell':>4} {'delay s':>8} {'journaled':>9} {'torn':>5} "
              f"{'cut+message':>11} {'leftover procs':>14}")
        for k in kills:
            print(f"{k['n']:>4}  {k['phase']:<13} {k['occurrence'] or '-':>4} {k['delay_s']:>8.2f} "
                  f"{k['done_before']:>9} {'yes' if k['torn_after'] else 'no':>5} "
                  f"{'yes' if k['repaired_message'] else '-':>11} {k['leftovers']:>14}")
        phases: dict[str, int] = {}
        for k in kills:
            phases[k["phase"]] = phases.get(k["phase"], 0) + 1
        print("kills per phase: " + ", ".join(f"{p} {n}" for p, n in sorted(phases.items())))
    for c in cats:
        for f in c.failed:
            print(f"FAILED [{c.name.split()[0]}] {f}")
    return 0 if total_tried == total_passed and total_tried > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
