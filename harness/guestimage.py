"""The tiny benchmark guest: a Debian kernel and an initramfs with busybox, fio and the storage
drivers of every controller, built from Debian packages into a cache folder.

Why it looks like this (measured under software emulation on these machines):

- The kernel boots through its PVH ELF entry point (``-kernel vmlinux``) instead of the compressed
  bzImage: decompressing the xz bzImage under TCG alone took ~4.5 s of a 6.9 s boot.
- The initramfs is an uncompressed ``newc`` cpio: gunzip under TCG costs more than copying.
- fio comes with all its shared libraries (Debian links it against ceph, gluster, rdma, ...). That
  makes the image ~85 MB, but loading it is cheap compared to decompression.
- Modules are loaded in dependency order given on the kernel command line (``smx.mods=``): Debian's
  kernel .deb ships no modules.dep, so the order is computed here from each module's ``.modinfo``.

The image is rebuilt when any input changes: the kernel .deb, busybox, fio and its libraries, the
init script, and this builder's version. Its identity (a SHA-256 over all inputs) is recorded in
every journal record through the environment facts.
"""

from __future__ import annotations

import graphlib
import hashlib
import io
import json
import logging
import lzma
import os
import shutil
import stat
import subprocess
import tempfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Iterable

from .core import oscompat
from .core.errors import EnvironmentProblem

log = logging.getLogger("stormatrix.guest")

BUILDER_VERSION = "4"

# Modules needed by each controller's disk in the guest (the Linux driver of each emulated controller:
# piix IDE, AHCI, virtio, LSI 53C8xx, MegaRAID SAS, VMware PVSCSI), top-level only: the
# dependencies are resolved from .modinfo. crc64_rocksoft_generic is the crypto provider t10-pi
# needs through crc64-rocksoft; without it SCSI disks never appear.
CONTROLLER_MODULES: dict[str, list[str]] = {
    "ide": ["ata_piix", "sd_mod"],
    "sata": ["ahci", "sd_mod"],
    "virtio-blk": ["virtio_pci", "virtio_blk"],
    "virtio-scsi-pci": ["virtio_pci", "virtio_scsi", "sd_mod"],
    "virtio-scsi-single": ["virtio_pci", "virtio_scsi", "sd_mod"],
    "pvscsi": ["vmw_pvscsi", "sd_mod"],
    "megasas": ["megaraid_sas", "sd_mod"],
    "lsi": ["sym53c8xx", "sd_mod"],
    "lsi53c810": ["sym53c8xx", "sd_mod"],
    "nvme": ["nvme"],
}
NET_MODULES = ["virtio_pci", "virtio_net"]
EXTRA_MODULES = ["crc64_rocksoft_generic"]


def _norm(name: str) -> str:
    return name.replace("-", "_")


def cache_root() -> Path:
    env = os.environ.get("STORMATRIX_CACHE")
    if env:
        return Path(env)
    return Path(oscompat.cache_home()) / "stormatrix"  # (~/.cache, %LOCALAPPDATA% on Windows)


