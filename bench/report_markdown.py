"""bench/report.py's markdown: one writer per section, the headline and the whole page,
from the JSON-ready dicts the sections return."""

from __future__ import annotations

import math
import shlex
import statistics
from pathlib import Path

from . import determinism

SECTIONS = ("speed", "fidelity", "determinism", "serving", "toolerr")
BACKENDS = {
    "cpu": "exactserve: the reference backend's CPU engine (runtime/cpu); llama.cpp: its CPU "
    "backend",
    "cuda": "exactserve: the Triton kernels on the GPU; llama.cpp: its CPU backend (bench/"
    "build_llama_cpp.sh builds no CUDA backend yet, so its columns are CPU numbers)",
}
BUSY_LOAD = 0.5  # 1-minute load average above which the report warns


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows] + [""]


def _spread(rates: list[float]) -> str:
    """mean ± standard deviation (best), n"""
    if not rates:
        return "-"
    sd = statistics.stdev(rates) if len(rates) > 1 else 0.0
    return f"{statistics.mean(rates):.1f} ± {sd:.1f} (best {max(rates):.1f}, n={len(rates)})"


def _ratio(ours: list[float], theirs: list[float], pick=statistics.mean) -> str:
    return f"{pick(ours) / pick(theirs):.3f}x" if ours and theirs else "-"


def _threads(n: int) -> str:
    return f"{n} thread" + ("s" if n != 1 else "")


def _code(cmd: list[str]) -> str:
    return shlex.join(str(c) for c in cmd)


def speed_lines(data: dict) -> list[str]:
    header = ["test", "threads", "llama.cpp tokens/s", "exactserve tokens/s", "ratio", "of best"]
    rows = [
        [
            r["test"],
            r["threads"],
            _spread(r["llama.cpp"]),
            _spread(r["exactserve"]),
            _ratio(r["exactserve"], r["llama.cpp"]),
            _ratio(r["exactserve"], r["llama.cpp"], max),
        ]
        for r in data["rows"]
    ]
    notes = [
        "tokens/s as mean ± standard deviation over the repetitions (best); ratio = exactserve "
        "/ llama.cpp of the means and of the best repetitions. pp: one forward pass over N "
        "prompt tokens from an empty cache; tg128: 128 single-token passes, logits of each "
        "computed; sampling and tokenisation excluded on both sides (bench/cpu_speed.py). "
        "Threads: llama-bench `-t N`; exactserve shares matmul panels, rows and attention "
        "tiles out over N threads (`exactserve serve --threads`, default: the CPUs "
        "available).",
        "",
    ]
    for variant, n_bytes in data.get("matmul", {}).items():
        notes[-1:-1] = [
            "",
            f"exactserve's CPU matmul: `{variant}` (the fastest variant that passed its check "
            f"on this CPU), reading {n_bytes / 1e6:.0f} MB of weights per decoded token.",
        ]
    return _table(header, rows) + notes


def fidelity_lines(data: dict) -> list[str]:
    tf, llama = data["transformers"], data["llama.cpp"]
    ours = data.get("exactserve")
    base = llama["ppl"]
    rows = [
        [
            "transformers float32",
            f"{tf['ppl']:.4f}",
            f"{tf['ppl'] / base - 1:+.2%}",
            "0",
            "100%",
            f"{tf['same_top_llama']:.2%}",
        ],
        [
            "llama.cpp `llama-perplexity`",
            f"{base:.4f}",
            "+0.00%",
            f"{llama['kld']:.6f} ± {llama['kld_unc']:.6f}",
            f"{llama['same_top']:.2%}",
            "100%",
        ],
    ]
    if ours:
        rows.append(
            [
                "exactserve (reference)",
                f"{ours['ppl']:.4f}",
                f"{ours['ppl'] / base - 1:+.2%}",
                f"{ours['kld']:.6f} ± {ours['kld_unc']:.6f}",
                f"{ours['same_top']:.2%}",
                f"{ours['same_top_llama']:.2%}",
            ]
        )
    header = [
        "engine",
        "perplexity",
        "vs llama.cpp",
        "mean KLD to float32",
        "top-1 = float32",
        "top-1 = llama.cpp",
    ]
    tokens = "reproduces" if data.get("same_tokens") else "DIFFERS FROM"
    intro = [
        f"Text `{Path(data['text']).name}`, context {data['n_ctx']}: {data['n_chunk']} of "
        f"{data['n_chunk_total']} chunks, {data['n_rows']} scored tokens, scored as "
        f"`llama-perplexity` scores them (bench/fidelity.py); our tokenizer {tokens} "
        "llama.cpp's tokens. KL divergence and top-1 are against a float32 transformers run "
        "of the same GGUF, with llama-perplexity's own formula on both sides.",
        "",
    ]
    return intro + _table(header, rows)


