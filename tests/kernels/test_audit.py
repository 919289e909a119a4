"""The PTX and LLVM IR audit (kernels.audit) catches what breaks the contract, and the
kernels pass it. Every rule has a negative control: text that must be flagged, and for
each a compiled kernel that must be flagged.

Compiling needs no GPU: Triton emits PTX (and ptxas a cubin) on any machine. The kernels
must be defined without the interpreter for that, so compilation runs in a subprocess with
TRITON_INTERPRET=0."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import triton

from exactserve.kernels.audit import llir_violations, violations

ROOT = Path(__file__).resolve().parents[2]

CLEAN_PTX = """
    mul.rn.f32 %r3, %r1, %r2;
    add.rn.f32 %r4, %r3, %r1;
    div.rn.f32 %r5, %r4, %r2;
    sqrt.rn.f32 %r6, %r5;
    fma.rn.f64 %fd3, %fd1, %fd2, %fd0;   // exact: integer-valued float64 dot
    cvt.rn.f32.f64 %r7, %fd3;
    cvt.rzi.s32.f32 %r8, %r7;
    mul.rn.f64 %fd4, %fd1, %fd2;
    sub.rn.f32 %r9, %r8, 0f3F800000;
    mov.b32 %r11, 0f3F800000;
    sub.rn.f32 %r12, %r11, %r9;
    neg.f32 %r10, %r9;
    mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32 {%r1, %r2}, {%r3}, {%r4}, {%r5};
    mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%r1, %r2}, {%r3}, {%r4}, {%r5};
    wgmma.mma_async.sync.aligned.m64n64k32.s32.s8.s8 {%r1}, %rd1, %rd2, p;
    mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%fd1, %fd2}, {%fd3}, {%fd4}, {%fd5};
    wgmma.fence.sync.aligned;
    wgmma.commit_group.sync.aligned;
"""
BAD_LINES = {
    "fma.rn.f32 %r1, %r2, %r3, %r4;": "float32 fma",
    "mad.rn.f32 %r1, %r2, %r3, %r4;": "float32 fma",
    "div.approx.f32 %r1, %r2, %r3;": "approximate op",
    "div.full.f32 %r1, %r2, %r3;": "div.full",
    "ex2.approx.ftz.f32 %r1, %r2;": "approximate op",
    "add.ftz.f32 %r1, %r2, %r3;": "flush-to-zero",
    "mul.f32 %r1, %r2, %r3;": "contractable mul/add",
    "mul.f64 %fd1, %fd2, %fd3;": "contractable mul/add",
    "add.f64 %fd1, %fd2, %fd3;": "contractable mul/add",
    "cvt.rna.tf32.f32 %r1, %r2;": "tf32 conversion",
    "sub.rn.f32 %r2, 0f00000000, %r1;": "negation as 0 - x",
    "mov.b32 %r3, 0f00000000;\n    sub.rn.f32 %r2, %r3, %r1;": "negation as 0 - x",
    "sub.rn.f64 %fd2, 0d0000000000000000, %fd1;": "negation as 0 - x",
    "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%r1}, {%r2}, {%r3}, {%r4};": (
        "float tensor core"
    ),
    "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%r1}, {%r2}, {%r3}, {%r4};": (
        "float tensor core"
    ),
    "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%r1}, {%r2}, {%r3}, {%r4};": (
        "float tensor core"
    ),
    "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%r1}, %rd1, %rd2, p, 1, 1;": (
        "float tensor core"
    ),
    "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3 {%r1}, %rd1, %rd2, p, 1, 1;": (
        "float tensor core"
    ),
    "@%p1 mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32 {%r1}, {%r2}, {%r3}, {%r4};": (
        "float tensor core"  # u8 is not one of the exact kinds the contract names
    ),
}
CLEAN_LLIR = """
  %5 = fadd float %3, %4
  %6 = fmul double %1, %2
  %7 = call float @llvm.nvvm.div.rn.f(float %5, float %4)
  %8 = tail call float @llvm.nvvm.sqrt.rn.f(float %7)
  %9 = fcmp olt float %8, 0.000000e+00
  %10 = select i1 %9, float %5, float %8
  %11 = call fastcc float @helper(float %10)
