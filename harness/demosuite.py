"""``stormatrix demo --suite``: the protocol comparison of the seeds (``003_*``: iSCSI vs NVMe/TCP on
Proxmox) in miniature, on this machine: a thin user of the local fleet.

The demo ships a suite file (``matrices/demo-suite.toml``: ``[fleet] backend = "qemu"``, 2 workers,
storages iSCSI then NBD, a reduced grid), writes it into the run directory with ``--guests`` workers
(``RUN_DIR/suite.toml``) and runs it exactly as ``stormatrix suite run RUN_DIR/suite.toml -o RUN_DIR``
does: the registry's fleet suite for ``[fleet] backend`` (:data:`stormatrix.registry.FLEET_SUITES`, the qemu
backend's local fleet) makes the volumes, serves them over each protocol on 127.0.0.1, boots the workers,
runs every point into ``RUN_DIR/iscsi`` and ``RUN_DIR/nbd``, writes the comparison workbook and removes
what it created. Resumable like the rest: a re-run skips journaled points and serves no storage and boots
no worker for a side that is complete.
"""

from __future__ import annotations

import argparse
import os
import re
from importlib import resources
from pathlib import Path

from .core.errors import InputError
from .registry import fleet_suite, load_suite

MIN_GUESTS, MAX_GUESTS = 2, 4
SUITE_FILE = "demo-suite.toml"
_WORKERS = re.compile(r"^workers = \d+$", re.MULTILINE)


def suite_text(guests: int) -> str:
    """The shipped demo suite with ``guests`` workers."""
    if not MIN_GUESTS <= guests <= MAX_GUESTS:
        raise InputError(f"--guests {guests}: the demo suite boots {MIN_GUESTS} to {MAX_GUESTS} guests per side "
                         "(each is a QEMU process under software emulation)")
    text = resources.files("stormatrix").joinpath("matrices", SUITE_FILE).read_text(encoding="utf-8")
    text, n = _WORKERS.subn(f"workers = {guests}", text)
    if n != 1:  # the shipped file is ours: a test reads it
        raise AssertionError(f"matrices/{SUITE_FILE} must hold exactly one 'workers = N' line, has {n}")
    return text


def write_suite_file(path: Path, guests: int) -> Path:
    """``RUN_DIR/suite.toml``: the demo suite as the run used it (replaced atomically)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".part")
    tmp.write_text(suite_text(guests), encoding="utf-8")
    os.replace(tmp, path)
    return path


def run_demo_suite(args: argparse.Namespace) -> int:
    """``stormatrix demo --suite``: returns the exit code (1 when points failed, 0 otherwise)."""
    for flag in ("matrix", "full"):
        if getattr(args, flag, None):
            raise InputError(f"--{flag} does not apply to --suite: the demo suite is its own suite file "
                             "(use --guests for 2-4 guests per side, or `stormatrix suite run` with your own file)")
    run_dir = Path(args.output or "runs/demo-suite")
    workbook = Path(args.workbook) if args.workbook else run_dir / "stormatrix-demo-suite.xlsx"
    suite = load_suite(write_suite_file(run_dir / "suite.toml", getattr(args, "guests", None) or 2))
    outcome = fleet_suite(suite).run(run_dir, fio="fio", keep=False, progress=not args.no_progress,
                                     workbook=workbook)
    print(f"workbook: {Path(outcome.workbook or workbook).resolve()}")
    if outcome.failed:
        print(f"{len(outcome.failed)} points failed; see the cell-error records in "
              + " and ".join(str(run_dir / side / "journal.ndjson") for side in outcome.sides))
        return 1
    return 0
