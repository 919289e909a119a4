"""The CPU a benchmark ran on, as its figures should be printed beside it."""

from __future__ import annotations

import platform
from pathlib import Path


def cpu_info() -> tuple[str, set[str]]:
    """(model name, flags) from /proc/cpuinfo; elsewhere the platform's processor name and
    no flags."""
    model, flags = platform.processor() or platform.machine(), set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name") and ":" in line:
                model = line.split(":", 1)[1].strip()
            if line.startswith("flags") and ":" in line:
                flags = set(line.split(":", 1)[1].split())
                break
    except OSError:
        pass
    return model, flags


def listed_flags(wanted: tuple[str, ...]) -> str:
    """Those of `wanted` that this CPU lists, in order ("unknown" if none)."""
    flags = cpu_info()[1]
    return " ".join(f for f in wanted if f in flags) or "unknown"
