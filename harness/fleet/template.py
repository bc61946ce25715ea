"""What a worker's guest needs, as cloud-init user-data: fio of the controller's version, its server unit.

Client and server must speak the same fio protocol (``FIO_SERVER_VER``; docs/fio-server.md): a guest
whose fio differs from the controller's answers ``fio: bad server cmd version``. The user-data pins
the controller's fio version where the guest's package manager can (``fio=<version>*`` on Debian and
Ubuntu), installs the QEMU guest agent (the fleet reads addresses and readiness from it), and runs
``fio --server`` on the test network's port as a systemd unit that restarts if it dies. The suite still
probes every server before the first point, so a guest built otherwise is found before anything is
measured.

Use it once to build the template (``qm set <template> --cicustom user=snippets:stormatrix-fio.yaml``,
or paste it into your image build), then convert the VM to a template.

The template declares the fio it installs, so that a plan can refuse a mismatch before any worker exists:
one line ``stormatrix-fio: fio-3.33`` (:func:`fio_declaration`) in its description (Proxmox; ``stormatrix
fleet template --record FILE`` writes it) or in its Notes (vSphere). :func:`declared_fio` reads it back and
:func:`fio_declaration_problem` compares it with the controller's ``fio --version``; each platform's fleet
plan uses these, so the declaration is parsed in this one place.
"""

from __future__ import annotations

import re

from ..executors.fioserver.inputs import DEFAULT_PORT

UNIT_NAME = "stormatrix-fio-server.service"

#: the declaration's key: a line ``stormatrix-fio: <fio --version>`` in a template's description or Notes
DECLARATION_KEY = "stormatrix-fio"
_DECLARATION_RE = re.compile(rf"^[ \t#]*{DECLARATION_KEY}:[ \t]*(\S+)[ \t]*$", re.MULTILINE)


def fio_package_version(version_line: str | None) -> str | None:
    """``fio-3.33`` -> ``3.33`` (what apt's ``fio=3.33*`` pins); None when unknown."""
    m = re.search(r"fio-(\d+\.\d+(?:\.\d+)?)", version_line or "")
    return m.group(1) if m else None


def fio_declaration(version_line: str) -> str:
    """The line a template carries for the fio its guests run: ``stormatrix-fio: fio-3.33``."""
    version = version_line.strip().split()[0] if version_line.strip() else ""
    if fio_package_version(version) is None:
        raise ValueError(f"{version_line!r} is not a `fio --version` line like fio-3.33")
    return f"{DECLARATION_KEY}: {version}"


def with_declaration(text: str, version_line: str) -> str:
    """``text`` (a description or Notes) with its declaration set to ``version_line``: an old one replaced,
    else the line appended; everything else in the text is kept as it was."""
    line = fio_declaration(version_line)
    if _DECLARATION_RE.search(text or ""):
        return _DECLARATION_RE.sub(line, text, count=1)
    return f"{text.rstrip()}\n{line}" if (text or "").strip() else line


def declared_fio(text: str | None) -> str | None:
    """The fio version a template's description or Notes declares (``fio-3.33``), or None when it has no
    declaration line."""
    m = _DECLARATION_RE.search(text or "")
    return m.group(1) if m else None


def fio_declaration_problem(template: str, text: str | None, controller: str | None, *,
                            where: str = "description") -> str | None:
    """Why a fleet from ``template`` (how to name it: "template 9000") cannot measure with this
    controller's fio (``controller``: its ``fio --version`` line), from the template's description or
    Notes ``text`` (``where``: which of the two); None when its declared fio is the controller's, or when
    either is not known (then the workers' fio is checked through their agents before the first point)."""
    declared = declared_fio(text)
    if declared is None or controller is None:
        return None
    have, want = fio_package_version(declared), fio_package_version(controller)
    if have is not None and have == want:
        return None
    return (f"{template} declares {declared} ({DECLARATION_KEY} in its {where}), the controller runs "
            f"{controller.strip()}: fio client and server must be one version (docs/fio-server.md); rebuild the "
            "template with the user-data of `stormatrix fleet template` and declare its fio again (`stormatrix "
            "fleet template --record FILE` on Proxmox), or run stormatrix with a fio of that version (--fio PATH)")


def fio_declaration_note(template: str, text: str | None, controller: str | None, *,
                         where: str = "description") -> str:
    """What a plan says about the template's fio: declared and matching, or checked later."""
    declared = declared_fio(text)
    if declared is None:
        return (f"{template} declares no fio version ({DECLARATION_KEY}: ... in its {where}): each worker's "
                "fio is checked through its guest agent before the first point")
    if controller is None:
        return f"{template} declares {declared}; the controller's fio version is unknown (fio --version failed)"
    return f"{template} declares {declared}, the controller's fio is {controller.strip()}"


def user_data(*, fio_version: str | None, port: int = DEFAULT_PORT) -> str:
    """The cloud-config text (YAML; ``#cloud-config`` first, as cloud-init requires)."""
    if not 1 <= port <= 65535:
        raise ValueError(f"port {port} is outside 1-65535")
    pinned = f"fio={fio_version}*" if fio_version else "fio"
    unit = "\n".join([
        "[Unit]",
        "Description=fio server for stormatrix (fio --server; the controller runs fio --client)",
        "After=network-online.target",
        "Wants=network-online.target",
        "",
        "[Service]",
        f"ExecStart=/usr/bin/fio --server=ip:0.0.0.0,{port}",
        "Restart=always",
        "RestartSec=2",
        "",
        "[Install]",
        "WantedBy=multi-user.target",
    ])
    lines = [
        "#cloud-config",
        f"# stormatrix worker: fio --server on port {port} (fio {fio_version or 'of the distribution'}), "
        "QEMU guest agent",
        "package_update: true",
        "packages:",
        "  - qemu-guest-agent",
        f"  - {pinned}",
        "write_files:",
        f"  - path: /etc/systemd/system/{UNIT_NAME}",
        "    permissions: '0644'",
        "    content: |",
        *[f"      {line}" if line else "" for line in unit.split("\n")],
        "runcmd:",
        "  - [systemctl, daemon-reload]",
        "  - [systemctl, enable, --now, qemu-guest-agent]",
        f"  - [systemctl, enable, --now, {UNIT_NAME}]",
        # the controller checks this line's version against its own before the first point
        "  - [sh, -c, 'fio --version > /var/log/stormatrix-fio-version']",
    ]
    return "\n".join(lines) + "\n"
