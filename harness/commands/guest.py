"""``stormatrix guest check``: run the guest validation inside a Windows guest over WinRM.

Prints one line per check (passed, failed or skipped, and for a failure the message that says how to
fix it) and exits 0 only when every check passed. ``--runner`` chooses how the checks run in the guest:
under Pester 5 where the guest has it (``auto``, the default), always the module's built-in runner
(``builtin``, no Pester needed), or only under Pester (``pester``); the first line names the runner
used. docs/windows.md lists what a guest needs. The password comes from ``--password-env`` or
``--password-file``; there is deliberately no ``--password`` (it would sit in the shell history and
in ``ps`` output).
"""

from __future__ import annotations

import argparse
from typing import Any

from ..core.errors import GuestNotReady, InputError, RemoteTimeout, TestDiskMissing
from ..core.model import CONTROLLER_ALIASES, CONTROLLERS
from ..secrets import check_option
from .argtypes import ca_bundle, host_name, non_empty, port_number, positive_seconds
from ..executors.winrm.executor import TRANSPORTS, VALIDATION_RUNNERS, WinRMExecutor, WinRMSettings
from ..executors.winrm.settings import _check_serial


def register(subparsers: Any) -> None:
    guest = subparsers.add_parser("guest", help="work with a Windows guest over WinRM",
                                  description="Work with a Windows guest over WinRM.")
    sub = guest.add_subparsers(dest="guest_command", metavar="ACTION")
    check = sub.add_parser("check", help="run the guest validation in the guest and print each check",
                           description="Upload the StormatrixGuest module, run its validation checks in the guest "
                                       "(test disk, controller driver, engine, power plan, pending reboot) and print "
                                       "a line per check; a failed check says how to fix it.")
    check.add_argument("--host", required=True, type=host_name, help="guest host name or address")
    check.add_argument("--port", type=port_number, default=0,
                       help="WinRM port (default 5985 for ntlm/kerberos, 5986 for https/credssp)")
    check.add_argument("--transport", choices=TRANSPORTS, default="ntlm",
                       help="WinRM authentication (default ntlm, with message encryption over HTTP; kerberos needs "
                            "a host name, not an address)")
    check.add_argument("--tls", action="store_true", help="ntlm/kerberos over HTTPS")
    check.add_argument("--username", required=True, type=non_empty, help="account in the guest's Administrators group")
    pw = check.add_mutually_exclusive_group(required=True)
    pw.add_argument("--password-env", metavar="VAR", help="environment variable that holds the password")
    pw.add_argument("--password-file", metavar="PATH", help="file whose first line is the password")
    check.add_argument("--no-cert-validation", action="store_true",
                       help="do not verify the guest's TLS certificate (lab guests with self-signed certificates; "
                            "only with TLS: --tls or transport https/credssp)")
    check.add_argument("--ca-file", type=ca_bundle,
                       help="CA bundle (PEM) that signed the guest's certificate (only with TLS)")
    check.add_argument("--disk-serial", required=True, type=disk_serial, help="serial number of the raw test disk")
    check.add_argument("--controller", default=None, type=controller_name,
                       help="controller under test: its driver must be bound (" + ", ".join(GUEST_CONTROLLERS) + ")")
    check.add_argument("--engine", choices=("fio", "diskspd"), default="fio",
                       help="the I/O engine whose installation is checked (default fio)")
    check.add_argument("--fio-path", default="C:\\Program Files\\fio\\fio.exe",
                       help="fio.exe in the guest (default %(default)s)")
    check.add_argument("--diskspd-path", default="C:\\Program Files\\DiskSpd\\diskspd.exe",
                       help="diskspd.exe in the guest (default %(default)s)")
    check.add_argument("--runner", choices=tuple(VALIDATION_RUNNERS), default="auto",
                       help="how the checks run in the guest: auto (under Pester 5 where the guest has it, else the "
                            "built-in runner; the default), builtin (no Pester needed) or pester (Pester 5 required: "
                            "Initialize-StormatrixGuest -PesterSource installs it); the output names the runner used")
    check.add_argument("--timeout", type=check_timeout, default=300.0,
                       help="deadline in seconds for the whole check: waiting for WinRM to answer, retries, the "
                            "module upload and the checks (default 300)")
    check.set_defaults(func=run_check)
    guest.set_defaults(func=lambda args: (guest.print_help(), 2)[1])


# what the guest module's validation accepts (Invoke-StormatrixGuestValidation's ValidateSet): the
# controllers a matrix can name, and the short name of the shared virtio-scsi controller
GUEST_CONTROLLERS = sorted(set(CONTROLLERS) | {"virtio-scsi"})
MAX_CHECK_TIMEOUT_S = 3 * 3600.0


