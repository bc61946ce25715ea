"""The exception hierarchy, in one place, and the typed details an error carries.

Every error a user can meet carries what they need to act on it: the file or key, the cell, the
command's output. The CLI turns these into one clear message and an exit code; nothing below the CLI
prints or exits. Everything besides the message is an :class:`ErrorDetails` field (``exc.details.stderr``,
``exc.details.guests``): a raiser naming a field that does not exist fails at once, and a reader finds
every field here.

::

    StormatrixError                      exit 1 unless stated
    ├── InputError                       exit 2: the user's input is wrong (matrix file, CLI argument, data file)
    │   ├── MatrixError                  a matrix file: names the file and the key, and the fix
    │   ├── DataFileError                an input data file (fio JSON, DiskSpd XML, perf CSV, journal)
    │   └── UnsafeWrite                  a write workload aimed at a disk that holds data, without allow_write
    ├── EnvironmentProblem               exit 3: something on this machine is missing (QEMU, fio, a guest image)
    │   └── PowerCLIUnavailable          pwsh or PowerCLI is missing on the workstation
    ├── JournalWriteError                the journal could not be written (disk full): the run stops
    ├── BackendError                     the hypervisor did not do what was asked
    │   ├── TaskFailed                   a Proxmox task ended with an error exitstatus
    │   ├── VmStartError                 the VM/QEMU process did not start (with its stderr)
    │   ├── QmpError                     QEMU's monitor (QMP) refused or dropped a command
    │   ├── UnsafeChange                 a Proxmox config change would risk a volume the harness does not own
    │   ├── PveApiError                  the Proxmox API answered an error status (details.status, .errors)
    │   │   ├── PveAuthError             the token was refused (401/403)
    │   │   └── ConfigConflictError      digest mismatch: someone else changed the VM
    │   └── PowerCLIError                a StormatrixVMware call failed (details.error_id, .powercli, .command)
    │       ├── PowerCLIConnectError     credentials, certificate or server
    │       ├── PowerCLINotFound         the VM, disk, host or device named in [vmware] does not exist
    │       └── PowerCLIContractError    Python and the module disagree: a bug, not the lab
    ├── GuestError                       the guest misbehaved
    │   ├── GuestNotReady                no readiness within the deadline
    │   │   ├── PowerCLIGuestNotReady    VMware Tools did not start after the power-on
    │   │   └── TestDiskMissing          the test disk is not visible in a Windows guest (never retried)
    │   ├── WorkloadFailed               fio/DiskSpd exited non-zero or produced no result
    │   └── GuestDisconnected            the channel to the guest dropped mid-command
    ├── RemoteCommandError               WinRM / pwsh: non-zero exit (details.exit_status, .stdout, .stderr)
    │   ├── AuthenticationFailed
    │   ├── RemoteTimeout
    │   └── WSManServiceError            the WinRM service answered a fault or an HTTP 5xx
    └── CollectorError                   the host collector could not measure the window
        └── PowerCLIStatsError           vSphere had no usable realtime statistics for the window

Signals that never reach a user stay where they are raised and are not part of this tree:
``core.paths.TooLarge`` (a bounded read), ``linux-host``'s ``CollectorProblem`` (the host tools run on a
node without stormatrix, so they cannot import this module; :mod:`stormatrix.collect` turns it into a
:class:`CollectorError`), the WinRM channel's private ``_ConnectError``, and the command line's own
``console.Terminated`` (SIGTERM/SIGHUP, unwound like Ctrl-C) and ``console.OutputFailed`` (stdout failed).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any


@dataclass(frozen=True)
class ErrorDetails:
    """What an error carries besides its message and cell. Every field is optional; which ones an error
    sets is said where it is raised."""

    # a command that ran elsewhere (WinRM, the guest module, fio, pwsh)
    exit_status: int | None = None
    stdout: str = ""
    stderr: str = ""
    #: the guest module's or PowerShell's FullyQualifiedErrorId
    error_id: str = ""
    #: the guest module function that failed
    function: str = ""
    # many guests at once (fio-server): who dropped out, what the others measured, the fio client process
    guests: list[str] | None = None
    partial: list[dict[str, Any]] | None = None
    controller: dict[str, Any] | None = None
    #: a Windows guest's facts (drivers, controllers), so the run can skip the cells they rule out
    guest_facts: dict[str, Any] | None = None
    #: which edge of the measurement window the host collector failed at: "start" or "end"
    window: str = ""
    # a Proxmox task or API call
    upid: str = ""
    exitstatus: str | None = None
    log: list[str] | None = None
    status: int | None = None
    errors: dict[str, str] | None = None
    # a StormatrixVMware (PowerCLI) call
    powercli: str | None = None
    command: str = ""
    category: str = ""

    def set_fields(self) -> dict[str, Any]:
        """The fields that differ from their default (for a journal entry or a log line)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) != f.default}


