"""Compile every kernel for an NVIDIA target and audit the PTX and the LLVM IR for what
would break the precision contract. Works without a GPU: Triton compiles to PTX (and ptxas
to a cubin) on any machine; only running the code needs the device.

Forbidden in the PTX of every kernel (all of them are on the contract path):
- float32 FMA (`fma.rn.f32`, `mad.f32`): the contract rounds every product;
- approximate math: `div.approx`, `div.full`, `sqrt.approx`, `rsqrt.approx`, `rcp.approx`,
  `ex2.approx`, `lg2.approx`, `sin/cos/tanh.approx`;
- flush-to-zero (`.ftz`): the contract keeps subnormals;
- `mul`/`add`/`sub` on f32 or f64 without `.rn`: ptxas may contract those into FMA;
- tensor-core instructions (`mma`, `wgmma`) on anything but s8 (int32 accumulation) or f64:
  tf32, f16, bf16 and fp8 products are rounded and accumulated in no IEEE order;
- conversions to tf32 (`cvt.*.tf32`): a float `tl.dot` that took the tf32 path;
- a float negation compiled as `0 - x` (`sub.rn.f32 %r, 0f00000000, %x`): it turns -0 into
  +0, where the contract negates exactly (Triton 3.6 lowers unary minus so; use
  `kernels.fp.neg_f32`).
(float64 FMA may appear inside the integer-valued float64 dot products, where every
partial result is an exact integer, so it is allowed.)

Forbidden in the LLVM IR: fast-math flags on any instruction (`fast`, `reassoc`, `contract`,
`afn`, `arcp`, `nnan`, `ninf`, `nsz`: each licenses a result other than the IEEE one) and
`llvm.fmuladd` (fusable multiply-add).

Each launch is compiled as Triton's launcher would specialise it: integer arguments equal
to 1 become constants and multiples of 16 (and 16-byte aligned pointers) are marked
divisible, which changes the code (M = 1 decode is a different binary from M = 2). Which
launches: `kernels.audit_launches`.

The kernels must be imported without the interpreter for this: run
`TRITON_INTERPRET=0 python -m exactserve.kernels.audit` (bench/gpu_check.py does it in a
subprocess on a CPU machine). Under the interpreter nothing compiles, and the audit fails saying so.
"""

from __future__ import annotations

import re
import sys
import time
from dataclasses import dataclass

import triton

from exactserve.kernels.audit_launches import LEVELS, Launch, example_launches

FORBIDDEN = {
    "float32 fma": re.compile(r"\b(?:fma|mad)(?:\.\w+)*\.f32\b"),
    "approximate op": re.compile(r"\.approx\b"),
    "div.full": re.compile(r"\bdiv\.full\b"),
    "flush-to-zero": re.compile(r"\.ftz\b"),
    "contractable mul/add": re.compile(r"\b(?:mul|add|sub)\.f(?:32|64)\b"),
    "tf32 conversion": re.compile(r"\bcvt(?:\.\w+)*\.tf32\b"),
}
# a float subtraction from +0 (an immediate, or a register PTX loaded with +0: virtual
# registers are assigned once)
ZERO_REGISTER = re.compile(r"\bmov\.[bf](?:32|64)\s+(%\w+),\s*0[fFdD]0+\s*;")
SUB_FROM = re.compile(r"\bsub(?:\.\w+)*\.f(?:32|64)\s+%\w+,\s*(%\w+|0[fFdD]0+)\s*,")
# `mma.sync...` / `mma.sp...` / `wgmma.mma_async...`, and the type suffixes allowed on them
TENSOR_CORE = re.compile(r"^(?:@!?%\w+\s+)?((?:wgmma\.mma_async|mma)(?:\.\w+)+)")
EXACT_TENSOR_CORE = re.compile(r"(?:\.satfinite)?\.s32\.s8\.s8(?:\.s32)?$|\.f64\.f64\.f64\.f64$")
FAST_MATH = r"(?:fast|reassoc|contract|afn|arcp|nnan|ninf|nsz)"
FORBIDDEN_LLIR = {
    "fast-math flag": re.compile(
        rf"=\s*(?:(?:tail|musttail|notail)\s+)?"
        rf"(?:fadd|fsub|fmul|fdiv|frem|fneg|fcmp|call|select|phi|fptrunc|fpext)"
        rf"\s+(?:\w+\s+)*?{FAST_MATH}\b"
    ),
    "fusable multiply-add": re.compile(r"@llvm\.fmuladd\."),
}
# (compute capability, name, shared memory per block in bytes)
TARGETS = ((90, "sm_90", 232448), (80, "sm_80", 166912))
NAME_KEYS = ("QTYPE", "ELEMENT_BYTES", "FN", "ACTIVATION", "GROUP", "M_PAD", "BLOCK_M", "HAS_CAP")


