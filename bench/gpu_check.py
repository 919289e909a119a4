"""GPU readiness of the Triton kernels: PTX audit, conformance on the device, timings.

    python bench/gpu_check.py                  # CUDA machine: every step, Llama-3-8B shapes
    python bench/gpu_check.py --smoke          # tiny shapes (the only mode without CUDA)
    python bench/gpu_check.py --out table.md   # also write the results table as Markdown

1. audit: compile every kernel specialisation for this device (without CUDA: for sm_90,
   the "smoke" subset) and fail on FMA, approximate or flush-to-zero instructions in the PTX
   (`kernels.audit`, in a subprocess with TRITON_INTERPRET=0: compiling needs no GPU).
2. conformance: the kernels against the NumPy reference at engine-sized shapes, on the
   device.
3. timing: each kernel on Llama-3-8B shapes with Q8_0 and Q4_K weights generated on the
   device (random blocks, sane fp16 scales), and prefill/decode of a whole generated model
   built from the kernels, next to the device's measured copy bandwidth and int8 rate.
4. with --pytest: the whole tests/kernels suite (its tensors live on the kernels' device,
   so on a GPU machine it runs on the GPU), last, so a slow suite cannot cost the timings.

On a lent GPU machine use bench/device_check.sh (after bench/device_prepare.sh here).

Without CUDA the kernels run under the Triton interpreter, so everything runs on tiny
shapes: the script stays exercised in CI (tests/kernels/test_gpu_check.py), but its
timings then mean nothing. Exit status 1 if the audit or a conformance check fails.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import torch
from gpu_model import (  # bench/ is this script's folder
    KV_BLOCK,
    LLAMA3_8B,
    SMOKE,
    WEIGHT_TYPES,
    Row,
    Shape,
    Timer,
    model_rows,
    random_weight,
    weight_bytes,
)

# exactserve.kernels sets TRITON_INTERPRET=1 without CUDA, before any kernel is defined
from exactserve import kernels
from exactserve.kernels.activations import gated, unary
from exactserve.kernels.attention import paged_attention
from exactserve.kernels.matmul import matmul_quantized
from exactserve.kernels.quantize import quantize_activations
from exactserve.kernels.rmsnorm import rmsnorm
from exactserve.reference import activations as ref_act
from exactserve.reference.attention import paged_attention as ref_paged_attention
from exactserve.reference.matmul import matmul as ref_matmul
from exactserve.reference.matmul import prepare_integer
from exactserve.reference.quantize import block_float as ref_block_float
from exactserve.reference.quants import to_integer_form
from exactserve.reference.rmsnorm import rmsnorm as ref_rmsnorm

ROOT = Path(__file__).resolve().parents[1]


def run_audit(level: str, capability: int | None) -> bool:
    command = [sys.executable, "-m", "exactserve.kernels.audit", "--level", level]
    if capability is not None:
        command += ["--capability", str(capability)]
    env = {**os.environ, "TRITON_INTERPRET": "0"}
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    print(result.stdout.rstrip() or result.stderr[-3000:], flush=True)
    return result.returncode == 0


# ---------------------------------------------------------------------------- conformance


def bits_equal(actual: torch.Tensor, expected: np.ndarray) -> bool:
    a = np.ascontiguousarray(actual.detach().cpu().numpy(), dtype=np.float32)
    e = np.ascontiguousarray(expected, dtype=np.float32)
    return a.shape == e.shape and np.array_equal(a.view(np.uint32), e.view(np.uint32))


def conformance(shape: Shape, device: torch.device) -> list[tuple[str, bool]]:
    rng = np.random.default_rng(0)
    results = []
    k, n = shape.n_embd, max(256, shape.n_embd // 4)
    x = rng.standard_normal((8, k)).astype(np.float32)
    for qtype in WEIGHT_TYPES:
        w = random_weight(qtype, n, k, device, seed=int(qtype))
        iw = to_integer_form(w.raw.cpu().numpy().reshape(-1), qtype, n, k)
        expected = ref_matmul(x, prepare_integer(iw.q, iw.scale, iw.offset, iw.group))
        acts = quantize_activations(torch.from_numpy(x).to(device))
        for path in ("decode", "prefill"):
            ok = bits_equal(matmul_quantized(acts, w, path=path), expected)
            results.append((f"matmul {qtype.name} {path} [8, {k}] x [{n}, {k}]^T", ok))
    h = rng.standard_normal((8, k)).astype(np.float32)
    weight = rng.standard_normal(k).astype(np.float32)
    actual = rmsnorm(torch.from_numpy(h).to(device), torch.from_numpy(weight).to(device), 1e-5)
    results.append((f"rmsnorm [8, {k}]", bits_equal(actual, ref_rmsnorm(h, weight, 1e-5))))
    sweep = (rng.standard_normal(1 << 14) * 8).astype(np.float32)  # finite, well inside exp's range
    for name in ("exp", "silu", "gelu_tanh"):
        expected = getattr(ref_act, name)(sweep)
        ok = bits_equal(unary(torch.from_numpy(sweep).to(device), name), expected)
        results.append((f"{name} on {sweep.size} values", ok))
    results.append(paged_conformance(shape, device, rng))
    return results


def paged_conformance(shape: Shape, device: torch.device, rng) -> tuple[str, bool]:
    """One paged-attention launch over a batch (a prefill, a decode step, a 3-token
    verification) whose keys sit in shuffled blocks of 16, against the reference."""
    h, h_kv, d = shape.n_heads, shape.n_kv_heads, shape.head_dim
    t = min(130, 2 * shape.prefill_tokens + 3)
    lengths = [t, t + 70, 67]
    positions = [np.arange(t), np.array([t + 69]), np.array([64, 65, 66])]
    per_seq = [-(-n // KV_BLOCK) for n in lengths]
    order = rng.permutation(sum(per_seq))
    tables = np.zeros((3, max(per_seq)), dtype=np.int32)
    for s, start in enumerate(np.cumsum([0, *per_seq[:-1]])):
        tables[s, : per_seq[s]] = order[start : start + per_seq[s]]
    pool = (len(order) * KV_BLOCK, h_kv, d)
    kb = ref_block_float(rng.standard_normal(pool).astype(np.float32))
    vb = ref_block_float(rng.standard_normal(pool).astype(np.float32))

    def blocks(a: np.ndarray) -> np.ndarray:  # [n * B, H_kv, ...] -> [n, H_kv, B, ...]
        return a.reshape(len(order), KV_BLOCK, *a.shape[1:]).swapaxes(1, 2).copy()

    ref_pools = [blocks(kb.integers), blocks(kb.scale), blocks(vb.integers), blocks(vb.scale)]
    our_pools = [torch.from_numpy(blocks(a)).to(device) for a in (
        kb.integers.astype(np.int32), np.frexp(kb.scale)[1].astype(np.int32) - 1,
        vb.integers.astype(np.int32), np.frexp(vb.scale)[1].astype(np.int32) - 1,
    )]  # fmt: skip
    q = rng.standard_normal((t + 4, h, d)).astype(np.float32) * np.float32(0.2)
    pos = np.concatenate(positions)
    starts = [0, t, t + 1, t + 4]
    expected = ref_paged_attention(q, pos, starts, lengths, tables, *ref_pools)
    actual = paged_attention(
        torch.from_numpy(q).to(device), torch.from_numpy(pos).to(device), starts, lengths,
        torch.from_numpy(tables).to(device), *our_pools,
    )  # fmt: skip
    name = f"paged attention, 3 sequences, T={t + 4} H={h}/{h_kv} D={d} blocks of {KV_BLOCK}"
    return name, bits_equal(actual, expected)


def run_pytest(marks: str) -> bool:
    command = [
        sys.executable,
        "-m",
        "pytest",
        "tests/kernels",
        "-q",
        "-x",
        "-p",
        "no:cacheprovider",
        "-m",
        marks,
    ]
    return subprocess.run(command, cwd=ROOT).returncode == 0


# --------------------------------------------------------------------------------- timing


def device_peaks(device: torch.device, timer: Timer, smoke: bool) -> tuple[float, float | None]:
    """(copy bandwidth in bytes/s: read + write, int8 matmul rate in ops/s or None)."""
    n = (16 if smoke else 1024) << 20
    src = torch.empty(n, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    bandwidth = 2 * n / timer.seconds(lambda: dst.copy_(src))
    if device.type != "cuda":
        return bandwidth, None
    size = 8192
    a = torch.randint(-128, 127, (size, size), dtype=torch.int8, device=device)
    b = torch.randint(-128, 127, (size, size), dtype=torch.int8, device=device)
    return bandwidth, 2 * size**3 / timer.seconds(lambda: torch._int_mm(a, b))


def kernel_rows(shape: Shape, device: torch.device, timer: Timer, peaks) -> list[Row]:
    bandwidth, int8_rate = peaks
    rows = []
    matrices = {
        "q/o": (shape.n_heads * shape.head_dim, shape.n_embd),
        "k/v": (shape.n_kv_heads * shape.head_dim, shape.n_embd),
        "gate/up": (shape.n_ff, shape.n_embd),
        "down": (shape.n_embd, shape.n_ff),
        "output": (shape.n_vocab, shape.n_embd),
    }
    for qtype in WEIGHT_TYPES:
        for label, (n, k) in matrices.items():
            w = random_weight(qtype, n, k, device, seed=n + k)
            for m in (1, shape.prefill_tokens):
                acts = quantize_activations(torch.randn((m, k), device=device))
                seconds = timer.seconds(lambda a=acts, w=w: matmul_quantized(a, w))
                if m == 1:
                    rate = weight_bytes(w) / seconds
                    achieved, peak = f"{rate / 1e9:.1f} GB/s", f"{100 * rate / bandwidth:.0f}% copy"
                else:
                    ops = 2 * m * n * k / seconds
                    achieved = f"{ops / 1e12:.2f} TOPS"
                    peak = f"{100 * ops / int8_rate:.0f}% int8" if int8_rate else "n/a"
                name = f"matmul {qtype.name} {label} M={m} [{n}x{k}]"
                rows.append(Row("kernel", name, 1e3 * seconds, achieved, peak))
    t, e = shape.prefill_tokens, shape.n_embd
    x = torch.randn((t, e), device=device)
    norm = torch.ones(e, device=device)
    cases = {
        f"rmsnorm [{t}, {e}]": (lambda: rmsnorm(x, norm, 1e-5), 2 * x.numel() * 4),
        f"quantize_activations [{t}, {e}]": (lambda: quantize_activations(x), x.numel() * 6),
    }
    g = torch.randn((t, shape.n_ff), device=device)
    cases[f"gated silu [{t}, {shape.n_ff}]"] = (lambda: gated(g, g, "silu"), 3 * g.numel() * 4)
    rows += attention_rows(shape, device, timer, bandwidth)
    for label, fn_bytes in cases.items():
        fn, n_bytes = fn_bytes
        seconds = timer.seconds(fn)
        rate = n_bytes / seconds
        rows.append(
            Row(
                "kernel",
                label,
                1e3 * seconds,
                f"{rate / 1e9:.1f} GB/s",
                f"{100 * rate / bandwidth:.0f}% copy",
            )
        )
    return rows


def attention_rows(shape: Shape, device: torch.device, timer: Timer, bandwidth: float) -> list[Row]:
    """Paged attention (blocks of KV_BLOCK positions, K/V as the cache holds them: int32
    block floats): a causal prefill of T tokens, and decode steps of a batch of sequences
    at the end of long caches, one launch each."""
    s, rows = shape, []
    length = 4096 if s is LLAMA3_8B else 80
    n_seq = 8 if s is LLAMA3_8B else 2
    per_seq = -(-length // KV_BLOCK)
    pool = (n_seq * per_seq, s.n_kv_heads, KV_BLOCK)
    k = torch.randint(-(2**21), 2**21, (*pool, s.head_dim), device=device).to(torch.int32)
    e = torch.full(pool, -20, dtype=torch.int32, device=device)
    tables = torch.randperm(pool[0], device=device).to(torch.int32).view(n_seq, per_seq)
    t = s.prefill_tokens
    q = torch.randn((t, s.n_heads, s.head_dim), device=device)
    positions = torch.arange(t, device=device)
    seconds = timer.seconds(
        lambda: paged_attention(q, positions, [0, t], [t], tables[:1], k, e, k, e)
    )
    flops = 2 * 2 * (t * (t + 1) // 2) * s.n_heads * s.head_dim  # Q.K and P.V, causal
    name = f"attention prefill T={t} H={s.n_heads}/{s.n_kv_heads} D={s.head_dim}"
    rows.append(Row("kernel", name, 1e3 * seconds, f"{flops / seconds / 1e12:.2f} TFLOP/s f64", ""))
    for batch in sorted({1, n_seq}):
        q1 = q[:batch]
        last = torch.full((batch,), length - 1, device=device)
        starts, lens = list(range(batch + 1)), [length] * batch
        seconds = timer.seconds(
            lambda q1=q1, last=last, b=batch, st=starts, ln=lens: paged_attention(
                q1, last, st, ln, tables[:b], k, e, k, e
            )
        )
        rate = batch * 2 * per_seq * (k[0].numel() + e[0].numel()) * 4 / seconds
        name = f"attention decode {batch} x L={length} H={s.n_heads}/{s.n_kv_heads} D={s.head_dim}"
        rows.append(
            Row(
                "kernel",
                name,
                1e3 * seconds,
                f"{rate / 1e9:.1f} GB/s",
                f"{100 * rate / bandwidth:.0f}% copy",
            )
        )
    return rows


def table(rows: list[Row]) -> str:
    lines = ["| group | what | ms | achieved | of peak |", "|---|---|---:|---:|---:|"]
    lines += [f"| {r.group} | {r.name} | {r.ms:.3f} | {r.achieved} | {r.of_peak} |" for r in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true", help="tiny shapes (forced without CUDA)")
    parser.add_argument(
        "--pytest", action="store_true", help="also run pytest tests/kernels (after the timings)"
    )
    parser.add_argument(
        "--pytest-marks",
        default="not slow",
        help="pytest -m expression for --pytest (default: %(default)r; a machine without the "
        "demo model: 'not slow and not real_model')",
    )
    parser.add_argument("--skip-timing", action="store_true")
    parser.add_argument("--out", type=Path, help="write the results table (Markdown) here")
    args = parser.parse_args(argv)
    device = torch.device("cpu" if kernels.INTERPRETED else "cuda")
    smoke = args.smoke or kernels.INTERPRETED
    shape = SMOKE if smoke else LLAMA3_8B
    where = (
        "the Triton interpreter on the CPU" if kernels.INTERPRETED else torch.cuda.get_device_name()
    )
    print(f"# gpu_check on {where}; shapes: {'smoke' if smoke else 'Llama-3-8B'}", flush=True)

    capability = None
    if device.type == "cuda":
        major, minor = torch.cuda.get_device_capability()
        capability = 10 * major + minor
    else:
        print("no CUDA device: the PTX audit compiles for sm_90 (no GPU needed), smoke subset")
    print("\n## 1. PTX audit", flush=True)
    audit_ok = run_audit("smoke" if smoke else "full", capability)

    print("\n## 2. conformance against the reference", flush=True)
    with np.errstate(all="ignore"):  # the interpreter's NumPy ops on exp's clamped range
        checks = conformance(shape, device)
    for name, ok in checks:
        print(f"{'ok  ' if ok else 'FAIL'} {name}")
    conformance_ok = all(ok for _, ok in checks)

    rows: list[Row] = []
    if not args.skip_timing:
        print("\n## 3. timing", flush=True)
        timer = Timer(device, shape.repeats)
        peaks = device_peaks(device, timer, smoke)
        int8 = f"{peaks[1] / 1e12:.0f} TOPS" if peaks[1] else "n/a"
        rows.append(
            Row("device", "copy bandwidth (read + write)", 0.0, f"{peaks[0] / 1e9:.1f} GB/s", "")
        )
        rows.append(Row("device", "int8 matmul (torch._int_mm 8192^3)", 0.0, int8, ""))
        rows += kernel_rows(shape, device, timer, peaks)
        rows += model_rows(shape, device, timer, peaks[0])
        print(table(rows), flush=True)
        if args.out:
            args.out.write_text(f"gpu_check on {where}\n\n{table(rows)}\n")
    if args.pytest:
        print(f"\n## 4. pytest tests/kernels -m {args.pytest_marks!r}", flush=True)
        conformance_ok = run_pytest(args.pytest_marks) and conformance_ok
    status = "PASS" if audit_ok and conformance_ok else "FAIL"
    verdicts = [
        f"{name} {'ok' if ok else 'FAILED'}"
        for name, ok in (("audit", audit_ok), ("conformance", conformance_ok))
    ]
    print(f"\n{status}: {', '.join(verdicts)}")
    return 0 if status == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())
