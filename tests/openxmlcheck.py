"""Microsoft's Open XML SDK validator over workbooks (tests/openxml, built by scripts/install-openxml-check.sh).

:func:`validate` runs ``OpenXmlCheck`` (``OpenXmlValidator`` with Office 2016's file format rules) over
.xlsx files and returns every error it reports: the file, the part, the element's path and the
description. Excel reads a part by the schema's sequence and offers to "repair" a file that breaks it
(dropping the drawing); LibreOffice, which the render tests use, accepts such files, so only this check
sees it. ``tests/conftest.py`` runs it over every workbook the test session wrote.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from paths import ROOT

INSTALL = ROOT / "scripts" / "install-openxml-check.sh"
TOOL = ROOT / ".cache" / "openxml-check" / "bin" / "OpenXmlCheck.dll"


@dataclass(frozen=True)
class OpenXmlError:
    file: str
    part: str
    path: str
    id: str
    description: str

    def __str__(self) -> str:
        return f"{self.file}: {self.part} {self.path}: {self.description} ({self.id})"


def tool() -> Path:
    """The validator's DLL, built first when missing or older than its sources (RuntimeError naming the
    failed step)."""
    done = subprocess.run(["bash", str(INSTALL)], capture_output=True, text=True, timeout=600)
    if done.returncode != 0 or not TOOL.is_file():
        raise RuntimeError(f"the Open XML validator could not be built (bash {INSTALL}: exit {done.returncode}):\n"
                           f"{done.stderr}{done.stdout}")
    return TOOL


def is_package(path: Path) -> bool:
    """A zip package (what a workbook is); a test's stand-in bytes under an .xlsx name are not."""
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == b"PK\x03\x04"
    except OSError:
        return False


def validate(paths: Iterable[Path | str]) -> list[OpenXmlError]:
    """Every error the validator finds in ``paths`` (an unreadable package is one error too)."""
    files = [str(p) for p in paths]
    if not files:
        return []
    errors: list[OpenXmlError] = []
    dll = tool()
    env = dict(os.environ, DOTNET_CLI_TELEMETRY_OPTOUT="1", DOTNET_NOLOGO="1")
    for i in range(0, len(files), 200):  # (bounded command lines)
        chunk = files[i:i + 200]
        done = subprocess.run(["dotnet", str(dll), *chunk], capture_output=True, text=True, timeout=600, env=env)
        if done.returncode not in (0, 1, 2) or not done.stdout.rstrip().splitlines()[-1:][0].startswith(
                "openxml-check:"):
            raise RuntimeError(f"the Open XML validator failed (exit {done.returncode}): {done.stderr[-2000:]}")
        for line in done.stdout.splitlines():
            fields = line.split("\t")
            if len(fields) == 5:
                errors.append(OpenXmlError(*fields))
    return errors
