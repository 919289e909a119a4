"""Whole-model logits: the Triton backend against the reference, bit for bit, on tiny
generated models of every architecture (prefill, chunked prefill, decode, a batch of two).

The model is loaded with `backend="triton"`: runtime.model prepares its weights and runs its
graph through `runtime.backend.TritonOps`, exactly as EXACTSERVE_BACKEND=triton does.
"""

from __future__ import annotations

import numpy as np
import pytest
from gguf import GGMLQuantizationType as T

from exactserve.runtime.model import SequenceInput, load_model
from exactserve.runtime.tiny_model import tiny_spec, write_tiny_model

pytestmark = pytest.mark.llama_cpp_data

# name: (architecture, layer type, options). 32000-token vocabulary for all: the
# interpreter's time goes into the output matrix.
MODELS = {
    "llama-Q4_K": ("llama", T.Q4_K, {}),
    "llama-F16": ("llama", T.F16, {"rope_freqs": True}),
    "qwen2-Q8_0": ("qwen2", T.Q8_0, {}),
    "qwen3-Q5_0": ("qwen3", T.Q5_0, {"overrides": {"ffn_down.weight": T.Q6_K}}),
    "gemma3-IQ4_NL": ("gemma3", T.IQ4_NL, {"overrides": {"attn_output.weight": T.Q4_1}}),
}
N_TOKENS = 68  # crosses a 64-key chunk


def bits(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)


@pytest.fixture(scope="module")
def model_paths(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("backend_models")
    paths = {}
    for name, (arch, qtype, options) in MODELS.items():
        spec = tiny_spec(arch, qtype, vocab="llama-spm", **options)
        paths[name] = write_tiny_model(root / spec.file_name, spec)
    return paths


@pytest.mark.parametrize("name", list(MODELS))
def test_triton_logits_equal_reference(model_paths, name) -> None:
    reference = load_model(model_paths[name], backend="reference")
    tokens = np.random.default_rng(len(name)).integers(0, reference.config.n_vocab, N_TOKENS)
    other = tokens[::-1][:9].copy()
    want = bits(reference.logits_all(reference.new_cache(), tokens))
    want_other = bits(reference.forward(reference.new_cache(), other))

    model = load_model(model_paths[name], backend="triton")
    assert model.ops.name == "triton"
    assert type(model.weights.layers[0].wq).__name__ == "WeightMatrix"
    cache, theirs = model.new_cache(), model.new_cache()
    prefill = bits(model.forward(cache, tokens[:62]))  # prefill (last logits)
    np.testing.assert_array_equal(prefill, want[61])
    chunk = bits(model.logits_all(cache, tokens[62:66]))  # chunked prefill across position 64
    np.testing.assert_array_equal(chunk, want[62:66])
    decode = bits(model.forward(cache, tokens[66:67]))  # decode
    np.testing.assert_array_equal(decode, want[66])
    batch = model.forward_batch(  # a batch of two: a prefill and a decode step
        [SequenceInput(theirs, other, "last"), SequenceInput(cache, tokens[67:68], "last")]
    )
    np.testing.assert_array_equal(bits(batch[0][0]), want_other)
    np.testing.assert_array_equal(bits(batch[1][0]), want[67])


@pytest.mark.real_model
def test_demo_model_prefill_and_a_decode_step_equal_reference() -> None:
    """The real Gemma 3 270M Q4_K_M file in CI: a 5-token prompt and one decode step give
    the reference's logits bit for bit on the Triton backend (real Q8_0, Q5_0, Q4_K, Q6_K
    blocks, a 262144-token vocabulary, sliding-window layers, the paged cache across two
    calls). About 3 minutes under the interpreter; the 16-token test below is the long form."""
    from exactserve.runtime.assets import demo_model_path

    path = demo_model_path()
    prompt = [2, 818, 5279, 529, 7001]  # <bos>The capital of France
    reference = load_model(path, backend="reference")
    cache = reference.new_cache()
    logits = reference.forward(cache, prompt)
    step = int(np.argmax(logits))  # the greedy next token
    want = [bits(logits), bits(reference.forward(cache, [step]))]

    model = load_model(path, backend="triton")
    cache = model.new_cache()
    np.testing.assert_array_equal(bits(model.forward(cache, prompt)), want[0])
    np.testing.assert_array_equal(bits(model.forward(cache, [step])), want[1])


@pytest.mark.real_model
@pytest.mark.slow
def test_demo_model_greedy_tokens_and_logits_equal_reference() -> None:
    """The real Gemma 3 270M Q4_K_M file: the first 16 greedy tokens and every step's logits
    are bit-identical between the backends (greedy choice on the Triton side by
    kernels.logits.argmax). About 22 minutes under the interpreter on one CPU core (the
    262144 x 640 output matrix dominates); seconds on a GPU."""
    from kernel_cases import dev

    from exactserve.kernels.logits import argmax
    from exactserve.runtime.assets import demo_model_path
    from exactserve.runtime.tokenizer import Tokenizer

    path = demo_model_path()
    prompt = Tokenizer.from_gguf(path).encode("The capital of France is", add_special=True)
    n_new = 16

    reference = load_model(path, backend="reference")
    cache, ids, want = reference.new_cache(), list(prompt), []
    logits = reference.forward(cache, ids)
    for step in range(n_new):
        want.append(bits(logits))
        ids.append(int(np.argmax(logits)))  # the lowest id among the largest logits
        if step + 1 < n_new:
            logits = reference.forward(cache, ids[-1:])

    model = load_model(path, backend="triton")
    cache, tokens = model.new_cache(), list(prompt)
    logits = model.forward(cache, tokens)
    for step in range(n_new):
        np.testing.assert_array_equal(bits(logits), want[step], err_msg=f"step {step}")
        tokens.append(int(argmax(dev(logits[None, :]))[0]))
        if step + 1 < n_new:
            logits = model.forward(cache, tokens[-1:])
    assert tokens == ids[: len(tokens)]


def test_activations_stay_on_the_device(model_paths, monkeypatch) -> None:
    """A forward pass on the Triton backend brings one array back to the host: the logits.
    Everything between ops (activations, K/V, the paged cache) stays a device tensor."""
    import torch

    model = load_model(model_paths["gemma3-IQ4_NL"], backend="triton")
    cache = model.new_cache()
    model.forward(cache, [1, 2, 3])
    to_host = []
    numpy = torch.Tensor.numpy

    def counting(tensor, *args, **kwargs):
        to_host.append(tuple(tensor.shape))
        return numpy(tensor, *args, **kwargs)

    monkeypatch.setattr(torch.Tensor, "numpy", counting)
    logits = model.logits_all(cache, [4, 5])
    assert to_host == [logits.shape]
    assert all(isinstance(a, torch.Tensor) for a in model.kv_pool.storage.layer(0))
