# ruff: noqa: E501
"""Round 11 of the wide rules: test13 (tuned on after its one evaluation). The general causes
of its mistakes (and two kinds it gave none): PowerShell's wrapper around a native program's
first stderr line when that line is progress, not an error (toolchains.py); a suite's own
`All tests passed` as the last line (words.py); git's merge conflicts, a file not found by a
search tool and a test's timed-out assertion as fixable words (toolchains.py); AWS's
validation code as fixable evidence and Azure's quota message over its 409 (services.py); a
bare `403 Forbidden` from GitHub, which GitHub also sends for rate limits, and a missing path
that the program built from its own location (classify.py). Expected kinds are the corpus
labels, except where `ambiguous` is named as the answer to evidence that disagrees or a text
that cannot tell. (Four test13 successes that only the reading call shows are documented
exceptions in test_toolerr_wide_agents.py.)"""

from __future__ import annotations

import pytest
from corpus_records import TUNING_SPLITS, records_by_id
from round_checks import check_cause, check_linear, check_undetected_success

from exactserve.toolerr.wide import classify_wide, judge

RECORDS = records_by_id(TUNING_SPLITS)

# Successes formerly detected: cargo clippy's warnings through PowerShell (`cargo :
# Checking tokio ...` wrapped as a NativeCommandError, then the build's output goes on), and
# bash's expected test output that ends `All tests passed` after a deliberate syntax error
SUCCESSES = ["t13-a2a-rs-clippy-warnings-powershell", "t13-bash-posix2-tests-passed"]

# (corpus id, wide rule, the rules' kind)
CASES = [
    # Azure's quota message outranks its 409 (formerly fixable)
    ("t13-neonkube-azure-core-quota", "wide-line", "unrecoverable"),
    # git's conflicts: fixable (formerly the learned opinion's) ...
    ("t13-packagekit-rebase-conflict", "wide-line", "fixable"),
    # ... and against `API key` in the commit's subject: they disagree (formerly unrecoverable)
    ("t13-agentforge-cherry-pick-conflict", "wide-exit", "ambiguous"),
    # AWS's `(ValidationError)` against `credential` in its message (formerly unrecoverable)
    ("t13-tack-iam-getuser-validation", "wide-line", "ambiguous"),
    # a bare `403 Forbidden` from GitHub: a refusal or its rate limit (formerly unrecoverable)
    ("t13-databricks-cli-labs-github-403", "wide-line", "ambiguous"),
    # a missing `scripts/../output/chunks.json`: the server's own path (formerly fixable)
    ("t13-llmmcpeval-ragindex", "wide-json", "ambiguous"),
    # a file the call named that is not there, a test's assertion that timed out: fixable
    # (formerly without a kind)
    ("t13-auto-code-rover-file-not-found", "wide-sentence", "fixable"),
    ("t13-playwright-tobevisible-timeout", "wide-line", "fixable"),
    # look-alikes kept: a wrapped stderr line that is a failure, GitHub's 403s that say what
    # was refused, AWS's validation code alone, a pass verdict before a crash at exit
    ("t13-vollcrypt-napi-build-rust-errors", "wide-diagnostic", "fixable"),
    ("t9-exp-frontend-mysql1045", "wide-exit", "unrecoverable"),
    ("t10-actions-gh-pages-push-403", "wide-exit", "unrecoverable"),
    ("t3-judges-action-601", "wide-line", "unrecoverable"),
    ("t10-boto3-batchwrite-duplicates", "wide-line", "fixable"),
    ("t4-matterport3dsim-97", "wide-diagnostic", "ambiguous"),
]


@pytest.mark.parametrize("record_id", SUCCESSES)
def test_successes_stay_undetected(record_id):
    check_undetected_success(RECORDS[record_id])


@pytest.mark.parametrize(("record_id", "rule", "kind"), CASES)
def test_general_causes_of_test13_mistakes(record_id, rule, kind):
    check_cause(RECORDS[record_id], rule, kind)


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        # a 403 Forbidden from anyone else, or with a reason, stays unrecoverable
        (
            "Error: request to https://registry.example.com/pkg failed: 403 Forbidden",
            "unrecoverable",
        ),
        (
            "Error: github request failed: 403 Forbidden: Resource not accessible by integration",
            "unrecoverable",
        ),
        (
            "Error: github request failed: 403 Forbidden\nPermission to o/r.git denied to bot.",
            "unrecoverable",
        ),
        # GitHub's rate limit with its 403 stays transient
        ("Error: github request failed: 403 Forbidden: API rate limit exceeded", "transient"),
        # a 409 without a quota stays fixable
        (
            "Azure.RequestFailedException: 'The resource is busy.'\nStatus: 409 (Conflict)",
            "fixable",
        ),
        # a missing path that the call climbed to stays fixable
        ("cat: ../../src/app.ts: No such file or directory", "fixable"),
        # ... one that climbs out of a named folder may be the program's own: unsure
        ("Error: ENOENT: no such file or directory, open '/repo/src/../lib/x.js'", "ambiguous"),
        # git's conflicts and AWS's validation code alone: fixable
        ("CONFLICT (content): Merge conflict in src/main.py", "fixable"),
        (
            "An error occurred (ValidationException) when calling the Query operation: bad key",
            "fixable",
        ),
    ],
)
def test_kinds_and_their_precedence(text, kind):
    assert classify_wide(text)[0] == kind


@pytest.mark.parametrize(
    "text",
    [
        # a wrapped stderr line that names a failure is the record's error
        "cargo : error: could not find `Cargo.toml` in `C:\\x` or any parent directory\n"
        "At line:1 char:1\n+ cargo build\n+ ~~~~~~~~~~~\n"
        "    + CategoryInfo          : NotSpecified: (error: could no...rent directory:String) [], RemoteException\n"
        "    + FullyQualifiedErrorId : NativeCommandError\n \n    more\n    lines\n",
        # a pass verdict that a crash follows
        "All tests passed (12 assertions in 3 test cases)\nSegmentation fault (core dumped)",
    ],
)
def test_failures_that_look_like_the_new_successes_detect(text):
    assert judge(text, None) is not None


def test_the_new_patterns_stay_linear_on_adversarial_lines():
    check_linear(
        (
            "/a" * 50000 + "/.. No such file or directory",
            "All tests passed" + " x" * 50000,
            "403 Forbidden" * 10000 + " github",
            "x : "
            + "a" * 100000
            + "\nAt line:1 char:1\n    + FullyQualifiedErrorId : NativeCommandError",
        )
    )
