"""Secrets by reference: the one way stormatrix reads a credential, and keeps it out of every output.

A matrix file (or a command line) never holds a secret. It names where the secret is: an environment
variable (``*_env``, by NAME) or a file (``*_file``, by PATH). This module checks those references when
the matrix is parsed, reads the secret when it is needed, and scrubs it from whatever leaves the
program (messages, log records, answers of other programs).

Why the checks look the way they do:

- A user who pastes the secret itself where a name or a path belongs must not get it printed back in
  the error: a terminal, a CI log or a bug report would then hold it. So a reference that is not a valid
  environment-variable name, or names no existing file, is described by its length and kind only
  (:func:`describe`), never quoted. A variable that is not set is named only when the name looks like a
  conventional one (``UPPER_CASE``); ``hunter2`` is a valid name but more likely a password.
- Both an environment variable and a file given for one credential is refused: one of them would be
  ignored without a word, and the user would not know which secret is in use.
- A section that needs a credential and names none is refused when the matrix is parsed (``plan``),
  not hours later when the first cell connects.
- A secret file readable by other users is used, with a warning (``chmod 600``), as ssh does for keys.
- Every secret read here is registered; :func:`scrub` replaces it, its URL-quoted and its base64 forms
  by ``***`` in any text, and :func:`install_log_scrubber` does the same for log records of the
  libraries that might echo it (proxmoxer, requests, urllib3, pywinrm).

Errors are :class:`~stormatrix.core.errors.MatrixError` (exit 2) naming the file, the ``[section] key``
and the fix; for a command-line option (no file) an :class:`~stormatrix.core.errors.InputError` naming the
option.
"""

from __future__ import annotations

import base64
import logging
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping
from urllib.parse import quote

from .core import oscompat
from .core.errors import InputError, MatrixError

log = logging.getLogger("stormatrix.secrets")

ENV_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: a name we may print when its variable is unset: the conventional form (FOO_BAR), not a word like a password
_CONVENTIONAL_ENV_NAME_RE = re.compile(r"[A-Z_][A-Z0-9_]*")


# --- describing a value without repeating it ----------------------------------------------------------

def describe(value: str) -> str:
    """``value`` as its length and kind, never its text: ``a 36-character value of letters, digits and
    '-'``. Enough for the user to recognise what they pasted, nothing for a log reader to use."""
    kinds = []
    if any(c.isalpha() for c in value):
        kinds.append("letters")
    if any(c.isdigit() for c in value):
        kinds.append("digits")
    others = sorted({c for c in value if not c.isalnum()})
    if others:
        shown = [repr(c) if c.isprintable() and c != " " else ("spaces" if c == " " else "control characters")
                 for c in others[:4]]
        kinds.append(", ".join(dict.fromkeys(shown)) + (" and more" if len(others) > 4 else ""))
    kind = (" of " + (", ".join(kinds[:-1]) + " and " + kinds[-1] if len(kinds) > 1 else kinds[0])) if kinds else ""
    return f"a {len(value)}-character value{kind}"


def env_name_problem(value: str) -> str | None:
    """Why ``value`` cannot be an environment-variable name (without repeating it), or None."""
    if ENV_NAME_RE.fullmatch(value):
        return None
    return (f"{describe(value)} that is not an environment-variable name — it looks like the secret itself; "
            "put the secret in a variable or a file and give its NAME here")


def file_problem(value: str) -> str | None:
    """Why ``value`` cannot be the path of a secret file (without repeating it unless it is a real path), or None."""
    try:
        path = Path(value).expanduser()
        if path.is_file():
            return None
        if path.exists():
            return f"{value!r} is not a regular file"  # an existing path is no secret: name it
    except (OSError, ValueError, RuntimeError):  # NUL bytes, a ~user that does not exist
        pass
    return (f"{describe(value)} that names no existing file — if it is the secret itself, put it in a file "
            "(chmod 600) and give the file's PATH here")


def check_env_name(value: str) -> None:
    """A :class:`~stormatrix.spec.Field` ``check`` for ``*_env`` keys: raises ValueError without the value."""
    if value:
        problem = env_name_problem(value)
        if problem:
            raise ValueError(problem)


def check_secret_file(value: str) -> None:
    """A :class:`~stormatrix.spec.Field` ``check`` for ``*_file`` keys: raises ValueError without the value."""
    if value:
        problem = file_problem(value)
        if problem:
            raise ValueError(problem)


