"""Make a served model write a chosen continuation, to test what the server does with
output (tool-call parsing, stop reasons) independently of a random tiny model's taste.

`scripted(engine, token_ids)` wraps the model's `forward_batch`: wherever a sequence's
tokens end with a prefix of the script, the logits of its next position favour the
script's next token (by a margin no sampler setting overrides). Everything else, and the
real forward pass itself, is untouched.
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np


def _next_scripted(tokens: np.ndarray, script: list[int]) -> int | None:
    for j in range(len(script), 0, -1):
        if len(tokens) >= j and list(tokens[-j:]) == script[:j]:
            return script[j] if j < len(script) else None
    return script[0]


@contextmanager
def scripted(engine, script: list[int]):
    model = engine.model
    real = model.forward_batch

    def forward_batch(batch):
        results = real(batch)
        for item, logits in zip(batch, results, strict=True):
            if item.logits == "none":
                continue
            target = _next_scripted(item.cache.tokens[: item.cache.length], script)
            if target is not None:
                logits[-1, :] = -30.0
                logits[-1, target] = 30.0
        return results

    model.forward_batch = forward_batch
    try:
        yield
    finally:
        del model.forward_batch