"""
BAD_LLIR = {
    "%5 = fadd contract float %3, %4": "fast-math flag",
    "%5 = fmul reassoc nsz float %3, %4": "fast-math flag",
    "%5 = fmul nnan double %3, %4": "fast-math flag",
    "%5 = tail call fast float @llvm.sqrt.f32(float %4)": "fast-math flag",
    "%5 = fcmp ninf olt float %3, %4": "fast-math flag",
    "%5 = call float @llvm.fmuladd.f32(float %1, float %2, float %3)": "fusable multiply-add",
}


def test_clean_ptx_passes() -> None:
    assert violations(CLEAN_PTX) == ()


@pytest.mark.parametrize("line", list(BAD_LINES))
def test_forbidden_instructions_are_flagged(line: str) -> None:
    found = violations(f"    {line}\n")
    assert found and found[0].startswith(BAD_LINES[line] + ": ")


def test_clean_llir_passes() -> None:
    assert llir_violations(CLEAN_LLIR) == ()


@pytest.mark.parametrize("line", list(BAD_LLIR))
def test_forbidden_llir_is_flagged(line: str) -> None:
    found = llir_violations(f"  {line}\n")
    assert found and found[0].startswith(BAD_LLIR[line] + ": ")


def float_dots_without_ieee(source: str) -> list[int]:
    """Lines of `tl.dot` calls that name neither an integer `out_dtype` nor
    `input_precision="ieee"` (a float dot must say "ieee": the default is tf32)."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "tl.dot":
            words = {k.arg: ast.unparse(k.value) for k in node.keywords}
            is_integer = words.get("out_dtype") in ("tl.int32", "tl.int64")
            if not is_integer and words.get("input_precision") != "'ieee'":
                lines.append(node.lineno)
    return lines


def test_every_float_dot_asks_for_ieee() -> None:
    for path in sorted((ROOT / "kernels").rglob("*.py")):
        assert float_dots_without_ieee(path.read_text()) == [], path
    # negative control: the checker flags a default-precision float dot
    bad = "\n".join(
        [
            "c = tl.dot(a, b)",
            "d = tl.dot(a, b, out_dtype=tl.int32)",
            "e = tl.dot(a, b, input_precision='tf32')",
        ]
    )
    assert float_dots_without_ieee(bad) == [1, 3]


COMPILE_EXP = """
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from exactserve.kernels.activations import _unary_kernel
from exactserve.kernels.audit import violations
signature = {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32"}
signature.update(FN="constexpr", BLOCK="constexpr")
for fusion in (False, True):
    source = ASTSource(_unary_kernel, signature, {"FN": 0, "BLOCK": 256})
    options = {"enable_fp_fusion": fusion}
    compiled = triton.compile(source, target=GPUTarget("cuda", 90, 32), options=options)
    found = violations(compiled.asm["ptx"])
    print(fusion, len(found), sorted({line.split(":")[0] for line in found}))
"""


