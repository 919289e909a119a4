"""`exactserve generate [MODEL] -p PROMPT`: stream a completion to stdout.

Progress while loading and the speed summary go to stderr, so stdout holds only the
generated text. Sampling defaults are llama.cpp's (llama-cli): temperature 0.8, top-k 40,
top-p 0.95, min-p 0.05, penalties off over the last 64 tokens; the default seed is 0, so a
command line always prints the same text. `--temperature 0` decodes greedily.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from exactserve.reference.sampling import SamplingParams
from exactserve.runtime.assets import demo_model_path
from exactserve.runtime.errors import ExactserveError
from exactserve.runtime.generate import Generation, GenerationConfig
from exactserve.server.commands import add_threads_argument


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "generate",
        help="generate text from a prompt",
        description=__doc__.split("\n\n")[0],
    )
    parser.add_argument("model", nargs="?", type=Path, help="GGUF file (default: the demo model)")
    parser.add_argument("-p", "--prompt", required=True, help="the prompt text")
    parser.add_argument("-n", "--max-tokens", type=int, default=128, help="default 128")
    parser.add_argument(
        "--chat",
        action="store_true",
        help="send the prompt as a user message through the chat template",
    )
    parser.add_argument("--temperature", "--temp", type=float, default=0.8, help="0: greedy")
    parser.add_argument("--top-k", type=int, default=40, help="0 disables (default 40)")
    parser.add_argument("--top-p", type=float, default=0.95, help="1 disables (default 0.95)")
    parser.add_argument("--min-p", type=float, default=0.05, help="0 disables (default 0.05)")
    parser.add_argument("--repeat-penalty", type=float, default=1.0, help="1 disables")
    parser.add_argument("--presence-penalty", type=float, default=0.0, help="0 disables")
    parser.add_argument("--frequency-penalty", type=float, default=0.0, help="0 disables")
    parser.add_argument(
        "--repeat-last-n",
        type=int,
        default=64,
        help="tokens the penalties look back over (0: none, -1: all)",
    )
    parser.add_argument("--seed", type=int, default=0, help="sampling seed (default 0)")
    parser.add_argument(
        "--backend",
        choices=("reference", "triton"),
        default=None,
        help="implementation of the precision contract (default: $EXACTSERVE_BACKEND, else "
        "reference); triton runs under the Triton interpreter on a machine without CUDA. "
        "Both give the same bits",
    )
    add_threads_argument(parser)
    parser.add_argument(
        "--stop",
        action="append",
        default=[],
        metavar="TEXT",
        help="stop before this text (repeatable)",
    )
    parser.add_argument(
        "--ignore-eos", action="store_true", help="keep generating past end-of-generation tokens"
    )
    add_speculative_options(parser)
    parser.set_defaults(func=run)


def add_speculative_options(parser: argparse.ArgumentParser) -> None:
    """--speculative, --draft-model, --draft-tokens (shared with `exactserve serve`)."""
    parser.add_argument(
        "--speculative",
        choices=("ngram", "draft"),
        help="decode speculatively: ngram (prompt lookup) or draft (--draft-model); the "
        "output is the same bits, only faster when guesses are accepted",
    )
    parser.add_argument("--draft-model", type=Path, help="GGUF draft model (same vocabulary)")
    parser.add_argument(
        "--draft-tokens", type=int, default=4, help="guesses verified per pass (default 4)"
    )


def speculative_from_args(args: argparse.Namespace):
    """(SpeculativeConfig or None, the draft model path or None), validated."""
    from exactserve.runtime.speculative import SpeculativeConfig

    if args.speculative is None:
        if args.draft_model is not None:
            raise ExactserveError("--draft-model needs --speculative draft")
        return None, None
    if args.speculative == "draft":
        if args.draft_model is None:
            raise ExactserveError("--speculative draft needs --draft-model PATH")
        if not args.draft_model.is_file():
            raise ExactserveError(f"{args.draft_model}: no such draft model file")
    try:
        config = SpeculativeConfig(args.speculative, args.draft_tokens)
    except ValueError as exc:
        raise ExactserveError(f"invalid speculative option: {exc}") from exc
    return config, args.draft_model if args.speculative == "draft" else None


def sampling_from_args(args: argparse.Namespace) -> SamplingParams:
    try:
        return SamplingParams(
            temperature=args.temperature,
            top_k=args.top_k,
            top_p=args.top_p,
            min_p=args.min_p,
            repeat_penalty=args.repeat_penalty,
            presence_penalty=args.presence_penalty,
            frequency_penalty=args.frequency_penalty,
            penalty_last_n=args.repeat_last_n,
            seed=args.seed,
        )
    except ValueError as exc:
        raise ExactserveError(f"invalid sampling option: {exc}") from exc


def run(args: argparse.Namespace) -> int:
    from exactserve.runtime.config import from_gguf, validate_tensors
    from exactserve.runtime.gguf_file import open_gguf
    from exactserve.runtime.model import load_model
    from exactserve.runtime.model.threads import default_threads
    from exactserve.runtime.tokenizer import Tokenizer

    sampling = sampling_from_args(args)
    speculative, draft_path = speculative_from_args(args)
    if args.max_tokens < 0:
        raise ExactserveError(f"--max-tokens must be >= 0, got {args.max_tokens}")
    path = args.model or demo_model_path()
    if not Path(path).is_file():
        raise ExactserveError(f"{path}: no such model file; pass the path of a GGUF file")
    name = Path(path).name
    started = time.perf_counter()
    print(f"loading {name} ...", file=sys.stderr, flush=True)
    with open_gguf(path) as gguf:
        from_gguf(gguf)  # an unsupported model says so before its vocabulary is read
        validate_tensors(gguf)
        tokenizer = Tokenizer.from_gguf(gguf)
        prompt = _encode_prompt(args, gguf, tokenizer)
    threads = args.threads or default_threads()
    model = load_model(
        path,
        progress=lambda message: _progress(name, message, started),
        threads=threads,
        backend=args.backend,
    )
    draft = None
    if draft_path is not None:
        draft = load_model(draft_path, threads=threads, backend=args.backend)
    _progress(name, f"ready, prompt of {len(prompt)} tokens", started)
    config = GenerationConfig(
        max_tokens=args.max_tokens,
        sampling=sampling,
        stop=tuple(args.stop),
        ignore_eog=args.ignore_eos,
        speculative=speculative,
    )
    try:
        generation = Generation(model, tokenizer, prompt, config, draft)
    except ValueError as exc:
        raise ExactserveError(str(exc)) from exc
    for delta in generation:
        sys.stdout.write(delta.text)
        sys.stdout.flush()
    sys.stdout.write("\n")
    stats = generation.stats
    steps = max(stats.num_generated - 1, 0)  # the first token comes from the prefill
    print(
        f"prefill: {stats.num_prompt_tokens} tokens in {stats.prefill_seconds:.2f} s "
        f"({stats.prefill_tokens_per_second:.1f} tokens/s); decode: {steps} tokens after the "
        f"first in {stats.decode_seconds:.2f} s ({stats.decode_tokens_per_second:.1f} "
        f"tokens/s); {stats.num_generated} generated, finish: {generation.finish_reason}"
        + (
            f"; speculative {speculative.method}: {stats.acceptance_rate:.0%} of "
            f"{stats.num_draft_tokens} guesses accepted, {stats.tokens_per_pass:.2f} tokens "
            "per pass"
            if speculative is not None
            else ""
        ),
        file=sys.stderr,
    )
    return 0


def _encode_prompt(args: argparse.Namespace, gguf: object, tokenizer: object) -> list[int]:
    if not args.chat:
        return tokenizer.encode(args.prompt, add_special=True, parse_special=False)
    from exactserve.runtime.chat_template import ChatTemplate
    from exactserve.runtime.prompt import encode_chat

    arch = gguf.metadata.get("general.architecture", "")
    template = ChatTemplate.from_gguf(gguf, arch)
    messages = [{"role": "user", "content": args.prompt}]
    return encode_chat(template, tokenizer, messages, add_generation_prompt=True).ids


def _progress(name: str, message: str, started: float) -> None:
    elapsed = time.perf_counter() - started
    print(f"loading {name}: {message} ({elapsed:.1f} s)", file=sys.stderr, flush=True)
