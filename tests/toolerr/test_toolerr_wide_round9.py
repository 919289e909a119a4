# ruff: noqa: E501
"""Round 9 of the wide rules: test10 (tuned on after its one evaluation). First the evidence
that puts a kind in doubt (toolerr/wide/conflicts.py: a client-error status against an
authentication class, a withdrawn target or an empty list of choices) and the listing of
class names that is no failure, then the general causes of test10's misses
(toolerr/wide/services.py: JSON error bodies in other APIs' layouts, Go tools' log levels,
argument parsers, validators' and compilers' words), each with corpus records, the precedence
the new shapes keep, and successes that must stay undetected. Expected kinds are the corpus
labels, given by the guide before the rules, except where `ambiguous` is named as the answer
to evidence that disagrees."""

from __future__ import annotations

import pytest
from corpus_records import TUNING_SPLITS, records_by_id, wide_verdict
from round_checks import check_linear, check_undetected_success

from exactserve.toolerr.wide import classify_wide, judge

RECORDS = records_by_id(TUNING_SPLITS)

# Successes that name errors without reporting one (formerly detected, or kept undetected
# against the new shapes).
SUCCESSES = [
    # a script's listing of botocore's exception classes, one bare name a line (formerly a
    # transient `wide-line` on its first name)
    "t10-boto3-static-exceptions-list",
    # a file of eslint's output read back (test data): the linter's `✖ 7 problems (6 errors`
    # verdict is kind evidence only, never a detection
    "t7-errorformat-eslint-in",
    # a JSON result whose `errors` member is a count, not a list of errors
    "t7-pare-1110-mcp",
]

# Definite labels whose evidence disagrees: `ambiguous`, not the status's `fixable`.
# (corpus id, wide rule, kind)
DOUBTS = [
    # litellm's AuthenticationError for a 400 whose body says `API key not valid`
    ("t10-se-toolkit-lab-5-gemini-key-invalid", "wide-line", "ambiguous"),
    # a 404 and a 410 for a model that is unavailable / no longer available
    ("t10-spearfish-openrouter-free-404", "wide-line", "ambiguous"),
    ("t10-thoth-model-410-gone", "wide-line", "ambiguous"),
    # a skill `not found` with an empty list of the available skills
    (
        "t10-figma-eval-6d91b0b6-ef54-439d-9d50-06e79090dce5-gemini_cli-skill-missing",
        "is_error",
        "ambiguous",
    ),
    # a 409 and gcloud's `does not have permission` (labelled ambiguous; formerly fixable)
    ("t5-substratus-runbooks-31", "wide-line", "ambiguous"),
]