@dataclass(frozen=True)
class GuestImage:
    """A built image: what QEMU needs to boot it, and how to load a controller's drivers."""

    root: Path
    kernel: Path
    initrd: Path
    kernel_release: str
    image_id: str
    module_order: tuple[str, ...]  # every module in the image, in a valid load order
    module_deps: dict[str, tuple[str, ...]]

    def modules_for(self, controllers: Iterable[str], *, network: bool = False) -> list[str]:
        """The load order for the drivers these controllers need (dependencies first)."""
        wanted: list[str] = list(EXTRA_MODULES)
        for c in controllers:
            wanted += CONTROLLER_MODULES[c]
        if network:
            wanted += NET_MODULES
        closure: set[str] = set()
        stack = [_norm(w) for w in wanted]
        while stack:
            m = stack.pop()
            if m in closure or m not in self.module_deps:
                continue
            closure.add(m)
            stack.extend(self.module_deps[m])
        return [m for m in self.module_order if m in closure]

    def cmdline(self, controllers: Iterable[str], *, mode: str = "agent", port: int | None = None,
                network: bool = False) -> str:
        parts = ["console=ttyS0", "quiet", "loglevel=3", "panic=-1", "rdinit=/init",
                 # no hardware to probe that we do not emulate; saves time under TCG
                 "i8042.noaux", "i8042.nokbd", "i8042.nopnp", "mitigations=off", "nokaslr",
                 # Under TCG the guest TSC is the host's, calibrated against an emulated PIT: on a
                 # loaded host that calibration goes wrong and guest time ran ~10x fast (measured).
                 # The HPET follows QEMU's virtual clock, i.e. real time: fio's runtime stays true.
                 "clocksource=hpet", "no_timer_check",
                 # pages are zeroed as they are freed: the initramfs archive the kernel frees after unpacking
                 # it is then zero pages, which a saved state ([qemu] restore) stores as a flag each: the
                 # state shrank from 238 to 149 MiB, less to load at every restore (measured)
                 "init_on_free=1",
                 "smx.mods=" + ",".join(self.modules_for(controllers, network=network)),
                 f"smx.mode={mode}"]
        if port:
            parts.append(f"smx.port={port}")
        return " ".join(parts)


# --- ELF .modinfo ------------------------------------------------------------------------------------

def modinfo(path: Path) -> dict[str, list[str]]:
    """The key=value strings of a kernel module's .modinfo section (64-bit little-endian ELF)."""
    import struct

    data = path.read_bytes()
    if data[:4] != b"\x7fELF" or data[4] != 2:
        raise EnvironmentProblem(f"{path}: not a 64-bit ELF kernel module")
    e_shoff = struct.unpack_from("<Q", data, 0x28)[0]
    e_shentsize, e_shnum, e_shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    sections = []
    for i in range(e_shnum):
        off = e_shoff + i * e_shentsize
        name, _type, _flags, _addr, offset, size = struct.unpack_from("<IIQQQQ", data, off)
        sections.append((name, offset, size))
    strtab_off = sections[e_shstrndx][1]
    info: dict[str, list[str]] = {}
    for name, offset, size in sections:
        end = data.index(b"\0", strtab_off + name)
        if data[strtab_off + name:end] == b".modinfo":
            for item in data[offset:offset + size].split(b"\0"):
                if b"=" in item:
                    k, v = item.decode("utf-8", "replace").split("=", 1)
                    info.setdefault(k, []).append(v)
    return info


def module_dependencies(info: dict[str, list[str]]) -> list[str]:
    deps = [d for v in info.get("depends", []) for d in v.split(",") if d]
    for soft in info.get("softdep", []):
        # "pre: a b post: c" -> the pre-dependencies must be loaded first
        words = soft.split()
        if "pre:" in words:
            for w in words[words.index("pre:") + 1:]:
                if w.endswith(":"):
                    break
                deps.append(w)
    return [_norm(d) for d in deps]


def topo_order(deps: dict[str, tuple[str, ...]]) -> list[str]:
    """A load order for the modules ``deps`` maps (module -> what it needs): dependencies first.

    The standard library's topological sort; modules and their dependencies are added in sorted
    order so that the same inputs always give the same order (it goes on the kernel command line).
    Dependencies outside ``deps`` (built into the kernel) are left out.
    """
    sorter: graphlib.TopologicalSorter[str] = graphlib.TopologicalSorter()
    for m in sorted(deps):
        sorter.add(m, *sorted(d for d in deps[m] if d in deps))
    try:
        return list(sorter.static_order())
    except graphlib.CycleError as exc:
        cycle = exc.args[1] if len(exc.args) > 1 else []
        raise EnvironmentProblem(f"kernel module dependency cycle: {' -> '.join(cycle)}") from None


# --- cpio (newc) ------------------------------------------------------------------------------------

