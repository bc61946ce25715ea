"""The Proxmox node's own command-line tools for tests: ``qm`` (``qm showcmd``) as small executables
that forward to the stand-in over a UNIX socket, so the backend's ``transport = "local"`` and ssh paths
run real programs. A mixin of :class:`~.pve.PveStandin`.
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
from pathlib import Path
from typing import Any

from .pve_launch import shellquote
from .pve_schema import _BOOL, ApiError


class NodeTools:
    """``qm`` on the "node"; the state (VMs, launcher, lock) is :class:`~.pve.PveStandin`'s."""

    lock: Any
    node: str
    vms: dict[int, Any]
    launcher: Any
    node_socket: Path
    _node_server: Any

    def _start_node_tools(self) -> None:
        import socketserver

        standin = self

        class NodeHandler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                try:
                    req = json.loads(self.rfile.readline())
                    rc, out, err = standin.node_command(str(req["tool"]), [str(a) for a in req["argv"]])
                except Exception as exc:  # noqa: BLE001 - reported like a crashing tool
                    rc, out, err = 255, "", f"stand-in error: {type(exc).__name__}: {exc}\n"
                self.wfile.write(json.dumps({"rc": rc, "stdout": out, "stderr": err}).encode())

        self.node_socket.unlink(missing_ok=True)
        server = socketserver.ThreadingUnixStreamServer(str(self.node_socket), NodeHandler)
        server.daemon_threads = True
        self._node_server = server
        threading.Thread(target=server.serve_forever, name="pve-node-tools", daemon=True).start()

    def install_node_tools(self, bindir: Path) -> Path:
        """Write ``qm`` into ``bindir``: a fake that runs the command in this stand-in (as the real one
        runs on the node, reading /etc/pve and /run/qemu-server) and exits with its code."""
        bindir.mkdir(parents=True, exist_ok=True)
        qm = bindir / "qm"
        qm.write_text(NODE_TOOL.format(python=sys.executable, tool="qm", socket=str(self.node_socket)))
        qm.chmod(0o755)
        return qm

    def node_command(self, tool: str, argv: list[str]) -> tuple[int, str, str]:
        """``tool argv...`` on the node: (exit code, stdout, stderr). PVE's CLI tools exit 255 on errors."""
        if tool != "qm":
            return 127, "", f"{tool}: command not found\n"
        if not argv:
            return 255, "", "ERROR: no command specified\n"
        if argv[0] == "showcmd":
            return self._qm_showcmd(argv[1:])
        return 255, "", f"ERROR: unknown command 'qm {argv[0]}'\n"

    def _qm_showcmd(self, args: list[str]) -> tuple[int, str, str]:
        """``qm showcmd <vmid> [--pretty] [--snapshot <name>]`` (PVE/CLI/qm.pm, QemuServer::vm_commandline):
        the command line a start of the *current* config would run (pending changes left out), as
        ``PVE::Tools::cmd2string`` quotes it; ``--pretty`` puts each option on a new line."""
        usage = "qm showcmd <vmid> [OPTIONS]\n"
        pretty, snapshot, pos = False, None, []
        i = 0
        while i < len(args):
            a = args[i]
            i += 1
            if not a.startswith("--"):
                pos.append(a)
                continue
            name, eq, value = a[2:].partition("=")
            if name == "pretty":  # a boolean: --pretty, --pretty=1, --pretty 0
                if not eq and i < len(args) and args[i].lower() in _BOOL:
                    value, i = args[i], i + 1
                if (value or "1").lower() not in _BOOL:
                    return 255, "", f"400 Parameter verification failed.\npretty: type check ('boolean') failed - got '{value}'\n{usage}"
                pretty = _BOOL[(value or "1").lower()] == 1
            elif name == "snapshot":
                if not eq:
                    value, i = (args[i] if i < len(args) else ""), i + 1
                snapshot = value
            else:
                return 255, "", f"Unknown option: {name}\n400 unable to parse option\n{usage}"
        if len(pos) != 1:
            return 255, "", f"400 {'not enough' if not pos else 'too many'} arguments\n{usage}"
        if not re.fullmatch(r"\d+", pos[0]) or not 100 <= int(pos[0]) <= 999999999:
            return 255, "", f"400 Parameter verification failed.\nvmid: invalid format - value does not look like a valid VM ID\n{usage}"
        with self.lock:
            vm = self.vms.get(int(pos[0]))
            if vm is None:
                return 255, "", f"Configuration file 'nodes/{self.node}/qemu-server/{pos[0]}.conf' does not exist\n"
            if snapshot:
                return 255, "", f"snapshot '{snapshot}' does not exist\n"
            try:
                spec = self.launch_spec(vm)
            except ApiError as exc:
                return 255, "", exc.message + "\n"
        text = " ".join(shellquote(a) for a in self.launcher.argv(spec))
        if pretty:
            text = text.replace(" -", " \\\n  -")
        return 0, text + "\n", ""


# A node-local tool (qm) for tests: forwards its arguments to the stand-in's node socket.
NODE_TOOL = """#!{python}
import json, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect({socket!r})
s.sendall(json.dumps({{"tool": {tool!r}, "argv": sys.argv[1:]}}).encode() + b"\\n")
data = b""
while True:
    chunk = s.recv(65536)
    if not chunk:
        break
    data += chunk
r = json.loads(data)
sys.stdout.write(r["stdout"])
sys.stderr.write(r["stderr"])
sys.exit(r["rc"])
"""