# (corpus id, wide rule, kind): the general causes of test10's misses
CASES = [
    # JSON error bodies: GitHub's layout (`message` with `documentation_url`), an `errors`
    # list (JSON:API, Datadog, GraphQL), Okta's `errorCode` with its summary
    ("t10-octokit.rb-ref-not-exist", "wide-json", "fixable"),
    ("t10-github3.py-key-405", "wide-json", "fixable"),  # Method not allowed
    ("t10-octokit.rb-pr-exists", "wide-json", "fixable"),  # Validation Failed
    ("t10-datadog-api-client-python-spans-422", "wide-json", "fixable"),  # is invalid:
    ("t10-datadog-api-client-python-validate-403", "wide-json", "unrecoverable"),  # API key
    ("t10-server-client-python-metadata-query-timelimit", "wide-json", "ambiguous"),
    ("t10-okta-sdk-python-agent-pools-429", "wide-json", "transient"),
    ("t10-okta-sdk-python-apps-expand-malformed", "wide-json", "fixable"),
    ("t10-mastodon.py-account-create-422", "wide-json", "fixable"),  # Validation failed:
    # Go tools' levels: restic's `Fatal: `, goreleaser's `⨯ ... error=`, trivy's `FATAL Error`,
    # logrus's `FATA[0000]` (a permission with no path: unsure)
    ("t10-restic-cat-config-norepo", "wide-line", "fixable"),
    ("t10-goreleaser-403-integration", "wide-line", "unrecoverable"),
    ("t10-trivy-maven-429", "wide-line", "transient"),
    ("t10-nerdctl-rootless-cgroup-dbus", "wide-line", "ambiguous"),
    # argument parsers: argparse under a subcommand, cobra's unknown command
    ("t10-pipx-ambiguous-option", "wide-line", "fixable"),
    ("t10-mcp-gateway-unknown-command-profile", "wide-line", "fixable"),
    # a service's own error code: AWS's `An error occurred (X) when calling`, Azure's `(X) `,
    # a package's `x.exceptions.Name: `, Azure's `InsufficientQuota`
    ("t10-eksctl-update-version-invalid", "wide-line", "fixable"),
    ("t10-boto3-batchwrite-duplicates", "wide-line", "fixable"),
    ("t10-aks-az-authorization-failed", "wide-line", "unrecoverable"),
    ("t10-hvac-already-initialized", "wide-line", "fixable"),
    ("t10-aks-terraform-insufficient-quota", "wide-line", "unrecoverable"),
    # Google API clients' `404 Not found: ` and `403 Access Denied: ` statuses
    ("t10-hang-skinme-bigquery-404-table", "wide-line", "fixable"),
    ("t10-hang-skinme-bigquery-403", "wide-sentence", "unrecoverable"),
    # validators', compilers' and linters' words and shapes
    ("t10-esphome-workshop-content-validation-failed", "wide-line", "fixable"),
    ("t10-yt-shadowing-be-prisma-no-exported-member", "wide-line", "fixable"),
    ("t10-smithian-fold-theory-of-everything-compile-arity-error", "wide-line", "fixable"),
    ("t10-openbookdrive-vite-build-transform-failed", "wide-line", "fixable"),
    ("t10-actionlint-readme-test-yaml", "wide-line", "fixable"),
    ("t10-actionlint-outdated-action", "wide-line", "fixable"),
    ("t8-weed-ai-70", "wide-line", "fixable"),  # `... is invalid: ...` (formerly ambiguous)
    # agents' and MCP servers' results (error flag set)
    ("t10-kubernetes-mcp-server-nodes-top-metrics", "is_error", "unrecoverable"),
    ("t10-openshift-mcp-server-pods-log-containercreating", "is_error", "transient"),
    ("t10-openshift-mcp-server-ssa-invalid-deployment", "is_error", "fixable"),
    ("t10-go-sdk-tools-call-missing-name", "is_error", "fixable"),
    ("t10-sentinel-sibling-errored", "is_error", "transient"),
    ("t10-sdk-python-invalid-tool-name", "is_error", "fixable"),
    ("t10-eksctl-kubelet-authz", "wide-line", "unrecoverable"),  # Authorization error
    # OS conditions: a device path is a system path; ENOSPC of inotify's watcher limit is no
    # full disk (labelled ambiguous; formerly unrecoverable)
    ("t10-kind-dma-heap-denied", "wide-line", "unrecoverable"),
    ("t10-vite-enospc-watchers", "wide-line", "ambiguous"),
    # precedence kept: composer's boilerplate `The package is not available in a stable-enough
    # version` is no unavailable API; a `credential` a 400 was about is no refused credential
    ("dx2-lastautoindex-3", "wide-line", "fixable"),
    ("t10-google-github-actions-auth-refresh-400", "wide-line", "fixable"),
]


@pytest.mark.parametrize("record_id", SUCCESSES)
def test_successes_stay_undetected(record_id):
    check_undetected_success(RECORDS[record_id])


