"""The fleet journal: every VM and volume the fleet creates, written down (fsynced) before it is created.

``RUN_DIR/fleet.ndjson``, one JSON record per line, appended and fsynced through the run journal's own
file discipline (:mod:`stormatrix.core.journalfile`: a torn last line from a crash is repaired on open).
The journal, not names or tags, is what a run owns: ``fleet destroy`` removes exactly what is listed
here and is not yet gone, and checks each VM's ownership marker (its description names the fleet's id)
before touching it, so a VMID that another tool took after a failed clone is left alone.

Records (``type``):

- ``fleet``: once, when the fleet is first deployed: ``fleet_id``, ``backend``, ``node``, ``template``,
  ``workers``, ``vmids``, ``marker`` (the description every worker carries);
- ``vm``: ``vmid``, ``name``, ``node`` — written *before* the clone call (the VM may or may not exist);
- ``vm-ready``: ``vmid`` — cloned, tagged and configured;
- ``volume``: ``storage``, ``vmid``, ``filename`` — written *before* the allocation call;
- ``volume-made``: ``storage``, ``filename``, ``volid`` — what the storage answered;
- ``attached`` / ``detached``: ``vmid``, ``slot`` (e.g. ``scsi1``), ``volid``;
- ``gone``: ``kind`` (``vm`` or ``volume``) and ``vmid`` or ``volid`` — removed (or found not to exist).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from ..core import oscompat
from ..core.errors import DataFileError

FILENAME = "fleet.ndjson"


@dataclass
class OwnedVolume:
    storage: str
    vmid: int
    filename: str
    volid: str | None = None  # None: the allocation may or may not have happened
    attached: str | None = None  # the slot it is attached at, if any


@dataclass
class FleetState:
    """What the journal says the fleet owns now."""

    header: dict[str, Any] | None = None
    vms: dict[int, dict[str, Any]] = field(default_factory=dict)  # vmid -> its "vm" record
    ready: set[int] = field(default_factory=set)
    volumes: dict[tuple[str, str], OwnedVolume] = field(default_factory=dict)  # (storage, filename) -> volume

    def live_vms(self) -> list[int]:
        return list(self.vms)

    def live_volumes(self) -> list[OwnedVolume]:
        return list(self.volumes.values())

    @property
    def empty(self) -> bool:
        return not self.vms and not self.volumes


class FleetJournal:
    """Append-only, fsynced per record; :meth:`state` replays it."""

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
            yield rec

    def state(self) -> FleetState:
        st = FleetState()
        for rec in self.records():
            kind = rec["type"]
            if kind == "fleet":
                st.header = st.header or rec
            elif kind == "vm":
                st.vms[int(rec["vmid"])] = rec
            elif kind == "vm-ready":
                st.ready.add(int(rec["vmid"]))
            elif kind == "volume":
                key = (rec["storage"], rec["filename"])
                st.volumes[key] = OwnedVolume(rec["storage"], int(rec["vmid"]), rec["filename"])
            elif kind == "volume-made":
                vol = st.volumes.get((rec["storage"], rec["filename"]))
                if vol is not None:
                    vol.volid = rec["volid"]
            elif kind in ("attached", "detached"):
                for vol in st.volumes.values():
                    if vol.volid == rec["volid"]:
                        vol.attached = rec["slot"] if kind == "attached" else None
            elif kind == "gone":
                if rec["kind"] == "vm":
                    st.vms.pop(int(rec["vmid"]), None)
                    st.ready.discard(int(rec["vmid"]))
                else:
                    named = (rec.get("storage"), rec.get("filename"))
                    for key in [k for k, v in st.volumes.items()
                                if v.volid == rec["volid"] or (v.volid is None and k == named)]:
                        del st.volumes[key]
        return st