def test_exp_kernel_compiles_clean_and_fusion_is_caught() -> None:
    """Negative control: the contract's exp compiled with FMA fusion on must be flagged."""
    env = {**os.environ, "TRITON_INTERPRET": "0"}
    result = subprocess.run(
        [sys.executable, "-c", COMPILE_EXP], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.strip().splitlines()
    assert lines[0] == "False 0 []"
    fused, count, labels = lines[1].split(" ", 2)
    assert fused == "True" and int(count) > 0 and "'float32 fma'" in labels


CONTROLS = """
import json
import triton, triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from triton.language.extra import libdevice
from exactserve.kernels.audit import llir_violations, violations

@triton.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, PRECISION: tl.constexpr):
    offs = tl.arange(0, 32)
    a = tl.load(a_ptr + offs[:, None] * 32 + offs[None, :])
    b = tl.load(b_ptr + offs[:, None] * 32 + offs[None, :])
    if PRECISION == "default":
        c = tl.dot(a, b)
    else:
        c = tl.dot(a, b, input_precision=PRECISION)
    tl.store(c_ptr + offs[:, None] * 32 + offs[None, :], c)

@triton.jit
def int_dot_kernel(a_ptr, b_ptr, c_ptr):
    offs = tl.arange(0, 32)
    a = tl.load(a_ptr + offs[:, None] * 32 + offs[None, :])
    b = tl.load(b_ptr + offs[:, None] * 32 + offs[None, :])
    tl.store(c_ptr + offs[:, None] * 32 + offs[None, :], tl.dot(a, b, out_dtype=tl.int32))

@triton.jit
def f64_kernel(x_ptr, y_ptr):
    x = tl.load(x_ptr)
    y = tl.load(y_ptr)
    tl.store(x_ptr + 1, x * y)
    tl.store(x_ptr + 2, x + y)

@triton.jit
def negate_kernel(x_ptr):
    tl.store(x_ptr + 1, 0.0 - tl.load(x_ptr))

@triton.jit
def sin_kernel(x_ptr):
    tl.store(x_ptr + 1, libdevice.sin(tl.load(x_ptr)))

def labels(kernel, signature, constexprs=None, fusion=False, capability=90):
    compiled = triton.compile(
        ASTSource(kernel, signature, constexprs or {}),
        target=GPUTarget("cuda", capability, 32),
        options={"enable_fp_fusion": fusion},
    )
    found = violations(compiled.asm["ptx"]) + llir_violations(compiled.asm["llir"])
    return sorted({line.split(":")[0] for line in found})

def dot(dtype, out, precision, capability=90):
    signature = {"a_ptr": dtype, "b_ptr": dtype, "c_ptr": out, "PRECISION": "constexpr"}
    return labels(dot_kernel, signature, {"PRECISION": precision}, capability=capability)

print(json.dumps({
    "fp32 default": dot("*fp32", "*fp32", "default"),
    "fp32 default sm_80": dot("*fp32", "*fp32", "default", 80),
    "fp32 tf32x3": dot("*fp32", "*fp32", "tf32x3"),
    "fp32 ieee": dot("*fp32", "*fp32", "ieee"),
    "fp16": dot("*fp16", "*fp32", "ieee"),
    "bf16 sm_80": dot("*bf16", "*fp32", "ieee", 80),
    "fp8": dot("*fp8e4nv", "*fp32", "ieee"),
    "fp64 ieee": dot("*fp64", "*fp64", "ieee"),
    "fp64 ieee sm_80": dot("*fp64", "*fp64", "ieee", 80),
    "int8": labels(int_dot_kernel, {"a_ptr": "*i8", "b_ptr": "*i8", "c_ptr": "*i32"}),
    "f64 fused": labels(f64_kernel, {"x_ptr": "*fp64", "y_ptr": "*fp64"}, fusion=True),
    "f64 unfused": labels(f64_kernel, {"x_ptr": "*fp64", "y_ptr": "*fp64"}),
    "0 - x": labels(negate_kernel, {"x_ptr": "*fp32"}),
    "libdevice sin": labels(sin_kernel, {"x_ptr": "*fp32"}),
}))
"""


def test_compiled_negative_controls_are_flagged(tmp_path: Path) -> None:
    """Kernels that break a rule, compiled for real, must be flagged by that rule; their
    exact twins must pass. (@triton.jit needs its source in a file.)"""
    script = tmp_path / "controls.py"
    script.write_text(CONTROLS)
    env = {**os.environ, "TRITON_INTERPRET": "0"}
    result = subprocess.run(
        [sys.executable, str(script)], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-2000:]
    found = json.loads(result.stdout.strip().splitlines()[-1])
    for name in ("fp32 default", "fp32 default sm_80"):  # tf32 tensor cores
        assert "float tensor core" in found[name], found
    assert "tf32 conversion" in found["fp32 tf32x3"], found  # cvt.rna.tf32.f32
    # the ieee path of a float32 dot: FMA loops (llvm.fmuladd in the IR), caught as such
    assert found["fp32 ieee"] == ["float32 fma", "fusable multiply-add"]
    for name in ("fp16", "bf16 sm_80", "fp8"):
        assert "float tensor core" in found[name], found
    for name in ("fp64 ieee", "fp64 ieee sm_80", "int8", "f64 unfused"):
        assert found[name] == [], (name, found[name])
    assert "contractable mul/add" in found["f64 fused"]
    assert found["0 - x"] == ["negation as 0 - x"]
    # libdevice's sin carries `fmul nnan double` in the IR Triton 3.9 emits; Triton 3.6's
    # LLVM drops the flag (there, no kernel source we know emits one, and the text controls
    # above stand for the rule). Either way its PTX is flagged (`.ftz` from libdevice).
    major_minor = tuple(int(part) for part in triton.__version__.split(".")[:2])
    if major_minor >= (3, 9):
        assert "fast-math flag" in found["libdevice sin"], found["libdevice sin"]
    assert "flush-to-zero" in found["libdevice sin"]


SPECIALISATIONS = """
from exactserve.kernels.audit import specialisations
for spec in specialisations("smoke"):
    print(spec.name, sorted(spec.attrs.items(), key=repr) != [])
"""


def test_audit_compiles_launch_time_specialisations() -> None:
    """The audit compiles what a launch compiles: M = 1 decode has M as a constant, the
    paged-attention launch over blocks of 16 with a one-block table has its table stride
    as a constant, and divisible arguments carry their marks."""
    env = {**os.environ, "TRITON_INTERPRET": "0"}
    result = subprocess.run(
        [sys.executable, "-c", SPECIALISATIONS], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.strip().splitlines()
    assert any(line.startswith("_decode_kernel[") and "M_PAD=1, M=1]" in line for line in lines)
    assert any(line.startswith("_attention_kernel[") and "stride_tab=1" in line for line in lines)
    assert all(line.endswith("True") for line in lines)  # every launch has divisibility marks
