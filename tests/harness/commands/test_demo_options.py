"""`stormatrix demo` options that cannot run are exit 2 before anything boots: --guests outside 2-4 or
without --suite, an -o that is a file (left untouched).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from clirun import cli


# --- demo: --guests outside 2-4 and an -o that is a file are exit 2 before anything boots --------------


@pytest.mark.parametrize("guests", ["0", "1", "5", "-2", "two"])
def test_demo_suite_guests_outside_2_to_4_is_exit_2(guests: str, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    code, text = cli(["demo", "--suite", "--guests", guests, "-o", str(tmp_path / "d")], capsys)
    assert code == 2 and "--guests" in text and "2 to 4" in text and "Traceback" not in text
    assert not (tmp_path / "d").exists()


def test_demo_guests_without_suite_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, text = cli(["demo", "--guests", "3", "-o", str(tmp_path / "d")], capsys)
    assert code == 2 and "--guests" in text and "--suite" in text and not (tmp_path / "d").exists()


@pytest.mark.parametrize("suite", [[], ["--suite"]])
def test_demo_output_that_is_a_file_is_exit_2_and_untouched(suite: list[str], tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "d"
    target.write_text("keep me")
    code, text = cli(["demo", *suite, "-o", str(target)], capsys)
    assert code == 2 and f"-o {target} is a file" in text and "Fix:" in text and "Traceback" not in text
    assert target.read_text() == "keep me"
