"""The `exactserve` command line. Each subcommand lives in its own module under
server/commands/ and exposes `register(subparsers)`, which adds its parser and sets
`func=run`; `run(args) -> int` returns the exit status.

The CLI sits at the top of the import graph (server -> runtime -> reference/kernels), so
subcommands may use every layer.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys

from exactserve.runtime.errors import ExactserveError

COMMAND_MODULES: tuple[str, ...] = (
    "exactserve.server.commands.proxy",
    "exactserve.server.commands.toolerr",
    "exactserve.server.commands.inspect",
    "exactserve.server.commands.tokenize",
    "exactserve.server.commands.generate",
    "exactserve.server.commands.serve",
    "exactserve.server.commands.check",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="exactserve",
        description="Deterministic, bit-reproducible inference for GGUF models.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log at DEBUG level")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(args.func(args) or 0)
    except ExactserveError as exc:
        print(f"exactserve {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
