"""bench/toolerr_learned.py: training on the committed corpus writes the shipped weights
(toolerr/wide/opinion.json) exactly, a model it trains separates what it was shown, and its
scores count as docs/TOOLERR.md says."""

from __future__ import annotations

import json

from bench import toolerr_learned as tl
from exactserve.toolerr.wide import opinion as o


def test_training_on_every_labelled_split_gives_the_shipped_weights():
    splits = tl.labelled_splits()  # (every labelled split but the newest held-out one)
    trained = tl.train([r for split in splits for r in tl.read_split(split)])
    shipped = json.loads(o.WEIGHTS_PATH.read_text("utf-8"))
    assert shipped["trained_on"] == splits
    assert (shipped["min_records"], shipped["prune"]) == (tl.MIN_RECORDS, tl.PRUNE)
    assert shipped["scale"] == o.SCALE and trained["bias"] == shipped["bias"]
    weights = trained["weights"]
    differ = {w for w in weights.keys() | shipped["weights"].keys()
              if weights.get(w) != shipped["weights"].get(w)}  # fmt: skip
    assert not differ, f"retrain: python bench/toolerr_learned.py --write ({sorted(differ)[:5]})"


def test_a_trained_model_names_the_kinds_it_was_shown():
    texts = {"transient": "rate limit exceeded", "fixable": "file not found",
             "unrecoverable": "permission denied", "success": "all tests passed"}  # fmt: skip
    records = [{"text": t, "label": label} for label, t in texts.items()] * 5
    model = o.Model.from_json(tl.train(records))
    for label in ("transient", "fixable", "unrecoverable"):
        assert o.judge_kind(model.scores(o.words(texts[label])))[0] == label
    assert o.judge_failure(model.scores(o.words(texts["success"]))) is None


def test_score_counts_correct_wrong_and_detected_successes():
    labels = ["fixable", "fixable", "transient", "unrecoverable", "success", "success"]
    predicted = ["fixable", "transient", "ambiguous", "none", "ambiguous", "none"]
    assert tl.score(labels, predicted) == (
        "correct  25.0%  wrong 25.0%  ( 1)  successes detected  1 of 2"
    )


def test_rules_alone_reads_where_the_model_is_asked():
    def record(text):
        return {"text": text, "is_error": False}

    assert tl.rules_alone(record("total 0\n")) == ("none", tl.NO_SHAPE)
    assert tl.rules_alone(record("Exit code: 0\nError: x")) == ("none", "")
    assert tl.rules_alone(record("Error: ENOENT: no such file or directory")) == ("fixable", "")
    assert tl.rules_alone(record("Error: Command timed out after 9s")) == ("ambiguous", "")
    assert tl.rules_alone(record("Error: zzqx")) == ("ambiguous", tl.OPEN)
