# ruff: noqa: E501
"""Round 10 of the wide rules: test11 and test12 (tuned on after their one evaluation). The
general causes of their mistakes (toolerr/wide/tool_faults.py, conflicts.py, general.py): a code
error inside a tool's run or a client's validation of a tool, a lookup's answer that a program
is absent, a JSON run record whose failed state says nothing more, a harness's refusal of a
call's form that says how to make it, a 404 of a server's own request under a JSON-RPC internal
error, a 404 for a resource not shared with the caller, a class named for a service's bad
answer, a failed test whose error is a refused login, and words of rights the caller lacks.
Each with corpus records, the precedence kept, and look-alikes. Expected kinds are the corpus
labels, given by the guide before the rules, except where `ambiguous` is named as the answer
to evidence that disagrees or a text that cannot tell."""

from __future__ import annotations

import pytest
from corpus_records import TUNING_SPLITS, records_by_id
from round_checks import check_cause, check_linear, check_undetected_success

from exactserve.toolerr.wide import classify_wide, judge

RECORDS = records_by_id(TUNING_SPLITS)

# Successes formerly detected: a Playwright `.last-run.json` read whole (`"status":
# "failed"` with only a list of test ids beside it: nothing said of this call)
SUCCESSES = ["t12-aerovault-last-run-failed"]

# (corpus id, wide rule, kind): definite labels whose text cannot tell, or whose evidence
# disagrees: `ambiguous` rather than the former wrong kind
DOUBTS = [
    # a code error while a client validated a tool, or while a server ran one, with no word
    # of the call's arguments: the tool's own code or the call (formerly fixable)
    ("t12-elasticsearch-mcp-validate-tool-typeerror", "wide-line", "ambiguous"),
    ("t12-letta-search-memory-compile-typeerror", "wide-line", "ambiguous"),
    # zsh's `which` answers `composer not found`: not installed, not mistyped (formerly fixable)
    ("t12-w2t91-composer-php-not-found", "wide-exit", "ambiguous"),
    # a 404 under -32603 with no URL: a route of the server's configuration, or the call's
    ("t11-mcp-n8n-workflow-builder-404", "is_error", "ambiguous"),
    ("t9-bitbucket-404-dc", "is_error", "ambiguous"),  # (formerly a documented exception)
    # a 404 whose body says to share the resource with the integration
    ("t11-notionr-object-not-found", "wide-json", "ambiguous"),
    # a failed test whose error is a refused login (formerly fixable by `failed tests`)
    ("t12-coiled-benchmarks-snowflake-pytest", "wide-tests", "ambiguous"),
]

# (corpus id, wide rule, kind): kinds the rules now give
CASES = [
    # Claude Code's harness refuses a call's form and says how (formerly transient: its advice
    # names `rate limiting` as a reason for a delay)
    ("t12-w2t86-blocked-sleep", "wide-line", "fixable"),
    # `InvalidResponseException`: the service's answer, not the call; `not authorized to`
    ("t12-google-maps-ruby-request-denied", "wide-line", "unrecoverable"),
    # rights the caller lacks (formerly ambiguous)
    ("t12-flutter-bg-geo-firestore-denied", "wide-line", "unrecoverable"),
    ("t12-supabase-pg-dump-permission", "wide-line", "unrecoverable"),
    ("t12-primo-server-supabase-admin-role", "wide-line", "unrecoverable"),
    ("t12-storj-earnings-readonly-db", "wide-line", "unrecoverable"),
    # precedence kept: a 404 under -32603 that shows the URL the call chose stays fixable; a
    # shell's `command not found` stays fixable (the guide: a command the agent typed)
    ("t3-github-mcp-209", "wide-line", "fixable"),
    ("t9-jgive-campaign-donation-node127", "is_error", "fixable"),
    ("t11-pizzanatweb-compose-notfound", "wide-line", "fixable"),
    # a failed test run with no refused login stays fixable
    ("t4-ccexport-a", "wide-tests", "fixable"),
]