class CpioWriter:
    """A deterministic newc archive writer (mtime 0, uid/gid 0), so equal inputs give equal images."""

    def __init__(self, fh: io.BufferedWriter) -> None:
        self.fh = fh
        self.ino = 1

    def _entry(self, name: str, mode: int, data: bytes = b"", nlink: int = 1) -> None:
        name_b = name.encode() + b"\0"
        hdr = "070701" + "".join(f"{v:08X}" for v in (
            self.ino, mode, 0, 0, nlink, 0, len(data), 0, 0, 0, 0, len(name_b), 0))
        self.ino += 1
        self.fh.write(hdr.encode() + name_b)
        self.fh.write(b"\0" * ((4 - (110 + len(name_b)) % 4) % 4))
        self.fh.write(data)
        self.fh.write(b"\0" * ((4 - len(data) % 4) % 4))

    def dir(self, name: str) -> None:
        self._entry(name, stat.S_IFDIR | 0o755, nlink=2)

    def file(self, name: str, data: bytes, mode: int = 0o644) -> None:
        self._entry(name, stat.S_IFREG | mode, data)

    def symlink(self, name: str, target: str) -> None:
        self._entry(name, stat.S_IFLNK | 0o777, target.encode())

    def close(self) -> None:
        self._entry("TRAILER!!!", 0)


# --- inputs ---------------------------------------------------------------------------------------

def _run(argv: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, check=False, capture_output=True, text=True, **kw)


def _require(path: str, package: str) -> Path:
    p = Path(path)
    if not p.exists():
        raise EnvironmentProblem(f"{path} is missing: install the Debian package {package} "
                                 "(make demo / make test install it)")
    return p


def _apt_state() -> str:
    """Changes whenever apt's view of the archive can have changed (apt-get update, installs)."""
    parts = []
    for p in ("/var/lib/apt/lists", "/var/cache/apt/pkgcache.bin", "/var/lib/dpkg/status"):
        try:
            st = os.stat(p)
            parts.append(f"{p}:{st.st_mtime_ns}:{st.st_size}")
        except OSError:
            parts.append(f"{p}:-")
    return "|".join(parts)


def _kernel_package_names(debs: Path) -> list[str]:
    """What linux-image-amd64 depends on, per ``apt-cache depends``; remembered until apt's state
    changes (the query loads apt's whole cache: ~0.9 s of every run's start-up, measured)."""
    memo = debs / "kernel-depends.json"
    state = _apt_state()
    try:
        saved = json.loads(memo.read_text())
        if saved.get("apt_state") == state and saved.get("names"):
            return list(saved["names"])
    except (OSError, ValueError, AttributeError):
        pass
    res = _run(["apt-cache", "depends", "linux-image-amd64"])
    names = [ln.split()[-1] for ln in res.stdout.splitlines() if "Depends: linux-image-" in ln]
    if names:
        try:
            memo.write_text(json.dumps({"apt_state": state, "names": names}))
        except OSError:
            pass
    return names


def kernel_deb(debs: Path) -> Path:
    """The Debian kernel package linux-image-amd64 currently points at, downloaded once."""
    debs.mkdir(parents=True, exist_ok=True)
    versioned = _kernel_package_names(debs)
    existing = sorted(debs.glob("linux-image-*-amd64_*.deb"))
    if not versioned:
        if existing:
            return existing[-1]
        res = _run(["apt-cache", "depends", "linux-image-amd64"])  # asked again only to quote its answer
        raise EnvironmentProblem("cannot find the kernel package: apt-cache depends linux-image-amd64 "
                                 f"said {res.stdout.strip() or res.stderr.strip()!r}; run apt-get update")
    name = versioned[0]
    have = sorted(debs.glob(f"{name}_*.deb"))
    if have:
        return have[-1]
    log.info("downloading %s", name)
    res = _run(["apt-get", "download", name], cwd=debs)
    have = sorted(debs.glob(f"{name}_*.deb"))
    if res.returncode != 0 or not have:
        raise EnvironmentProblem(f"apt-get download {name} failed: {res.stderr.strip()[-400:]}")
    return have[-1]


