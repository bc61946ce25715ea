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
"""

from __future__ import annotations

import re

from ..executors.fioserver_inputs import DEFAULT_PORT

UNIT_NAME = "stormatrix-fio-server.service"


def fio_package_version(version_line: str | None) -> str | None:
    """``fio-3.33`` -> ``3.33`` (what apt's ``fio=3.33*`` pins); None when unknown."""
    m = re.search(r"fio-(\d+\.\d+(?:\.\d+)?)", version_line or "")
    return m.group(1) if m else None


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
