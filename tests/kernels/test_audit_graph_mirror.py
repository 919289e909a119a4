"""The PTX audit's copy of the model graph (`kernels.audit_launches.graph_step`, which may not
import the runtime) must not drift from the real one: a real forward pass of a tiny model on
the Triton backend, recorded launch by launch (kernels replaced by recorders, nothing
compiled or run), may only launch kernel specialisations the mirror also launches for the
same shape. Runs in a subprocess with TRITON_INTERPRET=0, since recorders replace compiled
JITFunctions; tensors stay on the CPU."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from gguf import GGMLQuantizationType as T

pytestmark = pytest.mark.llama_cpp_data

ROOT = Path(__file__).resolve().parents[2]

PROBE = r"""
import importlib, pkgutil, sys
import torch
import exactserve.kernels as kernels
import exactserve.kernels.device as device
device.default_device = lambda: torch.device("cpu")  # no CUDA: launches are only recorded
from gguf import GGMLQuantizationType as T
from exactserve.kernels import audit_launches as al
from exactserve.kernels.audit import specialise
from exactserve.runtime.model import SequenceInput, load_model

path, arch = sys.argv[1], sys.argv[2]
modules = [
    importlib.import_module(f"{package.__name__}.{m.name}")
    for package in (kernels, importlib.import_module("exactserve.kernels.quants"))
    for m in pkgutil.iter_modules(package.__path__)
    if m.name not in ("audit", "audit_launches")
]
model = load_model(path, backend="triton")
c = model.config
shape = al.GraphShape(
    arch, c.n_embd, c.n_heads, c.n_kv_heads, c.head_dim, c.n_ff, c.n_vocab,
    {r: T.Q8_0 for r in ("q", "k", "v", "o", "gate", "up", "down", "output")},
    activation=c.traits.activation, layout=c.rope.layout.value,
    qk_norm=arch == "gemma3", has_bias=arch == "qwen2",
    window=c.sliding_window if any(c.swa_layers) else None,
)
weights = al._weights(shape)
cache = model.new_cache()
for n_rows in (9, 1):  # a prefill chunk, then a decode step (cache of 9: one-block table)
    with al.recording(modules) as real:
        model.forward_batch([SequenceInput(cache, list(range(3, 3 + n_rows)), "last")])
    with al.recording(modules) as mirror:
        al.graph_step(shape, weights, n_rows, 1)
    real_keys = {specialise(launch, 90).key: launch for launch in real}
    mirror_keys = {specialise(launch, 90).key for launch in mirror}
    assert real, "nothing was recorded"
    for key in sorted(set(real_keys) - mirror_keys):
        print("MISSING", n_rows, specialise(real_keys[key], 90).name)
    print("CHECKED", n_rows, len(real), len(real_keys))
"""


@pytest.mark.parametrize("arch", ["qwen2", "gemma3"])
def test_a_real_forward_launches_only_what_the_audit_mirror_launches(tiny_model, arch):
    path = tiny_model(arch, T.Q8_0)
    env = {**os.environ, "TRITON_INTERPRET": "0"}
    result = subprocess.run(
        [sys.executable, "-c", PROBE, str(path), arch],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert [line for line in lines if line.startswith("MISSING")] == []
    checked = [line.split() for line in lines if line.startswith("CHECKED")]
    assert [c[1] for c in checked] == ["9", "1"] and all(int(c[3]) > 5 for c in checked)


def test_a_drifted_mirror_is_caught(tiny_model):
    """Negative control: a mirror that forgets Gemma 3's per-head norms must be reported."""
    path = tiny_model("gemma3", T.Q8_0)
    drifted = PROBE.replace('qk_norm=arch == "gemma3"', "qk_norm=False")
    assert drifted != PROBE
    env = {**os.environ, "TRITON_INTERPRET": "0"}
    result = subprocess.run(
        [sys.executable, "-c", drifted, str(path), "gemma3"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert any(line.startswith("MISSING 1 _rmsnorm_kernel") for line in result.stdout.splitlines())
