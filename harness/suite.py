"""The platform-comparison suite: one workload grid run on many guests at once, one side at a time.

The seeds' method (``000_*``, ``003_*``): 32 Linux VMs each run ``fio --server``; one controller runs
every point of a grid (7 block sizes x 8 queue depths = 56 points, 1 min warm-up + 20 min measured
each, 19.6 h) on all VMs at once; one side (Proxmox, or iSCSI) is run, then the other, and the two
journals are compared point by point.

A matrix file describes it in ``[suite]``::

    [run]
    name = "proxmox-nvme"

    [suite]
    side = "Proxmox VE 7.2"
    rw = ["randread"]
    block_sizes = ["512", "4k", "8k", "16k", "32k", "64k", "128k"]
    queue_depths = [1, 2, 4, 8, 16, 32, 64, 128]
    ramp_seconds = 60
    measure_seconds = 1200
    filename = "/dev/sdb"
    guests = ["vm01=10.0.0.11:8765", {name = "vm02", host = "10.0.0.12", filename = "/dev/sdc"}]
    controller = "virtio-scsi-single"   # optional: the side's disk configuration, if known
    aio = "io_uring"
    iothread = true
    cache = "none"

On Proxmox the guests can be given as VMs instead (``vms = [101, 102]`` with a ``[proxmox]`` section):
their addresses come from the QEMU guest agent and the host collector measures their QEMU processes
(:mod:`stormatrix.backends.proxmox.vms`, docs/fio-server.md).

This module reads the suite: ``[suite]`` into a :class:`Suite`, whose points are cells
(:class:`SuitePoint`). They run through the one runner (:mod:`stormatrix.suiterun`, which also holds
the failure policy): each point becomes one ``cell`` record (docs/journal.md) with ``fio`` the aggregate
over all guests, ``clients`` the per-guest results and ``side`` the label. Resume skips points already
journaled.
"""

from __future__ import annotations

import ipaddress
import logging
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Collection, Mapping, Sequence

from .core.errors import MatrixError
from .core.model import (
                         AIO_MODES,
                         CACHE_MODES,
                         CONTROLLER_ALIASES,
                         CONTROLLERS,
                         MIXED_MODES,
                         RW_MODES,
                         WRITE_MODES,
                         Cell,
                         DiskConfig,
                         Workload,
                         disk_options_apply,
                         format_size,
                         parse_size,
                         )
from .core.names import label_problem
from .core.settings import RunSettings
from .executors.fioserver.inputs import DEFAULT_PORT, FIO_HUNG_CLIENT_S, FioGuest, FioJob
from .fleet.spec import fleet_backend
from .progress import fmt_hours
from .spec import RUN_SECTION, Field, Section, parse_section

log = logging.getLogger("stormatrix.suite")

SEED_BLOCK_SIZES = ["512", "4k", "8k", "16k", "32k", "64k", "128k"]
SEED_QUEUE_DEPTHS = [1, 2, 4, 8, 16, 32, 64, 128]
#: ``[suite] host_metrics`` of a VM list: measure the VMs' QEMU processes when the node is reachable, require it, never
HOST_METRICS = ("auto", "require", "off")


def _size_ok(value: Any) -> None:
    """``[suite] size``: bytes fio can address (fio keeps sizes in 64-bit signed integers)."""
    if parse_size(value) >= 2**63:
        raise ValueError(f"{str(value)[:40]} is past 2^63 bytes, more than fio (or any disk) can address")


def _block_size_ok(value: Any) -> None:
    """One of ``[suite] block_sizes``: at most 1 GiB, as a ``[[workload]] bs``."""
    if parse_size(value) > 2**30:
        raise ValueError(f"{str(value)[:40]} is above 1 GiB; use a block size like 4k, 64k or 1m")


def _side_ok(value: str) -> None:
    """``[suite] side`` heads the comparison's columns and every point's record: a label, as ``--side``."""
    problem = label_problem(value)
    if problem:
        raise ValueError(problem)


def check_network(value: str) -> None:
    """``[suite] network``: an IPv4 network like 10.0.0.0/24 (fio servers are reached over IPv4)."""
    try:
        net = ipaddress.ip_network(value, strict=False)
    except ValueError:
        raise ValueError(f"{value!r} is not a network like 10.0.0.0/24") from None
    if net.version != 4:
        raise ValueError(f"{value!r}: fio servers are reached over IPv4; give an IPv4 network like 10.0.0.0/24")


