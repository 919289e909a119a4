"""Fidelity of exactserve's arithmetic on a real model, next to llama.cpp.

    python bench/fidelity.py [--model GGUF] [--text FILE] [--ctx 512]

Three engines score the same tokens of a text (default: the GPL-3 licence) the way
llama.cpp's `llama-perplexity` does (tools/perplexity/perplexity.cpp, `perplexity`):

- the text is tokenised once with BOS (llama.cpp's tokens, read back from its saved file);
- it is cut into n_chunk = n_tokens // n_ctx chunks of n_ctx tokens, each evaluated from an
  empty cache with its first token replaced by BOS;
- positions n_ctx//2 .. n_ctx-2 of each chunk are scored on the token that follows them.

Engines: llama.cpp (its own binary), a float32 transformers run of the same GGUF (the
reference distribution), and ours. Reported: perplexity of each; mean KL divergence from
the float32 run (llama.cpp's number computed by `llama-perplexity --kl-divergence`, ours by
the same formula in bench/logprob_file.py); top-1 agreement with the float32 run and
between ours and llama.cpp. llama.cpp's and transformers' results are cached under
runtime.assets.cache_dir()/fidelity; ours are recomputed every time.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from exactserve.runtime.assets import cache_dir, demo_model_path
from exactserve.runtime.gguf_file import open_gguf

if __package__:  # python -m bench.report imports it as bench.fidelity
    from .logprob_file import (
        KLStats,
        LogprobFile,
        LogprobWriter,
        accumulate_kl,
        read_logprob_file,
        scored_rows,
    )
else:  # python bench/fidelity.py
    from logprob_file import (
        KLStats,
        LogprobFile,
        LogprobWriter,
        accumulate_kl,
        read_logprob_file,
        scored_rows,
    )

DEFAULT_TEXT = Path("/usr/share/common-licenses/GPL-3")
BENCH_DIR = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Job:
    model: Path
    text: Path
    n_ctx: int
    threads: int
    work: Path  # cache directory of this (model, text, n_ctx)


def llama_bin_dir(progress: bool = False) -> Path:
    """llama.cpp's bin directory, building it first if needed (bench/build_llama_cpp.sh).

    With `progress` the script's stderr (its settings, cmake's [ NN%] lines, the check runs)
    goes straight to ours instead of being kept for the error message."""
    proc = subprocess.run(
        ["bash", str(BENCH_DIR / "build_llama_cpp.sh")],
        env={**os.environ, "PYTHON": sys.executable},
        stdout=subprocess.PIPE,
        stderr=None if progress else subprocess.PIPE,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        tail = "(its output is above)" if progress else proc.stderr[-3000:]
        raise SystemExit(f"building llama.cpp failed:\n{tail}")
    return Path(proc.stdout.strip().splitlines()[-1])


def _run_cached(name: str, job: Job, cmd: list[str]) -> str:
    """Runs a llama.cpp command once per cache directory; returns its stdout+stderr."""
    log = job.work / f"{name}.log"
    if log.exists():
        return log.read_text()
    print(f"running: {' '.join(cmd)}", file=sys.stderr, flush=True)
    proc = subprocess.run(["nice", "-n", "10", *cmd], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[0]} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    log.write_text(proc.stdout + proc.stderr)
    return log.read_text()


def llama_cpp_perplexity(bin_dir: Path, job: Job) -> tuple[list[float], LogprobFile]:
    """`llama-perplexity -m MODEL -f TEXT -c N`, also saving its log-probabilities.

    Returns its running perplexity after each chunk ("[k]ppl," in its output; the last one
    is its final estimate) and the saved file.
    """
    path = job.work / "llama.cpp.logprobs"
    out = _run_cached("llama-perplexity", job, perplexity_command(bin_dir, job))
    running = [float(v) for v in re.findall(r"\[\d+\]([\d.]+),", out)]
    final = re.search(r"Final estimate: PPL = ([\d.]+)", out)
    if not running or not final:
        raise SystemExit(f"no perplexity in llama-perplexity's output:\n{out[-2000:]}")
    return running, read_logprob_file(path)


def perplexity_command(bin_dir: Path, job: Job) -> list[str]:
    """`llama-perplexity -m MODEL -f TEXT -c N -t T --kl-divergence-base llama.cpp.logprobs`"""
    path = job.work / "llama.cpp.logprobs"
    cmd = [str(bin_dir / "llama-perplexity"), "-m", str(job.model), "-f", str(job.text)]
    return cmd + ["-c", str(job.n_ctx), "-t", str(job.threads), "--kl-divergence-base", str(path)]


def kl_command(bin_dir: Path, job: Job, base: Path) -> list[str]:
    """`llama-perplexity ... --kl-divergence-base BASE --kl-divergence`"""
    cmd = [str(bin_dir / "llama-perplexity"), "-m", str(job.model), "-c", str(job.n_ctx)]
    return cmd + ["-t", str(job.threads), "--kl-divergence-base", str(base), "--kl-divergence"]


def llama_cpp_kl(bin_dir: Path, job: Job, base: Path, n_chunk: int) -> dict:
    """`llama-perplexity --kl-divergence` of llama.cpp against the saved `base` file.

    Reads the running statistics printed after chunk `n_chunk` (its table rows: chunk,
    PPL, ln ratio, KLD, delta-p RMS, same top, each "value ± uncertainty"); when that is
    the last chunk, the more precise final summary instead. `running_kld`: its running
    mean KLD after each of the first n_chunk chunks, as printed (5 decimals).
    """
    out = _run_cached(f"llama-kl-vs-{base.stem}", job, kl_command(bin_dir, job, base))
    number = r"\s*(-?[\d.]+)\s*±\s*(-?[\d.]+)\s*%?"
    rows = {int(m[1]): m.groups()[1:] for m in re.finditer(r"^\s*(\d+)" + number * 5, out, re.M)}
    final = re.search(r"Mean\s+KLD:" + number, out)
    same_top = re.search(r"Same top p:" + number, out)
    if n_chunk not in rows or not final or not same_top:
        raise SystemExit(f"unexpected llama-perplexity KL output:\n{out[-2000:]}")
    running = [float(rows[k][4]) for k in range(1, n_chunk + 1) if k in rows]
    if n_chunk == max(rows):
        return {
            "kld": float(final[1]),
            "kld_unc": float(final[2]),
            "same_top": float(same_top[1]) / 100,
            "running_kld": running,
        }
    row = rows[n_chunk]
    return {
        "kld": float(row[4]),
        "kld_unc": float(row[5]),
        "same_top": float(row[8]) / 100,
        "running_kld": running,
    }


def chunk_inputs(tokens: np.ndarray, n_ctx: int, chunk: int, bos_id: int | None) -> np.ndarray:
    """The tokens evaluated for `chunk`: its n_ctx tokens with the first replaced by BOS."""
    ids = np.array(tokens[chunk * n_ctx : (chunk + 1) * n_ctx], dtype=np.int64)
    if bos_id is not None:
        ids[0] = bos_id
    return ids


def next_tokens(tokens: np.ndarray, n_ctx: int, chunk: int) -> np.ndarray:
    """The scored targets of `chunk`: tokens at positions n_ctx//2 + 1 .. n_ctx - 1."""
    start = chunk * n_ctx
    return np.asarray(tokens[start + n_ctx // 2 + 1 : start + n_ctx], dtype=np.int64)


def bos_id_of(model: Path) -> int | None:
    """The BOS id llama-perplexity puts first in each chunk, or None if the vocab adds none."""
    with open_gguf(model) as gguf:
        meta = gguf.metadata
        if not meta.get("tokenizer.ggml.add_bos_token", True):
            return None
        return int(meta["tokenizer.ggml.bos_token_id"])


def nll_sum(logits: np.ndarray, targets: np.ndarray) -> float:
    """Sum over rows of -log softmax(logits)[target], in float64."""
    x = logits.astype(np.float64)
    peak = x.max(axis=1, keepdims=True)
    log_norm = np.log(np.exp(x - peak).sum(axis=1)) + peak[:, 0]
    return float((log_norm - x[np.arange(len(targets)), targets]).sum())


def transformers_run(job: Job, tokens: np.ndarray, n_vocab: int, bos_id: int | None) -> dict:
    """Float32 transformers logits of every chunk, saved in llama-perplexity's format."""
    path = job.work / "transformers-f32.logprobs"
    meta_path = job.work / "transformers-f32.json"
    if meta_path.exists() and path.exists():
        cached = json.loads(meta_path.read_text())
        if "chunk_nll" in cached:
            return cached
    import torch
    from transformers import AutoModelForCausalLM

    torch.set_num_threads(job.threads)
    print("transformers: loading the GGUF as float32 ...", file=sys.stderr, flush=True)
    model = AutoModelForCausalLM.from_pretrained(
        str(job.model.parent),
        gguf_file=job.model.name,
        dtype=torch.float32,
        attn_implementation="eager",
    )
    model.eval()
    n_chunk = len(tokens) // job.n_ctx
    keep = job.n_ctx - job.n_ctx // 2  # rows n_ctx//2 .. n_ctx-1; the last one is not scored
    writer = LogprobWriter(path, job.n_ctx, n_vocab, tokens)
    nll, count, top1, chunk_nll = 0.0, 0, [], []
    for chunk in range(n_chunk):
        started = time.perf_counter()
        ids = torch.from_numpy(chunk_inputs(tokens, job.n_ctx, chunk, bos_id))[None]
        with torch.inference_mode():
            out = model(input_ids=ids, logits_to_keep=keep, use_cache=False)
        logits = out.logits[0, :-1].float().numpy()
        targets = next_tokens(tokens, job.n_ctx, chunk)
        chunk_nll.append(nll_sum(logits, targets))
        nll += chunk_nll[-1]
        count += len(targets)
        top1.extend(int(i) for i in logits.argmax(axis=1))
        writer.write_chunk(logits)
        seconds = time.perf_counter() - started
        print(
            f"transformers: chunk {chunk + 1}/{n_chunk} ({seconds:.1f} s), "
            f"ppl so far {math.exp(nll / count):.4f}",
            file=sys.stderr,
            flush=True,
        )
    writer.close()
    result = {"chunk_nll": chunk_nll, "top1": top1}
    meta_path.write_text(json.dumps(result))
    return result


def ours_run(
    job: Job,
    n_chunk: int,
    bos_id: int | None,
    tf_file: LogprobFile,
    llama_file: LogprobFile,
) -> dict:
    """Our reference engine over the first n_chunk chunks, compared with both saved files.

    `chunk_kld`: the mean KLD from the float32 run of each chunk's scored rows alone."""
    from exactserve.runtime.model import SequenceInput, load_model

    model = load_model(job.model)
    vs_tf, vs_llama = KLStats(), KLStats()
    chunk_kld = []
    first = job.n_ctx // 2
    tokens = tf_file.tokens
    for chunk in range(n_chunk):
        started = time.perf_counter()
        ids = chunk_inputs(tokens, job.n_ctx, chunk, bos_id)
        # Scored rows only: positions 0..first-1 without logits, then first..n_ctx-2 with
        # (the contract makes logits independent of how a prompt is split into calls).
        cache = model.new_cache()
        model.forward_batch([SequenceInput(cache, ids[:first], "none")])
        logits = model.logits_all(cache, ids[first:-1])
        targets = next_tokens(tokens, job.n_ctx, chunk)
        count, sum_kld = vs_tf.count, vs_tf.sum_kld
        accumulate_kl(vs_tf, logits, tf_file.base_log_probs(chunk), targets)
        chunk_kld.append((vs_tf.sum_kld - sum_kld) / (vs_tf.count - count))
        accumulate_kl(vs_llama, logits, llama_file.base_log_probs(chunk), targets)
        seconds = time.perf_counter() - started
        print(
            f"ours: chunk {chunk + 1}/{n_chunk} ({seconds:.1f} s), ppl so far "
            f"{vs_tf.ppl:.4f}, KLD {vs_tf.mean_kld:.6f}",
            file=sys.stderr,
            flush=True,
        )
    return {
        "ppl": vs_tf.ppl,
        "kld": vs_tf.mean_kld,
        "kld_unc": vs_tf.kld_uncertainty,
        "same_top": vs_tf.same_top,
        "same_top_llama": vs_llama.same_top,
        "kld_llama": vs_llama.mean_kld,
        "chunk_kld": chunk_kld,
    }


def our_tokenization(model: Path, text: Path) -> np.ndarray:
    from exactserve.runtime.tokenizer import Tokenizer

    content = text.read_text()
    if content.endswith("\n"):
        content = content[:-1]  # as llama.cpp's `-f` reads a file (common/arg.cpp)
    tokenizer = Tokenizer.from_gguf(model)
    return np.asarray(tokenizer.encode(content, add_special=True), dtype=np.int64)


def work_dir(model: Path, text: Path, n_ctx: int) -> Path:
    digest = hashlib.sha256(text.read_bytes()).hexdigest()[:12]
    stat = model.stat()
    key = f"{model.name}-{stat.st_size}-{text.name}-{digest}-c{n_ctx}"
    path = cache_dir() / "fidelity" / key
    path.mkdir(parents=True, exist_ok=True)
    return path


def print_table(rows: list[tuple[str, ...]]) -> None:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for n, row in enumerate(rows):
        print(
            "  ".join(
                cell.ljust(w) if i == 0 else cell.rjust(w)
                for i, (cell, w) in enumerate(zip(row, widths, strict=True))
            )
        )
        if n == 0:
            print("  ".join("-" * w for w in widths))


def measure(
    model: Path,
    text: Path,
    n_ctx: int = 512,
    threads: int = 2,
    chunks: int | None = None,
    skip_ours: bool = False,
    bin_dir: Path | None = None,
) -> dict:
    """Every number the table shows, as data: the three engines on the first `chunks`
    chunks (all when None). Keys: model, text, n_chunk, n_chunk_total, n_ctx, n_rows,
    same_tokens, work, commands (the llama.cpp command lines), transformers (ppl,
    same_top_llama), llama.cpp (ppl, kld, kld_unc, same_top, running_kld), exactserve
    (ours_run's dict, absent with skip_ours)."""
    job = Job(model, text, n_ctx, threads, work_dir(model, text, n_ctx))
    bin_dir = bin_dir or llama_bin_dir()
    llama_running, llama_file = llama_cpp_perplexity(bin_dir, job)
    tokens = llama_file.tokens
    bos_id = bos_id_of(model)
    tf = transformers_run(job, tokens, llama_file.n_vocab, bos_id)
    tf_path = job.work / "transformers-f32.logprobs"
    n_chunk = min(chunks or llama_file.n_chunk, llama_file.n_chunk)
    n_rows = n_chunk * scored_rows(job.n_ctx)
    llama_kl = llama_cpp_kl(bin_dir, job, tf_path, n_chunk)
    tf_top1 = np.asarray(tf["top1"][:n_rows])
    llama_top1 = np.concatenate(
        [np.argmax(llama_file.base_log_probs(c), axis=1) for c in range(n_chunk)]
    )
    result = {
        "model": model,
        "text": text,
        "n_chunk": n_chunk,
        "n_chunk_total": llama_file.n_chunk,
        "n_ctx": n_ctx,
        "n_rows": n_rows,
        "work": job.work,
        "commands": [perplexity_command(bin_dir, job), kl_command(bin_dir, job, tf_path)],
        "transformers": {
            "ppl": math.exp(sum(tf["chunk_nll"][:n_chunk]) / n_rows),
            "same_top_llama": float((llama_top1 == tf_top1).mean()),
        },
        "llama.cpp": {"ppl": llama_running[n_chunk - 1], **llama_kl},
    }
    if not skip_ours:
        tf_file = read_logprob_file(tf_path)
        result["exactserve"] = ours_run(job, n_chunk, bos_id, tf_file, llama_file)
    result["same_tokens"] = bool(
        np.array_equal(our_tokenization(model, text)[: len(tokens)], tokens)
    )
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, help="GGUF file (default: the demo model)")
    parser.add_argument("--text", type=Path, default=DEFAULT_TEXT)
    parser.add_argument("--ctx", type=int, default=512)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--chunks", type=int, help="report on the first N chunks only")
    parser.add_argument("--skip-ours", action="store_true", help="only llama.cpp and transformers")
    args = parser.parse_args(argv)
    model = (args.model or demo_model_path()).resolve()
    r = measure(model, args.text, args.ctx, args.threads, args.chunks, args.skip_ours)
    tf, llama, llama_ppl = r["transformers"], r["llama.cpp"], r["llama.cpp"]["ppl"]
    rows = [("engine", "PPL", "vs llama.cpp", "mean KLD vs f32", "top-1 = f32", "top-1 = llama")]
    rows.append(
        (
            "transformers f32",
            f"{tf['ppl']:.4f}",
            f"{tf['ppl'] / llama_ppl - 1:+.2%}",
            "0",
            "100%",
            f"{tf['same_top_llama']:.2%}",
        )
    )
    rows.append(
        (
            "llama.cpp",
            f"{llama_ppl:.4f}",
            "+0.00%",
            f"{llama['kld']:.6f} ± {llama['kld_unc']:.6f}",
            f"{llama['same_top']:.2%}",
            "100%",
        )
    )
    if "exactserve" in r:
        ours = r["exactserve"]
        rows.append(
            (
                "exactserve",
                f"{ours['ppl']:.4f}",
                f"{ours['ppl'] / llama_ppl - 1:+.2%}",
                f"{ours['kld']:.6f} ± {ours['kld_unc']:.6f}",
                f"{ours['same_top']:.2%}",
                f"{ours['same_top_llama']:.2%}",
            )
        )
    print(
        f"{model.name}; {args.text}: {r['n_chunk']} of {r['n_chunk_total']} chunks of "
        f"{args.ctx} tokens, {r['n_rows']} scored; our tokenizer "
        f"{'reproduces' if r['same_tokens'] else 'DIFFERS FROM'} llama.cpp's tokens"
    )
    print(f"cache: {r['work']}")
    print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
