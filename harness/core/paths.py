"""What kind of thing a path is, said in words, before anything opens it.

Opening a FIFO blocks until a writer comes; reading /dev/zero never ends; a symlink loop or a directory
fails with an errno a user cannot act on. Every input the commands read by name (a matrix, a journal, a
secret file, a CA bundle) is looked at with :func:`input_problem` first, and read with
:func:`read_bounded`, so the answer is one sentence and exit 2, never a hang or a traceback.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path


def kind(mode: int) -> str:
    """A file type in words: ``a directory``, ``a named pipe (FIFO)``, ``a character device``..."""
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a named pipe (FIFO)"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def input_problem(path: str | Path) -> str | None:
    """Why ``path`` cannot be read as a regular file (without opening it), or None when it can be."""
    text = str(path)
    if not text.strip():
        return "is an empty path"
    try:
        st = os.stat(text)
    except FileNotFoundError:
        try:
            os.lstat(text)
        except OSError:
            return "does not exist"
        return "is a symbolic link to nothing (its target does not exist)"
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "is a symbolic link loop (it points back at itself)"
        if exc.errno == errno.ENOTDIR:
            return "is under something that is not a directory"
        return f"cannot be looked at ({exc.strerror})"
    except ValueError:  # a NUL byte in the name
        return "is not a usable path (it contains a NUL character)"
    if not stat.S_ISREG(st.st_mode):
        return f"is {kind(st.st_mode)}, not a regular file"
    return None


def disk_image_problem(path: str | Path) -> str | None:
    """Why ``path`` cannot hold a VM's test disk, or None: it must be a regular file (a raw image) or a
    block device. A character device such as /dev/zero "works" for QEMU and measures nothing; a FIFO
    or a directory fails only when the VM starts, after plan said yes."""
    problem = input_problem(path)
    if problem is None:
        return None
    try:
        if stat.S_ISBLK(os.stat(str(path)).st_mode):
            return None
    except (OSError, ValueError):
        return problem
    return problem.replace("not a regular file", "not a raw image file or a block device")


def executable_problem(path: str | Path) -> str | None:
    """Why ``path`` cannot be run as a program (an executable regular file), or None, without running it:
    a directory or a file without the x bit fails at exec with an errno, after plan said yes."""
    problem = input_problem(path)
    if problem:
        return problem.replace("not a regular file", "not an executable file")
    if not os.access(str(path), os.X_OK):
        return "is a file this user may not execute (no x permission)"
    return None


class TooLarge(Exception):
    """The file is larger than the reader allows; ``size`` is how many bytes were seen."""

    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.size = size


_O_READ = os.O_RDONLY | getattr(os, "O_BINARY", 0)  # (Windows: no newline translation)


def read_bounded(path: str | Path, limit: int) -> bytes:
    """The bytes of a file, refusing (:class:`TooLarge`) one longer than ``limit`` without reading all of it
    (a device or a runaway file must not exhaust memory). OSError passes through; call
    :func:`input_problem` first for a clear message.

    A plain descriptor, not a file object: a regular file is one ``fstat`` and one ``read`` of its size (and a
    byte more, to see one that grew since), where ``open().read()`` adds buffering, a terminal check and
    a second ``fstat`` to every one of the thousands of small files ingest reads.
    """
    fd = os.open(path, _O_READ)
    try:
        st = os.fstat(fd)
        size = st.st_size if stat.S_ISREG(st.st_mode) else 0
        chunks: list[bytes] = [os.read(fd, size + 1)] if size <= limit else []
        if chunks and len(chunks[0]) <= size:  # the common case: a regular file, all of it in one read
            return chunks[0]
        total = len(chunks[0]) if chunks else size
        while chunks and total <= limit and len(chunks[-1]) > size:  # (a device, a pipe, a file still growing)
            size = 0
            chunk = os.read(fd, 2**20)
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    finally:
        os.close(fd)
    if total > limit:
        raise TooLarge(total)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def looks_utf16(data: bytes) -> bool:
    """Text saved as UTF-16 (PowerShell 5's ``>`` and Notepad's "Unicode"): a BOM, or NUL in every other
    byte of the first line."""
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return True
    head = data[:200]
    return len(head) >= 4 and (head[1::2].count(0) > len(head) // 4 or head[0::2].count(0) > len(head) // 4)


def ca_bundle_problem(path: str | Path) -> str | None:
    """Why ``path`` is not a CA bundle (PEM certificates), or None: looked at before any TLS handshake,
    where a wrong file only shows up as an opaque SSL error."""
    problem = input_problem(path)
    if problem:
        return problem
    try:
        head = read_bounded(path, 10 * 2**20)
    except TooLarge:
        return "is larger than 10 MiB, which no CA bundle is"
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    if b"-----BEGIN CERTIFICATE-----" not in head:
        return "holds no PEM certificate (no '-----BEGIN CERTIFICATE-----' line)" + (
            "; it is empty" if not head.strip() else "")
    return None
