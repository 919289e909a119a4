"""A scalar twin of the RoPE tables (docs/PRECISION.md, 6.2), written from the document and
compared with `reference.rope` bit for bit; plus SHA-256 pins of a few tables.

The twin is deliberately plain: Python floats (each `*`, `+`, `-` one correctly rounded
binary64 operation; CPython never fuses them), `round()` for rint, `decimal` for the
per-frequency constants with exact `Fraction` exponents, fdlibm's constants spelled in hex,
and `np.float32(x)` (one correct rounding) for the final step. It shares no code with the
reference. A tolerance test against libm lives in test_ops_elementwise.py; here every bit
must agree.
"""

from __future__ import annotations

import decimal
import hashlib
import math
import struct
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from exactserve.reference.rope import (
    rope_frequencies,
    rope_table,
    yarn_frequencies,
    yarn_magnitude,
)

D = decimal.Decimal
CTX = decimal.Context(prec=50)


def from_hex(word: int) -> float:
    return struct.unpack(">d", word.to_bytes(8, "big"))[0]


# fdlibm e_rem_pio2.c: invpio2 and the 33-bit pieces pio2_1, pio2_2, pio2_3 of pi/2
INV_PIO2 = from_hex(0x3FE45F306DC9C883)
PIO2 = (from_hex(0x3FF921FB54400000), from_hex(0x3DD0B4611A600000), from_hex(0x3BA3198A2E000000))
SIN_C = [float(Fraction((-1) ** j, math.factorial(2 * j + 1))) for j in range(1, 10)]
COS_C = [float(Fraction((-1) ** j, math.factorial(2 * j))) for j in range(1, 10)]
PI_50 = D("3.14159265358979323846264338327950288419716939937510582097494459")


def dec_power(base: float, exponent: Fraction) -> decimal.Decimal:
    """base ** exponent at 50 digits: exp(ln(base) * p / q), the exponent kept exact."""
    product = CTX.divide(CTX.multiply(CTX.ln(D(base)), D(exponent.numerator)), exponent.denominator)
    return CTX.exp(product)


