"""stormatrix as a Windows workstation runs it: in a Python from which what Windows' Python lacks is removed before
stormatrix is imported (``fcntl``, ``SIGHUP``, ``killpg``, ``getloadavg``, ``sched_getaffinity``, ``pathconf``,
``pwrite``, ``wait4``, ``setsid``, AF_UNIX...), with the seam answering as Windows does (Windows' primitives stood
in: tests/standins/windows_os.py).

What it holds: the package imports; ``--help``, ``plan`` (a Proxmox matrix over the API, an ESXi one), ``report``
and ``compare`` work and write UTF-8 files with ``\\n``; what is Linux-only by nature (the qemu backend,
``[proxmox] transport = "local"``, the local fleet) is refused by ``plan`` with the reason and the alternative,
never an ImportError or AttributeError; no file is opened in the locale's encoding (EncodingWarning is an error
for stormatrix's own modules: Windows' locale encoding is cp1252).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from openpyxl import load_workbook

import paths

ROOT = paths.ROOT
DATA = ROOT / "tests" / "data"

#: what Windows' CPython does not have, removed before stormatrix is imported
STRIP = textwrap.dedent(r"""
    import os, signal, socket, sys, warnings, _signal
    # third-party modules that have a Windows build of their own are loaded first, as their Linux build needs
    # these (psutil's Linux module reads os.sysconf and socket.AF_UNIX when it is imported)
    import psutil
    for name in ("killpg", "getpgid", "setsid", "getloadavg", "sched_getaffinity", "sched_setaffinity", "pathconf",
                 "fpathconf", "pwrite", "wait4", "fork", "getuid", "geteuid"):
        if hasattr(os, name):
            delattr(os, name)
    for module in (signal, _signal):
        for name in ("SIGHUP", "SIGKILL", "SIGPIPE", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGCHLD", "SIGALRM"):
            if hasattr(module, name):
                delattr(module, name)
    del socket.AF_UNIX
    warnings.filterwarnings("ignore", category=EncodingWarning)  # (openpyxl's own temporary files)
    warnings.filterwarnings("error", category=EncodingWarning, module=r"stormatrix\b")
    # the stand-in for Windows' primitives is built from Linux calls (fcntl, resource): it is loaded before those
    # modules go, and with it the seam and the package's first lines (stormatrix/__init__.py, core.starting)
    sys.path.insert(0, sys.argv.pop(1))  # tests/, for the stand-in
    from standins.windows_os import StandInWindows
    from stormatrix.core import oscompat, oswindows
    early = sorted(m for m in sys.modules if m.startswith("stormatrix"))
    assert early == ["stormatrix", "stormatrix.core", "stormatrix.core.osbase", "stormatrix.core.oscompat",
                     "stormatrix.core.osposix", "stormatrix.core.oswindows", "stormatrix.core.starting"], early
    for name in ("fcntl", "termios", "resource"):
        sys.modules[name] = None  # `import fcntl` raises ModuleNotFoundError from here on
    oscompat.OS = oswindows.Windows(StandInWindows())
    sys.argv[0] = "stormatrix"
    from stormatrix.cli import main
    code = main(sys.argv[1:])
    sys.exit(code)
    """)

PROXMOX = """
[run]
backend = "proxmox"
executor = "fio-server"
[matrix]
controllers = ["virtio-scsi-single", "sata"]
aio = ["io_uring", "threads"]
[[workload]]
name = "randread-4k"
rw = "randread"
bs = "4k"
[proxmox]
host = "pve.example"
node = "pve"
vmid = 100
test_disk = "scsi1"
token_id = "root@pam!smx"
token_secret_env = "SMX_TOKEN"
ssh = "root@pve.example"
"""


def windows_python(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SMX_TOKEN": "token-value-123", "PYTHONWARNDEFAULTENCODING": "1"}
    return subprocess.run([sys.executable, "-X", "warn_default_encoding", "-c", STRIP, str(ROOT / "tests"), *args],
                          capture_output=True, text=True, encoding="utf-8", errors="replace", cwd=cwd, env=env,
                          timeout=timeout)


def clean(out: subprocess.CompletedProcess[str]) -> None:
    for word in ("Traceback", "ImportError", "AttributeError", "ModuleNotFoundError", "EncodingWarning"):
        assert word not in out.stderr, out.stderr


def test_help_and_plan_of_a_proxmox_matrix_over_the_api(tmp_path: Path) -> None:
    out = windows_python("--help", cwd=tmp_path)
    clean(out)
    assert out.returncode == 0 and "usage: stormatrix" in out.stdout and "report" in out.stdout
    (tmp_path / "pve.toml").write_text(PROXMOX, encoding="utf-8")
    out = windows_python("plan", "pve.toml", cwd=tmp_path)
    clean(out)
    assert out.returncode == 0, out.stderr
    assert "4 cells" in out.stdout and "on backend proxmox" in out.stdout
    assert "token-value-123" not in out.stdout + out.stderr


@pytest.mark.parametrize("matrix, key, words", [
    (ROOT / "harness" / "matrices" / "demo.toml", "[run] backend", ("needs a Linux host", 'backend = "proxmox"')),
    ("transport-local", "[proxmox] transport", ('transport = "local"', 'use transport = "api"', "ssh")),
    (ROOT / "harness" / "matrices" / "demo-suite.toml", "[fleet] backend", ("needs a Linux host",)),
])
def test_what_is_linux_only_is_refused_by_plan_with_the_reason_and_the_alternative(
        tmp_path: Path, matrix: Path | str, key: str, words: tuple[str, ...]) -> None:
    if matrix == "transport-local":
        text = PROXMOX.replace('host = "pve.example"\n', 'transport = "local"\n')
        matrix = tmp_path / "local.toml"
        matrix.write_text(text, encoding="utf-8")
    command = ["suite", "plan"] if "suite" in str(matrix) else ["plan"]
    out = windows_python(*command, str(matrix), cwd=tmp_path)
    clean(out)
    assert out.returncode == 2, out.stdout + out.stderr
    assert f"{matrix}: {key}: " in out.stderr and "this is Windows" in out.stderr and "Fix: " in out.stderr
    for word in words:
        assert word in out.stderr, out.stderr


def test_report_and_compare_write_utf8_files_with_newlines(tmp_path: Path) -> None:
    out = windows_python("report", str(DATA / "journal" / "sample_run"), "-o", "sample.xlsx", cwd=tmp_path)
    clean(out)
    assert out.returncode == 0, out.stderr
    assert load_workbook(tmp_path / "sample.xlsx").sheetnames
    csvs = sorted(tmp_path.glob("*.csv"))
    assert csvs
    for csv in csvs:
        data = csv.read_bytes()
        assert b"\r" not in data and data.count(b"\n") > 1
        data.decode("utf-8")
    out = windows_python("compare", str(DATA / "fio" / "compare" / "A"), str(DATA / "fio" / "compare" / "B"),
                         "-o", "ab.xlsx", cwd=tmp_path)
    clean(out)
    assert out.returncode == 0, out.stderr
    assert len(load_workbook(tmp_path / "ab.xlsx").sheetnames) > 1


def test_a_windows_only_name_is_refused_as_windows_would(tmp_path: Path) -> None:
    out = windows_python("report", str(DATA / "journal" / "sample_run"), "-o", "CON.xlsx", cwd=tmp_path)
    clean(out)
    assert out.returncode == 2 and "Windows device name" in out.stderr
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("args, key", [(["demo"], "[run] backend"), (["demo", "--suite"], "[fleet] backend")])
def test_the_demo_runs_local_qemu_guests_and_is_refused_with_the_alternative(tmp_path: Path, args: list[str],
                                                                             key: str) -> None:
    out = windows_python(*args, "-o", "demo", cwd=tmp_path)
    clean(out)
    assert out.returncode == 2 and f": {key}: " in out.stderr and "needs a Linux host" in out.stderr
    assert 'backend = "proxmox"' in out.stderr


@pytest.mark.parametrize("args, words", [
    (["plan", "proxmox-windows2022-efficiency.toml"], ("ssh to root@pve1.lab.example failed", "BatchMode=yes")),
    (["suite", "plan", "proxmox-iscsi-vs-nvme-tcp.toml"], ("workers: deployed by the suite", "STORMATRIX_PVE_TOKEN")),
])
def test_the_shipped_examples_plan_on_windows_up_to_the_lab_they_name(
        tmp_path: Path, args: list[str], words: tuple[str, ...]) -> None:
    """Technote 004's matrix and 003's fleet suite (Proxmox) are read, validated and planned as far as this machine
    can without their lab: the first thing that needs it (the node over ssh, the API's token) stops with its message."""
    out = windows_python(*args[:-1], str(ROOT / "examples" / args[-1]), cwd=tmp_path)
    clean(out)
    assert out.returncode in (1, 2), out.stdout + out.stderr
    for word in words:
        assert word in out.stdout + out.stderr
