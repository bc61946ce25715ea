"""``stormatrix image``: build (or show) the local guest image."""

from __future__ import annotations

import argparse

from .. import guestimage


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("image", help="build the local benchmark guest (kernel + initramfs with fio) and show it",
                       description="Build the tiny Linux guest from Debian packages into the cache folder "
                                   "(STORMATRIX_CACHE, default ~/.cache/stormatrix) if any input changed, "
                                   "and print where it is.")
    p.add_argument("--force", action="store_true", help="rebuild even if the inputs did not change")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    img = guestimage.build(force=args.force)
    size = img.initrd.stat().st_size / 2**20
    print(f"guest image {img.image_id}: kernel {img.kernel_release} ({img.kernel}), initramfs {size:.0f} MiB "
          f"({img.initrd}), {len(img.module_order)} kernel modules")
    return 0
