"""Token embedding lookup of the contract (docs/PRECISION.md, 6.3).

A row of a quantised table is its dequantised weights, fl(fl(scale * q) + offset) per
element (the product is exact; ggml's own dequantisation gives the same bits); a float
table's row is its stored values widened to float32 (exact). An optional embedding scale
(Gemma: float32 sqrt(n_embd)) multiplies each element once.
"""

from __future__ import annotations

import numpy as np

from exactserve.reference.fp import F32
from exactserve.reference.matmul import PreparedMatrix
from exactserve.reference.quants import IntegerWeights


def embedding_rows_prepared(table: PreparedMatrix, ids: np.ndarray) -> np.ndarray:
    """Rows `ids` of a quantised table held as a PreparedMatrix [n_vocab, n_embd] (float32
    integer-valued q): float32 [len(ids), n_embd]."""
    if table.q.dtype != F32:
        raise ValueError("embedding_rows_prepared needs a quantised table (float32 q)")
    ids = np.asarray(ids, dtype=np.int64)
    q = table.q[:, :, ids].transpose(2, 0, 1)  # [T, n_groups, group]
    rows = q * table.scale[:, ids].T[:, :, None]  # exact
    if table.offset is not None:
        rows = rows + table.offset[:, ids].T[:, :, None]  # one rounding
    return rows.reshape(len(ids), table.n_in)


def embedding_rows_integer(table: IntegerWeights, ids: np.ndarray) -> np.ndarray:
    """Rows `ids` of a quantised table kept in its compact integer form (int8 q): the same
    bits as `embedding_rows_prepared`, without a float32 copy of the table."""
    ids = np.asarray(ids, dtype=np.int64)
    offset = None if table.offset is None else table.offset[ids]
    return IntegerWeights(table.q[ids], table.scale[ids], offset, table.group).to_float32()


def scale_embeddings(rows: np.ndarray, scale: float | None) -> np.ndarray:
    """Contract 6.3: one fp32 multiply by the embedding scale, if the model has one."""
    rows = np.asarray(rows, dtype=F32)
    return rows if scale is None else rows * F32(scale)
