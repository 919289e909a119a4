"""Token embedding lookup of the contract (docs/PRECISION.md, 6.3), twin of
`reference.embedding` (rows, then `scale_embeddings`): rows of the table dequantised in the
kernel as ggml rounds them, fl(fl(scale * q) + offset), or widened float values; then one
fp32 multiply by the embedding scale (Gemma: fl32(sqrt(n_embd))) if the model has one.
"""

from __future__ import annotations

import torch

from exactserve.kernels.quants import WeightMatrix, dequantize_rows


def embedding_rows(
    table: WeightMatrix, ids: torch.Tensor, scale: float | None = None
) -> torch.Tensor:
    """float32 [len(ids), n_embd]: rows `ids` of `table` [n_vocab, n_embd], times `scale`
    (rounded to float32) if given."""
    ids = torch.as_tensor(ids, dtype=torch.int64)
    if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= table.n_rows):
        raise ValueError(f"embedding: token ids must lie in [0, {table.n_rows})")
    return dequantize_rows(table, ids.reshape(-1), scale)
