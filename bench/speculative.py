"""Speculative decoding on the demo model: tokens/s and acceptance with and without prompt
lookup, on prompts where guesses can be accepted (code editing: the model rewrites code it
was just shown) and on one where they rarely can (free prose), same run, same machine.

    python bench/speculative.py [--model GGUF] [--tokens 64] [--draft-tokens 4] [--reps 2]

Each row is greedy generation of --tokens tokens from the same prompt, plain and with
`--speculative ngram`; the outputs are asserted identical (they must be: the speculative
output is plain decoding's, bit for bit), so the table compares speed only. Prints the CPU
model and flags with the figures. Not a timed test: it prints numbers and asserts nothing
about speed.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

from exactserve.reference.sampling import SamplingParams
from exactserve.runtime.assets import demo_model_path
from exactserve.runtime.generate import Generation, GenerationConfig
from exactserve.runtime.model import load_model
from exactserve.runtime.speculative import SpeculativeConfig
from exactserve.runtime.tokenizer import Tokenizer

EDIT_CODE = """Rename the function `total` to `sum_prices` in this code:

def total(items):
    result = 0
    for item in items:
        result += item.price * item.quantity
    return result


def report(items):
    print("Total:", total(items))
    print("Items:", len(items))

Here is the code with the function renamed:

def sum_prices(items):
"""
EDIT_CONFIG = """Change the port from 8080 to 9090 in this configuration:

server:
  host: 127.0.0.1
  port: 8080
  workers: 4
  timeout: 30
logging:
  level: info
  file: /var/log/app.log

The configuration with the new port:

server:
"""
PROSE = "The history of the printing press begins"
PROMPTS = {"edit code": EDIT_CODE, "edit config": EDIT_CONFIG, "prose": PROSE}


def cpu_description() -> str:
    """The CPU model, core count and the SIMD flags that decide speed here."""
    info = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    names = [ln.split(":", 1)[1].strip() for ln in info.splitlines() if ln.startswith("model name")]
    flag_lines = [ln.split(":", 1)[1].split() for ln in info.splitlines() if ln.startswith("flags")]
    flags = set(flag_lines[0]) if flag_lines else set()
    shown = [f for f in ("avx2", "fma", "avx512f", "avx512_vnni", "amx_tile") if f in flags]
    model = names[0] if names else platform.processor() or "unknown CPU"
    return f"{model}; {os.cpu_count()} CPUs; flags: {' '.join(shown) or 'none of these'}"


def run(model, tokenizer, prompt, tokens: int, speculative) -> tuple[float, Generation]:
    config = GenerationConfig(
        max_tokens=tokens,
        sampling=SamplingParams(temperature=0),
        ignore_eog=True,
        speculative=speculative,
    )
    generation = Generation(model, tokenizer, prompt, config)
    started = time.perf_counter()
    for _ in generation:
        pass
    elapsed = time.perf_counter() - started - generation.stats.prefill_seconds
    return (tokens - 1) / elapsed, generation


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, help="GGUF file (default: the demo model)")
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--draft-tokens", type=int, default=4)
    parser.add_argument("--reps", type=int, default=2)
    args = parser.parse_args(argv)
    path = args.model or demo_model_path()
    model, tokenizer = load_model(path), Tokenizer.from_gguf(path)
    spec = SpeculativeConfig("ngram", args.draft_tokens)
    print(f"{Path(path).name}; {cpu_description()}")
    print(f"greedy, {args.tokens} tokens, prompt lookup with k = {args.draft_tokens}")
    header = ("prompt", "plain tok/s", "ngram tok/s", "speed-up", "accepted", "tokens/pass")
    rows = [header]
    for name, text in PROMPTS.items():
        prompt = tokenizer.encode(text, add_special=True)
        plain_rates, fast_rates = [], []
        for _ in range(args.reps):
            rate, plain = run(model, tokenizer, prompt, args.tokens, None)
            plain_rates.append(rate)
            rate, fast = run(model, tokenizer, prompt, args.tokens, spec)
            fast_rates.append(rate)
            if fast.token_ids != plain.token_ids:
                print("speculative output differs from plain decoding: a bug", file=sys.stderr)
                return 1
        a, b = statistics.mean(plain_rates), statistics.mean(fast_rates)
        s = fast.stats
        rows.append(
            (name, f"{a:.2f}", f"{b:.2f}", f"{b / a:.2f}x", f"{s.acceptance_rate:.0%}",
             f"{s.tokens_per_pass:.2f}")
        )  # fmt: skip
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    for n, row in enumerate(rows):
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))
        if n == 0:
            print("  ".join("-" * w for w in widths))
    print(f"load average {os.getloadavg()[0]:.2f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