@dataclass(frozen=True)
class Specialisation:
    """A launch as Triton compiles it: `signature` maps every parameter to its type (or
    "constexpr"), `constexprs` the constants (the kernel's and the integers equal to 1),
    `attrs` the divisibility marks, `options` the compile options."""

    launch: Launch
    signature: dict
    constexprs: dict
    attrs: dict
    options: dict

    @property
    def key(self) -> tuple:
        return (
            self.launch.kernel.__name__,
            repr(sorted(self.signature.items())),
            repr(sorted(self.constexprs.items(), key=repr)),
            repr(sorted(self.attrs.items(), key=repr)),
        )

    @property
    def name(self) -> str:
        kernel = self.launch.kernel
        declared = {p.name for p in kernel.params if p.is_constexpr}
        values = {path[0] if isinstance(path, tuple) else path: value
                  for path, value in self.constexprs.items()}  # fmt: skip
        names = [kernel.arg_names[i] if isinstance(i, int) else i for i in values]
        values = dict(zip(names, values.values(), strict=True))
        tags = [f"{k}={values[k]}" for k in NAME_KEYS if k in values]
        tags += [f"{k}={v}" for k, v in values.items() if k not in declared]  # e.g. M=1
        return f"{kernel.__name__}[{', '.join(tags)}]"


@dataclass(frozen=True)
class AuditResult:
    name: str
    target: str
    seconds: float
    shared: int  # bytes of shared memory per program
    violations: tuple[str, ...]  # offending PTX / LLVM IR lines, labelled


def specialise(launch: Launch, capability: int) -> Specialisation:
    """Bind the launch's arguments as `JITFunction.run` does (Triton 3.6 to 3.9 share these
    internals), without a driver: the target is given."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import make_backend
    from triton.runtime.jit import create_function_from_signature

    kernel = launch.kernel
    backend = make_backend(GPUTarget("cuda", capability, 32))
    binder = create_function_from_signature(kernel.signature, kernel.params, backend)
    bound, specialization, options = binder(*launch.args, **launch.kwargs)
    options, signature, constexprs, attrs = kernel._pack_args(
        backend, launch.kwargs, bound, specialization, options
    )
    return Specialisation(launch, signature, constexprs, attrs, options.__dict__)


def violations(ptx: str) -> tuple[str, ...]:
    found = []
    zeros = set()
    for line in ptx.splitlines():
        text = line.split("//")[0].strip()
        for label, pattern in FORBIDDEN.items():
            if pattern.search(text):
                found.append(f"{label}: {text}")
        if zero := ZERO_REGISTER.search(text):
            zeros.add(zero.group(1))
        sub = SUB_FROM.search(text)
        if sub and (sub.group(1) in zeros or not sub.group(1).startswith("%")):
            found.append(f"negation as 0 - x: {text}")
        tensor_core = TENSOR_CORE.match(text)
        if tensor_core and not EXACT_TENSOR_CORE.search(tensor_core.group(1)):
            found.append(f"float tensor core: {text}")
    return tuple(found)


def llir_violations(llir: str) -> tuple[str, ...]:
    found = []
    for line in llir.splitlines():
        text = line.strip()
        for label, pattern in FORBIDDEN_LLIR.items():
            if pattern.search(text):
                found.append(f"{label}: {text[:160]}")
    return tuple(found)


def audit(spec: Specialisation, capability: int, arch: str, shared_limit: int) -> AuditResult:
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    start = time.perf_counter()
    source = ASTSource(spec.launch.kernel, spec.signature, spec.constexprs, spec.attrs)
    try:
        compiled = triton.compile(
            source, target=GPUTarget("cuda", capability, 32), options=spec.options
        )
    except Exception as error:  # a kernel that does not compile fails the audit
        message = str(error).strip().splitlines()
        last = message[-1] if message else repr(error)
        return AuditResult(
            spec.name, arch, time.perf_counter() - start, 0, (f"compile error: {last}",)
        )
    seconds = time.perf_counter() - start
    shared = int(compiled.metadata.shared)
    found = [*violations(compiled.asm["ptx"]), *llir_violations(compiled.asm["llir"])]
    if spec.options.get("enable_fp_fusion", True):
        found.insert(0, "launched without enable_fp_fusion=False")
    if shared > shared_limit:
        found.append(f"needs {shared} bytes of shared memory; {arch} has {shared_limit}")
    return AuditResult(spec.name, arch, seconds, shared, tuple(found))


def specialisations(level: str, capability: int = 90) -> list[Specialisation]:
    """One of each specialisation the launches of `level` compile to, in launch order."""
    unique: dict[tuple, Specialisation] = {}
    for launch in example_launches(level):
        spec = specialise(launch, capability)
        unique.setdefault(spec.key, spec)
    return list(unique.values())


def run(level: str, capability: int | None = None) -> int:
    """Audit the specialisations of `level` for `capability` (default: every target in
    TARGETS for "full", sm_90 otherwise); print one line each; return the failure count."""
    print(f"triton {triton.__version__}", flush=True)
    specs = specialisations(level)
    if not specs:
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
    for spec in specs:
        for capability_, arch, shared_limit in targets:
            target_spec = spec if capability_ == 90 else specialise(spec.launch, capability_)
            result = audit(target_spec, capability_, arch, shared_limit)
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
        f"audited {len(specs)} kernel specialisations x {len(targets)} targets "
        f"(triton {triton.__version__}): {failed} failed"
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
