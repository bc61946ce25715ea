"""``stormatrix image``: build (or show) the local guest image."""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from .. import guestimage
from ..core.errors import InputError
from ..core.paths import input_problem


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("image", help="build the local benchmark guest (kernel + initramfs with fio) and show it",
                       description="Build the tiny Linux guest from Debian packages into the cache folder "
                                   "(STORMATRIX_CACHE, default ~/.cache/stormatrix; %LOCALAPPDATA%\\stormatrix on "
                                   "Windows) if any input changed, "
                                   "and print where it is.")
    p.add_argument("--force", action="store_true", help="rebuild even if the inputs did not change")
    p.set_defaults(func=run)


def usable_cache() -> Path:
    """The cache folder, made if missing; a file, FIFO, device or loop in its place (or an unwritable
    place) is refused naming where the path came from, before the build starts."""
    root = guestimage.cache_root()
    said = "STORMATRIX_CACHE" if os.environ.get("STORMATRIX_CACHE") else "the default cache folder"
    if os.path.lexists(root) and not root.is_dir():
        problem = input_problem(root) or "is a file"
        raise InputError(f"{said} {root} {problem.replace('not a regular file', 'not a directory')}, so the guest "
                         "image cannot be cached there. Fix: point STORMATRIX_CACHE at a directory (it is created "
                         "if missing)")
    try:
        root.mkdir(parents=True, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=root, prefix=".write-test-")
        probe.close()
    except OSError as exc:
        raise InputError(f"{said} {root} cannot be used for the guest image ({exc.strerror}). Fix: point "
                         "STORMATRIX_CACHE at a writable directory (it is created if missing)") from None
    return root


def run(args: argparse.Namespace) -> int:
    img = guestimage.build(usable_cache(), force=args.force)
    size = img.initrd.stat().st_size / 2**20
    print(f"guest image {img.image_id}: kernel {img.kernel_release} ({img.kernel}), initramfs {size:.0f} MiB "
          f"({img.initrd}), {len(img.module_order)} kernel modules")
    return 0
