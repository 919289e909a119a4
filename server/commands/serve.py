"""`exactserve serve [MODEL]`: the OpenAI- and Anthropic-compatible server on the
deterministic engine (without MODEL: the demo model)."""

from __future__ import annotations

import argparse
import logging
import sys
import threading
import time
from pathlib import Path

from exactserve.runtime.errors import ExactserveError
from exactserve.server.commands import add_threads_argument
from exactserve.server.commands.generate import add_speculative_options, speculative_from_args
from exactserve.server.commands.toolerr import add_layer_options, options_from_args


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "serve",
        help="serve a model over OpenAI and Anthropic APIs",
        description=(
            "Serve MODEL (default: the demo model) over OpenAI Chat Completions, Completions "
            "and Responses and Anthropic Messages, with the same logits for a request "
            "whatever else is running."
        ),
    )
    parser.add_argument("model", nargs="?", type=Path, help="GGUF file (default: the demo model)")
    parser.add_argument("--host", default="127.0.0.1", help="address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8080, help="port (default 8080)")
    parser.add_argument("--api-key", help="require this key (Bearer or x-api-key)")
    parser.add_argument(
        "--backend",
        choices=("reference", "triton"),
        help="default: triton where CUDA is present, reference otherwise; same bits",
    )
    add_threads_argument(parser)
    parser.add_argument("--alias", help="the model name clients use (default: the file name)")
    parser.add_argument("--ctx-size", type=int, help="context per request (default: the model's)")
    parser.add_argument(
        "--max-running", type=int, default=8, help="requests batched at once (default 8)"
    )
    parser.add_argument(
        "--kv-blocks", type=int, help="fix the KV pool at N blocks of 16 positions (default: grow)"
    )
    parser.add_argument(
        "--prefix-cache-blocks",
        type=int,
        default=None,
        help="KV blocks kept for prompts sharing a prefix (default 1024; 0 turns it off)",
    )
    parser.add_argument("--chat-template-file", type=Path, help="a Jinja chat template to use")
    parser.add_argument(
        "--max-body-mb", type=float, default=16, help="largest request body (default 16 MiB)"
    )
    add_layer_options(parser)
    add_speculative_options(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import uvicorn

    from exactserve.runtime.assets import demo_model_path
    from exactserve.server.app import ServerState, create_app
    from exactserve.server.serving import (
        DEFAULT_PREFIX_CACHE_BLOCKS,
        ExactServer,
        ServeSettings,
        default_backend,
        load_into,
    )

    path = args.model or demo_model_path()
    if not Path(path).is_file():
        raise ExactserveError(f"{path}: no such model file; pass the path of a GGUF file")
    if args.chat_template_file and not args.chat_template_file.is_file():
        raise ExactserveError(f"{args.chat_template_file}: no such chat template file")
    for name in ("ctx_size", "kv_blocks", "prefix_cache_blocks"):
        value = getattr(args, name)
        if value is not None and value < 0 or (name != "prefix_cache_blocks" and value == 0):
            raise ExactserveError(f"--{name.replace('_', '-')} must be positive, got {value}")
    if args.max_running < 1:
        raise ExactserveError(f"--max-running must be at least 1, got {args.max_running}")
    speculative, draft_path = speculative_from_args(args)
    settings = ServeSettings(
        path=Path(path),
        backend=args.backend or default_backend(),
        threads=args.threads,
        alias=args.alias,
        ctx_size=args.ctx_size,
        max_running=args.max_running,
        kv_blocks=args.kv_blocks,
        prefix_cache_blocks=(
            DEFAULT_PREFIX_CACHE_BLOCKS
            if args.prefix_cache_blocks is None
            else args.prefix_cache_blocks
        ),
        template_file=args.chat_template_file,
        toolerr=options_from_args(args),
        speculative=speculative,
        draft_model=draft_path,
    )
    state = ServerState(api_key=args.api_key, max_body_bytes=int(args.max_body_mb * 2**20))
    config = uvicorn.Config(
        create_app(state), host=args.host, port=args.port, log_level="warning", lifespan="off"
    )
    server = ExactServer(config, state)
    failure: list[BaseException] = []
    started = time.perf_counter()
    name = Path(path).name

    def say(message: str) -> None:
        elapsed = time.perf_counter() - started
        print(f"loading {name}: {message} ({elapsed:.1f} s)", file=sys.stderr, flush=True)

    def load() -> None:
        try:
            say(f"backend {settings.backend}")
            load_into(state, settings, progress=say)
            url = f"http://{args.host}:{args.port}"
            print(
                f"exactserve: serving {state.served.name} at {url}/v1 "
                f"(backend {settings.backend}, context {state.served.context_length})",
                file=sys.stderr,
                flush=True,
            )
        except BaseException as exc:  # reported after the server stops
            failure.append(exc)
            server.should_exit = True

    logging.getLogger("exactserve").setLevel(logging.INFO)
    threading.Thread(target=load, name="exactserve-loader", daemon=True).start()
    try:
        server.run()
    except KeyboardInterrupt:
        pass
    if state.engine is not None:
        state.engine.stop()
    if failure:
        exc = failure[0]
        if isinstance(exc, ExactserveError):
            raise exc
        raise ExactserveError(f"loading {path} failed: {type(exc).__name__}: {exc}") from exc
    return 0
