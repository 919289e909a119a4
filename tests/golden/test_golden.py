"""Pinned bits: the logits digests of tests/golden/digests.json (prefill and decode steps
of fixed prompts) on both backends. Our backends agreeing with each other on one machine
does not show that the bits are the same on another machine or after a refactor; these do.
A change that moves any bit must regenerate the file (tests/golden/make_digests.py) in the
same commit and say why in its message."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from make_digests import TINY, digest_of, tiny_path

from exactserve.runtime.assets import demo_model_path

PINNED = json.loads((Path(__file__).resolve().parent / "digests.json").read_text())


# The Triton interpreter's cost grows with the vocabulary times n_embd (qwen3-Q4_K takes
# about 100 s on two cores): the two 32,000-token models on Triton keep CI's budget (the
# kernels' K-quant paths are covered op by op in tests/kernels); all four on the reference.
CASES = [(a, q, "reference") for a, q in TINY] + [
    (a, q, "triton") for a, q in TINY if a in ("llama", "gemma3")
]


@pytest.mark.llama_cpp_data
@pytest.mark.parametrize(
    "arch, qtype, backend", CASES, ids=[f"{a}-{q.name}-{b}" for a, q, b in CASES]
)
def test_tiny_model_logits_are_the_pinned_bits(arch, qtype, backend, tmp_path_factory):
    path = tiny_path(arch, qtype, tmp_path_factory.mktemp("golden"))
    got = digest_of(path, backend)
    pinned = PINNED[f"tiny-{arch}-{qtype.name}"]
    assert got["model_sha256"] == pinned["model_sha256"], "the tiny model's bytes changed"
    assert got["per_prompt"] == pinned["per_prompt"]
    assert got["digest"] == pinned["digest"]


@pytest.mark.real_model
def test_demo_model_logits_are_the_pinned_bits():
    got = digest_of(demo_model_path(), "reference")
    assert got == PINNED["demo"]


def test_the_pinned_file_says_what_it_pins():
    from exactserve.reference import CONTRACT_VERSION

    assert {"demo", *(f"tiny-{a}-{q.name}" for a, q in TINY)} == set(PINNED)
    for entry in PINNED.values():
        assert entry["contract"] == CONTRACT_VERSION
        assert len(entry["digest"]) == 64 and entry["decode_steps"] == 3
