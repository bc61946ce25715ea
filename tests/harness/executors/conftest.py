"""The fake Windows guests' shared %TEMP%: the executor uploads its guest module there once per session.

An upload is ~40 pwsh commands (a minute or more of CI time); every guest of test_winrm_standin.py and
test_winrm_e2e.py shares one %TEMP% (:func:`guest_temp`), so only the first command of the session
uploads and the others find this exact module version and only check it. That first upload is done
here, into the empty %TEMP%, and what it did is kept (:class:`~tests.standins.wsman.FirstUpload`) for
the test of the upload itself (test_winrm_standin.test_upload_in_chunks_with_a_margin_then_call).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from winrm.protocol import Protocol

from stormatrix.executors.winrm import executor as w
from tests.standins.wsman import FakeWindowsGuest, FirstUpload

PASSWORD = "first-upload pa$$'word"
#: a generous limit, not a measurement: ~40 pwsh starts, each several seconds on a loaded 2-core machine
DEADLINE = 900


@pytest.fixture(scope="session")
def first_upload(tmp_path_factory: pytest.TempPathFactory) -> FirstUpload:
    temp = tmp_path_factory.mktemp("guest-temp")
    assert not any(temp.iterdir())
    with FakeWindowsGuest(tmp_path_factory.mktemp("first-upload") / "guest", password=PASSWORD, temp=temp) as g:
        def plaintext(s: w.WinRMSettings) -> Any:  # Basic over HTTP: what the stand-in speaks without TLS
            assert s.password is not None
            return Protocol(g.server.url, transport="plaintext", username=s.username, password=s.password.reveal(),
                            read_timeout_sec=s.read_timeout_seconds, operation_timeout_sec=s.operation_timeout_seconds)

        section = {"host": "127.0.0.1", "username": "Administrator", "password_env": "PW",
                   "disk_serial": "STORMATRIX01", "operation_timeout_seconds": 2, "read_timeout_seconds": 10,
                   "command_timeout_seconds": 120, "connect_retries": 2}
        ex = w.WinRMExecutor([], {"winrm": section}, protocol_factory=plaintext, environ={"PW": PASSWORD},
                             sleep=lambda s: time.sleep(min(s, 0.05)))
        try:
            facts = ex.wait_ready(time.monotonic() + DEADLINE)
            return FirstUpload(temp, facts, list(g.server.command_lines), list(g.server.actions))
        finally:
            ex.close()


@pytest.fixture(scope="session")
def guest_temp(first_upload: FirstUpload) -> Path:
    """One %TEMP% for every fake Windows guest of the session, holding the uploaded guest module."""
    return first_upload.temp
