"""bench/report.py's plots (matplotlib, imported only when plots are written)."""

from __future__ import annotations

import math
import statistics
from pathlib import Path

from . import determinism
from .report_markdown import _ratio, _threads

COLORS = {"llama.cpp": "#d62728", "exactserve": "#1f77b4"}


def plot_speed(data: dict, path: Path) -> None:
    import matplotlib.pyplot as plt

    tests = sorted({r["test"] for r in data["rows"]}, key=lambda t: (t[:2], int(t[2:])))
    fig, axes = plt.subplots(1, len(tests), figsize=(4 * len(tests), 3.6), squeeze=False)
    for ax, test in zip(axes[0], tests, strict=True):
        rows = [r for r in data["rows"] if r["test"] == test]
        for i, engine in enumerate(("llama.cpp", "exactserve")):
            xs = [k + (i - 0.5) * 0.38 for k in range(len(rows))]
            means = [statistics.mean(r[engine]) if r[engine] else 0 for r in rows]
            sds = [statistics.stdev(r[engine]) if len(r[engine]) > 1 else 0 for r in rows]
            ax.bar(xs, means, 0.38, yerr=sds, capsize=3, label=engine, color=COLORS[engine])
        for k, r in enumerate(rows):
            if r["exactserve"] and r["llama.cpp"]:
                top = max(statistics.mean(r["llama.cpp"]), statistics.mean(r["exactserve"]))
                ax.annotate(
                    _ratio(r["exactserve"], r["llama.cpp"]),
                    (k, top),
                    ha="center",
                    xytext=(0, 6),
                    textcoords="offset points",
                    fontsize=8,
                )
        ax.set_xticks(range(len(rows)), [_threads(r["threads"]) for r in rows])
        ax.set_title(test)
        ax.set_ylabel("tokens/s")
        ax.margins(y=0.15)
    axes[0][0].legend(fontsize=8)
    fig.suptitle("Speed: mean ± sd over repetitions (label: exactserve / llama.cpp)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_fidelity(data: dict, path: Path) -> None:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.6))
    series = [("llama.cpp", data["llama.cpp"].get("chunk_kld", []))]
    series.append(("exactserve", (data.get("exactserve") or {}).get("chunk_kld", [])))
    for name, values in series:
        if values:
            ax.plot(range(1, len(values) + 1), values, "o-", label=name, color=COLORS[name])
    ax.set_yscale("log")
    ax.set_xlabel("chunk (512 tokens, 255 scored)")
    ax.set_ylabel("mean KL divergence to float32")
    ax.set_xticks(range(1, data["n_chunk"] + 1))
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    ax.set_title("KL divergence from the float32 transformers run, per chunk (log scale)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_serving(data: dict, path: Path) -> None:
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    for engine in data["engines"]:
        levels = sorted(engine["levels"], key=int)
        xs = [int(c) for c in levels]
        for ax, metric in zip(axes, ("output tokens/s", "TTFT ms"), strict=True):
            ys = [engine["levels"][c].get(metric, [math.nan])[0] for c in levels]
            ax.plot(xs, ys, "o-", label=engine["name"], color=COLORS[engine["name"]])
            ax.set_xticks(xs)
            ax.set_xlabel("concurrent clients")
            ax.set_ylabel(metric if metric != "TTFT ms" else "mean time to first token, ms")
    axes[0].set_title("Output tokens/s")
    axes[1].set_title("Time to first token")
    axes[1].set_yscale("log")
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_plots(report: dict, out: Path) -> dict[str, str]:
    """The PNGs of every section that ran; {section: file name}."""
    import matplotlib

    matplotlib.use("Agg")
    plotters = {
        "speed": (plot_speed, "speed.png"),
        "fidelity": (plot_fidelity, "fidelity_kl.png"),
        "determinism": (determinism.plot, "determinism.png"),
        "serving": (plot_serving, "serving.png"),
    }
    images = {}
    for key, (plot, name) in plotters.items():
        data = report.get(key)
        if data is not None and "error" not in data:
            plot(data, out / name)
            images[key] = name
    return images
