"""CPU parallelism of the reference backend.

The matmul group loop issues many small BLAS calls (one [rows, 16|32] x [16|32, cols]
product per group). Multi-threaded BLAS synchronises its workers on every such call, which
on a busy machine costs more than the call itself (measured: 17x slower prefill with two
OpenBLAS threads on a loaded 2-core VM). So BLAS is kept single-threaded and the model
parallelises whole column tiles (BLAS products and their epilogues) on a thread pool
instead; NumPy releases the GIL for both. The bits never depend on the thread count: tiles
compute disjoint output elements.
"""

from __future__ import annotations

import ctypes
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

_SETTERS = (
    "scipy_openblas_set_num_threads64_",
    "scipy_openblas_set_num_threads",
    "openblas_set_num_threads64_",
    "openblas_set_num_threads",
)


def _loaded_openblas() -> list[str]:
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        return []
    paths = {line.split()[-1] for line in maps.splitlines() if "openblas" in line.lower()}
    return sorted(p for p in paths if p.startswith("/"))


def set_blas_threads(n: int) -> bool:
    """Set the thread count of every OpenBLAS loaded in this process; False if none found."""
    import numpy  # noqa: F401  (loads NumPy's BLAS)

    done = False
    for path in _loaded_openblas():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for name in _SETTERS:
            setter = getattr(lib, name, None)
            if setter is not None:
                setter(ctypes.c_int(n))
                done = True
                break
    return done


def available_cpus() -> int:
    """CPUs this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


# A judgment, not a measurement (only 2-core machines were available): past some count, more
# and smaller shares cost more in pool hand-offs than they save.
DEFAULT_MAX_THREADS = 8


def default_threads() -> int:
    """The tile threads a command uses unless told: the CPUs available, at most 8."""
    return min(available_cpus(), DEFAULT_MAX_THREADS)


class TilePool(ThreadPoolExecutor):
    """The tile workers; `threads` says how many, so callers can share work out evenly."""

    def __init__(self, threads: int) -> None:
        super().__init__(threads, thread_name_prefix="exactserve-tile")
        self.threads = threads


def make_executor(threads: int) -> TilePool | None:
    """A pool of `threads` tile workers, or None for `threads` <= 1. Sets BLAS to one thread
    either way."""
    set_blas_threads(1)
    if threads <= 1:
        return None
    return TilePool(threads)
