"""Subcommands of the `exactserve` CLI, one module each."""

from __future__ import annotations

import argparse


def add_threads_argument(parser: argparse.ArgumentParser) -> None:
    """`--threads N` of the commands that run a model (generate, serve)."""
    parser.add_argument(
        "--threads",
        type=_at_least_one,
        default=None,
        help="CPU threads of the reference backend (default: the CPUs this process may use, at "
        "most 8); the bits do not depend on it",
    )


def _at_least_one(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value
