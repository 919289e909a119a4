"""reference.quants against gguf-py's dequantisation (the oracle), bit for bit.

Blocks are random bytes whose fp16 scale fields are overwritten with random finite fp16
values (never NaN/Inf), so every bit of every quant field is exercised.
"""

from __future__ import annotations

import gguf
import numpy as np
import pytest
from gguf import GGMLQuantizationType as T

import exactserve.reference.quants as rq
from exactserve.reference.quants import (
    QUANT_UNITS,
    SUPPORTED_TYPES,
    block_geometry,
    dequantize,
    tensor_nbytes,
    to_integer_form,
)

# Byte offsets of the fp16 fields of each block: (d, dmin or m or None), from ggml-common.h.
FP16_FIELDS = {
    T.Q4_0: (0, None),
    T.Q4_1: (0, 2),
    T.Q5_0: (0, None),
    T.Q5_1: (0, 2),
    T.Q8_0: (0, None),
    T.Q2_K: (80, 82),
    T.Q3_K: (108, None),
    T.Q4_K: (0, 2),
    T.Q5_K: (0, 2),
    T.Q6_K: (208, None),
    T.IQ4_NL: (0, None),
    T.IQ4_XS: (0, None),
}

KVALUES = [-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113]

# Every integer q each type can hold (all of them appear in enough random blocks).
Q_VALUES = {
    T.Q4_0: range(-8, 8),
    T.Q4_1: range(0, 16),
    T.Q5_0: range(-16, 16),
    T.Q5_1: range(0, 32),
    T.Q8_0: range(-128, 128),
    T.Q2_K: range(0, 4),
    T.Q3_K: range(-4, 4),
    T.Q4_K: range(0, 16),
    T.Q5_K: range(0, 32),
    T.Q6_K: range(-32, 32),
    T.IQ4_NL: KVALUES,
    T.IQ4_XS: KVALUES,
}

# The integer sub-scale k with scale = d * k, and the integer m with offset = -(dmin * m);
# None: the offset is the fp16 m itself (Q4_1, Q5_1).
SUB_SCALES = {
    T.Q2_K: range(0, 16),
    T.Q3_K: range(-32, 32),
    T.Q4_K: range(0, 64),
    T.Q5_K: range(0, 64),
    T.Q6_K: range(-128, 128),
    T.IQ4_XS: range(-32, 32),
}
MIN_MULTIPLIERS = {T.Q2_K: range(0, 16), T.Q4_K: range(0, 64), T.Q5_K: range(0, 64)}

# The integer-form grouping the matmul relies on.
GROUPS = {
    T.Q4_0: 32, T.Q4_1: 32, T.Q5_0: 32, T.Q5_1: 32, T.Q8_0: 32,
    T.Q2_K: 16, T.Q3_K: 16, T.Q4_K: 32, T.Q5_K: 32, T.Q6_K: 16,
    T.IQ4_NL: 32, T.IQ4_XS: 32,
}  # fmt: skip

QTYPES = list(QUANT_UNITS)
SHAPES = [(1, 1), (3, 5), (8, 3), (2, 7)]  # (rows, blocks per row)


def random_fp16_bits(rng: np.random.Generator, n: int, wide: bool) -> np.ndarray:
    """n random finite fp16 bit patterns: any finite value if `wide`, else |x| in [2^-14, 2^-6)."""
    bits = rng.integers(0, 1 << 16, size=n, dtype=np.uint32)
    if wide:
        exponent = rng.integers(0, 31, size=n, dtype=np.uint32)  # 31 = Inf/NaN, excluded
    else:
        exponent = rng.integers(1, 9, size=n, dtype=np.uint32)
    bits = (bits & 0x83FF) | (exponent << 10)
    return bits.astype(np.uint16)


