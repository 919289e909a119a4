"""The wide rules' learned model (toolerr/wide/opinion.py): asked only where the rules leave
a question open (the kind of a detected failure with no evidence of one; whether a result
with no failure shape is a failure), it answers only when confident, says so in the
evidence, and answers the same in every process. Its arithmetic against NumPy's on every
corpus window; its place in the precedence with stand-ins."""

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
from exactserve.toolerr.messages import Message, ToolCall
from exactserve.toolerr.request import process
from exactserve.toolerr.wide import classify as classify_module
from exactserve.toolerr.wide import judge
from exactserve.toolerr.wide import opinion as o
from exactserve.toolerr.wide import rules as rules_module
from exactserve.toolerr.wide.shapes import evidence_window, read_shape

WINDOWS = [
    evidence_window(r["text"], read_shape(r["text"]))
    for split in labelled_splits()
    for r in read_split(split)
]
S = o.SCALE


def test_words_are_ascii_alphanumeric_runs_lower_cased():
    assert o.words("Error: ENOENT, open 'a/b.txt' (HTTP 404)") == {
        b"error", b"enoent", b"open", b"a", b"b", b"txt", b"http", b"404",
    }  # fmt: skip
    assert o.words("rate_limit_exceeded\tRétry-After") == {
        b"rate_limit_exceeded", "rétry".encode(), b"after",
    }  # fmt: skip
    assert o.words("") == set()
    assert o.words("a\ud800b") == {"a\ud800b".encode("utf-8", "surrogatepass")}  # no error


def test_packed_scores_add_as_five_signed_integers():
    values = [(5, -7, 0, 2**26, -(2**26)), (-1, -1, -1, -1, -1), (0, 3, -(2**20), 9, 1)]
    total = sum(map(o.pack, values))
    assert o.unpack(total) == tuple(map(sum, zip(*values, strict=True)))
    many = [(-(2**26) + 1, 2**26 - 1, -3, 0, 1)] * 200_000
    assert o.unpack(sum(map(o.pack, many))) == tuple(200_000 * v for v in many[0])


def test_exp_is_close_to_the_platforms_and_built_from_basic_operations():
    for x in [0.0, -1e-9, -0.25, -0.5, -0.75, -1.0, -3.3, -4.0, -10.0, -25.0, -40.0]:
        assert abs(o._exp(x) - math.exp(x)) <= 1e-12 * math.exp(x), x
    assert o._exp(-40.001) == 0.0 and o._exp(-700.0) == 0.0


