"""A private OpenSSH server on 127.0.0.1 for tests: the "Proxmox node" that the backend reaches over ssh.

It runs ``sshd -D -e -f <config>`` as the current user on a free high port, with a throwaway host key
and an authorized key made in a temporary folder (``StrictModes no``: the folder is pytest's). The
client side is an ``ssh_config`` file naming the host ``pve-node`` (port, key, a known_hosts file
holding exactly this server's key, ``StrictHostKeyChecking yes``), the way a user would point
``[proxmox] ssh_config`` at their own. ``path`` entries go first on the sessions' PATH (``SetEnv``),
so node-only tools like the stand-in's ``qm`` are found there.

When sshd cannot run, :class:`SshdUnavailable` says exactly which command failed and how.
"""

from __future__ import annotations

import getpass
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

SSHD = "/usr/sbin/sshd"
HOST = "pve-node"


class SshdUnavailable(Exception):
    """sshd cannot run in this environment (the message is the reason, for pytest.skip)."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PrivateSshd:
    def __init__(self, workdir: Path, *, path: list[Path] | None = None) -> None:
        self.dir = Path(workdir)
        self.path = list(path or [])
        self.user = getpass.getuser()
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0
        self.ssh_config = self.dir / "ssh_config"
        self.known_hosts = self.dir / "known_hosts"
        self.log = self.dir / "sshd.log"

    @property
    def target(self) -> str:
        return f"{self.user}@{HOST}"

    def _keygen(self, name: str) -> Path:
        key = self.dir / name
        cmd = ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"stormatrix-test-{name}", "-f", str(key)]
        try:
            subprocess.run(cmd, check=True, capture_output=True, timeout=30)
        except FileNotFoundError:
            raise SshdUnavailable("ssh-keygen is not installed (openssh-client; scripts/setup.sh installs it)") from None
        except subprocess.CalledProcessError as exc:
            raise SshdUnavailable(f"{' '.join(cmd)} exited {exc.returncode}: {exc.stderr.decode().strip()}") from None
        return key

    def start(self) -> "PrivateSshd":
        if not Path(SSHD).exists():
            raise SshdUnavailable(f"{SSHD} is missing (openssh-server; scripts/setup.sh installs it)")
        if shutil.which("ssh") is None or shutil.which("scp") is None:
            raise SshdUnavailable("ssh/scp are missing (openssh-client; scripts/setup.sh installs it)")
        self.dir.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0 and not Path("/run/sshd").is_dir():
            # sshd running as root insists on its privilege separation directory (the package's
            # tmpfiles.d entry creates it at boot; containers without systemd do not have it)
            try:
                Path("/run/sshd").mkdir(mode=0o755, parents=True, exist_ok=True)
            except OSError as exc:
                raise SshdUnavailable(f"sshd as root needs /run/sshd, which cannot be made: {exc}") from None
        host_key = self._keygen("host_key")
        user_key = self._keygen("user_key")
        authorized = self.dir / "authorized_keys"
        authorized.write_text(Path(f"{user_key}.pub").read_text())
        last = ""
        for _ in range(5):  # another process may take the free port between probe and bind
            self.port = _free_port()
            config = self.dir / "sshd_config"
            lines = [f"Port {self.port}", "ListenAddress 127.0.0.1", f"HostKey {host_key}",
                     f"AuthorizedKeysFile {authorized}", f"PidFile {self.dir / 'sshd.pid'}", "StrictModes no",
                     "PubkeyAuthentication yes", "PasswordAuthentication no", "KbdInteractiveAuthentication no",
                     "PermitRootLogin prohibit-password", "UsePAM no", f"AllowUsers {self.user}",
                     "LogLevel VERBOSE",
                     # scp speaks SFTP since OpenSSH 9.0; Debian's (and so Proxmox's) sshd_config has this line
                     "Subsystem sftp internal-sftp"]
            if self.path:
                lines.append("SetEnv PATH=" + ":".join([*map(str, self.path), "/usr/sbin:/usr/bin:/sbin:/bin"]))
            config.write_text("\n".join(lines) + "\n")
            cmd = [SSHD, "-D", "-e", "-f", str(config)]
            with open(self.log, "wb") as log:
                self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    break
                if "Server listening" in self.log.read_text(errors="replace"):
                    break
                time.sleep(0.05)
            if self.proc.poll() is None and "Server listening" in self.log.read_text(errors="replace"):
                break
            last = f"{' '.join(cmd)} exited {self.proc.poll()}: {self.log.read_text(errors='replace').strip()[-500:]}"
            self.stop()
        else:
            raise SshdUnavailable(last)
        self.known_hosts.write_text(f"[127.0.0.1]:{self.port} {Path(f'{host_key}.pub').read_text().split(' #')[0]}")
        self.ssh_config.write_text("\n".join([
            f"Host {HOST}", "  HostName 127.0.0.1", f"  Port {self.port}", f"  User {self.user}",
            f"  IdentityFile {user_key}", "  IdentitiesOnly yes", f"  UserKnownHostsFile {self.known_hosts}",
            "  StrictHostKeyChecking yes", "  LogLevel ERROR", ""]))
        probe = ["ssh", "-F", str(self.ssh_config), "-o", "BatchMode=yes", HOST, "--", "true"]
        res = subprocess.run(probe, capture_output=True, text=True, timeout=30)
        if res.returncode != 0:
            err = res.stderr.strip()
            self.stop()
            raise SshdUnavailable(f"{' '.join(probe)} exited {res.returncode}: {err}; sshd said: "
                                  f"{self.log.read_text(errors='replace').strip()[-400:]}")
        return self

    def accepted(self) -> int:
        """Logins so far (each ssh/scp command is one)."""
        return self.log.read_text(errors="replace").count("Accepted publickey")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def __enter__(self) -> "PrivateSshd":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
