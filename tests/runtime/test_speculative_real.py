"""Speculative decoding on the real demo model: prompt lookup on a repetitive prompt (code
editing) accepts guesses, and the tokens and the logits behind each are plain decoding's,
bit for bit, greedy and seeded."""

from __future__ import annotations

import numpy as np
import pytest

from exactserve.reference.sampling import SamplingParams
from exactserve.runtime.assets import demo_model_path
from exactserve.runtime.generate import Generation, GenerationConfig
from exactserve.runtime.model import load_model
from exactserve.runtime.speculative import SpeculativeConfig
from exactserve.runtime.tokenizer import Tokenizer

pytestmark = pytest.mark.real_model

CODE = (
    "def area(width, height):\n    return width * height\n\n"
    "def area(width, height):\n    return width * height\n\n"
    "def perimeter(width, height):\n    return 2 * (width + height)\n\n"
    "def area(width, height):\n"
)


@pytest.mark.parametrize(
    "sampling",
    [SamplingParams(temperature=0), SamplingParams(temperature=0.6, top_k=20, seed=11)],
    ids=["greedy", "seeded"],
)
def test_demo_model_prompt_lookup_changes_no_bit(sampling):
    path = demo_model_path()
    model, tokenizer = load_model(path), Tokenizer.from_gguf(path)
    prompt = tokenizer.encode(CODE, add_special=True)
    runs = []
    for speculative in (None, SpeculativeConfig("ngram", 4)):
        config = GenerationConfig(max_tokens=16, sampling=sampling, speculative=speculative)
        generation = Generation(model, tokenizer, prompt, config)
        rows: list[np.ndarray] = []
        generation.logits_observer = lambda logits, rows=rows: rows.append(
            logits.view(np.uint32).copy()
        )
        text = "".join(d.text for d in generation)
        runs.append((generation, text, rows))
    (plain, plain_text, plain_rows), (fast, fast_text, fast_rows) = runs
    assert fast.token_ids == plain.token_ids and fast_text == plain_text
    assert len(fast_rows) == len(plain_rows)
    assert all(np.array_equal(a, b) for a, b in zip(plain_rows, fast_rows, strict=True))
    assert fast.stats.num_accepted_draft_tokens > 0
    assert fast.stats.num_decode_passes < plain.stats.num_decode_passes
