"""The CLI in-process, as a test sees it: (exit code, stdout + stderr), argparse's own exits included."""

from __future__ import annotations

import pytest

from stormatrix.cli import main


def cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own exit for a bad option value
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out + out.err
