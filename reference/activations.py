"""Transcendental functions and gated activations of the contract (docs/PRECISION.md, 4).

No library exp/tanh: each function is a fixed sequence of fp32 operations, so a Triton twin
with FMA fusion off reproduces it bit for bit. All inputs and outputs are float32.
"""

from __future__ import annotations

import numpy as np

from exactserve.reference.fp import F32, MAGIC_F32, pow2_f32

# Contract 4.1 constants (fp32 values; hex is exact).
EXP_LO = F32(-104.0)  # inputs below are raised to this: the result rounds to +0.0
EXP_HI = F32(88.75)  # inputs above are lowered to this: the result overflows to +inf
LOG2E = F32(1.44269504088896341)  # 0x3FB8AA3B
LN2_HI = F32(0.693359375)  # 0x3F318000, 9 significant bits: k * LN2_HI is exact
LN2_LO = F32(-2.12194440e-4)  # 0xB95E8083
# Cephes expf minimax coefficients, highest degree first (Horner order).
EXP_POLY = (
    F32(1.9875691500e-4),  # 0x39506967
    F32(1.3981999507e-3),  # 0x3AB743CE
    F32(8.3334519073e-3),  # 0x3C088908
    F32(4.1665795894e-2),  # 0x3D2AA9C1
    F32(1.6666665459e-1),  # 0x3E2AAAAA
    F32(5.0000001201e-1),  # 0x3F000000
)
ONE = F32(1.0)
TWO = F32(2.0)
NEG_TWO = F32(-2.0)
GELU_COEF_A = F32(0.044715)
SQRT_2_OVER_PI = F32(0.79788456080286535587989211986876)


def exp(x: np.ndarray) -> np.ndarray:
    """Contract exp (4.1): Cody-Waite reduction, degree-7 polynomial, scaling by 2^k.

    Max error 1 ulp over all fp32 inputs; exp(-inf) = +0.0, exp(+inf) = +inf, NaN -> NaN.
    """
    x = np.asarray(x, dtype=F32)
    x = np.where(x < EXP_LO, EXP_LO, x)
    x = np.where(x > EXP_HI, EXP_HI, x)
    k = (x * LOG2E + MAGIC_F32) - MAGIC_F32  # rint(x * log2 e), in [-150, 128]
    r = x - k * LN2_HI
    r = r - k * LN2_LO
    p = EXP_POLY[0]
    for c in EXP_POLY[1:]:
        p = p * r + c
    p = (p * (r * r) + r) + ONE  # 1 + r + r^2 * P(r)
    with np.errstate(invalid="ignore"):  # NaN inputs: k is garbage but p is NaN
        ki = k.astype(np.int32)
    k1 = ki >> np.int32(1)  # floor(k / 2); 2^k = 2^k1 * 2^(k - k1), both in fp32's range
    with np.errstate(over="ignore"):
        return (p * pow2_f32(k1)) * pow2_f32(ki - k1)  # first product exact, second rounds


def tanh(x: np.ndarray) -> np.ndarray:
    """Contract tanh (4.2): e = exp(-2|x|); sign(x) * (1 - e) / (1 + e)."""
    x = np.asarray(x, dtype=F32)
    e = exp(NEG_TWO * np.abs(x))
    t = (ONE - e) / (ONE + e)
    return np.where(x < 0, -t, t).astype(F32)


def silu(x: np.ndarray) -> np.ndarray:
    """Contract SiLU (4.3): x / (1 + exp(-x))."""
    x = np.asarray(x, dtype=F32)
    with np.errstate(over="ignore"):
        return x / (ONE + exp(-x))


def gelu_tanh(x: np.ndarray) -> np.ndarray:
    """Contract GELU, tanh approximation (4.4), as x * sigmoid(2y):

    y = (sqrt(2/pi) * x) * (1 + (a * x) * x);  gelu = x / (1 + exp(-2 * y)).
    Equal in real arithmetic to 0.5 * x * (1 + tanh(y)), without its cancellation for x < 0.
    """
    x = np.asarray(x, dtype=F32)
    v = ONE + (GELU_COEF_A * x) * x
    y = (SQRT_2_OVER_PI * x) * v
    with np.errstate(over="ignore"):
        return x / (ONE + exp(NEG_TWO * y))


ACTIVATIONS = {"silu": silu, "gelu_tanh": gelu_tanh}


def gated(gate: np.ndarray, up: np.ndarray, activation: str) -> np.ndarray:
    """Contract 4.5: act(gate) * up, one fp32 multiply (SwiGLU, GeGLU)."""
    return ACTIVATIONS[activation](gate) * np.asarray(up, dtype=F32)


def softcap(x: np.ndarray, cap: float) -> np.ndarray:
    """Contract 4.6: cap * tanh(x / cap) (Gemma's logit soft-capping)."""
    c = F32(cap)
    return c * tanh(np.asarray(x, dtype=F32) / c)