def fio_files() -> list[Path]:
    """fio and every shared library it loads (including the dynamic loader)."""
    fio = _require("/usr/bin/fio", "fio")
    res = _run(["ldd", str(fio)])
    if res.returncode != 0:
        raise EnvironmentProblem(f"ldd /usr/bin/fio failed: {res.stderr.strip()}")
    libs: list[Path] = [fio]
    for line in res.stdout.splitlines():
        parts = line.split()
        if "=>" in parts and len(parts) >= 3 and parts[2].startswith("/"):
            libs.append(Path(parts[2]))
        elif parts and parts[0].startswith("/"):
            libs.append(Path(parts[0]))
        elif "not found" in line:
            raise EnvironmentProblem(f"fio needs a library that is not installed: {line.strip()}")
    return libs


_HASH_CACHE: dict[tuple[str, int, int], str] = {}


def _file_hash(path: Path) -> str:
    """SHA-256 of a file, remembered per (path, size, mtime) in a small cache file: hashing the
    ~150 MB of inputs on every run cost 1-6 s of each run's start-up."""
    st = path.stat()
    key = (str(path), st.st_size, st.st_mtime_ns)
    cache_file = cache_root() / "input-hashes.json"
    if not _HASH_CACHE and cache_file.exists():
        try:
            for k, v in json.loads(cache_file.read_text()).items():
                p, size, mtime = k.rsplit("|", 2)
                _HASH_CACHE[(p, int(size), int(mtime))] = v
        except (ValueError, OSError):
            pass
    if key in _HASH_CACHE:
        return _HASH_CACHE[key]
    digest = _hash_bytes(path)
    _HASH_CACHE[key] = digest
    try:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache_file.with_suffix(".tmp")
        tmp.write_text(json.dumps({f"{p}|{s}|{m}": v for (p, s, m), v in _HASH_CACHE.items()}))
        os.replace(tmp, cache_file)
    except OSError:
        pass
    return digest