def _controller_ok(value: str) -> None:
    if value not in CONTROLLERS and value not in CONTROLLER_ALIASES:
        raise ValueError(f"{value!r} is not a known controller ({', '.join(CONTROLLERS)})")


SUITE_SECTION = Section("suite", {
    "name": Field(str, "suite", help="a name for the suite"),
    "side": Field(str, "A", check=_side_ok,
                  help="the side label, one line of at most 100 characters, e.g. \"Proxmox VE 7.2\" or \"iSCSI\""),
    "rw": Field(str, ["randread"], list_of=True, choices=RW_MODES),
    "block_sizes": Field((str, int), list(SEED_BLOCK_SIZES), list_of=True, check=_block_size_ok,
                         help="block sizes like 512, 4k, 64k (at most 1 GiB)"),
    "queue_depths": Field(int, list(SEED_QUEUE_DEPTHS), list_of=True, min=1, max=65536),
    "numjobs": Field(int, 1, min=1, max=256),
    "ramp_seconds": Field(float, 60.0, min=0, max=86400, help="warm-up before each point's window"),
    "measure_seconds": Field(float, 1200.0, min=0.5, max=86400, help="each point's measurement window"),
    "filename": Field(str, help="the test device or file inside every guest, e.g. /dev/sdb"),
    "size": Field((str, int), None, check=_size_ok,
                  help="bytes of the target to use, like 10g (below 2^63); omit for the whole device"),
    "direct": Field(bool, True, help="O_DIRECT, as in the seeds"),
    "ioengine": Field(str, "libaio", choices=("libaio", "io_uring", "psync", "sync", "posixaio", "null")),
    "rwmixread": Field(int, 50, min=0, max=100, help="read share for rw/randrw"),
    "guests": Field((str, dict), None, list_of=True,
                    help='"name=host:port" strings or {name=, host=, port=, filename=} tables'),
    "vms": Field((str, int), None, list_of=True,
                 help="Proxmox VM ids whose guest addresses the QEMU guest agent reports (needs [proxmox])"),
    "network": Field(str, None, check=check_network,
                     help="with vms: take each guest's address from this IPv4 network, e.g. 10.0.0.0/24"),
    "host_metrics": Field(str, "auto", choices=HOST_METRICS,
                          help="with vms: auto = measure the VMs' QEMU processes when the node is reachable "
                               "(on the node, or [proxmox] ssh), require = fail if it is not, off = never"),
    "port": Field(int, DEFAULT_PORT, min=1, max=65535, help="fio server port where a guest gives none"),
    "controller": Field(str, None, check=_controller_ok, help="the side's disk controller, if known"),
    "aio": Field(str, None, choices=AIO_MODES),
    "iothread": Field(bool, None),
    "cache": Field(str, None, choices=CACHE_MODES),
    "probe_timeout_seconds": Field(float, 15.0, min=1, max=3600),
    "grace_seconds": Field(float, FIO_HUNG_CLIENT_S + 50.0, min=5, max=86400,
                           help="how long past ramp+measure to wait for fio before giving up"),
}, help="a platform-comparison suite: one grid of points run on all guests at once")

_GUEST_KEYS = ("name", "host", "port", "filename")
# Time the seeds' arithmetic leaves out, per point, as measured here: probe (~1.4 s) + fio client
# start and result exchange (~1.5 s). Shown separately so "56 x 21 min = 19.6 h" stays exact.
OVERHEAD_PER_POINT_S = 3.0


# --- the model ---------------------------------------------------------------------------------------

#: the disk key of a side whose disk configuration the suite file does not give
UNKNOWN_DISK = DiskConfig.controller_only("unknown")


@dataclass(frozen=True)
class SuitePoint(Cell):
    """One (rw, block size, queue depth, repeat) of the grid: a cell whose executor drives every guest.

    Its disk is the side's disk when ``[suite]`` names it, else controller "unknown" (bus and scsihw
    null in the journal: nothing is known about how the side attaches its disks).
    """

    @property
    def disk_key(self) -> str:
        return self.disk.key

    def to_dict(self) -> dict[str, Any]:
        if self.disk != UNKNOWN_DISK:
            return super().to_dict()
        return {"disk": {"controller": "unknown", "aio": None, "iothread": None, "cache": None, "bus": None,
                         "scsihw": None},
                "workload": asdict(self.workload), "repeat": self.repeat, "key": self.key}


