"""kernels.quants against reference.quants: integer form and dequantisation, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from gguf import GGMLQuantizationType as T
from kernel_cases import (
    FLOAT_TYPES,
    QUANT_TYPES,
    assert_same_bits,
    dev,
    host,
    random_blocks,
    random_float_bytes,
)

import exactserve.reference.quants as rq
from exactserve.kernels.quants import (
    OFFSET_TYPES,
    dequantize,
    dequantize_rows,
    quant_layout,
    to_integer_form,
    weight_matrix,
)

SHAPES = [(1, 1), (17, 2)]  # (rows, blocks per row); 17 rows: one more than a row tile


@pytest.mark.parametrize("rows,blocks_per_row", SHAPES)
@pytest.mark.parametrize("qtype", QUANT_TYPES, ids=lambda t: t.name)
def test_integer_form_matches_reference(qtype: T, rows: int, blocks_per_row: int) -> None:
    layout = quant_layout(qtype)
    cols = blocks_per_row * layout.block_size
    raw = random_blocks(qtype, rows * blocks_per_row, seed=rows * 31 + blocks_per_row)
    expected = rq.to_integer_form(raw.reshape(-1), qtype, rows, cols)
    actual = to_integer_form(weight_matrix(raw, qtype, rows, cols))
    assert actual.group == expected.group
    np.testing.assert_array_equal(host(actual.q), expected.q)
    assert_same_bits(actual.scale, expected.scale)
    assert (actual.offset is None) == (expected.offset is None) == (qtype not in OFFSET_TYPES)
    if expected.offset is not None:
        assert_same_bits(actual.offset, expected.offset)


@pytest.mark.parametrize("qtype", QUANT_TYPES, ids=lambda t: t.name)
def test_dequantize_matches_reference(qtype: T) -> None:
    layout = quant_layout(qtype)
    rows, cols = 3, 2 * layout.block_size
    raw = random_blocks(qtype, rows * 2, seed=int(qtype))
    expected = rq.dequantize(raw.reshape(-1), qtype, (cols, rows))
    assert_same_bits(dequantize(weight_matrix(raw, qtype, rows, cols)), expected)


@pytest.mark.parametrize("qtype", FLOAT_TYPES, ids=lambda t: t.name)
def test_float_types_match_reference(qtype: T) -> None:
    rows, cols = 3, 160  # 160 = 128 + 32: a partial column tile
    raw = random_float_bytes(qtype, rows * cols, seed=int(qtype) + 5)
    expected = rq.dequantize(raw, qtype, (cols, rows))
    assert_same_bits(dequantize(weight_matrix(raw, qtype, rows, cols)), expected)


@pytest.mark.parametrize("qtype", [T.Q4_K, T.Q8_0, T.F16], ids=lambda t: t.name)
def test_rows_by_id_with_scale(qtype: T) -> None:
    rows, cols = 5, 256
    if qtype == T.F16:
        raw = random_float_bytes(qtype, rows * cols, seed=3)
    else:
        layout = quant_layout(qtype)
        raw = random_blocks(qtype, rows * cols // layout.block_size, seed=4, wide=False)
    ids = np.array([4, 0, 4, 2])
    scale = np.float32(np.sqrt(np.float32(640.0)))
    table = rq.dequantize(raw.reshape(-1), qtype, (cols, rows))
    expected = table[ids] * scale
    actual = dequantize_rows(weight_matrix(raw, qtype, rows, cols), dev(ids), scale)
    assert_same_bits(actual, expected)


def test_weight_matrix_rejects_wrong_size() -> None:
    raw = np.zeros(33, dtype=np.uint8)
    with pytest.raises(ValueError, match=r"Q8_0 matrix \[1, 32\] needs 34 uint8 bytes, got 33"):
        weight_matrix(raw, T.Q8_0, 1, 32)
