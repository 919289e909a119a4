"""The wide rules' learned model (toolerr/wide/opinion.py): train it, and measure it.

    python bench/toolerr_learned.py            # leave each newest split out in turn
    python bench/toolerr_learned.py --write    # train on every labelled split -> opinion.json

Measuring: for each split of LEAVE_OUT, the model is trained on every other labelled split
and asked, as the shipped one is, about that split's results: the kind of the failures the
rules detected but found no evidence of a kind for, and whether the results in which the
rules found no failure shape are failures. Printed beside the rules alone. (The rules were
tuned on every labelled split, so the `rules` figures are not held out; the model's gain
is.) Training: multinomial logistic regression (NumPy, full-batch Adam on the mean
cross-entropy plus L2) over the words opinion.words finds in the evidence window, for the
five labels; weights are written as integers in units of 1/opinion.SCALE.
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
from corpus_records import labelled_splits, read_split  # noqa: E402

from exactserve.toolerr.detect import explicit_rule  # noqa: E402
from exactserve.toolerr.evaluate import PREDICTIONS, Evaluation  # noqa: E402
from exactserve.toolerr.wide.classify import LEARNED, NO_EVIDENCE, classify_wide  # noqa: E402
from exactserve.toolerr.wide.opinion import (  # noqa: E402
    LABELS,
    SCALE,
    WEIGHTS_PATH,
    Model,
    judge_failure,
    judge_kind,
    learned_kind,
    words,
)
from exactserve.toolerr.wide.rules import NO_SHAPE, find_failure  # noqa: E402
from exactserve.toolerr.wide.shapes import evidence_window, read_shape  # noqa: E402

LEAVE_OUT = ("test16", "test17", "test18", "test19")  # the newest splits
MIN_RECORDS = 2  # a word seen in fewer training records has no weight
PRUNE = 0.02  # a word whose five weights are all smaller is dropped from opinion.json
STEPS, LEARNING_RATE, L2 = 400, 0.05, 1e-4


def features(record: dict) -> set[bytes]:
    text = record["text"]
    return words(evidence_window(text, read_shape(text)))


def train(records: list[dict]) -> dict:
    """The model trained on `records`, as opinion.json holds it: `weights` (word -> its five
    integer weights), `bias` (five integers)."""
    rows = [features(r) for r in records]
    counts: dict[bytes, int] = {}
    for row in rows:
        for word in row:
            counts[word] = counts.get(word, 0) + 1
    known = sorted(word for word, n in counts.items() if n >= MIN_RECORDS)
    vocab = {word: i for i, word in enumerate(known)}  # sorted: the same file every run
    x = np.zeros((len(rows), len(vocab) + 1))  # float64: rounding to 1/SCALE hides the
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
    integers = np.rint(weights * SCALE).astype(np.int64)
    kept = {
        word.decode("utf-8"): [int(w) for w in integers[i]]
        for word, i in vocab.items()
        if np.abs(weights[i]).max() >= PRUNE
    }
    return {"bias": [int(w) for w in integers[-1]], "weights": kept}


OPEN = "open"  # a detected failure whose kind no rule named: the model's kind is asked


def rules_alone(record: dict) -> tuple[str, str]:
    """The wide rules' answer without the learned model (`none`: not detected), and where
    the model is asked: OPEN (a detected failure with no evidence of a kind), NO_SHAPE (no
    failure shape found, and nothing decided there is none) or "" (the rules decided)."""
    text = record["text"]
    shape = read_shape(text)
    rule, why = find_failure(text, shape, explicit_rule(text, record["is_error"]))
    if rule is None:
        return "none", NO_SHAPE if why == NO_SHAPE else ""
    kind, because = classify_wide(evidence_window(text, shape), shape)
    if LEARNED in because:
        return "ambiguous", OPEN  # the shipped model gave the kind
    return kind, OPEN if because.endswith(NO_EVIDENCE) else ""


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
    model = Model.from_json(train([r for s, rs in splits.items() if s != held for r in rs]))
    records = splits[held]
    alone, with_kind, with_failure = [], [], []
    for record in records:
        kind, asked = rules_alone(record)
        alone.append(kind)
        learned = judge_kind(model.scores(features(record))) if asked == OPEN else None
        with_kind.append(learned[0] if learned else kind)
        learned = judge_failure(model.scores(features(record))) if asked == NO_SHAPE else None
        with_failure.append(learned[0] if learned else with_kind[-1])
    labels = [r["label"] for r in records]
    print(f"{held} left out: {len(records)} records")
    print(f"  {'rules':>20}  {score(labels, alone)}")
    print(f"  {'+ learned kinds':>20}  {score(labels, with_kind)}")
    print(f"  {'+ learned failures':>20}  {score(labels, with_failure)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"train and write {WEIGHTS_PATH}")
    args = parser.parse_args()
    splits = {split: read_split(split) for split in labelled_splits()}
    if args.write:
        data = {
            "trained_on": list(splits),
            "min_records": MIN_RECORDS,
            "prune": PRUNE,
            "scale": SCALE,
            **train([r for rs in splits.values() for r in rs]),
        }
        WEIGHTS_PATH.write_text(json.dumps(data, ensure_ascii=False, separators=(",", ":")))
        learned_kind("")  # the file reads back
        print(f"{WEIGHTS_PATH}: {len(data['weights'])} words, trained on {', '.join(splits)}")
        return
    for held in LEAVE_OUT:
        measure(held, splits)


if __name__ == "__main__":
    main()
