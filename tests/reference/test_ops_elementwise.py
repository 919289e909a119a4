"""Contract 2, 4 and 6: primitives, transcendentals, RMSNorm, RoPE. Accuracy against float64
(stated bounds) and the structural promises (padding, independence of table ranges)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from exactserve.reference import activations
from exactserve.reference.fp import assert_gradual_underflow, rint_f32, rint_f64, tree_sum
from exactserve.reference.rmsnorm import rmsnorm
from exactserve.reference.rope import (
    NEOX,
    NORMAL,
    apply_rope,
    rope_frequencies,
    rope_table,
    yarn_frequencies,
    yarn_magnitude,
)

F32 = np.float32


def ulp32(v: np.ndarray) -> np.ndarray:
    v = np.abs(np.asarray(v, dtype=np.float64))
    e = np.floor(np.log2(np.maximum(v, 2.0**-149)))
    return 2.0 ** (np.maximum(e, -126) - 23)


def test_exp_within_one_ulp_everywhere():
    rng = np.random.default_rng(0)
    x = np.concatenate(
        [rng.uniform(-104, 88.72, 400_000), rng.uniform(-1, 1, 100_000), [0.0, -87.5, 88.7]]
    ).astype(F32)
    got = activations.exp(x).astype(np.float64)
    want = np.exp(x.astype(np.float64))
    assert (np.abs(got - want) <= ulp32(want)).all()


def test_exp_special_values():
    x = F32([-np.inf, np.inf, np.nan, -200.0, 89.0, 88.72283172607422, 0.0])
    got = activations.exp(x)
    assert got[0] == 0 and np.signbit(got[0]) == 0
    assert np.isinf(got[1]) and np.isnan(got[2]) and got[3] == 0 and np.isinf(got[4])
    assert np.isfinite(got[5]) and got[6] == 1


def test_silu_within_three_ulp():
    x = np.linspace(-20, 20, 400_001).astype(F32)
    x64 = x.astype(np.float64)
    got = activations.silu(x).astype(np.float64)
    assert (np.abs(got - x64 / (1 + np.exp(-x64))) <= 3 * ulp32(x64 / (1 + np.exp(-x64)))).all()


def test_gelu_accuracy():
    """Within 3 ulp for x >= -1; absolute error below 1e-6 everywhere (for x < -1 the value
    is small and exp's argument -2y carries the rounding of y, amplified by |2y|)."""
    x = np.linspace(-20, 20, 400_001).astype(F32)
    x64 = x.astype(np.float64)
    # 0.5 x (1 + tanh(y)) = x sigmoid(2y): the form that stays accurate in float64 for x < 0.
    want = x64 / (1 + np.exp(-2 * 0.7978845608028654 * (x64 + 0.044715 * x64**3)))
    err = np.abs(activations.gelu_tanh(x).astype(np.float64) - want)
    assert (err[x >= -1] <= 3 * ulp32(want[x >= -1])).all()
    assert err.max() < 1e-6


def test_tanh_and_softcap():
    x = np.linspace(-12, 12, 10_001).astype(F32)
    assert np.abs(activations.tanh(x) - np.tanh(x.astype(np.float64))).max() < 2e-7
    capped = activations.softcap(F32([1000.0, -1000.0, 0.5]), 30.0)
    assert capped[0] == 30 and capped[1] == -30 and abs(capped[2] - 30 * math.tanh(0.5 / 30)) < 1e-6


def test_gated_is_one_multiply():
    g, u = F32([1.5, -2.0]), F32([3.0, 0.25])
    assert np.array_equal(activations.gated(g, u, "silu"), activations.silu(g) * u)


def test_rint_ties_to_even_and_matches_numpy():
    v = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 1024.5, 2047.5, 3.25, -7.75], dtype=F32)
    assert np.array_equal(rint_f32(v), np.rint(v))
    w = np.random.default_rng(0).uniform(-(2.0**40), 2.0**40, 1000)
    assert np.array_equal(rint_f64(w), np.rint(w))


def test_tree_sum_pads_with_zeros_and_pairs_adjacent_elements():
    x = np.random.default_rng(1).standard_normal((3, 100)).astype(F32)
    padded = np.concatenate([x, np.zeros((3, 28), F32)], axis=1)
    assert np.array_equal(tree_sum(x), tree_sum(padded))
    # A sum over 2 is one addition; over 4, (x0 + x1) + (x2 + x3).
    y = F32([1e8, 1.0, -1e8, 1.0])
    assert tree_sum(y) == (y[0] + y[1]) + (y[2] + y[3])


