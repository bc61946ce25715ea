"""The matrix file (``matrix.toml``): the sections stormatrix owns, parsed and validated into a :class:`MatrixSpec`.

Every mistake is reported as a :class:`MatrixError` that names the file, the key (``[section] key``
or ``workload[2].bs``) and the fix, so the user never has to read a traceback. The file is read by
:mod:`stormatrix.tomlfile`; the spec is expanded into cells, refusing what cannot run, by :mod:`stormatrix.cells`.

Backends and executors declare their own sections with :class:`Section` so that one validator
serves every part of the file. Which sections a file may have besides ``[run]``, ``[matrix]`` and
``[[workload]]`` is the caller's argument (``sections``): the spec knows no backend;
:mod:`stormatrix.registry` passes the registered ones.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from .core.errors import MatrixError
from .core.model import AIO_MODES, CACHE_MODES, CONTROLLER_ALIASES, CONTROLLERS, RW_MODES, Workload, parse_size
from .core.scope import parse_cpuset
from .core.settings import RunSettings
from .schema import Field, Section, _show, parse_section
from .tomlfile import load_toml

# --- the sections stormatrix itself owns ----------------------------------------------------------


def _controller_name(value: str) -> None:
    if value not in CONTROLLERS and value not in CONTROLLER_ALIASES:
        raise ValueError(f"{_show(value)} is not a known controller")


RUN_SECTION = Section("run", {
    "name": Field(str, "matrix", help="a name for this run"),
    "backend": Field(str, "qemu", choices=("qemu", "proxmox", "vmware"), help="the hypervisor backend"),
    "executor": Field(str, "auto", choices=("auto", "local-agent", "winrm", "fio-server"),
                      help="how the workload runs in the guest; auto picks the backend's default"),
    "guest_os": Field(str, "linux", choices=("linux", "windows2022")),
    "repeats": Field(int, 1, min=1, max=100),
    "ramp_seconds": Field(float, 5.0, min=0, max=86400, help="warm-up before the measurement window"),
    "measure_seconds": Field(float, 10.0, min=1, max=86400, help="the measurement window"),
    "cv_limit_pct": Field(float, 10.0, min=0, max=1000,
                          help="a configuration whose repeats' CV of CPU or ctx per MiB is above this (in %) is "
                               "flagged, and gets extra repeats up to max_repeats"),
    "max_repeats": Field(int, 0, min=0, max=100,
                         help="repeat a configuration whose CV is above cv_limit_pct up to this many times; "
                              "0 (the default) or the value of repeats means no extra repeats"),
    "repeat_policy": Field(str, "verdicts", choices=("verdicts", "cv"),
                           help="which extra repeats run first: verdicts = both sides of every comparison the "
                                "findings rest on that is still within noise (best vs runner-up, aio modes per "
                                "controller), then by CV; cv = by cv_limit_pct alone"),
    "time_budget_minutes": Field(float, 0.0, min=0, max=525600,
                                 help="extra repeats start only while the run (this invocation) stays within "
                                      "this many minutes; 0 means no limit"),
    "rate_tolerance_pct": Field(float, 5.0, min=0, max=100,
                                help="flag cells that miss their fixed rate by more than this"),
    "crosscheck_tolerance_pct": Field(float, 2.0, min=0, max=100,
                                      help="flag cells where fio and QEMU disagree on bytes"),
    "order": Field(str, "rounds", choices=("rounds", "grouped"),
                   help="rounds: every configuration once per round (round n = repeat n), in a seeded shuffled "
                        "order per round, so a slow drift of the host lands on every configuration; grouped: "
                        "a configuration's repeats one after another, configurations in matrix order"),
    "seed": Field(int, 0, min=0, max=2**63 - 1,
                  help="the seed of the rounds' shuffled order; 0 (the default): drawn when the run starts and "
                       "kept in the journal's run record, so a resumed run keeps the order"),
    "on_error": Field(str, "skip", choices=("skip", "stop")),
    "retries": Field(int, 1, min=0, max=10, help="re-tries of a failed cell before on_error applies"),
    "boot_timeout_seconds": Field(float, 180.0, min=5, max=7200),
    "allow_write": Field(bool, False, help="permit write workloads on a disk that holds data"),
    "guest_drivers": Field(str, [], list_of=True, choices=("viostor", "vioscsi"),
                           help="virtio-win storage drivers installed in a Windows guest: viostor (virtio-blk), "
                                "vioscsi (virtio-scsi-pci, virtio-scsi-single). Not set: the guest's facts decide "
                                "at its first boot (its driver store); set: only the listed ones"),
}, help="how the run behaves",
   # seed: 0 keeps the journal's; another value is checked against it (runorder.seed_conflict)
   may_change_on_resume=frozenset({
       "repeats", "max_repeats", "cv_limit_pct", "time_budget_minutes", "on_error", "retries", "allow_write",
       "boot_timeout_seconds", "rate_tolerance_pct", "crosscheck_tolerance_pct", "guest_drivers", "seed",
       "repeat_policy"}))

MATRIX_SECTION = Section("matrix", {
    "controllers": Field(str, list_of=True, check=_controller_name,
                         help=f"controllers: {', '.join(c for c in CONTROLLERS)}"),
    "aio": Field(str, ["io_uring"], list_of=True, choices=AIO_MODES),
    "iothread": Field(bool, [False], list_of=True),
    "cache": Field(str, ["none"], list_of=True, choices=CACHE_MODES),
    "skip_invalid": Field(bool, False, help="skip impossible combinations instead of failing"),
    "disk_slot": Field(int, 0, min=0, max=30, help="slot of the test disk: 1 means scsi1/sata1/ide1/virtio1"),
}, help="the axes whose cross product makes the cells")


def _workload_name(value: str) -> None:
    """A workload name is part of every cell key (``.../<name>/rep1``) and a column of the plan table."""
    if not value.strip():
        raise ValueError("is empty: write a short unique name, e.g. randread-64k")
    if len(value) > 64:
        raise ValueError(f"is {len(value)} characters long: a name heads a column of the plan table and workbook "
                         "rows; keep it to 64 (e.g. randread-64k-qd8)")
    bad = sorted({repr(ch) for ch in value if ch == "/" or not ch.isprintable()})
    if bad:
        raise ValueError(f"contains {', '.join(bad)}: a name is part of the cell keys and the plan table; use "
                         "letters, digits, '-', '_' or '.', e.g. randread-64k")


WORKLOAD_SECTION = Section("workload", {
    "name": Field(str, help="a short unique name, e.g. randread-64k", check=_workload_name),
    "rw": Field(str, choices=RW_MODES),
    "bs": Field((str, int), help="block size like 4k, 64k, 512, 1m"),
    "iodepth": Field(int, 1, min=1, max=65536),
    "numjobs": Field(int, 1, min=1, max=256),
    "rate_mib_s": Field(float, 0.0, min=0, max=1_000_000,
                        help="fixed rate in MiB/s for the whole workload; 0 means unthrottled"),
    "rwmixread": Field(int, 50, min=0, max=100, help="read share for rw/randrw"),
}, help="one [[workload]] block per workload")


#: what the host collector measures (``[host] scope``): "cpus", a set of host CPUs system-wide (technote 004's
#: scope: the guest, QEMU's threads, the kernel's I/O work and interrupts on them), or "process", the QEMU
#: process(es) alone. A backend says which it measures when the matrix names none (``Backend.default_host_scope``)
HOST_SCOPES = ("cpus", "process")


def _check_cpulist(value: str) -> None:
    if value.strip():
        parse_cpuset(value)  # ValueError names the problem


def _interface_name(value: str) -> None:
    # Linux's own rule (dev_valid_name): 1-15 bytes, no '/', ':' or white space, not "." or ".."
    if not value or len(value.encode()) > 15 or value in (".", "..") or any(c in value for c in "/: \t\n"):
        raise ValueError(f"{_show(value)} is not a network interface name (1-15 characters, no '/', ':' or "
                         "spaces), e.g. ens19")


def _irq_pattern(value: str) -> None:
    if not value.strip():
        raise ValueError("is empty: give a part of the interrupt's name in /proc/interrupts, e.g. nvme or iscsi")


HOST_SECTION = Section("host", {
    "scope": Field(str, "", choices=HOST_SCOPES,
                   help="what the host side measures: \"cpus\" (a set of host CPUs system-wide, with every QEMU "
                        "thread confined to it and the harness kept off it; technote 004's scope) or \"process\" "
                        "(the QEMU process alone); not set: the backend's default (\"cpus\" on qemu, \"process\" "
                        "elsewhere)"),
    "cpus": Field(str, "", check=_check_cpulist,
                  help="the measured CPU set as a kernel CPU list (e.g. \"1\" or \"2-3\"); it must exist on the host "
                       "and leave at least one CPU for the harness; not set: the backend's choice (qemu: the last "
                       "usable CPU)"),
    "interfaces": Field(str, [], list_of=True, check=_interface_name,
                        help="proxmox: the storage NICs whose RPS/XPS are steered onto the set, e.g. [\"ens19\"]"),
    "irqs": Field(str, [], list_of=True, check=_irq_pattern,
                  help="proxmox: parts of /proc/interrupts names whose interrupts are steered onto the set, e.g. "
                       "[\"nvme\", \"iscsi\"]"),
}, help="what the host collector measures and where the VM's work is confined (scope, cpus)")


@dataclass(frozen=True)
class HostSettings:
    """``[host]`` resolved for one backend: the scope (its default where the matrix names none), the CPU set as
    given (empty: the backend chooses), the Proxmox-only steering keys."""

    scope: str
    scope_given: bool
    cpus: tuple[int, ...] = ()
    interfaces: tuple[str, ...] = ()
    irqs: tuple[str, ...] = ()

    @property
    def record_scope(self) -> str:
        """The record's ``host.scope`` word for this scope ("cpus" or "qemu-process")."""
        return "cpus" if self.scope == "cpus" else "qemu-process"


