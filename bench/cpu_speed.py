"""CPU speed of our reference engine next to llama.cpp's llama-bench, same machine, same run.

    python bench/cpu_speed.py [--model GGUF] [--threads 2] [--reps 3] [--profile]
        [--prompt-tokens 512[,128...]] [--tile-threads N] [--cpu-matmul auto[,numpy,...]]
        [--ours-only] [--llama-bin DIR] [--json FILE]

Measures what `llama-bench -m MODEL -p 512 -n 128 -t THREADS` measures:
- pp512: one forward pass over 512 prompt tokens from an empty cache;
- tg128: 128 forward passes of one token each from an empty cache (llama-bench starts from
  BOS and feeds random tokens; so do we), logits of every step computed.
Sampling and tokenisation are excluded on both sides. llama-bench runs first (`-r
--llama-reps`, default 5, plus its own warm-up), then ours (`--reps` repetitions after one
warm-up pass of each test). Printed: tokens/s as mean ± standard deviation (best) over the
repetitions, the ratio ours / llama.cpp of the means and of the best repetitions. On a
shared machine the best repetitions are the better estimate of uncontended speed (a
descheduled thread stalls llama.cpp's thread barrier). The environment's BLAS thread count
is set to --threads before NumPy loads, but the model itself sets BLAS to one thread and
parallelises column tiles on --tile-threads workers (runtime/model/threads.py; default
--threads). --cpu-matmul runs ours once per listed matmul (runtime/cpu: the compiled int8
variants, or numpy, the reference's float32 BLAS path), e.g. `auto,avx2,numpy` to see what
each instruction set is worth on this CPU. Printed with the figures: the CPU model and its
SIMD flags, and the weight bytes a decode step reads with each matmul. --prompt-tokens takes
a list (128,512: one pp test each); --ours-only skips llama-bench; --json writes every
repetition's tokens/s (bench/report.py runs it so, once per thread count). Not a timed
test: it prints numbers and asserts nothing.
"""

from __future__ import annotations

import os
import sys

_THREADS = next((a.split("=", 1)[1] for a in sys.argv if a.startswith("--threads=")), None)
if _THREADS is None and "--threads" in sys.argv[:-1]:
    _THREADS = sys.argv[sys.argv.index("--threads") + 1]
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, _THREADS or "2")

import argparse  # noqa: E402
import cProfile  # noqa: E402
import json  # noqa: E402
import pstats  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from exactserve.runtime.assets import demo_model_path  # noqa: E402

if __package__:  # python -m bench.cpu_speed, or imported by bench/report.py
    from .machine import cpu_info, listed_flags
else:  # python bench/cpu_speed.py
    from machine import cpu_info, listed_flags

BENCH_DIR = Path(__file__).resolve().parent


def llama_bench_command(
    bin_dir: Path,
    model: Path,
    n_prompts: list[int],
    n_gens: list[int],
    threads: list[int],
    reps: int,
) -> list[str]:
    """`llama-bench ... -o json` running every pp and tg test at every thread count."""
    cmd = [str(bin_dir / "llama-bench"), "-m", str(model), "-p", _csv(n_prompts)]
    cmd += ["-n", _csv(n_gens), "-t", _csv(threads), "-r", str(reps), "-o", "json"]
    return cmd


def _csv(values: list[int]) -> str:
    return ",".join(str(v) for v in values)


def _int_list(text: str) -> list[int]:
    return [int(v) for v in text.split(",") if v.strip()]


