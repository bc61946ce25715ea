"""What a host name and a label are: one definition for the command-line options and the matrix keys
that take one (``--host``, ``[proxmox] host``, ``[winrm] host``, fio-server guests; ``--side``,
``--label``, ``[suite] side``). Each returns why a text is not one, in words, or None: the caller adds
where the port or the fix goes, which differs between an option and a key.
"""

from __future__ import annotations

import re

_HOST = re.compile(r"\[[0-9A-Fa-f:.]+\]|[0-9A-Fa-f:]*:[0-9A-Fa-f:.]+|[A-Za-z0-9][A-Za-z0-9_.-]{0,252}")


def shown_host(text: str) -> str:
    """``text`` as a message may repeat it: at most 80 characters, and without the credentials of a URL
    (``https://root:TOKEN@pve:8006`` -> ``https://<credentials hidden>@pve:8006``) — a host key is where a
    pasted URL brings its password along."""
    scheme, sep, rest = text.partition("://") if "://" in text else ("", "", text)
    authority, slash, _ = rest.partition("/")
    if "@" in authority:
        authority = "<credentials hidden>@" + authority.rpartition("@")[2]
    # a path or query may carry a token too (?token=...): shown only as being there
    return repr((scheme + sep + authority + ("/..." if slash else ""))[:80])


def host_problem(text: str) -> str | None:
    """Why ``text`` is not a host name or an IPv4/IPv6 address (brackets optional), in words, or None.

    The one definition of "a host" for ``--host`` and the matrix keys that name a host (``[proxmox]
    host``): a URL (the port and scheme have their own option or key), spaces, a name with a port. The
    caller adds where the port goes, which differs between an option and a key."""
    if "://" in text or "/" in text:
        return f"{shown_host(text)} is a URL, not a host name or IP address"
    if not _HOST.fullmatch(text):  # fullmatch: '$' would let a trailing newline through
        return (f"{shown_host(text)} is not a host name or IP address (letters, digits, '.', '-'; an IPv6 address "
                "as fe80::1 or [fe80::1]; no spaces)")
    bare = text[1:-1] if text.startswith("[") else text
    if ":" in bare:
        import ipaddress

        try:
            ipaddress.IPv6Address(bare.split("%")[0])
        except ValueError:
            return f"{shown_host(text)} looks like an IPv6 address but is not one (a host name with a port?)"
    return None


def label_problem(text: str) -> str | None:
    """Why ``text`` cannot be a data set's name (``--side``, ``--label``, ``[suite] side``), or None: it
    heads workbook columns and table rows, so one line of at most 100 printable characters, not empty."""
    if not text.strip():
        return "is empty"
    if any(not c.isprintable() for c in text) or len(text) > 100:
        return (f"{text[:60]!r}: a label is one line of at most 100 printable characters (it heads workbook "
                "columns); remove line breaks and control characters")
    return None
