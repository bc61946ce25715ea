"""Matrix parsing, validation and expansion: every mistake names the file, the key and the fix."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from stormatrix.core.errors import MatrixError
from stormatrix.cells import expand
from stormatrix.registry import load_spec

GOOD = """
[run]
name = "t"
ramp_seconds = 1
measure_seconds = 5

[matrix]
controllers = ["ide", "virtio-blk", "virtio-scsi-single", "pvscsi"]
aio = ["native", "threads"]
iothread = [false, true]
cache = ["none"]

[[workload]]
name = "rr"
rw = "randread"
bs = "64k"
iodepth = 8
rate_mib_s = 32
"""


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "matrix.toml"
    p.write_text(text)
    return p


def test_expand_good_matrix_skips_meaningless_iothread_twins(tmp_path: Path) -> None:
    spec = load_spec(write(tmp_path, GOOD))
    plan = expand(spec)
    # 4 controllers x 2 aio x iothread off = 8, plus iothread on for virtio-blk and virtio-scsi-single = 4
    assert len(plan.cells) == 12
    skipped = {s.disk.key: s.reason for s in plan.skipped}
    assert len(skipped) == 4
    assert "ide/aio=native/iothread=1/cache=none" in skipped
    assert "Proxmox ignores it" in skipped["pvscsi/aio=threads/iothread=1/cache=none"]
    w = plan.cells[0].workload
    assert (w.bs, w.iodepth, w.rate_mib_s) == (65536, 8, 32.0)


@pytest.mark.parametrize("replace, key, words", [
    (('"pvscsi"]', '"pvscsci"]'), "[matrix] controllers[4]", "not a known controller"),
    (('cache = ["none"]', 'cache = ["writeback"]'), "[matrix] aio/cache", "O_DIRECT"),
    (("iodepth = 8", "iodepht = 8"), "workload[1] iodepht", "did you mean 'iodepth'"),
    (("rate_mib_s = 32", "rate_mib_s = -5"), "workload[1] rate_mib_s", "below the minimum"),
    (('bs = "64k"', 'bs = "64q"'), "workload[1].bs", "not a size"),
    (('bs = "64k"', 'bs = "1000"'), "workload[1].bs", "multiple of 512"),
    (("[run]", "[runn]"), "[runn]", "did you mean [run]"),
    (("measure_seconds = 5", "measure_seconds = nan"), "[run] measure_seconds", "finite"),
    (('aio = ["native", "threads"]', 'aio = ["native", "native"]'), "[matrix] aio", "more than once"),
    (('aio = ["native", "threads"]', 'aio = ["naitve"]'), "[matrix] aio[1]", "did you mean 'native'"),
])
def test_bad_matrix_names_key_and_fix(tmp_path: Path, replace: tuple[str, str], key: str, words: str) -> None:
    text = GOOD.replace(*replace)
    assert text != GOOD
    with pytest.raises(MatrixError) as exc:
        expand(load_spec(write(tmp_path, text)))
    msg = str(exc.value)
    assert key in msg and words in msg and "Fix:" in msg and "matrix.toml" in msg


def test_duplicate_key_is_a_toml_error(tmp_path: Path) -> None:
    with pytest.raises(MatrixError, match="duplicate|not valid TOML"):
        load_spec(write(tmp_path, GOOD.replace("iodepth = 8", "iodepth = 8\niodepth = 16")))


def test_native_with_writeback_can_be_skipped_explicitly(tmp_path: Path) -> None:
    text = GOOD.replace('cache = ["none"]', 'cache = ["none", "writeback"]\nskip_invalid = true')
    plan = expand(load_spec(write(tmp_path, text)))
    reasons = [s.reason for s in plan.skipped if s.disk.cache == "writeback" and s.disk.aio == "native"]
    assert reasons and all("aio=native" in r for r in reasons)
    assert all(not (c.disk.aio == "native" and c.disk.cache == "writeback") for c in plan.cells)


def test_bus_limit(tmp_path: Path) -> None:
    text = GOOD.replace('cache = ["none"]', 'cache = ["none"]\ndisk_slot = 5')
    with pytest.raises(MatrixError, match=r"slot 5 does not exist on the ide bus \(ide0-ide3\)"):
        expand(load_spec(write(tmp_path, text)))


def test_windows_guest_drivers_listed_are_authoritative(tmp_path: Path) -> None:
    """guest_drivers set: the virtio controllers whose driver it does not list are skipped at plan time,
    with the driver and the key to change."""
    text = GOOD.replace('name = "t"', 'name = "t"\nguest_os = "windows2022"\nguest_drivers = ["vioscsi"]')
    plan = expand(load_spec(write(tmp_path, text)))
    assert {c.disk.controller for c in plan.cells} == {"ide", "pvscsi", "virtio-scsi-single"}
    reasons = {s.disk.controller: s.reason for s in plan.skipped if "virtio-win" in s.reason}
    assert set(reasons) == {"virtio-blk"}
    assert "viostor" in reasons["virtio-blk"] and "guest_drivers" in reasons["virtio-blk"]
    notes = {n.split(":", 1)[0]: n for n in plan.notes}
    assert "([run] guest_drivers)" in notes["virtio-scsi-single"] and "virtio-blk" not in notes


def test_windows_guest_without_guest_drivers_plans_virtio_and_says_the_guest_decides(tmp_path: Path) -> None:
    """guest_drivers not set: the virtio controllers are planned, each with a note that its cells run only
    if the guest's facts show its driver, and how to pin it."""
    text = GOOD.replace('name = "t"', 'name = "t"\nguest_os = "windows2022"')
    plan = expand(load_spec(write(tmp_path, text)))
    assert {c.disk.controller for c in plan.cells} == {"ide", "pvscsi", "virtio-blk", "virtio-scsi-single"}
    assert not [s for s in plan.skipped if "virtio-win" in s.reason]
    notes = {n.split(":", 1)[0]: n for n in plan.notes}
    for ctrl, driver in (("virtio-blk", "viostor"), ("virtio-scsi-single", "vioscsi")):
        assert driver in notes[ctrl] and "driver store" in notes[ctrl] and "guest_drivers" in notes[ctrl]
    assert "ide" not in notes


