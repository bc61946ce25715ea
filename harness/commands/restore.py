"""``stormatrix restore RUN_DIR``: put a VM back after the harness itself crashed.

The runner journals the backend's original VM configuration in the ``run`` record before it changes
anything, and a ``restored`` record once the backend has put it back. This command reads the journal,
finds the last ``run`` record that has an original configuration and no ``restored`` record after it,
rebuilds the backend from the journaled matrix (credentials are read again from where the matrix
points: an environment variable, a file or the PowerCLI credential store, never the journal) and
restores. Backends that keep something to restore: ``proxmox`` (the VM's config) and ``vmware`` (the
test disk's controller layout, the power state and the esxcli tuning, through the same pwsh module
calls as the end of a run).
"""

from __future__ import annotations

import argparse
import logging
import os
from pathlib import Path
from typing import Any

from ..core.errors import InputError
from ..core.paths import input_problem
from ..core.recordtypes import Record, RestoredRecord, RunRecord
from ..journal import Journal, read_journal, JOURNAL_NAME
from ..records import restored_record
from ..registry import backend_class, spec_from_dict

log = logging.getLogger("stormatrix.restore")


def pending_restore(records: list[Record]) -> RunRecord | None:
    """The last ``run`` record with an original config that no later ``restored`` record covers."""
    last: RunRecord | None = None
    for rec in records:
        if isinstance(rec, RunRecord) and rec.original_config:
            last = rec
        elif isinstance(rec, RestoredRecord) and last is not None and rec.run_id == last.run_id:
            last = None
    return last


def restore_run(run_dir: Path, *, force: bool = False) -> str:
    journal_path = run_dir / JOURNAL_NAME
    if not run_dir.is_dir():
        problem = (input_problem(run_dir) or "is a file").replace("not a regular file", "not a directory")
        raise InputError(f"RUN_DIR {run_dir} {problem}. Fix: give the run directory of a 'stormatrix run' (the -o "
                         f"it was given; it holds {JOURNAL_NAME})")
    if not os.path.lexists(journal_path):
        raise InputError(f"{run_dir} has no {JOURNAL_NAME}. Fix: give the run directory of a 'stormatrix run' "
                         "(the -o it was given)")
    journal_problem = input_problem(journal_path)
    if journal_problem:  # a FIFO would block the read; a directory or a loop fails: said, never opened
        raise InputError(f"{journal_path} {journal_problem}, so no journal can be read there. Fix: give the run "
                         "directory "
                         "of a 'stormatrix run', whose journal.ndjson is a file")
    records = read_journal(journal_path).typed(journal_path)
    all_runs = [r for r in records if isinstance(r, RunRecord)]
    runs = [r for r in all_runs if r.original_config]
    if not all_runs:
        return (f"nothing to restore: {journal_path} holds no run record, so no run started here and no VM "
                "was changed")
    if not runs:
        used = ", ".join(sorted({str(r.backend) for r in all_runs}))
        return (f"nothing to restore: the runs in this journal (backend {used}) journaled no original VM "
                "configuration, so none was changed (the local qemu backend starts its own VMs and keeps "
                "nothing after a run)")
    run = pending_restore(records)
    if run is None:
        if not force:
            return "nothing to restore: the journal says the VM was put back (use --force to check anyway)"
        run = runs[-1]
    backend_name = run.backend
    original = run.original_config
    if backend_name not in RESTORABLE:
        raise InputError(f"the run used the {backend_name!r} backend, which keeps nothing to restore")
    if not isinstance(original, dict):
        raise InputError(f"{journal_path}: run {run.run_id}: original_config is {type(original).__name__}, "
                         "not an object. Fix: the journal was edited or damaged; restore it from a backup")
    if not isinstance(run.matrix, dict):
        raise InputError(f"{journal_path}: run {run.run_id}: the run record has no matrix, so the backend "
                         "cannot be rebuilt. Fix: the journal was edited or damaged; restore it from a backup")
    spec = spec_from_dict(run.matrix, str(run.matrix_path) if run.given("matrix_path") else "<journal>")
    backend = backend_class(backend_name)(spec, run_dir)
    try:
        try:
            # every RESTORABLE backend (checked above) has load_original; the Backend base does not
            backend.load_original(original)  # type: ignore[attr-defined]
        except InputError as exc:
            raise InputError(f"{journal_path}: run {run.run_id}: {exc}") from None
        backend.restore()
    finally:
        backend.close()
    what = RESTORABLE[backend_name](original)
    restored = restored_record(run_id=run.run_id, vm=what["vm"], by="stormatrix restore")
    Journal(run_dir).open().append(restored.to_json())
    return f"{what['text']} restored to its original configuration"


def _proxmox(original: dict[str, Any]) -> dict[str, str]:
    return {"vm": str(original["vmid"]), "text": f"VM {original['vmid']} on {original['node']}"}


def _vmware(original: dict[str, Any]) -> dict[str, str]:
    return {"vm": str(original["vm"]),
            "text": f"VM {original['vm']!r} ({original['test_disk']}) on {original.get('server')}"}


#: backends whose original configuration ``stormatrix restore`` puts back (they have ``load_original``),
#: and how the journal and the message name the VM
RESTORABLE = {"proxmox": _proxmox, "vmware": _vmware}


def _run(args: argparse.Namespace) -> int:
    if not args.run_dir.strip():  # Path("") is ".": an empty argument must not mean the current directory
        raise InputError("RUN_DIR is empty. Fix: give the run directory of a 'stormatrix run' (the -o it was given)")
    print(restore_run(Path(args.run_dir), force=args.force))
    return 0


def _plain(text: str) -> str:
    """The docstring's paragraph as ``--help`` text: no reStructuredText literals (````x````)."""
    return " ".join(text.replace("``", "'").split())


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("restore", help="put a VM back as it was before a crashed run",
                              description=_plain(__doc__.split("\n\n")[1]) if __doc__ else None)
    p.add_argument("run_dir", metavar="RUN_DIR", help="the run directory (holds journal.ndjson)")
    p.add_argument("--force", action="store_true", help="restore even if the journal says it was done")
    p.set_defaults(func=_run)
