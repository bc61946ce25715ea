"""ssh and scp from this machine to a hypervisor host: the one place their command lines are built.

Used for the Proxmox node (``qm showcmd``, pinning, the host collector) and the ESXi host (esxtop).
Why each piece is there:

- ``-o BatchMode=yes``: a password, passphrase or unknown-host-key prompt is an error, never a hang
  in the middle of a run (OpenSSH ``ssh_config(5)``: BatchMode disables all prompting, so
  ``StrictHostKeyChecking=ask`` refuses an unknown key).
- ``-o ConnectTimeout=10``: an unreachable host fails in seconds, not after TCP's minutes.
- ``-F ssh_config``: the user's own file for Port, IdentityFile, UserKnownHostsFile (optional).
- ``known_hosts``: a known-hosts file of the user's choice (``UserKnownHostsFile``) with
  ``StrictHostKeyChecking=yes``, for hosts whose key is pinned outside the user's ``~/.ssh``.
- ``--`` before the remote command, and a target checked by :func:`check_target` (no leading ``-``):
  nothing a matrix says is read by ssh as an option.
- ssh hands the remote side ONE string that its login shell splits again, so a remote command given as
  an argument list is quoted here with :func:`shlex.join`; a command given as a string is taken as
  shell text on purpose (callers quote what they splice in).
"""

from __future__ import annotations

import re
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from .core.errors import BackendError

_TARGET_RE = re.compile(r"(?:[A-Za-z0-9_][A-Za-z0-9._-]*@)?[A-Za-z0-9][A-Za-z0-9._:-]*")

#: ssh's own failures (exit 255 is also what some remote programs exit with, so the text decides)
SSH_FAILURE = re.compile(r"^ssh: |Host key verification failed|Permission denied \(|Connection (refused|closed|reset|"
                         r"timed out)|Could not resolve hostname|No route to host|kex_exchange_identification|"
                         r"Bad configuration option|Can't open user config file|Bad owner or permissions|"
                         r"REMOTE HOST IDENTIFICATION HAS CHANGED", re.M)


def check_target(value: str) -> None:
    """A :class:`~stormatrix.spec.Field` check for ssh destinations: ``host`` or ``user@host``, never
    something ssh would read as an option."""
    if value and not _TARGET_RE.fullmatch(value):
        raise ValueError(f"{value!r} is not an ssh target like root@pve1 (a host, optionally user@)")


@dataclass(frozen=True)
class SshOptions:
    """How to reach one host: the destination and the client options every ssh/scp to it carries."""

    target: str
    ssh_config: str = ""
    known_hosts: str = ""
    connect_timeout: int = 10

    def options(self) -> list[str]:
        opts: list[str] = []
        if self.ssh_config:
            opts += ["-F", str(Path(self.ssh_config).expanduser())]
        opts += ["-o", "BatchMode=yes", "-o", f"ConnectTimeout={self.connect_timeout}"]
        if self.known_hosts:
            opts += ["-o", f"UserKnownHostsFile={Path(self.known_hosts).expanduser()}",
                     "-o", "StrictHostKeyChecking=yes"]
        return opts

    def ssh_argv(self, remote: Sequence[str] | str) -> list[str]:
        """``ssh ... target -- <remote>``: a list is quoted for the remote shell, a string is shell text."""
        self._check()
        command = remote if isinstance(remote, str) else shlex.join(remote)
        return ["ssh", *self.options(), self.target, "--", command]

    def scp_argv(self, files: Sequence[str | Path], remote_dir: str) -> list[str]:
        """``scp -q ... files target:remote_dir/``."""
        self._check()
        return ["scp", "-q", *self.options(), *map(str, files), f"{self.target}:{remote_dir}/"]

    def _check(self) -> None:
        if not self.target:
            raise ValueError("no ssh target: ssh needs a host (user@host)")
        check_target(self.target)

    def login_hint(self) -> str:
        """What to check when the login failed (the user can run the probe and see the prompt ssh refused)."""
        config = " (with the ssh_config given)" if self.ssh_config else ""
        return (f"the login must work without a prompt (ssh -o BatchMode=yes {self.target} true){config} and the "
                "host's key must be known (connect once interactively, or list it in the known-hosts file)")


