"""exactserve next to llama.cpp in one command: speed, fidelity, determinism, serving and
the tool-error layer's cost, measured side by side in one run on one GGUF, written as
DIR/report.md with PNG plots and DIR/report.json (every measurement).

    nice -n 10 python -m bench.report [--quick] [--model GGUF] [--out DIR]
        [--device cpu|cuda] [--sections speed,fidelity,determinism,serving,toolerr]

llama.cpp comes from bench/build_llama_cpp.sh (built from the pinned sdist on first use,
its progress on stderr). Each section reuses its script: bench/cpu_speed.py (llama-bench,
and ours in a child process per thread count), bench/fidelity.py, bench/determinism.py,
bench/serve_load.py; the tool-error cost is measured here. --quick (fewer repetitions,
2 fidelity chunks on the text's first ~1,100 tokens, one place per determinism level, two
requests per serving client) took 5.1 minutes on two quiet cores (6.6 on a busy machine);
the full report 18 minutes, including the first float32 transformers run over the whole
text (about 4 minutes, cached afterwards), plus about 12 minutes once if llama.cpp must be
built. --device cuda runs our side on the Triton backend and needs a GPU
(llama.cpp stays on its CPU build, as the report says): without one it stops at once with
exit status 2. A section that fails is reported as such
and the others still run (exit status 1). Run it alone: two engines sharing two cores with
anything else measure the anything else.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

from exactserve.runtime.assets import (
    LLAMA_CPP_PYTHON_VERSION,
    AssetError,
    cache_dir,
    demo_model_path,
)

from . import determinism
from .report_markdown import SECTIONS, _code, render_markdown
from .report_plots import write_plots

ROOT = Path(__file__).resolve().parent.parent
SIMD = ("sse4_2", "avx", "avx2", "fma", "f16c", "bmi2", "avx_vnni", "avx512", "amx")
AGENT_UA = "QwenCode/0.24.4 (linux; x64)"
TOOLERR_CONFIGS = (("off", "paper"), ("c3", "paper"), ("c3", "wide"))


@dataclass(frozen=True)
class Plan:
    """What one run measures; --quick shrinks counts, never the tests themselves."""

    quick: bool
    threads: tuple[int, ...] = (1, 2)
    n_prompts: tuple[int, ...] = (128, 512)
    n_gen: int = 128

    @property
    def reps(self) -> int:
        return 2 if self.quick else 3

    @property
    def llama_reps(self) -> int:
        return 3 if self.quick else 5

    @property
    def chunks(self) -> int | None:
        return 2 if self.quick else None

    @property
    def serving(self) -> dict:
        if self.quick:
            return {"prompt_tokens": 64, "max_tokens": 16, "requests": 2}
        return {"prompt_tokens": 256, "max_tokens": 64, "requests": 4}

    @property
    def toolerr_rounds(self) -> int:
        return 30 if self.quick else 300


def device_error(device: str) -> str | None:
    """Why `device` cannot run here, or None."""
    if device != "cuda":
        return None
    try:
        import torch
    except ImportError:
        return "--device cuda needs PyTorch with CUDA; torch is not installed"
    if not torch.cuda.is_available():
        build = torch.version.cuda or "none (a CPU-only build)"
        return (
            "--device cuda needs an NVIDIA GPU, but torch.cuda.is_available() is False on "
            f"this machine (torch {torch.__version__}, CUDA build: {build}); run without "
            "--device for the CPU report"
        )
    return None


def _run_text(cmd: list[str]) -> str:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=ROOT)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return (proc.stdout + proc.stderr).strip()


def machine_info(llama_bin: Path | None) -> dict:
    """CPU model and flags, cores, RAM, GPU, OS and every version that matters."""
    cpu = {}
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        key, _, value = line.partition(":")
        cpu.setdefault(key.strip(), value.strip())
    flags = cpu.get("flags", "").split()
    mem_kib = next(
        int(line.split()[1])
        for line in Path("/proc/meminfo").read_text().splitlines()
        if line.startswith("MemTotal:")
    )
    gpu = "none"
    try:
        import torch

        if torch.cuda.is_available():
            gpu = ", ".join(torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count()))
    except ImportError:
        pass
    versions = {"python": platform.python_version()}
    for name in ("numpy", "torch", "triton", "transformers", "matplotlib"):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    commit = _run_text(["git", "rev-parse", "--short", "HEAD"]) or "unknown"
    dirty = bool(_run_text(["git", "status", "--porcelain", "--untracked-files=no"]))
    llama = {"source": f"llama-cpp-python {LLAMA_CPP_PYTHON_VERSION} sdist (vendored)"}
    if llama_bin:
        version = _run_text([str(llama_bin / "llama-server"), "--version"]).splitlines()
        llama["version"] = next((v for v in version if v.startswith("version")), "unknown")
        stamp = llama_bin.parent / "exactserve-build.txt"
        llama["build"] = stamp.read_text().strip() if stamp.exists() else "unknown"
    return {
        "cpu": cpu.get("model name", platform.processor() or "unknown"),
        "simd": [f for f in flags if f.startswith(SIMD)],
        "flags": flags,
        "cores": os.cpu_count(),
        "affinity": len(os.sched_getaffinity(0)),
        "ram_gib": mem_kib / 2**20,
        "gpu": gpu,
        "os": platform.platform(),
        "versions": versions,
        "exactserve": f"{metadata.version('exactserve')}, git {commit}"
        + (" with local changes" if dirty else ""),
        "llama.cpp": llama,
    }


# --- sections: each returns a JSON-ready dict with its "commands" ---------------------


def speed_section(plan: Plan, model: Path, bin_dir: Path, logs: Path) -> dict:
    from .cpu_speed import llama_bench_command, llama_bench_tests

    threads = list(plan.threads)
    cmd = llama_bench_command(
        bin_dir, model, list(plan.n_prompts), [plan.n_gen], threads, plan.llama_reps
    )
    theirs = llama_bench_tests(cmd)
    commands = [cmd]
    ours: dict[tuple[str, int], list[float]] = {}
    matmul: dict[str, int] = {}
    for n in threads:
        out = logs / f"speed-ours-{n}.json"
        ours_cmd = [sys.executable, "-m", "bench.cpu_speed", "--ours-only", "--model", str(model)]
        ours_cmd += ["--threads", str(n), "--tile-threads", str(n), "--reps", str(plan.reps)]
        ours_cmd += ["--prompt-tokens", ",".join(map(str, plan.n_prompts))]
        ours_cmd += ["--gen-tokens", str(plan.n_gen), "--json", str(out)]
        print(f"running: {shlex.join(ours_cmd)}", file=sys.stderr, flush=True)
        subprocess.run(ours_cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
        result = json.loads(out.read_text())
        for test, rates in result["exactserve"].items():
            ours[(test, n)] = rates
        matmul.update(result.get("weight_bytes_per_token", {}))
        commands.append(ours_cmd)
    rows = [
        {"test": test, "threads": n, "llama.cpp": theirs.get((test, n), []), "exactserve": rates}
        for (test, n), rates in sorted(ours.items(), key=lambda kv: _test_order(*kv[0]))
    ]
    return {"rows": rows, "commands": commands, "matmul": matmul}


def _test_order(test: str, threads: int) -> tuple:
    """pp before tg, then by size, then by threads."""
    return (test[:2], int(test[2:]), threads)


def prefix_text(model: Path, text: Path, n_tokens: int) -> Path:
    """A file holding the shortest prefix of `text` (cut at a line end) that our tokenizer
    makes at least `n_tokens` tokens of, cached beside fidelity's other files."""
    from exactserve.runtime.tokenizer import Tokenizer

    tokenizer = Tokenizer.from_gguf(model)
    content = text.read_text()
    lines = content.splitlines(keepends=True)
    total = len(tokenizer.encode(content, add_special=True))
    keep = max(1, int(len(lines) * n_tokens / total))
    while (
        keep < len(lines)
        and len(tokenizer.encode("".join(lines[:keep]), add_special=True)) < n_tokens
    ):
        keep += max(1, keep // 20)
    path = cache_dir() / "fidelity" / "texts" / f"{text.name}-first-{n_tokens}-tokens.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(lines[:keep]))
    return path


def fidelity_section(plan: Plan, model: Path, bin_dir: Path) -> dict:
    from .fidelity import DEFAULT_TEXT, measure

    text = DEFAULT_TEXT
    if plan.chunks:  # llama-perplexity needs 2 * n_ctx tokens at least; a margin for BOS
        text = prefix_text(model, DEFAULT_TEXT, plan.chunks * 512 + 64)
    result = measure(model, text, 512, 2, plan.chunks, bin_dir=bin_dir)
    running = result["llama.cpp"]["running_kld"]
    # per-chunk means from the running means (printed to 5 decimals by llama-perplexity)
    result["llama.cpp"]["chunk_kld"] = [
        (k + 1) * m - k * (running[k - 1] if k else 0.0) for k, m in enumerate(running)
    ]
    return json.loads(json.dumps(result, default=str))


def determinism_section(plan: Plan, model: Path, llama_server: Path) -> dict:
    from tqdm import tqdm

    engines = ["exactserve", "llama.cpp"]
    total = determinism.batches_per_setting(plan.quick) * len(determinism.SETTINGS)
    with tqdm(total=total, desc="determinism batches", unit="batch") as bar:
        results = determinism.run_all(
            model, engines, plan.quick, 16, llama_server, tick=lambda: bar.update()
        )
    data = determinism.to_json(results)
    data["summary"] = determinism.summary(results)
    data["commands"] = [
        f"{_code(r.command)}  # {r.setting.name}"
        + ("" if r.setting.cache_prompt is None else f": cache_prompt {r.setting.cache_prompt}")
        for r in results
    ]
    data["max_tokens"] = 16
    return data


def serving_section(plan: Plan, model: Path, llama_server: Path) -> dict:
    from . import serve_load

    args = argparse.Namespace(
        **plan.serving,
        concurrency=[1, 4, 8],
        threads=2,
        api="completions",
        level_timeout=900.0,
        load_timeout=300.0,
        llama_server=llama_server,
    )
    prompts = serve_load.make_prompts(
        model, sum(c * args.requests for c in args.concurrency), args.prompt_tokens
    )
    engines = []
    for name in ("llama.cpp", "exactserve"):
        port = serve_load.free_port()
        run = serve_load.EngineRun(name, serve_load.engine_command(name, args, model, port))
        serve_load.run_engine(run, port, args, prompts)
        levels = {str(c): serve_load.summarise(run, c) for c in run.levels}
        engines.append(
            {
                "name": name,
                "command": run.command,
                "peak_rss_mib": run.peak_rss_mib,
                "levels": levels,
            }
        )
    config = {k: v for k, v in vars(args).items() if k != "llama_server"}
    return {"config": config, "engines": engines, "commands": [e["command"] for e in engines]}


def agent_conversation(n_messages: int, results: list[str], offset: int = 0) -> dict:
    """An OpenAI Chat body shaped like a coding agent's turn: system, task, then assistant
    tool calls each answered by a real tool result from the corpus (successes and
    failures as they come), a short assistant note every fifth call; `n_messages` long."""
    tools = [
        {
            "type": "function",
            "function": {
                "name": name,
                "description": f"{name} tool",
                "parameters": {"type": "object", "properties": {"arg": {"type": "string"}}},
            },
        }
        for name in ("run_shell_command", "read_file", "edit", "web_fetch")
    ]
    messages: list[dict] = [
        {"role": "system", "content": "You are a coding agent. Use the tools to finish the task."},
        {"role": "user", "content": "Fix the failing test in tests/test_parser.py and run it."},
    ]
    call = 0
    while len(messages) < n_messages:
        text = results[(offset + call) % len(results)]
        name = tools[call % len(tools)]["function"]["name"]
        call_id = f"call_{call}"
        arguments = json.dumps({"arg": f"step {call}"})
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": name, "arguments": arguments},
                    }
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": call_id, "content": text or " "})
        if call % 5 == 4:
            messages.append({"role": "assistant", "content": f"Step {call} done; continuing."})
        call += 1
    return {"model": "m", "messages": messages[:n_messages], "tools": tools}


