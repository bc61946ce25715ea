"""Saved booted states of local QEMU VMs: a configuration's VM restored instead of booted.

A TCG boot of the guest costs ~3.5 CPU-seconds; loading a saved state of the same VM, booted and ready
(its fio waiting for the job), costs ~0.4. A state is QEMU's migration stream (QMP ``migrate`` to a file,
the VM paused), loaded by a QEMU started with ``-incoming defer`` (QMP ``migrate-incoming``).

Which states may load where (measured with Debian 12's QEMU 7.2, ``-accel tcg``, the demo's guest):

- The guest-visible device set must be the same: machine, firmware, memory, vCPUs, the guest image
  (kernel, initramfs, command line: the agent's protocol is the image's init), the controller model and its
  PCI place, the disk's size. A state of a virtio-blk VM loaded into an IDE one makes QEMU exit (seen).
- ``aio`` (native, threads, io_uring) and ``iothread`` (virtio-blk; virtio-scsi-single's controller) are
  host-side options of the same devices: a state saved with aio=native, iothread off loaded with aio=threads
  and an iothread (and the reverse on virtio-scsi-single), and the guest then ran fio on its disk
  (QEMU's block accounting counted the reads). They are left out of the key: one state serves them all.
- ``cache`` stays in the key: whether the disk has a write cache is what the guest sees (virtio-blk's WCE,
  the SCSI/ATA write-cache bit), and a guest that probed one mode must not run on the other.

The key is a SHA-256 over the QEMU binary (path, version, size, mtime), the guest image's id, the VM's whole
command line with those host-side options made equal and the per-run paths (sockets, run folder, test-disk
image) left out, the disk's size and :data:`PROTOCOL` (what the harness does around a state: bump it when
that changes). A state is a ``<key>.state`` file with a ``<key>.json`` beside it (what the key was made of,
the state's size); a state whose size differs from its description (cut short) is refused before QEMU reads it, one
QEMU cannot load, or whose guest does not answer, is deleted by the backend, which then boots the VM.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from ...core.model import DiskConfig

log = logging.getLogger("stormatrix.qemu")

#: what the harness does around a saved state; states of another protocol are never loaded
PROTOCOL = 1

#: states kept at most (~250 MB each for the demo's guest): the least recently used go first
MAX_STATES = 12

#: what a VM's host-side disk options are made equal to in its state key (they do not change what loads)
_KEY_AIO, _KEY_IOTHREAD = "native", False


def key_disk(disk: DiskConfig) -> DiskConfig:
    """``disk`` with the options a saved state tolerates (aio, iothread) made equal: the key's view of it."""
    return replace(disk, aio=_KEY_AIO, iothread=_KEY_IOTHREAD)


def binary_identity(binary: str, version: str) -> dict[str, Any]:
    """The QEMU program a state was saved by: its resolved path, version, size and mtime."""
    path = binary
    if "/" not in binary:
        for folder in os.environ.get("PATH", "").split(os.pathsep):
            candidate = os.path.join(folder, binary)
            if os.access(candidate, os.X_OK):
                path = candidate
                break
    try:
        real = os.path.realpath(path)
        st = os.stat(real)
        return {"path": real, "version": version, "size": st.st_size, "mtime_ns": st.st_mtime_ns}
    except OSError:
        return {"path": path, "version": version}


def state_key(argv: list[str], per_run: dict[str, str], *, binary: dict[str, Any], disk_size: int,
              guest_image: str) -> tuple[str, dict[str, Any]]:
    """The key of a VM's saved state, and what it was made of.

    ``argv`` is the VM's command line built for :func:`key_disk` of its disk; ``per_run`` maps the paths in it
    that differ from run to run and VM to VM (run folder, test-disk image, VM name) to fixed words.
    """
    words = []
    for word in argv[1:]:
        for path, name in per_run.items():
            word = word.replace(path, name)
        words.append(word)
    made_of = {"protocol": PROTOCOL, "qemu": binary, "guest_image": guest_image, "argv": words,
               "disk_size": disk_size}
    digest = hashlib.sha256(json.dumps(made_of, sort_keys=True).encode()).hexdigest()
    return digest[:32], made_of


class StateCache:
    """The folder of saved states (``<cache>/states``): look up, save into, discard."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, key: str) -> Path:
        return self.root / f"{key}.state"

    def _meta(self, key: str) -> Path:
        return self.root / f"{key}.json"

    def lookup(self, key: str) -> Path | None:
        """The state saved under ``key`` if there is one whose size is the one it was saved with. A state cut
        short (a full disk, a killed save, a damaged copy) is deleted here, with a warning, before QEMU reads it."""
        path, meta = self.path(key), self._meta(key)
        if not path.exists() and not meta.exists():
            return None
        try:
            size = json.loads(meta.read_text())["bytes"]
            real = path.stat().st_size
        except (OSError, ValueError, KeyError, TypeError) as exc:
            self.discard(key, f"its description or its file cannot be read ({exc})")
            return None
        if real != size:
            self.discard(key, f"it has {real} bytes, and {size} were saved")
            return None
        try:
            os.utime(meta)  # used now: the last to be pruned
        except OSError:
            pass
        return path

    def staging(self, key: str) -> Path:
        """Where a save writes before :meth:`commit` (unique: two runs may save the same key at once)."""
        self.root.mkdir(parents=True, exist_ok=True)
        return self.root / f"{key}.{os.getpid()}.{time.monotonic_ns()}.part"

    def commit(self, key: str, staged: Path, made_of: dict[str, Any], seconds: float) -> int:
        """Put a finished save in place (the state first, its description last: a state without one is unused)."""
        size = staged.stat().st_size
        os.replace(staged, self.path(key))
        tmp = self._meta(key).with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({**made_of, "bytes": size, "save_s": round(seconds, 3),
                                   "saved": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}, indent=1))
        os.replace(tmp, self._meta(key))
        self.prune()
        return size

    def prune(self, keep: int = MAX_STATES) -> None:
        """Delete the least recently used states beyond ``keep`` (and saves left half-done over a day ago)."""
        metas = sorted(self.root.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
        for meta in metas[keep:]:
            for p in (meta, meta.with_suffix(".state")):
                p.unlink(missing_ok=True)
        for part in self.root.glob("*.part"):
            try:
                if time.time() - part.stat().st_mtime > 86400:
                    part.unlink()
            except OSError:
                pass

    def discard(self, key: str, why: str) -> None:
        """Delete a state that cannot be used, and say so (the VM boots instead)."""
        log.warning("saved VM state %s is not used and is deleted: %s; the VM boots instead", self.path(key), why)
        for p in (self.path(key), self._meta(key)):
            p.unlink(missing_ok=True)


__all__ = ["PROTOCOL", "StateCache", "binary_identity", "key_disk", "state_key"]
