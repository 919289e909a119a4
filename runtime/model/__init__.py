"""The model graph on either backend: weights, paged KV cache, forward pass.

Interface (everything a caller needs):

    from exactserve.runtime.model import load_model, SequenceInput

    model = load_model("model.gguf")          # Model: config, converted weights, KV pool
    cache = model.new_cache()                  # SequenceCache: one sequence's KV blocks
    logits = model.forward(cache, prompt_ids)  # float32 [n_vocab], logits of the last token
    logits = model.forward(cache, [next_id])   # decode: the cache grew by len(prompt_ids)

    # Several sequences in one pass; each item's tokens take positions cache.length, ...
    out = model.forward_batch([
        SequenceInput(cache_a, tokens_a, logits="all"),   # -> float32 [len(tokens_a), n_vocab]
        SequenceInput(cache_b, tokens_b, logits="last"),  # -> float32 [1, n_vocab]
    ])

    cache.truncate(n)   # drop positions >= n (rejected speculative tokens)
    cache.copy(n)       # a cache sharing the first n positions' blocks (prefix reuse)
    cache.release()     # hand its blocks back (also on garbage collection, `with cache:`)

The KV cache is paged (runtime.model.cache): every cache of a model lives in the model's
pool of fixed-size blocks (`Model(..., kv_block_size=16, kv_blocks=None)`; None grows the
pool on demand, an int fixes it and a full pool raises `KVCacheFullError`). With
`prefix_cache_blocks=N` released caches leave their full blocks behind for reuse:
`model.new_cache(prompt)` then starts with the longest cached prefix of `prompt`
(`cache.length` positions), and the caller computes `prompt[cache.length:]`.

Every logit is bit-identical whatever else is in the batch, however the prompt was split
into calls, and whether its keys were computed in this call or earlier (docs/PRECISION.md,
section 9). Errors in the model file raise `runtime.errors.GGUFError` /
`UnsupportedError`; misuse of the batch raises ValueError.
"""

from __future__ import annotations

from exactserve.runtime.model.cache import KVCacheFullError, SequenceCache
from exactserve.runtime.model.graph import SequenceInput
from exactserve.runtime.model.model import Model, load_model

__all__ = ["KVCacheFullError", "Model", "SequenceCache", "SequenceInput", "load_model"]
