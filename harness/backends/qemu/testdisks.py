"""The local backend's test disks: raw images filled with data, cached per size, and claimed by one run at a time.

A run takes its images from the cache folder (``test-<size>m.raw``, ``.b.raw``, ... one per VM it keeps alive at
once: the VM under test and those booting ahead), skipping those another run has claimed or a running QEMU holds
open, so that two runs on one machine never wait on each other's image lock (:func:`claim_test_disks`).
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

from ...core.errors import EnvironmentProblem

# QEMU locks an image it has open with OFD byte-range locks at offsets 100+ (permissions) and 200+
# (shared permissions) (block/file-posix.c, RAW_LOCK_PERM_BASE / RAW_LOCK_SHARED_BASE).
_QEMU_LOCK_START, _QEMU_LOCK_LEN = 100, 200


def image_in_use(path: Path) -> bool:
    """Whether a running QEMU holds ``path`` open (its image lock), without opening it in QEMU."""
    import fcntl  # (here, not at the top: a Windows workstation imports this package for its words, never runs it)

    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        probe = struct.pack("hhqqi4x", fcntl.F_WRLCK, os.SEEK_SET, _QEMU_LOCK_START, _QEMU_LOCK_LEN, 0)
        answer = fcntl.fcntl(fd, fcntl.F_OFD_GETLK, probe)
        return struct.unpack("hhqqi4x", answer)[0] != fcntl.F_UNLCK
    except OSError:
        return False  # no OFD locks here: QEMU's own lock check still refuses a busy image
    finally:
        os.close(fd)


def _test_disk_names(folder: Path, size_mib: int) -> list[Path]:
    """The cached test-disk images of one size, in the order runs take them: ``test-<size>m.raw``, ``.b.raw``, ..."""
    return [folder / (f"test-{size_mib}m.raw" if s == "a" else f"test-{size_mib}m.{s}.raw")
            for s in "abcdefghijklmnopqrstuvwxyz"]


def free_test_disks(folder: Path, size_mib: int, count: int) -> list[Path]:
    """``count`` test-disk images of ``size_mib`` in ``folder`` that no running QEMU holds: the usual
    ``test-<size>m.raw`` (and ``.b.raw``) first, further copies (``.c.raw``, ...) when another run on
    this machine has those open, so that two runs do not wait on each other's image lock."""
    out: list[Path] = []
    for path in _test_disk_names(folder, size_mib):
        if not image_in_use(path):
            out.append(ensure_test_disk(path, size_mib))
            if len(out) == count:
                return out
    raise EnvironmentProblem(f"every test-disk image of {size_mib} MiB in {folder} is in use by a running QEMU: "
                             "stop the other runs, or give this run its own image with [qemu] disk_path")


class DiskClaim:
    """Test-disk images this run holds for its whole length: an ``flock`` on ``<image>.claim`` per image.

    A QEMU's own image lock lasts only while that VM lives, and a run stops and starts VMs cell after
    cell: between two of them another run on this machine (or a test) found the image free, took it, and
    each then waited on the other's lock or failed to boot ahead (seen with two demos at once). The claim
    closes that gap: :func:`claim_test_disks` skips images another process has claimed; the lock goes
    when the claim is released or the process ends, however it ends.
    """

    def __init__(self, paths: list[Path], fds: list[int]) -> None:
        self.paths, self._fds = paths, fds

    def release(self) -> None:
        for fd in self._fds:
            os.close(fd)  # closing the descriptor drops its flock
        self._fds = []


def claim_test_disks(folder: Path, size_mib: int, count: int) -> DiskClaim:
    """``count`` test-disk images of ``size_mib`` in ``folder`` that no other run has claimed and no running
    QEMU holds, claimed for this run (:class:`DiskClaim`): ``test-<size>m.raw``, ``.b.raw``, then
    further copies."""
    import fcntl  # (Linux only: see image_in_use)

    paths: list[Path] = []
    fds: list[int] = []
    folder.mkdir(parents=True, exist_ok=True)
    for path in _test_disk_names(folder, size_mib):
        fd = os.open(path.with_name(path.name + ".claim"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # another run holds it
            os.close(fd)
            continue
        if image_in_use(path):  # a QEMU of a run that does not claim (an older version, a test)
            os.close(fd)
            continue
        paths.append(ensure_test_disk(path, size_mib))
        fds.append(fd)
        if len(paths) == count:
            return DiskClaim(paths, fds)
    for fd in fds:
        os.close(fd)
    raise EnvironmentProblem(f"every test-disk image of {size_mib} MiB in {folder} is claimed by another run or "
                             "in use by a running QEMU: stop the other runs, or give this run its own image with "
                             "[qemu] disk_path")


def ensure_test_disk(path: Path, size_mib: int) -> Path:
    """A raw test disk filled with data (not sparse: reads of holes never reach the storage)."""
    if path.exists() and path.stat().st_size == size_mib * 2**20:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".part")
    chunk = bytes(range(256)) * 4096  # 1 MiB of a non-zero pattern
    with open(tmp, "wb") as fh:
        for i in range(size_mib):
            fh.write(chunk[i % 256:] + chunk[:i % 256])
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    return path
