"""`exactserve check [MODEL]`: prove the precision contract on this machine.

Runs the conformance checks (runtime.conformance) on MODEL (default: the demo model) and
prints one row per property: PASS or FAIL, what was compared, and how long it took. Exits 0
only if every row passes, the negative control included (it must detect a planted change).
`--digest` prints the SHA-256 of the logits of fixed prompts instead, and `--against FILE`
compares that digest with one written on another machine (exit 1 on a difference).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

from exactserve.runtime.errors import ExactserveError


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "check",
        help="check the precision contract on this machine",
        description=__doc__.split("\n\n")[0],
    )
    parser.add_argument("model", nargs="?", type=Path, help="GGUF file (default: the demo model)")
    parser.add_argument(
        "--backend",
        choices=("reference", "triton"),
        help="backend to check (default: triton where CUDA is present, else reference); the "
        "backends row always compares reference with triton",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="fewer batch sizes and tokens; on a CPU the backends row uses a small model "
        "generated from MODEL's vocabulary (the Triton interpreter is slow)",
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--digest", action="store_true", help="print the logits digest only")
    parser.add_argument("--against", type=Path, metavar="FILE", help="compare with a digest")
    parser.add_argument("--draft-model", type=Path, help="also check draft-model speculation")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from exactserve.runtime.assets import demo_model_path
    from exactserve.runtime.model import load_model
    from exactserve.runtime.tokenizer import Tokenizer
    from exactserve.server.serving import default_backend

    path = Path(args.model or demo_model_path())
    for given in (path, args.draft_model):
        if given is not None and not given.is_file():
            raise ExactserveError(f"{given}: no such model file; pass the path of a GGUF file")
    expected = _read_digest(args.against) if args.against else None
    backend = args.backend or default_backend()
    started = time.perf_counter()

    def say(message: str) -> None:
        print(f"check: {message} ({time.perf_counter() - started:.1f} s)", file=sys.stderr)

    logging.getLogger("gguf").setLevel(logging.WARNING)  # the small model's writer chatters
    say(f"loading {path.name} on the {backend} backend")
    model = load_model(path, backend=backend)
    tokenizer = Tokenizer.from_gguf(path)
    if args.digest or expected is not None:
        return _digest(model, tokenizer, path, expected, say)
    draft = load_model(args.draft_model, backend=backend) if args.draft_model else None
    numpy_model = None
    if getattr(model.ops, "kernel", None) is not None:
        say(f"CPU matmul row: {model.ops.matmul_variant} against the reference's NumPy matmul")
        numpy_model = load_model(path, backend="reference", cpu_matmul="numpy")
    pair = _backend_pair(path, model, args.quick, say)
    say(
        f"{6 + (numpy_model is not None)} checks; "
        + ("about 20 seconds on 2 CPU cores" if args.quick else "about 2 minutes on 2 CPU "
           "cores for the demo model, most of it the backends row under the Triton "
           "interpreter (longer for larger models); --quick takes about 20 seconds")
    )  # fmt: skip
    results = []
    from exactserve.runtime.conformance import run_checks

    for result in run_checks(
        model,
        tokenizer,
        quick=args.quick,
        triton_pair=pair,
        draft=draft,
        numpy_model=numpy_model,
        progress=lambda name: say(f"checking {name}"),
    ):
        results.append(result)
    if args.json:
        print(json.dumps([r.__dict__ for r in results], indent=2))
    else:
        _print_table(results, path, backend)
    return 0 if all(r.passed for r in results) else 1


def _backend_pair(path: Path, model, quick: bool, say):
    """(reference model, triton model, tokens) for the backends row. On a CPU the Triton
    interpreter runs a demo-sized step in about 30 s: --quick then uses a small model
    generated with MODEL's architecture and vocabulary."""
    from exactserve.kernels import INTERPRETED
    from exactserve.runtime.model import load_model

    subject = path
    if quick and INTERPRETED:
        subject = _tiny_copy(path, model.config.arch)
        say(f"backends row: a small model with {path.name}'s vocabulary ({subject.name})")
    elif INTERPRETED:
        say("backends row: the Triton interpreter runs this model; expect minutes")
    reference = model if model.ops.name == "reference" and subject == path else None
    reference = reference or load_model(subject, backend="reference")
    triton = model if model.ops.name == "triton" and subject == path else None
    triton = triton or load_model(subject, backend="triton")
    from exactserve.runtime.tokenizer import Tokenizer

    tokens = Tokenizer.from_gguf(subject).encode("Water boils at", add_special=True)
    return reference, triton, tokens


def _tiny_copy(path: Path, arch: str) -> Path:
    from gguf import GGMLQuantizationType

    from exactserve.runtime.assets import cache_dir
    from exactserve.runtime.tiny_model import ARCHS, tiny_spec, write_tiny_model

    spec = tiny_spec(arch if arch in ARCHS else "llama", GGMLQuantizationType.Q8_0, vocab=str(path))
    target = cache_dir() / "check" / spec.file_name
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        write_tiny_model(target, spec)
    return target


def _digest(model, tokenizer, path: Path, expected: dict | None, say) -> int:
    from exactserve.runtime.assets import sha256_file
    from exactserve.runtime.conformance import logits_digest

    say("hashing the model file")
    ours = logits_digest(model, tokenizer, path, sha256_file(path))
    if expected is None:
        print(json.dumps(ours, indent=2))
        return 0
    problems = []
    for key in ("contract", "model_sha256", "prompts", "decode_steps"):
        if expected.get(key) != ours[key]:
            problems.append(f"{key} differs ({expected.get(key)} there, {ours[key]} here)")
    if not problems and expected.get("digest") != ours["digest"]:
        problems.append(f"the logits differ: digest {expected.get('digest')} there, "
                        f"{ours['digest']} here")  # fmt: skip
    verdict = "PASS" if not problems else "FAIL"
    print(f"digest {verdict}: {ours['digest']} ({ours['backend']} here, "
          f"{expected.get('backend', '?')} there)")  # fmt: skip
    for problem in problems:
        print(f"  {problem}")
    return 0 if not problems else 1


def _read_digest(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ExactserveError(f"{path}: cannot read the digest file: {exc.strerror}") from exc
    except ValueError as exc:
        raise ExactserveError(f"{path}: not a digest written by --digest: {exc}") from exc
    if not isinstance(data, dict) or "digest" not in data:
        raise ExactserveError(f"{path}: not a digest written by exactserve check --digest")
    return data


def _print_table(results, path: Path, backend: str) -> None:
    print(f"exactserve check: {path.name}, {backend} backend")
    rows = [("property", "result", "time", "compared")]
    for r in results:
        verdict = "PASS" if r.passed else "FAIL"
        if r.name == "negative control" and r.passed:
            verdict = "PASS (detected)"
        rows.append((r.name, verdict, f"{r.seconds:.1f} s", r.compared or r.detail))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for n, row in enumerate(rows):
        print("  ".join(c.ljust(w) for c, w in zip(row[:3], widths, strict=True)) + "  " + row[3])
        if n == 0:
            print("  ".join("-" * w for w in widths) + "  " + "-" * 8)
    failed = [r for r in results if not r.passed]
    print("all properties hold" if not failed else f"{len(failed)} of {len(results)} FAILED")
