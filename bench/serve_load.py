"""Serving load: `exactserve serve` next to llama.cpp's `llama-server`, same model, same run.

    nice -n 10 python bench/serve_load.py [--model GGUF] [--concurrency 1,4,8] [--requests 4]
        [--prompt-tokens 256] [--max-tokens 64] [--engines exactserve,llama.cpp]
        [--llama-server PATH] [--threads 2] [--api completions|chat] [--quick]

Starts each engine's server in turn as a subprocess on a free 127.0.0.1 port (llama-server
from bench/build_llama_cpp.sh unless --llama-server is given), waits for GET /health to
answer 200, sends one short warm-up request, then for each concurrency level C runs C
clients that each send --requests streaming requests back to back (C x N requests per level;
at --level-timeout seconds the level's unfinished requests are cut and counted as failed).
Requests are greedy (temperature 0), `ignore_eos: true`, `max_tokens` tokens, each with its
own prompt of --prompt-tokens tokens (BOS included; distinct from the first words on, so no
prefix cache helps). Then it reads the server process's peak resident memory (VmHWM in
/proc/PID/status) and stops it. With --api chat each server applies its own chat template,
so the prompts grow by a few tokens (the table's "tokens in" shows how many, where the
server's stream reports usage).

Measured per level (client side, asyncio + httpx over loopback):
- output tokens/s: completion tokens of all requests / wall time of the level;
- TTFT: request sent -> first streamed chunk carrying text;
- ITL: gaps between successive text-carrying chunks (one token each on both servers);
- E2E: request sent -> end of the stream.
Printed: the machine (CPU model, SIMD flags from /proc/cpuinfo, cores, load average), both
exact command lines, one table with mean / p50 / p90 of each engine side by side and the
ratio exactserve / llama.cpp of the means (above 1 is better for tokens/s, worse for times).

How long, on two cores with the demo model: --quick (64-token prompts, 16 tokens, 2 requests
per client) 40 s on a quiet machine, about 2 minutes with a load average of 4; the defaults
(256-token prompts, 64 tokens, 4 requests per client) 15 minutes with a load average of 3 to 5.
Most of it is exactserve's reference backend (~100 tokens/s prefill, ~10 tokens/s generation).
Not a test: it asserts nothing. Run it alone on a quiet machine: under `nice` beside busy
processes, llama.cpp's two threads stall at every barrier and its numbers collapse (the load
average before and after is printed for that reason).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from exactserve.runtime.assets import demo_model_path

HOST = "127.0.0.1"
BENCH_DIR = Path(__file__).resolve().parent
WORDS = (
    "river stone lantern orchard copper violin harbor meadow falcon pepper glacier candle "
    "tunnel marble velvet thunder saddle compass bramble quartz anchor willow cobalt "
    "ember prairie kettle lagoon mosaic timber vessel cinder hollow summit ribbon canyon "
    "beacon thistle garnet fjord parcel sparrow tundra walnut zephyr basalt clover"
).split()
METRICS = ("requests ok/sent", "tokens in / out", "output tokens/s", "TTFT ms", "ITL ms", "E2E ms")
COUNTS = ("requests ok/sent", "tokens in / out")  # no ratio
SIMD_FLAGS = ("sse4_2", "avx", "avx2", "fma", "f16c", "bmi2", "avx_vnni", "avx512", "amx")


@dataclass
class RequestResult:
    """Times in seconds from the request's start; `tokens` from usage, else text chunks;
    `prompt_tokens` from usage (0 if the server sends none)."""

    ok: bool
    ttft: float = 0.0
    e2e: float = 0.0
    gaps: list[float] = field(default_factory=list)
    tokens: int = 0
    prompt_tokens: int = 0
    error: str = ""


@dataclass
class EngineRun:
    name: str
    command: list[str]
    levels: dict[int, tuple[float, list[RequestResult]]] = field(default_factory=dict)
    peak_rss_mib: float | None = None


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def make_prompts(model: Path, count: int, n_tokens: int) -> list[str]:
    """`count` distinct texts of `n_tokens` tokens each with BOS, as our tokenizer counts."""
    from exactserve.runtime.tokenizer import Tokenizer

    tokenizer = Tokenizer.from_gguf(model)
    n_text = n_tokens - (1 if tokenizer.add_bos else 0)
    prompts = []
    for i in range(count):
        rng = random.Random(i)
        text = f"Note {i}: " + " ".join(rng.choice(WORDS) for _ in range(2 * n_tokens))
        ids = tokenizer.encode(text, add_special=False)[:n_text]
        prompts.append(tokenizer.decode(ids))
    return prompts


def percentile(values: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    xs = sorted(values)
    pos = (len(xs) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


async def one_request(client: httpx.AsyncClient, url: str, body: dict) -> RequestResult:
    chat = url.endswith("/chat/completions")
    started = time.perf_counter()
    stamps: list[float] = []
    usage = {}
    try:
        async with client.stream("POST", url, json=body) as resp:
            if resp.status_code != 200:
                text = (await resp.aread()).decode(errors="replace")
                return RequestResult(ok=False, error=f"HTTP {resp.status_code}: {text[:300]}")
            async for line in resp.aiter_lines():
                if not line.startswith("data:"):
                    continue
                data = line[5:].strip()
                if data == "[DONE]":
                    break
                chunk = json.loads(data)
                if chunk.get("usage"):
                    usage = chunk["usage"]
                for choice in chunk.get("choices") or ():
                    delta = choice.get("delta") or {}
                    if delta.get("content") if chat else choice.get("text"):
                        stamps.append(time.perf_counter() - started)
    except (httpx.HTTPError, json.JSONDecodeError) as exc:
        return RequestResult(ok=False, error=f"{type(exc).__name__}: {exc}")
    e2e = time.perf_counter() - started
    if not stamps:
        return RequestResult(ok=False, e2e=e2e, error="no text streamed")
    gaps = [b - a for a, b in zip(stamps, stamps[1:], strict=False)]
    tokens = usage.get("completion_tokens") or len(stamps)
    return RequestResult(True, stamps[0], e2e, gaps, tokens, usage.get("prompt_tokens") or 0)


async def run_level(
    base: str, args: argparse.Namespace, prompts: list[str], concurrency: int
) -> tuple[float, list[RequestResult]]:
    """C clients, N requests each, from `prompts` in order; (wall seconds, results)."""
    url = base + ("/v1/chat/completions" if args.api == "chat" else "/v1/completions")
    queue = list(reversed(prompts))
    deadline = time.perf_counter() + args.level_timeout
    results: list[RequestResult] = []
    limits = httpx.Limits(max_connections=concurrency + 1)
    timeout = httpx.Timeout(args.level_timeout, connect=10.0)

    def body(prompt: str) -> dict:
        fields = {"prompt": prompt}
        if args.api == "chat":
            fields = {"messages": [{"role": "user", "content": prompt}]}
        return {
            **fields,
            "max_tokens": args.max_tokens,
            "temperature": 0,
            "stream": True,
            "stream_options": {"include_usage": True},
            "ignore_eos": True,
        }

    async with httpx.AsyncClient(limits=limits, timeout=timeout, trust_env=False) as client:

        async def worker() -> None:
            while queue and (left := deadline - time.perf_counter()) > 0:
                request = one_request(client, url, body(queue.pop()))
                try:
                    results.append(await asyncio.wait_for(request, left))
                except asyncio.TimeoutError:
                    results.append(RequestResult(ok=False, error="cut at --level-timeout"))

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return time.perf_counter() - started, results


def peak_rss_mib(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def wait_healthy(proc: subprocess.Popen, base: str, timeout: float, log: Path) -> None:
    deadline = time.monotonic() + timeout
    with httpx.Client(timeout=5.0, trust_env=False) as client:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                tail = log.read_text(errors="replace")[-3000:]
                raise SystemExit(f"server exited with status {proc.returncode}:\n{tail}")
            try:
                if client.get(base + "/health").status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.25)
    raise SystemExit(f"no 200 from {base}/health within {timeout:.0f} s (log: {log})")


def run_engine(run: EngineRun, port: int, args: argparse.Namespace, prompts: list[str]) -> None:
    """Start the server, warm it up, run every level, read VmHWM, stop it."""
    base = f"http://{HOST}:{port}"
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = str(args.threads)
    log = Path(tempfile.mkdtemp(prefix="serve_load-")) / f"{run.name}.log"
    print(f"[{run.name}] starting (log: {log}): {shlex.join(run.command)}", file=sys.stderr)
    with open(log, "wb") as out:
        proc = subprocess.Popen(run.command, stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        started = time.perf_counter()
        wait_healthy(proc, base, args.load_timeout, log)
        print(f"[{run.name}] healthy after {time.perf_counter() - started:.1f} s", file=sys.stderr)
        warm = argparse.Namespace(**{**vars(args), "max_tokens": 4, "level_timeout": 60.0})
        _, (result,) = asyncio.run(run_level(base, warm, ["Hello"], 1))
        if not result.ok:
            raise SystemExit(f"[{run.name}] warm-up request failed: {result.error} (log: {log})")
        offset = 0
        for concurrency in args.concurrency:
            count = concurrency * args.requests
            level_prompts = prompts[offset : offset + count]
            offset += count
            wall, results = asyncio.run(run_level(base, args, level_prompts, concurrency))
            run.levels[concurrency] = (wall, results)
            failed = [r for r in results if not r.ok]
            print(
                f"[{run.name}] concurrency {concurrency}: {len(results) - len(failed)} ok, "
                f"{len(failed)} failed, {wall:.1f} s" + (f"; {failed[0].error}" if failed else ""),
                file=sys.stderr,
                flush=True,
            )
        run.peak_rss_mib = peak_rss_mib(proc.pid)
    finally:
        stop_server(proc)


def machine_lines(llama_bin: Path | None, load_before: float) -> list[str]:
    info = {}
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        key, _, value = line.partition(":")
        info.setdefault(key.strip(), value.strip())
    flags = [f for f in info.get("flags", "").split() if f.startswith(SIMD_FLAGS)]
    lines = [
        f"cpu: {info.get('model name', '?')}, {os.cpu_count()} cores visible, "
        f"load average {load_before:.2f} before, {os.getloadavg()[0]:.2f} after",
        f"cpu flags (SIMD): {' '.join(flags)}",
    ]
    stamp = llama_bin.parent.parent / "exactserve-build.txt" if llama_bin else None
    if stamp and stamp.exists():
        on = [f[7:-3] for f in stamp.read_text().split() if f.startswith("-DGGML_") and "=ON" in f]
        lines.append(f"llama.cpp build, GGML options on: {' '.join(on)}")
    return lines


def summarise(run: EngineRun, concurrency: int) -> dict[str, tuple[float, ...]]:
    """metric -> (mean,) for tokens/s, (mean, p50, p90) for times in ms, pairs for counts."""
    wall, results = run.levels[concurrency]
    ok = [r for r in results if r.ok]
    out: dict[str, tuple[float, ...]] = {
        "requests ok/sent": (len(ok), len(results)),
        "output tokens/s": (sum(r.tokens for r in ok) / wall,),
        "tokens in / out": (  # in: nan when the server's stream carries no usage
            sum(r.prompt_tokens for r in ok) / len(ok) if ok and ok[0].prompt_tokens else math.nan,
            sum(r.tokens for r in ok) / max(len(ok), 1),
        ),
    }
    for name, values in (
        ("TTFT ms", [r.ttft for r in ok]),
        ("ITL ms", [g for r in ok for g in r.gaps]),
        ("E2E ms", [r.e2e for r in ok]),
    ):
        if values:
            ms = [v * 1000 for v in values]
            out[name] = (sum(ms) / len(ms), percentile(ms, 0.5), percentile(ms, 0.9))
    return out


def cell(metric: str, values: tuple[float, ...] | None) -> str:
    if values is None:
        return "-"
    if metric in COUNTS:
        return " / ".join("-" if math.isnan(v) else f"{v:.0f}" for v in values)
    return " / ".join(f"{v:.1f}" for v in values)


def print_table(runs: list[EngineRun], levels: list[int]) -> None:
    header = ["conc", "metric", *(f"{r.name} mean / p50 / p90" for r in runs)]
    if len(runs) == 2:
        header.append(f"{runs[1].name} / {runs[0].name}")
    rows = [header]
    for concurrency in levels:
        stats = [summarise(r, concurrency) if concurrency in r.levels else {} for r in runs]
        for metric in METRICS:
            row = [str(concurrency), metric, *(cell(metric, s.get(metric)) for s in stats)]
            if len(runs) == 2 and metric not in COUNTS:
                a, b = (s.get(metric) for s in stats)
                row.append(f"{b[0] / a[0]:.3f}x" if a and b and a[0] else "")
            rows.append(row)
    rss = [f"{r.peak_rss_mib:.0f}" if r.peak_rss_mib else "-" for r in runs]
    rows.append(["all", "peak RSS MiB", *rss])
    if len(runs) == 2 and runs[0].peak_rss_mib and runs[1].peak_rss_mib:
        rows[-1].append(f"{runs[1].peak_rss_mib / runs[0].peak_rss_mib:.3f}x")
    widths = [max(len(r[i]) for r in rows if i < len(r)) for i in range(len(header))]
    for n, row in enumerate(rows):
        row += [""] * (len(header) - len(row))
        pairs = enumerate(zip(row, widths, strict=True))
        cells = [c.ljust(w) if i == 1 else c.rjust(w) for i, (c, w) in pairs]
        print("  ".join(cells).rstrip())
        if n == 0:
            print("  ".join("-" * w for w in widths))


def engine_command(name: str, args: argparse.Namespace, model: Path, port: int) -> list[str]:
    max_running = max(args.concurrency)
    if name == "llama.cpp":
        slot_ctx = -(-(args.prompt_tokens + args.max_tokens + 64) // 256) * 256
        return [
            str(args.llama_server), "-m", str(model), "--host", HOST, "--port", str(port),
            "-t", str(args.threads), "-np", str(max_running), "-c", str(slot_ctx * max_running),
            "--no-webui",
        ]  # fmt: skip
    exe = Path(sys.executable).parent / "exactserve"
    exe = str(exe) if exe.exists() else (shutil.which("exactserve") or "exactserve")
    return [
        exe, "serve", str(model), "--host", HOST, "--port", str(port),
        "--max-running", str(max_running),
    ]  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, help="GGUF file (default: the demo model)")
    parser.add_argument("--concurrency", default="1,4,8", help="levels (default 1,4,8)")
    parser.add_argument("--requests", type=int, help="per client per level (4; quick 2)")
    parser.add_argument("--max-tokens", type=int, help="per request (64; quick 16)")
    parser.add_argument("--prompt-tokens", type=int, help="BOS included (256; quick 64)")
    parser.add_argument("--engines", default="exactserve,llama.cpp")
    parser.add_argument("--llama-server", type=Path, help="default: bench/build_llama_cpp.sh's")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--api", choices=("completions", "chat"), default="completions")
    parser.add_argument("--level-timeout", type=float, default=900.0, help="seconds (900)")
    parser.add_argument("--load-timeout", type=float, default=300.0, help="seconds (300)")
    parser.add_argument("--quick", action="store_true", help="the smaller defaults")
    args = parser.parse_args(argv)
    sizes = {"prompt_tokens": (256, 64), "max_tokens": (64, 16), "requests": (4, 2)}
    for name, (full, quick) in sizes.items():
        if getattr(args, name) is None:
            setattr(args, name, quick if args.quick else full)
    args.concurrency = [int(c) for c in args.concurrency.split(",")]
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    if unknown := set(engines) - {"exactserve", "llama.cpp"}:
        parser.error(f"unknown engines {sorted(unknown)}: choose from exactserve, llama.cpp")
    # llama.cpp first: the ratio column is exactserve / llama.cpp.
    engines.sort(key=lambda e: e != "llama.cpp")
    model = (args.model or demo_model_path()).resolve()
    if "llama.cpp" in engines and args.llama_server is None:
        sys.path.insert(0, str(BENCH_DIR))
        from fidelity import llama_bin_dir

        args.llama_server = llama_bin_dir() / "llama-server"
    if "llama.cpp" in engines and not os.access(args.llama_server, os.X_OK):
        parser.error(f"{args.llama_server} is not an executable llama-server")
    total = sum(c * args.requests for c in args.concurrency)
    prompts = make_prompts(model, total, args.prompt_tokens)

    load_before = os.getloadavg()[0]
    runs = []
    for name in engines:
        port = free_port()
        run = EngineRun(name, engine_command(name, args, model, port))
        run_engine(run, port, args, prompts)
        runs.append(run)

    print(
        f"{model.name}: {args.api} API, prompts of {args.prompt_tokens} tokens, "
        f"max_tokens {args.max_tokens}, greedy, ignore_eos, {args.requests} requests per client"
    )
    for line in machine_lines(args.llama_server if "llama.cpp" in engines else None, load_before):
        print(line)
    for run in runs:
        print(f"{run.name}: {shlex.join(run.command)}")
    print()
    print_table(runs, args.concurrency)
    return 0


def stop_server(proc: subprocess.Popen) -> None:
    """Ask a server to stop, and kill it if it has not within 20 s."""
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


if __name__ == "__main__":
    sys.exit(main())