def llama_bench_tests(cmd: list[str]) -> dict[tuple[str, int], list[float]]:
    """Runs a `llama_bench_command`; tokens/s of each repetition keyed by (test, threads),
    test named as llama-bench names it ("pp512", "tg128")."""
    print(f"running: {' '.join(cmd)}", file=sys.stderr, flush=True)
    proc = subprocess.run(cmd, capture_output=True, text=True)  # same priority as ours
    if proc.returncode != 0:
        raise SystemExit(f"llama-bench failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    result = {}
    for test in json.loads(proc.stdout):
        name = f"pp{test['n_prompt']}" if test["n_prompt"] and not test["n_gen"] else None
        name = name or f"tg{test['n_gen']}"
        result[(name, int(test["n_threads"]))] = [float(v) for v in test["samples_ts"]]
    return result


def ours_tests(
    model_path: Path,
    n_prompts: list[int],
    n_gen: int,
    reps: int,
    profile: Path | None = None,
    tile_threads: int = 1,
    cpu_matmul: str | None = None,
    bytes_per_token: dict[str, int] | None = None,
) -> dict[str, list[float]]:
    """tokens/s of each repetition keyed by test ("pp512", "tg128"), after one warm-up of
    each test. `tile_threads`: the model's tile pool (load_model's `threads`; BLAS itself
    stays at one thread, see runtime.model.threads); `cpu_matmul`: the reference's matmul
    (runtime/cpu; None: $EXACTSERVE_CPU_MATMUL or auto). If given, `bytes_per_token` gets
    the weight bytes one decode step reads, keyed by the variant that ran."""
    from exactserve.runtime.gguf_file import open_gguf
    from exactserve.runtime.model import load_model

    with open_gguf(model_path) as gguf:
        bos = int(gguf.metadata.get("tokenizer.ggml.bos_token_id", 1))
    model = load_model(model_path, threads=tile_threads, cpu_matmul=cpu_matmul)
    if bytes_per_token is not None:
        bytes_per_token[model.ops.matmul_variant] = weight_bytes_per_token(model.weights)
    rng = np.random.default_rng(0)
    n_vocab = int(model.config.n_vocab)
    prompt = [bos, *(int(t) for t in rng.integers(0, n_vocab, max(n_prompts) - 1))]
    gen_tokens = [bos, *(int(t) for t in rng.integers(0, n_vocab, n_gen - 1))]

    def prefill(n_prompt: int) -> float:
        cache = model.new_cache()
        started = time.perf_counter()
        model.forward(cache, prompt[:n_prompt])
        return n_prompt / (time.perf_counter() - started)

    def generate() -> float:
        cache = model.new_cache()
        started = time.perf_counter()
        for token in gen_tokens:
            model.forward(cache, [token])
        return n_gen / (time.perf_counter() - started)

    tests = [(f"pp{n}", lambda n=n: prefill(n)) for n in n_prompts]
    tests.append((f"tg{n_gen}", generate))
    profiler = cProfile.Profile() if profile else None
    result = {}
    for key, test in tests:
        print(f"ours: warm-up {key}", file=sys.stderr, flush=True)
        test()
        if profiler:
            profiler.enable()
        rates = [test() for _ in range(reps)]
        if profiler:
            profiler.disable()
        print(f"ours: {key} {[round(r, 2) for r in rates]} tokens/s", file=sys.stderr)
        result[key] = rates
    if profiler:
        profiler.dump_stats(profile)
        pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative").print_stats(25)
    return result


def weight_bytes_per_token(weights) -> int:
    """Bytes of the weight arrays one decode step reads: every layer matrix and norm and the
    output matrix, in the form the backend holds them (the embedding row is negligible)."""
    seen, total = set(), 0

    def add(value) -> None:
        nonlocal total
        if isinstance(value, np.ndarray):
            if id(value) not in seen:
                seen.add(id(value))
                total += value.nbytes
        elif isinstance(value, tuple):  # NamedTuples and dataclass fields
            for item in value:
                add(item)

    for layer in weights.layers:
        for field in layer.__dataclass_fields__:
            add(getattr(layer, field))
    add(weights.output)
    add(weights.output_norm)
    return total


SIMD_FLAGS = ("avx2", "fma", "avx512f", "avx512bw", "avx512_vnni", "avx_vnni", "amx_int8",
              "amx_bf16", "avx512_bf16")  # fmt: skip


def _summary(rates: list[float]) -> str:
    """mean ± standard deviation (best)"""
    sd = statistics.stdev(rates) if len(rates) > 1 else 0.0
    return f"{statistics.mean(rates):.2f} ± {sd:.2f} (best {max(rates):.2f})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, help="GGUF file (default: the demo model)")
    parser.add_argument("--threads", type=int, default=int(_THREADS or 2))
    parser.add_argument(
        "--prompt-tokens", type=_int_list, default=[512], help="pp tests, e.g. 128,512"
    )
    parser.add_argument("--gen-tokens", type=int, default=128)
    parser.add_argument("--reps", type=int, default=3, help="our repetitions (default 3)")
    parser.add_argument("--llama-reps", type=int, default=5, help="llama-bench -r (default 5)")
    parser.add_argument("--profile", type=Path, help="write our cProfile stats to this file")
    parser.add_argument(
        "--tile-threads",
        type=int,
        help="our model's tile pool (load_model threads; default --threads, BLAS stays at 1)",
    )
    parser.add_argument(
        "--cpu-matmul",
        default="auto",
        help="our matmul variants to run, comma-separated: auto, numpy, avx512vnni, avx512, "
        "avx2, scalar (default auto: the fastest that passes its check here)",
    )
    parser.add_argument("--ours-only", action="store_true", help="skip llama-bench")
    parser.add_argument(
        "--llama-bin",
        type=Path,
        help="llama.cpp's bin folder (default: bench/build_llama_cpp.sh's build; "
        "LLAMA_ISA=avx2 bash bench/build_llama_cpp.sh prints an AVX2-only one)",
    )
    parser.add_argument("--json", type=Path, help="also write the tokens/s lists here")
    args = parser.parse_args(argv)
    if args.tile_threads is None:
        args.tile_threads = args.threads
    model = (args.model or demo_model_path()).resolve()
    theirs: dict[tuple[str, int], list[float]] = {}
    if not args.ours_only:
        if __package__:
            from .fidelity import llama_bin_dir
        else:
            from fidelity import llama_bin_dir

        bin_dir = args.llama_bin or llama_bin_dir()
        cmd = llama_bench_command(
            bin_dir, model, args.prompt_tokens, [args.gen_tokens], [args.threads],
            args.llama_reps,
        )  # fmt: skip
        theirs = llama_bench_tests(cmd)
    runs: dict[str, dict[str, list[float]]] = {}
    weight_bytes: dict[str, int] = {}
    for requested in [v.strip() for v in args.cpu_matmul.split(",") if v.strip()]:
        tests = ours_tests(
            model, args.prompt_tokens, args.gen_tokens, args.reps, args.profile,
            args.tile_threads, requested, weight_bytes,
        )  # fmt: skip
        runs[list(weight_bytes)[-1]] = tests
    mine = next(iter(runs.values()))
    if args.json:
        out = {"threads": args.threads, "tile_threads": args.tile_threads, "exactserve": mine}
        out["llama.cpp"] = {name: rates for (name, _), rates in theirs.items()}
        out["exactserve_by_matmul"] = runs
        out["weight_bytes_per_token"] = weight_bytes
        out["cpu_flags"] = listed_flags(SIMD_FLAGS)
        args.json.write_text(json.dumps(out, indent=1))
    print(
        f"{model.name}, {args.threads} threads (ours: {args.tile_threads} tile threads), "
        f"{os.cpu_count()} CPUs visible, load average {os.getloadavg()[0]:.2f} at the end"
    )
    print(f"CPU: {cpu_info()[0]}; flags: {listed_flags(SIMD_FLAGS)}")
    for variant, n_bytes in weight_bytes.items():
        print(f"exactserve matmul {variant}: weights read per decoded token {n_bytes / 1e6:.0f} MB")
    header = ("test", "llama.cpp tokens/s", "exactserve tokens/s", "ratio", "ratio of best")
    rows = [header]
    for variant, tests in runs.items():
        for name, b in tests.items():
            label = name if len(runs) == 1 else f"{name} [{variant}]"
            a = theirs.get((name, args.threads))
            if a is None:
                rows.append((label, "-", _summary(b), "-", "-"))
                continue
            ratio = statistics.mean(b) / statistics.mean(a)
            rows.append(
                (label, _summary(a), _summary(b), f"{ratio:.3f}x", f"{max(b) / max(a):.3f}x")
            )
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    for n, row in enumerate(rows):
        print(
            "  ".join(
                c.ljust(w) if i == 0 else c.rjust(w)
                for i, (c, w) in enumerate(zip(row, widths, strict=True))
            )
        )
        if n == 0:
            print("  ".join("-" * w for w in widths))
    return 0


if __name__ == "__main__":
    sys.exit(main())