@dataclass(frozen=True)
class Suite:
    path: str
    name: str
    side: str
    rw: tuple[str, ...]
    block_sizes: tuple[int, ...]
    queue_depths: tuple[int, ...]
    numjobs: int
    ramp_s: float
    measure_s: float
    filename: str
    size: int | None
    direct: bool
    ioengine: str
    rwmixread: int
    guests: tuple[FioGuest, ...]
    vms: tuple[str, ...]
    port: int
    disk: DiskConfig | None
    repeats: int = 1
    on_error: str = "stop"
    retries: int = 0
    probe_timeout_s: float = 15.0
    grace_s: float = FIO_HUNG_CLIENT_S + 50.0
    run_name: str = "suite"
    #: the validated connection section of the platform that gives the guests (a VM list's or a Proxmox fleet's
    #: [proxmox]), set by that platform's check (:meth:`SuiteGuests.check`, the fleet suite's ``check``)
    connection: dict[str, Any] | None = None
    network: str | None = None  # [suite] network: where discovered addresses must lie
    host_metrics: str = "auto"
    #: the platform that deploys the suite's workers (``[fleet] backend``; :data:`stormatrix.registry.FLEET_SUITES`),
    #: None when the guests run already (``[suite] guests`` or ``vms``)
    fleet: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    run: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)  # the validated [run]

    @property
    def disk_key(self) -> str:
        return self.disk.key if self.disk else "unknown"

    def disk_record(self) -> dict[str, Any]:
        """``cell.disk`` for the journal: the side's disk if the file says it, else controller "unknown"."""
        if self.disk is None:
            return {"controller": "unknown", "aio": None, "iothread": None, "cache": None,
                    "bus": None, "scsihw": None}
        return {"controller": self.disk.controller, "aio": self.disk.aio, "iothread": self.disk.iothread,
                "cache": self.disk.cache, "bus": self.disk.bus, "scsihw": self.disk.scsihw}

    def points(self) -> list[SuitePoint]:
        """The grid in the seeds' order: per rw, per block size, queue depths rising."""
        out = []
        for rw in self.rw:
            for bs in self.block_sizes:
                for qd in self.queue_depths:
                    name = f"{rw}-{format_size(bs)}-qd{qd}" + (f"-j{self.numjobs}" if self.numjobs > 1 else "")
                    w = Workload(name=name, rw=rw, bs=bs, iodepth=qd, numjobs=self.numjobs,
                                 rwmixread=self.rwmixread if rw in MIXED_MODES else None)
                    for r in range(1, self.repeats + 1):
                        out.append(SuitePoint(self.disk or UNKNOWN_DISK, w, r))
        return out

    def job_for(self, point: SuitePoint) -> FioJob:
        w = point.workload
        return FioJob(name=w.name, rw=w.rw, bs=w.bs, iodepth=w.iodepth, numjobs=w.numjobs,
                      ramp_s=self.ramp_s, measure_s=self.measure_s, filename=self.filename,
                      size=self.size, direct=self.direct, ioengine=self.ioengine, rwmixread=w.rwmixread)

    def settings(self) -> RunSettings:
        """What the runner reads: the suite's [run] keys, with its timing and executor (fio-server)."""
        run = dict(self.run)
        run.update(name=self.name, executor="fio-server", ramp_seconds=self.ramp_s, measure_seconds=self.measure_s,
                   allow_write=True,  # checked at plan time against the device (suite_from_dict)
                   boot_timeout_seconds=self.probe_timeout_s)
        return RunSettings(path=self.path, run=run, raw=self.raw)

    def with_guests(self, guests: Sequence[FioGuest]) -> "Suite":
        """The same suite on a given guest list (e.g. addresses discovered from ``vms``)."""
        return replace(self, guests=tuple(guests))


@dataclass(frozen=True)
class Eta:
    points: int
    seconds_per_point: float
    measured_seconds: float  # points x (ramp + measure): the seeds' arithmetic
    overhead_seconds: float  # probe + fio start-up per point, measured on this machine

    @property
    def total_seconds(self) -> float:
        return self.measured_seconds + self.overhead_seconds

    def describe(self) -> str:
        return (f"{self.points} points x {fmt_hours(self.seconds_per_point)} = {fmt_hours(self.measured_seconds)}"
                f" (+ ~{fmt_hours(self.overhead_seconds)} probe and start-up)")