def test_gradual_underflow_is_on():
    assert_gradual_underflow()


def test_rmsnorm_close_to_float64():
    rng = np.random.default_rng(2)
    x = (rng.standard_normal((4, 640)) * 30).astype(F32)
    w = rng.uniform(0.5, 2, 640).astype(F32)
    got = rmsnorm(x, w, 1e-6).astype(np.float64)
    x64 = x.astype(np.float64)
    want = x64 / np.sqrt((x64**2).mean(axis=-1, keepdims=True) + 1e-6) * w
    assert np.abs(got - want).max() <= 8 * ulp32(np.abs(want).max())


def test_rope_frequencies():
    omega = rope_frequencies(128, 500000.0)
    want = 500000.0 ** (-np.arange(0, 128, 2) / 128)
    assert np.abs(omega / want - 1).max() < 1e-15
    factors = np.linspace(1, 8, 64).astype(F32)
    scaled = rope_frequencies(128, 500000.0, 0.25, factors)
    assert np.abs(scaled / (0.25 * want / factors) - 1).max() < 1e-15


def test_rope_tables_match_libm_and_do_not_depend_on_the_range():
    omega = rope_frequencies(64, 10000.0)
    positions = np.arange(0, 40000, 7)
    cos, sin = rope_table(positions, omega)
    theta = positions[:, None].astype(np.float64) * omega
    for got, fn in ((cos, np.cos), (sin, np.sin)):
        want = fn(theta)
        assert (np.abs(got - want) <= ulp32(want) / 2 + 1e-15).all()  # correctly rounded
        assert (got == want.astype(F32)).mean() > 0.9999
    some = np.array([0, 7 * 5000, 7 * 11])
    c2, s2 = rope_table(some, omega)
    assert np.array_equal(c2, cos[[0, 5000, 11]]) and np.array_equal(s2, sin[[0, 5000, 11]])


@pytest.mark.parametrize("layout", [NORMAL, NEOX])
def test_rope_rotates_the_layouts_pairs(layout):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((5, 2, 12)).astype(F32)
    omega = rope_frequencies(8, 10000.0)  # partial rotary: 8 of 12 dims
    pos = np.array([0, 1, 2, 100, 4000])
    cos, sin = rope_table(pos, omega)
    y = apply_rope(x, cos, sin, layout)
    assert np.array_equal(y[..., 8:], x[..., 8:]) and np.array_equal(y[0], x[0])
    i0, i1 = (
        (np.arange(0, 8, 2), np.arange(1, 8, 2))
        if layout == NORMAL
        else (np.arange(4), np.arange(4, 8))
    )
    z = (x[..., i0] + 1j * x[..., i1]).astype(np.complex128)
    rot = z * np.exp(1j * pos[:, None, None] * omega[None, None, :])
    assert np.abs(y[..., i0] - rot.real).max() < 1e-5 and np.abs(y[..., i1] - rot.imag).max() < 1e-5
    c, s = cos[:, None, :], sin[:, None, :]
    assert np.array_equal(y[..., i0], x[..., i0] * c - x[..., i1] * s)


def test_yarn_frequencies_and_magnitude():
    n_rot, base, scale, n_orig = 128, 1000000.0, 0.25, 32768
    omega = yarn_frequencies(n_rot, base, scale, n_orig)

    def corr(beta):
        return n_rot * math.log(n_orig / (beta * 2 * math.pi)) / (2 * math.log(base))

    low, high = max(0, math.floor(corr(32.0))), min(n_rot - 1, math.ceil(corr(1.0)))
    i = np.arange(n_rot // 2)
    mix = 1 - np.clip((i - low) / max(0.001, high - low), 0, 1)
    want = base ** (-2 * i / n_rot) * (scale * (1 - mix) + mix)
    assert np.abs(omega / want - 1).max() < 1e-13
    assert omega[0] == 1.0 and abs(omega[-1] / (0.25 * base ** (-126 / 128)) - 1) < 1e-13
    assert abs(yarn_magnitude(scale) - (1 + 0.1 * math.log(4))) < 1e-15
    assert yarn_magnitude(1.0) == 1.0
    cos, sin = rope_table(np.array([3]), omega[:2], magnitude=2.0)
    assert cos[0, 0] == np.float32(2 * math.cos(3.0))