def test_the_confidence_bounds_the_kind_among_the_three_and_success_among_the_five():
    model = o.Model({b"a": o.pack((0, 0, 3 * S, 0, 0)), b"b": o.pack((0, 0, S // 10, 0, 0))}, 0)
    # fixable at 3: 1 / (1 + 2 e^-3) = 0.909 < 0.95; at 3.1 still below; at 4 above
    assert o.judge_kind(model.scores({b"a"})) is None
    assert o.judge_kind(model.scores({b"a", b"b"})) is None
    model.bias = o.pack((0, 0, S, 0, 0))
    kind, probability = o.judge_kind(model.scores({b"a"}))
    assert kind == "fixable" and abs(probability - 1 / (1 + 2 * math.exp(-4.0))) < 1e-12
    assert o.judge_kind(model.scores({b"unknown"})) is None  # bias alone: 0.58
    # a learned failure also needs success at most 1% among the five: e^4 / (e^4 + 4) = 0.93
    assert o.judge_failure(model.scores({b"a"})) is None
    model.bias = o.pack((0, 0, 3 * S, 0, 0))  # fixable at 6: success at 1 / (e^6 + 4) = 0.0025
    assert o.judge_failure(model.scores({b"a"}))[0] == "fixable"
    model.bias = o.pack((2 * S, 0, 3 * S, 0, 0))  # success at e^2 / (e^6 + e^2 + 3) = 0.018
    assert o.judge_failure(model.scores({b"a"})) is None
    assert o.judge_kind(model.scores({b"a"}))[0] == "fixable"  # (the kind alone is confident)


def test_the_integer_test_before_the_exps_never_changes_an_answer():
    # success at 0 beside four labels at d (the most the others can weigh for their top
    # score d): P(success) = 1 / (1 + 4 e^d) <= 0.01 only from d = ln(99 / 4) = 3.2088 on,
    # and the integer test rejects only below 3.2
    rejected = 0
    for d in range(int(2.9 * S), int(3.3 * S)):
        scores = (0, d, d, d, d)
        if max(scores[1:]) - scores[0] < o._CLEARLY_PROBABLE:
            assert o.probabilities(scores)[0] > o.RESCUE_SUCCESS, d
            rejected += 1
    assert rejected == o._CLEARLY_PROBABLE - int(2.9 * S)
    # a kind at d above the second (the third far below): P = 1 / (1 + e^-d) >= 0.95 only
    # from d = ln 19 = 2.9444 on, and the integer test rejects only below 2.94
    rejected = 0
    for d in range(int(2.8 * S), int(3.0 * S)):
        scores = (0, d, 0, -100 * S, 0)
        if d < o._CLEARLY_SHARED:
            assert o.probabilities(scores[1:4])[0] < o.CONFIDENCE, d
            assert o.judge_kind(scores) is None
            rejected += 1
        else:
            assert (o.judge_kind(scores) is not None) == (d >= 2.9444 * S), d
    assert rejected == o._CLEARLY_SHARED - int(2.8 * S)


def test_the_pure_model_agrees_with_numpy_on_every_corpus_window():
    model = o._model()
    vocab = sorted(model.weights)
    index = {word: i for i, word in enumerate(vocab)}
    w = np.array([o.unpack(model.weights[word]) for word in vocab], dtype=np.int64)
    bias = np.array(o.unpack(model.bias), dtype=np.int64)
    checked = kinds = failures = 0
    for window in WINDOWS:
        x = np.zeros(len(vocab), dtype=np.int64)
        x[[index[word] for word in o.words(window) if word in index]] = 1
        z = x @ w + bias  # integers: exact
        assert model.scores(o.words(window)) == tuple(int(v) for v in z)
        p5 = np.exp((z - z.max()) / S)
        p5 /= p5.sum()
        p3 = np.exp((z[1:4] - z[1:4].max()) / S)
        p3 /= p3.sum()
        if abs(p3.max() - o.CONFIDENCE) < 1e-9 or abs(p5[0] - o.RESCUE_SUCCESS) < 1e-9:
            continue  # the two exps may round across a bound
        kind = o.KINDS[int(p3.argmax())] if p3.max() >= o.CONFIDENCE else None
        learned = o.learned_kind(window)
        assert (learned and learned[0]) == kind, window[:200]
        if learned:
            assert abs(learned[1] - p3.max()) < 1e-12
            kinds += 1
        failure = kind if p5[0] <= o.RESCUE_SUCCESS else None
        learned = o.learned_failure(window)
        assert (learned and learned[0]) == failure, window[:200]
        failures += learned is not None
        checked += 1
    assert checked >= len(WINDOWS) - 2 and kinds > 100 and failures > 100


def test_the_answers_do_not_depend_on_the_hash_seed():
    script = (
        "import json, sys\n"
        "from exactserve.toolerr.wide.opinion import learned_failure, learned_kind\n"
        "windows = json.load(sys.stdin)\n"
        "print(json.dumps([(learned_kind(w), learned_failure(w)) for w in windows]))\n"
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
    here = [(o.learned_kind(w), o.learned_failure(w)) for w in WINDOWS]
    assert json.loads(answers[0]) == json.loads(json.dumps(here))


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


@pytest.fixture
def always_failed(monkeypatch):
    """A stand-in for the learned detector that always says `transient` at 0.99."""
    monkeypatch.setattr(rules_module, "learned_failure", lambda text: ("transient", 0.99))


def test_the_learned_failure_is_asked_only_where_no_failure_shape_was_found(always_failed):
    assert judge("the build is green, 3 files changed", None) == (
        "wide-learned",
        "transient",
        "no failure shape; learned transient at 0.99",
    )
    # the structure decided: an exit code of 0, a JSON body without an error member
    assert judge("Exit code 0\nfine", None) is None
    assert judge("Exit code: 0\nError: x", None) is None
    assert judge('{"error": null, "data": [1]}', None) is None
    # a text that opens like a document (a read file)
    assert judge("# Notes\n\nsome text", None) is None
    # a failure a rule detected keeps the rule's detection and kind
    assert judge("Error: ENOENT: no such file or directory, open 'a.json'", None) == (
        "wide-line",
        "fixable",
        "line 'Error:'; condition 'ENOENT'",
    )


@pytest.mark.parametrize(
    "record_id", ["t12-attio-composio-invalid-operator", "t13-copilot-sdk-permission-denied"]
)
def test_the_shipped_model_detects_failures_no_rule_shapes(record_id):
    record = next(r for s in labelled_splits() for r in read_split(s) if r["id"] == record_id)
    verdict = judge(record["text"], None)
    assert verdict.rule == "wide-learned" and verdict.kind == record["label"]
    assert verdict.evidence.startswith(f"no failure shape; learned {record['label']} at ")


def test_the_shipped_model_passes_plain_successes():
    for text in ("3 passed in 0.12s", "Wrote 12 lines to src/app.py", "On branch main\n", ""):
        assert judge(text, None) is None, text


def _conversation(tool_name: str, text: str) -> tuple[Message, ...]:
    call = ToolCall("c1", tool_name, "{}", 0)
    return (
        Message("user", "go"),
        Message("assistant", None, tool_calls=(call,)),
        Message("tool", text, tool_call_id="c1"),
    )


@pytest.mark.parametrize(
    "tool_name", ["Read", "read_file", "read", "mcp__filesystem__read_text_file", "ReadFile"]
)
def test_a_file_readers_result_is_not_put_to_the_learned_detector(always_failed, tool_name):
    report = "src/app.ts\n  63:21  error  Unexpected any  @typescript-eslint/no-explicit-any"
    assert detect(_conversation(tool_name, report), "", "wide") == ()
    # the rules still read it: a read tool's own failure is a failure
    missing = "Error: ENOENT: no such file or directory, open 'a.json'"
    assert [f.kind for f in detect(_conversation(tool_name, missing), "", "wide")] == ["fixable"]


@pytest.mark.parametrize("tool_name", ["Bash", "run_shell_command", "edit", "unknown_tool"])
def test_other_tools_results_are_put_to_it(always_failed, tool_name):
    report = "src/app.ts\n  63:21  error  Unexpected any  @typescript-eslint/no-explicit-any"
    failures = detect(_conversation(tool_name, report), "", "wide")
    assert [(f.rule, f.kind) for f in failures] == [("wide-learned", "transient")]


def test_reads_files_names():
    assert all(
        map(rules_module.reads_files, ["Read", "read_many_files", "github.get_file_contents"])
    )
    assert not any(map(rules_module.reads_files, ["Bash", "view", "", "read_logs", "Write"]))


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
    assert data["scale"] == o.SCALE
    assert len(data["bias"]) == 5 and all(len(w) == 5 for w in data["weights"].values())
    assert all(isinstance(v, int) and abs(v) < 2**27 for w in data["weights"].values() for v in w)
