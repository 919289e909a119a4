"""A learned model of the evidence window's words, asked where the rules have no answer.

Two questions, both only where the rules (rules.py) leave one open, and both answered only
when the model is confident; otherwise the rules' answer stands:
- the kind of a failure the rules detected but found no evidence of a kind for (tier 9 of
  classification): the kind whose probability among the three kinds is at least
  CONFIDENCE (`learned_kind`);
- whether a result in which the rules found no failure shape at all is a failure
  (`learned_failure`): when the probability of `success` is at most RESCUE_SUCCESS and a
  kind is confident as above. It is never asked where the structure decided (an exit code
  of 0, a JSON body without an error member) nor where the text opens like a document.

The model: multinomial logistic regression over binary features, the words of the window
(`words`), for the five labels (success, the three kinds, ambiguous), trained on the
labelled corpus (tests/toolerr/corpus) by `python bench/toolerr_learned.py --write` into
opinion.json: for each word seen in at least two training records, its five weights, and
the five biases, all as integers in units of 1/SCALE.

Every answer is the same in every process and on every platform: a score is a sum of
integers (exact in any order); the five are packed into one integer per word, 48 bits a
label, so that one C-level `sum` adds all five; the probabilities use `_exp`, built from
correctly rounded IEEE operations only, not the platform's `math.exp`.
"""

from __future__ import annotations

import json
from functools import cache
from itertools import repeat
from pathlib import Path

LABELS = ("success", "transient", "fixable", "unrecoverable", "ambiguous")
KINDS = LABELS[1:4]
CONFIDENCE = 0.95  # a kind's probability among the three kinds
RESCUE_SUCCESS = 0.01  # the most probability of `success` a learned failure may have
SCALE = 1 << 12  # weights are stored as integers in units of 1/SCALE
WEIGHTS_PATH = Path(__file__).with_name("opinion.json")

# Words are runs of ASCII letters (lower-cased), digits and `_`, and of any character
# beyond ASCII, read as UTF-8 bytes: every other ASCII byte separates them (one C-level
# pass of bytes.translate, a few times faster than str.translate's table of characters).
_SEPARATE = bytes(
    (ord(chr(i).lower()) if chr(i).isalnum() or i == 0x5F else 0x20) if i < 128 else i
    for i in range(256)
)
# Five signed 48-bit fields in one integer: a window has far fewer than 2**20 distinct
# words, each weight is under 2**27 in size, so no field's sum can reach 2**47.
_BITS = 48
_MASK = (1 << _BITS) - 1
_HALF = 1 << (_BITS - 1)
# `success` is more than RESCUE_SUCCESS probable whenever no other label's score exceeds
# its by ln((1 - RESCUE_SUCCESS) / RESCUE_SUCCESS / 4) = 3.2088 (the other four's
# exponentials then sum to under 99 times its own): an integer test before any exp
_CLEARLY_PROBABLE = int(3.2 * SCALE)
# likewise no kind is CONFIDENCE probable among the three unless its score exceeds each
# other's by ln(CONFIDENCE / (1 - CONFIDENCE)) = 2.944
_CLEARLY_SHARED = int(2.94 * SCALE)


def words(text: str) -> set[bytes]:
    """The features of `text`: the set of its words, as UTF-8 bytes."""
    return set(text.encode("utf-8", "surrogatepass").translate(_SEPARATE).split())


def pack(values: list[int] | tuple[int, ...]) -> int:
    """One integer holding the five label values (see `unpack`)."""
    return sum(value << (_BITS * i) for i, value in enumerate(values))


def unpack(packed: int) -> tuple[int, ...]:
    """The five label values of a sum of `pack`ed integers."""
    values = []
    for _ in LABELS:
        field = packed & _MASK
        if field >= _HALF:
            field -= 1 << _BITS
        values.append(field)
        packed = (packed - field) >> _BITS
    return tuple(values)


class Model:
    """The weights (word -> packed five integers) and the packed five biases."""

    __slots__ = ("weights", "bias")

    def __init__(self, weights: dict[bytes, int], bias: int) -> None:
        self.weights = weights
        self.bias = bias

    @classmethod
    def from_json(cls, data: dict) -> Model:
        weights = {word.encode("utf-8"): pack(w) for word, w in data["weights"].items()}
        return cls(weights, pack(data["bias"]))

    def scores(self, features: set[bytes]) -> tuple[int, ...]:
        """The five labels' scores, in units of 1/SCALE."""
        return unpack(sum(map(self.weights.get, features, repeat(0)), self.bias))


def probabilities(scores: tuple[int, ...] | list[int]) -> list[float]:
    """The softmax of integer scores in units of 1/SCALE."""
    top = max(scores)
    exps = [_exp((score - top) / SCALE) for score in scores]
    total = sum(exps)  # (a fixed order: the labels')
    return [e / total for e in exps]


def judge_kind(scores: tuple[int, ...]) -> tuple[str, float] | None:
    """(kind, its probability among the three kinds) when at least CONFIDENCE, else None."""
    kinds = sorted(scores[1:4])
    if kinds[2] - kinds[1] < _CLEARLY_SHARED:
        return None  # (no exp needed)
    among = probabilities(scores[1:4])
    best = max(range(3), key=among.__getitem__)
    return (KINDS[best], among[best]) if among[best] >= CONFIDENCE else None


def judge_failure(scores: tuple[int, ...]) -> tuple[str, float] | None:
    """(kind, its probability among the three) when `success` is at most RESCUE_SUCCESS
    probable among the five labels and the kind is confident, else None."""
    if max(scores[1:]) - scores[0] < _CLEARLY_PROBABLE:
        return None  # (most successes: no exp needed)
    if probabilities(scores)[0] > RESCUE_SUCCESS:
        return None
    return judge_kind(scores)


@cache
def _model() -> Model:
    return Model.from_json(json.loads(WEIGHTS_PATH.read_text("utf-8")))


def learned_kind(text: str) -> tuple[str, float] | None:
    """The shipped model's kind for a detected failure's evidence window (`judge_kind`)."""
    return judge_kind(_model().scores(words(text)))


def learned_failure(text: str) -> tuple[str, float] | None:
    """The shipped model's answer on an evidence window in which the rules found no
    failure shape (`judge_failure`)."""
    return judge_failure(_model().scores(words(text)))


def _exp(x: float) -> float:
    """e**x for x <= 0 from correctly rounded IEEE operations only (the same bits on every
    platform): halve into [-0.5, 0], Taylor's series to degree 12 (its remainder is under
    1e-14 there), then square back. Relative error about 1e-13 at worst, and 0 below -40;
    the bounds it is compared with have two decimal digits."""
    if x < -40.0:
        return 0.0  # (under 5e-18: nothing beside the top label's 1)
    halvings = 0
    while x < -0.5:
        x *= 0.5  # exact
        halvings += 1
    y = 1.0
    for k in range(12, 0, -1):
        y = 1.0 + x * y / k
    for _ in range(halvings):
        y *= y
    return y
