"""The model graph on tiny generated models of every architecture: agreement with an
independent float64 implementation written here from llama.cpp's graphs, batch and cache
behaviour, and errors a caller can cause. (The float64 model decodes weights with
reference.quants.dequantize, which tests/reference/test_dequant.py checks against gguf-py;
the forward pass uses the integer form and the contract's arithmetic instead.)"""

from __future__ import annotations

import numpy as np
import pytest
from gguf import GGMLQuantizationType as T

from exactserve.reference.quants import dequantize
from exactserve.runtime.config import from_gguf
from exactserve.runtime.gguf_file import open_gguf
from exactserve.runtime.model import SequenceInput, load_model

pytestmark = pytest.mark.llama_cpp_data


class Float64Model:
    """The four architectures in float64 with exact softmax/exp/tanh (numpy float64)."""

    def __init__(self, path) -> None:
        with open_gguf(path) as f:
            self.c = from_gguf(f)
            self.w = {
                name: dequantize(f.raw(name), info.ggml_type, info.shape).astype(np.float64)
                for name, info in f.tensors.items()
            }

    def norm(self, x, name):
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + self.c.norm_eps) * self.w[name]

    def rope(self, x, pos, local):
        c = self.c
        n_rot = c.rope.dimension_count
        base = c.rope.freq_base_swa if local else c.rope.freq_base
        omega = base ** (-np.arange(0, n_rot, 2) / n_rot)
        mscale = 1.0
        if not local and c.rope.scaling_type == "yarn":  # llama.cpp rope_yarn, ext_factor 1
            s, n_orig = c.rope.freq_scale, c.rope.original_context_length

            def corr(beta):
                return n_rot * np.log(n_orig / (beta * 2 * np.pi)) / (2 * np.log(base))

            low = max(0.0, np.floor(corr(c.rope.yarn.beta_fast)))
            high = min(n_rot - 1.0, np.ceil(corr(c.rope.yarn.beta_slow)))
            ramp = 1 - np.clip((np.arange(n_rot // 2) - low) / max(0.001, high - low), 0, 1)
            omega = omega * (s * (1 - ramp) + ramp)
            mscale = 1 + 0.1 * np.log(1 / s)
        elif not local:
            omega = omega * c.rope.freq_scale
            if "rope_freqs.weight" in self.w:
                omega = omega / self.w["rope_freqs.weight"]
        ang = pos[:, None, None] * omega
        cos, sin = np.cos(ang) * mscale, np.sin(ang) * mscale
        half = n_rot // 2
        if c.rope.layout.value == "neox":
            i0, i1 = np.arange(half), np.arange(half, n_rot)
        else:
            i0, i1 = np.arange(0, n_rot, 2), np.arange(1, n_rot, 2)
        y = x.copy()
        y[..., i0] = x[..., i0] * cos - x[..., i1] * sin
        y[..., i1] = x[..., i0] * sin + x[..., i1] * cos
        return y

    def logits(self, tokens):
        c, w = self.c, self.w
        n = len(tokens)
        pos = np.arange(n, dtype=np.float64)
        x = w["token_embd.weight"][tokens] * (c.embedding_scale or 1.0)
        for i in range(c.n_layers):
            b = f"blk.{i}."
            h = self.norm(x, b + "attn_norm.weight")
            proj = {}
            for p, heads, dim in (
                ("q", c.n_heads, c.head_dim),
                ("k", c.n_kv_heads, c.head_dim),
                ("v", c.n_kv_heads, c.head_dim_v),
            ):
                y = h @ w[b + f"attn_{p}.weight"].T + w.get(b + f"attn_{p}.bias", 0.0)
                proj[p] = y.reshape(n, heads, dim)
            q, k, v = proj["q"], proj["k"], proj["v"]
            if c.has_qk_norm:
                q, k = (
                    self.norm(q, b + "attn_q_norm.weight"),
                    self.norm(k, b + "attn_k_norm.weight"),
                )
            local = c.swa_layers[i]
            q, k = self.rope(q, pos, local) * c.attention_scale, self.rope(k, pos, local)
            group = c.n_heads // c.n_kv_heads
            scores = np.einsum("qhd,khd->hqk", q, np.repeat(k, group, axis=1))
            mask = np.tril(np.ones((n, n), bool))
            if local and c.sliding_window:
                mask &= (pos[:, None] - pos[None, :]) < c.sliding_window
            scores = np.where(mask, scores, -np.inf)
            p = np.exp(scores - scores.max(-1, keepdims=True))
            p /= p.sum(-1, keepdims=True)
            o = np.einsum("hqk,khd->qhd", p, np.repeat(v, group, axis=1)).reshape(n, -1)
            o = o @ w[b + "attn_output.weight"].T
            if c.has_post_norms:
                o = self.norm(o, b + "post_attention_norm.weight")
            x = x + o
            h = self.norm(x, b + "ffn_norm.weight")
            g, u = h @ w[b + "ffn_gate.weight"].T, h @ w[b + "ffn_up.weight"].T
            if c.traits.activation == "silu":
                a = g / (1 + np.exp(-g)) * u
            else:
                a = 0.5 * g * (1 + np.tanh(np.sqrt(2 / np.pi) * (g + 0.044715 * g**3))) * u
            d = a @ w[b + "ffn_down.weight"].T
            if c.has_post_norms:
                d = self.norm(d, b + "post_ffw_norm.weight")
            x = x + d
        out = w.get("output.weight", w["token_embd.weight"])
        return self.norm(x, "output_norm.weight") @ out.T


CASES = [
    ("llama", T.Q4_K, {}),
    ("llama", T.Q8_0, {"rope_freqs": True}),
    ("llama", T.F16, {}),
    ("qwen2", T.Q5_1, {}),
    ("qwen3", T.Q4_0, {"overrides": {"ffn_down.weight": T.Q6_K}}),
    ("qwen3", T.IQ4_NL, {}),
    ("gemma3", T.Q5_0, {"overrides": {"attn_output.weight": T.Q4_K}}),
    ("gemma3", T.BF16, {}),
    ("gemma3", T.Q3_K, {}),
    ("llama", T.Q2_K, {}),
    ("qwen2", T.Q5_K, {}),
    ("llama", T.IQ4_XS, {}),
    (
        "qwen2",
        T.Q8_0,
        {
            "extra_metadata": {
                "qwen2.rope.scaling.type": "yarn",
                "qwen2.rope.scaling.factor": 4.0,
                "qwen2.rope.scaling.original_context_length": 128,
            }
        },
    ),
    ("qwen3", T.Q8_0, {"extra_metadata": {"qwen3.rope.scaling.factor": 2.0}}),
]


@pytest.mark.parametrize("arch, qtype, options", CASES, ids=lambda v: getattr(v, "name", v))
def test_logits_close_to_float64_implementation(tiny_model, arch, qtype, options):
    path = tiny_model(arch, qtype, vocab="llama-spm", **options)
    model = load_model(path)
    tokens = np.random.default_rng(5).integers(0, model.config.n_vocab, 24)
    ours = model.logits_all(model.new_cache(), tokens).astype(np.float64)
    want = Float64Model(path).logits(tokens)
    scale = np.abs(want).max()
    # 12-bit activations and fp32 arithmetic: errors around 1e-3 of the logit scale; a wiring
    # mistake (norm, rope pairs, head mapping, window) moves logits by tens of percent.
    assert np.abs(ours - want).max() < 0.01 * scale
    assert (ours.argmax(-1) == want.argmax(-1)).mean() > 0.9


def test_gemma_window_and_local_rope_matter(tiny_model):
    """The tiny gemma3 has window 8 on layer 0: the float64 model must agree only when it
    applies the window (a guard that the test above really exercises it)."""
    path = tiny_model("gemma3", T.Q8_0, vocab="llama-spm")
    model = load_model(path)
    tokens = np.random.default_rng(6).integers(0, model.config.n_vocab, 40)
    ours = model.logits_all(model.new_cache(), tokens).astype(np.float64)
    f64 = Float64Model(path)
    want = f64.logits(tokens)
    f64.c = type(f64.c)(**{**f64.c.__dict__, "sliding_window": None})
    unwindowed = f64.logits(tokens)
    assert np.abs(ours - want).max() < 0.3 * np.abs(ours - unwindowed).max()


@pytest.fixture(scope="module")
def qwen3(tmp_path_factory):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from exactserve.runtime.tiny_model import tiny_spec, write_tiny_model

    spec = tiny_spec("qwen3", T.Q8_0, vocab="llama-spm")
    return load_model(write_tiny_model(tmp_path_factory.mktemp("m") / spec.file_name, spec))


def test_forward_returns_last_logits_and_grows_the_cache(qwen3):
    tokens = [5, 6, 7, 8]
    cache = qwen3.new_cache()
    last = qwen3.forward(cache, tokens)
    assert cache.length == 4 and list(cache.tokens) == tokens
    every = qwen3.logits_all(qwen3.new_cache(), tokens)
    assert last.shape == (qwen3.config.n_vocab,) and np.array_equal(last, every[-1])


def test_thread_count_does_not_change_bits(qwen3):
    tokens = np.random.default_rng(7).integers(0, qwen3.config.n_vocab, 70)
    want = qwen3.logits_all(qwen3.new_cache(), tokens)
    from exactserve.runtime.model import Model

    threaded = Model(qwen3.config, qwen3.weights, threads=3)
    assert np.array_equal(threaded.logits_all(threaded.new_cache(), tokens), want)


def test_batch_results_follow_batch_order_and_logit_modes(qwen3):
    a, b, c = qwen3.new_cache(), qwen3.new_cache(), qwen3.new_cache()
    out = qwen3.forward_batch(
        [
            SequenceInput(a, [1, 2, 3], "all"),
            SequenceInput(b, [4], "none"),
            SequenceInput(c, [9, 9]),
        ]
    )
    assert [o.shape[0] for o in out] == [3, 0, 1]
    assert np.array_equal(out[2][0], qwen3.forward(qwen3.new_cache(), [9, 9]))
    assert (a.length, b.length, c.length) == (3, 1, 2)


def test_batch_errors(qwen3):
    cache = qwen3.new_cache()
    with pytest.raises(ValueError, match="appears twice"):
        qwen3.forward_batch([SequenceInput(cache, [1]), SequenceInput(cache, [2])])
    with pytest.raises(ValueError, match=r"token ids must lie in \[0, 32000\)"):
        qwen3.forward(cache, [32000])
    with pytest.raises(ValueError, match="no new tokens"):
        qwen3.forward(cache, [])
    with pytest.raises(ValueError, match="exceed the model's context length 512"):
        qwen3.forward(cache, [1] * 513)
    from exactserve.runtime.model import Model

    other = Model(qwen3.config, qwen3.weights)
    with pytest.raises(ValueError, match="belongs to another model; make it with this model's"):
        other.forward(cache, [1])
    assert cache.length == 0  # failed calls leave the cache untouched


def test_cache_copy_and_truncate_validate(qwen3):
    cache = qwen3.new_cache()
    qwen3.forward(cache, [1, 2, 3])
    with pytest.raises(ValueError, match="cannot truncate a cache of length 3 to 4"):
        cache.truncate(4)
    with pytest.raises(ValueError, match="cannot copy 5 positions"):
        cache.copy(5)
    twin = cache.copy()
    qwen3.forward(twin, [4])
    assert cache.length == 3 and twin.length == 4
