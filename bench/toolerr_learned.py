"""The wide rules' learned opinion (toolerr/wide/opinion.py): train it, and measure it.

    python bench/toolerr_learned.py            # leave each newest split out in turn
    python bench/toolerr_learned.py --write    # train on every labelled split -> opinion.json

Measuring: for each split of LEAVE_OUT, the opinion is trained on every other labelled
split and asked, as the shipped one is, about that split's failures which the rules
detected but found no evidence of a kind for; printed beside the rules alone. (The rules
were tuned on every split but the newest held-out one, so only there are the `rules`
figures themselves held out.) Training: multinomial logistic regression (NumPy, full-batch
Adam on the mean cross-entropy plus L2) over the words opinion.words finds in the evidence
window, for the five labels; the three kinds' weights are kept.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "toolerr"))
from corpus_records import labelled_splits, read_split, wide_verdict  # noqa: E402

from exactserve.toolerr.evaluate import PREDICTIONS, Evaluation  # noqa: E402
from exactserve.toolerr.wide.classify import LEARNED, NO_EVIDENCE  # noqa: E402
from exactserve.toolerr.wide.opinion import (  # noqa: E402
    KINDS,
    WEIGHTS_PATH,
    learned_kind,
    opinion,
    words,
)
from exactserve.toolerr.wide.shapes import evidence_window, read_shape  # noqa: E402

LABELS = ("success", *KINDS, "ambiguous")
LEAVE_OUT = ("test11", "test12", "test13")  # the newest splits
MIN_RECORDS = 2  # a word seen in fewer training records has no weight
PRUNE = 0.02  # weights this small are dropped from opinion.json
STEPS, LEARNING_RATE, L2 = 400, 0.05, 1e-4


def features(record: dict) -> set[str]:
    text = record["text"]
    return words(evidence_window(text, read_shape(text)))


def train(records: list[dict]) -> tuple[dict[str, list[float]], list[float]]:
    """(word -> the three kinds' weights, their biases), trained on `records`."""
    rows = [features(r) for r in records]
    counts: dict[str, int] = {}
    for row in rows:
        for word in row:
            counts[word] = counts.get(word, 0) + 1
    known = sorted(word for word, n in counts.items() if n >= MIN_RECORDS)
    vocab = {word: i for i, word in enumerate(known)}  # sorted: the same file every run
    x = np.zeros((len(rows), len(vocab) + 1))  # float64: rounding to 4 places hides the
    # threaded BLAS sums' order, so retraining on the same corpus writes the same file
    x[:, -1] = 1.0  # the bias
    for i, row in enumerate(rows):
        x[i, [vocab[word] for word in row if word in vocab]] = 1.0
    target = np.eye(len(LABELS))[[LABELS.index(r["label"]) for r in records]]
    weights = np.zeros((x.shape[1], len(LABELS)))
    m, v = np.zeros_like(weights), np.zeros_like(weights)
    for step in range(1, STEPS + 1):
        z = x @ weights
        p = np.exp(z - z.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        grad = x.T @ (p - target) / len(x) + L2 * weights
        m = 0.9 * m + 0.1 * grad
        v = 0.999 * v + 0.001 * grad * grad
        weights -= LEARNING_RATE * (m / (1 - 0.9**step)) / (np.sqrt(v / (1 - 0.999**step)) + 1e-8)
    kinds = weights[:, 1:4]
    kept = {
        word: [round(float(w), 4) for w in kinds[i]]
        for word, i in vocab.items()
        if np.abs(kinds[i]).max() >= PRUNE
    }
    return kept, [round(float(w), 4) for w in kinds[-1]]


def rules_alone(record: dict) -> tuple[str, bool]:
    """The wide rules' kind without the opinion (`none`: not detected), and whether they
    left it open for lack of evidence (where the opinion is asked)."""
    failures = wide_verdict(record)
    if not failures:
        return "none", False
    evidence = failures[0].evidence or ""
    if LEARNED in evidence:
        return "ambiguous", True  # the shipped opinion gave the kind
    return failures[0].kind, evidence.endswith(NO_EVIDENCE)


def score(labels: list[str], predicted: list[str]) -> str:
    """The figures `exactserve toolerr --eval` gives first, on one line."""
    e = Evaluation("wide", Counter(zip(labels, predicted, strict=True)))
    correct, wrong = 100 * e.num_correct / e.num_definite, 100 * e.num_wrong / e.num_definite
    detected = e.count(("success",), PREDICTIONS[:4])  # (all but `none`)
    return (
        f"correct {correct:5.1f}%  wrong {wrong:4.1f}%  ({e.num_wrong:2d})  successes detected "
        f"{detected:2d} of {e.count(('success',), PREDICTIONS)}"
    )


def measure(held: str, splits: dict[str, list[dict]]) -> None:
    weights, bias = train([r for split, rs in splits.items() if split != held for r in rs])
    records = splits[held]
    alone, with_opinion = [], []
    for record in records:
        kind, is_open = rules_alone(record)
        alone.append(kind)
        learned = opinion(features(record), weights, bias) if is_open else None
        with_opinion.append(learned[0] if learned else kind)
    labels = [r["label"] for r in records]
    print(f"{held} left out: {len(records)} records")
    print(f"  {'rules':>14}  {score(labels, alone)}")
    print(f"  {'rules+opinion':>14}  {score(labels, with_opinion)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"train and write {WEIGHTS_PATH}")
    args = parser.parse_args()
    splits = {split: read_split(split) for split in labelled_splits()}
    if args.write:
        weights, bias = train([r for rs in splits.values() for r in rs])
        data = {
            "trained_on": list(splits),
            "min_records": MIN_RECORDS,
            "prune": PRUNE,
            "bias": bias,
            "weights": weights,
        }
        WEIGHTS_PATH.write_text(json.dumps(data, ensure_ascii=False, separators=(",", ":")))
        learned_kind("")  # the file reads back
        print(f"{WEIGHTS_PATH}: {len(weights)} words, trained on {', '.join(splits)}")
        return
    for held in LEAVE_OUT:
        measure(held, splits)


if __name__ == "__main__":
    main()
