"""Triton twins of the reference ops (docs/PRECISION.md), bit for bit.

Each module is the twin of the reference module of the same name: `kernels.rmsnorm` of
`reference.rmsnorm`, `kernels.quants` of `reference.quants`, and so on. Inputs and outputs
are torch tensors: CUDA tensors on a GPU, CPU tensors under the Triton interpreter.

Interpreter mode. Triton decides at decoration time (`@triton.jit`) whether a kernel is
compiled or interpreted, from the environment variable TRITON_INTERPRET. So it must be set
before the first kernel module is imported. Importing this package does that: on a machine
without CUDA, and unless the caller already set TRITON_INTERPRET, it sets it to "1". Code
that imports triton kernels of its own before importing `kernels` must set it itself.
"""

from __future__ import annotations

import os


def _use_interpreter() -> bool:
    """True when kernels must run under the Triton interpreter (no CUDA device)."""
    requested = os.environ.get("TRITON_INTERPRET")
    if requested is not None:
        return requested.strip().lower() in ("1", "true", "yes", "on")
    import torch

    interpret = not torch.cuda.is_available()
    if interpret:
        os.environ["TRITON_INTERPRET"] = "1"
    return interpret


INTERPRETED: bool = _use_interpreter()