@pytest.mark.parametrize("record_id", SUCCESSES)
def test_successes_stay_undetected(record_id):
    check_undetected_success(RECORDS[record_id])


@pytest.mark.parametrize(("record_id", "rule", "kind"), DOUBTS + CASES)
def test_general_causes_of_test11_and_test12_mistakes(record_id, rule, kind):
    check_cause(RECORDS[record_id], rule, kind)


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        # a code error inside a tool's run: ambiguous, unless it names the call's arguments
        (
            "Error executing tool search: AttributeError: 'NoneType' has no attribute 'x'",
            "ambiguous",
        ),
        ("Failed to validate tool x: TypeError: Cannot read properties of undefined", "ambiguous"),
        (
            "Error executing tool search: TypeError: search() got an unexpected keyword argument 'q'",
            "fixable",
        ),
        (
            "Error executing function f: TypeError: f() missing 1 required positional argument",
            "fixable",
        ),
        ("Traceback (most recent call last):\nTypeError: unsupported operand type(s)", "fixable"),
        ("Error executing tool x: ValidationError: 1 validation error for X", "fixable"),
        # a lookup's answers against a missing item the call named
        ("composer not found\nphp not found\n", "ambiguous"),
        ("Error: workflow not found: deploy.yml", "fixable"),
        ('Project "abc" not found', "fixable"),
        # a 404 under an internal error, with and without the URL the call chose
        ("MCP error -32603: API call failed: Request failed with status code 404", "ambiguous"),
        ("MCP error -32603: GET https://api.github.com/repos/a/b: 404 Not Found []", "fixable"),
        ("MCP error -32602: Request failed with status code 404", "fixable"),
        # a 404 for a resource not shared with the caller
        (
            '{"status": 404, "message": "Could not find page x. Make sure it is shared with your integration."}',
            "ambiguous",
        ),
        # the service's bad answer against the call's invalid request
        (
            "Foo::InvalidResponseException: REQUEST_DENIED: not authorized to use this API.",
            "unrecoverable",
        ),
        ("Foo::InvalidRequestException: bad id", "fixable"),
        # a refused login in a failed test; a refused login alone
        (
            "FAILED tests/test_db.py::test_read - DatabaseError: Incorrect username or password was specified.",
            "ambiguous",
        ),
        (
            "250001 (08001): Failed to connect to DB: Incorrect username or password specified.",
            "unrecoverable",
        ),
        # rights the caller lacks; a permission on an unknown path stays unsure
        (
            "pg_dump: error: query failed: ERROR:  permission denied for table users",
            "unrecoverable",
        ),
        ("open /data/x: permission denied", "ambiguous"),
        ("Failed to run sql query: must be owner of table users", "unrecoverable"),
        ("sqlite3.OperationalError: attempt to write a readonly database", "unrecoverable"),
        # the harness refuses the call's form and says how to make it
        (
            "<tool_use_error>Blocked: sleep 5 followed by: ls. Run it with run_in_background.</tool_use_error>",
            "fixable",
        ),
    ],
)
def test_kinds_and_their_precedence(text, kind):
    assert classify_wide(text)[0] == kind


@pytest.mark.parametrize(
    "text",
    [
        '{"status": "failed", "failedTests": ["a-1", "a-2"]}',
        '{"state": "failure", "steps": [1, 2]}',
    ],
)
def test_run_records_stay_successes(text):
    assert judge(text, None) is None


@pytest.mark.parametrize(
    "text",
    [
        '{"status": "failed", "message": "Paper 1 not found"}',
        '{"result": "failure", "failure": "No terminal available"}',
    ],
)
def test_failed_states_that_say_why_detect(text):
    assert judge(text, None) is not None


def test_the_new_patterns_stay_linear_on_adversarial_lines():
    check_linear(
        (
            "a" * 100000 + " not found",
            "composer not found\n" + "x" * 100000 + " not found",
            "Error executing tool x: TypeError: " + "argument " * 20000,
            "MCP error -32603: " + "404 " * 30000,
        )
    )
