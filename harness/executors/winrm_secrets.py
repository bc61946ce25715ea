"""The WinRM password: read through :mod:`stormatrix.secrets` (the one place that resolves secrets by
environment variable or file and keeps them out of every output), held as a :class:`Secret`.

The password comes from an environment variable or a file, never from argv (it would sit in the
shell history and in ``ps`` output). Unlike an API token it is not stripped: a password may end in a
space.
"""

from __future__ import annotations

from typing import Mapping

from ..secrets import RedactingFilter, Secret, redact, reference, resolve

__all__ = ["RedactingFilter", "Secret", "load_password", "redact"]


def load_password(*, password_env: str = "", password_file: str = "",
                  environ: Mapping[str, str] | None = None, path: str = "") -> Secret:
    """The WinRM password from the environment variable or the file (first line) the section names."""
    ref = reference({"password_env": password_env, "password_file": password_file}, env_key="password_env",
                    file_key="password_file", what="the WinRM password", path=path, section="winrm")
    return resolve(ref, environ=environ, strip=False)
