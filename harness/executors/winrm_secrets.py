"""Secrets of the WinRM executor: the password, held so it never prints itself, and scrubbed from
anything that is logged or raised.

The password comes from an environment variable or a file, never from argv (it would sit in the
shell history and in ``ps`` output).
"""

from __future__ import annotations

import base64
import logging
import os
from pathlib import Path
from typing import Any, Iterable, Mapping

from ..core.errors import InputError

log = logging.getLogger("stormatrix.executor.winrm")


class Secret:
    """A password that never prints itself: ``str``, ``repr`` and f-strings give ``***``."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    def __str__(self) -> str:
        return "***"

    def __format__(self, spec: str) -> str:
        return "***"

    def __reduce__(self) -> Any:  # pickling would write the value somewhere: refuse
        raise TypeError("a Secret cannot be pickled")


def redact(text: str, secrets: Iterable[Secret | str | None]) -> str:
    """``text`` with every secret (and its base64 and URL-quoted forms) replaced by ``***``."""
    from urllib.parse import quote

    out = text
    for s in secrets:
        value = s.reveal() if isinstance(s, Secret) else s
        if not value:
            continue
        forms = {value, quote(value, safe=""), base64.b64encode(value.encode()).decode()}
        for form in sorted(forms, key=len, reverse=True):
            out = out.replace(form, "***")
    return out


class RedactingFilter(logging.Filter):
    """Scrubs secrets from log records (message and arguments) before any handler sees them."""

    def __init__(self, secrets: Iterable[Secret]) -> None:
        super().__init__()
        self.secrets = list(secrets)

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        record.msg = redact(message, self.secrets)
        record.args = ()
        return True


def load_password(*, password_env: str = "", password_file: str = "",
                  environ: Mapping[str, str] | None = None) -> Secret:
    """The WinRM password from an environment variable or a file (first line), never from argv."""
    environ = os.environ if environ is None else environ
    if bool(password_env) == bool(password_file):
        raise InputError("give exactly one of password_env (an environment variable name) or password_file "
                         "(a file holding the password); passwords are never taken on the command line")
    if password_env:
        if password_env not in environ:
            raise InputError(f"environment variable {password_env} is not set. Fix: export {password_env}=... "
                             "before running stormatrix")
        value = environ[password_env]
    else:
        path = Path(password_file).expanduser()
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise InputError(f"password file {path} cannot be read ({exc.strerror}). Fix: check the path "
                             "and that it is readable by this user") from None
        value = text.splitlines()[0] if text else ""
        mode = path.stat().st_mode
        if mode & 0o077:
            log.warning("password file %s is readable by other users (mode %o); chmod 600 it", path, mode & 0o777)
    if not value:
        raise InputError("the WinRM password is empty. Fix: set it in the environment variable or file")
    return Secret(value)