def eta(suite: Suite, *, done: int = 0) -> Eta:
    n = len(suite.points()) - done
    per = suite.ramp_s + suite.measure_s
    return Eta(points=n, seconds_per_point=per, measured_seconds=n * per, overhead_seconds=n * OVERHEAD_PER_POINT_S)


# --- parsing the matrix file ------------------------------------------------------------------------

def _guest_from(path: str, where: str, item: Any, port: int) -> FioGuest:
    try:
        if isinstance(item, str):
            g = FioGuest.parse(item if ":" in item.partition("=")[2] else f"{item}:{port}")
            return g
        unknown = sorted(set(item) - set(_GUEST_KEYS))
        if unknown:
            raise ValueError(f"unknown key(s) {', '.join(unknown)}; allowed: {', '.join(_GUEST_KEYS)}")
        if "name" not in item or "host" not in item:
            raise ValueError("a guest table needs name and host")
        p = item.get("port", port)
        if isinstance(p, bool) or not isinstance(p, int):
            raise ValueError(f"port {p!r} is not a whole number")
        for key in ("name", "host", "filename"):
            if key in item and not isinstance(item[key], str):
                raise ValueError(f"{key} {item[key]!r} is not a string")
        return FioGuest(name=item["name"], host=item["host"], port=p, filename=item.get("filename"))
    except ValueError as exc:
        raise MatrixError(path, where, str(exc),
                          'write a guest as "name=host:port" or {name = "vm01", host = "10.0.0.11", port = 8765}'
                          ) from None


def _distinct_guests(path: str, guests: list[FioGuest]) -> None:
    """Every guest once: names and addresses compared without letter case (host names are not case
    sensitive, so BENCH-VM1.lab:8765 and bench-vm1.LAB:8765 are one fio server measured twice, and guest
    names become file names on file systems that ignore case)."""
    seen_names: dict[str, str] = {}
    seen_addrs: dict[str, str] = {}
    for g in guests:
        other = seen_names.get(g.name.casefold())
        if other is not None:
            same = "more than once" if other == g.name else f"twice: {other!r} and {g.name!r} differ only in case"
            raise MatrixError(path, "[suite] guests", f"names {g.name!r} {same}", "give every guest its own name")
        seen_names[g.name.casefold()] = g.name
        other = seen_addrs.get(g.address.casefold())
        if other is not None:
            same = "" if other == g.address else f" ({other} and {g.address} differ only in letter case)"
            raise MatrixError(path, "[suite] guests", f"two guests share one host:port{same}",
                              "each fio server listens on its own host:port: list each guest once")
        seen_addrs[g.address.casefold()] = g.address


def _network_fits(path: str, network: str | None, vms: int) -> None:
    """``[suite] network`` for a VM list: the network each guest's address is picked from. Loopback is every
    VM's own (the controller cannot reach a guest there); a network with fewer addresses than VMs would
    give two VMs one address."""
    if not network or not vms:
        return
    net = ipaddress.ip_network(network, strict=False)
    if net.is_loopback or net.is_unspecified and net.prefixlen == 32 or net.is_multicast:
        kind = "loopback" if net.is_loopback else "multicast" if net.is_multicast else "unspecified"
        raise MatrixError(path, "[suite] network", f"{network} is a {kind} network: no guest can be reached "
                          "there from the controller", "give the network the guests' fio servers listen on, e.g. "
                          "10.0.0.0/24")
    hosts = net.num_addresses if net.prefixlen >= 31 else net.num_addresses - 2
    if hosts < vms:
        raise MatrixError(path, "[suite] network", f"{network} holds {hosts} address(es) for {vms} VMs, so two VMs "
                          "would have to share one", "give the network all the VMs are on, e.g. 10.0.0.0/24")