@pytest.mark.parametrize(("record_id", "rule", "kind"), DOUBTS + CASES)
def test_general_causes_of_test10_mistakes_and_misses(record_id, rule, kind):
    failures = wide_verdict(RECORDS[record_id])
    assert failures and (failures[0].rule, failures[0].kind) == (rule, kind), failures


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        # a client-error status alone, or with words the status does not contradict: fixable
        ('Error code: 400 - {"error": {"message": "Invalid value for top_p"}}', "fixable"),
        ("404 Client Error: Not Found for url: https://api.x.io/v1/models/y", "fixable"),
        # ... with an authentication class, a refused key or a withdrawn target: ambiguous
        ("AuthenticationError: Error code: 400 - bad request", "ambiguous"),
        (
            'Error code: 400 - {"message": "API key not valid. Please pass a valid API key."}',
            "ambiguous",
        ),
        ("HTTP 410 Gone: the model 'm-1' is no longer available", "ambiguous"),
        ("404 Not Found: this model is unavailable", "ambiguous"),
        # a status of another kind keeps its kind whatever the words
        ("HTTP 401 Unauthorized: API key not valid", "unrecoverable"),
        ("429 Too Many Requests: model is unavailable", "transient"),
        # an empty list of choices against a missing item; a list with choices stays fixable
        ('Tool "x" not found. Available tools: []', "ambiguous"),
        ('Skill "x" not found. Available skills are: ', "ambiguous"),
        ('Skill "x" not found. Available skills are: a, b', "fixable"),
        ('Tool "x" not found. Available tools:\n- read\n- write', "fixable"),
        # a service's code by the words of its name, when the client's class says nothing
        (
            "botocore.exceptions.ClientError: An error occurred (ValidationException) when calling the X operation: y",
            "fixable",
        ),
        (
            "An error occurred (AccessDeniedException) when calling the X operation: y",
            "unrecoverable",
        ),
        ("mylib.exceptions.InvalidRequest: already initialized", "fixable"),
        ("mylib.exceptions.Forbidden: 1 error occurred", "unrecoverable"),
        # a full disk stays unrecoverable; inotify's limit is not one
        ("Error: ENOSPC: no space left on device, write", "unrecoverable"),
        (
            "Error: ENOSPC: System limit for number of file watchers reached, watch '/a'",
            "ambiguous",
        ),
        ("Error: Module '\"x\"' has no exported member 'Y'", "fixable"),
        ('Error: unknown command "frob" for "tool"', "fixable"),
        ("✖ 2 problems (1 error, 1 warning)", "fixable"),
    ],
)
def test_kinds_and_their_precedence(text, kind):
    assert classify_wide(text)[0] == kind


@pytest.mark.parametrize(
    "text",
    [
        # JSON
        '{"errors": []}',
        '{"data": {"a": 1}, "errors": null}',
        '{"message": "ok", "count": 3}',
        '{"errors": [{"path": "a", "line": 3}]}',  # no error member in the items
        '{"errorCode": "", "errorSummary": ""}',
        # names without a report: a listing of classes, a parenthesised remark, levels in prose
        "ValueError\nKeyError\nTypeError\nOSError\n",
        "ValueError\n\nKeyError\nTypeError\nOSError",
        "(Optional) The name of the bucket.\n",
        "FATAL errors are written to stderr; see the log.\n",
        "   • building binaries\n   • done",
        "✖ 3 problems (0 errors, 3 warnings)\n",
        # a YAML location without a linter's rule is a grep line
        "ci.yaml:3:5: branches: [main]\n",
        "ci.yaml:3:5:   - run: echo done [ci]\nci.yaml:4:5: uses: a/b [x]\n",
    ],
)
def test_look_alikes_stay_successes(text):
    assert judge(text, None) is None


@pytest.mark.parametrize(
    "text",
    [
        "KeyError\n",  # one bare class: an exception with no message (ambiguous)
        "ConnectTimeoutError\nConnectionError\nRetry failed: connect timed out\n",
        '{"errors": ["API key required"]}',
        '{"message": "Not Found", "documentation_url": "https://docs.github.com/rest"}',
        "FATA[0000] failed to create shim task\n",
        "pipx run: error: ambiguous option: --py could match --python\n",
        "❌ Markdown linting failed\n\nREADME.md:10: MD013/line-too-long\n",
        "(AuthorizationFailed) The client 'x' does not have authorization\n",
    ],
)
def test_new_shapes_detect(text):
    assert judge(text, None) is not None


def test_the_new_patterns_stay_linear_on_adversarial_lines():
    check_linear(
        (
            "(" + "Ab" * 50000,
            "a.yaml:1:1: " + "x [" * 30000,
            "   ⨯ " + "a " * 50000,
            "❌ Abc" + " abc" * 30000,
            "404 Not" + " found" * 30000,
            "Skill not found. Available " + "skills " * 30000,
            "x" + " x" * 50000 + ": error: ",
        )
    )
