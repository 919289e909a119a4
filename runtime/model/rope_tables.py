"""RoPE cos/sin tables of a model, grown on demand (contract 6.2).

Row p of a table depends only on p and the layer kind's frequencies, so growing a table
never changes rows already handed out. Global (full-attention) and sliding-window layers
may use different bases (Gemma 3).
"""

from __future__ import annotations

import numpy as np

from exactserve.reference.rope import rope_frequencies, rope_table, yarn_frequencies, yarn_magnitude
from exactserve.runtime.config import ModelConfig
from exactserve.runtime.errors import UnsupportedError

TABLE_STEP = 1024


class RopeTable:
    """cos/sin rows for positions 0..capacity-1 of one frequency set."""

    def __init__(self, omega: np.ndarray, magnitude: float = 1.0) -> None:
        self.omega, self.magnitude = omega, magnitude
        half = len(omega)
        self.cos = np.zeros((0, half), dtype=np.float32)
        self.sin = np.zeros((0, half), dtype=np.float32)

    def rows(self, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(cos, sin) float32 [len(positions), n_rot / 2]."""
        needed = int(positions.max()) + 1 if len(positions) else 0
        if needed > len(self.cos):
            capacity = -(-needed // TABLE_STEP) * TABLE_STEP
            cos, sin = rope_table(np.arange(len(self.cos), capacity), self.omega, self.magnitude)
            self.cos = np.concatenate([self.cos, cos])
            self.sin = np.concatenate([self.sin, sin])
        return self.cos[positions], self.sin[positions]


def build_tables(config: ModelConfig, rope_freqs: np.ndarray | None) -> tuple[RopeTable, RopeTable]:
    """(global, sliding-window) tables; the second is the first when there is no SWA base.

    As llama.cpp: linear scaling multiplies frequencies by freq_scale; llama3 divides them by
    the `rope_freqs` factors; YaRN mixes interpolated and extrapolated frequencies and scales
    cos/sin (`reference.rope.yarn_*`); `rope.scaling.attn_factor` scales cos/sin.
    """
    rope = config.rope
    name = config.name or "model"
    n_rot = rope.dimension_count
    if rope.scaling_type == "longrope":
        raise UnsupportedError(
            f"{name}: rope scaling type 'longrope' is not supported; supported: none, linear, "
            "yarn and llama3 (rope_freqs)"
        )
    if rope.scaling_type == "yarn":
        if rope.freq_base_swa is not None:
            raise UnsupportedError(f"{name}: YaRN with sliding-window layers is not supported")
        yarn = rope.yarn
        omega = yarn_frequencies(
            n_rot,
            rope.freq_base,
            rope.freq_scale,
            rope.original_context_length,
            yarn.beta_fast,
            yarn.beta_slow,
            1.0 if yarn.ext_factor is None else yarn.ext_factor,
            rope_freqs,
        )
        magnitude = yarn_magnitude(rope.freq_scale, rope.attn_factor, yarn.log_multiplier)
        table = RopeTable(omega, magnitude)
        return table, table
    omega = rope_frequencies(n_rot, rope.freq_base, rope.freq_scale, rope_freqs)
    global_table = RopeTable(omega, rope.attn_factor)
    if rope.freq_base_swa is None:
        return global_table, global_table
    omega_swa = rope_frequencies(n_rot, rope.freq_base_swa, rope.freq_scale_swa, None)
    return global_table, RopeTable(omega_swa, rope.attn_factor)