def host_settings(spec: "MatrixSpec", default_scope: str) -> HostSettings:
    """The matrix's ``[host]`` (defaults filled in), with ``default_scope`` where it names no scope."""
    values = {**{k: f.default for k, f in HOST_SECTION.fields.items()}, **spec.section("host")}
    scope = values["scope"] or default_scope
    return HostSettings(scope=scope, scope_given=bool(values["scope"]),
                        cpus=tuple(parse_cpuset(values["cpus"])) if values["cpus"].strip() else (),
                        interfaces=tuple(values["interfaces"]), irqs=tuple(values["irqs"]))


# --- the spec ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class MatrixSpec(RunSettings):
    """A matrix file: the run settings every run has (:class:`~stormatrix.core.settings.RunSettings`), and
    the grid of disk configurations x workloads the runner expands, with the backends' sections."""

    matrix: dict[str, Any] = field(default_factory=dict)
    workloads: tuple[Workload, ...] = ()
    sections: dict[str, dict[str, Any]] = field(default_factory=dict)

    def section(self, name: str) -> dict[str, Any]:
        return self.sections.get(name, {})


def load_spec(path: str | Path, *, sections: Mapping[str, Section]) -> MatrixSpec:
    """The matrix file at ``path``; ``sections``: the sections besides [run], [matrix], [[workload]] it may have."""
    path = Path(path)
    raw = load_toml(path)
    return spec_from_dict(raw, str(path), sections=sections)


