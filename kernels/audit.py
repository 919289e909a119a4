"""Compile every kernel for an NVIDIA target and audit the PTX for instructions that would
break the precision contract. Works without a GPU: Triton compiles to PTX (and ptxas to a
cubin) on any machine; only running the code needs the device.

Forbidden in the PTX of every kernel (all of them are on the contract path):
- float32 FMA (`fma.rn.f32`, `mad.f32`): the contract rounds every product;
- approximate math: `div.approx`, `div.full`, `sqrt.approx`, `rsqrt.approx`, `rcp.approx`,
  `ex2.approx`, `lg2.approx`, `sin/cos/tanh.approx`;
- flush-to-zero (`.ftz`): the contract keeps subnormals;
- float32 `mul`/`add`/`sub` without `.rn`: ptxas may contract those into FMA.
(float64 FMA may appear inside the integer-valued float64 dot products, where every
partial result is an exact integer, so it is allowed.)

The kernels must be imported without the interpreter for this: run
`TRITON_INTERPRET=0 python -m exactserve.kernels.audit` (bench/gpu_check.py does it in a
subprocess on a CPU machine). Under the interpreter nothing compiles, and the audit fails saying so.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np
import torch
import triton
from gguf import GGMLQuantizationType as T

FORBIDDEN = {
    "float32 fma": re.compile(r"\b(?:fma|mad)(?:\.\w+)*\.f32\b"),
    "approximate op": re.compile(r"\.approx\b"),
    "div.full": re.compile(r"\bdiv\.full\b"),
    "flush-to-zero": re.compile(r"\.ftz\b"),
    "contractable mul/add": re.compile(r"\b(?:mul|add|sub)\.f32\b"),
}
# (compute capability, name, shared memory per block in bytes)
TARGETS = ((90, "sm_90", 232448), (80, "sm_80", 166912))


@dataclass(frozen=True)
class Launch:
    """One kernel specialisation as a launcher would run it."""

    kernel: Any  # triton JITFunction
    args: tuple
    kwargs: dict

    @property
    def name(self) -> str:
        keys = ("QTYPE", "ELEMENT_BYTES", "FN", "ACTIVATION", "GROUP", "M_PAD", "HAS_CAP")
        tags = [f"{k}={self.kwargs[k]}" for k in keys if k in self.kwargs]
        return f"{self.kernel.__name__}[{', '.join(tags)}]"


@dataclass(frozen=True)
class AuditResult:
    name: str
    target: str
    seconds: float
    shared: int  # bytes of shared memory per program
    violations: tuple[str, ...]  # offending PTX lines, labelled


class _Recorder:
    """Stands in for a JITFunction: `kernel[grid](...)` records the call instead of running."""

    def __init__(self, kernel: Any, sink: list[Launch]) -> None:
        self.kernel, self.sink = kernel, sink

    def __getitem__(self, grid: Any) -> Callable[..., None]:
        return lambda *args, **kwargs: self.sink.append(Launch(self.kernel, args, kwargs))


@contextmanager
def recording(modules: list[ModuleType]) -> Iterator[list[Launch]]:
    """Replace every Triton kernel named in `modules` by a recorder while the block runs."""
    sink: list[Launch] = []
    saved = []
    for module in modules:
        for name, value in vars(module).items():
            if isinstance(value, triton.runtime.jit.JITFunction):
                saved.append((module, name, value))
                setattr(module, name, _Recorder(value, sink))
    try:
        yield sink
    finally:
        for module, name, value in saved:
            setattr(module, name, value)


_POINTER_TYPES = {
    torch.float32: "*fp32", torch.float64: "*fp64", torch.int8: "*i8", torch.uint8: "*u8",
    torch.int16: "*i16", torch.int32: "*i32", torch.int64: "*i64",
}  # fmt: skip


def _signature(launch: Launch) -> tuple[dict, dict, dict]:
    kernel = launch.kernel
    values = dict(zip(kernel.arg_names, launch.args, strict=False))
    options = {}
    for key, value in launch.kwargs.items():
        if key in kernel.arg_names:
            values[key] = value
        else:
            options[key] = value
    signature, constexprs = {}, {}
    for param in kernel.params:
        value = values[param.name]
        if param.is_constexpr:
            signature[param.name] = "constexpr"
            constexprs[param.name] = value
        elif isinstance(value, torch.Tensor):
            signature[param.name] = _POINTER_TYPES[value.dtype]
        elif isinstance(value, bool):
            signature[param.name] = "i1"
        elif isinstance(value, int):
            signature[param.name] = "i32" if -(2**31) <= value < 2**31 else "i64"
        else:
            signature[param.name] = "fp32"
    return signature, constexprs, options


def violations(ptx: str) -> tuple[str, ...]:
    found = []
    for line in ptx.splitlines():
        text = line.split("//")[0].strip()
        for label, pattern in FORBIDDEN.items():
            if pattern.search(text):
                found.append(f"{label}: {text}")
    return tuple(found)


def audit(launch: Launch, capability: int, arch: str, shared_limit: int) -> AuditResult:
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    signature, constexprs, options = _signature(launch)
    start = time.perf_counter()
    source = ASTSource(launch.kernel, signature, constexprs)
    try:
        compiled = triton.compile(source, target=GPUTarget("cuda", capability, 32), options=options)
    except Exception as error:  # a kernel that does not compile fails the audit
        message = str(error).strip().splitlines()
        last = message[-1] if message else repr(error)
        return AuditResult(
            launch.name, arch, time.perf_counter() - start, 0, (f"compile error: {last}",)
        )
    seconds = time.perf_counter() - start
    shared = int(compiled.metadata.shared)
    found = list(violations(compiled.asm["ptx"]))
    if options.get("enable_fp_fusion", True):
        found.insert(0, "launched without enable_fp_fusion=False")
    if shared > shared_limit:
        found.append(f"needs {shared} bytes of shared memory; {arch} has {shared_limit}")
    return AuditResult(launch.name, arch, seconds, shared, tuple(found))


LEVELS = ("smoke", "quick", "full")


def example_launches(level: str = "full") -> list[Launch]:
    """The kernel specialisations the engine launches, from tiny inputs. "full": every
    weight type and float type on both matmul paths, every row-wise op, attention with and
    without window and cap, head sizes 64 and 256; "quick": three weight types; "smoke":
    one weight type and the row-wise ops most likely to grow an FMA (exp, RMSNorm)."""
    from exactserve.kernels import (
        activations,
        attention,
        logits,
        matmul,
        quantize,
        quants,
        rmsnorm,
        rope,
    )
    from exactserve.kernels.quants import weight_matrix
    from exactserve.reference.quants import QUANT_UNITS, block_geometry

    if level not in LEVELS:
        raise ValueError(f"unknown audit level {level!r}; choose one of {', '.join(LEVELS)}")
    modules = [activations, attention, logits, matmul, quantize, quants, rmsnorm, rope]
    cpu = torch.device("cpu")
    x = torch.ones((2, 256))
    many = torch.ones((128, 256))  # full-size tiles, so shared-memory use is the real one
    qtypes = {"smoke": [T.Q4_K], "quick": [T.Q8_0, T.Q4_K, T.Q6_K]}.get(level, list(QUANT_UNITS))
    float_types = [] if level == "smoke" else [T.F16, T.F32, T.BF16]
    with recording(modules) as sink:
        acts = quantize.quantize_activations(x)
        many_acts = quantize.quantize_activations(many)
        eight_acts = quantize.quantize_activations(many[:8])
        for qtype in [*qtypes, *float_types]:
            block_size, type_size = block_geometry(qtype)
            raw = np.zeros(256 * 256 // block_size * type_size, dtype=np.uint8)
            w = weight_matrix(raw, qtype, 256, 256, device=cpu)
            matmul.matmul_quantized(acts, w, path="decode")
            if level == "full":
                matmul.matmul_quantized(eight_acts, w, path="decode")  # the widest decode
            matmul.matmul_quantized(many_acts, w, path="prefill")
            if level != "smoke":
                quants.dequantize(w)
                if not w.is_float:
                    quants.to_integer_form(w)
        activations.unary(x, "exp")
        rmsnorm.rmsnorm(x, torch.ones(256), 1e-6)
        k = torch.zeros((1, 8, 64), dtype=torch.int32)
        e = torch.zeros((1, 8), dtype=torch.int32)
        pool_k = torch.zeros((2, 1, 16, 64), dtype=torch.int32)  # the engine's blocks of 16
        pool_e = torch.zeros((2, 1, 16), dtype=torch.int32)
        table = torch.tensor([[1], [0]], dtype=torch.int32)
        q8 = torch.ones((8, 4, 64))
        attention.paged_attention(
            q8, [*range(7), 0], [0, 7, 8], [7, 1], table, pool_k, pool_e, pool_k, pool_e
        )
        if level != "smoke":
            quantize.block_float(torch.ones((3, 64)))
            for name in activations.UNARY[1:]:
                activations.unary(x, name)
            for name in activations.ACTIVATION_IDS:
                activations.gated(x, x, name)
            activations.softcap_values(x, 30.0)
            rope_table = torch.ones((2, 32))
            for layout in ("normal", "neox"):
                rope.apply_rope(torch.ones((2, 2, 64)), rope_table, rope_table, layout)
            attention.attention(q8, list(range(8)), k, e, k, e)
            attention.attention(torch.ones((2, 2, 64)), [6, 7], k, e, k, e, 4, 30.0)
            k256 = k.new_zeros((1, 8, 256))
            attention.attention(torch.ones((1, 2, 256)), [7], k256, e, k256, e)
            logits.argmax(torch.ones((2, 100)))
        launches = list(sink)
    unique = {}
    for launch in launches:  # one of each specialisation
        signature, constexprs, options = _signature(launch)
        key = (
            launch.kernel.__name__,
            repr(sorted(signature.items())),
            repr(sorted(constexprs.items())),
        )
        unique.setdefault(key, launch)
    return list(unique.values())


def run(level: str, capability: int | None = None) -> int:
    """Audit the specialisations of `level` for `capability` (default: every target in
    TARGETS for "full", sm_90 otherwise); print one line each; return the failure count."""
    launches = example_launches(level)
    if not launches:
        print(
            "audit: no kernel was compiled: the kernels were imported under the Triton "
            "interpreter; run `TRITON_INTERPRET=0 python -m exactserve.kernels.audit`",
            file=sys.stderr,
        )
        return 1
    targets = TARGETS if level == "full" else TARGETS[:1]
    if capability is not None:
        limit = {c: lim for c, _, lim in TARGETS}.get(capability, 101376)
        targets = ((capability, f"sm_{capability}", limit),)
    failed = 0
    for launch in launches:
        for capability_, arch, shared_limit in targets:
            result = audit(launch, capability_, arch, shared_limit)
            status = "ok" if not result.violations else "FAIL"
            print(
                f"{status:4} {arch} {result.seconds:5.1f}s {result.shared // 1024:4d} KiB  "
                f"{result.name}",
                flush=True,
            )
            for line in result.violations[:5]:
                print(f"       {line}")
            failed += bool(result.violations)
    print(
        f"audited {len(launches)} kernel specialisations x {len(targets)} targets: {failed} failed"
    )
    return failed


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--level", choices=LEVELS, default="full")
    parser.add_argument("--capability", type=int, help="compute capability, e.g. 90 for sm_90")
    args = parser.parse_args(argv)
    return 1 if run(args.level, args.capability) else 0


if __name__ == "__main__":
    sys.exit(main())