def serving_lines(data: dict) -> list[str]:
    llama, ours = data["engines"]
    header = [
        "concurrency",
        "metric",
        "llama.cpp mean / p50 / p90",
        "exactserve mean / p50 / p90",
        "exactserve / llama.cpp",
    ]
    rows = []
    for level in llama["levels"]:
        a, b = llama["levels"][level], ours["levels"].get(level, {})
        for metric in ("requests ok/sent", "output tokens/s", "TTFT ms", "ITL ms", "E2E ms"):
            va, vb = a.get(metric), b.get(metric)
            fmt = "{:.0f}" if metric.startswith("requests") else "{:.1f}"
            cells = [" / ".join(fmt.format(v) for v in x) if x else "-" for x in (va, vb)]
            ratio = (
                f"{vb[0] / va[0]:.3f}x" if va and vb and va[0] and "requests" not in metric else ""
            )
            rows.append([level, metric, *cells, ratio])
    rss = [e["peak_rss_mib"] for e in (llama, ours)]
    rows.append(
        [
            "all",
            "peak RSS MiB",
            *(f"{r:.0f}" if r else "-" for r in rss),
            f"{rss[1] / rss[0]:.2f}x" if all(rss) else "",
        ]
    )
    c = data["config"]
    intro = [
        f"bench/serve_load.py: C clients each sending {c['requests']} streaming "
        f"/v1/completions requests back to back; prompts of {c['prompt_tokens']} tokens, "
        f"{c['max_tokens']} generated (greedy, ignore_eos); TTFT = request to first text "
        "chunk, ITL = gap between text chunks, E2E = request to end of stream; peak RSS = "
        "the server's VmHWM.",
        "",
    ]
    return intro + _table(header, rows)


def toolerr_lines(data: dict) -> list[str]:
    header = ["messages", "form / rules", "median µs per request", "best µs", "of one decode step"]
    rows = [
        [
            r["messages"],
            f"{r['form']} / {r['rules']}",
            f"{r['median_us']:.0f}",
            f"{r['best_us']:.0f}",
            f"{r['fraction_of_step']:.3%}",
        ]
        for r in data["rows"]
    ]
    intro = [
        "`exactserve.toolerr.request.process` on OpenAI Chat bodies shaped like a coding "
        "agent's turn (system, task, tool calls each answered by a real tool result from "
        "tests/toolerr/corpus, successes and failures as they come), User-Agent "
        f"`{data['user_agent']}`, median of {data['rounds']} rounds over 8 conversations "
        f"per size. One decode step of the model: {data['decode_step_s'] * 1e3:.1f} ms "
        f"({data['decode_step_source']}).",
        "",
    ]
    return intro + _table(header, rows)


