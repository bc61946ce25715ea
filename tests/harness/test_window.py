"""The measurement window (window.py): what it reports, it reports through one result, frozen once read."""

from __future__ import annotations

import pytest

from stormatrix.window import Window


class _Backend:
    """Only what a Window asks of a backend."""

    def window_opened(self) -> None:
        pass

    def window_closed(self) -> None:
        return None

    def scope(self) -> list[object]:
        return []

    def blockstats(self) -> None:
        return None


def test_a_window_reports_through_one_result() -> None:
    window = Window(_Backend(), lambda scope: None)  # type: ignore[arg-type]
    assert not window.result().complete  # never opened
    window.measure_started()
    window.measure_ended()
    result = window.result()
    assert result.complete and result.t_start is not None and result.seconds >= 0 and result.vms == ()
    with pytest.raises(AttributeError):
        result.host = {}  # type: ignore[misc]
