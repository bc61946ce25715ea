"""``stormatrix guest check``: run the guest validation inside a Windows guest over WinRM.

Prints one line per check (passed, failed or skipped, and for a failure the message that says how to
fix it) and exits 0 only when every check passed. The checks run in the guest without Pester (the
module's built-in runner); docs/windows.md lists what a guest needs. The password comes from ``--password-env`` or
``--password-file``; there is deliberately no ``--password`` (it would sit in the shell history and
in ``ps`` output).
"""

from __future__ import annotations

import argparse
import math
import re
import time
from typing import Any

from ..secrets import check_option
from ..executors.winrm import TRANSPORTS, TestDiskMissing, WinRMExecutor, WinRMSettings


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
    check.add_argument("--username", required=True, help="account in the guest's Administrators group")
    pw = check.add_mutually_exclusive_group(required=True)
    pw.add_argument("--password-env", metavar="VAR", help="environment variable that holds the password")
    pw.add_argument("--password-file", metavar="PATH", help="file whose first line is the password")
    check.add_argument("--no-cert-validation", action="store_true",
                       help="do not verify the guest's TLS certificate (lab guests with self-signed certificates)")
    check.add_argument("--ca-file", default="", help="CA bundle (PEM) that signed the guest's certificate")
    check.add_argument("--disk-serial", required=True, help="serial number of the raw test disk")
    check.add_argument("--controller", default=None, help="controller under test: its driver must be bound")
    check.add_argument("--engine", choices=("fio", "diskspd"), default="fio",
                       help="the I/O engine whose installation is checked (default fio)")
    check.add_argument("--fio-path", default="C:\\Program Files\\fio\\fio.exe",
                       help="fio.exe in the guest (default %(default)s)")
    check.add_argument("--diskspd-path", default="C:\\Program Files\\DiskSpd\\diskspd.exe",
                       help="diskspd.exe in the guest (default %(default)s)")
    check.add_argument("--timeout", type=positive_seconds, default=300.0,
                       help="seconds to wait for WinRM to answer (default 300)")
    check.set_defaults(func=run_check)
    guest.set_defaults(func=lambda args: (guest.print_help(), 2)[1])


def positive_seconds(text: str) -> float:
    """argparse type: a finite number of seconds above 0 (``nan`` would never compare as elapsed, ``inf``
    would never end)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text} is not a number of seconds above 0 (e.g. 300)")
    return value


_HOST = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[0-9A-Fa-f:]*:[0-9A-Fa-f:.]+|[A-Za-z0-9]([A-Za-z0-9_.-]{0,252}))$")


def host_name(text: str) -> str:
    """argparse type: a host name or an IPv4/IPv6 address — not a URL (the port and transport have their
    own options), nothing with spaces."""
    if "://" in text or "/" in text:
        raise argparse.ArgumentTypeError(f"{text!r} is a URL, not a host: give only the name or address "
                                         "(e.g. --host 10.0.0.5) and the port with --port, TLS with --tls")
    if not _HOST.match(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a host name or address (letters, digits, '.', '-'; "
                                         "no spaces)")
    return text


def port_number(text: str) -> int:
    """argparse type: 0 (the transport's default) or a TCP port."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{text} is not a TCP port (1-65535, or 0 for the default)")
    return value


def section_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """The CLI flags as a ``[winrm]`` section, so the command and a matrix file mean the same thing."""
    return {
        "host": args.host, "port": args.port, "transport": args.transport, "use_tls": args.tls,
        "username": args.username, "password_env": args.password_env or "", "password_file": args.password_file or "",
        "cert_validation": not args.no_cert_validation, "ca_file": args.ca_file, "disk_serial": args.disk_serial,
        "engine": args.engine, "fio_path": args.fio_path, "diskspd_path": args.diskspd_path,
    }


def run_check(args: argparse.Namespace, *, protocol_factory: Any = None, environ: Any = None) -> int:
    if args.password_env:  # a password pasted here by mistake is refused without being repeated
        check_option("--password-env", args.password_env, kind="env")
    if args.password_file:
        check_option("--password-file", args.password_file, kind="file")
    settings = WinRMSettings.from_section(section_from_args(args), environ=environ)
    executor = WinRMExecutor([], settings=settings, protocol_factory=protocol_factory)
    missing: TestDiskMissing | None = None
    try:
        try:
            executor.wait_ready(time.monotonic() + args.timeout)
        except TestDiskMissing as exc:  # the checks below say which ones fail; the reason is printed after them
            missing = exc
        report = executor.validate(args.controller)
    finally:
        executor.close()
    print(report.table())
    if missing is not None:
        print(f"why: {missing.message}")
    return 0 if report.passed and missing is None else 1