def headline(report: dict) -> list[str]:
    out = []
    meta = report.get("meta") or {}
    if meta.get("load_before", 0) > BUSY_LOAD:
        out.append(
            f"**The machine was busy**: load average {meta['load_before']:.2f} before the run "
            "started. Other processes slow llama.cpp's thread barriers far more than our "
            "single-threaded steps: rerun on a quiet machine before quoting the speed ratios."
        )
    speed = report.get("speed") or {}
    for n in sorted({r["threads"] for r in speed.get("rows", [])}):
        parts = [
            f"{r['test']} {_ratio(r['exactserve'], r['llama.cpp'])}"
            for r in speed["rows"]
            if r["threads"] == n
        ]
        out.append(f"Speed, exactserve / llama.cpp at {_threads(n)}: {', '.join(parts)}.")
    fid = report.get("fidelity") or {}
    if "exactserve" in fid:
        ours, llama = fid["exactserve"], fid["llama.cpp"]
        out.append(
            f"Fidelity to float32: mean KLD {ours['kld']:.6f} (exactserve) vs "
            f"{llama['kld']:.6f} (llama.cpp); top-1 {ours['same_top']:.2%} vs "
            f"{llama['same_top']:.2%}; perplexity {ours['ppl']:.4f} vs {llama['ppl']:.4f}."
        )
    det = report.get("determinism") or {}
    if det.get("summary"):
        parts = [
            f"{r['setting']}, {r['kind']}: {r['sequences']} ({r['texts']} texts) in {r['runs']}"
            for r in det["summary"]
        ]
        out.append("Determinism, distinct logprob sequences in N runs: " + "; ".join(parts) + ".")
    serving = report.get("serving") or {}
    if serving.get("engines"):
        top = max(serving["engines"][0]["levels"], key=int)
        rates = [
            e["levels"].get(top, {}).get("output tokens/s", [math.nan])[0]
            for e in serving["engines"]
        ]
        out.append(
            f"Serving at concurrency {top}: {rates[1]:.1f} (exactserve) vs {rates[0]:.1f} "
            "(llama.cpp) output tokens/s."
        )
    tool = report.get("toolerr") or {}
    if tool.get("rows"):
        worst = max(tool["rows"], key=lambda r: r["median_us"])
        out.append(
            f"Tool-error layer: at most {worst['median_us']:.0f} µs per request "
            f"({worst['messages']} messages, {worst['form']}/{worst['rules']}), "
            f"{worst['fraction_of_step']:.2%} of one decode step."
        )
    return [f"- {line}" for line in out] + [""]


def render_markdown(report: dict, images: dict[str, str]) -> str:
    """The whole report.md from `report` (as written to report.json) and the plot files."""
    meta, machine = report["meta"], report["machine"]
    lines = [
        f"# exactserve vs llama.cpp on {Path(meta['model']).name}",
        "",
        f"Generated {meta['started']} by `{meta['command']}` in {meta['seconds'] / 60:.1f} "
        f"minutes ({'quick' if meta['quick'] else 'full'} run, device {meta['device']}). "
        "Regenerate with the same command; raw numbers are in report.json.",
        "",
        *headline(report),
        "## Machine and versions",
        "",
    ]
    llama = machine["llama.cpp"]
    rows = [
        ["CPU", f"{machine['cpu']}, {machine['cores']} cores ({machine['affinity']} usable)"],
        ["SIMD flags", " ".join(machine["simd"]) or "-"],
        ["RAM", f"{machine['ram_gib']:.1f} GiB"],
        ["GPU", machine["gpu"]],
        ["OS", machine["os"]],
        ["load average", f"{meta['load_before']:.2f} before, {meta['load_after']:.2f} after"],
        ["exactserve", machine["exactserve"]],
        ["llama.cpp", f"{llama.get('version', '-')}, {llama['source']}"],
        ["llama.cpp build", f"`{llama.get('build', '-')}`"],
        ["backends", BACKENDS[meta["device"]]],
        ["model", f"`{meta['model']}` ({meta['model_mib']:.1f} MiB)"],
    ]
    rows += [[name, version] for name, version in machine["versions"].items()]
    lines += _table(["", ""], rows)
    sections = [
        ("speed", "Speed", speed_lines),
        ("fidelity", "Fidelity", fidelity_lines),
        ("determinism", "Determinism", determinism.markdown_lines),
        ("serving", "Serving", serving_lines),
        ("toolerr", "Tool-error layer cost", toolerr_lines),
    ]
    for key, title, render in sections:
        lines += [f"## {title}", ""]
        data = report.get(key)
        if data is None:
            lines += ["Not run (`--sections`).", ""]
        elif "error" in data:
            lines += [f"**Failed**: `{data['error']}`", ""]
        else:
            if "seconds" in data:
                lines += [
                    f"*{data['seconds']:.0f} s; 1-minute load average {data['load'][0]:.2f} "
                    f"at the start, {data['load'][1]:.2f} at the end.*",
                    "",
                ]
            lines += render(data)
            if key in images:
                lines += [f"![{title}]({images[key]})", ""]
    lines += ["## Commands", "", "```", meta["command"]]
    for key in SECTIONS:
        commands = (report.get(key) or {}).get("commands", [])
        lines += [f"# {key}"] if commands else []
        lines += [c if isinstance(c, str) else _code(c) for c in commands]
    lines += ["```", ""]
    return "\n".join(lines)
