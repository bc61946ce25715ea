"""`stormatrix guest check` options are checked before connecting: a controller the guest module does
not know, a timeout of hours; the controllers it knows are taken in their canonical spelling.
"""

from __future__ import annotations


import pytest

from clirun import cli


# --- guest check options are checked before connecting ------------------------------------------------------

GUEST = ["guest", "check", "--host", "127.0.0.1", "--port", "1", "--username", "u", "--password-env", "SMX_PW",
         "--disk-serial", "S1", "--timeout", "1"]


@pytest.mark.parametrize("opt,value,says", [("--controller", "bogus", "not a controller"),
                                            ("--controller", "virtio-scsi-singel", "not a controller"),
                                            ("--timeout", "3600000", "hours"), ("--timeout", "86400", "hours")])
def test_guest_check_options_are_refused_before_connecting(opt: str, value: str, says: str,
                                                           monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("SMX_PW", "pw")
    from stormatrix.executors.winrm import executor as winrm

    def never(*a: object, **k: object) -> None:
        raise AssertionError("connected before checking the options")

    monkeypatch.setattr(winrm.WinRMExecutor, "wait_ready", never)
    argv = list(GUEST)
    if opt in argv:
        argv[argv.index(opt) + 1] = value
    else:
        argv += [opt, value]
    code, text = cli(argv, capsys)
    assert code == 2 and opt in text and says in text


@pytest.mark.parametrize("value,canonical", [("virtio-scsi", "virtio-scsi-pci"), ("VIRTIO-BLK", "virtio-blk"),
                                             ("virtio", "virtio-blk"), ("pvscsi", "pvscsi"), ("nvme", "nvme")])
def test_guest_check_takes_the_controllers_the_guest_module_knows(value: str, canonical: str) -> None:
    from stormatrix.cli import build_parser

    args = build_parser().parse_args(GUEST + ["--controller", value, "--timeout", "10800"])
    assert args.controller == canonical and args.timeout == 10800