def test_cli_plan_prints_the_windows_driver_notes(tmp_path: Path) -> None:
    text = GOOD.replace('name = "t"', 'name = "t"\nguest_os = "windows2022"\nbackend = "proxmox"')
    res = subprocess.run([sys.executable, "-m", "stormatrix", "plan", str(write(tmp_path, text))],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert "virtio-blk: planned; it needs the virtio-win driver viostor" in res.stdout
    # the virtio cells counted from the plan table printed above, not from the code
    table = [line.split() for line in res.stdout.splitlines() if line[:4].strip().isdigit()]
    virtio = sum(1 for row in table if row[1] in ("virtio-blk", "virtio-scsi-single"))
    assert virtio > 1 and f"{virtio} of them need a virtio-win driver" in res.stdout
    pinned = text.replace('guest_os = "windows2022"', 'guest_os = "windows2022"\nguest_drivers = ["viostor", "vioscsi"]')
    res = subprocess.run([sys.executable, "-m", "stormatrix", "plan", str(write(tmp_path, pinned))],
                         capture_output=True, text=True)
    assert res.returncode == 0 and "need a virtio-win driver" not in res.stdout


@pytest.mark.parametrize("replace", [
    ('"pvscsi"]', '"pvscsci"]'),
    ('cache = ["none"]', 'cache = ["writeback"]'),
    ("iodepth = 8", "iodepht = 8"),
    ("rate_mib_s = 32", "rate_mib_s = -5"),
])
def test_cli_plan_bad_matrix_exit_2_no_traceback(tmp_path: Path, replace: tuple[str, str]) -> None:
    path = write(tmp_path, GOOD.replace(*replace))
    res = subprocess.run([sys.executable, "-m", "stormatrix", "plan", str(path)], capture_output=True, text=True)
    assert res.returncode == 2
    assert "Traceback" not in res.stderr
    assert res.stderr.count("\n") == 1 and "Fix:" in res.stderr


def test_cli_plan_prints_cells_and_eta(tmp_path: Path) -> None:
    res = subprocess.run([sys.executable, "-m", "stormatrix", "plan", str(write(tmp_path, GOOD))],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert "12 cells" in res.stdout and "ETA" in res.stdout and "skipped (4)" in res.stdout


def test_a_controller_without_aio_is_planned_once_and_qemus_pvscsi_keeps_its_aio(tmp_path: Path) -> None:
    """nvme exists only on ESXi (no aio/iothread/cache): one configuration; pvscsi on QEMU has an aio mode."""
    from stormatrix.core.model import DiskConfig

    text = GOOD.replace('["ide", "virtio-blk", "virtio-scsi-single", "pvscsi"]', '["pvscsi", "nvme"]')
    plan = expand(load_spec(write(tmp_path, text)))
    assert sorted({c.disk.key for c in plan.cells}) == ["nvme", "pvscsi/aio=native/iothread=0/cache=none",
                                                        "pvscsi/aio=threads/iothread=0/cache=none"]
    assert [d for d in plan.disks() if d.controller == "nvme"] == [DiskConfig.controller_only("nvme")]
    assert all(s.disk.controller == "pvscsi" for s in plan.skipped)    # pvscsi's iothread twins, not nvme's
    (note,) = plan.notes
    assert note.startswith("[matrix] aio/iothread/cache (aio = native, threads; iothread = false, true; cache = none)"
                           " do not apply to nvme: ESXi has no aio, iothread or cache setting")
    assert "nvme/rr/rep1" in note and "the other controllers are crossed with them" in note


def test_a_disk_has_all_three_options_or_none() -> None:
    from stormatrix.core.model import DiskConfig

    assert DiskConfig.controller_only("nvme").key == "nvme" and not DiskConfig.controller_only("nvme").has_options
    with pytest.raises(ValueError, match="all set or all None"):
        DiskConfig("pvscsi", None, False, "none")


def test_every_section_is_known_without_importing_its_module_first() -> None:
    """Sections come from stormatrix.registry's explicit list, not from modules registering themselves on
    import: a fresh interpreter that imports only the registry knows [qemu], [proxmox], [vmware], [winrm] and
    [suite], and an unknown section is still refused with the list."""
    import subprocess
    import sys

    code = (
        "from stormatrix.registry import sections, spec_from_dict\n"
        "from stormatrix.core.errors import MatrixError\n"
        "print(sorted(sections()))\n"
        "raw = {'matrix': {'controllers': ['sata']}, 'workload': [{'name': 'w', 'rw': 'read', 'bs': '4k'}],\n"
        "       'qemu': {}}\n"
        "print(sorted(spec_from_dict(raw, 'm.toml').sections))\n"
        "try:\n"
        "    spec_from_dict({**raw, 'qemuu': {}}, 'm.toml')\n"
        "except MatrixError as exc:\n"
        "    print('refused', '[qemu]' in str(exc))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert {"qemu", "proxmox", "vmware", "winrm", "suite"} <= set(eval(lines[0]))  # noqa: S307 - our own print
    assert eval(lines[1]) == ["qemu"]  # noqa: S307
    assert lines[2] == "refused True"


@pytest.mark.parametrize("drivers", ['guest_drivers = ["viostor", "vioscsi"]', None])
def test_windows_matrix_with_virtio_win_plans_all_nine_proxmox_controllers(tmp_path: Path,
                                                                           drivers: str | None) -> None:
    """A Windows guest with the virtio-win drivers (declared, or left to the guest's driver store) plans every
    controller the Proxmox backend has; the ones whose in-box driver is unverified say so in a note."""
    from stormatrix.registry import backend_class

    controllers = sorted(backend_class("proxmox").controllers)
    run = 'name = "t"\nguest_os = "windows2022"\nbackend = "proxmox"' + (f"\n{drivers}" if drivers else "")
    text = (GOOD.replace('name = "t"', run)
            .replace('controllers = ["ide", "virtio-blk", "virtio-scsi-single", "pvscsi"]',
                     "controllers = [" + ", ".join(f'"{c}"' for c in controllers) + "]"))
    plan = expand(load_spec(write(tmp_path, text)), backend_controllers=controllers)
    assert len(controllers) == 9
    assert {c.disk.controller for c in plan.cells} == set(controllers)
    assert not [s for s in plan.skipped if "driver" in s.reason]
    noted = {n.split(":", 1)[0] for n in plan.notes if "unverified" in n}
    assert {"lsi", "megasas"} <= noted


@pytest.mark.parametrize("command", [["plan"], ["run", "-o", "RUN"]])
def test_a_suite_file_given_as_a_matrix_is_sent_to_the_suite_command(tmp_path: Path, command: list[str]) -> None:
    """The shipped local-fleet suite (a [suite] and a [fleet], no [matrix]) read by `plan` or `run`: the
    message says what the file is and which command reads it, not that [fleet] or [matrix] is wrong."""
    suite = Path(__file__).parents[2] / "harness" / "matrices" / "demo-suite.toml"
    argv = [str(tmp_path / a) if a == "RUN" else a for a in command]
    res = subprocess.run([sys.executable, "-m", "stormatrix", argv[0], str(suite), *argv[1:]],
                         capture_output=True, text=True)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert "[suite]: makes this a suite file" in res.stderr
    assert f"stormatrix suite plan {suite}" in res.stderr and f"stormatrix suite run {suite} -o RUN_DIR" in res.stderr
    assert not (tmp_path / "RUN").exists()
