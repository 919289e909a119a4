"""bench/report.py's writers on synthetic measurements (no llama.cpp, no model run): the
markdown's tables and headline, the PNGs, the determinism counting, the tool-error
conversations, and `--device cuda` refused at once where there is no GPU."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench import determinism, report, report_markdown, report_plots

ROOT = Path(__file__).resolve().parents[2]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _run(kind: str, n_others: int, position: int, cache: str, logprob: float, **kw) -> dict:
    text = "same" if logprob > -1 else "other"
    return {
        "kind": kind,
        "n_others": n_others,
        "position": position,
        "cache": cache,
        "text": text,
        "logprobs": [[" a", -0.5], [" b", logprob]],
        "cached": kw.get("cached"),
        "batch_cached": kw.get("batch_cached"),
    }


def _determinism() -> dict:
    exact = [
        _run(kind, n, n // 2, cache, -0.25, batch_cached=32 if cache == "warm" else 0)
        for kind in ("greedy", "sampled")
        for n in (0, 1)
        for cache in ("cold", "warm")
    ]
    drifting = [
        _run("greedy", 0, 0, "cold", -0.25),
        _run("greedy", 0, 0, "warm", -0.2500001, cached=22),
        _run("greedy", 1, 0, "cold", -0.25),
        _run("greedy", 1, 0, "warm", -3.0, cached=22),
        _run("sampled", 0, 0, "cold", -0.25),
    ]
    data = {
        "stagger_s": 0.05,
        "levels": [0, 1],
        "max_tokens": 16,
        "targets": {
            "greedy": {"prompt": "q", "temperature": 0},
            "sampled": {"prompt": "s", "temperature": 0.8, "seed": 42},
        },
        "settings": [
            {
                "name": "exactserve",
                "engine": "exactserve",
                "cache_prompt": None,
                "command": ["exactserve", "serve"],
                "error": "",
                "runs": exact,
            },
            {
                "name": "llama.cpp, cache on",
                "engine": "llama.cpp",
                "cache_prompt": True,
                "command": ["llama-server", "-np", "8"],
                "error": "",
                "runs": drifting,
            },
            {
                "name": "llama.cpp, cache off",
                "engine": "llama.cpp",
                "cache_prompt": False,
                "command": ["llama-server"],
                "error": "RuntimeError: HTTP 500: boom",
                "runs": [],
            },
        ],
        "commands": [["exactserve", "serve"], ["llama-server", "-np", "8"]],
    }
    data["summary"] = [
        {"setting": "exactserve", "kind": "greedy", "runs": 4, "texts": 1, "sequences": 1},
        {"setting": "exactserve", "kind": "sampled", "runs": 4, "texts": 1, "sequences": 1},
        {"setting": "llama.cpp, cache on", "kind": "greedy", "runs": 4, "texts": 2, "sequences": 3},
        {
            "setting": "llama.cpp, cache on",
            "kind": "sampled",
            "runs": 1,
            "texts": 1,
            "sequences": 1,
        },
    ]
    return data


def _report() -> dict:
    speed_rows = [
        {
            "test": test,
            "threads": n,
            "llama.cpp": [100.0 * n, 110.0 * n],
            "exactserve": [25.0 * n, 30.0 * n],
        }
        for test in ("pp128", "pp512", "tg128")
        for n in (1, 2)
    ]
    level = {
        "requests ok/sent": [4, 4],
        "output tokens/s": [50.0],
        "TTFT ms": [100.0, 90.0, 150.0],
        "ITL ms": [20.0, 19.0, 25.0],
        "E2E ms": [400.0, 390.0, 450.0],
    }
    return {
        "meta": {
            "command": "python -m bench.report --quick --out /tmp/r",
            "started": "2026-12-01 00:00 UTC",
            "seconds": 540.0,
            "quick": True,
            "device": "cpu",
            "model": "/models/gemma-3-270m-q4_k_m.gguf",
            "model_mib": 241.4,
            "load_before": 0.1,
            "load_after": 1.5,
        },
        "machine": {
            "cpu": "Test CPU",
            "simd": ["avx2", "fma"],
            "flags": ["avx2", "fma"],
            "cores": 2,
            "affinity": 2,
            "ram_gib": 8.0,
            "gpu": "none",
            "os": "Linux",
            "versions": {"python": "3.11", "numpy": "2.0"},
            "exactserve": "0.1.0, git abc1234",
            "llama.cpp": {"source": "sdist", "version": "version: b1 (0c1e570)", "build": "-DX=ON"},
        },
        "speed": {"rows": speed_rows, "commands": [["llama-bench", "-p", "128,512"]]},
        "fidelity": {
            "model": "m.gguf",
            "text": "/usr/share/common-licenses/GPL-3",
            "n_chunk": 2,
            "n_chunk_total": 14,
            "n_ctx": 512,
            "n_rows": 510,
            "same_tokens": True,
            "commands": [["llama-perplexity", "-c", "512"]],
            "transformers": {"ppl": 13.83, "same_top_llama": 0.9585},
            "llama.cpp": {
                "ppl": 13.88,
                "kld": 0.0056,
                "kld_unc": 0.0002,
                "same_top": 0.9585,
                "running_kld": [0.006, 0.0055],
                "chunk_kld": [0.006, 0.005],
            },
            "exactserve": {
                "ppl": 13.83,
                "kld": 0.000021,
                "kld_unc": 0.000001,
                "same_top": 0.9966,
                "same_top_llama": 0.9583,
                "kld_llama": 0.0056,
                "chunk_kld": [0.00002, 0.000022],
            },
        },
        "determinism": _determinism(),
        "serving": {
            "config": {"prompt_tokens": 64, "max_tokens": 16, "requests": 1},
            "engines": [
                {
                    "name": "llama.cpp",
                    "command": ["llama-server"],
                    "peak_rss_mib": 400.0,
                    "levels": {"1": level, "8": level},
                },
                {
                    "name": "exactserve",
                    "command": ["exactserve", "serve"],
                    "peak_rss_mib": 1600.0,
                    "levels": {"1": level, "8": {**level, "output tokens/s": [10.0]}},
                },
            ],
            "commands": [["llama-server"], ["exactserve", "serve"]],
        },
        "toolerr": {
            "rows": [
                {
                    "messages": 200,
                    "form": "c3",
                    "rules": "wide",
                    "median_us": 2000.0,
                    "best_us": 1900.0,
                    "fraction_of_step": 0.02,
                },
            ],
            "decode_step_s": 0.1,
            "decode_step_source": "measured",
            "user_agent": "QwenCode/0.24.4",
            "rounds": 3,
            "commands": [],
        },
    }


def test_markdown_has_every_table_and_the_headline_numbers():
    data = _report()
    md = report_markdown.render_markdown(
        data, {"speed": "speed.png", "determinism": "determinism.png"}
    )
    assert md.startswith("# exactserve vs llama.cpp on gemma-3-270m-q4_k_m.gguf\n")
    assert "by `python -m bench.report --quick --out /tmp/r` in 9.0 minutes (quick run" in md
    # speed: mean ± sd (best, n), ratios of means and of bests
    assert (
        "| pp512 | 2 | 210.0 ± 14.1 (best 220.0, n=2) | 55.0 ± 7.1 (best 60.0, n=2) | 0.262x |"
        in md
    )
    assert "0.273x |" in md
    assert (
        "- Speed, exactserve / llama.cpp at 2 threads: pp128 0.262x, pp512 0.262x, tg128 0.262x."
        in md
    )
    # fidelity
    assert (
        "| exactserve (reference) | 13.8300 | -0.36% | 0.000021 ± 0.000001 | 99.66% | 95.83% |"
        in md
    )
    assert "2 of 14 chunks, 510 scored tokens" in md
    # determinism: counts, per-run letters with cache notes, the failed setting, references
    assert "| llama.cpp, cache on | greedy | 4 | 2 | 3 |" in md
    assert "exactserve, greedy: 1 (1 texts) in 4; " in md
    assert "llama.cpp, cache on, greedy: 3 (2 texts) in 4; " in md
    assert (
        "| 1 | 1 | warm | A (32 cached in batch) | A (32 cached in batch) | C (22 cached) | - |"
        in md
    )
    assert "**llama.cpp, cache off failed**: `RuntimeError: HTTP 500: boom`" in md
    assert "#6950" in md and "#7052" in md and "#7594" in md
    # serving: ratio at concurrency 8 and peak RSS
    assert "| 8 | output tokens/s | 50.0 | 10.0 | 0.200x |" in md
    assert "| all | peak RSS MiB | 400 | 1600 | 4.00x |" in md
    # tool-error cost and machine
    assert "| 200 | c3 / wide | 2000 | 1900 | 2.000% |" in md
    assert "| CPU | Test CPU, 2 cores (2 usable) |" in md
    assert "![Speed](speed.png)" in md and "![Determinism](determinism.png)" in md
    assert (
        "```\npython -m bench.report --quick --out /tmp/r\n# speed\nllama-bench -p 128,512\n" in md
    )
    assert "busy" not in md


def test_a_busy_machine_is_flagged_at_the_top():
    data = _report()
    data["meta"]["load_before"] = 2.5
    md = report_markdown.render_markdown(data, {})
    assert "- **The machine was busy**: load average 2.50 before the run started." in md


def test_missing_and_failed_sections_are_said_so():
    data = _report()
    del data["serving"]
    data["fidelity"] = {"error": "SystemExit: llama-perplexity failed (132)"}
    md = report_markdown.render_markdown(data, {})
    assert "## Serving\n\nNot run (`--sections`).\n" in md
    assert "## Fidelity\n\n**Failed**: `SystemExit: llama-perplexity failed (132)`\n" in md
    assert "Fidelity to float32" not in md


def test_plots_are_pngs(tmp_path: Path):
    images = report_plots.write_plots(_report(), tmp_path)
    assert images == {
        "speed": "speed.png",
        "fidelity": "fidelity_kl.png",
        "determinism": "determinism.png",
        "serving": "serving.png",
    }
    for name in images.values():
        data = (tmp_path / name).read_bytes()
        assert data.startswith(PNG_MAGIC) and len(data) > 10_000, name


def test_determinism_counts_exact_bits():
    runs = [
        determinism.Run("greedy", 0, 0, "cold", "x", [[" a", -0.5]], None),
        determinism.Run("greedy", 1, 1, "cold", "x", [[" a", -0.5]], None),
        determinism.Run("greedy", 1, 1, "warm", "x", [[" a", -0.5000000000000001]], 3),
    ]
    assert determinism.distinct(runs) == (1, 2)
    assert determinism.sequence_labels([r.logprobs for r in runs]) == ["A", "A", "B"]
    assert determinism.positions(7, quick=True) == [4]
    assert determinism.positions(7, quick=False) == [0, 4, 7]
    assert determinism.positions(0, quick=False) == [0]


def test_both_logprob_shapes_parse():
    legacy = {
        "choices": [{"text": " red", "logprobs": {"tokens": [" red"], "token_logprobs": [-0.72]}}],
        "usage": {"prompt_tokens": 6},
    }
    content = {
        "choices": [
            {"text": " red", "logprobs": {"content": [{"token": " red", "logprob": -0.67}]}}
        ],
        "usage": {"prompt_tokens_details": {"cached_tokens": 5}},
    }
    assert determinism.parse_choice(legacy) == (" red", [[" red", -0.72]], None)
    assert determinism.parse_choice(content) == (" red", [[" red", -0.67]], 5)


def test_agent_conversations_have_the_asked_length_and_real_tool_results():
    results = report.corpus_results()
    for n in (10, 50, 200):
        body = report.agent_conversation(n, results)
        assert len(body["messages"]) == n
        tool_texts = [m["content"] for m in body["messages"] if m["role"] == "tool"]
        assert tool_texts[0] == (results[0] or " ")
        calls = [m for m in body["messages"] if m.get("tool_calls")]
        assert len(calls) >= len(tool_texts)
    json.dumps(body)  # a real request body


def test_cuda_without_a_gpu_fails_at_once(tmp_path: Path):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    proc = subprocess.run(
        [sys.executable, "-m", "bench.report", "--device", "cuda", "--out", str(tmp_path / "r")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: --device cuda needs an NVIDIA GPU, but ")
    assert "torch.cuda.is_available() is False" in proc.stderr
    assert not (tmp_path / "r").exists()
