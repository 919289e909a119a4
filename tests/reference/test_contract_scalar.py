"""Scalar twins of the precision contract's clauses (docs/PRECISION.md), written from the
document with Python loops over np.float32 scalars (one IEEE binary32 operation each),
Python integers for the exact parts and math.frexp / round() instead of the reference's bit
tricks. test_contract.py compares the vectorised reference with them bit for bit.

The tests in this file check the twins themselves against first principles.
"""

from __future__ import annotations

import math
import struct

import numpy as np

f32 = np.float32
ZERO, ONE = f32(0.0), f32(1.0)


def bits(x: np.float32) -> int:
    return struct.unpack("<I", struct.pack("<f", float(x)))[0]


def from_bits(b: int) -> np.float32:
    return f32(struct.unpack("<f", struct.pack("<I", b))[0])


def floor_log2(v: float) -> int:
    return math.frexp(v)[1] - 1


# 2.3
def tree_sum(values) -> np.float32:
    level = [f32(v) for v in values]
    width = 1
    while width < len(level):
        width *= 2
    level += [ZERO] * (width - len(level))
    while len(level) > 1:
        level = [level[2 * i] + level[2 * i + 1] for i in range(len(level) // 2)]
    return level[0] if level else ZERO


# 4.1
LOG2E, LN2_HI, LN2_LO = from_bits(0x3FB8AA3B), from_bits(0x3F318000), from_bits(0xB95E8083)
POLY = [from_bits(b) for b in (0x39506967, 0x3AB743CE, 0x3C088908, 0x3D2AA9C1, 0x3E2AAAAA)]
POLY.append(from_bits(0x3F000000))


def exp(x) -> np.float32:
    x = f32(x)
    if x < f32(-104.0):
        x = f32(-104.0)
    if x > f32(88.75):
        x = f32(88.75)
    k = f32(round(float(x * LOG2E)))
    r = x - k * LN2_HI
    r = r - k * LN2_LO
    p = POLY[0]
    for c in POLY[1:]:
        p = p * r + c
    p = (p * (r * r) + r) + ONE
    ki = int(k)
    k1 = ki // 2
    with np.errstate(over="ignore"):
        return (p * f32(2.0**k1)) * f32(2.0 ** (ki - k1))


def tanh(x) -> np.float32:
    x = f32(x)
    e = exp(f32(-2.0) * abs(x))
    t = (ONE - e) / (ONE + e)
    return -t if x < 0 else t


def silu(x) -> np.float32:
    x = f32(x)
    with np.errstate(over="ignore"):
        return x / (ONE + exp(-x))


def gelu(x) -> np.float32:
    x = f32(x)
    v = ONE + (f32(0.044715) * x) * x
    y = from_bits(0x3F4C422A) * x * v
    with np.errstate(over="ignore"):
        return x / (ONE + exp(f32(-2.0) * y))


# 3.1
def quantize_block(xs) -> tuple[list[int], int]:
    amax = max(abs(float(v)) for v in xs)
    if not amax >= 2.0**-100:
        return [0] * len(xs), 0
    e = floor_log2(amax) - 10
    return [round(float(v) * 2.0**-e) for v in xs], e


# 3.2
def block_float(xs, float64: bool = False) -> tuple[list[int], int]:
    amax = max(abs(float(v)) for v in xs)
    if (amax == 0) if float64 else not amax >= 2.0**-100:
        return [0] * len(xs), 0
    e = floor_log2(amax) - 20
    return [round(float(v) * 2.0**-e) for v in xs], e


# 5.2, one output element
def matmul_element(x_row, q_row, scale_row, offset_row, group: int) -> np.float32:
    blocks = [quantize_block(x_row[i : i + 32]) for i in range(0, len(x_row), 32)]
    acc = ZERO
    for g in range(len(x_row) // group):
        qa, e = blocks[g * group // 32]
        off = g * group % 32
        isum = sum(int(q_row[g * group + j]) * qa[off + j] for j in range(group))
        t = f32(float(scale_row[g]) * isum * 2.0**e)  # the exact real, rounded once
        if offset_row is not None:
            psum = sum(qa[off : off + group])
            t = t + f32(float(offset_row[g]) * psum * 2.0**e)
        acc = acc + t
    return acc


# 6.1
def rmsnorm(x_row, w, eps) -> list[np.float32]:
    ss = tree_sum([f32(v) * f32(v) for v in x_row])
    mean = ss / f32(len(x_row))
    r = ONE / np.sqrt(mean + f32(eps))
    return [(f32(v) * r) * f32(wi) for v, wi in zip(x_row, w, strict=True)]


# 7.3, one query head
def attention_query(q, pos, keys, values, window=None, chunk=64) -> list[np.float32]:
    """q: D floats; keys/values: lists of rows (float32) for positions 0..pos."""
    qi, eq = block_float(q)
    kbf = [block_float(k) for k in keys[: pos + 1]]
    vbf = [block_float(v) for v in values[: pos + 1]]
    lo = 0 if window is None else max(0, pos - window + 1)
    m, denom, acc = -math.inf, ZERO, [ZERO] * len(values[0])
    for c in range(lo // chunk, pos // chunk + 1):
        slots = range(c * chunk, c * chunk + chunk)
        vis = [lo <= j <= pos for j in slots]
        s = {}
        for j, v in zip(slots, vis, strict=True):
            if v:
                ki, ek = kbf[j]
                exact = sum(a * b for a, b in zip(qi, ki, strict=True))
                s[j] = f32(float(exact) * 2.0 ** (eq + ek))
        m_new = max([m, *[float(x) for x in s.values()]])
        alpha = exp(f32(m) - f32(m_new))
        p = [exp(s[j] - f32(m_new)) if v else ZERO for j, v in zip(slots, vis, strict=True)]
        denom = denom * alpha + tree_sum(p)
        scaled = [
            float(pj) * 2.0 ** vbf[j][1] if v else 0.0
            for pj, j, v in zip(p, slots, vis, strict=True)
        ]
        pi, ep = block_float(scaled, float64=True)
        for d in range(len(acc)):
            exact = sum(pi[t] * vbf[j][0][d] for t, j in enumerate(slots) if vis[t])
            acc[d] = acc[d] * alpha + f32(float(exact) * 2.0**ep)
        m = m_new
    return [a / denom for a in acc]


def test_exp_twin_is_accurate_and_handles_specials():
    rng = np.random.default_rng(1)
    for x in rng.uniform(-103.0, 88.7, 3000).astype(np.float32):
        got, want = float(exp(x)), math.exp(float(x))
        ulp = 2.0 ** (floor_log2(want) - 23) if want >= 2.0**-126 else 2.0**-149
        assert abs(got - want) <= ulp, (x, got, want)
    assert exp(-math.inf) == 0 and math.isinf(exp(math.inf)) and exp(0.0) == 1


def test_quantize_block_twin_bounds_and_ties():
    q, e = quantize_block([f32(1.0)] + [f32(1.0 + 2.0**-11)] * 31)
    assert e == -10 and q[0] == 1024 and q[1] == 1024  # 1024.5 rounds to even
    q, e = quantize_block([f32(-3.0)] * 32)
    assert q == [-1536] * 32 and e == -9
    assert quantize_block([f32(1e-31)] * 32) == ([0] * 32, 0)


def test_tree_sum_twin_is_pairwise():
    big, tiny = f32(2.0**24), f32(1.0)
    # (big + 1) + (1 + 0): 2^24 + 1 rounds to 2^24 (even), 1 + 0 = 1, 2^24 + 1 -> 2^24.
    assert tree_sum([big, tiny, tiny]) == big
    # (1 + 1) + (2^24 + 0) = 2 + 2^24, exact.
    assert tree_sum([tiny, tiny, big]) == f32(2.0**24 + 2)