class Shell:
    """Commands on a host: on this machine (``target`` empty), or over ``ssh``.

    Remote commands are given as argument lists and quoted here; :meth:`run_shell` takes shell text.
    ``missing`` says what to do when a program is not installed here; ``what_key`` names the matrix key
    that set the target, for the messages (``[proxmox] ssh``).
    """

    def __init__(self, target: str = "", ssh_config: str = "", *, known_hosts: str = "", timeout: float = 60.0,
                 what_key: str = "[proxmox] ssh", missing: dict[str, str] | None = None) -> None:
        self.opts = SshOptions(target, ssh_config, known_hosts)
        self.missing = dict(missing or {})  # program -> what to do when it is not installed here
        self.target = target
        self.ssh_config = str(Path(ssh_config).expanduser()) if ssh_config else ""
        self.timeout = timeout
        self.what_key = what_key

    @property
    def remote(self) -> bool:
        return bool(self.target)

    @property
    def where(self) -> str:
        return self.target or "this machine"

    def argv(self, argv: Sequence[str]) -> list[str]:
        return self.opts.ssh_argv(argv) if self.target else list(argv)

    def shell_argv(self, command: str) -> list[str]:
        return self.opts.ssh_argv(command) if self.target else ["sh", "-c", command]

    def run(self, argv: Sequence[str], *, input: str | None = None, timeout: float | None = None,
            check: bool = True) -> "subprocess.CompletedProcess[str]":
        return self._run(self.argv(argv), " ".join(argv), input, timeout, check)

    def run_shell(self, command: str, *, input: str | None = None, timeout: float | None = None,
                  check: bool = True) -> "subprocess.CompletedProcess[str]":
        return self._run(self.shell_argv(command), command, input, timeout, check)

    def copy(self, files: Sequence[Path], remote_dir: str, *, timeout: float = 120.0) -> None:
        """``scp`` files into ``remote_dir`` on the host (a plain copy without ssh)."""
        if not self.target:
            Path(remote_dir).mkdir(parents=True, exist_ok=True)
            for f in files:
                (Path(remote_dir) / f.name).write_bytes(f.read_bytes())
            return
        proc = self._run(self.opts.scp_argv(files, remote_dir), f"scp to {remote_dir}", None, timeout, False)
        if proc.returncode != 0:
            raise BackendError(f"copying {', '.join(f.name for f in files)} to {self.target}:{remote_dir} "
                               f"with scp failed (exit {proc.returncode}): "
                               f"{proc.stderr.strip()[-400:] or 'no message'}. scp needs the "
                               "host's sftp subsystem and write access there")

    def ssh_failure(self, returncode: int, stderr: str) -> str | None:
        """The message for a failure of ssh itself (not of the remote command), or None."""
        if self.target and returncode == 255 and SSH_FAILURE.search(stderr):
            return (f"ssh to {self.target} failed: {stderr.strip()[-400:]}. Check {self.what_key} and ssh_config: "
                    + self.opts.login_hint())
        return None

    def _run(self, cmd: list[str], what: str, input: str | None, timeout: float | None,
             check: bool) -> "subprocess.CompletedProcess[str]":
        limit = timeout or self.timeout
        try:
            # (UTF-8 as the node speaks it; Windows' locale encoding would be cp1252)
            proc = subprocess.run(cmd, input=input, capture_output=True, text=True, encoding="utf-8", timeout=limit,
                                  check=False)
        except FileNotFoundError:
            fix = "install openssh-client" if cmd[0] in ("ssh", "scp") else self.missing.get(
                cmd[0], f"run stormatrix on the host that has {cmd[0]}, or reach it with {self.what_key}")
            raise BackendError(f"{cmd[0]} not found on this machine: {fix}") from None
        except subprocess.TimeoutExpired:
            raise BackendError(f"{what} on {self.where} did not finish within {limit:g} s") from None
        failure = self.ssh_failure(proc.returncode, proc.stderr)
        if failure:
            raise BackendError(failure)
        if check and proc.returncode != 0:
            raise BackendError(f"{what} on {self.where} exited {proc.returncode}: "
                               f"{proc.stderr.strip()[-500:] or '(no message)'}")
        return proc
