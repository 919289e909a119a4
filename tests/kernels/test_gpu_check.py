"""bench/gpu_check.py in its reduced mode (forced without CUDA): the PTX audit subset, the
conformance checks and every timing path run, and the table is written."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_gpu_check_smoke_run(tmp_path: Path) -> None:
    out = tmp_path / "table.md"
    result = subprocess.run(
        [sys.executable, "bench/gpu_check.py", "--smoke", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    audited = re.search(
        r"audited 9 kernel specialisations x 1 targets \(triton [\w.+]+\): 0 failed", result.stdout
    )
    assert audited, result.stdout[-3000:]
    assert "FAIL" not in result.stdout.replace("FAILED", "")
    assert result.stdout.rstrip().endswith("PASS: audit ok, conformance ok")
    written = out.read_text()
    for row in (
        "copy bandwidth",
        "matmul Q4_K gate/up M=1",
        "attention decode",
        "model Q8_0 decode",
    ):
        assert row in written, row
