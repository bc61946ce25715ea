"""The ``[qemu]`` section: the local QEMU backend's settings, read with every matrix (:mod:`stormatrix.registry`
imports this module, not the backend)."""

from __future__ import annotations

import os

from ...core.paths import disk_image_problem, executable_problem
from ...schema import Field, Section
from .pinning import check_setting

#: the QEMU program when ``[qemu] binary`` is not set
QEMU_BINARY = "qemu-system-x86_64"


def _check_binary(value: str) -> None:
    """``[qemu] binary``: a name looked up on PATH when QEMU starts, or a path, which must be an
    executable regular file now (a directory fails only at the first VM start, after plan said yes)."""
    if not value.strip():
        raise ValueError("is empty")
    if "/" not in value and any(c.isspace() for c in value):
        raise ValueError(f"{value[:80]!r} is a command line, not a program name: QEMU's options come from the "
                         "matrix")
    if "/" in value:
        problem = executable_problem(os.path.expanduser(value))
        if problem:
            raise ValueError(f"{value!r} {problem}")


def _check_disk_path(value: str) -> None:
    """``[qemu] disk_path``: a regular file (a raw image) or a block device. A missing one is said by
    spec.check_guest_backend, with the backend in view; what exists must be usable as a disk now."""
    path = os.path.expanduser(value)
    if value and os.path.lexists(path):
        problem = disk_image_problem(path)
        if problem:
            raise ValueError(f"{value!r} {problem}")


QEMU_SECTION = Section("qemu", {
    "binary": Field(str, QEMU_BINARY, check=_check_binary,
                    help="the QEMU program: a name looked up on PATH (qemu-system-x86_64), or the path of an "
                         "executable file"),
    "accel": Field(str, "tcg", choices=("tcg", "kvm"), help="tcg: software emulation (KVM hangs nested)"),
    "vcpus": Field(int, 1, min=1, max=64),
    "memory_mib": Field(int, 512, min=256, max=65536),
    "disk_size_mib": Field(int, 256, min=16, max=1048576, help="size of the raw test disk"),
    "disk_path": Field(str, "", check=_check_disk_path,
                       help="give the path of a raw image file or a block device for the test disk, or leave it "
                            "empty for a disk image in the cache"),
    "firmware": Field(str, "qboot", choices=("qboot", "seabios")),
    "guest_args": Field(str, "", help="kernel command-line words added to the guest's own (e.g. \"idle=poll\"); "
                        "part of the saved state's key, and recorded in the run record"),
    "tcg_thread": Field(str, "multi", choices=("multi", "single"),
                        help="with accel = tcg: TCG's thread mode (QEMU's -accel tcg,thread=...)"),
    "boot_ahead": Field(bool, True, help="boot the next configuration's VM during the current cell's "
                        "warm-up, paused while the measurement window is open"),
    "boot_ahead_depth": Field(int, 2, min=1, max=4,
                              help="with boot_ahead: how many of the next configurations' VMs boot ahead at once "
                                   "(2: the VM for the cell after next too, so each boot gets two cells' warm-ups "
                                   "and result transfers of CPU time); one more test-disk image each"),
    "overlap": Field(bool, True, help="take what need not wait off the time between two cells: the previous "
                     "cell's VM stops in the background, and the next configuration's VM starts booting as soon as "
                     "the current one is taken over, while it gets ready; the stop is done before the window "
                     "opens and the VM booting ahead is paused in it (nothing runs in a window)"),
    "pipeline": Field(bool, True, help="with overlap and boot_ahead: two cells in flight: the next cell's job is "
                      "sent as soon as the current cell's window closes, and the current cell's result is collected, "
                      "cross-checked, journaled and its VM stopped while the next one warms up (never in its window)"),
    "prepare_ahead": Field(bool, True, help="fio's jobs set up before they are needed. With pipeline: each "
                           "configuration's first job goes to its VM booted ahead as soon as that VM is ready, during "
                           "the cell before's warm-up (never in a window); fio reads it, opens the disk, allocates and "
                           "holds before the warm-up's first I/O until the VM's cell starts (the VM stays paused in "
                           "the window before; it is discarded when what runs next changes: a failure, a retry). "
                           "And (one job clone) the measurement job starts with the warm-up and holds until the "
                           "warm-up ends, instead of fio starting it then"),
    "restore": Field(bool, True, help="start each configuration's VM from a saved state of the same VM booted and "
                     "ready (in the cache folder's states/, saved the first time it boots, ~2-4 s) instead of booting "
                     "it: ~0.4 CPU-seconds instead of ~3.5 under software emulation. A state loads only into a VM "
                     "with the same guest-visible devices (machine, memory, vCPUs, guest image, controller, cache, "
                     "disk size, QEMU binary; aio and iothread may differ); one that fails to load or whose guest "
                     "does not answer is deleted with a warning and the VM boots. Not with disk_path (the VM "
                     "boots). Each cell record's times.vm_start says how its VM started"),
    "pin_threads": Field(str, "auto", check=check_setting,
                         help="with [host] scope = \"process\": pin QEMU's threads for each measurement window: auto "
                              "(where the host has two or more CPUs: vCPUs on the last CPU, main loop, iothreads, aio "
                              "workers and the harness on the others), on, off, or VCPU_CPUS/OTHER_CPUS such as "
                              "\"1/0\". Under scope \"cpus\" (the default) QEMU's threads run on [host] cpus "
                              "(with accel = tcg all but the vCPUs, the emulated guest, which run beside the harness)"),
}, help="the local QEMU backend",
   may_change_on_resume=frozenset({"boot_ahead", "boot_ahead_depth", "overlap", "pipeline",
                                   "prepare_ahead", "restore"}))
