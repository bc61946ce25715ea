"""The fio result the tiny guest sends back: gzipped, base64 between RESULT and END, checked against the plain
output's length and SHA-256 (harness/guest/init); a plain one from an image built before is read too."""

from __future__ import annotations

import base64
import gzip
import hashlib
import time
from pathlib import Path

import pytest
from standins.agent import AgentFaults, AgentStandin

from stormatrix.core.errors import WorkloadFailed
from stormatrix.core.model import Cell, DiskConfig, Timing, Workload
from stormatrix.core.scope import GuestEndpoint
from stormatrix.executors.localagent import LocalAgentExecutor, decode_result

DATA = Path(__file__).resolve().parents[2] / "data" / "fio"
OUTPUT = (DATA / "fio3_randrw70_bs8k_qd8_numjobs2_group.json").read_bytes()
META = {"rc": "0", "bytes": str(len(OUTPUT)), "sha256": hashlib.sha256(OUTPUT).hexdigest()}


def test_gzip_and_plain_results_decode_to_the_same_output() -> None:
    zipped = base64.encodebytes(gzip.compress(OUTPUT))
    plain = base64.encodebytes(OUTPUT)
    assert decode_result(zipped, {**META, "encoding": "gzip"}, "c") == OUTPUT
    assert decode_result(plain, META, "c") == OUTPUT
    assert len(zipped) * 3 < len(plain)  # what the serial port is spared


@pytest.mark.parametrize("body, meta, text", [
    (base64.encodebytes(gzip.compress(OUTPUT))[:200], {**META, "encoding": "gzip"}, "SHA-256"),  # cut short
    (b"!!not base64!!", {**META, "encoding": "gzip"}, "SHA-256"),
    (base64.encodebytes(OUTPUT), {**META, "encoding": "gzip"}, "SHA-256"),  # said gzip, sent plain
    (base64.encodebytes(gzip.compress(OUTPUT)), {**META, "encoding": "gzip", "bytes": "12"}, "SHA-256"),
    (base64.encodebytes(OUTPUT), {**META, "encoding": "zstd"}, "rebuild the guest image"),
])
def test_a_damaged_or_unknown_result_is_a_failed_workload_naming_the_cell(body: bytes, meta: dict[str, str],
                                                                           text: str) -> None:
    with pytest.raises(WorkloadFailed, match=text) as info:
        decode_result(body, meta, "ide/native#1")
    assert info.value.cell == "ide/native#1"


class _Window:
    def measure_started(self) -> None: ...

    def measure_ended(self) -> None: ...


@pytest.mark.parametrize("encoding", ["gzip", "plain"])
def test_the_executor_reads_either_encoding_from_the_agent(tmp_path: Path, encoding: str) -> None:
    sock = tmp_path / "a.sock"
    agent = AgentStandin(sock, AgentFaults(encoding=encoding), fio_output=OUTPUT.decode())
    ex = LocalAgentExecutor([GuestEndpoint("local-agent", str(sock))])
    cell = Cell(DiskConfig("virtio-blk", "native", False, "none"), Workload("w", "randrw", 8192, 8, 1), 1)
    try:
        ex.wait_ready(time.monotonic() + 5)
        result = ex.run(cell, Timing(0, 1), _Window())
    finally:
        ex.close()
        agent.close()
    assert result.raw == OUTPUT.decode()
