"""Representatives of the bad-input corpus (benchmarks/badinput_corpus.py runs all of it, about 1,400
cases; reliability_summary.py counts them): one or two cases per failure class found and fixed
there, through the real CLI in a forked child with a time limit, judged by benchmarks/badinput_runner.py
(exit 2 with the file or option named and a fix, no traceback, no hang, no secret echoed, nothing that
existed changed). The valid-but-awkward ones (CRLF, [::1], a truncated journal) must work.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import paths  # noqa: E402 - tests/ is on sys.path (pyproject.toml)

sys.path.insert(0, str(paths.ROOT / "benchmarks"))
from badinput_corpus import all_cases  # noqa: E402
from badinput_runner import Case, run_case  # noqa: E402

REPRESENTATIVES = [
    # matrix files that are not files, or not UTF-8
    "file.matrix-is-fifo.plan", "file.matrix-zero.run", "file.matrix-is-loop.suite", "file.matrix-full.demo",
    "file.utf-16-le", "file.bom-utf8", "file.crlf",
    # matrix values
    "matrix.workload.name[5]", "matrix.workload.same-name-other-case", "matrix.winrm.ca_file-dir",
    "matrix.winrm.ca_file-missing", 'matrix.winrm.host="guest one"', 'matrix.winrm.disk_serial="S 1"',
    "matrix.run.as-value", "matrix.qemu.unknown-key", 'matrix.proxmox.host="http://pve:8006"',
    'matrix.proxmox.host="pve host"', 'matrix.qemu.disk_path-path=zero"', 'matrix.qemu.binary-path=adir"',
    'matrix.qemu.disk_path-path=fifo"', "matrix.proxmox.ca_file-fifo",
    # run before a VM starts
    "run.output-empty", "run.journal-of-another-matrix", "run.journal-of-a-suite",
    "run.journal-is-a-fifo", "run.journal-is-a-dir", "run.journal-binary", "run.side-newline",
    # report / compare / restore / suite / image paths
    "journal.is-loop", "journal.is-dir", "journal.per_mib.mib[1]=0", "journal.host.ctx_switches[2]=1.5",
    "journal.cell.repeat[1]=-1", "journal.truncated-0.3", "diskspd.RequestCount[0]=abc", "diskspd.BlockSize[4]=",
    "diskspd.TestTimeSeconds[3]=100000", "report.output-loop", "report.csv-empty",
    "report.input-empty-string", "report.label-newline", "compare.output-loop", "compare.same-input-both-sides",
    "restore.journal-fifo", "restore/dev/zero", "restore.empty-arg", "restore.run-dir-loop",
    "suite-plan.output-fifo", "suite-plan.output-is-matrix", 'suite-plan.side=""', "suite-plan.size[4]=118059162071",
    "suite-plan.block_sizes[4]=118059162071", "image.cache-is-fifo", "image.cache-dev-null", "demo.guests-zero",
    "demo.output-is-file",
    # guest check options
    "guest.host='10.0.0.5\\n'", "guest.username-empty", "guest.ca-file-not-pem", "guest.ca-file-fifo",
    "guest.ca-file-without-tls", "guest.no-cert-validation-and-ca-file", "guest.host-ok=[::1]",
    # secrets where a reference belongs
    "secret.cli.password-file[1]", "secret.cli.password-env[2]", "secret.winrm.password_file[1]",
    "secret.proxmox.token_secret_env[1]",
    # command-line I/O (benchmarks/badinput_cli_io.py): outputs onto inputs, exact readers, the walk, processes, locks
    "out.default-csv-is-the-perf-sidecar", "out.ok.csv-elsewhere", "read.bs-range", "read.ok.bs-per-dir-read-only",
    "walk.loop-to-ancestor", "share.hardlink", "stdout.closed-pipe.plan", "signal.term-while-writing-the-workbook",
    "suite.guests-name-case", "secret.url.proxmox-host.https-userinfo", "lock.second-writer.run",
]
CASES: dict[str, Case] = {c.id: c for _, c in all_cases()}


def test_every_representative_is_in_the_corpus() -> None:
    missing = [i for i in REPRESENTATIVES if i not in CASES]
    assert not missing


@pytest.mark.parametrize("case_id", [i for i in REPRESENTATIVES if i in CASES])
def test_corpus_case(case_id: str) -> None:
    outcome = run_case(CASES[case_id], limit=60)
    assert outcome.passed, (outcome.problems, outcome.text[-2000:])


def test_the_judge_can_fail() -> None:
    """The judge must call an accepted bad input, an echoed secret and a changed file what they are."""
    import badinput_runner as r
    from badinput_corpus import matrix

    accepted = r.run_case(Case("judge.accepted", ["plan", "{m}"], {"m.toml": matrix()}, ("{m}",)), limit=60)
    assert accepted.code == 0 and "exit 0, expected 2" in accepted.problems
    echoed = r.run_case(Case("judge.echo", ["plan", "{tmp}/nope-" + r.SECRETS[1] + ".toml"], {}, ("nope",)), limit=60)
    assert "a secret was echoed" in echoed.problems
    fio = (paths.DATA / "fio" / "fio3_randread_bs4k_qd1.json").read_text()
    overwritten = r.run_case(Case("judge.overwrite", ["report", "{tmp}/x.json", "-o", "{tmp}/r.xlsx"],
                                  {"x.json": fio, "r.xlsx": b"earlier"}, (), code=0), limit=60)
    assert "r.xlsx was changed or lost" in overwritten.problems


def test_paths_are_described_without_being_opened(tmp_path: Path) -> None:
    """harness/core/paths.py: what a path is, in words, before anything opens it (a FIFO would block)."""
    import os

    from stormatrix.core.paths import TooLarge, ca_bundle_problem, input_problem, looks_utf16, read_bounded

    os.mkfifo(tmp_path / "fifo")
    os.symlink("loop", tmp_path / "loop")
    os.symlink("nowhere", tmp_path / "dangling")
    (tmp_path / "f").write_text("x" * 100)
    assert "named pipe" in (input_problem(tmp_path / "fifo") or "")
    assert "loop" in (input_problem(tmp_path / "loop") or "")
    assert "to nothing" in (input_problem(tmp_path / "dangling") or "")
    assert "directory" in (input_problem(tmp_path) or "")
    assert "character device" in (input_problem("/dev/zero") or "")
    assert "not a directory" in (input_problem(tmp_path / "f" / "x") or "")
    assert input_problem(tmp_path / "f") is None and input_problem("") == "is an empty path"
    assert read_bounded(tmp_path / "f", 100) == b"x" * 100
    with pytest.raises(TooLarge):
        read_bounded(tmp_path / "f", 99)
    assert looks_utf16("[run]\nname = 1\n".encode("utf-16-le")) and looks_utf16("[run]".encode("utf-16"))
    assert not looks_utf16(b"[run]\nname = 1\n") and not looks_utf16(bytes(range(256)))
    assert "no PEM certificate" in (ca_bundle_problem(tmp_path / "f") or "")
