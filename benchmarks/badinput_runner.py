"""Runs one bad-input case through the real CLI and judges it: the machinery of the corpus
(benchmarks/badinput_corpus.py), also used by tests/benchmarks/test_badinput_corpus.py.

A case is a command line with placeholders, the files to lay out first (including directories, FIFOs,
symlink loops) and what the message must name. Each case runs in a forked child of a process that has
already imported stormatrix (fast: no interpreter start per case) with stdin closed and a time limit, so
a hang is seen as a hang, not as a stuck benchmark. Judged as the issue asks: the expected exit code
(2 for bad input), no traceback, the message names the file or option (``needles``) and, for exit 2,
carries a reason and a fix (or is argparse's own ``error: argument``), no secret echoed, and every
file that existed before is byte for byte the same afterwards (nothing measured lost, no earlier good
output replaced).
"""

from __future__ import annotations

import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"

DIR, FIFO, LOOP = "<dir>", "<fifo>", "<symlink-loop>"


@dataclass(frozen=True)
class Link:
    """A symbolic (or, with ``hard``, a hard) link to ``target``, a path under the case's folder."""

    target: str
    hard: bool = False


@dataclass(frozen=True)
class Deep:
    """A file ``name`` holding ``content`` at the bottom of a chain of folders longer than PATH_MAX (made
    through directory descriptors: no path that long can be opened)."""

    content: bytes
    name: str = "deep.json"
    depth: int = 22


TEMP_NAME = re.compile(r"^\..*\.\d+\.(part|tmp)$|\.part\.\d+\.tmp$")  # the atomic writers' temporary names
SECRETS = ("ghp_8fK2mQz9LxW4vB7nR1tY6uJ3cH5dE0aPs", "hunter2-Pa55 w0rd!", "a3f1c2d4-9b8e-4f7a-8c6d-5e4f3a2b1c0d")


@dataclass
class Case:
    id: str
    argv: list[str]  # placeholders: {tmp} (the case's folder), {m} = {tmp}/m.toml, {out} = {tmp}/out/report.xlsx
    files: dict[str, Any] = field(default_factory=dict)  # path under {tmp} -> str/bytes content, DIR, FIFO, LOOP
    needles: tuple[str, ...] = ()  # each must appear in the output ({tmp} substituted)
    code: int = 2
    env: dict[str, str] = field(default_factory=dict)
    secrets: tuple[str, ...] = SECRETS  # never in the output
    bad: bool = True  # a bad input (counted as such); False: an awkward but valid one that must work
    changes: tuple[str, ...] = ()  # files under {tmp} a good case may create or change
    bash_line: str = ""  # a bash line run instead of argv ($SMX is the command; {tmp} etc. substituted)
    absent: tuple[str, ...] = ()  # words the output must not hold (e.g. "resume" from a command that cannot)


@dataclass
class Outcome:
    case: Case
    code: int | None
    text: str
    seconds: float
    problems: list[str]

    @property
    def passed(self) -> bool:
        return not self.problems


