"""The test disk as QEMU really gets it: ``qm showcmd`` (what qemu-server makes of the config) and the
running QEMU's ``/proc/<pid>/cmdline``, read where the node is reachable (on the node, or over ssh),
kept in ``<run dir>/proxmox/`` and compared with the cell (:func:`~.pve_config.cmdline_problems`).

A difference (a hookscript, an ``args:`` line, a qemu-server that ignores an option) fails the cell
before anything is measured: a measurement of another configuration than the cell's name says is worse
than none.
"""

from __future__ import annotations

import logging
import re
import shlex
from pathlib import Path
from typing import Any, Mapping

from ..core.errors import BackendError
from ..core.model import DiskConfig
from . import pve_config as pc
from .proxmox_node import NodeShell, local_process_cmdline

log = logging.getLogger("stormatrix.backend.proxmox")


class CmdlineCheck:
    """Reads, keeps and checks the QEMU command line of one VM (``opts``: the ``[proxmox]`` section)."""

    def __init__(self, node: NodeShell, opts: Mapping[str, Any], workdir: Path) -> None:
        self.node = node
        self.opts = opts
        self.workdir = Path(workdir)
        self.count = 0

    def can_showcmd(self) -> bool:
        """``qm`` is on the node: here with ``transport = "local"``, or over ssh."""
        return self.opts["transport"] == "local" or self.node.remote

    def showcmd(self) -> str:
        return self.node.run(["qm", "showcmd", str(self.opts["vmid"]), "--pretty"]).stdout

    def original(self) -> str:
        """The command line of the VM as found (kept as ``original.showcmd.txt``), one line for the facts."""
        text = self.showcmd()
        self.save("original.showcmd", text)
        return shlex.join(pc.parse_showcmd(text))

    def local_pid(self, pid: int) -> bool:
        """Is ``pid`` this VM's QEMU on this machine? (qemu-server's pid file says so.)"""
        import psutil

        pidfile = Path(self.opts["qemu_server_dir"]) / f"{self.opts['vmid']}.pid"
        try:
            return int(pidfile.read_text().strip()) == pid and psutil.pid_exists(pid)
        except (OSError, ValueError):
            return False

    def running(self, pid: int | None) -> list[str] | None:
        if not pid:
            return None
        if self.node.remote:
            text = self.node.run(["cat", f"/proc/{pid}/cmdline"]).stdout
            return [a for a in text.split("\0") if a] or None
        if self.local_pid(pid):
            return local_process_cmdline(pid)
        return None

    def save(self, name: str, text: str) -> Path:
        folder = self.workdir / "proxmox"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{name}.txt"
        path.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
        return path

    def check(self, disk: DiskConfig, key: str, pid: int | None, storage: pc.StorageInfo | None = None) -> None:
        """Both command lines that can be read must give the test disk at ``key`` the cell's options;
        ``storage`` (the disk's storage, None: unknown, a directory storage's defaults) decides what a
        cell that leaves cache unset gets (no O_DIRECT on btrfs) and whether aio applies (librbd)."""
        vmid = self.opts["vmid"]
        texts: dict[str, list[str]] = {}
        self.count += 1
        stem = f"{self.count:03d}-" + re.sub(r"[^A-Za-z0-9_.=-]+", "_", disk.key)
        if self.can_showcmd():
            text = self.showcmd()
            path = self.save(f"{stem}.showcmd", text)
            texts["qm showcmd"] = pc.parse_showcmd(text)
            log.info("VM %s: qm showcmd for %s kept in %s", vmid, disk.key, path)
        running = self.running(pid)
        if running is not None:
            self.save(f"{stem}.running", shlex.join(running).replace(" -", " \\\n  -"))
            texts[f"the running QEMU (pid {pid})"] = running
        if not texts:
            log.debug("VM %s: no way to read its QEMU command line here (transport api without ssh, and "
                      "its QEMU is not on this machine)", vmid)
            return
        problems = {where: pc.cmdline_problems(argv, disk, key, storage) for where, argv in texts.items()}
        problems = {where: p for where, p in problems.items() if p}
        if problems:
            raise BackendError(
                f"VM {vmid}: the test disk {key} is not what the cell {disk.key} asked for: "
                + "; ".join(f"{where} has {', '.join(p)}" for where, p in problems.items())
                + ". Nothing was measured. Look for what changes the command line (an args: line, a hookscript, "
                  "an old qemu-server) in the VM's config and on the node")
