"""Which keys a resumed run may change is declared by each section's owner (``Section.may_change_on_resume``:
the spec for ``[run]``, each backend's and executor's package for its own section), and the runner's
resume check reads those declarations, for every registered section alike."""

from __future__ import annotations

import pytest

from stormatrix.registry import sections
from stormatrix.resume import run_differences
from stormatrix.schema import Field, Section
from stormatrix.spec import MATRIX_SECTION, RUN_SECTION

ALL = {"run": RUN_SECTION, **sections()}


def test_a_section_may_declare_only_its_own_keys() -> None:
    with pytest.raises(ValueError, match=r"\[toy\]: may_change_on_resume names hots, which are not its keys"):
        Section("toy", {"host": Field(str, "")}, may_change_on_resume=frozenset({"hots"}))


@pytest.mark.parametrize("name", sorted(n for n, s in ALL.items() if s.may_change_on_resume))
def test_a_declared_key_may_change_and_any_other_may_not(name: str) -> None:
    section = ALL[name]
    for key in sorted(section.may_change_on_resume):
        assert run_differences({name: {key: "before"}}, {name: {key: "after"}}) == [], key
    fixed = sorted(set(section.fields) - section.may_change_on_resume)
    assert fixed, f"[{name}] declares every key resumable: then no key says what a cell measures"
    for key in fixed:
        found = run_differences({name: {key: "before"}}, {name: {key: "after"}})
        assert found == [f'[{name}] {key}: was "before", now "after"'], key


def test_the_matrix_axes_are_never_resumable() -> None:
    assert not MATRIX_SECTION.may_change_on_resume
    assert run_differences({"matrix": {"aio": ["native"]}}, {"matrix": {"aio": ["threads"]}}) != []


def test_the_owners_declare_how_their_machines_are_reached() -> None:
    """What the resume rules said before they moved to the owners (docs/journal.md, Resuming)."""
    assert {"repeats", "retries", "seed", "guest_drivers"} <= RUN_SECTION.may_change_on_resume
    assert {"boot_ahead", "overlap"} <= ALL["qemu"].may_change_on_resume and "vcpus" not in ALL["qemu"].may_change_on_resume
    assert {"host", "token_secret_env", "timeout"} <= ALL["proxmox"].may_change_on_resume
    assert {"server", "password_env", "call_timeout"} <= ALL["vmware"].may_change_on_resume
    assert {"host", "password_env", "operation_timeout_seconds"} <= ALL["winrm"].may_change_on_resume
    assert "vmid" not in ALL["proxmox"].may_change_on_resume and "name" not in RUN_SECTION.may_change_on_resume
