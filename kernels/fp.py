"""Floating-point primitives of the precision contract, as Triton device functions.

Twin of `reference.fp` (docs/PRECISION.md, section 2). Each helper performs only correctly
rounded IEEE operations or exact ones (integer and bit manipulation, comparisons, max),
in the reference's order. Kernels that call them are launched with `enable_fp_fusion=False`,
so no multiply is contracted into an add (PTX `mul.rn`/`add.rn`, never `fma`).
"""

from __future__ import annotations

import triton
import triton.language as tl

from exactserve.reference import fp as ref

MAGIC_F32 = tl.constexpr(float(ref.MAGIC_F32))  # 1.5 * 2^23
MAGIC_F64 = tl.constexpr(float(ref.MAGIC_F64))  # 1.5 * 2^52
TINY_F32 = tl.constexpr(float(ref.TINY_F32))  # 2^-100
TINY_BITS = tl.constexpr(int(ref.TINY_F32.view("int32")))  # bits of 2^-100
INF_BITS = tl.constexpr(0x7F800000)  # bits of +inf; larger |x| bits are NaNs
SIGN_BIT = tl.constexpr(-(2**31))  # 0x80000000 as int32


@triton.jit
def rint_f32(v):
    """Round float32 |v| < 2^22 to an integer, ties to even: two rounded additions (2.2)."""
    return (v + MAGIC_F32) - MAGIC_F32


@triton.jit
def rint_f64(v):
    """Round float64 |v| < 2^51 to an integer, ties to even (2.2)."""
    return (v + MAGIC_F64) - MAGIC_F64


@triton.jit
def pow2_f32(k):
    """2^k as float32 for int32 k in [-126, 127], from its exponent bits (exact)."""
    return ((k + 127) << 23).to(tl.float32, bitcast=True)


@triton.jit
def pow2_f64(k):
    """2^k as float64 for integer k in [-1022, 1023], from its exponent bits (exact)."""
    return ((k.to(tl.int64) + 1023) << 52).to(tl.float64, bitcast=True)


@triton.jit
def exponent_f32(v):
    """floor(log2(v)) as int32 for normal positive float32 v: the unbiased exponent field."""
    return ((v.to(tl.int32, bitcast=True) >> 23) & 0xFF) - 127


@triton.jit
def neg_f32(x):
    """-x for float32 x: the sign bit flipped, as NumPy negates (exact; -(+0) = -0).

    Never write `-x` for a float in a kernel: Triton 3.6 compiles unary minus as `0 - x`,
    which gives +0 for x = +0 (Triton 3.9 emits a true negation)."""
    return (x.to(tl.int32, bitcast=True) ^ SIGN_BIT).to(tl.float32, bitcast=True)


@triton.jit
def abs_bits(x):
    """The bits of |x| for float32 x, as int32. For non-NaN values their integer order is
    the floats' order, and every NaN is above +inf (INF_BITS): an integer `tl.max` of them
    is the block's max |x| with NaN winning, where a float `tl.max` (PTX `max.f32`, IEEE
    maxNum) would drop the NaN on a GPU."""
    return x.to(tl.int32, bitcast=True) & 0x7FFFFFFF


@triton.jit
def exponent_f64(v):
    """floor(log2(v)) as int32 for normal positive float64 v."""
    return (((v.to(tl.int64, bitcast=True) >> 52) & 0x7FF) - 1023).to(tl.int32)


@triton.jit
def tree_sum(x, LOG2_N: tl.constexpr):
    """Contract tree sum (2.3) of float32 x [R, 2^LOG2_N] over its last axis -> [R].

    Level by level, element i of the next level is level[2i] + level[2i + 1]: `reshape` to
    [R, n / 2, 2] (no reordering) and `split` the pairs. The caller pads the axis with +0.0
    to the power of two, as the reference does.
    """
    for _level in tl.static_range(LOG2_N):
        x = tl.reshape(x, (x.shape[0], x.shape[1] // 2, 2))
        even, odd = tl.split(x)
        x = even + odd
    return tl.reshape(x, (x.shape[0],))


@triton.jit
def end_operand_search(x):
    """Integer x [R, C] unchanged: a max over a new axis of length 1 (no instruction).

    For a dot operand, Triton sizes the register layout (kWidth) from the narrowest load
    the value was computed from, searching back through elementwise ops; Triton 3.6 then
    cannot lower a float64 `tl.dot` whose operands came from 8- or 16-bit loads ("fp64
    don't support largeK MMA"). A reduction ends that search."""
    return tl.max(tl.expand_dims(x, 2), axis=2)


@triton.jit
def load_f16(ptr):
    """The little-endian fp16 at byte pointer(s) `ptr`, widened exactly to float32.

    Read as two bytes, so no alignment is assumed; bitcast to fp16, then converted.
    """
    lo = tl.load(ptr).to(tl.uint16)
    hi = tl.load(ptr + 1).to(tl.uint16)
    return (lo | (hi << 8)).to(tl.float16, bitcast=True).to(tl.float32)


@triton.jit
def load_u8(ptr):
    """The byte(s) at `ptr` as int32 in [0, 255]."""
    return tl.load(ptr).to(tl.int32)


@triton.jit
def load_float(at, ELEMENT_BYTES: tl.constexpr, IS_BF16: tl.constexpr):
    """Little-endian F32/F16/BF16 elements at byte pointers `at`, widened exactly to fp32."""
    if ELEMENT_BYTES == 4:
        bits = load_u8(at) | (load_u8(at + 1) << 8) | (load_u8(at + 2) << 16)
        value = (bits | (load_u8(at + 3) << 24)).to(tl.float32, bitcast=True)
    elif IS_BF16:
        value = ((load_u8(at) | (load_u8(at + 1) << 8)) << 16).to(tl.float32, bitcast=True)
    else:
        half = (load_u8(at) | (load_u8(at + 1) << 8)).to(tl.uint16)
        value = half.to(tl.float16, bitcast=True).to(tl.float32)
    return value
