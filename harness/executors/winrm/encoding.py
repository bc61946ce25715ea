"""What the executor sends: command lines for cmd.exe, the module upload, and call scripts.

- Every command is ``powershell -NoProfile -NonInteractive -ExecutionPolicy Bypass -EncodedCommand
  <base64 UTF-16LE>`` run by the WinRM cmd shell. cmd.exe refuses command lines over 8191 characters,
  which holds a script of ~3000 characters, so the module is uploaded once per version in chunks
  (:func:`upload_scripts`), checked by SHA-256, and every later command is a small call script
  (:func:`call_script`). Upload lines stay :data:`CMD_MARGIN` characters under the limit: an exact fit
  leaves nothing for what the shell adds around the line.
- Parameters travel as data: a JSON document, base64-encoded, decoded in the guest and splatted.
  Nothing a user or a matrix file supplies is ever spliced into script text; function names are
  checked against a pattern. So ``'; Remove-Item -Recurse C:\\ #`` arrives as a string value.
- Every script starts with :data:`PRELUDE`, which makes the guest write UTF-8: powershell.exe writes
  redirected output in the OEM code page (437, 850, ...), which cannot carry a disk or power-plan
  name in most languages, and Windows PowerShell 5.1's ConvertTo-Json does not escape non-ASCII.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from ...core.errors import EnvironmentProblem

MODULE_NAME = "StormatrixGuest"
CMD_LIMIT = 8191  # cmd.exe: the longest command line it runs
CMD_MARGIN = 191  # upload lines stay at or under CMD_LIMIT - CMD_MARGIN (8000)
POWERSHELL_PREFIX = "powershell -NoProfile -NonInteractive -ExecutionPolicy Bypass -EncodedCommand "
_FUNCTION_RE = re.compile(r"^[A-Z][a-z]+-Stormatrix[A-Za-z]+$")

#: Stop on errors, no progress records, UTF-8 out (the console may have no code page to set: a
#: failure there must not stop the command, $OutputEncoding still covers piped native input).
PRELUDE = ("$ErrorActionPreference='Stop';$ProgressPreference='SilentlyContinue';"
           "$OutputEncoding=[Text.UTF8Encoding]::new($false);"
           "try{[Console]::OutputEncoding=$OutputEncoding}catch{};")
_PAYLOAD = "(Join-Path $d 'payload.b64')"


def default_module_dir() -> Path:
    """``windows/StormatrixGuest`` of this checkout (the package maps ``harness/`` to ``stormatrix``)."""
    return Path(__file__).resolve().parents[3] / "windows" / MODULE_NAME


def encode_command(script: str) -> str:
    """The cmd.exe command line that runs ``script``; refuses one that cmd.exe would refuse."""
    encoded = base64.b64encode(script.encode("utf-16-le")).decode("ascii")
    command = POWERSHELL_PREFIX + encoded
    if len(command) > CMD_LIMIT:
        raise ValueError(f"script of {len(script)} characters makes a {len(command)}-character command line; "
                         f"cmd.exe accepts {CMD_LIMIT}")
    return command


def _guest_dir_expr(digest: str) -> str:
    if not re.fullmatch(r"[0-9a-f]{12}", digest):
        raise ValueError(f"bad module digest {digest!r}")
    return f"$d=Join-Path (Join-Path ([IO.Path]::GetTempPath()) 'stormatrix') '{digest}';"


def max_chunk_chars(digest: str = "0" * 12) -> int:
    """The longest base64 chunk one upload command can carry and stay under ``CMD_LIMIT - CMD_MARGIN``."""
    fixed = len(_chunk_script("", digest))
    budget_chars = ((CMD_LIMIT - CMD_MARGIN - len(POWERSHELL_PREFIX)) // 4) * 3 // 2  # script chars that fit
    return budget_chars - fixed


def _chunk_script(chunk: str, digest: str) -> str:
    return PRELUDE + _guest_dir_expr(digest) + f"[IO.File]::AppendAllText({_PAYLOAD},'{chunk}')"


@dataclass(frozen=True)
class ModulePayload:
    """The guest module as one upload: a JSON list of {path, text}, base64, and its SHA-256."""

    b64: str
    sha256: str
    files: int

    @property
    def digest(self) -> str:
        return self.sha256[:12]

    @classmethod
    def from_dir(cls, module_dir: Path) -> "ModulePayload":
        entries = []
        for path in sorted(module_dir.rglob("*")):
            if path.is_file() and path.suffix in (".ps1", ".psm1", ".psd1"):
                rel = path.relative_to(module_dir.parent)
                entries.append({"path": list(rel.parts), "text": path.read_text(encoding="utf-8")})
        if not entries:
            raise EnvironmentProblem(f"no PowerShell files under {module_dir}: the guest module is missing")
        raw = json.dumps(entries, ensure_ascii=True, separators=(",", ":")).encode("ascii")
        return cls(b64=base64.b64encode(raw).decode("ascii"), sha256=hashlib.sha256(raw).hexdigest(),
                   files=len(entries))


def upload_scripts(payload: ModulePayload, chunk_chars: int | None = None) -> list[str]:
    """The scripts that put the module into the guest: reset, one per chunk, then unpack and verify.

    Each is small enough for cmd.exe once encoded. The chunks are base64 text, which has no quote, so
    they sit safely inside single-quoted PowerShell strings.
    """
    digest = payload.digest
    size = chunk_chars or max_chunk_chars(digest)
    if size <= 0:
        raise ValueError("chunk size must be positive")
    head = PRELUDE + _guest_dir_expr(digest)
    scripts = [head + f"$null=New-Item -ItemType Directory -Force -Path $d;[IO.File]::WriteAllText({_PAYLOAD},'')"]
    for i in range(0, len(payload.b64), size):
        scripts.append(_chunk_script(payload.b64[i:i + size], digest))
    scripts.append(head + (
        f"$b=[Convert]::FromBase64String([IO.File]::ReadAllText({_PAYLOAD}));"
        "$h=[BitConverter]::ToString([Security.Cryptography.SHA256]::Create().ComputeHash($b))"
        ".Replace('-','').ToLowerInvariant();"
        f"if($h -ne '{payload.sha256}'){{[Console]::Out.WriteLine('##stormatrix:error "
        f"{{\"message\":\"upload corrupted: sha256 '+$h+'\",\"error_id\":\"Stormatrix.UploadCorrupted\"}}');"
        "exit 3};"
        "$u=New-Object Text.UTF8Encoding $true;"
        "foreach($f in ([Text.Encoding]::UTF8.GetString($b)|ConvertFrom-Json)){"
        "$p=$d;foreach($s in $f.path){$p=Join-Path $p $s};"
        "$null=New-Item -ItemType Directory -Force -Path (Split-Path -Parent $p);"
        "[IO.File]::WriteAllText($p,$f.text,$u)};"
        f"Remove-Item -LiteralPath {_PAYLOAD} -Force;"
        "[Console]::Out.WriteLine('##stormatrix:uploaded')"))
    return scripts


def present_script(payload: ModulePayload) -> str:
    """Prints ``##stormatrix:present`` when this exact module version is already in the guest."""
    return (PRELUDE + _guest_dir_expr(payload.digest)
            + f"if(Test-Path -LiteralPath (Join-Path (Join-Path $d '{MODULE_NAME}') '{MODULE_NAME}.psd1'))"
            "{[Console]::Out.WriteLine('##stormatrix:present')}else{[Console]::Out.WriteLine('##stormatrix:absent')}")


