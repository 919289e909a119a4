"""`exactserve proxy --upstream URL [--tool-errors c3]`: run the tool-error layer in front of
any OpenAI- or Anthropic-compatible server."""

from __future__ import annotations

import argparse
import sys

from exactserve.server.commands.toolerr import add_layer_options, options_from_args


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "proxy",
        help="put the tool-error layer in front of an OpenAI/Anthropic-compatible server",
        description=(
            "Forward chat requests to UPSTREAM in their own API shape, rewriting the "
            "conversation's tool failures in the chosen form and adding the X-Tool-Errors "
            "header to every chat response."
        ),
    )
    parser.add_argument(
        "--upstream",
        required=True,
        metavar="URL",
        help="the server's root URL, e.g. http://127.0.0.1:8080 (request paths are appended)",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=8001, help="port to listen on")
    parser.add_argument(
        "--upstream-timeout",
        type=float,
        default=600.0,
        metavar="SECONDS",
        help="longest wait for each read from the upstream (default 600)",
    )
    add_layer_options(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import uvicorn

    from exactserve.server.proxy import ProxyConfig, create_app

    try:
        config = ProxyConfig(args.upstream, options_from_args(args), args.upstream_timeout)
    except ValueError as exc:
        print(f"exactserve proxy: error: {exc}", file=sys.stderr)
        return 2
    uvicorn.run(create_app(config), host=args.host, port=args.port, log_level="info")
    return 0
