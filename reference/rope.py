"""Rotary position embeddings of the contract (docs/PRECISION.md, 6.2).

The cos/sin tables are data: computed once on the host by this module and handed to every
backend. They use no library transcendental: per-frequency constants come from Python's
`decimal` (correctly rounded exp/ln at 50 digits), per-position values from float64
additions and multiplications in a fixed order, so every IEEE host builds identical tables.
The rotation itself is four fp32 multiplies and two fp32 additions per pair, no FMA.
"""

from __future__ import annotations

import decimal
from collections.abc import Sequence
from fractions import Fraction
from math import factorial

import numpy as np

from exactserve.reference.fp import F32, F64, rint_f64

NORMAL = "normal"  # pairs (2i, 2i + 1), llama.cpp LLAMA_ROPE_TYPE_NORM
NEOX = "neox"  # pairs (i, i + n_rot / 2), llama.cpp LLAMA_ROPE_TYPE_NEOX

# Cody-Waite split of pi/2 (fdlibm's 33-bit pieces): n * PIO2_k is exact for n < 2^20.
TWO_OVER_PI = F64(6.36619772367581382433e-01)
PIO2_1 = F64(1.57079632673412561417e00)
PIO2_2 = F64(6.07710050630396597660e-11)
PIO2_3 = F64(2.02226624871116645580e-21)
MAX_POSITION = 1 << 20
# Taylor coefficients: the float64 values nearest (-1)^j / (2j+1)! and (-1)^j / (2j)!,
# j = 1..9; on |r| <= pi/4 the truncation error is below 1e-21.
_SIN_COEFS = tuple(F64(Fraction((-1) ** j, factorial(2 * j + 1))) for j in range(1, 10))
_COS_COEFS = tuple(F64(Fraction((-1) ** j, factorial(2 * j))) for j in range(1, 10))