def omega_twin(n_rot: int, base: float, scale: float = 1.0, factors=None) -> list[float]:
    """6.2: omega_i = freq_scale * base^(-2i / n_rot) / f_i, decimal, one rounding."""
    out = []
    for i in range(n_rot // 2):
        value = CTX.multiply(D(float(scale)), dec_power(base, Fraction(-2 * i, n_rot)))
        if factors is not None:
            value = CTX.divide(value, D(float(factors[i])))
        out.append(float(value))
    return out


def yarn_omega_twin(n_rot, base, scale, n_ctx_orig, beta_fast=32.0, beta_slow=1.0, ext=1.0):
    """6.2, YaRN: base^(-2i/n_rot) * (freq_scale * (1 - mix_i) + mix_i)."""

    def c(beta: float) -> decimal.Decimal:
        ratio = CTX.divide(D(n_ctx_orig), CTX.multiply(2 * D(beta), PI_50))
        return CTX.divide(CTX.multiply(D(n_rot), CTX.ln(ratio)), 2 * CTX.ln(D(base)))

    low = max(D(0), c(beta_fast).to_integral_value(decimal.ROUND_FLOOR))
    high = min(D(n_rot - 1), c(beta_slow).to_integral_value(decimal.ROUND_CEILING))
    out = []
    for i in range(n_rot // 2):
        ramp = CTX.divide(D(i) - low, max(D("0.001"), high - low))
        mix = CTX.multiply(1 - min(D(1), max(D(0), ramp)), D(ext))
        interp = CTX.add(CTX.multiply(D(scale), 1 - mix), mix)
        out.append(float(CTX.multiply(dec_power(base, Fraction(-2 * i, n_rot)), interp)))
    return out


def sincos_twin(theta: float) -> tuple[float, float]:
    """6.2: sin and cos of a binary64 angle with basic binary64 operations only."""
    n = round(theta * INV_PIO2)  # ties to even, exact for these magnitudes
    r = ((theta - n * PIO2[0]) - n * PIO2[1]) - n * PIO2[2]
    z = r * r
    s_poly = SIN_C[8]
    for coef in reversed(SIN_C[:8]):
        s_poly = s_poly * z + coef
    c_poly = COS_C[8]
    for coef in reversed(COS_C[:8]):
        c_poly = c_poly * z + coef
    s = r + (r * z) * s_poly
    c = 1.0 + z * c_poly
    return [(s, c), (c, -s), (-s, -c), (-c, s)][n % 4]


def table_twin(positions, omega, magnitude: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    cos = np.empty((len(positions), len(omega)), dtype=np.float32)
    sin = np.empty_like(cos)
    for t, p in enumerate(positions):
        for i, w in enumerate(omega):
            s, c = sincos_twin(float(p) * w)
            if magnitude != 1.0:
                s, c = s * magnitude, c * magnitude
            cos[t, i], sin[t, i] = np.float32(c), np.float32(s)
    return cos, sin


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and np.array_equal(a.view(np.uint32), b.view(np.uint32))


POSITIONS = np.concatenate(
    [np.arange(0, 300), [511, 512, 4095, 4096, 32767, 131071, 524287, (1 << 20) - 1]]
)


def test_twin_sincos_is_accurate() -> None:
    """The twin itself against 40-digit sin/cos: within 2^-52 absolutely."""
    mpmath.mp.dps = 40
    rng = np.random.default_rng(7)
    for theta in [0.0, 1e-300, 0.785, 1.5707963267948966, 3.0, *rng.uniform(0, 2**20, 500)]:
        s, c = sincos_twin(float(theta))
        assert abs(s - float(mpmath.sin(theta))) <= 2.0**-52, theta
        assert abs(c - float(mpmath.cos(theta))) <= 2.0**-52, theta


CONFIGS = {  # name: (n_rot, base, freq_scale, llama3-style factors)
    "llama-10000-128": (128, 10000.0, 1.0, None),
    "gemma3-global-1e6-256": (256, 1000000.0, 1.0, None),
    "qwen-1e6-64-odd-quarter": (64, 1000000.0, 0.25, None),
    "llama3-500000-factors": (128, 500000.0, 1.0, np.linspace(1, 8, 64, dtype=np.float32)),
    "partial-96": (96, 10000.0, 1.0, None),  # -2i/96 does not terminate in decimal
}


@pytest.mark.parametrize("name", list(CONFIGS))
def test_reference_tables_equal_the_twin(name: str) -> None:
    n_rot, base, scale, factors = CONFIGS[name]
    omega = rope_frequencies(n_rot, base, scale, factors)
    twin = omega_twin(n_rot, base, scale, factors)
    assert np.array_equal(omega, np.array(twin, dtype=np.float64))
    cos, sin = rope_table(POSITIONS, omega)
    want_cos, want_sin = table_twin(POSITIONS, twin)
    assert same_bits(cos, want_cos) and same_bits(sin, want_sin)


def test_yarn_tables_equal_the_twin() -> None:
    n_rot, base, scale, n_orig = 128, 1000000.0, 0.25, 32768
    omega = yarn_frequencies(n_rot, base, scale, n_orig)
    twin = yarn_omega_twin(n_rot, base, scale, n_orig)
    assert np.array_equal(omega, np.array(twin, dtype=np.float64))
    magnitude = yarn_magnitude(scale)
    # 1 + 0.1 ln(1 / freq_scale), rounded once to binary64
    assert magnitude == float(1 + D("0.1") * CTX.ln(CTX.divide(1, D(scale))))
    cos, sin = rope_table(POSITIONS[::7], omega, magnitude)
    want_cos, want_sin = table_twin(POSITIONS[::7], twin, magnitude)
    assert same_bits(cos, want_cos) and same_bits(sin, want_sin)


def test_planted_changes_are_caught() -> None:
    """Negative controls: one changed rounding step must change some bits. (Most tiny
    changes inside the binary64 evaluation vanish in the final binary32 rounding; these
    two do not.)"""
    omega = yarn_omega_twin(128, 1000000.0, 0.25, 32768)
    magnitude = yarn_magnitude(0.25)
    positions = POSITIONS[::5]
    cos, sin = rope_table(positions, np.array(omega), magnitude)
    want_cos, want_sin = table_twin(positions, omega, magnitude)
    assert same_bits(cos, want_cos) and same_bits(sin, want_sin)
    theta_f32 = np.array(
        [
            [np.float32(sincos_twin(float(np.float32(p * w)))[1] * magnitude) for w in omega]
            for p in positions
        ],
        dtype=np.float32,
    )  # theta rounded to binary32 first
    assert not same_bits(cos, theta_f32)
    twice = np.array(
        [
            [np.float32(float(np.float32(sincos_twin(p * w)[1])) * magnitude) for w in omega]
            for p in positions
        ],
        dtype=np.float32,
    )  # the magnitude applied after the binary32 rounding: two roundings
    assert not same_bits(cos, twice)


# SHA-256 of cos || sin (little-endian binary32) for positions 0..4095. Why pin bits the twin
# already checks: a pin also catches a change made to the reference and the twin together
# (a "fix" to a shared constant, a NumPy or Python upgrade that changes float() of a
# Fraction or decimal's ln/exp), and it states the exact tables every backend and every
# host must hold. Regenerate only with a contract change, and say so in PRECISION.md.
PINS = {
    "llama-10000-128": "3025e879dd46132a11491a38d273eb0bdf0bfa611222914543e362c95a7ec0f9",
    "gemma3-global-1e6-256": "b6f2032ccc46b4e91ebe3f4d4c181a62a84533a748db8fec87db3749cead62e4",
    "partial-96": "50552d3e86b3f58f964a600f4b708a6dccd5b87657944501c068dfab29825f53",
}


@pytest.mark.parametrize("name", list(PINS))
def test_tables_are_pinned(name: str) -> None:
    n_rot, base, scale, factors = CONFIGS[name]
    cos, sin = rope_table(np.arange(4096), rope_frequencies(n_rot, base, scale, factors))
    digest = hashlib.sha256(cos.astype("<f4").tobytes() + sin.astype("<f4").tobytes())
    assert digest.hexdigest() == PINS[name]