def suite_from_dict(raw: dict[str, Any], path: str = "<suite>", *, sections: Mapping[str, Section],
                    platform_sections: Collection[str] = (), fleets: Collection[str] = (),
                    default_fleet: str = "") -> Suite:
    """Validate ``[run]`` and ``[suite]`` (and any other of ``sections``, the caller's list, e.g.
    :data:`stormatrix.registry.SECTIONS`) into a :class:`Suite`.

    What a platform's guests or fleet read themselves is left to them (:func:`stormatrix.registry.suite_from_dict`
    has them check it): the ``platform_sections`` (a VM list's or a fleet's ``[proxmox]``, a fleet's ``[vmware]``,
    each with its own keys) and ``[fleet]`` but its ``backend``, one of ``fleets`` (``default_fleet`` when not
    given), which becomes :attr:`Suite.fleet`."""
    if "suite" not in raw:
        raise MatrixError(path, "[suite]", "is missing", "add a [suite] section (see `stormatrix suite --help`)")
    extra = sections
    for key in raw:
        if key in platform_sections or key == "fleet":
            continue  # read by the suite's guests or its fleet, as their platform reads them
        if key in ("matrix", "workload"):
            raise MatrixError(path, f"[{key}]", "does not belong in a suite file",
                              "a suite's points come from [suite] rw/block_sizes/queue_depths; "
                              "put the matrix in its own file for `stormatrix run`")
        if key not in ("run", "suite") and key not in extra:
            known = ", ".join(f"[{k}]" for k in sorted({"run", "suite"} | set(extra)))
            raise MatrixError(path, f"[{key}]", "unknown section", f"sections: {known}")
    for key, section in extra.items():
        if key != "suite" and key not in platform_sections and key in raw:
            parse_section(path, section, raw[key])  # validated here; used by whoever owns it
    run = parse_section(path, RUN_SECTION, raw.get("run", {}))
    s = parse_section(path, SUITE_SECTION, raw["suite"])
    fleet = fleet_backend(raw, path, fleets, default_fleet) if "fleet" in raw else None
    if fleet is not None:
        given = [k for k in ("guests", "vms") if s[k] is not None]
        if given:
            raise MatrixError(path, f"[suite] {given[0]}", "is given, but with [fleet] the workers are the fleet's "
                              "(deployed by the suite)", f"remove {given[0]}, or remove [fleet] to use running guests")
    elif (s["guests"] is None) == (s["vms"] is None):
        raise MatrixError(path, "[suite] guests", "give exactly one of guests or vms",
                          'list the fio servers, guests = ["vm01=10.0.0.11:8765"], or the VMs, vms = [101, 102], '
                          'or describe the workers to deploy in [fleet]')
    if fleet is None and s["vms"] is None:
        _no_vm_list(path, raw, platform_sections)
    vms = tuple(str(v).strip() for v in s["vms"] or ())
    guests: list[FioGuest] = []
    for i, item in enumerate(s["guests"] or [], start=1):
        guests.append(_guest_from(path, f"[suite] guests[{i}]", item, s["port"]))
    _distinct_guests(path, guests)
    _network_fits(path, s["network"], len(set(vms)))
    try:
        FioJob(name="check", rw="read", bs=4096, iodepth=1, ramp_s=0, measure_s=1, filename=s["filename"])
    except ValueError as exc:
        raise MatrixError(path, "[suite] filename", str(exc), "name the test device, e.g. /dev/sdb") from None
    block_sizes = [parse_size(b) for b in s["block_sizes"]]
    for b, text in zip(block_sizes, s["block_sizes"]):
        if s["direct"] and b % 512:
            raise MatrixError(path, "[suite] block_sizes", f"{text!r} is not a multiple of 512",
                              "direct I/O needs whole sectors: use 512, 4k, 64k, ...")
    if len(set(block_sizes)) != len(block_sizes):
        raise MatrixError(path, "[suite] block_sizes", "names one size twice (e.g. 4k and 4096)", "list each once")
    size = parse_size(s["size"]) if s["size"] is not None else None
    if size is not None and size < max(block_sizes):
        raise MatrixError(path, "[suite] size", f"{size} bytes is smaller than the largest block size",
                          "use a size of at least one block, or omit it for the whole device")
    writes = sorted(set(s["rw"]) & WRITE_MODES)
    targets = [s["filename"]] + [g.filename for g in guests if g.filename]
    if writes and any(t.startswith("/dev/") for t in targets) and not run["allow_write"]:
        raise MatrixError(path, "[suite] rw", f"{', '.join(writes)} would overwrite the device "
                          f"{next(t for t in targets if t.startswith('/dev/'))} in every guest",
                          "set [run] allow_write = true if that disk holds nothing you need")
    disk_keys = ("controller", "aio", "iothread", "cache")
    given = [k for k in disk_keys if s[k] is not None]
    disk = None
    if given:
        if s["controller"] is None:
            raise MatrixError(path, "[suite] controller", f"{', '.join(given)} given without a controller",
                              "add controller = \"...\" or drop the disk keys")
        controller = CONTROLLER_ALIASES.get(s["controller"], s["controller"])
        if not disk_options_apply(controller, run["backend"]):
            options = [k for k in ("aio", "iothread", "cache") if s[k] is not None]
            if options:
                raise MatrixError(path, f"[suite] {options[0]}", f"ESXi has no {', '.join(options)} setting for a "
                                  f"virtual disk ({controller} on the {run['backend']} backend is an ESXi controller)",
                                  f"drop {', '.join(options)} from [suite]: the side's disk is the controller alone")
            disk = DiskConfig.controller_only(controller)
        else:
            disk = DiskConfig(controller, s["aio"] or "io_uring", bool(s["iothread"]), s["cache"] or "none")
    return Suite(path=path, name=s["name"], side=s["side"], rw=tuple(s["rw"]), block_sizes=tuple(block_sizes),
                 queue_depths=tuple(s["queue_depths"]), numjobs=s["numjobs"], ramp_s=s["ramp_seconds"],
                 measure_s=s["measure_seconds"], filename=s["filename"], size=size, direct=s["direct"],
                 ioengine=s["ioengine"], rwmixread=s["rwmixread"], guests=tuple(guests),
                 vms=vms, port=s["port"], disk=disk,
                 repeats=run["repeats"], on_error=run["on_error"], retries=run["retries"],
                 probe_timeout_s=s["probe_timeout_seconds"], grace_s=s["grace_seconds"],
                 run_name=run["name"], network=s["network"], host_metrics=s["host_metrics"], fleet=fleet,
                 raw=raw, run=run)