def spec_from_dict(raw: dict[str, Any], path: str = "<matrix>", *, sections: Mapping[str, Section]) -> MatrixSpec:
    """A parsed matrix, validated: [run], [matrix], [[workload]] and each of ``sections`` the file has (any
    other section is refused, naming the known ones)."""
    if "suite" in raw and "matrix" not in raw:
        raise MatrixError(path, "[suite]", "makes this a suite file (many guests, fio in server mode), not a matrix",
                          f"plan it with `stormatrix suite plan {path}` and run it with "
                          f"`stormatrix suite run {path} -o RUN_DIR`")
    extra = sections
    known = {"run", "matrix", "workload", "host"} | set(extra)
    for key in raw:
        if key not in known:
            close = difflib.get_close_matches(key, sorted(known), n=1)
            hint = f"did you mean [{close[0]}]? " if close else ""
            raise MatrixError(path, f"[{key}]", "unknown section",
                              f"{hint}sections: {', '.join(f'[{k}]' for k in sorted(known))}")
    run_raw = raw.get("run", {})
    if isinstance(run_raw, dict) and "preflight" in run_raw:
        raise MatrixError(path, "[run] preflight", "unknown key (it was accepted by earlier versions but never "
                          "read: no guest validation ever ran because of it)",
                          "remove the line; to validate a Windows guest before a run, use `stormatrix guest check`")
    run = parse_section(path, RUN_SECTION, run_raw)
    if run["max_repeats"] and run["max_repeats"] < run["repeats"]:
        raise MatrixError(path, "[run] max_repeats", f"{run['max_repeats']} is below repeats = {run['repeats']}",
                          f"set max_repeats >= {run['repeats']} (or 0 for no extra repeats)")
    if "matrix" not in raw:
        raise MatrixError(path, "[matrix]", "is missing", "add a [matrix] section with controllers = [...]")
    matrix = parse_section(path, MATRIX_SECTION, raw["matrix"])
    matrix["controllers"] = [CONTROLLER_ALIASES.get(c, c) for c in matrix["controllers"]]
    if len(set(matrix["controllers"])) != len(matrix["controllers"]):
        raise MatrixError(path, "[matrix] controllers", "names one controller twice (through an alias)",
                          "list each controller once")

    wl_raw = raw.get("workload")
    if wl_raw is None:
        raise MatrixError(path, "[[workload]]", "no workload defined",
                          "add at least one [[workload]] block with name, rw and bs")
    if isinstance(wl_raw, dict):
        wl_raw = [wl_raw]
    if not isinstance(wl_raw, list):
        raise MatrixError(path, "[[workload]]", "must be an array of tables", "write each as [[workload]]")
    workloads: list[Workload] = []
    names: set[str] = set()  # a set, not a scan of the list: plan stays linear in the workloads
    for i, table in enumerate(wl_raw):
        try:
            w = _workload(path, i + 1, table, names)
        except MatrixError as exc:  # positions count from 1, as list values do: say so
            raise MatrixError(path, exc.key, f"{exc.problem} (workload[{i + 1}] is [[workload]] block {i + 1}, "
                              "counting from 1)", exc.fix) from None
        workloads.append(w)

    values: dict[str, dict[str, Any]] = {}
    if "host" in raw:
        values["host"] = parse_section(path, HOST_SECTION, raw["host"])
    for name, section in extra.items():
        if name in raw:
            values[name] = parse_section(path, section, raw[name])
    return MatrixSpec(path=path, run=run, matrix=matrix, workloads=tuple(workloads),
                      sections=values, raw=raw)


