"""The fleet journal: every VM and volume the fleet creates, written down (fsynced) before it is created.

``RUN_DIR/fleet.ndjson``, one JSON record per line, appended and fsynced through the run journal's own
file discipline (:mod:`stormatrix.core.journalfile`: a torn last line from a crash is repaired on open).
The journal, not names or tags, is what a run owns: ``fleet destroy`` removes exactly what is listed
here and is not yet gone, and checks each VM's ownership marker (its description names the fleet's id)
before touching it, so a VMID that another tool took after a failed clone is left alone.

What the records mean is each platform's: the records are typed per platform (the shared ``fleet`` header in
:mod:`.records`, each platform's kinds in its backend's ``fleetstate.py``) and replayed into its fleet state by the
one loop, :func:`.records.replay`. This module knows no record but its ``type``.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, Iterator

from ..core import oscompat
from ..core.errors import DataFileError

FILENAME = "fleet.ndjson"


class FleetJournal:
    """Append-only, fsynced per record; :func:`.records.replay` replays it into a platform's fleet state."""

    def __init__(self, run_dir: str | Path) -> None:
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / FILENAME

    def append(self, record: dict[str, Any]) -> None:
        """Write one record and fsync it before returning: the caller creates the thing only after."""
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self._repair()
        line = json.dumps({**record, "time": round(time.time(), 3)}, sort_keys=True) + "\n"
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | oscompat.O_BINARY, 0o644)
        try:
            os.write(fd, line.encode())
            os.fsync(fd)
        finally:
            os.close(fd)

    def _repair(self) -> None:
        """Drop a torn last line (a write a crash cut short) so the next record starts on its own line."""
        try:
            with open(self.path, "rb+") as fh:
                data = fh.read()
                if data and not data.endswith(b"\n"):
                    fh.truncate(data.rfind(b"\n") + 1)
        except FileNotFoundError:
            pass

    def records(self) -> Iterator[dict[str, Any]]:
        for _, rec in self.numbered():
            yield rec

    def numbered(self) -> Iterator[tuple[int, dict[str, Any]]]:
        """Each record with its line number (from 1), in order; a torn last line is skipped."""
        if not self.path.exists():
            return
        lines = self.path.read_text(encoding="utf-8").split("\n")
        for n, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                if n == len(lines):  # a torn last line: the write a crash cut short (its thing was not created)
                    return
                raise DataFileError(str(self.path), f"line {n} is not JSON; the fleet journal is damaged",
                                    "remove that line if you know what it held, then run fleet destroy again") from None
            if not isinstance(rec, dict) or "type" not in rec:
                raise DataFileError(str(self.path), f"line {n} is not a fleet record (no type)",
                                    "restore the file from the run directory's backup, or remove that line")
            yield n, rec
