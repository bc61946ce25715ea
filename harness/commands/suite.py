"""``stormatrix suite plan|run``: the platform-comparison suite (many guests running ``fio --server``)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..core.errors import InputError
from ..core.model import format_size
from ..core.paths import executable_problem
from ..journal import Journal
from ..registry import fleet_suite, load_suite, suite_guests, suite_guests_class
from ..suite import Suite, eta
from ..suiterun import check_resumable, fio_version, run_suite
from .argtypes import check_run_dir
from .runlock import hold_run_dir


SUITE_FILE_HELP = ("suite file: its [suite] grid of fio points, and the guests that run them ([suite] guests or vms) "
                   "or a [fleet] that deploys them")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "suite", help="platform-comparison suite: one grid of fio points on many fio-server guests at once",
        description="Run the [suite] of a suite file on every guest's fio server at once, one side per "
                    "run directory; compare two sides with `stormatrix compare runs/a runs/b`. Guests are "
                    "given as name=host:port, or on Proxmox as [suite] vms = [101, ...] with a [proxmox] "
                    "section: addresses from the QEMU guest agent, host metrics of the VMs' QEMU processes "
                    "when the node is reachable (on it, or [proxmox] ssh). With a [fleet] the suite deploys "
                    "its workers (Proxmox, ESXi with [fleet] backend = \"vmware\", or 1-4 local QEMU workers with "
                    "backend = \"qemu\", whose storages are iscsi, nbd or file on 127.0.0.1), runs each storage "
                    "under test as a side, writes the comparison workbook and removes the workers.")
    sub = parser.add_subparsers(dest="suite_command", metavar="ACTION", required=True)
    plan = sub.add_parser("plan", help="show the points, the guests and the ETA",
                          description="Read the [suite] of SUITE_FILE and print its grid of fio points, the guests of "
                                      "the side (with --discover: their addresses, asked of the node now), and the "
                                      "ETA; with -o, what a resume would skip. Runs nothing. Exit code 2 on a bad "
                                      "suite file.")
    plan.add_argument("matrix", metavar="SUITE_FILE", help=SUITE_FILE_HELP)
    plan.add_argument("-o", "--output", help="run directory: also show what a resume would skip")
    plan.add_argument("--discover", action="store_true",
                      help="with [suite] vms: ask the node now for each guest's address and say whether host "
                           "metrics will be collected (nothing is run)")
    plan.add_argument("--fio", default="fio",
                      help="with [fleet]: the fio client whose version the template's declared fio must be (default: "
                           "fio on PATH)")
    plan.set_defaults(func=cmd_plan)
    run = sub.add_parser("run", help="run the suite (resumable: run again to continue)",
                         description="Run every point of the [suite] of SUITE_FILE on all the side's fio-server guests "
                                     "at once, one fio client, and journal each point to RUN_DIR/journal.ndjson. "
                                     "Points already in the journal are skipped, so running the same command again "
                                     "resumes. With [fleet]: deploys the workers, checks each guest's fio version "
                                     "through the guest agent (VMware Tools on ESXi; exit 2 on a mismatch), runs "
                                     "each storage as a side into RUN_DIR/<storage>, writes RUN_DIR/comparison.xlsx "
                                     "and removes the workers (unless --keep).")
    run.add_argument("matrix", metavar="SUITE_FILE", help=SUITE_FILE_HELP)
    run.add_argument("-o", "--output", required=True, metavar="RUN_DIR", help="run directory (one per side)")
    run.add_argument("--fio", default="fio", help="the fio client binary (default: fio on PATH)")
    run.add_argument("--keep", action="store_true",
                     help="with [fleet]: keep the workers after the run (remove them later with "
                          "`stormatrix fleet destroy FILE -o RUN_DIR`)")
    run.set_defaults(func=cmd_run)


def _describe(suite: Suite) -> list[str]:
    head = (f"suite {suite.name!r}, sides: the storages under test of its [fleet] (backend {suite.fleet!r})"
            if suite.fleet is not None else f"suite {suite.name!r}, side {suite.side!r}, disk {suite.disk_key}")
    lines = [head,
             f"  rw: {', '.join(suite.rw)}; block sizes: {', '.join(format_size(b) for b in suite.block_sizes)}; "
             f"queue depths: {', '.join(map(str, suite.queue_depths))}; numjobs {suite.numjobs}; "
             f"repeats {suite.repeats}",
             f"  each point: {suite.ramp_s:g} s warm-up + {suite.measure_s:g} s measured on {suite.filename}"]
    if suite.fleet is not None:
        lines.append("  workers: deployed by the suite ([fleet]); each storage under test is a side")
    else:
        lines += suite_guests_class(suite).plan_lines(suite)  # the guests as their platform says them
    return lines


def cmd_plan(args: argparse.Namespace) -> int:
    suite = load_suite(args.matrix)
    done = 0
    if args.output is not None:
        check_run_dir("-o", args.output)
        Journal(args.output).check_existing()  # a FIFO there would block the read below
        if suite.guests:  # what `suite run` refuses (another side or guest set there) plan refuses too
            check_resumable(Journal(args.output), suite)

        keys = Journal(args.output).done_keys() if Journal(args.output).path.exists() else set()
        done = sum(1 for p in suite.points() if p.key in keys)
    for line in _describe(suite):
        print(line)
    if suite.fleet is not None:
        fleet_suite(suite).plan(args.output, fio_version(args.fio))
    if args.discover and suite.vms:
        with suite_guests(suite) as guests:
            found = guests.start()
            for line in guests.describe():
                print(line, file=sys.stderr)
            status = guests.host_status()
        print(f"  guests ({len(found)}): " + ", ".join(g.describe() for g in found))
        print(f"  host metrics: {status['mode']}: {status.get('detail', '')}")
    total = eta(suite)
    print(f"{total.points} points; ETA {total.describe()}")
    if done:
        print(f"resume: {done} points already journaled in {args.output}; "
              f"ETA for the rest {eta(suite, done=done).describe()}")
    return 0


def check_fio_client(fio: str) -> None:
    """``--fio``: a program that exists and can be run, found before the first point (else every point would
    fail twice at its probe and be journaled as an error)."""
    import os
    import shutil

    if not fio.strip():
        raise InputError("--fio is empty. Fix: give the fio client binary, e.g. --fio /usr/bin/fio (default: fio on "
                         "PATH)")
    if os.sep not in fio and shutil.which(fio) is None:
        raise InputError(f"--fio {fio}: no such program on PATH. Fix: install fio (Debian: apt-get install fio) or "
                         "give its path, e.g. --fio /usr/local/bin/fio")
    problem = executable_problem(fio if os.sep in fio else str(shutil.which(fio)))
    if problem:
        raise InputError(f"--fio {fio} {problem}. Fix: give the fio client binary itself, e.g. --fio /usr/bin/fio")


def cmd_run(args: argparse.Namespace) -> int:
    suite = load_suite(args.matrix)
    check_run_dir("-o", args.output)
    check_fio_client(args.fio)
    Journal(args.output).check_existing()  # (refused before the run directory is held: a refusal creates nothing)
    if suite.guests:
        check_resumable(Journal(args.output), suite)
    if suite.fleet is not None:
        for line in _describe(suite):
            print(line, file=sys.stderr)
        with hold_run_dir(args.output, "suite run"):
            fleet_outcome = fleet_suite(suite).run(args.output, fio=args.fio, keep=args.keep, progress=True)
        for key, message in fleet_outcome.failed:
            print(f"  failed: {key}: {message}", file=sys.stderr)
        return 1 if fleet_outcome.failed else 0
    if args.keep:
        raise InputError("--keep applies only to a suite with a [fleet] (workers the suite deploys). Fix: drop --keep")
    for line in _describe(suite):
        print(line, file=sys.stderr)
    with hold_run_dir(args.output, "suite run"):
        return _run_held(args, suite)


def _run_held(args: argparse.Namespace, suite: Suite) -> int:
    with suite_guests(suite) as guests:  # the side's guests, from the platform's capability (registry)
        guests.start()
        for line in guests.describe():
            print(line, file=sys.stderr)
        status = guests.host_status()
        print(f"host metrics: {status['mode']}: {status.get('detail', '')}"
              + (f". To get them: {status['fix']}" if status.get("fix") else ""), file=sys.stderr)
        outcome = run_suite(suite, args.output, guests, fio=args.fio, progress=True)
    print(f"measured {len(outcome.measured)} points, {len(outcome.already_done)} were already journaled, "
          f"{len(outcome.failed)} failed", file=sys.stderr)
    for key, message in outcome.failed:
        print(f"  failed: {key}: {message}", file=sys.stderr)
    return 1 if outcome.failed else 0