def corpus_results() -> list[str]:
    """The texts of tests/toolerr/corpus's real tool results, in file order."""
    out = []
    for split in ("dev", "test"):
        path = ROOT / "tests" / "toolerr" / "corpus" / f"{split}.jsonl"
        out += [json.loads(line)["text"] for line in path.read_text("utf-8").splitlines()]
    return out


def decode_step_seconds(model: Path, steps: int = 8) -> float:
    """Median time of one single-token forward pass after a 16-token prompt (reference
    backend or $EXACTSERVE_BACKEND, one tile thread: as `exactserve serve` runs)."""
    from exactserve.runtime.model import load_model

    m = load_model(model)
    cache = m.new_cache()
    m.forward(cache, list(range(2, 18)))
    times = []
    for token in range(100, 100 + steps):
        started = time.perf_counter()
        m.forward(cache, [token])
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def toolerr_section(plan: Plan, model: Path, speed: dict | None) -> dict:
    from exactserve.toolerr.forms import Options
    from exactserve.toolerr.request import process

    step, step_source = None, ""
    for row in (speed or {}).get("rows", []):
        if row["test"].startswith("tg") and row["threads"] == 1 and row["exactserve"]:
            step = 1 / statistics.mean(row["exactserve"])
            step_source = f"1 / mean {row['test']} tokens/s at 1 thread (Speed section)"
    if step is None:
        step, step_source = decode_step_seconds(model), "median of 8 decode steps, measured here"
    results = corpus_results()
    rows = []
    for n_messages in (10, 50, 200):
        bodies = [agent_conversation(n_messages, results, offset=17 * i) for i in range(8)]
        for form, rules in TOOLERR_CONFIGS:
            options = Options(form=form, rules=rules)
            per_request = []
            for _ in range(plan.toolerr_rounds):
                started = time.perf_counter()
                for body in bodies:
                    process(body, "chat", AGENT_UA, options)
                per_request.append((time.perf_counter() - started) / len(bodies) * 1e6)
            rows.append(
                {
                    "messages": n_messages,
                    "form": form,
                    "rules": rules,
                    "median_us": statistics.median(per_request),
                    "best_us": min(per_request),
                    "fraction_of_step": statistics.median(per_request) / (step * 1e6),
                }
            )
    return {
        "rows": rows,
        "decode_step_s": step,
        "decode_step_source": step_source,
        "user_agent": AGENT_UA,
        "rounds": plan.toolerr_rounds,
        "commands": [],
    }