def _safe_env_name(name: str) -> str:
    """The variable's name when printing it cannot leak a pasted secret; else its description."""
    if _CONVENTIONAL_ENV_NAME_RE.fullmatch(name):
        return name
    return f"named by {describe(name)}"


# --- a reference, checked ---------------------------------------------------------------------------------

def config_error(path: str, where: str, problem: str, fix: str) -> InputError:
    """A :class:`MatrixError` (file: key: problem. Fix: fix) when the input came from a matrix file
    ``path``; an :class:`InputError` of the same form naming only ``where`` (an option) when not."""
    if path:
        return MatrixError(path, where, problem, fix)
    return InputError(f"{where}: {problem}. Fix: {fix}")


@dataclass(frozen=True)
class SecretRef:
    """Where one credential is: an environment variable or a file (exactly one), and which keys said so.

    ``path`` is the matrix file ("" for command-line options); ``section`` like ``proxmox`` (""
    for options); ``what`` names the credential in messages (``the Proxmox token secret``)."""

    env: str
    file: str
    env_key: str
    file_key: str
    what: str
    path: str = ""
    section: str = ""

    def _where(self, key: str) -> str:
        return f"[{self.section}] {key}" if self.section else key

    @property
    def source(self) -> str:
        """Where the secret comes from, safe to print and to journal (never the secret)."""
        if self.env:
            return f"environment variable {_safe_env_name(self.env)}"
        return f"file {self.file}"


def reference(values: Mapping[str, Any], *, env_key: str, file_key: str, what: str, path: str = "",
              section: str = "") -> SecretRef:
    """The checked reference that ``values[env_key]``/``values[file_key]`` make.

    Refused (exit 2): both set, neither set, a name that is no variable name, a path that is no file.
    Nothing is read yet: this runs when the matrix is planned, where the variable may not be set."""
    env = str(values.get(env_key) or "")
    file = str(values.get(file_key) or "")
    ref = SecretRef(env, file, env_key, file_key, what, path, section)
    both = f"{ref._where(env_key)} / {file_key}"
    if env and file:
        raise config_error(path, both, f"both are set, so {what} would come from one and the other would be silently "
                           "ignored", f"keep exactly one: {env_key} (an environment variable's NAME) or {file_key} "
                           "(a file's PATH), and remove the other")
    if not env and not file:
        raise config_error(path, both, f"neither is set: there is no reference to {what}",
                           f"set {env_key} = \"NAME\" (an environment variable holding it) or {file_key} = \"PATH\" "
                           "(a file holding it, chmod 600); never the secret itself")
    if env:
        problem = env_name_problem(env)
        if problem:
            raise config_error(path, ref._where(env_key), problem,
                               f"export the secret as a variable (export NAME=...) and write {env_key} = \"NAME\"")
    else:
        problem = file_problem(file)
        if problem:
            raise config_error(path, ref._where(file_key), problem,
                               f"write the secret into a file readable only by you and give its path as {file_key}")
    return ref


def resolve(ref: SecretRef, *, environ: Mapping[str, str] | None = None, strip: bool = True) -> "Secret":
    """Read the secret ``ref`` points at. A file gives its first line; ``strip`` removes surrounding
    whitespace (right for API tokens; a password may end in a space, so WinRM passes False).
    The secret is registered for :func:`scrub` before this returns."""
    environ = os.environ if environ is None else environ
    if ref.env:
        value = environ.get(ref.env)
        if value is None or not value.strip():
            name = _safe_env_name(ref.env)
            state = "is not set" if value is None else "is empty"
            raise config_error(ref.path, ref._where(ref.env_key),
                               f"{ref.what} was to come from the environment variable "
                               f"{name}, which {state} in the shell that runs stormatrix",
                               "export it there before running stormatrix (or use "
                               f"{ref.file_key} for a file); if what you wrote is the secret itself, "
                               "put it in a variable and give the variable's NAME")
        secret = value.strip() if strip else value
    else:
        file = Path(ref.file).expanduser()
        try:
            text = file.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise config_error(ref.path, ref._where(ref.file_key),
                               f"the file {ref.file} holding {ref.what} is not UTF-8 text",
                               "write the secret as one line of text") from None
        except OSError as exc:
            raise config_error(ref.path, ref._where(ref.file_key),
                               f"the file {ref.file} holding {ref.what} cannot be read ({exc.strerror})",
                               "check the path and that this user can read it") from None
        lines = text.splitlines()
        secret = lines[0] if lines else ""
        if strip:
            secret = secret.strip()
        if not secret.strip():
            raise config_error(ref.path, ref._where(ref.file_key), f"the file {ref.file} holding {ref.what} is empty "
                               "(its first line is blank)", "write the secret on the file's first line")
        try:
            mode = file.stat().st_mode
        except OSError:
            mode = 0
        if oscompat.others_may_read(mode):  # (on Windows the mode says nothing of the file's ACL)
            log.warning("%s: the file %s holding %s is readable by other users (mode %o); chmod 600 it",
                        ref._where(ref.file_key), ref.file, ref.what, mode & 0o777)
    register(secret)
    return Secret(secret)


