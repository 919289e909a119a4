"""Row-wise kernels against their reference twins, bit for bit: transcendentals and gated
activations (contract 4), RMSNorm (6.1), RoPE (6.2), embeddings (6.3), greedy argmax."""

from __future__ import annotations

import numpy as np
import pytest
from gguf import GGMLQuantizationType as T
from kernel_cases import (
    assert_same_bits,
    dev,
    random_activations,
    random_blocks,
)

import exactserve.reference.activations as ra
import exactserve.reference.quants as rq
from exactserve.kernels.activations import gated, softcap_values, unary
from exactserve.kernels.embedding import embedding_rows
from exactserve.kernels.logits import argmax
from exactserve.kernels.quants import weight_matrix
from exactserve.kernels.rmsnorm import rmsnorm
from exactserve.kernels.rope import apply_rope
from exactserve.reference.embedding import scale_embeddings
from exactserve.reference.rmsnorm import rmsnorm as reference_rmsnorm
from exactserve.reference.rope import NEOX, NORMAL, rope_frequencies, rope_table
from exactserve.reference.rope import apply_rope as reference_rope

# Infinite inputs (testing exp's clamps) overflow inside the interpreter's NumPy ops.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def sweep_inputs() -> np.ndarray:
    """float32 inputs over the whole domain: random bit patterns of every finite binade,
    the clamp thresholds and their neighbours, zeros, infinities, subnormal results."""
    rng = np.random.default_rng(0)
    bits = rng.integers(0, 1 << 32, size=6000, dtype=np.uint64).astype(np.uint32)
    exponent = rng.integers(90, 136, size=bits.size, dtype=np.uint32)  # |x| in [2^-37, 2^9)
    wide = ((bits & np.uint32(0x807FFFFF)) | (exponent << np.uint32(23))).view(np.float32)
    edges = np.array(
        [0.0, -0.0, np.inf, -np.inf, -104.0, -103.9, -104.1, 88.75, 88.7, 88.8, -87.3, -100.0,
         1e-30, -1e-30, 0.5, -0.5, 20.0, -20.0, 9.0, -9.0],
        dtype=np.float32,
    )  # fmt: skip
    near = (rng.standard_normal(4000) * 6).astype(np.float32)
    return np.concatenate([wide, edges, near])


@pytest.mark.parametrize("name", ["exp", "tanh", "silu", "gelu_tanh"])
def test_unary_functions_match_reference(name: str) -> None:
    x = sweep_inputs()
    with np.errstate(over="ignore", invalid="ignore"):
        expected = getattr(ra, name)(x)
    assert_same_bits(unary(dev(x), name), expected)


@pytest.mark.parametrize("activation", ["silu", "gelu_tanh"])
def test_gated_matches_reference(activation: str) -> None:
    gate, up = random_activations((7, 300), seed=1), random_activations((7, 300), seed=2)
    expected = ra.gated(gate, up, activation)
    assert_same_bits(gated(dev(gate), dev(up), activation), expected)


def test_softcap_matches_reference() -> None:
    x = random_activations((5, 77), seed=3) * np.float32(30.0)
    expected = ra.softcap(x, 30.0)
    assert_same_bits(softcap_values(dev(x), 30.0), expected)


@pytest.mark.parametrize("shape", [(3, 64), (9, 100), (2, 4, 80), (1, 1)])
def test_rmsnorm_matches_reference(shape: tuple[int, ...]) -> None:
    x = random_activations(shape, seed=shape[-1])
    w = random_activations((shape[-1],), seed=9)
    eps = 1e-6
    expected = reference_rmsnorm(x, w, eps)
    assert_same_bits(rmsnorm(dev(x), dev(w), eps), expected)


@pytest.mark.parametrize("layout", [NORMAL, NEOX])
@pytest.mark.parametrize("head_dim,n_rot", [(64, 64), (80, 32)])
def test_rope_matches_reference(layout: str, head_dim: int, n_rot: int) -> None:
    positions = np.array([0, 1, 5, 63, 64, 1000, 70000])
    omega = rope_frequencies(n_rot, 10000.0)
    cos, sin = rope_table(positions, omega)
    x = random_activations((len(positions), 3, head_dim), seed=head_dim)
    expected = reference_rope(x, cos, sin, layout)
    actual = apply_rope(dev(x), dev(cos), dev(sin), layout)
    assert_same_bits(actual, expected)


@pytest.mark.parametrize("qtype", [T.Q8_0, T.Q5_K, T.F16], ids=lambda t: t.name)
def test_embedding_rows_match_reference(qtype: T) -> None:
    n_vocab, n_embd = 40, 256
    if qtype == T.F16:
        raw = (random_activations((n_vocab, n_embd), seed=4) * 0.1).astype("<f2").view(np.uint8)
    else:
        block_size, _ = rq.block_geometry(qtype)
        raw = random_blocks(qtype, n_vocab * n_embd // block_size, seed=5, wide=False)
    raw = raw.reshape(-1)
    ids = np.array([39, 0, 7, 7, 21])
    table = rq.dequantize(raw, qtype, (n_embd, n_vocab))
    scale = float(np.sqrt(np.float32(n_embd), dtype=np.float32))
    expected = scale_embeddings(table[ids], scale)
    w = weight_matrix(raw, qtype, n_vocab, n_embd)
    assert_same_bits(embedding_rows(w, dev(ids), scale), expected)
    assert_same_bits(embedding_rows(w, dev(ids)), table[ids])


def test_argmax_takes_the_lowest_id_of_ties() -> None:
    logits = random_activations((4, 2500), seed=6)
    logits[1, [5, 1500, 2400]] = np.float32(1e9)  # ties across vocabulary tiles
    logits[2, :] = np.float32(-3.0)  # all equal
    logits[3, 2499] = np.float32(1e9)  # the last id
    expected = [int(np.argmax(row)) for row in logits]
    assert argmax(dev(logits)).tolist() == expected == [expected[0], 5, 0, 2499]