def rope_frequencies(
    n_rot: int,
    freq_base: float,
    freq_scale: float = 1.0,
    freq_factors: Sequence[float] | np.ndarray | None = None,
) -> np.ndarray:
    """omega_i = freq_scale * base^(-2i / n_rot) / factor_i for i < n_rot / 2, as float64.

    Computed in decimal at 50 digits from the exact values of the inputs (float32 metadata
    and `rope_freqs` factors), then rounded once to float64.
    """
    if n_rot % 2:
        raise ValueError(f"rope dimension count {n_rot} must be even")
    ctx = decimal.Context(prec=50)
    ln_base = ctx.ln(decimal.Decimal(float(freq_base)))
    scale = decimal.Decimal(float(freq_scale))
    omega = np.empty(n_rot // 2, dtype=F64)
    for i in range(n_rot // 2):
        power = ctx.exp(ctx.multiply(ln_base, decimal.Decimal(-2 * i) / decimal.Decimal(n_rot)))
        value = ctx.multiply(scale, power)
        if freq_factors is not None:
            value = ctx.divide(value, decimal.Decimal(float(freq_factors[i])))
        omega[i] = float(value)
    return omega


_PI = decimal.Decimal("3.14159265358979323846264338327950288419716939937510582097494459")


def yarn_frequencies(
    n_rot: int,
    freq_base: float,
    freq_scale: float,
    original_context: int,
    beta_fast: float = 32.0,
    beta_slow: float = 1.0,
    ext_factor: float = 1.0,
    freq_factors: Sequence[float] | np.ndarray | None = None,
) -> np.ndarray:
    """YaRN frequencies (llama.cpp `rope_yarn`): per pair i, with ramp r_i from the
    correction dimensions of beta_fast/beta_slow, mix_i = r_i * ext_factor and
    omega_i = base^(-2i / n_rot) / factor_i * (freq_scale * (1 - mix_i) + mix_i).
    Decimal at 50 digits, rounded once to float64."""
    ctx = decimal.Context(prec=50)
    dec = decimal.Decimal
    ln_base = ctx.ln(dec(float(freq_base)))

    def corr_dim(beta: float) -> decimal.Decimal:
        ratio = ctx.divide(dec(original_context), ctx.multiply(dec(float(beta)) * 2, _PI))
        return ctx.divide(ctx.multiply(dec(n_rot), ctx.ln(ratio)), 2 * ln_base)

    low = max(dec(0), corr_dim(beta_fast).to_integral_value(decimal.ROUND_FLOOR))
    high = min(dec(n_rot - 1), corr_dim(beta_slow).to_integral_value(decimal.ROUND_CEILING))
    scale, ext = dec(float(freq_scale)), dec(float(ext_factor))
    omega = np.empty(n_rot // 2, dtype=F64)
    for i in range(n_rot // 2):
        power = ctx.exp(ctx.multiply(ln_base, dec(-2 * i) / dec(n_rot)))
        y = ctx.divide(dec(i) - low, max(dec("0.001"), high - low))
        mix = (1 - min(dec(1), max(dec(0), y))) * ext
        value = ctx.multiply(power, scale * (1 - mix) + mix)
        if freq_factors is not None:
            value = ctx.divide(value, dec(float(freq_factors[i])))
        omega[i] = float(value)
    return omega


def yarn_magnitude(
    freq_scale: float, attn_factor: float = 1.0, log_multiplier: float = 0.0
) -> float:
    """YaRN's cos/sin magnitude, as llama.cpp composes it (llama-context.cpp and
    `rope_yarn`): with s = 1 / freq_scale and g(s, m) = 0.1 m ln s + 1 for s > 1 (else 1),
    g(s, 1) [/ g(s, log_multiplier)] / (1 + 0.1 ln s) * attn_factor * (1 + 0.1 ln s)."""
    ctx = decimal.Context(prec=50)
    dec = decimal.Decimal
    s = ctx.divide(1, dec(float(freq_scale)))

    def g(m: float) -> decimal.Decimal:
        return dec(1) if s <= 1 else dec("0.1") * dec(float(m)) * ctx.ln(s) + 1

    factor = g(1.0) if log_multiplier == 0 else ctx.divide(g(1.0), g(log_multiplier))
    temper = 1 + dec("0.1") * ctx.ln(s) if s != 1 else dec(1)
    return float(ctx.multiply(ctx.divide(factor, temper) * dec(float(attn_factor)), temper))


def _sincos_f64(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """sin and cos of float64 angles 0 <= theta < 2^20 with basic float64 operations."""
    n = rint_f64(theta * TWO_OVER_PI)
    r = ((theta - n * PIO2_1) - n * PIO2_2) - n * PIO2_3  # |r| <= pi/4 (a hair more)
    z = r * r
    ps = _SIN_COEFS[-1]
    for c in _SIN_COEFS[-2::-1]:
        ps = ps * z + c
    s = r + (r * z) * ps
    pc = _COS_COEFS[-1]
    for c in _COS_COEFS[-2::-1]:
        pc = pc * z + c
    c = F64(1.0) + z * pc
    quadrant = n.astype(np.int64) & 3
    sin = np.choose(quadrant, [s, c, -s, -c])
    cos = np.choose(quadrant, [c, -s, -c, s])
    return sin, cos


def rope_table(
    positions: np.ndarray, omega: np.ndarray, magnitude: float = 1.0
) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin tables float32 [T, n_rot / 2]: theta = fl64(p * omega_i), then
    cos/sin in float64 (basic operations only), times `magnitude` (YaRN; float64), rounded
    once to float32."""
    positions = np.asarray(positions, dtype=np.int64)
    if positions.size and (positions.min() < 0 or positions.max() >= MAX_POSITION):
        raise ValueError(f"positions must lie in [0, {MAX_POSITION})")
    theta = positions.astype(F64)[:, None] * np.asarray(omega, dtype=F64)[None, :]
    sin, cos = _sincos_f64(theta)
    if magnitude != 1.0:
        sin, cos = sin * F64(magnitude), cos * F64(magnitude)
    return cos.astype(F32), sin.astype(F32)


def apply_rope(x: np.ndarray, cos: np.ndarray, sin: np.ndarray, layout: str) -> np.ndarray:
    """Rotate x float32 [T, H, D] by the tables [T, n_rot / 2]; dims >= n_rot pass through.

    Per pair (x0, x1): y0 = x0 * c - x1 * s, y1 = x0 * s + x1 * c (each product rounded,
    then one rounded add or subtract).
    """
    x = np.asarray(x, dtype=F32)
    half = cos.shape[-1]
    n_rot = 2 * half
    c, s = cos[:, None, :], sin[:, None, :]
    if layout == NEOX:
        x0, x1 = x[..., :half], x[..., half:n_rot]
    elif layout == NORMAL:
        x0, x1 = x[..., 0:n_rot:2], x[..., 1:n_rot:2]
    else:
        raise ValueError(f"unknown rope layout {layout!r}")
    y0 = x0 * c - x1 * s
    y1 = x0 * s + x1 * c
    out = x.copy()
    if layout == NEOX:
        out[..., :half], out[..., half:n_rot] = y0, y1
    else:
        out[..., 0:n_rot:2], out[..., 1:n_rot:2] = y0, y1
    return out
