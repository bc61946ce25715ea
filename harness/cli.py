"""The ``stormatrix`` command. Turns every StormatrixError into one message and its exit code."""

from __future__ import annotations

import argparse
import logging
import sys

from . import __version__
from .commands import COMMANDS
from .core.errors import StormatrixError

log = logging.getLogger("stormatrix")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
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
    level = logging.WARNING if verbosity == 0 else logging.INFO if verbosity == 1 else logging.DEBUG
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    setup_logging(args.verbose)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except StormatrixError as exc:
        print(f"stormatrix: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("stormatrix: interrupted; everything journaled so far is kept "
              "(run the same command again to resume)", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
