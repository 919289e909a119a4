"""`exactserve inspect [MODEL]`: print a GGUF model's configuration, vocabulary and tensors.

Without MODEL it inspects the demo model (Gemma 3 270M, from the `exactserve[demo]` extra).
Only the header, metadata and tensor directory are read, so it is quick on any size.
"""

from __future__ import annotations

import argparse
import enum
import json
import sys
from dataclasses import asdict
from pathlib import Path

from exactserve.runtime.assets import AssetError, demo_model_path
from exactserve.runtime.inspect import format_report, inspect_model


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "inspect",
        help="show a GGUF model's configuration and tensors",
        description=__doc__.split("\n\n")[0],
    )
    parser.add_argument("model", nargs="?", type=Path, help="GGUF file (default: the demo model)")
    parser.add_argument(
        "--json", action="store_true", help="print the report and full configuration as JSON"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    path = args.model
    if path is None:
        try:
            path = demo_model_path()
        except AssetError as exc:
            print(f"exactserve inspect: {exc}", file=sys.stderr)
            return 2
    report = inspect_model(path)
    if args.json:
        print(json.dumps(asdict(report), indent=2, default=_json_value))
    else:
        print(format_report(report))
    return 0


def _json_value(value: object) -> object:
    return value.value if isinstance(value, enum.Enum) else str(value)
