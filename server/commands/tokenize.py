"""`exactserve tokenize [MODEL] TEXT`: print the tokens of TEXT, one per line: the id, a tab,
and the repr of the token's piece (its text, or its bytes when they are not whole UTF-8
characters, as with byte-fallback tokens).

MODEL is a GGUF file (default: the demo model); TEXT `-` reads standard input. Like
llama.cpp's llama-tokenize, BOS/EOS are added as the vocabulary asks unless --no-special;
unlike it, control-token texts stay plain text unless --parse-special.
"""

from __future__ import annotations

import argparse
import sys

from exactserve.runtime.assets import demo_model_path
from exactserve.runtime.tokenizer import Tokenizer


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "tokenize",
        help="print the token ids and pieces of a text, as llama.cpp would tokenize it",
        description=__doc__.split("\n\n")[0].split(": ", 1)[1],
    )
    parser.add_argument("model", nargs="?", metavar="MODEL", help="GGUF file (default: demo)")
    parser.add_argument("text", metavar="TEXT", help="text to tokenize; - for standard input")
    parser.add_argument(
        "--no-special", action="store_true", help="do not add BOS/EOS tokens (add_special=False)"
    )
    parser.add_argument(
        "--parse-special",
        action="store_true",
        help="turn control-token texts such as <start_of_turn> into those tokens",
    )
    parser.add_argument("--ids", action="store_true", help="print only the list of ids")
    parser.set_defaults(func=run)


def format_piece(piece: bytes) -> str:
    """repr of the piece as text, or of its bytes when they are not valid UTF-8."""
    try:
        return repr(piece.decode("utf-8"))
    except UnicodeDecodeError:
        return repr(piece)


def run(args: argparse.Namespace) -> int:
    text = sys.stdin.read() if args.text == "-" else args.text
    tokenizer = Tokenizer.from_gguf(args.model or demo_model_path())
    ids = tokenizer.encode(text, add_special=not args.no_special, parse_special=args.parse_special)
    if args.ids:
        print(ids)
        return 0
    for token_id in ids:
        print(f"{token_id}\t{format_piece(tokenizer.token_to_piece(token_id))}")
    return 0
