# ruff: noqa: E501
"""The general shapes of the wide rule set (toolerr/wide/general.py): report
lines with a prefix, failure sentences at the edges, terminal lines, the exception class's
own name, and the successes they must leave alone. Cases are corpus records (test3 and
dev_extra2 became tuning data; test4 to test6 did after their one evaluation), each with its
provenance; expected kinds are the corpus labels, given by the guide before the rules."""

from __future__ import annotations

import time

import pytest
from corpus_records import records_by_id, rules_kind

from exactserve.toolerr.wide import classify_wide, judge

RECORDS = records_by_id(("dev", "dev_extra", "dev_extra2", "test2", "test3"))

# (corpus id, wide rule, kind)
POSITIVES = [
    # a prefix before the report: a phrase ending in `error:`, a program name, a glyph, a
    # localized `错误:`, Ruby's `E: A::B:`, Node's inspected `{ Error:`, gRPC's `rpc error:`
    ("t3-qwenpaw-747", "wide-line", "transient"),  # Unknown agent error: RateLimitError: ... 429
    ("t3-vim-fugitive-497", "wide-line", "fixable"),  # fugitive: error: pathspec ... did not match
    ("t3-connectonion-1321", "wide-line", "fixable"),  # ✗ Error: Tool 'add' ... unknown tools
    ("t3-mcp-chrome-139", "wide-line", "ambiguous"),  # 错误: Error calling tool: Request timed out
    ("t3-judges-action-601", "wide-line", "unrecoverable"),  # E: Octokit::Forbidden: ... 403
    ("t3-coinbase-pro-node-97", "wide-line", "transient"),  # { Error: socket hang up
    ("t3-grpc-go-4514", "wide-line", "transient"),  # rpc error: code = Unavailable
    ("t3-grpc-26731", "wide-line", "transient"),  # <_InactiveRpcError of RPC ... UNAVAILABLE
    ("t3-org-stats-71", "wide-line", "unrecoverable"),  # GET https://...: 401 Bad credentials
    ("t3-gitgraber-32", "wide-line", "unrecoverable"),  # [i] Status code : 401
    (
        "t3-play-with-docker-422",
        "wide-line",
        "transient",
    ),  # error pulling image ...: toomanyrequests
    (
        "t3-claude-quickstarts-229",
        "wide-line",
        "unrecoverable",
    ),  # {'type': 'invalid_request_error', ... credit balance
    ("t3-openv0-2", "wide-line", "fixable"),  # EISDIR: illegal operation on a directory
    ("dx2-poetry-4014", "wide-line", "fixable"),  # a bare `  SolverProblemError` line
    (
        "dx2-dstack-488",
        "wide-line",
        "transient",
    ),  # google.api_core.exceptions.ServiceUnavailable: 503
    (
        "dx2-composer-11573",
        "wide-line",
        "transient",
    ),  # In CurlDownloader.php line 365: / curl error 28
    ("dx2-phpxmlrpc-87", "wide-line", "transient"),  # [Composer\Downloader\TransportException]
    ("dx2-redis-8736-b", "wide-line", "unrecoverable"),  # (error) NOAUTH Authentication required.
    (
        "dx2-cf-docs-67",
        "wide-line",
        "unrecoverable",
    ),  # client.rb:339:in `...': Access Denied (AWS::S3::...)
    ("dx2-composer-878", "wide-line", "fixable"),  # Your requirements could not be solved ...
    # failure sentences at the edges, terminal lines
    ("t3-terasology-4990", "wide-sentence", "transient"),  # Gradle sync failed: ... status code 502
    (
        "t3-smolagents-2072",
        "wide-sentence",
        "fixable",
    ),  # ... failed at line ... due to: IndexError:
    ("t3-stm32-template-1", "wide-diagnostic", "fixable"),  # make: *** No rule to make target
    ("t3-freqvectorsedit-12", "wide-diagnostic", "fixable"),  # ./x.sh: line 7: syntax error ...
    (
        "t3-pachyderm-499",
        "wide-diagnostic",
        "transient",
    ),  # `# ...` echo, then make: *** ... Error 1
    ("t3-clpatchmatch-5", "wide-diagnostic", "ambiguous"),  # Segmentation fault (core dumped)
    ("t3-kilo-150", "wide-diagnostic", "ambiguous"),  # Tool execution aborted
    ("t3-cmdchallenge-31", "wide-diagnostic", "ambiguous"),  # Internal Server Error
    # exit codes in other spellings, JSON states, test runners at the start
    ("t3-ironfish-570", "wide-exit", "ambiguous"),  # miner exited with code 137
    ("t3-copilot-cli-266", "wide-exit", "ambiguous"),  # <exited with exit code MODULE_NOT_FOUND>
    ("t3-py-72", "wide-line", "fixable"),  # pytest's `E   AssertionError:` under FAILURES
    ("t3-jest-3690", "wide-tests", "fixable"),  # jest's ` FAIL  path`
    # kinds from general evidence: the class's own name, quotas, credentials, Go and gRPC
    ("t3-smolagents-640", "wide-line", "fixable"),  # InterpreterError (class name words)
    ("t3-kubectl-720", "wide-line", "transient"),  # TLS handshake timeout
    ("t3-kops-1526", "wide-line", "transient"),  # dial tcp ...: i/o timeout
    ("t3-terraform-aws-vpc-6", "wide-line", "unrecoverable"),  # no valid credential sources
    ("dx2-fastai-course-v3-165", "wide-line", "unrecoverable"),  # Quota 'GPUS_ALL_REGIONS' exceeded
    ("dx2-aws-cli-8506", "wide-line", "unrecoverable"),  # (AccessDenied) ... Access Denied
    ("dx2-google-cloud-go-1469", "wide-line", "transient"),  # googleapi: Error 503
]