def _no_vm_list(path: str, raw: dict[str, Any], platform_sections: Collection[str]) -> None:
    """Guests by address: a platform's section, or a VM list's keys, would be read by nobody."""
    for key in platform_sections:
        if key in raw:
            raise MatrixError(path, f"[{key}]",
                              "is only used with [suite] vms (guest addresses found through the hypervisor)",
                              f"list the VMs as vms = [101, 102] instead of guests, or remove [{key}]")
    for key in ("network", "host_metrics"):
        if key in raw["suite"]:
            raise MatrixError(path, f"[suite] {key}", "only applies to a VM list ([suite] vms)",
                              f"remove {key}, or list the VMs in [suite] vms")


def suite_for_guests(guests: Sequence[tuple[str, str, int] | FioGuest], *, side: str, filename: str,
                     block_sizes: Sequence[str | int] = tuple(SEED_BLOCK_SIZES),
                     queue_depths: Sequence[int] = tuple(SEED_QUEUE_DEPTHS), rw: Sequence[str] = ("randread",),
                     ramp_s: float = 60.0, measure_s: float = 1200.0, size: str | int | None = None,
                     disk: DiskConfig | None = None, numjobs: int = 1, name: str = "suite",
                     run: dict[str, Any] | None = None) -> Suite:
    """A suite built in code (e.g. by ``stormatrix demo --suite``), validated exactly like a matrix file.

    ``guests`` are ``(name, host, port)`` tuples or :class:`FioGuest`; ``run`` is extra ``[run]`` keys
    (``on_error``, ``retries``, ``allow_write``, ``repeats``).
    """
    table: list[dict[str, Any]] = []
    for g in guests:
        if isinstance(g, FioGuest):
            item: dict[str, Any] = {"name": g.name, "host": g.host, "port": g.port}
            if g.filename:
                item["filename"] = g.filename
        else:
            item = {"name": g[0], "host": g[1], "port": g[2]}
        table.append(item)
    suite: dict[str, Any] = {"name": name, "side": side, "filename": filename, "guests": table,
                             "block_sizes": list(block_sizes), "queue_depths": list(queue_depths), "rw": list(rw),
                             "ramp_seconds": ramp_s, "measure_seconds": measure_s, "numjobs": numjobs}
    if size is not None:
        suite["size"] = size
    if disk is not None:
        suite.update({k: v for k, v in (("controller", disk.controller), ("aio", disk.aio),
                                        ("iothread", disk.iothread), ("cache", disk.cache)) if v is not None})
    # a suite built in code has [run] and [suite] only: no other section to know
    return suite_from_dict({"run": dict(run or {}), "suite": suite}, f"<suite {name}, side {side}>", sections={})
