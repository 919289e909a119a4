"""A learned second opinion beside the wide tool-error rules, measured (issue 10).

    python bench/toolerr_learned.py                    # leave each large split out in turn
    python bench/toolerr_learned.py --heldout F.jsonl  # train on the tuning splits, test F

A multinomial logistic regression (NumPy only) over hashed lower-cased words and word pairs
of a result's first 3,000 characters, trained on the labelled corpus (tests/toolerr/corpus).
Two ways of using it, fixed before any split it was measured on was read:

- `rules+model`: the wide rules decide detection and keep their kind; where they say
  `ambiguous`, the model names a kind when it gives that kind probability >= 0.9 among the
  three definite kinds.
- `model`: the model alone: a failure when its success probability is under 0.5, and a
  kind at >= 0.9 as above (else `ambiguous`).

Prints, per held-out split, correct and wrong guidance of definite failures and false
detections of successes, beside the rules alone. An experiment, not a product feature: the
result (docs/TOOLERR.md) is why exactserve ships no learned model.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import zlib
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "toolerr"))
from corpus_records import TUNING_SPLITS, read_split, wide_verdict  # noqa: E402

LABELS = ("success", "transient", "fixable", "unrecoverable", "ambiguous")
DEFINITE = ("transient", "fixable", "unrecoverable")
LEAVE_OUT = ("test7", "test8", "test9", "test10")  # the large splits, 257-349 records each
WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]+|[0-9]{3}")
NUM_FEATURES = 1 << 13
KIND_CONFIDENCE = 0.9
STEPS, LEARNING_RATE, L2 = 400, 0.05, 1e-4


def features(text: str) -> np.ndarray:
    words = [w.lower() for w in WORD.findall(text[:3000])]
    grams = words + [f"{a} {b}" for a, b in zip(words, words[1:], strict=False)]
    row = np.zeros(NUM_FEATURES, np.float32)
    for gram in grams:
        row[zlib.crc32(gram.encode()) % NUM_FEATURES] = 1.0
    return row


def train(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Weights (features + bias, labels) by full-batch Adam on the mean cross-entropy."""
    x = np.hstack([x, np.ones((len(x), 1), np.float32)])
    weights = np.zeros((x.shape[1], len(LABELS)), np.float32)
    target = np.eye(len(LABELS), dtype=np.float32)[y]
    m, v = np.zeros_like(weights), np.zeros_like(weights)
    for step in range(1, STEPS + 1):
        p = _softmax(x @ weights)
        grad = x.T @ (p - target) / len(x) + L2 * weights
        m = 0.9 * m + 0.1 * grad
        v = 0.999 * v + 0.001 * grad * grad
        weights -= LEARNING_RATE * (m / (1 - 0.9**step)) / (np.sqrt(v / (1 - 0.999**step)) + 1e-8)
    return weights


def _softmax(z: np.ndarray) -> np.ndarray:
    z = np.exp(z - z.max(axis=1, keepdims=True))
    return z / z.sum(axis=1, keepdims=True)


def probabilities(weights: np.ndarray, x: np.ndarray) -> np.ndarray:
    return _softmax(np.hstack([x, np.ones((len(x), 1), np.float32)]) @ weights)


def model_kind(p: np.ndarray) -> str:
    kinds = p[1:4] / p[1:4].sum()
    best = int(np.argmax(kinds))
    return DEFINITE[best] if kinds[best] >= KIND_CONFIDENCE else "ambiguous"


def predictions(records: list[dict], p: np.ndarray) -> dict[str, list[str]]:
    rules = []
    for record in records:
        failures = wide_verdict(record)
        rules.append(failures[0].kind if failures else "none")
    combined = [
        model_kind(q) if kind == "ambiguous" else kind for kind, q in zip(rules, p, strict=True)
    ]
    alone = ["none" if q[0] >= 0.5 else model_kind(q) for q in p]
    return {"rules": rules, "rules+model": combined, "model": alone}


def score(labels: list[str], predicted: list[str]) -> str:
    definite = [(lab, p) for lab, p in zip(labels, predicted, strict=True) if lab in DEFINITE]
    correct = sum(lab == p for lab, p in definite)
    wrong = sum(p in DEFINITE and p != lab for lab, p in definite)
    successes = [p for lab, p in zip(labels, predicted, strict=True) if lab == "success"]
    detected = sum(p != "none" for p in successes)
    return (
        f"correct {100 * correct / len(definite):5.1f}%  wrong {100 * wrong / len(definite):4.1f}%"
        f"  ({wrong:2d})  successes detected {detected:2d} of {len(successes)}"
    )


def measure(name: str, train_records: list[dict], test_records: list[dict]) -> None:
    x = np.stack([features(r["text"]) for r in train_records])
    y = np.array([LABELS.index(r["label"]) for r in train_records])
    weights = train(x, y)
    p = probabilities(weights, np.stack([features(r["text"]) for r in test_records]))
    labels = [r["label"] for r in test_records]
    num_definite = sum(lab in DEFINITE for lab in labels)
    print(f"{name}: {len(test_records)} records, {num_definite} definite failures")
    for way, predicted in predictions(test_records, p).items():
        print(f"  {way:>12}  {score(labels, predicted)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--heldout", type=Path, help="a labelled JSON Lines file to test once")
    args = parser.parse_args()
    splits = {split: read_split(split) for split in (*TUNING_SPLITS, "test")}
    if args.heldout:
        records = [json.loads(line) for line in args.heldout.read_text("utf-8").splitlines()]
        train_records = [r for rs in splits.values() for r in rs]
        measure(str(args.heldout), train_records, records)
        return
    for held in LEAVE_OUT:
        rest = [r for split, rs in splits.items() if split != held for r in rs]
        measure(f"{held} left out", rest, splits[held])


if __name__ == "__main__":
    main()
