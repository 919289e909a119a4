"""The PTX audit (kernels.audit) catches what breaks the contract, and the kernels pass it.

Compiling needs no GPU: Triton emits PTX (and ptxas a cubin) on any machine. The kernels
must be defined without the interpreter for that, so compilation runs in a subprocess with
TRITON_INTERPRET=0."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from exactserve.kernels.audit import violations

ROOT = Path(__file__).resolve().parents[2]

CLEAN_PTX = """
    mul.rn.f32 %r3, %r1, %r2;
    add.rn.f32 %r4, %r3, %r1;
    div.rn.f32 %r5, %r4, %r2;
    sqrt.rn.f32 %r6, %r5;
    fma.rn.f64 %fd3, %fd1, %fd2, %fd0;   // exact: integer-valued float64 dot
    cvt.rn.f32.f64 %r7, %fd3;
    cvt.rzi.s32.f32 %r8, %r7;
"""
BAD_LINES = {
    "fma.rn.f32 %r1, %r2, %r3, %r4;": "float32 fma",
    "mad.rn.f32 %r1, %r2, %r3, %r4;": "float32 fma",
    "div.approx.f32 %r1, %r2, %r3;": "approximate op",
    "div.full.f32 %r1, %r2, %r3;": "div.full",
    "ex2.approx.ftz.f32 %r1, %r2;": "approximate op",
    "add.ftz.f32 %r1, %r2, %r3;": "flush-to-zero",
    "mul.f32 %r1, %r2, %r3;": "contractable mul/add",
}


def test_clean_ptx_passes() -> None:
    assert violations(CLEAN_PTX) == ()


@pytest.mark.parametrize("line", list(BAD_LINES))
def test_forbidden_instructions_are_flagged(line: str) -> None:
    found = violations(f"    {line}\n")
    assert found and found[0].startswith(BAD_LINES[line] + ": ")


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
