"""The exception hierarchy, in one place.

Every error a user can meet carries what they need to act on it: the file or key, the cell, the
command's output. The CLI turns these into one clear message and an exit code; nothing below the CLI
prints or exits.

::

    StormatrixError                      exit 1 unless stated
    ├── InputError                       exit 2: the user's input is wrong (matrix file, CLI argument, data file)
    │   ├── MatrixError                  a matrix file: names the file and the key, and the fix
    │   ├── DataFileError                an input data file (fio JSON, DiskSpd XML, perf CSV, journal)
    │   └── UnsafeWrite                  a write workload aimed at a disk that holds data, without allow_write
    ├── EnvironmentProblem               something on this machine is missing (QEMU, fio, a guest image)
    ├── BackendError                     the hypervisor did not do what was asked
    │   ├── ConfigConflict               Proxmox digest mismatch: someone else changed the VM
    │   ├── TaskFailed                   a Proxmox task ended with an error exitstatus
    │   └── VmStartError                 the VM/QEMU process did not start (with its stderr)
    ├── GuestError                       the guest misbehaved
    │   ├── GuestNotReady                no readiness within the deadline
    │   ├── WorkloadFailed               fio/DiskSpd exited non-zero or produced no result
    │   └── GuestDisconnected            the channel to the guest dropped mid-command
    ├── RemoteCommandError               WinRM / pwsh: non-zero exit, with stdout and stderr
    │   ├── AuthenticationFailed
    │   └── RemoteTimeout
    └── CollectorError                   the host collector could not measure the window
"""

from __future__ import annotations

from typing import Any


class StormatrixError(Exception):
    """Base of every error stormatrix raises on purpose."""

    exit_code = 1
    #: False where trying the cell again cannot help (the runner then journals it once and moves on)
    retryable = True

    def __init__(self, message: str, *, cell: str | None = None, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.cell = cell
        self.details = details

    def __str__(self) -> str:
        prefix = f"[{self.cell}] " if self.cell else ""
        return prefix + self.message


class InputError(StormatrixError):
    exit_code = 2


class MatrixError(InputError):
    """A matrix file is wrong. ``where`` is ``file:key`` so the user can find it."""

    def __init__(self, path: str, key: str, problem: str, fix: str) -> None:
        where = f"{path}: {key}" if key else str(path)
        super().__init__(f"{where}: {problem}. Fix: {fix}")
        self.path, self.key, self.problem, self.fix = path, key, problem, fix


class DataFileError(InputError):
    def __init__(self, path: str, problem: str, fix: str = "") -> None:
        msg = f"{path}: {problem}" + (f". Fix: {fix}" if fix else "")
        super().__init__(msg)
        self.path, self.problem, self.fix = path, problem, fix


class UnsafeWrite(InputError):
    """A write workload would destroy data (partition table, filesystem) on the test disk.

    Never retried: the disk does not change between attempts; the fix is the user's."""


class EnvironmentProblem(StormatrixError):
    exit_code = 3


class BackendError(StormatrixError):
    pass


class ConfigConflict(BackendError):
    pass


class TaskFailed(BackendError):
    pass


class VmStartError(BackendError):
    pass


class GuestError(StormatrixError):
    pass


class GuestNotReady(GuestError):
    pass


class WorkloadFailed(GuestError):
    pass


class GuestDisconnected(GuestError):
    pass


class RemoteCommandError(StormatrixError):
    def __init__(self, message: str, *, exit_status: int | None = None, stdout: str = "",
                 stderr: str = "", **kw: Any) -> None:
        super().__init__(message, **kw)
        self.exit_status, self.stdout, self.stderr = exit_status, stdout, stderr


class AuthenticationFailed(RemoteCommandError):
    pass


class RemoteTimeout(RemoteCommandError):
    pass


class CollectorError(StormatrixError):
    pass