def encode_parameters(params: Mapping[str, Any]) -> str:
    """Parameters as base64 of their JSON: the only form in which values enter a script."""
    for name in params:
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9]*", name):
            raise ValueError(f"bad parameter name {name!r}")
    raw = json.dumps(dict(params), ensure_ascii=True, separators=(",", ":")).encode("ascii")
    return base64.b64encode(raw).decode("ascii")


def call_script(function: str, params: Mapping[str, Any], digest: str) -> str:
    """A script that imports the uploaded module, splats the decoded parameters into ``function``
    and prints the result as ``##stormatrix:result <json>`` (or ``##stormatrix:error <json>``)."""
    if not _FUNCTION_RE.match(function):
        raise ValueError(f"{function!r} is not a StormatrixGuest function name")
    data = encode_parameters(params)
    return (PRELUDE + _guest_dir_expr(digest) + "try{"
            f"Import-Module (Join-Path (Join-Path $d '{MODULE_NAME}') '{MODULE_NAME}.psd1') -Force;"
            f"$j=[Text.Encoding]::UTF8.GetString([Convert]::FromBase64String('{data}'))|ConvertFrom-Json;"
            "$a=@{};foreach($p in $j.PSObject.Properties){$a[$p.Name]=$p.Value};"
            f"$r=& '{function}' @a;"
            "[Console]::Out.WriteLine('##stormatrix:result '+(ConvertTo-Json -InputObject $r -Depth 8 -Compress));"
            "exit 0"
            "}catch{$e=$_;"
            "[Console]::Out.WriteLine('##stormatrix:error '+(ConvertTo-Json -Compress -InputObject @{"
            "message=$e.Exception.Message;error_id=$e.FullyQualifiedErrorId;type=$e.Exception.GetType().FullName}));"
            "exit 1}")


def restart_script() -> str:
    """Reboot the guest from inside (the connection may drop before an answer)."""
    return PRELUDE + "Restart-Computer -Force"
