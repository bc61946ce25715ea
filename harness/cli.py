"""The ``stormatrix`` command. Turns every StormatrixError into one message and its exit code.

The streams and the termination signals are set up (:mod:`.console`) before the commands are even
imported, so that a Ctrl-C during the imports, a closed or full stdout and a SIGTERM all end with one
line and an exit code, never a traceback. Only the standard library is imported at module level.
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any, NoReturn

from . import console

# commands whose work a second identical invocation picks up where the first stopped (the journal)
RESUMABLE = {("run", None), ("demo", None), ("suite", "run")}
# an option whose value is a secret, or the name or path of one: its value is never repeated in a message
_SENSITIVE = re.compile(r"pass|secret|token|cred|key", re.IGNORECASE)


def redact_argv_text(message: str) -> str:
    """``message`` (argparse's own words) without the values the user typed after ``--opt=``, nor the word
    that follows an option named like a secret: ``--password=hunter2`` is an ambiguous option, and the
    "ambiguous option" and "unrecognized arguments" messages would otherwise print the password."""
    message = re.sub(r"(--?[A-Za-z][\w-]*)=\S+", r"\1=<hidden>", message)
    head, sep, listed = message.partition("unrecognized arguments: ")
    if not sep:
        return message
    words = listed.split(" ")  # the user's own words: the one after a secret's option is its value
    for i in range(1, len(words)):
        before = words[i - 1]
        if before.startswith("-") and "=" not in before and _SENSITIVE.search(before) and not words[i].startswith("-"):
            words[i] = "<hidden>"
    return head + sep + " ".join(words)


class Parser(argparse.ArgumentParser):
    """argparse, with usage errors that never echo a secret typed on the command line."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {redact_argv_text(message)}\n")


def build_parser() -> argparse.ArgumentParser:
    from . import __version__
    from .commands import COMMANDS

    parser = Parser(
        prog="stormatrix",
        description="Measure host CPU and context switches per MiB for each virtual storage "
                    "configuration (controller x aio x iothread x cache), and write Excel workbooks.")
    parser.add_argument("--version", action="version", version=f"stormatrix {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more log output (-vv for debug)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMANDS:
        module.register(sub)
    return parser


def setup_logging(verbosity: int) -> None:
    import logging

    level = logging.WARNING if verbosity == 0 else logging.INFO if verbosity == 1 else logging.DEBUG
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)


def _interrupted(exc: KeyboardInterrupt, args: Any) -> int:
    """The one message for Ctrl-C, SIGTERM and SIGHUP: what is kept, and "resume" only where it is true."""
    what = "terminated" if isinstance(exc, console.Terminated) else "interrupted"
    command = (getattr(args, "command", None), getattr(args, "suite_command", None))
    if args is None:
        console.say(f"stormatrix: {what} while starting; nothing was done")
    elif command in RESUMABLE:
        console.say(f"stormatrix: {what}; everything journaled so far is kept (run the same command again to "
                    "resume)")
    else:
        console.say(f"stormatrix: {what}; an output is only ever replaced whole and no temporary file is left "
                    "(run the command again to write it)")
    return console.interrupted_exit_code(exc)


def main(argv: list[str] | None = None) -> int:
    saved_stdout = sys.stdout
    handlers = console.install_signal_handlers()
    args: Any = None
    try:
        console.guard_streams()
        # outside the try that names it: a Ctrl-C during this import made ``except StormatrixError`` an
        # UnboundLocalError (a traceback) instead of the interrupted message
        from .core.errors import StormatrixError

        try:
            parser = build_parser()
            args = parser.parse_args(argv)
            setup_logging(args.verbose)
            if not getattr(args, "func", None):
                parser.print_help()
                return 2
            code = int(args.func(args) or 0)
            sys.stdout.flush()
            return code
        except StormatrixError as exc:
            sys.stdout.flush()
            console.say(f"stormatrix: error: {exc}")
            return exc.exit_code
        except SystemExit:  # argparse: --help, --version, a usage error (what was printed must get out)
            sys.stdout.flush()
            raise
    except console.OutputFailed as exc:
        console.quiet_stdout()
        if exc.broken_pipe:  # the reader went away (`| head`): quiet, as a Unix tool ends on SIGPIPE
            return console.EXIT_BROKEN_PIPE
        console.say(exc.message())
        return 1
    except KeyboardInterrupt as exc:
        return _interrupted(exc, args)
    finally:
        console.restore_signal_handlers(handlers)
        if isinstance(sys.stdout, console.GuardedStdout):
            sys.stdout = saved_stdout


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