def _lay_out(tmp: Path, files: dict[str, Any]) -> None:
    for rel, content in files.items():
        path = tmp / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if content == DIR:
            path.mkdir(exist_ok=True)
        elif content == FIFO:
            os.mkfifo(path)
        elif content == LOOP:
            os.symlink(path.name, path)  # a link to itself: ELOOP on open
        elif isinstance(content, Link):
            (os.link if content.hard else os.symlink)(tmp / content.target, path)
        elif isinstance(content, Deep):
            path.mkdir(exist_ok=True)
            fd = os.open(path, os.O_RDONLY)
            try:
                for _ in range(content.depth):
                    os.mkdir("d" * 200, dir_fd=fd)
                    nfd = os.open("d" * 200, os.O_RDONLY, dir_fd=fd)
                    os.close(fd)
                    fd = nfd
                out = os.open(content.name, os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
                os.write(out, content.content)
                os.close(out)
            finally:
                os.close(fd)
        elif isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(str(content), encoding="utf-8", newline="")


def _snapshot(tmp: Path) -> dict[Path, bytes]:
    out = {}
    for p in _files(tmp):
        try:
            if p.is_file() and not p.is_symlink():
                out[p] = p.read_bytes()
        except OSError:
            pass
    return out


def _files(tmp: Path) -> list[Path]:
    """Every path under ``tmp``, not into linked folders nor past PATH_MAX (os.walk by path would fail)."""
    out = []
    for folder, dirs, files in os.walk(tmp):
        if len(folder) > 3000:
            dirs[:] = []
            continue
        out += [Path(folder) / n for n in files + [d for d in dirs if os.path.islink(os.path.join(folder, d))]]
    return out


def _shell(case: Case, script: str, env: dict[str, str], tmp: Path, limit: float) -> tuple[int | None, str, bool]:
    """A shell case: bash runs ``script`` in the case's folder; (exit code or None when hung, output, hung)."""
    full = {**os.environ, **env, "SMX": f"{sys.executable} -m stormatrix", "PY": sys.executable}
    try:
        r = subprocess.run(["bash", "-c", script], cwd=tmp / "cwd", env=full, capture_output=True, text=True,
                           timeout=limit, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        return None, (exc.stdout or b"").decode() if isinstance(exc.stdout, bytes) else str(exc.stdout or ""), True
    return r.returncode, r.stdout + r.stderr, False


def _child(argv: list[str], out_fd: int, env: dict[str, str], cwd: Path) -> None:
    """In the forked child: the CLI with stdout/stderr into ``out_fd``, in the case's own folder (a relative
    or empty path must never reach the caller's working tree); never returns."""
    code = 97
    try:
        os.chdir(cwd / "cwd")
        os.dup2(out_fd, 1)
        os.dup2(out_fd, 2)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.environ.update(env)
        import logging
        import sys

        sys.stdout = os.fdopen(1, "w", buffering=1, closefd=False)
        sys.stderr = os.fdopen(2, "w", buffering=1, closefd=False)
        logging.root.handlers.clear()
        from stormatrix.cli import main

        try:
            code = int(main(argv) or 0)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 2
        except BaseException:  # noqa: BLE001 - a traceback is exactly what the corpus looks for
            traceback.print_exc()
            code = 98
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


def run_case(case: Case, limit: float = 30.0, keep: bool = False) -> Outcome:
    tmp = Path(tempfile.mkdtemp(prefix="smx-corpus-"))
    try:
        sub = {"{tmp}": str(tmp), "{m}": str(tmp / "m.toml"), "{out}": str(tmp / "out" / "report.xlsx")}

        def fill(text: str) -> str:
            for k, v in sub.items():
                text = text.replace(k, v)
            return text
        _lay_out(tmp, {fill(k) if k.startswith("{") else k: v for k, v in case.files.items()})
        (tmp / "cwd").mkdir()
        before = _snapshot(tmp)
        argv = [fill(a) for a in case.argv]
        env = {k: fill(v) for k, v in case.env.items()}
        if case.bash_line:
            t0 = time.monotonic()
            code, text, hung = _shell(case, fill(case.bash_line), env, tmp, limit)
            problems = judge(case, code, text, hung, before, tmp, fill)
            return Outcome(case, code, text, time.monotonic() - t0, problems)
        r, w = os.pipe()
        t0 = time.monotonic()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            _child(argv, w, env, tmp)
        os.close(w)
        chunks: list[bytes] = []
        hung = False
        while True:
            left = limit - (time.monotonic() - t0)
            if left <= 0:
                hung = True
                os.kill(pid, signal.SIGKILL)
                break
            ready, _, _ = select.select([r], [], [], min(left, 1.0))
            if ready:
                data = os.read(r, 65536)
                if not data:
                    break
                if sum(map(len, chunks)) < 1_000_000:
                    chunks.append(data)
        _, status = os.waitpid(pid, 0)
        os.close(r)
        seconds = time.monotonic() - t0
        code = None if hung else os.waitstatus_to_exitcode(status)
        text = b"".join(chunks).decode("utf-8", "replace")
        problems = judge(case, code, text, hung, before, tmp, fill)
        return Outcome(case, code, text, seconds, problems)
    finally:
        if not keep:
            for p in _files(tmp):  # a FIFO or a loop must not stop the clean-up
                if p.is_symlink() or p.is_fifo():
                    p.unlink()
            shutil.rmtree(tmp, ignore_errors=True)  # (fd-based: it reaches past PATH_MAX too)


def judge(case: Case, code: int | None, text: str, hung: bool, before: dict[Path, bytes], tmp: Path,
          fill: Any) -> list[str]:
    problems = []
    if hung:
        problems.append("hung (killed at the time limit)")
    elif code == 98 or "Traceback (most recent call last)" in text:
        problems.append("traceback")
    elif code != case.code:
        problems.append(f"exit {code}, expected {case.code}")
    for needle in case.needles:
        if fill(needle) not in text:
            problems.append(f"the message does not name {fill(needle)!r}")
    if case.code == 2 and not hung and code == 2:
        if not any(m in text for m in ("Fix:", "fix:", "error: argument", "usage:", "required:")):
            problems.append("no fix in the message")
    for word in case.absent:
        if word in text:
            problems.append(f"the output says {word!r}, which it must not")
    for secret in case.secrets:
        if secret and secret in text:
            problems.append("a secret was echoed")
    allowed = {fill(c) for c in case.changes}
    for p, content in before.items():
        if str(p) in allowed:
            continue
        try:
            now = p.read_bytes()
        except OSError:
            now = None
        if now != content:
            problems.append(f"{p.relative_to(tmp)} was changed or lost")
    if len(text) > 20_000:
        problems.append(f"{len(text)} characters of output for one mistake")
    left = [p for p in _files(tmp) if p not in before and TEMP_NAME.search(p.name)]
    if left:
        problems.append(f"left a temporary file: {left[0].relative_to(tmp)}")
    return problems
