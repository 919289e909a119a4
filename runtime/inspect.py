"""A readable summary of a GGUF model: file, configuration, vocabulary and tensors.

`inspect_model(path)` gathers it (reading only the header, metadata and tensor directory);
`report_lines` turns it into (label, value) rows that `format_report` aligns for a terminal.
Tensor types exactserve cannot compute are listed and marked, not fatal: inspecting is how a
user finds out what a file holds.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from exactserve.reference.quants import SUPPORTED_TYPES
from exactserve.runtime.config import ModelConfig, from_gguf
from exactserve.runtime.gguf_file import open_gguf


@dataclass(frozen=True)
class ModelReport:
    path: Path
    file_size: int
    gguf_version: int
    config: ModelConfig
    n_tensors: int
    type_counts: tuple[tuple[str, int], ...]  # most frequent first, then by name
    unsupported_types: tuple[str, ...]
    n_parameters: int
    tensor_bytes: int


def inspect_model(path: str | Path) -> ModelReport:
    """Open `path` and summarise it; raises GGUFError / UnsupportedError as loading would."""
    with open_gguf(path) as f:
        config = from_gguf(f)
        infos = list(f.tensors.values())
        counts = Counter(info.ggml_type for info in infos)
        return ModelReport(
            path=f.path,
            file_size=f.path.stat().st_size,
            gguf_version=f.version,
            config=config,
            n_tensors=len(infos),
            type_counts=tuple(
                (t.name, n) for t, n in sorted(counts.items(), key=lambda tn: (-tn[1], tn[0].name))
            ),
            unsupported_types=tuple(sorted(t.name for t in counts if t not in SUPPORTED_TYPES)),
            n_parameters=sum(info.n_elements for info in infos),
            tensor_bytes=sum(info.nbytes for info in infos),
        )


def _number(x: float) -> str:
    """1000000.0 -> "1000000", 0.125 -> "0.125" (shortest repr that round-trips)."""
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def _bytes(n: int) -> str:
    return f"{n} bytes ({n / 2**20:.1f} MiB)"


def _rope(config: ModelConfig) -> str:
    rope = config.rope
    parts = [rope.layout.value, f"{rope.dimension_count} dims", f"base {_number(rope.freq_base)}"]
    if rope.freq_base_swa is not None:
        parts.append(f"local base {_number(rope.freq_base_swa)}")
    if rope.scaling_type == "none":
        parts.append("no scaling")
    else:
        factor = "" if rope.scaling_factor is None else f" x{_number(rope.scaling_factor)}"
        parts.append(f"{rope.scaling_type} scaling{factor}")
        parts.append(f"original context {rope.original_context_length}")
    if rope.has_freq_factors:
        parts.append("llama3 frequency factors (rope_freqs.weight)")
    return ", ".join(parts)


def _sliding_window(config: ModelConfig) -> str:
    if config.sliding_window is None:
        return "none"
    n_local = sum(config.swa_layers)
    global_layers = [str(i) for i, local in enumerate(config.swa_layers) if not local]
    where = f"global layers: {', '.join(global_layers)}" if global_layers else "no global layer"
    return f"{config.sliding_window} tokens on {n_local} of {config.n_layers} layers ({where})"


def _extras(config: ModelConfig) -> str:
    parts = [config.traits.activation]
    if config.has_qk_norm:
        parts.append("q/k norm")
    if config.has_post_norms:
        parts.append("post-norms")
    if config.has_qkv_bias:
        parts.append("q/k/v bias")
    if config.embedding_scale is not None:
        parts.append(f"embeddings x{config.embedding_scale!r}")
    if config.final_logit_softcap is not None:
        parts.append(f"final logit softcap {_number(config.final_logit_softcap)}")
    parts.append("tied embeddings" if config.tied_embeddings else "separate output matrix")
    return ", ".join(parts)


def report_lines(report: ModelReport) -> list[tuple[str, str]]:
    """(label, value) rows, in display order."""
    c, vocab = report.config, report.config.vocab
    types = ", ".join(
        f"{name} {n}" + (" (unsupported)" if name in report.unsupported_types else "")
        for name, n in report.type_counts
    )
    tokenizer = f"model {vocab.model or 'none'}, pre-tokenizer {vocab.pre or 'none'}"
    ids = f"bos {vocab.bos_id}, eos {vocab.eos_id}"
    return [
        ("file", str(report.path)),
        ("size", _bytes(report.file_size)),
        ("gguf version", str(report.gguf_version)),
        ("architecture", c.arch),
        ("name", c.name or "(none)"),
        ("context length", str(c.context_length)),
        ("embedding", str(c.n_embd)),
        ("layers", str(c.n_layers)),
        ("heads", f"{c.n_heads} (kv heads {c.n_kv_heads})"),
        ("head dim", f"{c.head_dim} (value {c.head_dim_v})"),
        ("feed-forward", str(c.n_ff)),
        ("norm epsilon", str(np.float32(c.norm_eps))),
        ("attention scale", repr(c.attention_scale)),
        ("rope", _rope(c)),
        ("sliding window", _sliding_window(c)),
        ("layer features", _extras(c)),
        ("vocabulary", f"{tokenizer}, {vocab.n_tokens} tokens, {ids}"),
        ("chat template", "yes" if vocab.has_chat_template else "no"),
        ("tensors", str(report.n_tensors)),
        ("tensor types", types),
        ("parameters", str(report.n_parameters)),
        ("tensor data", _bytes(report.tensor_bytes)),
    ]


def format_report(report: ModelReport) -> str:
    rows = report_lines(report)
    width = max(len(label) for label, _ in rows)
    lines = [f"{label:<{width}}  {value}" for label, value in rows]
    if report.unsupported_types:
        lines.append(
            f"note: exactserve cannot run tensors of type {', '.join(report.unsupported_types)}"
        )
    return "\n".join(lines)
