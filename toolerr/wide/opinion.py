"""A learned opinion on the kind of a failure for which the rules found no evidence.

The last tier of classification (rules.py's order): when every rule has passed over a
detected failure and none named a kind, a linear model over the evidence window's words
gives one, but only when it is confident; otherwise the answer stays `ambiguous`. It never
overrides a kind a rule gave, nor an `ambiguous` a rule decided (conflicting evidence, a
command's own timeout, a signal), and it never decides whether a result is a failure.

The model: multinomial logistic regression over binary features, the words of the window
(`words`), trained on the labelled corpus (tests/toolerr/corpus) by `python
bench/toolerr_learned.py --write` into opinion.json: for each word seen in at least two
training records, its weights for transient, fixable and unrecoverable (the smallest
dropped), and the three biases. The opinion is the kind with the largest score when the
softmax over the three scores gives it at least CONFIDENCE. Pure Python, each sum exactly
rounded whatever the order of the words: the same text gives the same answer in every
process.
"""

from __future__ import annotations

import json
import math
from functools import cache
from pathlib import Path

KINDS = ("transient", "fixable", "unrecoverable")
# Words are runs of ASCII letters (lower-cased), digits and `_`, and of any character
# beyond ASCII; every other ASCII character separates them (one C-level pass: a regular
# expression's matches cost some twice as much on a 1 KB window).
_SEPARATE = str.maketrans(
    {i: chr(i).lower() if chr(i).isalnum() or chr(i) == "_" else " " for i in range(128)}
)
CONFIDENCE = 0.95
WEIGHTS_PATH = Path(__file__).with_name("opinion.json")


def words(text: str) -> set[str]:
    """The features of `text`: the set of its words."""
    return set(text.translate(_SEPARATE).split())


@cache
def _model() -> tuple[dict[str, tuple[float, float, float]], tuple[float, float, float]]:
    data = json.loads(WEIGHTS_PATH.read_text("utf-8"))
    weights = {word: tuple(w) for word, w in data["weights"].items()}
    return weights, tuple(data["bias"])


def opinion(
    features: set[str], weights: dict[str, tuple[float, float, float]], bias: tuple[float, ...]
) -> tuple[str, float] | None:
    """(kind, its probability among the three) for the features of one text under a model,
    when that probability is at least CONFIDENCE, else None."""
    # math.fsum rounds each kind's sum once, exactly: the order of the set does not matter
    known = map(weights.__getitem__, weights.keys() & features)
    columns = list(zip(*known, strict=True)) or [()] * 3
    total = [b + math.fsum(column) for b, column in zip(bias, columns, strict=True)]
    best = max(range(3), key=total.__getitem__)
    probability = 1.0 / sum(math.exp(score - total[best]) for score in total)
    return (KINDS[best], probability) if probability >= CONFIDENCE else None


def learned_kind(text: str) -> tuple[str, float] | None:
    """The shipped model's opinion on an evidence window (see `opinion`)."""
    return opinion(words(text), *_model())