def check_option(option: str, value: str, *, kind: str) -> None:
    """A command-line option that names a secret (``--password-env``/``--password-file``), checked
    like a matrix key: ``kind`` is ``"env"`` or ``"file"``. Raises InputError without the value."""
    problem = env_name_problem(value) if kind == "env" else file_problem(value)
    if problem:
        fix = ("export the secret as a variable and give its NAME" if kind == "env"
               else "write the secret into a file readable only by you and give its PATH")
        raise config_error("", option, problem, fix)


# --- the secret itself, and scrubbing ---------------------------------------------------------------------

class Secret:
    """A secret that never prints itself: ``str``, ``repr`` and f-strings give ``***``; pickling is refused."""

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

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(("Secret", self._value))

    def __reduce__(self) -> Any:  # pickling would write the value somewhere: refuse
        raise TypeError("a Secret cannot be pickled")


_LOCK = threading.Lock()
_FORMS: set[str] = set()  # every registered secret in each form it may appear in


def forms(value: str) -> set[str]:
    """The ways ``value`` may appear in text: as is, URL-quoted (a query string, a form body) and base64
    (HTTP Basic auth, a PowerShell -EncodedCommand's payload)."""
    return {value, quote(value, safe=""), base64.b64encode(value.encode()).decode()}


def register(secret: str | Secret) -> None:
    """Remember ``secret`` so that :func:`scrub` removes it. Values under 4 characters are not
    registered: replacing ``ab`` everywhere would mangle every message and protect nothing."""
    value = secret.reveal() if isinstance(secret, Secret) else secret
    if value and len(value) >= 4:
        with _LOCK:
            _FORMS.update(f for f in forms(value) if len(f) >= 4)


def redact(text: str, secrets: Iterable[Secret | str | None] = ()) -> str:
    """``text`` with ``secrets`` and every registered secret (each in every form) replaced by ``***``."""
    extra: set[str] = set()
    for s in secrets:
        value = s.reveal() if isinstance(s, Secret) else s
        if value:
            extra |= forms(value)
    with _LOCK:
        every = _FORMS | extra
    for form in sorted(every, key=len, reverse=True):  # longest first: a form may contain another
        if form:
            text = text.replace(form, "***")
    return text


def scrub(text: str) -> str:
    """``text`` with every registered secret replaced: the last line of defence for messages."""
    return redact(text)


class RedactingFilter(logging.Filter):
    """Scrubs the registered secrets (and ``secrets``) from log records before any handler sees them."""

    def __init__(self, secrets: Iterable[Secret | str] = ()) -> None:
        super().__init__()
        self.secrets = list(secrets)

    def filter(self, record: logging.LogRecord) -> bool:
        if not self.secrets and not _FORMS:
            return True
        try:
            message = record.getMessage()
        except Exception:  # any failure: a malformed record is not ours to fix; let logging report it
            return True
        cleaned = redact(message, self.secrets)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True


_LOGGERS = ("stormatrix", "proxmoxer", "urllib3", "requests", "winrm", "requests_ntlm")


def install_log_scrubber() -> None:
    """A :class:`RedactingFilter` on the root handlers and on the loggers of libraries that may log a
    request (with its headers or body). Idempotent."""
    root = logging.getLogger()
    targets: list[logging.Filterer] = list(root.handlers)
    targets += [logging.getLogger(name) for name in _LOGGERS]
    for target in targets:
        if not any(isinstance(f, RedactingFilter) and not f.secrets for f in target.filters):
            target.addFilter(RedactingFilter())