def controller_name(text: str) -> str:
    """argparse type: a controller the guest check knows (aliases as the matrix takes them), checked before
    anything connects: a name the module refuses would surface only after the upload, minutes later."""
    name = CONTROLLER_ALIASES.get(text.strip().lower(), text.strip().lower())
    if name == "virtio-scsi" or name in CONTROLLERS:
        return name
    raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a controller the guest check knows: give one of "
                                     f"{', '.join(GUEST_CONTROLLERS)}")


def check_timeout(text: str) -> float:
    """argparse type: seconds above 0 and at most :data:`MAX_CHECK_TIMEOUT_S` (3 h): 3600000 reads like
    milliseconds typed as seconds (41 days), and a guest that has not answered in hours will not."""
    value = positive_seconds(text)
    if value > MAX_CHECK_TIMEOUT_S:
        raise argparse.ArgumentTypeError(f"{text!r} seconds is {value / 3600:,.1f} hours (milliseconds typed as "
                                         f"seconds?): give seconds, at most {MAX_CHECK_TIMEOUT_S:g} (3 hours), "
                                         "e.g. --timeout 300")
    return value


def section_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """The CLI flags as a ``[winrm]`` section, so the command and a matrix file mean the same thing."""
    return {
        "host": args.host, "port": args.port, "transport": args.transport, "use_tls": args.tls,
        "username": args.username, "password_env": args.password_env or "", "password_file": args.password_file or "",
        "cert_validation": not args.no_cert_validation, "ca_file": args.ca_file or "", "disk_serial": args.disk_serial,
        "engine": args.engine, "fio_path": args.fio_path, "diskspd_path": args.diskspd_path,
    }


def disk_serial(text: str) -> str:
    """argparse type: a disk serial as Get-Disk shows it (the same rule as ``[winrm] disk_serial``)."""
    try:
        _check_serial(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def check_tls_options(args: argparse.Namespace) -> None:
    """TLS options that would be silently ignored are refused: without TLS there is no certificate to
    check, and a CA file with validation off would never be used."""
    tls = args.tls or args.transport in ("https", "credssp")
    for flag, given in (("--no-cert-validation", args.no_cert_validation), ("--ca-file", bool(args.ca_file))):
        if given and not tls:
            raise InputError(f"{flag} has no effect: transport {args.transport} without --tls talks plain HTTP (with "
                             "message encryption), so there is no certificate. Fix: add --tls (port 5986), or leave "
                             f"{flag} out")
    if args.no_cert_validation and args.ca_file:
        raise InputError("--ca-file and --no-cert-validation together: with validation off the CA file would be "
                         "ignored. Fix: keep --ca-file (validated against that CA) and drop --no-cert-validation")


def run_check(args: argparse.Namespace, *, protocol_factory: Any = None, environ: Any = None,
              clock: dict[str, Any] | None = None) -> int:
    """``clock``: ``{"clock": ..., "sleep": ...}`` for tests that run the deadline on a fake clock."""
    check_tls_options(args)
    if args.password_env:  # a password pasted here by mistake is refused without being repeated
        check_option("--password-env", args.password_env, kind="env")
    if args.password_file:
        check_option("--password-file", args.password_file, kind="file")
    settings = WinRMSettings.from_section(section_from_args(args), environ=environ, origin="cli")
    executor = WinRMExecutor([], settings=settings, protocol_factory=protocol_factory, **(clock or {}))
    # --timeout is a deadline for the whole command: waiting for WinRM, the upload and the checks; the
    # channel cuts every request's HTTP timeout and every retry pause to what is left of it
    deadline = executor.channel._clock() + args.timeout
    executor.channel.set_deadline(deadline, f"--timeout {args.timeout:g}")
    missing: TestDiskMissing | None = None
    try:
        try:
            executor.wait_ready(deadline)
        except TestDiskMissing as exc:  # the checks below say which ones fail; the reason is printed after them
            missing = exc
        except GuestNotReady as exc:
            raise GuestNotReady(f"{exc.message} (--timeout {args.timeout:g}). Fix: check that the guest is up, "
                                "that WinRM listens there (winrm quickconfig in the guest) on the port and "
                                "transport given, and that no firewall drops it; a guest still booting may need "
                                "a longer --timeout") from None
        try:
            report = executor.validate(args.controller, args.runner)
        except RemoteTimeout as exc:
            raise RemoteTimeout(f"{exc.message} (--timeout {args.timeout:g}: the deadline covers the module "
                                "upload and the checks too). Fix: give a longer --timeout") from None
    finally:
        executor.close()
    print(report.table())
    if missing is not None:
        print(f"why: {missing.message}")
    return 0 if report.passed and missing is None else 1