def random_blocks(qtype: T, n_blocks: int, seed: int) -> np.ndarray:
    """uint8 [n_blocks, type_size]: random bytes, finite fp16 scales (half wide, half narrow)."""
    rng = np.random.default_rng(seed)
    _, type_size = gguf.GGML_QUANT_SIZES[qtype]
    blocks = rng.integers(0, 256, size=(n_blocks, type_size), dtype=np.uint8)
    wide = np.arange(n_blocks) % 2 == 0
    for start in FP16_FIELDS[qtype]:
        if start is None:
            continue
        bits = np.where(
            wide, random_fp16_bits(rng, n_blocks, True), random_fp16_bits(rng, n_blocks, False)
        )
        blocks[:, start : start + 2] = bits.astype("<u2").view(np.uint8).reshape(n_blocks, 2)
    return blocks


def as_bits(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)


def fp16_at(blocks: np.ndarray, start: int) -> np.ndarray:
    return np.ascontiguousarray(blocks[:, start : start + 2]).view("<f2").astype(np.float64)


@pytest.mark.parametrize("qtype", SUPPORTED_TYPES, ids=lambda t: t.name)
def test_block_geometry_matches_ggml(qtype: T) -> None:
    assert block_geometry(qtype) == gguf.GGML_QUANT_SIZES[qtype]


@pytest.mark.parametrize("rows,blocks_per_row", SHAPES)
@pytest.mark.parametrize("qtype", QTYPES, ids=lambda t: t.name)
def test_dequantize_matches_gguf_bits(qtype: T, rows: int, blocks_per_row: int) -> None:
    block_size, type_size = gguf.GGML_QUANT_SIZES[qtype]
    blocks = random_blocks(qtype, rows * blocks_per_row, seed=rows * 100 + blocks_per_row)
    raw = blocks.reshape(rows, blocks_per_row * type_size)
    expected = gguf.quants.dequantize(raw, qtype)
    actual = dequantize(raw.reshape(-1), qtype, (blocks_per_row * block_size, rows))
    assert actual.dtype == np.float32
    assert actual.shape == (rows, blocks_per_row * block_size)
    assert np.isfinite(expected).all()
    np.testing.assert_array_equal(as_bits(actual), as_bits(expected))


@pytest.mark.parametrize("qtype", [T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0], ids=lambda t: t.name)
def test_dequantize_of_quantized_normal_data(qtype: T) -> None:
    data = np.random.default_rng(7).standard_normal((6, 96)).astype(np.float32) * 0.02
    raw = gguf.quants.quantize(data, qtype)
    expected = gguf.quants.dequantize(raw, qtype)
    actual = dequantize(raw, qtype, (96, 6))
    np.testing.assert_array_equal(as_bits(actual), as_bits(expected))


def test_float_types_match_gguf_bits() -> None:
    rng = np.random.default_rng(3)
    raw = rng.integers(0, 256, size=4 * 6 * 10, dtype=np.uint8)
    expected_f32 = gguf.quants.dequantize(raw.view(np.float32).reshape(6, 10), T.F32)
    np.testing.assert_array_equal(as_bits(dequantize(raw, T.F32, (10, 6))), as_bits(expected_f32))
    half = raw[: 2 * 60]
    expected_f16 = gguf.quants.dequantize(half.view(np.float16).reshape(6, 10), T.F16)
    np.testing.assert_array_equal(as_bits(dequantize(half, T.F16, (10, 6))), as_bits(expected_f16))
    expected_bf16 = gguf.quants.dequantize(half.reshape(6, 20), T.BF16)
    np.testing.assert_array_equal(
        as_bits(dequantize(half, T.BF16, (10, 6))), as_bits(expected_bf16)
    )


