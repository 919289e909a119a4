"""Load time and peak memory of exactserve next to llama.cpp, same machine, same run.

    python bench/load_time.py [--model GGUF] [--reps 3] [--threads 2]

Each side runs as a fresh process that loads the model, computes one token from a two-word
prompt and exits; the wall time and peak resident memory come from the kernel (wait4's
rusage), so Python's start-up and imports count on our side as the binary's start-up does
on theirs:

- llama.cpp: `llama-cli -m MODEL -p hi -n 1 -st --no-warmup -t THREADS` (memory-mapped GGUF);
- exactserve, cold: `exactserve generate MODEL -p hi -n 1` with EXACTSERVE_WEIGHT_CACHE=0
  (all 236 tensors converted, as before the weight cache);
- exactserve, warm: the same with the weight cache (runtime/model/weight_cache.py) filled
  by one run before the timed ones (converted tensors memory-mapped).

Printed: mean and best wall time, peak RSS, and the ratios to llama.cpp. Not a timed test.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from exactserve.runtime.assets import demo_model_path

BENCH_DIR = Path(__file__).resolve().parent


def run_once(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, peak RSS in MiB) of one process running `cmd`."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[0]} failed ({proc.returncode}): {proc.stderr.read()[-2000:]}")
    proc.stderr.close()
    scale = 1024 if sys.platform != "darwin" else 1024 * 1024  # ru_maxrss: KiB on Linux
    return wall, usage.ru_maxrss * 1024 / scale / 1024


def measure(cmd: list[str], env: dict[str, str], reps: int) -> tuple[list[float], float]:
    walls, peak = [], 0.0
    for _ in range(reps):
        wall, rss = run_once(cmd, env)
        walls.append(wall)
        peak = max(peak, rss)
    return walls, peak


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, help="GGUF file (default: the demo model)")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    model = str((args.model or demo_model_path()).resolve())
    sys.path.insert(0, str(BENCH_DIR))
    from fidelity import llama_bin_dir

    ours = [sys.executable, "-m", "exactserve", "generate", model, "-p", "hi", "-n", "1"]
    ours += ["--threads", str(args.threads)]
    theirs = [str(llama_bin_dir() / "llama-cli"), "-m", model, "-p", "hi", "-n", "1", "-st"]
    theirs += ["--no-warmup", "-t", str(args.threads)]
    env = dict(os.environ)
    cold_env = {**env, "EXACTSERVE_WEIGHT_CACHE": "0"}
    rows = []
    print(f"running: {' '.join(theirs)}", file=sys.stderr, flush=True)
    rows.append(("llama.cpp (llama-cli)", *measure(theirs, env, args.reps)))
    print(f"running: EXACTSERVE_WEIGHT_CACHE=0 {' '.join(ours)}", file=sys.stderr, flush=True)
    rows.append(("exactserve, cold (converting)", *measure(ours, cold_env, args.reps)))
    run_once(ours, env)  # fills the weight cache if it was empty
    print(f"running: {' '.join(ours)}", file=sys.stderr, flush=True)
    rows.append(("exactserve, warm (weight cache)", *measure(ours, env, args.reps)))
    print(f"{Path(model).name}, {args.reps} runs each, {args.threads} threads")
    base_wall, base_rss = statistics.mean(rows[0][1]), rows[0][2]
    print(f"{'':32} {'wall s (mean, best)':>20} {'ratio':>6} {'peak RSS MiB':>13} {'ratio':>6}")
    for name, walls, rss in rows:
        mean = statistics.mean(walls)
        print(f"{name:32} {mean:9.2f} {min(walls):9.2f} {mean / base_wall:6.2f}x "
              f"{rss:13.0f} {rss / base_rss:6.2f}x")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
