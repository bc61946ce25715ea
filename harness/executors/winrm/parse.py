"""The output protocol: what the guest prints and how it becomes a result or a typed error.

The guest prints ``##stormatrix:result <json>`` or ``##stormatrix:error <json>`` (error id, message)
on stdout, and the workload functions ``##stormatrix:engine-started`` / ``engine-ended`` markers;
stray output around them is ignored. powershell.exe writes errors to a redirected stderr as CLIXML,
which :func:`clean_clixml` turns back into text.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import Any, Iterable

import xmltodict

from ...core.errors import RemoteCommandError
from ...secrets import Secret, redact

RESULT_MARK = "##stormatrix:result "
ERROR_MARK = "##stormatrix:error "
STARTED_MARK = "##stormatrix:engine-started"


def clean_clixml(stderr: str) -> str:
    """powershell.exe writes errors to a redirected stderr as CLIXML; keep the text of its <S> nodes."""
    if not stderr.startswith("#< CLIXML"):
        return stderr
    body = stderr.split("\n", 1)[1] if "\n" in stderr else ""
    try:
        root = ET.fromstring(body)
    except ET.ParseError:
        return stderr
    parts = [(node.text or "") for node in root.iter() if node.tag.endswith("}S") or node.tag == "S"]
    return "".join(parts).replace("_x000D__x000A_", "\n").strip() or stderr


@dataclass
class CommandOutput:
    exit_code: int
    stdout: str
    stderr: str


def parse_call_output(out: CommandOutput, function: str, secrets: Iterable[Secret] = ()) -> Any:
    """The function's result, or a typed error with the guest's message, stdout and stderr."""
    secrets = list(secrets)
    result = error = None
    for line in out.stdout.splitlines():
        line = line.rstrip("\r")
        if line.startswith(RESULT_MARK):
            result = line[len(RESULT_MARK):]
        elif line.startswith(ERROR_MARK):
            error = line[len(ERROR_MARK):]
    stdout, stderr = redact(out.stdout, secrets), redact(clean_clixml(out.stderr), secrets)
    if error is not None or out.exit_code != 0:
        info: dict[str, Any] = {}
        if error is not None:
            try:
                info = json.loads(error)
            except json.JSONDecodeError:
                info = {"message": error}
        message = info.get("message") or (stderr.strip() or stdout.strip() or "no output")
        raise RemoteCommandError(f"{function} failed in the guest (exit {out.exit_code}): "
                                 f"{redact(str(message), secrets)}",
                                 exit_status=out.exit_code, stdout=stdout, stderr=stderr,
                                 error_id=info.get("error_id", ""), function=function)
    if result is None:
        raise RemoteCommandError(f"{function} printed no result line", exit_status=out.exit_code,
                                 stdout=stdout, stderr=stderr, function=function)
    try:
        return json.loads(result) if result.strip() else None
    except json.JSONDecodeError as exc:
        raise RemoteCommandError(f"{function} printed a result that is not JSON ({exc})", exit_status=out.exit_code,
                                 stdout=stdout, stderr=stderr, function=function) from None


def diskspd_document(raw: str) -> dict[str, Any]:
    """DiskSpd's ``-Rxml`` document as plain data (xmltodict: children by tag, lists when repeated,
    attributes as ``@name``); raises ``xml.parsers.expat.ExpatError`` for text that is not XML."""
    return dict(xmltodict.parse(raw))


@dataclass
class CheckResult:
    name: str
    block: str
    result: str  # Passed | Failed | Skipped | NotRun
    message: str = ""


@dataclass
class CheckReport:
    """The guest validation: one entry per check; ``error`` when the suite could not run at all."""

    host: str
    passed: bool
    tests: list[CheckResult] = field(default_factory=list)
    runner: str = ""
    error: str = ""

    def table(self) -> str:
        """A per-check pass/fail table for the terminal; every failure with its message (the fix)."""
        rows = [(t.result.upper(), f"{t.block} / {t.name}", t.message) for t in self.tests]
        width = max([len(r[1]) for r in rows] + [5])
        lines = [f"guest check of {self.host}" + (f" ({self.runner})" if self.runner else "")]
        for status, name, message in rows:
            lines.append(f"  {status:<7} {name:<{width}}" + (f"  {message}" if message and status != "PASSED" else ""))
        if self.error:
            lines.append(f"  ERROR   {self.error}")
        failed = sum(1 for t in self.tests if t.result == "Failed")
        skipped = sum(1 for t in self.tests if t.result == "Skipped")
        lines.append(f"{len(self.tests) - failed - skipped} passed, {failed} failed, {skipped} skipped"
                     + ("" if self.passed else " -> NOT READY"))
        return "\n".join(lines)