def _workload(path: str, number: int, table: Any, names: set[str]) -> Workload:
    """One ``[[workload]]`` block (``number`` counts from 1), checked; its name joins ``names``."""
    where = f"workload[{number}]"
    w = parse_section(path, WORKLOAD_SECTION, table, where=where)
    try:
        bs = parse_size(w["bs"])
    except ValueError as exc:
        raise MatrixError(path, f"{where}.bs", str(exc), "write the block size like 4k, 64k or 1m") from None
    if bs > 2**30:
        raise MatrixError(path, f"{where}.bs", f"{bs} bytes is above 1 GiB", "use a block size like 4k, 64k or 1m")
    if bs % 512:
        raise MatrixError(path, f"{where}.bs", f"{bs} bytes is not a multiple of 512",
                          "direct I/O needs whole sectors: use 512, 4k, 64k, ...")
    if w["name"].casefold() in names:  # "W" and "w": one in a workbook and on a case-insensitive file system
        raise MatrixError(path, f"{where}.name", f"{w['name']!r} is used by two workloads (names are compared "
                          "ignoring case)", "give each workload its own name")
    names.add(w["name"].casefold())
    rate = w["rate_mib_s"] or None
    mixed = w["rw"] in ("rw", "readwrite", "randrw")
    return Workload(name=w["name"], rw=w["rw"], bs=bs, iodepth=w["iodepth"], numjobs=w["numjobs"],
                    rate_mib_s=rate, rwmixread=w["rwmixread"] if mixed else None)


# --- across the sections -------------------------------------------------------------------------

# backends whose guest can be Windows Server 2022 (the qemu backend boots the tiny Linux guest image)
WINDOWS_BACKENDS = ("proxmox", "vmware")


def check_guest_backend(spec: MatrixSpec) -> None:
    """What ``plan`` and ``run`` check before expanding, beyond one section's keys: a Windows guest needs
    a backend that can run one (the local qemu backend boots its Linux image), and a ``[qemu] disk_path``
    must be an existing image or block device, not found missing when the first VM starts."""
    disk_path = spec.section("qemu").get("disk_path") if spec.run["backend"] == "qemu" else ""
    if disk_path:
        p = Path(disk_path).expanduser()
        if not p.exists():
            raise MatrixError(spec.path, "[qemu] disk_path", f"{_show(disk_path)} does not exist",
                              "give the path of a raw image or block device for the test disk, or remove "
                              "disk_path to use a disk image in the cache")
        if p.is_dir():
            raise MatrixError(spec.path, "[qemu] disk_path", f"{_show(disk_path)} is a directory",
                              "give the path of a raw image file or block device inside it, or remove disk_path")
    if spec.run["guest_os"] == "windows2022" and spec.run["backend"] not in WINDOWS_BACKENDS:
        raise MatrixError(spec.path, "[run] guest_os",
                          f"windows2022 cannot run on backend = {spec.run['backend']!r}: it boots the tiny Linux "
                          "guest image, not a Windows VM",
                          'use backend = "proxmox" or "vmware" with a Windows Server 2022 VM, or guest_os = "linux"')