# Successes that look like failures: none may be detected.
NEGATIVES = [
    "t3-cincinnati-934",  # grep of cargo verdicts: a passing verdict follows the failed one
    "dx2-blender-dsc-28",  # pip's resolver notice `ERROR: pip's dependency ...` after an install that worked
    "dx2-perf-analyzer-330",  # the same notice
    "dx2-falco-516",  # `kubectl get pods` listing pods in CrashLoopBackOff
    "dx2-mypy-12302",  # mypy notes
    "dx2-dokku-redis-79",  # `redis-cli --help` with `Usage:`
    "dx2-ollama-11401-list",  # `ollama list`
    "dx2-bun-1830-npm",  # npm WARN lines of an install that worked
]


def _verdict(record: dict):
    return judge(record["text"], "is_error" if record["is_error"] else None)


@pytest.mark.parametrize(("record_id", "rule", "kind"), POSITIVES, ids=[p[0] for p in POSITIVES])
def test_general_failure_shapes(record_id, rule, kind):
    record = RECORDS[record_id]
    assert record["label"] == kind, "the case must agree with the corpus label"
    assert _verdict(record)[:2] == (rule, kind)


@pytest.mark.parametrize("record_id", NEGATIVES)
def test_successes_with_failure_words_stay_successes(record_id):
    record = RECORDS[record_id]
    assert record["label"] == "success"
    assert _verdict(record) is None


@pytest.mark.parametrize(
    ("text", "kind", "evidence"),
    [
        # the class's own words decide when the class is not a known one
        ("InterpreterError: not allowed", "fixable", "exception class InterpreterError"),
        ("Octokit::Forbidden: GET /x", "unrecoverable", "exception class Forbidden"),
        (
            "java.net.SocketTimeoutException: x",
            "transient",
            "exception class SocketTimeoutException",
        ),
        # a class named mid-line, after a failure sentence
        (
            "Code execution failed due to: IndexError: list index out of range",
            "fixable",
            "exception IndexError",
        ),
        # a class whose words point two ways gives nothing
        ("InvalidAuthError: x", "ambiguous", "no evidence of a kind"),
        # a plan quota over a rate-limit class; a credential word over the exception class
        ("Quota 'CPUS' exceeded. Limit: 8.0", "unrecoverable", 'quota "Quota \'"'),
        ("ValueError: no valid credential sources", "fixable", "exception ValueError"),
        ("Error: no valid credential sources found", "unrecoverable", "words 'redential'"),
        # gRPC and Go network conditions; an unsure refusal next to them gives nothing
        ("rpc error: code = Unavailable desc =", "transient", "condition '= Unavailable'"),
        (
            "status = StatusCode.UNAVAILABLE details = failed to connect to all addresses",
            "ambiguous",
            "conditions 'UNAVAILABLE' and 'failed to connect to all addresses'",
        ),
        (
            "Unable to connect to the server: dial tcp 1.2.3.4:443: i/o timeout",
            "transient",
            "condition 'i/o timeout'",
        ),
        # statuses in more client spellings
        ("[!] Unexpected HTTP response 401", "unrecoverable", "HTTP 401"),
        ("googleapi: Error 503: Backend Error, backendError", "transient", "HTTP 503"),
        ("Unexpected response code: 401", "unrecoverable", "HTTP 401"),
        # a rate limit in any spelling; a quota still wins
        (
            "toomanyrequests: You have reached your pull rate limit.",
            "transient",
            "rate limit 'ate limit'",
        ),
    ],
)
def test_general_precedence(text, kind, evidence):
    assert classify_wide(text) == (kind, evidence)


@pytest.mark.parametrize(
    "text",
    [
        "test result: FAILED. 1 passed; 1 failed\ntest result: ok. 2 passed; 0 failed",  # a grep
        "ERROR: pip's dependency resolver does not currently take into account all the packages that are installed.\nx 1.0 requires y, which is not installed.",
        "Success: no issues found in 4 source files",
        "# notes\n\nmake: a tool",  # a heading: make's failure line is needed, not its name
    ],
)
def test_general_shapes_leave_successes_alone(text):
    assert judge(text, None) is None


def test_json_states_and_test_verdicts_at_the_start():
    # t3-explyt-32: a JSON `result` of "failure" is one (its kind is not in the text)
    verdict = judge(RECORDS["t3-explyt-32"]["text"], None)
    assert (verdict.rule, rules_kind(verdict)) == ("wide-json", "ambiguous")
    assert judge('{"status": "ok", "result": "failure rate 0.1"}', None) is None
    # t3-pidusage-162: pnpm's ` ERR_PNPM_FETCH_404  GET ...: Not Found - 404` line is a
    # report (the status after its reason is not read: left ambiguous)
    verdict = judge(RECORDS["t3-pidusage-162"]["text"], None)
    assert (verdict.rule, rules_kind(verdict)) == ("wide-line", "ambiguous")
    # pytest's FAILURES header among the first lines, before any `E` line
    head = "============ FAILURES ============\n____ test_x ____\n\n    def test_x():"
    assert judge(head, None)[0] == "wide-tests"


def test_the_new_line_patterns_stay_linear_on_adversarial_lines():
    # long lines shaped like the new patterns' prefixes, with no ending to match
    for line in (
        "Abc " * 20000,
        "a." * 50000 + "B",
        "[" + "A\\" * 30000,
        "GET http://" + "x" * 100000,
        "Abc abc could " * 10000,
    ):
        start = time.perf_counter()
        judge(line + "\n" + line, None)
        assert time.perf_counter() - start < 0.5
