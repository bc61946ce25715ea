"""Plain result files -> row dicts: fio JSON (clean or noisy), DiskSpd XML, and their perf CSV partners.

:func:`parse_files` is pure and picklable (a worker process runs it too): it reads each file once, as
bytes, and returns rows and problems.
"""

from __future__ import annotations

import codecs
import json
import math
from pathlib import Path
from typing import Any

from ...core import metrics
from ...core.errors import DataFileError
from . import diskspd, fio, perfcsv
from .checks import MEASURED, Problem, check_row, is_number
from .discover import MAX_RESULT_BYTES, SNIFF_BYTES, UNREAD, read_capped, sniff_text
from .fiorows import fio_rows
from .tidy import CPU_PER_MIB_UNIT

DISKSPD_NO_CLAT = "clat_p99_us: DiskSpd reports no completion-latency percentile (its p99 is total latency)"


# the decoder's own scanner (C), without its Python wrapper; set by JSONDecoder.__init__, which typeshed omits
_SCAN = json.JSONDecoder().scan_once  # type: ignore[attr-defined]  # (see above)
_JSON_SPACE = " \t\n\r"


def read_fio_bytes(raw: bytes, source: str) -> list[dict[str, Any]]:
    """Rows from the bytes of a fio output file.

    Fast path: UTF-8 straight into the JSON decoder's scanner (what fio writes: one JSON document from the
    first byte, a newline after it; ``json.loads`` of bytes would first guess among UTF-8/16/32, and its
    wrapper looks for whitespace with two regular expressions). Anything else goes the long way:
    ``json.loads`` of the bytes (UTF-16/32, BOMs, leading blanks), then :func:`read_fio_file` (noise lines,
    Windows encodings, damage), which explains what is wrong.
    """
    try:
        text = raw.decode("utf-8")
        doc, end = _SCAN(text, 0)
        if end != len(text) and text[end:].strip(_JSON_SPACE):
            raise ValueError("more than one JSON document")
    except (ValueError, RecursionError, StopIteration):
        try:
            doc = json.loads(raw)
        except (ValueError, RecursionError):
            return read_fio_file(decode(raw), source)
    return fio_rows(doc, source)


def read_fio_file(text: str, source: str) -> list[dict[str, Any]]:
    """Rows from one fio output file: clean JSON on the fast path, noisy client/server output otherwise."""
    head = text[:1024]
    if head.startswith("\x1f\ufffd\x08") or head.startswith("\x1f\x8b"):
        raise DataFileError(source, "gzip-compressed data, not fio output", "gunzip it first")
    if "\x00" in head or head.count("\ufffd") > len(head) // 10 + 1:
        raise DataFileError(source, "binary data, not fio's text output")
    try:
        doc = json.loads(text)
    except RecursionError:
        raise DataFileError(source, "JSON nested too deeply to be fio output") from None
    except ValueError as first:
        try:
            doc = fio.parse_fio_json(text, source)
        except DataFileError as exc:
            if text.lstrip().startswith("{") and exc.problem.startswith("no fio JSON document"):
                raise DataFileError(source, f"invalid or truncated JSON ({first})",
                                    "re-run fio or copy the complete file") from None
            kind = sniff_text(text[:SNIFF_BYTES], source) if exc.problem.startswith("no fio JSON document") else ""
            if kind in UNREAD and kind not in ("unknown", "empty", "perf-alone"):
                what, _, why = UNREAD[kind]  # the format found, and its own fix
                raise DataFileError(source, f"{what}, not a result file", why) from None
            raise
    return fio_rows(doc, source)


def decode(raw: bytes) -> str:
    """Text of a result file. UTF-16 with a BOM is what Windows PowerShell 5.1's ``>`` writes."""
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return raw.decode("utf-16", errors="replace")
    return raw.decode("utf-8-sig", errors="replace")


def attach_perf(row: dict[str, Any], csv_path: Path) -> None:
    text = csv_path.read_text(encoding="utf-8", errors="replace")
    host = perfcsv.host_metrics(perfcsv.parse_perf_csv(text, str(csv_path)))
    row.update(host)
    computed = metrics.per_mib(row.get("io_bytes"), host)
    row["cpu_per_mib"] = computed["cpu"]
    row["ctx_per_mib"] = computed["ctx"]
    row["cpu_per_mib_unit"] = CPU_PER_MIB_UNIT[host["cpu_metric"]]
    row["host_scope"] = f"perf stat: {csv_path.name}"


def parse_files(work: list[tuple[str, str, str | None]]) -> tuple[list[dict[str, Any]], list[Problem]]:
    """Rows and problems for (kind, path, perf CSV or None) items. Pure: runs in a worker process too."""
    rows: list[dict[str, Any]] = []
    problems: list[Problem] = []
    for kind, source, partner in work:
        try:
            raw = read_capped(source, MAX_RESULT_BYTES)
            if kind == "diskspd":
                file_rows = [diskspd.parse_diskspd_xml(decode(raw), source)]
                for row in file_rows:  # DiskSpd's percentile is its total latency; it has no completion p99
                    row["null_reasons"] = "; ".join(filter(None, (row.get("null_reasons"), DISKSPD_NO_CLAT)))
            else:
                if not raw or raw.isspace():
                    raise DataFileError(source, "the file is empty")
                file_rows = read_fio_bytes(raw, source)
            if partner is not None:
                for row in file_rows:
                    attach_perf(row, Path(partner))
                    check_row(row, partner if any(
                        is_number(row.get(k)) and (not math.isfinite(row[k]) or row[k] < 0)
                        for k in ("cpu_total", "ctx_switches", "cpu_user", "cpu_system")) else source)
            else:  # a fio row's measured values passed the strict summary's checks as they were read
                for row in file_rows:
                    check_row(row, source, () if kind == "fio" else MEASURED)
        except DataFileError as exc:
            problems.append(Problem(exc.path, exc.problem + (f". Fix: {exc.fix}" if exc.fix else "")))
            continue
        except OSError as exc:
            problems.append(Problem(source, f"cannot be read ({exc.strerror})"))
            continue
        rows += file_rows
    return rows, problems
