"""The weight cache (runtime/model/weight_cache.py): a second load maps what the first
converted, with the same bits; a changed file, a damaged cache or an unusable folder never
gives stale or broken weights; it can be switched off."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from gguf import GGMLQuantizationType as T

from exactserve.runtime.model import load_model
from exactserve.runtime.model.weight_cache import CACHE_ENV, file_sha256
from exactserve.runtime.tiny_model import tiny_spec, write_tiny_model

pytestmark = pytest.mark.llama_cpp_data
TOKENS = [1, 5, 9, 30, 2, 7]


@pytest.fixture
def cache_root(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "weights"))
    return tmp_path / "weights"


def logits(model) -> bytes:
    with model.new_cache() as cache:
        return model.logits_all(cache, TOKENS).tobytes()


def load(path, messages: list[str] | None = None, **options):
    progress = messages.append if messages is not None else None
    return load_model(path, progress=progress, **options)


def test_the_second_load_maps_the_first_ones_conversion(tiny_model, cache_root):
    path = tiny_model("gemma3", T.Q4_K)
    first_messages, second_messages = [], []
    first = load(path, first_messages)
    if first.ops.kernel is None:
        pytest.skip("no compiled CPU matmul runs here: nothing is cached")
    assert any(m.startswith("saved the converted tensors") for m in first_messages)
    assert len(list(cache_root.glob("*.bin"))) == 1
    second = load(path, second_messages)
    assert any(m.startswith("mapping ") for m in second_messages)
    assert not any(m.startswith("converting") for m in second_messages)
    output = second.weights.output
    assert isinstance(output.w, np.memmap) and not output.w.flags.writeable
    reference = load(path, cpu_matmul="numpy")
    assert logits(first) == logits(second) == logits(reference)


def test_a_changed_model_file_is_never_served_from_the_old_conversion(
    tiny_model, cache_root, tmp_path
):
    path = tmp_path / "model.gguf"
    shutil.copy(tiny_model("qwen3", T.Q6_K), path)
    before = load(path)
    if before.ops.kernel is None:
        pytest.skip("no compiled CPU matmul runs here: nothing is cached")
    old_sha = file_sha256(path, cache_root)
    other = write_tiny_model(tmp_path / "other.gguf", tiny_spec("qwen3", T.Q6_K, seed=7))
    shutil.copy(other, path)  # same name, same shapes, other weights
    assert file_sha256(path, cache_root) != old_sha
    after = load(path)
    assert logits(after) == logits(load(path, cpu_matmul="numpy")) != logits(before)
    assert len(list(cache_root.glob("*.bin"))) == 2


def test_a_damaged_cache_is_rebuilt(tiny_model, cache_root):
    path = tiny_model("llama", T.Q8_0)
    model = load(path)
    if model.ops.kernel is None:
        pytest.skip("no compiled CPU matmul runs here: nothing is cached")
    want = logits(model)
    (data,) = cache_root.glob("*.bin")
    data.write_bytes(data.read_bytes()[:1000])  # truncated
    messages = []
    assert logits(load(path, messages)) == want
    assert any(m.startswith("converting") for m in messages)
    (meta,) = [p for p in cache_root.glob("*.json") if p.name != "hashes.json"]
    meta.write_text("{not json")
    assert logits(load(path)) == want
    assert json.loads(meta.read_text())["size"] == data.stat().st_size  # rewritten whole


def test_switched_off_or_unwritable_the_cache_stays_out_of_the_way(
    tiny_model, cache_root, monkeypatch, tmp_path
):
    path = tiny_model("qwen2", T.Q8_0)
    monkeypatch.setenv(CACHE_ENV, "0")
    messages = []
    want = logits(load(path, messages))
    assert not cache_root.exists()
    assert not any("saved" in m for m in messages)
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder would go")
    monkeypatch.setenv(CACHE_ENV, str(blocker))
    assert logits(load(path)) == want
    assert blocker.read_text() == "a file where the cache folder would go"


def test_the_numpy_matmul_caches_nothing(tiny_model, cache_root):
    load(tiny_model("qwen2", T.Q8_0), cpu_matmul="numpy")
    assert not cache_root.exists()