def _hash_bytes(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _guest_asset(name: str) -> bytes:
    return resources.files("stormatrix").joinpath("guest", name).read_bytes()


def extract_vmlinux(bzimage: bytes) -> bytes:
    """The uncompressed ELF kernel inside an xz-compressed bzImage (for the PVH boot path)."""
    idx = bzimage.find(b"\xfd7zXZ\x00")
    if idx < 0:
        raise EnvironmentProblem("the kernel is not xz-compressed; cannot extract vmlinux")
    out = lzma.LZMADecompressor().decompress(bzimage[idx:])
    if out[:4] != b"\x7fELF":
        raise EnvironmentProblem("the decompressed kernel is not an ELF image")
    return out


def build(cache: Path | None = None, *, force: bool = False) -> GuestImage:
    """Build (or reuse) the guest image; returns where its parts are."""
    cache = cache or cache_root()
    debs = cache / "debs"
    busybox = _require("/bin/busybox", "busybox-static")
    ldd = _run(["ldd", str(busybox)])
    if "not a dynamic executable" not in ldd.stdout + ldd.stderr:
        raise EnvironmentProblem("/bin/busybox is not the static build: install busybox-static")
    kdeb = kernel_deb(debs)
    fio = fio_files()
    init, mark = _guest_asset("init"), _guest_asset("smx-mark")

    h = hashlib.sha256(f"builder={BUILDER_VERSION}\n".encode())
    for p in [kdeb, busybox, *fio]:
        h.update(f"{p}={_file_hash(p)}\n".encode())
    h.update(hashlib.sha256(init + mark).hexdigest().encode())
    image_id = h.hexdigest()[:16]
    root = cache / "guest" / image_id
    manifest_path = root / "manifest.json"
    if manifest_path.exists() and not force:
        return _load(root)

    log.info("building guest image %s", image_id)
    tmp = Path(tempfile.mkdtemp(prefix=".build-", dir=cache))
    try:
        res = _run(["dpkg-deb", "-x", str(kdeb), str(tmp / "deb")])
        if res.returncode != 0:
            raise EnvironmentProblem(f"dpkg-deb -x {kdeb} failed: {res.stderr.strip()}")
        vmlinuz = sorted((tmp / "deb" / "boot").glob("vmlinuz-*"))[0]
        release = vmlinuz.name.removeprefix("vmlinuz-")
        kernel = tmp / "vmlinux"
        kernel.write_bytes(extract_vmlinux(vmlinuz.read_bytes()))

        modroot = tmp / "deb" / "lib" / "modules" / release / "kernel"
        by_name: dict[str, Path] = {_norm(p.stem): p for p in modroot.rglob("*.ko")}
        wanted = {_norm(m) for ms in CONTROLLER_MODULES.values() for m in ms} | set(NET_MODULES) | set(EXTRA_MODULES)
        deps: dict[str, tuple[str, ...]] = {}
        stack = sorted(wanted)
        while stack:
            m = stack.pop()
            if m in deps:
                continue
            if m not in by_name:
                raise EnvironmentProblem(f"kernel module {m} not found in {kdeb.name}")
            d = tuple(module_dependencies(modinfo(by_name[m])))
            deps[m] = tuple(x for x in d if x in by_name)
            stack.extend(deps[m])
        order = topo_order(deps)

        initrd = tmp / "initrd.cpio"
        with open(initrd, "wb") as fh:
            w = CpioWriter(fh)
            for folder in ("bin", "sbin", "dev", "proc", "sys", "tmp", "run", "etc", "lib", "lib/modules",
                           "usr", "usr/bin", "usr/sbin", "lib64", "lib/x86_64-linux-gnu",
                           "usr/lib", "usr/lib/x86_64-linux-gnu"):  # busybox --install and fio need these
                w.dir(folder)
            w.file("init", init, 0o755)
            w.file("bin/busybox", busybox.read_bytes(), 0o755)
            w.symlink("bin/sh", "busybox")
            w.file("bin/smx-mark", mark, 0o755)
            made = {"", "usr", "usr/bin", "lib64", "lib", "lib/x86_64-linux-gnu", "usr/lib",
                    "usr/lib/x86_64-linux-gnu"}
            for p in fio:
                rel = str(p).lstrip("/")
                parents = list(reversed(Path(rel).parents))[1:]  # outermost first, without "."
                for parent in map(str, parents):
                    if parent not in made:
                        w.dir(parent)
                        made.add(parent)
                w.file(rel, p.read_bytes(), 0o755)
            for m in order:
                w.file(f"lib/modules/{m}.ko", by_name[m].read_bytes())
            fio_version = _run(["/usr/bin/fio", "--version"]).stdout.strip()
            w.file("etc/fio-version", (fio_version + "\n").encode())
            w.file("etc/stormatrix-image", json.dumps({"image_id": image_id, "kernel": release}).encode())
            w.close()
        manifest = {"image_id": image_id, "kernel_release": release, "kernel_deb": kdeb.name,
                    "module_order": order, "module_deps": {k: list(v) for k, v in deps.items()},
                    "builder": BUILDER_VERSION, "fio": [str(p) for p in fio],
                    "initrd_bytes": initrd.stat().st_size}
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=1))
        shutil.rmtree(tmp / "deb")
        root.parent.mkdir(parents=True, exist_ok=True)
        if root.exists():
            shutil.rmtree(root)
        os.replace(tmp, root)  # atomic: a half-built image is never picked up
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return _load(root)


def _load(root: Path) -> GuestImage:
    m = json.loads((root / "manifest.json").read_text())
    return GuestImage(root=root, kernel=root / "vmlinux", initrd=root / "initrd.cpio",
                      kernel_release=m["kernel_release"], image_id=m["image_id"],
                      module_order=tuple(m["module_order"]),
                      module_deps={k: tuple(v) for k, v in m["module_deps"].items()})
