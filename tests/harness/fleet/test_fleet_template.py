"""``stormatrix fleet template``: cloud-init user-data for the workers' template (fio of the controller's
version, the QEMU guest agent, a ``fio --server`` systemd unit), and the fleet journal's torn-line rule."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from stormatrix.backends.proxmox.fleetstate import ProxmoxFleetState
from stormatrix.cli import main
from stormatrix.core.errors import DataFileError
from stormatrix.fleet.journal import FleetJournal
from stormatrix.fleet.records import replay
from stormatrix.fleet.template import (UNIT_NAME, declared_fio, fio_declaration, fio_declaration_note,
                                       fio_declaration_problem, fio_package_version, with_declaration)


def test_user_data_installs_the_controllers_fio_and_a_server_unit(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fleet", "template", "--port", "9876"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("#cloud-config\n")  # cloud-init reads the file as cloud-config only with this line
    doc = yaml.safe_load(text)
    here = subprocess.run(["fio", "--version"], capture_output=True, text=True, check=True).stdout.strip()
    version = fio_package_version(here)
    assert version and here == f"fio-{version}"
    assert doc["packages"] == ["qemu-guest-agent", f"fio={version}*"]
    unit = next(f for f in doc["write_files"] if f["path"] == f"/etc/systemd/system/{UNIT_NAME}")
    assert "ExecStart=/usr/bin/fio --server=ip:0.0.0.0,9876\n" in unit["content"]
    assert "Restart=always" in unit["content"] and "WantedBy=multi-user.target" in unit["content"]
    assert ["systemctl", "enable", "--now", UNIT_NAME] in doc["runcmd"]
    assert ["systemctl", "enable", "--now", "qemu-guest-agent"] in doc["runcmd"]


def test_template_refuses_a_bad_port_and_says_when_fio_is_unknown(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fleet", "template", "--port", "0"]) == 2
    assert "--port 0" in capsys.readouterr().err
    assert main(["fleet", "template", "--fio", str(tmp_path / "no-fio")]) == 0
    out, err = capsys.readouterr()
    assert "fio is not pinned" in err and yaml.safe_load(out)["packages"] == ["qemu-guest-agent", "fio"]


def test_fleet_journal_ignores_a_torn_last_line_but_not_a_damaged_one(tmp_path: Path) -> None:
    j = FleetJournal(tmp_path)
    j.append({"type": "vm", "vmid": 300, "name": "smx-w01", "node": "pve"})
    with open(j.path, "a") as fh:
        fh.write('{"type": "vm", "vmid": 3')  # the write a kill -9 cut short: that VM was never requested
    assert list(replay(j, ProxmoxFleetState()).vms) == [300]
    j.append({"type": "vm-ready", "vmid": 300})  # the next append starts after the repaired tail
    assert replay(j, ProxmoxFleetState()).ready == {300} and j.path.read_text().count("\n") == 2
    j.path.write_text('{"type": "vm"\n' + '{"type": "vm", "vmid": 301, "name": "w", "node": "pve"}\n')
    with pytest.raises(DataFileError, match="line 1 is not JSON"):
        replay(j, ProxmoxFleetState())


def test_keep_is_refused_without_a_fleet(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    suite = tmp_path / "s.toml"
    suite.write_text('[suite]\nfilename = "/dev/sdb"\nguests = ["vm01=10.0.0.11:8765"]\n')
    assert main(["suite", "run", str(suite), "-o", str(tmp_path / "run"), "--keep"]) == 2
    assert "--keep applies only to a suite with a [fleet]" in capsys.readouterr().err
    assert not (tmp_path / "run" / "journal.ndjson").exists()


def test_a_templates_fio_declaration_is_written_read_and_compared() -> None:
    """One line ``stormatrix-fio: fio-X.Y`` in a description or Notes: set without losing the rest of the
    text, replaced (never doubled), read back, and compared with the controller's version."""
    text = with_declaration("Debian 12 cloud image\nbuilt 2026-11-01", "fio-3.33\n")
    assert text == "Debian 12 cloud image\nbuilt 2026-11-01\nstormatrix-fio: fio-3.33"
    again = with_declaration(text, "fio-3.35")
    assert again.count("stormatrix-fio") == 1 and again.startswith("Debian 12 cloud image\nbuilt 2026-11-01\n")
    assert declared_fio(again) == "fio-3.35" and declared_fio("Debian 12\n#  stormatrix-fio: fio-3.28 ") == "fio-3.28"
    assert declared_fio("Debian 12; no stormatrix-fio line") is None and declared_fio(None) is None
    assert with_declaration("", "fio-3.33") == fio_declaration("fio-3.33") == "stormatrix-fio: fio-3.33"
    with pytest.raises(ValueError):
        fio_declaration("not a version")
    assert fio_declaration_problem("template 9000", again, "fio-3.35") is None
    problem = fio_declaration_problem("template 9000", again, "fio-3.33", where="Notes")
    assert problem is not None and "template 9000 declares fio-3.35 (stormatrix-fio in its Notes)" in problem
    assert "fio-3.33" in problem and "stormatrix fleet template" in problem
    # undeclared, or the controller's fio unknown: checked through the agents before the first point
    assert fio_declaration_problem("template 9000", "Debian 12", "fio-3.33") is None
    assert fio_declaration_problem("template 9000", again, None) is None
    assert "before the first point" in fio_declaration_note("template 9000", "Debian 12", "fio-3.33")
