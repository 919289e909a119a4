"""How far a second labeller agrees with the corpus labels: the ceiling the rules are held to.

    python bench/toolerr_agreement.py

Each file of tests/toolerr/corpus/second_labels/ gives a second label (by record id) to
records of the corpus, made apart from the first by the labelling guide alone (README.md
there says how). The second labels are scored against the corpus labels as if they were a
rule set's predictions (a second `success` counts as not detected), in the figures
`exactserve toolerr --eval` prints first; the wide rules as shipped, on the same records,
are printed beside them. Where a careful person reading the same text disagrees with the
labels, no rule reading that text can agree with both.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "toolerr"))
from corpus_records import CORPUS  # noqa: E402

from exactserve.toolerr.evaluate import (  # noqa: E402
    DEFINITE,
    PREDICTIONS,
    Evaluation,
    predict,
    read_records,
)

SECOND_LABELS = CORPUS / "second_labels"


def score(pairs: list[tuple[str, str]]) -> str:
    """Correct and wrong of the definite labels, and successes detected, on one line."""
    e = Evaluation("", Counter(pairs))
    definite, successes = e.num_definite, e.count(("success",), PREDICTIONS)
    detected = e.count(("success",), PREDICTIONS[:4])
    correct, wrong = 100 * e.num_correct / definite, 100 * e.num_wrong / definite
    return (
        f"correct {correct:5.1f}%  wrong {wrong:4.1f}%"
        f"  ({e.num_wrong:2d} of {definite})  successes detected {detected:2d} of {successes}"
        f" ({100 * detected / successes:.1f}%)"
    )


def main() -> None:
    corpus = {
        record.id: record
        for path in sorted(CORPUS.glob("*.jsonl"))
        for record in read_records(path.read_text("utf-8").splitlines())
    }
    for path in sorted(SECOND_LABELS.glob("*.jsonl")):
        second = [json.loads(line) for line in path.read_text("utf-8").splitlines()]
        records = [corpus[s["id"]] for s in second]
        as_predicted = [s["label"] if s["label"] != "success" else "none" for s in second]
        labels = [r.label for r in records]
        print(f"{path.name}: {len(second)} records")
        print(f"  {'second labeller':>16}  {score(list(zip(labels, as_predicted, strict=True)))}")
        rules = [predict(record, "wide") for record in records]
        print(f"  {'wide rules':>16}  {score(list(zip(labels, rules, strict=True)))}")
        both = sum(
            1
            for label, s, r in zip(labels, as_predicted, rules, strict=True)
            if label in DEFINITE and s in DEFINITE and r in DEFINITE and s != label and r == s
        )
        print(f"  {'':>16}  wrong kinds of the rules that the second labeller also gave: {both}")


if __name__ == "__main__":
    main()
