"""``stormatrix fleet plan|deploy|destroy|template``: the worker VMs of a comparison suite."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..core.errors import InputError
from ..executors.fioserver.inputs import DEFAULT_PORT
from ..fleet.interface import Fleet
from ..fleet.template import fio_package_version, user_data
from ..registry import open_fleet
from ..suiterun import fio_version
from ..tomlfile import load_toml

DESCRIPTION = """\
Deploy the worker VMs a comparison suite runs on, and remove them afterwards.

The [fleet] section of FILE names a Proxmox template (a Linux cloud image with the QEMU guest agent
and fio; `stormatrix fleet template` prints cloud-init user-data for it), the number of workers, the
node (node) or nodes in turn (nodes = ["pve1", "pve2"], on shared storage) to place them on, linked
or full clones, vCPUs, memory, a name prefix, a VMID range (or "auto") and the storages under test;
[proxmox] says how to reach the node (token by reference, never in the file). With
[fleet] backend = "vmware" the workers are cloned from a vSphere template onto an ESXi host, the
storages under test are datastores, and [vmware] says how to reach vCenter (docs/esxi.md).
With [fleet] backend = "qemu" (FILE is then the suite file) the fleet is local: 1-4 QEMU workers and
this machine's storages on loopback (iscsi, nbd, file); its workers and servers run only inside
`stormatrix suite run`, so deploy only checks and journals it, and destroy ends every process and
removes every volume RUN_DIR/fleet.ndjson lists (after a kill -9, say).

  plan     check everything a deploy needs and print the fleet; exit 2 naming every problem (template
           that is not a template or has no agent, VMIDs in use, storage without 'images' content or
           space) before anything is created
  deploy   clone, tag (stormatrix) and configure the workers; every VM is journaled in
           RUN_DIR/fleet.ndjson before its clone is requested; run again to resume
  destroy  free the volumes and destroy the VMs that RUN_DIR/fleet.ndjson lists and that carry this
           fleet's marker; nothing else is touched, even if its name or tag matches
  template print cloud-init user-data that installs fio (the controller's version) and a fio --server unit;
           --record FILE also declares that fio version in the description of FILE's template, so that plan
           refuses a controller of another fio version before anything is created"""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("fleet", help="deploy and remove the worker VMs of a comparison suite",
                                   description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="fleet_command", metavar="ACTION", required=True)
    for name, help_text in (("plan", "check and print the fleet a deploy would create (creates nothing)"),
                            ("deploy", "clone and configure the workers (resumable)")):
        p = sub.add_parser(name, help=help_text)
        p.add_argument("file", help="TOML file with [fleet] and [proxmox]")
        extra = " (plan: also show what it owns)" if name == "plan" else ""
        p.add_argument("-o", "--output", metavar="RUN_DIR", required=(name == "deploy"),
                       help="run directory holding fleet.ndjson" + extra)
        p.add_argument("--fio", default="fio", help="the controller's fio: the template's declared fio must be its "
                                                    "version (default: fio on PATH)")
        p.set_defaults(func=cmd_plan if name == "plan" else cmd_deploy)
    d = sub.add_parser("destroy", help="remove exactly what RUN_DIR/fleet.ndjson lists")
    d.add_argument("file", help="TOML file with [fleet] and [proxmox] (how to reach the node)")
    d.add_argument("-o", "--output", metavar="RUN_DIR", required=True, help="run directory holding fleet.ndjson")
    d.set_defaults(func=cmd_destroy)
    t = sub.add_parser("template", help="print cloud-init user-data for the workers' template")
    t.add_argument("--port", type=int, default=None, help="the fio server port (default 8765)")
    t.add_argument("--fio", default="fio", help="the controller's fio, whose version the guests must run")
    t.add_argument("--record", metavar="FILE",
                   help="also declare the controller's fio version (a line 'stormatrix-fio: fio-X.Y') in the "
                        "description of the template named by FILE's [fleet] (Proxmox, reached by its [proxmox]); "
                        "plan then refuses a mismatch before anything is created")
    t.set_defaults(func=cmd_template)


def _fleet(args: argparse.Namespace) -> Fleet:
    """The file's fleet on the platform its ``[fleet] backend`` names (the registry's), not deployed."""
    fio = fio_version(args.fio) if getattr(args, "fio", None) else None
    return open_fleet(load_toml(Path(args.file)), args.file, args.output or ".", fio)


def _say(stage: str, vmid: object) -> None:
    print(f"  {stage} VM {vmid}", file=sys.stderr)


def cmd_plan(args: argparse.Namespace) -> int:
    with _fleet(args) as fleet:
        return _plan(args, fleet)


def _plan(args: argparse.Namespace, fleet: Fleet) -> int:
    plan = fleet.plan()
    for line in plan.describe():
        print(line)
    state = fleet.owned()  # what the run directory's journal says it owns (each platform replays its own records)
    if args.output and not state.empty:
        print(f"  {args.output} owns {len(state.vms)} VMs and {len(state.volumes)} volumes (fleet {fleet.fleet_id})")
    fleet.check(plan)
    return 0


def cmd_deploy(args: argparse.Namespace) -> int:
    with _fleet(args) as fleet:
        vmids = fleet.deploy(on_step=_say)
    print(f"fleet {fleet.fleet_id}: {len(vmids)} workers ready: {', '.join(map(str, vmids))} "
          f"(remove them with: stormatrix fleet destroy {args.file} -o {args.output})")
    return 0


def cmd_destroy(args: argparse.Namespace) -> int:
    with _fleet(args) as fleet:
        if not fleet.journal.path.exists():
            raise InputError(f"{fleet.journal.path} does not exist: this run directory deployed no fleet, so there "
                             "is nothing of ours to remove. Fix: give the run directory of the deploy (-o)")
        left = fleet.destroy(on_step=_say)
    if not left.empty:
        print(f"left: {len(left.vms)} VMs, {len(left.volumes)} volumes; run destroy again", file=sys.stderr)
        return 1
    print(f"fleet {fleet.fleet_id}: everything it created is gone")
    return 0


def cmd_template(args: argparse.Namespace) -> int:
    port = DEFAULT_PORT if args.port is None else args.port
    if not 1 <= port <= 65535:
        raise InputError(f"--port {port}: give a TCP port from 1 to 65535")
    version = fio_package_version(fio_version(args.fio))
    if version is None:
        print(f"# warning: {args.fio} --version gave no version: fio is not pinned; the guests' fio must "
              "match the controller's (docs/fio-server.md)", file=sys.stderr)
    if args.record:
        _record(args.record, fio_version(args.fio))
    sys.stdout.write(user_data(fio_version=version, port=port))
    return 0


def _record(path: str, version_line: str | None) -> None:
    """``--record FILE``: the template's description declares the controller's fio."""
    if version_line is None or fio_package_version(version_line) is None:
        raise InputError("--record: the controller's fio gave no version (fio --version), so there is nothing to "
                         "declare. Fix: install fio, or give it with --fio PATH")
    with open_fleet(load_toml(Path(path)), path, ".", None) as fleet:
        line = fleet.record_fio(version_line)
    print(f"# template {fleet.spec.template}: its description now declares {line!r}; `stormatrix fleet plan` refuses "
          "a controller of another fio version before anything is created", file=sys.stderr)
