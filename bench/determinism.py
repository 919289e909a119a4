"""Determinism over HTTP: the same request, alone and in company, on `exactserve serve` and
on llama.cpp's `llama-server`; how many different answers does each give?

    nice -n 10 python bench/determinism.py [--model GGUF] [--quick] [--max-tokens 16]
        [--engines exactserve,llama.cpp] [--json FILE]

Two target requests (`/v1/completions`, raw prompt, `ignore_eos`, `logprobs: 1`): one
greedy (temperature 0) and one sampled (temperature 0.8, seed 42). Each is sent alone and
then among 1, 3 and 7 other, different requests (their own prompts, lengths, seeds and
`max_tokens`), arriving STAGGER seconds apart with the target at a chosen place in the
arrival order (--quick: one place per level, else first, middle and last). Every
(level, place) starts a fresh server, so the target's first run is cold (nothing of its
prompt cached) and its repeat, the same batch sent again at once, is warm; the greedy and
the sampled target use disjoint prompts, so each is cold on its first run. The servers:

- exactserve: `exactserve serve MODEL --max-running 8` (its prefix cache on, as shipped);
- llama.cpp, cache on: `llama-server -m MODEL -np 8 -c 4096 -t 2`, every request with
  `cache_prompt: true` (llama-server's default: a slot reuses the common prefix of its
  last prompt);
- llama.cpp, cache off: the same server, every request with `cache_prompt: false`.

Counted per engine setting and target: distinct output texts and distinct sequences of
(token, logprob of the sampled token) over all runs, logprobs compared as the JSON's
numbers parsed to doubles (exact for both servers' float32 values). 1 and 1 is the
promise; anything more is the batch or the cache leaking into the answer. Not a test: it
prints numbers and asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import httpx

from exactserve.runtime.assets import demo_model_path

HOST = "127.0.0.1"
STAGGER = 0.05  # seconds between arrivals
LEVELS = (0, 1, 3, 7)  # other requests beside the target
# Prompts of 30-40 tokens: two full 16-position blocks, so exactserve's prefix cache holds
# them on the warm run (it keeps full blocks only).
TARGETS = {
    "greedy": (
        "Question: What causes the seasons on Earth, and why is it warmer in summer than in "
        "winter in the northern hemisphere? Answer:",
        {"temperature": 0},
    ),
    "sampled": (
        "Write a short story. Once upon a time, in a small fishing village on a rocky coast "
        "far to the north, there lived an old lighthouse keeper who",
        {"temperature": 0.8, "seed": 42},
    ),
}
WORDS = (
    "river stone lantern orchard copper violin harbor meadow falcon pepper glacier candle "
    "tunnel marble velvet thunder saddle compass bramble quartz anchor willow cobalt ember"
).split()


@dataclass(frozen=True)
class Setting:
    """One engine configuration; `cache_prompt` is llama-server's request field (None for
    exactserve, which has no such switch)."""

    name: str
    engine: str
    cache_prompt: bool | None = None


SETTINGS = (
    Setting("exactserve", "exactserve"),
    Setting("llama.cpp, cache on", "llama.cpp", True),
    Setting("llama.cpp, cache off", "llama.cpp", False),
)


@dataclass
class Run:
    """The target's answer in one batch. `logprobs`: [token, logprob] per generated token;
    `cached`: the target's prompt tokens the server reports it took from its cache (None
    where unreported: exactserve's /v1/completions); `batch_cached`: exactserve's
    prompt tokens from the prefix cache over the whole batch (from /metrics; None for
    llama-server)."""

    kind: str
    n_others: int
    position: int
    cache: str  # "cold" (first send on a fresh server) or "warm" (the repeat)
    text: str
    logprobs: list[list]
    cached: int | None
    batch_cached: int | None = None


@dataclass
class SettingResult:
    setting: Setting
    command: list[str]
    runs: list[Run] = field(default_factory=list)
    error: str = ""


def positions(n_others: int, quick: bool) -> list[int]:
    """Places of the target in the arrival order: the middle in quick mode, else first,
    middle and last (deduplicated)."""
    middle = (n_others + 1) // 2
    return [middle] if quick else sorted({0, middle, n_others})


def other_bodies(kind: str, count: int, max_tokens: int) -> list[dict]:
    """`count` different requests: own prompt, length, seed and max_tokens (disjoint per
    target kind, so each target's first run is cold)."""
    rng = random.Random(f"{kind}-{count}")
    bodies = []
    for i in range(count):
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randrange(4, 40)))
        bodies.append(
            {
                "prompt": f"{kind} note {i}: {words}",
                "max_tokens": rng.randrange(max(2, max_tokens // 2), max_tokens + 9),
                "temperature": rng.choice((0, 0.7, 1.0)),
                "seed": rng.randrange(1 << 30),
            }
        )
    return bodies


def target_body(kind: str, max_tokens: int) -> dict:
    prompt, sampling = TARGETS[kind]
    return {"prompt": prompt, "max_tokens": max_tokens, "logprobs": 1, **sampling}


def parse_choice(data: dict) -> tuple[str, list[list], int | None]:
    """(text, [[token, logprob], ...], cached prompt tokens) from a /v1/completions reply:
    OpenAI's legacy logprobs (tokens, token_logprobs; exactserve) or llama-server's
    `content` list."""
    choice = data["choices"][0]
    logprobs = choice.get("logprobs") or {}
    if "content" in logprobs:
        pairs = [[e["token"], e["logprob"]] for e in logprobs["content"]]
    else:
        pairs = [list(p) for p in zip(logprobs["tokens"], logprobs["token_logprobs"], strict=True)]
    usage = data.get("usage") or {}
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens")
    if cached is None and "timings" in data:
        cached = data["timings"].get("cache_n")
    return choice["text"], pairs, cached


def prefix_hits(base: str) -> int | None:
    """exactserve's prompt tokens served from its prefix cache so far (/metrics), or None."""
    try:
        text = httpx.get(base + "/metrics", timeout=10.0, trust_env=False).text
    except httpx.HTTPError:
        return None
    for line in text.splitlines():
        if line.startswith("exactserve_prefix_cache_hit_tokens_total "):
            return int(float(line.split()[1]))
    return None


async def send_batch(base: str, bodies: list[dict], timeout: float) -> list[dict]:
    """POST every body, body i after i * STAGGER seconds; the replies in the same order."""
    limits = httpx.Limits(max_connections=len(bodies) + 1)
    async with httpx.AsyncClient(timeout=timeout, limits=limits, trust_env=False) as client:

        async def post(i: int, body: dict) -> dict:
            await asyncio.sleep(i * STAGGER)
            response = await client.post(base + "/v1/completions", json=body)
            if response.status_code != 200:
                raise RuntimeError(f"HTTP {response.status_code}: {response.text[:300]}")
            return response.json()

        return await asyncio.gather(*(post(i, b) for i, b in enumerate(bodies)))


def server_command(
    setting: Setting, model: Path, port: int | str, llama_server: Path | None
) -> list[str]:
    if setting.engine == "llama.cpp":
        return [
            str(llama_server), "-m", str(model), "--host", HOST, "--port", str(port),
            "-np", "8", "-c", "4096", "-t", "2", "--no-webui",
        ]  # fmt: skip
    exe = Path(sys.executable).parent / "exactserve"
    exe = str(exe) if exe.exists() else (shutil.which("exactserve") or "exactserve")
    return [exe, "serve", str(model), "--host", HOST, "--port", str(port), "--max-running", "8"]


def run_setting(
    result: SettingResult,
    model: Path,
    llama_server: Path | None,
    quick: bool,
    max_tokens: int,
    timeout: float = 600.0,
    tick: Callable[[], None] = lambda: None,
) -> None:
    """Every level and place on fresh servers, appending to `result.runs`; `tick` is called
    after each batch."""
    from bench.serve_load import free_port, stop_server, wait_healthy

    setting = result.setting
    logs = Path(tempfile.mkdtemp(prefix="determinism-"))
    for n_others in LEVELS:
        for position in positions(n_others, quick):
            port = free_port()
            command = server_command(setting, model, port, llama_server)
            log = logs / f"{setting.engine}-{n_others}-{position}.log"
            with open(log, "wb") as out:
                proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
            try:
                base = f"http://{HOST}:{port}"
                wait_healthy(proc, base, 300.0, log)
                for kind in TARGETS:
                    bodies = other_bodies(kind, n_others, max_tokens)
                    bodies.insert(position, target_body(kind, max_tokens))
                    for body in bodies:
                        body["ignore_eos"] = True
                        if setting.cache_prompt is not None:
                            body["cache_prompt"] = setting.cache_prompt
                    for cache in ("cold", "warm"):
                        hits = prefix_hits(base) if setting.engine == "exactserve" else None
                        replies = asyncio.run(send_batch(base, bodies, timeout))
                        text, pairs, cached = parse_choice(replies[position])
                        run = Run(kind, n_others, position, cache, text, pairs, cached)
                        if hits is not None and (after := prefix_hits(base)) is not None:
                            run.batch_cached = after - hits
                        result.runs.append(run)
                        tick()
            finally:
                stop_server(proc)


def batches_per_setting(quick: bool) -> int:
    return sum(len(positions(n, quick)) for n in LEVELS) * len(TARGETS) * 2


def distinct(runs: list[Run]) -> tuple[int, int]:
    """(distinct texts, distinct (token, logprob) sequences)."""
    texts = {r.text for r in runs}
    sequences = {json.dumps(r.logprobs) for r in runs}  # repr of doubles: exact
    return len(texts), len(sequences)


def sequence_labels(sequences: list[list]) -> list[str]:
    """A, B, C, ... per logprob sequence, in order of first appearance: equal sequences
    get the same label."""
    seen: dict[str, str] = {}
    for seq in sequences:
        key = json.dumps(seq)
        seen.setdefault(key, chr(ord("A") + len(seen)) if len(seen) < 26 else f"#{len(seen)}")
    return [seen[json.dumps(seq)] for seq in sequences]


def summary(results: list[SettingResult]) -> list[dict]:
    """One row per (setting, target kind): runs, distinct texts and logprob sequences."""
    rows = []
    for res in results:
        for kind in TARGETS:
            runs = [r for r in res.runs if r.kind == kind]
            if runs:
                texts, sequences = distinct(runs)
                rows.append(
                    {
                        "setting": res.setting.name,
                        "kind": kind,
                        "runs": len(runs),
                        "texts": texts,
                        "sequences": sequences,
                    }
                )
    return rows


def to_json(results: list[SettingResult]) -> dict:
    return {
        "stagger_s": STAGGER,
        "levels": list(LEVELS),
        "targets": {kind: {"prompt": p, **s} for kind, (p, s) in TARGETS.items()},
        "settings": [
            {
                "name": r.setting.name,
                "engine": r.setting.engine,
                "cache_prompt": r.setting.cache_prompt,
                "command": r.command,
                "error": r.error,
                "runs": [asdict(run) for run in r.runs],
            }
            for r in results
        ],
    }


WHY_LLAMA_VARIES = """\
Why llama.cpp varies. In llama-server every slot's tokens of a step go into one
`llama_decode` call, so how many rows a matmul or attention kernel sees depends on what
else is running, and the CPU backend's kernels (their blocking, threading and
accumulation order) are chosen by that shape: the same request's logits change by a few
ulps with its company, and a greedy or seeded choice between two close tokens flips. The
prompt cache adds a second path: a warm request reuses a prefix computed earlier at
another batch size and re-evaluates only its last token. llama.cpp says so itself: its
server README (tools/server/README.md, `cache_prompt`, in the pinned source) warns that
"the logits are **not** guaranteed to be bit-for-bit identical for different batch sizes
(prompt processing vs. token generation)", so enabling the cache "can cause
nondeterministic results". Reports in ggml-org/llama.cpp: #6950 (a test with a fixed seed
and a varying number of slots fails: results are not bit-for-bit identical as the batch
size changes), #7052 (8 identical requests on 8 slots give 5 to 8 different
completions), #7347 (token probabilities differ beyond the first token with 4 slots, even
on the CPU with one thread), #7594 and #4902 (prompt caching changes the probabilities
and the output of identical requests). exactserve fixes every reduction's order by
position, never by batch shape (docs/PRECISION.md), so neither the company nor the cache
can move a bit.
"""


def markdown_lines(data: dict) -> list[str]:
    """The report's Determinism section from `to_json`'s dict plus its "summary"."""
    targets = data["targets"]
    intro = [
        f"Two target requests on `/v1/completions`, {data.get('max_tokens', 16)} tokens, "
        "`ignore_eos`, `logprobs: 1`: greedy (temperature 0) and sampled (temperature "
        f"{targets['sampled']['temperature']}, seed {targets['sampled']['seed']}). Each alone, "
        f"then among {', '.join(str(n) for n in data['levels'][1:])} other different requests "
        f"(own prompts, lengths, seeds), arrivals {data['stagger_s'] * 1000:.0f} ms apart "
        "with the target at the place shown; every (level, place) on a fresh server: the "
        "first send is cold, the repeat warm. Logprob sequences are compared exactly "
        "(bench/determinism.py). 1 and 1 is deterministic.",
        "",
        "| setting | target | runs | distinct texts | distinct logprob sequences |",
        "|---|---|---|---|---|",
    ]
    intro += [
        f"| {r['setting']} | {r['kind']} | {r['runs']} | {r['texts']} | {r['sequences']} |"
        for r in data["summary"]
    ]
    settings = [st for st in data["settings"] if st["runs"]]
    columns, cells = [], {}
    for st in settings:
        for kind in TARGETS:
            runs = [r for r in st["runs"] if r["kind"] == kind]
            labels = sequence_labels([r["logprobs"] for r in runs])
            columns.append(f"{st['name']}, {kind}")
            for r, label in zip(runs, labels, strict=True):
                cached = r["cached"] if r["cached"] is not None else r.get("batch_cached")
                where = "" if r["cached"] is not None else " in batch"
                note = f" ({cached} cached{where})" if cached else ""
                cells[(columns[-1], r["n_others"], r["position"], r["cache"])] = label + note
    keys = sorted({k[1:] for k in cells}, key=lambda k: (k[0], k[1], k[2] != "cold"))
    table = [
        "",
        "Logprob sequence of each run (same letter = same bits; in brackets the "
        "prompt tokens the server took from its cache):",
        "",
        "| others | place | cache | " + " | ".join(columns) + " |",
        "|---|---|---|" + "---|" * len(columns),
    ]
    for n_others, position, cache in keys:
        row = [cells.get((c, n_others, position, cache), "-") for c in columns]
        table.append(f"| {n_others} | {position + 1} | {cache} | " + " | ".join(row) + " |")
    errors = [f"**{st['name']} failed**: `{st['error']}`" for st in data["settings"] if st["error"]]
    return intro + table + [""] + errors + ["", WHY_LLAMA_VARIES, ""]


def plot(data: dict, path: Path) -> None:
    """Bars: distinct logprob sequences (and texts, hatched) per setting and target."""
    import matplotlib.pyplot as plt

    rows = data["summary"]
    settings = list(dict.fromkeys(r["setting"] for r in rows))
    fig, ax = plt.subplots(figsize=(8, 3.8))
    width = 0.36
    for i, kind in enumerate(TARGETS):
        for k, setting in enumerate(settings):
            row = next((r for r in rows if r["setting"] == setting and r["kind"] == kind), None)
            if row is None:
                continue
            x = k + (i - 0.5) * width
            color = ("#1f77b4", "#ff7f0e")[i]
            label = f"{kind}: logprob sequences" if k == 0 else None
            ax.bar(x, row["sequences"], width, color=color, label=label)
            ax.bar(
                x,
                row["texts"],
                width * 0.5,
                color="white",
                edgecolor=color,
                hatch="//",
                label="hatched: distinct texts" if k == 0 and i == 0 else None,
            )
            ax.annotate(
                f"{row['sequences']}/{row['runs']}",
                (x, row["sequences"]),
                ha="center",
                xytext=(0, 3),
                textcoords="offset points",
                fontsize=8,
            )
    ax.axhline(1, color="black", linestyle="--", linewidth=0.8)
    ax.set_xticks(range(len(settings)), settings)
    ax.set_ylabel("distinct logprob sequences")
    ax.yaxis.get_major_locator().set_params(integer=True)
    ax.margins(y=0.15)
    ax.legend(fontsize=8)
    ax.set_title("The same request alone and among 1, 3, 7 others, cold and warm")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def run_all(
    model: Path,
    engines: list[str],
    quick: bool,
    max_tokens: int,
    llama_server: Path | None,
    tick: Callable[[], None] = lambda: None,
) -> list[SettingResult]:
    """Each setting of the chosen engines; a setting that fails keeps its error and the
    runs it completed."""
    results = []
    for setting in SETTINGS:
        if setting.engine not in engines:
            continue
        result = SettingResult(setting, server_command(setting, model, "PORT", llama_server))
        results.append(result)
        try:
            run_setting(result, model, llama_server, quick, max_tokens, tick=tick)
        except (OSError, RuntimeError, SystemExit, httpx.HTTPError) as exc:
            result.error = f"{type(exc).__name__}: {str(exc)[-500:]}"
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, help="GGUF file (default: the demo model)")
    parser.add_argument("--quick", action="store_true", help="one place per level")
    parser.add_argument("--max-tokens", type=int, default=16, help="per target (16)")
    parser.add_argument("--engines", default="exactserve,llama.cpp")
    parser.add_argument("--llama-server", type=Path, help="default: bench/build_llama_cpp.sh's")
    parser.add_argument("--json", type=Path, help="write every run here")
    args = parser.parse_args(argv)
    model = (args.model or demo_model_path()).resolve()
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    if "llama.cpp" in engines and args.llama_server is None:
        from bench.fidelity import llama_bin_dir

        args.llama_server = llama_bin_dir(progress=True) / "llama-server"
    started = time.perf_counter()
    results = run_all(model, engines, args.quick, args.max_tokens, args.llama_server)
    if args.json:
        args.json.write_text(json.dumps(to_json(results), indent=1))
    seconds = time.perf_counter() - started
    print(
        f"{model.name}: {args.max_tokens} tokens per target, {os.cpu_count()} CPUs, {seconds:.0f} s"
    )
    for res in results:
        error = f"  ERROR {res.error}" if res.error else ""
        print(f"{res.setting.name}: {shlex.join(res.command)}{error}")
    print(f"{'setting':<22} {'target':<8} {'runs':>4} {'texts':>5} {'logprob seqs':>12}")
    for row in summary(results):
        print(
            f"{row['setting']:<22} {row['kind']:<8} {row['runs']:>4} {row['texts']:>5} "
            f"{row['sequences']:>12}"
        )
    return 0


if __name__ == "__main__":
    if __package__ is None or __package__ == "":
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    sys.exit(main())
