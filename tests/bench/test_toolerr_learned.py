"""bench/toolerr_learned.py's pieces on small made-up inputs: the model learns a separable
problem, abstains below the kind confidence, and the scores count as docs/TOOLERR.md says."""

from __future__ import annotations

import numpy as np

from bench import toolerr_learned as tl


def test_training_separates_words_it_has_seen():
    texts = ["rate limit exceeded", "file not found", "permission denied", "all tests passed"]
    labels = ["transient", "fixable", "unrecoverable", "success"]
    x = np.stack([tl.features(t) for t in texts * 5])
    y = np.array([tl.LABELS.index(lab) for lab in labels * 5])
    p = tl.probabilities(tl.train(x, y), np.stack([tl.features(t) for t in texts]))
    assert [tl.LABELS[i] for i in p.argmax(axis=1)] == labels


def test_a_kind_needs_the_confidence_else_ambiguous():
    assert tl.model_kind(np.array([0.0, 0.05, 0.95, 0.0, 0.0])) == "fixable"
    assert tl.model_kind(np.array([0.5, 0.02, 0.48, 0.0, 0.0])) == "fixable"  # 0.96 of 0.5
    assert tl.model_kind(np.array([0.0, 0.2, 0.8, 0.0, 0.0])) == "ambiguous"


def test_score_counts_correct_wrong_and_detected_successes():
    labels = ["fixable", "fixable", "transient", "unrecoverable", "success", "success"]
    predicted = ["fixable", "transient", "ambiguous", "none", "ambiguous", "none"]
    assert tl.score(labels, predicted) == (
        "correct  25.0%  wrong 25.0%  ( 1)  successes detected  1 of 2"
    )


def test_features_are_lower_cased_words_and_pairs_hashed_stably():
    row = tl.features("Connection RESET by peer")
    assert row.sum() == 7  # four words, three pairs (no collision among them)
    assert np.array_equal(row, tl.features("connection reset BY PEER"))
