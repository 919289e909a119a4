"""The vectorised reference against the scalar twins of each clause, bit for bit, and the
negative controls: a planted one-rounding-step change in an op must make the check fail."""

from __future__ import annotations

import numpy as np
import pytest
import test_contract_scalar as scalar

import exactserve.reference.activations as activations
import exactserve.reference.attention as attention_module
import exactserve.reference.fp as fp
import exactserve.reference.matmul as matmul_module
import exactserve.reference.rmsnorm as rmsnorm_module
from exactserve.reference.attention import attention
from exactserve.reference.matmul import matmul, prepare_float, prepare_integer
from exactserve.reference.quantize import block_float, quantize_activations
from exactserve.reference.rmsnorm import rmsnorm

F32 = np.float32


def same_bits(a, b) -> bool:
    a, b = np.asarray(a, dtype=F32), np.asarray(b, dtype=F32)
    return a.shape == b.shape and np.array_equal(a.view(np.uint32), b.view(np.uint32))


def _inputs(seed: int, n: int, scale: float = 4.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(n) * scale).astype(F32)


# Each check returns the number of elements where the reference and the twin differ.


def check_exp() -> int:
    x = np.concatenate([_inputs(0, 600, 20.0), np.linspace(-110, 90, 401, dtype=F32)])
    x = np.concatenate([x, F32([0.0, -0.0, -np.inf, np.inf, -104.0, 88.72283, 88.7229])])
    got = activations.exp(x)
    return sum(not same_bits(g, scalar.exp(v)) for g, v in zip(got, x, strict=True))


def check_gates() -> int:
    x = np.concatenate([_inputs(1, 400, 5.0), F32([0.0, -30.0, 30.0, -90.0, 100.0])])
    bad = 0
    for name, twin in (("silu", scalar.silu), ("gelu_tanh", scalar.gelu)):
        got = activations.ACTIVATIONS[name](x)
        bad += sum(not same_bits(g, twin(v)) for g, v in zip(got, x, strict=True))
    got = activations.tanh(x)
    bad += sum(not same_bits(g, scalar.tanh(v)) for g, v in zip(got, x, strict=True))
    return bad


def check_tree_sum() -> int:
    bad = 0
    for n in (1, 2, 3, 31, 64, 100, 257):
        x = _inputs(n, n, 1000.0) ** 3
        bad += not same_bits(fp.tree_sum(x), scalar.tree_sum(x))
    return bad


def check_quantize() -> int:
    x = _inputs(2, 8 * 96).reshape(8, 96)
    x[3, 32:64] = 0.0
    x[5, :32] *= F32(1e-20)
    qa = quantize_activations(x)
    bad = 0
    for m in range(8):
        for b in range(3):
            q, e = scalar.quantize_block(x[m, 32 * b : 32 * b + 32])
            want = np.array(q, dtype=np.float64) * 2.0**e
            bad += not np.array_equal(qa.values[m, 32 * b : 32 * b + 32], want)
            bad += int(qa.exponent[m, b]) != e
    bf = block_float(x.reshape(8, 3, 32))
    for m in range(8):
        for b in range(3):
            ints, e = scalar.block_float(x[m, 32 * b : 32 * b + 32])
            bad += not np.array_equal(bf.integers[m, b], ints) or bf.scale[m, b] != 2.0**e
    return bad


