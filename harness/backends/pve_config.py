"""Proxmox VM configuration as data, in one import: the Proxmox backend's ``pc`` namespace.

The code lives in modules of one job each; this module gathers their public names so callers keep one
import (``from . import pve_config as pc``):

- :mod:`.pve_cfg_drive` — drive property strings, the options each bus has, a cell's drive;
- :mod:`.pve_cfg_plan` — the minimal config change for a cell and the way back (never ``force``,
  never ``unusedN``), boot order;
- :mod:`.pve_cfg_storage` — what the storage under the disk decides when aio or cache is unset;
- :mod:`.pve_showcmd` — the test disk as QEMU gets it, read from ``qm showcmd`` or /proc/<pid>/cmdline.
"""

from __future__ import annotations

from .pve_cfg_drive import (BOOLEAN_OPTIONS, BUS_OPTIONS, DEFAULT_AIO, DEFAULT_SCSIHW, DRIVE_ALIASES, DRIVE_KEY_RE,
                            UNUSED_KEY_RE, UnsafeChange, controller_of, describe_test_disk, disk_config_of,
                            disk_storage, drive_for, drive_key, find_volume, is_cdrom, parse_bool, parse_drive,
                            print_drive, split_drive_key, volume_of)
from .pve_cfg_plan import (RESTORED_KEYS, ChangePlan, Write, _check_write, boot_order, boot_renamed, boot_without,
                           config_diff, plan_cell, plan_restore, plan_target)
from .pve_cfg_storage import (StorageInfo, default_aio, effective_aio, library_of, storage_id_of,
                              storage_implications, takes_aio, uses_cache_direct)
from .pve_showcmd import DiskReading, cmdline_problems, parse_showcmd, qemu_opts, read_disk, test_disk_cmdline

__all__ = [
    "BOOLEAN_OPTIONS", "BUS_OPTIONS", "DEFAULT_AIO", "DEFAULT_SCSIHW", "DRIVE_ALIASES", "DRIVE_KEY_RE", "UNUSED_KEY_RE",
    "UnsafeChange", "controller_of", "describe_test_disk", "disk_config_of", "disk_storage", "drive_for", "drive_key",
    "find_volume", "is_cdrom",
    "parse_bool", "parse_drive", "print_drive", "split_drive_key", "volume_of",
    "RESTORED_KEYS", "ChangePlan", "Write", "_check_write", "boot_order", "boot_renamed", "boot_without",
    "config_diff", "plan_cell", "plan_restore", "plan_target",
    "StorageInfo", "default_aio", "effective_aio", "library_of", "storage_id_of", "storage_implications",
    "takes_aio", "uses_cache_direct",
    "DiskReading", "cmdline_problems", "parse_showcmd", "qemu_opts", "read_disk", "test_disk_cmdline",
]