# --- the command ------------------------------------------------------------------------


def run_sections(args: argparse.Namespace, plan: Plan, model: Path, out: Path) -> dict:
    """Every chosen section in turn; a failure is recorded and the next one runs."""
    from tqdm import tqdm

    from .fidelity import llama_bin_dir

    needs_llama = set(args.sections) - {"toolerr"}
    bin_dir = llama_bin_dir(progress=True) if needs_llama else None
    report: dict = {"machine": machine_info(bin_dir)}
    logs = out / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    runners = {
        "speed": lambda: speed_section(plan, model, bin_dir, logs),
        "fidelity": lambda: fidelity_section(plan, model, bin_dir),
        "determinism": lambda: determinism_section(plan, model, bin_dir / "llama-server"),
        "serving": lambda: serving_section(plan, model, bin_dir / "llama-server"),
        "toolerr": lambda: toolerr_section(plan, model, report.get("speed")),
    }
    chosen = [s for s in SECTIONS if s in args.sections]
    for key in tqdm(chosen, desc="report sections", unit="section"):
        tqdm.write(f"== {key} ==", file=sys.stderr)
        started = time.perf_counter()
        load = os.getloadavg()[0]
        try:
            report[key] = runners[key]()
        except (Exception, SystemExit) as exc:  # noqa: BLE001  (a section's failure is data)
            traceback.print_exc()
            report[key] = {"error": f"{type(exc).__name__}: {str(exc)[-1500:]}"}
        report[key]["seconds"] = time.perf_counter() - started
        report[key]["load"] = [load, os.getloadavg()[0]]
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.report", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--quick", action="store_true", help="the under-10-minute report")
    parser.add_argument("--model", type=Path, help="GGUF file (default: the demo model)")
    parser.add_argument("--out", type=Path, default=Path("report"), help="directory (report)")
    parser.add_argument(
        "--device", choices=("cpu", "cuda"), default="cpu", help="cuda: ours on Triton"
    )
    parser.add_argument("--sections", default=",".join(SECTIONS), help="comma-separated")
    args = parser.parse_args(argv)
    args.sections = [s.strip() for s in args.sections.split(",") if s.strip()]
    if unknown := set(args.sections) - set(SECTIONS):
        parser.error(f"unknown sections {sorted(unknown)}: choose from {', '.join(SECTIONS)}")
    if error := device_error(args.device):
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.device == "cuda":
        os.environ["EXACTSERVE_BACKEND"] = "triton"  # our side, in this process and children
    try:
        model = (args.model or demo_model_path()).resolve()
    except AssetError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not model.is_file():
        print(f"error: no such GGUF file: {model} (give --model PATH)", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    command = shlex.join(
        ["python", "-m", "bench.report", *(argv if argv is not None else sys.argv[1:])]
    )
    started, load_before = time.perf_counter(), os.getloadavg()[0]
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    report = run_sections(args, Plan(args.quick), model, args.out)
    report["meta"] = {
        "command": command,
        "started": stamp,
        "seconds": time.perf_counter() - started,
        "quick": args.quick,
        "device": args.device,
        "model": str(model),
        "model_mib": model.stat().st_size / 2**20,
        "load_before": load_before,
        "load_after": os.getloadavg()[0],
    }
    (args.out / "report.json").write_text(json.dumps(report, indent=1, default=str))
    images = write_plots(report, args.out)
    (args.out / "report.md").write_text(render_markdown(report, images))
    print(f"wrote {args.out / 'report.md'} in {report['meta']['seconds'] / 60:.1f} minutes")
    failed = [key for key in SECTIONS if "error" in (report.get(key) or {})]
    if failed:
        print(f"failed sections: {', '.join(failed)} (see report.md)", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
