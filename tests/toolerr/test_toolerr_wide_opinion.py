"""The wide rules' learned opinion (toolerr/wide/opinion.py): asked only where the rules
detected a failure and found no evidence of its kind, it gives a kind only when confident,
says so in the evidence, and answers the same in every process. Its arithmetic against
NumPy's on every corpus window; its place in the precedence with a stand-in opinion."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from corpus_records import labelled_splits, read_split

from exactserve.toolerr.detect import detect
from exactserve.toolerr.forms import Options
from exactserve.toolerr.messages import Message
from exactserve.toolerr.request import process
from exactserve.toolerr.wide import classify as classify_module
from exactserve.toolerr.wide import judge
from exactserve.toolerr.wide import opinion as o
from exactserve.toolerr.wide.shapes import evidence_window, read_shape

WINDOWS = [
    evidence_window(r["text"], read_shape(r["text"]))
    for split in labelled_splits()
    for r in read_split(split)
]


def test_words_are_ascii_alphanumeric_runs_lower_cased():
    assert o.words("Error: ENOENT, open 'a/b.txt' (HTTP 404)") == {
        "error", "enoent", "open", "a", "b", "txt", "http", "404",
    }  # fmt: skip
    assert o.words("rate_limit_exceeded\tRétry-After") == {"rate_limit_exceeded", "rétry", "after"}
    assert o.words("") == set()


def test_the_confidence_is_a_bound_on_the_probability_among_the_three_kinds():
    weights = {"a": (0.0, 3.0, 0.0), "b": (0.0, 0.1, 0.0)}
    bias = (0.0, 0.0, 0.0)
    # fixable at 3: 1 / (1 + 2 e^-3) = 0.909 < 0.95; at 3.1 still below; at 4 above
    assert o.opinion({"a"}, weights, bias) is None
    assert o.opinion({"a", "b"}, weights, bias) is None
    kind, probability = o.opinion({"a"}, weights, (0.0, 1.0, 0.0))
    assert kind == "fixable" and probability == 1 / (1 + 2 * math.exp(-4.0))
    assert o.opinion({"unknown"}, weights, (0.0, 1.0, 0.0)) is None  # bias alone: 0.58


def test_the_pure_opinion_agrees_with_numpy_on_every_corpus_window():
    weights, bias = o._model()
    vocab = sorted(weights)
    index = {word: i for i, word in enumerate(vocab)}
    w = np.array([weights[word] for word in vocab])
    checked = given = 0
    for window in WINDOWS:
        x = np.zeros(len(vocab))
        x[[index[word] for word in o.words(window) if word in index]] = 1.0
        z = x @ w + np.array(bias)
        p = np.exp(z - z.max())
        p /= p.sum()
        if abs(p.max() - o.CONFIDENCE) < 1e-9:
            continue  # NumPy's sum order may round across the bound
        learned = o.learned_kind(window)
        expected = o.KINDS[int(p.argmax())] if p.max() >= o.CONFIDENCE else None
        assert (learned and learned[0]) == expected, window[:200]
        if learned:
            assert abs(learned[1] - p.max()) < 1e-12
            given += 1
        checked += 1
    assert checked >= len(WINDOWS) - 2 and given > 100


def test_the_answers_do_not_depend_on_the_hash_seed():
    script = (
        "import json, sys\n"
        "from exactserve.toolerr.wide.opinion import learned_kind\n"
        "windows = json.load(sys.stdin)\n"
        "print(json.dumps([learned_kind(w) for w in windows]))\n"
    )
    answers = []
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", script],
            input=json.dumps(WINDOWS),
            capture_output=True,
            text=True,
            env=env,
            check=True,
        )
        answers.append(done.stdout)
    assert answers[0] == answers[1]
    assert json.loads(answers[0]) == [list(a) if a else None for a in map(o.learned_kind, WINDOWS)]


@pytest.fixture
def always_transient(monkeypatch):
    """A stand-in opinion that always names `transient` at 0.99."""
    monkeypatch.setattr(classify_module, "learned_kind", lambda text: ("transient", 0.99))


def test_asked_only_where_no_rule_gave_evidence_of_a_kind(always_transient):
    # no rule's evidence of a kind: the opinion's, and the evidence says whose
    assert judge("Error: something broke", None) == (
        "wide-line",
        "transient",
        "line 'Error:'; no evidence of a kind; learned transient at 0.99",
    )
    # a kind a rule gave stays
    assert judge("Error: ENOENT: no such file or directory, open 'a.json'", None)[1] == "fixable"
    assert judge("Error: 401 Unauthorized", None)[1] == "unrecoverable"
    # an ambiguous a rule decided stays: the command's own timeout, conflicting words
    assert judge("Error: Command timed out after 120s", None)[1:] == (
        "ambiguous",
        "line 'Error:'; own timeout 'Command timed out'",
    )
    assert judge("Error: invalid API key\nvalidation failed: name is required", None)[1:] == (
        "ambiguous",
        "line 'Error:'; words 'nvalid API key' and 'alidation failed' disagree",
    )
    assert judge("Error: 401 Unauthorized\nHTTP 404 Not Found", None)[1:] == (
        "ambiguous",
        "line 'Error:'; HTTP 401,404 disagree",
    )
    # it never makes a result a failure
    assert judge("total 8\n-rw-r--r-- 1 a a 0 notes.txt\n", None) is None
    assert judge('{"error": null, "data": [1]}', None) is None


def test_the_paper_rules_never_ask_it(always_transient):
    message = Message("tool", "Error: something broke", tool_call_id="c")
    failures = detect((message,), "", "paper")
    assert [(f.rule, f.kind, f.evidence) for f in failures] == [("generic", "ambiguous", None)]


def test_the_header_carries_the_learned_evidence(always_transient):
    body = {
        "model": "m",
        "tool_error_rules": "wide",
        "messages": [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "Error: something broke"},
        ],
    }
    header = json.loads(process(body, "chat", "", Options()).header)
    assert header["failures"] == [
        {
            "message": 2,
            "kind": "transient",
            "rule": "wide-line",
            "evidence": "line 'Error:'; no evidence of a kind; learned transient at 0.99",
        }
    ]


def test_the_shipped_weights_cover_every_labelled_split():
    data = json.loads(o.WEIGHTS_PATH.read_text("utf-8"))
    assert data["trained_on"] == labelled_splits()
    assert len(data["bias"]) == 3 and all(len(w) == 3 for w in data["weights"].values())