@pytest.mark.parametrize("qtype", QTYPES, ids=lambda t: t.name)
def test_integer_form_reproduces_gguf_exactly(qtype: T) -> None:
    block_size, type_size = gguf.GGML_QUANT_SIZES[qtype]
    rows, blocks_per_row = 6, 5
    blocks = random_blocks(qtype, rows * blocks_per_row, seed=11)
    n_cols = blocks_per_row * block_size
    form = to_integer_form(blocks.reshape(-1), qtype, rows, n_cols)
    group = GROUPS[qtype]
    assert form.group == group
    assert form.q.dtype == np.int8 and form.q.shape == (rows, n_cols)
    assert form.scale.dtype == np.float32 and form.scale.shape == (rows, n_cols // group)
    has_offset = FP16_FIELDS[qtype][1] is not None
    assert (form.offset is not None) == has_offset
    # Exact in float64: products have <= 24 significant bits, sums are multiples of 2^-24
    # below 2^53 (see reference.quants).
    exact = form.q.reshape(rows, -1, group) * form.scale[..., None].astype(np.float64)
    if form.offset is not None:
        exact = exact + form.offset[..., None].astype(np.float64)
    exact = exact.reshape(rows, n_cols)
    ggml = gguf.quants.dequantize(blocks.reshape(rows, -1), qtype).astype(np.float64)
    representable = exact.astype(np.float32).astype(np.float64) == exact
    # Where ggml's float32 arithmetic is exact, ggml's value IS the integer form's value.
    np.testing.assert_array_equal(ggml[representable], exact[representable])
    # Elsewhere ggml rounds exactly once: its value is the exact one rounded to float32.
    np.testing.assert_array_equal(as_bits(exact.astype(np.float32)), as_bits(ggml))
    if not has_offset:
        assert representable.all()
    else:
        assert 0.05 < representable.mean() < 1.0  # both cases were exercised
    np.testing.assert_array_equal(
        as_bits(form.to_float32()), as_bits(dequantize(blocks, qtype, (n_cols, rows)))
    )


@pytest.mark.parametrize("qtype", QTYPES, ids=lambda t: t.name)
def test_integer_form_values_cover_the_type(qtype: T) -> None:
    block_size, _ = gguf.GGML_QUANT_SIZES[qtype]
    n_blocks = 64 if block_size == 256 else 512
    blocks = random_blocks(qtype, n_blocks, seed=5)
    form = to_integer_form(blocks.reshape(-1), qtype, n_blocks, block_size)
    assert sorted(np.unique(form.q).tolist()) == sorted(Q_VALUES[qtype])


@pytest.mark.parametrize("qtype", QTYPES, ids=lambda t: t.name)
def test_scale_and_offset_are_exact_products(qtype: T) -> None:
    block_size, _ = gguf.GGML_QUANT_SIZES[qtype]
    n_blocks = 256
    blocks = random_blocks(qtype, n_blocks, seed=9)
    form = to_integer_form(blocks.reshape(-1), qtype, n_blocks, block_size)
    d_at, min_at = FP16_FIELDS[qtype]
    d = np.repeat(fp16_at(blocks, d_at), form.scale.shape[1], axis=1)
    scale = form.scale.astype(np.float64)
    nonzero = d != 0
    assert nonzero.mean() > 0.9
    np.testing.assert_array_equal(scale[~nonzero], 0.0)
    k = scale[nonzero] / d[nonzero]
    assert np.array_equal(k, np.round(k))
    allowed = SUB_SCALES.get(qtype, [1])
    assert set(np.unique(k).tolist()) <= set(allowed)
    assert len(np.unique(k)) == len(allowed)
    # float32 product (as ggml forms it) == float64 product == the stored scale.
    d32 = d[nonzero].astype(np.float32) * k.astype(np.float32)
    np.testing.assert_array_equal(d32.astype(np.float64), d[nonzero] * k)
    np.testing.assert_array_equal(d[nonzero] * k, scale[nonzero])
    if min_at is None:
        return
    dmin = np.repeat(fp16_at(blocks, min_at), form.scale.shape[1], axis=1)
    offset = form.offset.astype(np.float64)
    if qtype not in MIN_MULTIPLIERS:
        np.testing.assert_array_equal(offset, dmin)  # Q4_1/Q5_1: the fp16 m itself
        return
    nonzero = dmin != 0
    m = -offset[nonzero] / dmin[nonzero]
    assert np.array_equal(m, np.round(m))
    assert set(np.unique(m).tolist()) == set(MIN_MULTIPLIERS[qtype])
    m32 = dmin[nonzero].astype(np.float32) * m.astype(np.float32)
    np.testing.assert_array_equal(m32.astype(np.float64), dmin[nonzero] * m)


@pytest.mark.parametrize("qtype", [T.Q5_0, T.Q4_K, T.IQ4_XS], ids=lambda t: t.name)
def test_chunked_decoding_matches_single_pass(qtype: T, monkeypatch: pytest.MonkeyPatch) -> None:
    block_size, _ = gguf.GGML_QUANT_SIZES[qtype]
    blocks = random_blocks(qtype, 21, seed=13)
    whole = dequantize(blocks, qtype, (block_size * 7, 3))
    whole_form = to_integer_form(blocks, qtype, 3, block_size * 7)
    monkeypatch.setattr(rq, "_CHUNK_WEIGHTS", 2 * block_size)  # 2 blocks per step, 11 steps
    np.testing.assert_array_equal(
        as_bits(dequantize(blocks, qtype, (block_size * 7, 3))), as_bits(whole)
    )
    chunked = to_integer_form(blocks, qtype, 3, block_size * 7)
    np.testing.assert_array_equal(chunked.q, whole_form.q)
    np.testing.assert_array_equal(as_bits(chunked.scale), as_bits(whole_form.scale))


def test_wrong_byte_count_is_rejected() -> None:
    blocks = random_blocks(T.Q4_K, 2, seed=1)
    with pytest.raises(
        ValueError,
        match=r"^Q4_K data for 768 weights must be 432 uint8 bytes, "
        r"got 288 of uint8$",
    ):
        dequantize(blocks, T.Q4_K, (256, 3))


def test_row_length_must_be_whole_blocks() -> None:
    with pytest.raises(
        ValueError,
        match=r"^row length 100 is not a multiple of the Q8_0 "
        r"block size 32$",
    ):
        tensor_nbytes(T.Q8_0, (100, 2))


def test_float_type_has_no_integer_form() -> None:
    with pytest.raises(ValueError, match=r"^F16 is a float type and has no integer form$"):
        to_integer_form(np.zeros(8, np.uint8), T.F16, 2, 2)


def test_unsupported_type_names_the_supported_ones() -> None:
    with pytest.raises(ValueError) as info:
        dequantize(np.zeros(66, np.uint8), T.IQ2_XXS, (256,))
    assert str(info.value) == (
        "ggml type IQ2_XXS is not supported; supported: F32, F16, BF16, Q4_0, Q4_1, Q5_0, "
        "Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS"
    )
    with pytest.raises(ValueError, match=r"^unknown ggml type 99; supported: F32, "):
        block_geometry(99)


@pytest.mark.real_model
def test_demo_model_tensors_match_gguf() -> None:
    from exactserve.runtime.assets import demo_model_path
    from exactserve.runtime.gguf_file import open_gguf

    seen: set[T] = set()
    with open_gguf(demo_model_path()) as model:
        for info in model.tensors.values():
            if info.ggml_type in seen or info.n_elements > 1 << 21:
                continue
            seen.add(info.ggml_type)
            raw = model.raw(info.name)
            rows = info.n_elements // info.shape[0]
            expected = gguf.quants.dequantize(raw.reshape(rows, -1), info.ggml_type)
            actual = dequantize(raw, info.ggml_type, info.shape)
            assert actual.shape == tuple(reversed(info.shape))
            np.testing.assert_array_equal(as_bits(actual.reshape(rows, -1)), as_bits(expected))
            if info.ggml_type in QUANT_UNITS:
                form = to_integer_form(raw, info.ggml_type, rows, info.shape[0])
                np.testing.assert_array_equal(as_bits(form.to_float32()), as_bits(expected))
    assert seen == {T.F32, T.Q8_0, T.Q5_0, T.Q4_K, T.Q6_K}