def check_matmul(group: int = 32, with_offset: bool = True, float_weights: bool = False) -> int:
    rng = np.random.default_rng(3)
    m, k, n = 3, 96, 5
    x = (rng.standard_normal((m, k)) * 3).astype(F32)
    x[1, 40] = 60.0  # an outlier in one block
    if float_weights:
        w = (rng.standard_normal((n, k)) * 0.05).astype(F32)
        prepared = prepare_float(w)
        q, e = [], []
        for row in w:
            groups = [scalar.block_float(row[i : i + 32]) for i in range(0, k, 32)]
            q.append([v for ints, _ in groups for v in ints])
            e.append([2.0**ee for _, ee in groups])
        q, scale, offset = np.array(q), np.array(e), None
    else:
        q = rng.integers(-128, 128, (n, k)).astype(np.int8)
        scale = (rng.uniform(0.5, 1.5, (n, k // group)) * 2.0**-10).astype(F32)
        offset = (rng.uniform(-2, 0, (n, k // group)) * 2.0**-8).astype(F32)
        offset = offset if with_offset else None
        prepared = prepare_integer(q, scale, offset, group)
    got = matmul(x, prepared)
    bad = 0
    for i in range(m):
        for j in range(n):
            off = None if offset is None else offset[j]
            bad += not same_bits(got[i, j], scalar.matmul_element(x[i], q[j], scale[j], off, group))
    return bad


def check_rmsnorm() -> int:
    x = _inputs(4, 5 * 100).reshape(5, 100)
    w = _inputs(5, 100, 1.0)
    got = rmsnorm(x, w, 1e-6)
    return sum(not same_bits(got[i], scalar.rmsnorm(x[i], w, 1e-6)) for i in range(5))


def check_attention(window: int | None = None) -> int:
    rng = np.random.default_rng(6)
    t, h, h_kv, d = 150, 2, 1, 8
    q = (rng.standard_normal((t, h, d)) * 2).astype(F32)
    k = (rng.standard_normal((t, h_kv, d)) * 2).astype(F32)
    v = rng.standard_normal((t, h_kv, d)).astype(F32)
    kb, vb = block_float(k), block_float(v)
    kv = (kb.integers.transpose(1, 0, 2), kb.scale.T, vb.integers.transpose(1, 0, 2), vb.scale.T)
    positions = np.array([0, 1, 63, 64, 65, 100, 127, 128, 149])
    got = attention(q[positions], positions, *kv, window=window)
    bad = 0
    for row, pos in enumerate(positions):
        for head in range(h):
            want = scalar.attention_query(q[pos, head], pos, k[:, 0], v[:, 0], window)
            bad += not same_bits(got[row, head], want)
    return bad


CHECKS = {
    "exp": check_exp,
    "gates": check_gates,
    "tree_sum": check_tree_sum,
    "quantize": check_quantize,
    "matmul_g32_offset": lambda: check_matmul(32, True),
    "matmul_g16": lambda: check_matmul(16, False),
    "matmul_g16_offset": lambda: check_matmul(16, True),
    "matmul_float": lambda: check_matmul(float_weights=True),
    "rmsnorm": check_rmsnorm,
    "attention": check_attention,
    "attention_window": lambda: check_attention(window=70),
}


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_reference_matches_scalar_twin(name):
    assert CHECKS[name]() == 0


# Negative controls: each plants one changed rounding step and expects a check to fail.


def _exp_fused(x):
    """exp with its last multiply-add `p * r^2 + r` fused, as an FMA would (one rounding
    instead of two); every other step as in the contract."""
    x = np.clip(np.asarray(x, dtype=F32), activations.EXP_LO, activations.EXP_HI)
    k = fp.rint_f32(x * activations.LOG2E)
    r = (x - k * activations.LN2_HI) - k * activations.LN2_LO
    p = activations.EXP_POLY[0]
    for c in activations.EXP_POLY[1:]:
        p = p * r + c
    fused = p.astype(np.float64) * (r * r).astype(np.float64) + r  # exact, then rounded once
    p = fused.astype(F32) + F32(1)
    with np.errstate(over="ignore"):
        return np.ldexp(p, k.astype(np.int32)).astype(F32)


def _tree_sum_sequential(x):
    x = np.asarray(x, dtype=F32)
    acc = np.zeros(x.shape[:-1], dtype=F32)
    for i in range(x.shape[-1]):
        acc = acc + x[..., i]
    return acc


def _rmsnorm_reassociated(x, weight, eps):
    """RMSNorm with the last two products reassociated: x * (r * w) instead of (x * r) * w."""
    x = np.asarray(x, dtype=F32)
    mean = fp.tree_sum(x * x) / F32(x.shape[-1])
    r = F32(1) / np.sqrt(mean + F32(eps))
    return x * (r[..., None] * weight)


def _group_loop_pairwise_tail(grouped, psums, w, c0, cols):
    """The group loop, but the last two groups added to each other before the accumulator."""
    q, scale = w.q[:, :, c0 : c0 + cols], w.scale[:, c0 : c0 + cols]
    terms = (np.matmul(grouped, q) * scale[:, None, :]).astype(F32)
    if psums is not None:
        terms += psums * w.offset[:, None, c0 : c0 + cols]
    acc = np.zeros(terms.shape[1:], dtype=F32)
    for g in range(len(terms) - 2):
        acc += terms[g]
    return acc + (terms[-2] + terms[-1])


def _update_fused(denom, acc, alpha, denom_chunk, pv):
    """The online-softmax update with `denom * alpha + denom_chunk` fused (one rounding)."""
    fused = (denom.astype(np.float64) * alpha + denom_chunk).astype(F32)
    return fused, acc * alpha[..., None] + pv


PLANTS = {
    "exp_fused_polynomial": ("exp", activations, "exp", _exp_fused),
    "tree_sum_sequential": ("tree_sum", fp, "tree_sum", _tree_sum_sequential),
    "rmsnorm_sequential_tree": ("rmsnorm", rmsnorm_module, "tree_sum", _tree_sum_sequential),
    "rmsnorm_reassociated": ("rmsnorm", rmsnorm_module, "rmsnorm", _rmsnorm_reassociated),
    "matmul_group_order": (
        "matmul_g32_offset",
        matmul_module,
        "_group_loop",
        _group_loop_pairwise_tail,
    ),
    "attention_fused_update": ("attention", attention_module, "online_update", _update_fused),
    "attention_chunk_sum": ("attention", attention_module, "tree_sum", _tree_sum_sequential),
}


@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_planted_change_is_detected(plant, monkeypatch):
    check, module, attribute, replacement = PLANTS[plant]
    if plant == "rmsnorm_reassociated":
        monkeypatch.setitem(CHECKS, "rmsnorm", lambda: _check_rmsnorm_with(replacement))
    else:
        monkeypatch.setattr(module, attribute, replacement)
    assert CHECKS[check]() > 0


def _check_rmsnorm_with(implementation) -> int:
    x = _inputs(4, 5 * 100).reshape(5, 100)
    w = _inputs(5, 100, 1.0)
    got = implementation(x, w, 1e-6)
    return sum(not same_bits(got[i], scalar.rmsnorm(x[i], w, 1e-6)) for i in range(5))


CONTRACT_MODULES = ("fp", "quantize", "activations", "matmul", "rmsnorm", "rope", "attention")
FORBIDDEN = (
    "np.sum",
    ".sum(",
    "np.mean",
    ".mean(",
    "np.exp",
    "np.tanh",
    "np.cos",
    "np.sin",
    "np.log",
    "np.power",
    "np.dot",
    "np.einsum",
    "math.",
)


@pytest.mark.parametrize("module", CONTRACT_MODULES)
def test_no_library_transcendentals_or_float_reductions(module):
    """The contract path uses its own exp and trees; NumPy's sum (pairwise blocking), exp
    and tanh (SIMD, CPU-dependent) and libm would make results platform-dependent."""
    from pathlib import Path

    from exactserve import reference

    source = (Path(reference.__file__).parent / f"{module}.py").read_text()
    assert [word for word in FORBIDDEN if word in source] == []