class StormatrixError(Exception):
    """Base of every error stormatrix raises on purpose."""

    exit_code = 1
    #: False where trying the cell again cannot help (the runner then journals it once and moves on)
    retryable = True

    def __init__(self, message: str, *, cell: str | None = None, details: ErrorDetails | None = None,
                 **fields: Any) -> None:
        """``fields`` are :class:`ErrorDetails` fields (a name that is not one is a TypeError); ``details``
        carries another error's over (``fields`` then change some of them)."""
        super().__init__(message)
        self.message = message
        self.cell = cell
        self.details = replace(details or ErrorDetails(), **fields)

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


class PowerCLIUnavailable(EnvironmentProblem):
    """pwsh or PowerCLI is missing on this workstation (details: error_id, powercli, command)."""


class JournalWriteError(StormatrixError):
    """The journal could not be written (disk full, permissions): the run must stop, nothing is lost."""


class BackendError(StormatrixError):
    pass


class TaskFailed(BackendError):
    """A Proxmox task failed or did not end (details: upid, exitstatus, log)."""


class VmStartError(BackendError):
    pass


class QmpError(BackendError):
    pass


class UnsafeChange(BackendError):
    """The requested change would put a volume at risk or clobber a disk the harness does not own."""


class PveApiError(BackendError):
    """The API answered with an error status (details: status, and errors per parameter for HTTP 400)."""


class PveAuthError(PveApiError):
    """The token was refused (401/403): wrong token id or secret, or missing privileges."""


class ConfigConflictError(PveApiError):
    """Digest mismatch: the VM config changed under us (a person or tool is editing it)."""


class PowerCLIError(BackendError):
    """A module call failed (details: error_id, the FullyQualifiedErrorId; powercli, PowerCLI's own
    message; command; category)."""


class PowerCLIConnectError(PowerCLIError):
    """Connecting failed: credentials missing or rejected, certificate not trusted, server unreachable."""


class PowerCLINotFound(PowerCLIError):
    """The VM, disk, host or device named in [vmware] does not exist (or a name matched several)."""


class PowerCLIContractError(PowerCLIError):
    """Python and the module disagree (unknown command or parameter, malformed answer): a bug, not the lab."""


class GuestError(StormatrixError):
    pass


class GuestNotReady(GuestError):
    pass


class PowerCLIGuestNotReady(GuestNotReady):
    """VMware Tools did not start after the power-on (details as :class:`PowerCLIError`)."""


class TestDiskMissing(GuestNotReady):
    """The test disk is not visible in the guest (details: guest_facts); restarting the VM will not change that."""

    retryable = False
    __test__ = False  # not a pytest class, whatever its name


class WorkloadFailed(GuestError):
    pass


class GuestDisconnected(GuestError):
    pass


class RemoteCommandError(StormatrixError):
    """A remote command failed (details: exit_status, stdout, stderr; error_id and function from the guest module)."""


class AuthenticationFailed(RemoteCommandError):
    pass


class RemoteTimeout(RemoteCommandError):
    pass


class WSManServiceError(RemoteCommandError):
    """The WinRM service answered a WS-Man fault or an HTTP 5xx: it runs but cannot serve (yet)."""


class CollectorError(StormatrixError):
    pass


class PowerCLIStatsError(CollectorError):
    """vSphere had no usable realtime statistics for the window (details as :class:`PowerCLIError`)."""
