"""Where the kernels' tensors live: the CUDA device, or the CPU under the interpreter."""

from __future__ import annotations

import torch

from exactserve.kernels import INTERPRETED


def default_device() -> torch.device:
    return torch.device("cpu" if INTERPRETED else "cuda")
