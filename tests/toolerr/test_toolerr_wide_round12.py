# ruff: noqa: E501
"""Round 12 of the wide rules: test14 (tuned on after its one evaluation). The general causes
of its misses, each a format of a widely used tool, SDK, agent or service:

- detection: a raw HTTP response's status line (`HTTP/1.1 403 Forbidden`); a service's error
  with its status (`Google error 503: {...}`, `HTTP error 401: ...`); Terraform's boxed
  diagnostics (`│ Error: ...`); Node's uncaught `error` event (`throw er; // Unhandled 'error'
  event`) and its bare coded error (`Error [EACCES]: ...`); Ansible's ad-hoc result (`host |
  UNREACHABLE! => {`); the AWS SDK for Go v2's `operation error Service: Op, ...`; an MCP
  server's text result wrapped as its structured output (`{"result": "Error: ..."}`); `go
  test`'s `FAIL\tpkg [build failed]` after the `# package` line that opens like a document;
  Claude Code's TaskOutput `<exit_code>N</exit_code>`; Composer's failed script line; edit
  tools' `Target content not found` and Serena's `No matches of search expression found`;
- kinds: a service's message that is more specific than its status (npm's `cannot publish over
  the previously published version` under 403, Terraform's `Error acquiring the state lock`
  under 400, S3's `A conflicting conditional operation is currently in progress` under 409,
  an MCP tool's `has an output schema but` no structured content under -32602); AWS's `Rate
  exceeded`, duckduckgo_search's `Ratelimit`, `Bad gateway`, libcurl's `Timeout was
  reached`, `ESOCKETTIMEDOUT`, yarn's network notice (transient); TLS certificate
  verification failures, Docker's daemon, WSL integration and GPU driver, RubyGems' write
  permissions (unrecoverable); a hook's `denied this tool` and an allow-list's `outside allowed
  paths` (denials); GKE's `insufficient regional quota` (quota); Helm's taken release name,
  `patch does not apply`, Redis's WRONGTYPE, SQLite's `no such table:`/`no such column:` (a
  condition, unsure under a JSON-RPC internal error), GitHub's `A pull request already
  exists`, Claude Code's `No such tool available`, Kilo Code's `Path provided was not a file`,
  npx's `canceled due to missing packages`, pnpm's `ERR_PNPM_IGNORED_BUILDS`, git's `(fetch
  first)` (fixable);
- precision: PowerShell's wrapper around a native program's progress line followed by one line
  of output that names no failure (cargo's `Finished`) is no failure.

Expected kinds are the corpus labels, except where `ambiguous` is named as the answer to
evidence that cannot tell (a missing table under an internal error, a permission refused on a
path that is neither a system path nor the agent's script, an error with no kind word).
"""

from __future__ import annotations

import pytest
from corpus_records import TUNING_SPLITS, records_by_id
from round_checks import check_linear, corpus_tests

from exactserve.toolerr.wide import classify_wide, judge

RECORDS = records_by_id(TUNING_SPLITS)


pytestmark = pytest.mark.usefixtures("rules_alone")  # the learned model patched out


# Successes: cargo's progress line wrapped by PowerShell, then `Finished` (formerly detected),
# and Claude Code's TaskOutput whose tagged exit code is 0 though its output names failures
SUCCESSES = [
    "t14-lan-server-cargo-check",
    "t14-openwhisper-mobile-taskoutput-exit0-pod-fail",
    # look-alikes of the new shapes and words that stay undetected: a compose file naming
    # docker.sock, a response's `x-ratelimit-*` headers, a `go test -json` stream whose output
    # holds `FAIL\t... [build failed]`
    "t6-fargate-compose-yml",
    "t7-github-docs-16527",
    "t7-gotestsum-go-test-build-failed-out",
]

# test14's successes still detected, documented: golden fixtures of MCP results read whole
# (their `"isError": true` is the explicit flag, read before any wide rule), a log excerpt whose
# last line is `error: git-upload-pack died of signal 13`, and a `git push` that created the
# branch while git could not write `.git/config` (`error: ... Operation not permitted`): only
# the call that read them, or what the push did, says success
DOCUMENTED_DETECTIONS = [
    "t14-mantora-error-permission-read",
    "t14-mantora-error-syntax-read",
    "t14-gitlabhq-6832-log",
    "t14-napoli-matcha-git-push-config-warning",
]

# (corpus id, wide rule, the rules' kind, a piece of the evidence)
CASES = [
    # detection: edit mismatches, MCP structured results, raw and prefixed statuses
    (
        "t14-codegeex-vscode-extension-replace-notfound",
        "wide-phrase",
        "fixable",
        "phrase 'Target content not found'",
    ),
    (
        "t14-brain-explore-serena-edit-memory-nomatch",
        "wide-json",
        "fixable",
        "JSON result 'Error'; words 'No matches of search expression found'",
    ),
    ("t8-olympios-3", "wide-json", "ambiguous", "JSON result 'Error'"),
    (
        "t9-nixoshosts-nix-not-found",
        "wide-json",
        "ambiguous",
        "JSON result 'Error (NIX_NOT_FOUND)'",
    ),
    ("t14-api-platform-2751", "wide-line", "unrecoverable", "line 'HTTP/1.1 403'; HTTP 403"),
    (
        "t10-alfresco-connector-soap-action-not-recognized",
        "wide-line",
        "ambiguous",
        "line 'HTTP/1.1 500'; HTTP 500",
    ),
    (
        "t14-ai-automation-suggester-503",
        "wide-line",
        "transient",
        "line 'Google error 503:'; HTTP 503",
    ),
    ("t11-open-terminal-401", "wide-line", "unrecoverable", "line 'HTTP error 401:'; HTTP 401"),
    (
        "t14-serverpod-tf-no-credentials",
        "wide-line",
        "unrecoverable",
        "line '│ Error:'; words 'redential'",
    ),
    # detection: marked lines (Node, Ansible, the AWS SDK for Go v2)
    (
        "t14-csvserver-16",
        "wide-line",
        "fixable",
        "line \"throw er; // Unhandled 'error' event\"; condition 'EISDIR'",
    ),
    (
        "t14-turbo-http-28",
        "wide-line",
        "ambiguous",
        "line 'Error [EACCES]:'; conditions 'Permission denied'",
    ),
    ("t10-vite-err-require-esm", "wide-line", "ambiguous", "line 'Error [ERR_REQUIRE_ESM]:'"),
    (
        "t14-shellcheck-ansible-unreachable",
        "wide-line",
        "unrecoverable",
        "line 'server1 | UNREACHABLE! =>'; condition 'Permission denied (publickey'",
    ),
    (
        "t14-steampipe-thrifty-throttle",
        "wide-line",
        "transient",
        "line 'operation error CloudWatch Logs: DescribeLogStreams,'; rate limit 'Rate exceeded'",
    ),
    # detection: go test after `# package`, Claude Code's TaskOutput, Composer's script line
    ("t14-paxos-2", "wide-tests", "fixable", "verdict 'FAIL\\tgithub.com/paxos [build failed]'"),
    (
        "t14-fittoday-taskoutput-failed-tail",
        "wide-exit",
        "fixable",
        "exit 1; condition 'No such file'",
    ),
    (
        "t14-gegocart-admin-2",
        "wide-diagnostic",
        "ambiguous",
        "diagnostic 'Script @php artisan package:discover handling",
    ),
    # a service's message more specific than its status (formerly the status's kind)
    (
        "t14-beeline-nodejs-682",
        "wide-line",
        "fixable",
        "message 'cannot publish over the previously published version'",
    ),
    (
        "t14-terragrunt-lock-400",
        "wide-line",
        "transient",
        "message 'Error acquiring the state lock'",
    ),
    (
        "t14-terragrunt-409-conflict",
        "wide-line",
        "transient",
        "message 'A conflicting conditional operation'",
    ),
    ("t14-remotion-6275", "wide-line", "unrecoverable", "message 'has an output schema but'"),
    # rate limits and passing network faults
    ("t14-dotenvi-throttling", "wide-line", "transient", "rate limit 'Rate exceeded'"),
    ("t14-langchain-book-20", "wide-line", "transient", "rate limit ': Ratelimit'"),
    ("t14-reddit-research-mcp-24", "wide-line", "transient", "condition 'Bad gateway'"),
    ("t14-simpleinfra-341", "wide-line", "transient", "condition 'Timeout was reached'"),
    (
        "t11-mirror-requests-cargo-timeout",
        "wide-line",
        "transient",
        "condition 'Timeout was reached'",
    ),
    ("t14-react-native-test-app-157", "wide-line", "transient", "condition 'ESOCKETTIMEDOUT'"),
    # denials, quotas and what the user must fix
    ("t14-vault-hook-pretooluse-denied", "is_error", "unrecoverable", "denial 'denied this tool'"),
    ("t14-win-cli-mcp-server-16", "wide-line", "unrecoverable", "denial 'outside allowed paths'"),
    (
        "t14-googlecodelabs-gke-quota",
        "wide-line",
        "unrecoverable",
        "quota 'insufficient regional quota'",
    ),
    (
        "t14-is-cura-ui-cert-verify",
        "wide-line",
        "unrecoverable",
        "words 'CERTIFICATE_VERIFY_FAILED'",
    ),
    ("t7-cachet-url-monitor-87", "wide-line", "unrecoverable", "words 'CERTIFICATE_VERIFY_FAILED'"),
    ("t11-chatgpt-guzzle-curl60", "wide-line", "unrecoverable", "words 'SSL certificate problem'"),
    ("t9-k8s-selfsigned", "is_error", "unrecoverable", "words 'self-signed certificate'"),
    (
        "t10-k3d-x509-proxy",
        "wide-line",
        "unrecoverable",
        "words 'x509: certificate signed by unknown authority'",
    ),
    (
        "t14-xagent-daemon-down",
        "wide-sentence",
        "unrecoverable",
        "words 'Cannot connect to the Docker daemon'",
    ),
    (
        "t14-for-win-version-daemon",
        "wide-diagnostic",
        "unrecoverable",
        "words 'Cannot connect to the Docker daemon'",
    ),
    (
        "t14-cybervpn-docker-not-in-wsl",
        "is_error",
        "unrecoverable",
        "words 'could not be found in this WSL'",
    ),
    (
        "t14-dockerlabs-gpu-driver",
        "wide-line",
        "unrecoverable",
        "words 'could not select device driver'",
    ),
    (
        "t14-openwhisper-mobile-gem-permission",
        "is_error",
        "unrecoverable",
        'words "You don\'t have write permissions"',
    ),
    (
        "t9-badgerbadgerbadger-gem-system-perm",
        "wide-line",
        "unrecoverable",
        'words "You don\'t have write permissions"',
    ),
    # what the call or the workspace must change
    (
        "t14-kilocode-read-dir-not-file",
        "wide-line",
        "fixable",
        "words 'Path provided was not a file'",
    ),
    (
        "t14-entire-bmad-no-such-tool-playwright",
        "is_error",
        "fixable",
        "words 'No such tool available'",
    ),
    (
        "t14-chkit-gh-pr-already-exists",
        "is_error",
        "fixable",
        "words 'A pull request already exists'",
    ),
    (
        "t14-planetfall-npx-canceled-missing-playwright",
        "is_error",
        "fixable",
        "words 'npx canceled due to missing packages and no YES option'",
    ),
    ("t14-pdf2md-13", "wide-exit", "fixable", "words 'ERR_PNPM_IGNORED_BUILDS'"),
    ("t14-agentv-git-push-rejected-fetch-first", "is_error", "fixable", "words '(fetch first)'"),
    (
        "t14-portainer-k8s-reuse-name",
        "wide-line",
        "fixable",
        "words 'cannot re-use a name that is still in use'",
    ),
    (
        "t14-helm-controller-reuse",
        "wide-line",
        "fixable",
        "words 'cannot re-use a name that is still in use'",
    ),
    (
        "t5-infrahq-infra-1234",
        "wide-line",
        "fixable",
        "words 'cannot re-use a name that is still in use'",
    ),
    (
        "t5-helmwave-150",
        "wide-line",
        "fixable",
        "words 'cannot re-use a name that is still in use'",
    ),
    ("t14-ffmpeg-plusplus-23", "wide-line", "fixable", "words 'patch does not apply'"),
    ("t14-rattler-build-1690", "wide-line", "fixable", "words 'patch does not apply'"),
    ("t11-treble-git-am-patch-failed", "wide-line", "fixable", "words 'patch does not apply'"),
    (
        "t14-yii2-redis-96",
        "wide-line",
        "fixable",
        "words 'Operation against a key holding the wrong kind of value'",
    ),
    ("t14-ddnet-2565", "wide-line", "fixable", "condition 'no such table:'"),
    ("t14-ubmt-2", "wide-line", "fixable", "condition 'no such column:'"),
    ("t13-lcdocs-nosuchtable", "wide-line", "fixable", "condition 'no such table:'"),
    # ... but a missing table under a JSON-RPC internal error may be the server's own
    (
        "t14-n8n-mcp-39",
        "wide-line",
        "ambiguous",
        "conditions 'no such table: in an internal error'",
    ),
    # look-alikes kept: labels that disagree on the same message (a git index.lock, GitHub's
    # `Could not resolve to a Repository`, a NameError message in a tool's own code), a cargo
    # retry notice with a DNS failure, MCP's output validation of another kind, yarn's notice
    # with its errno, GitHub's existing pull request as a JSON body
    (
        "t11-finite-element-course-commit-index-lock",
        "wide-line",
        "ambiguous",
        "no evidence of a kind",
    ),
    ("dx2-gh-cli-436", "wide-line", "ambiguous", "no evidence of a kind"),
    ("t12-redis-ai-autogen-file-not-defined", "is_error", "ambiguous", "no evidence of a kind"),
    (
        "t12-depotcycle-device-lifecycle-marketplace-cargo-dns-sandbox",
        "wide-exit",
        "ambiguous",
        "conditions 'Could not resolve host'",
    ),
    ("t9-ch-output-validation", "is_error", "fixable", "words 'validation error'"),
    ("t3-yarn-7627", "wide-line", "transient", "condition 'ETIMEDOUT'"),
    ("t10-octokit.rb-pr-exists", "wide-json", "fixable", "JSON errors member"),
]


test_successes, test_documented_detections, test_general_causes = corpus_tests(
    RECORDS, SUCCESSES, DOCUMENTED_DETECTIONS, CASES
)


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        # a specific message over its status; the status alone keeps its kind
        (
            "npm ERR! 403 403 Forbidden - PUT https://registry.npmjs.org/x - You cannot publish over the previously published versions: 1.0.0.",
            "fixable",
        ),
        (
            'npm ERR! 403 403 Forbidden - PUT https://registry.npmjs.org/x - You do not have permission to publish "x".',
            "unrecoverable",
        ),
        (
            "OperationAborted: A conflicting conditional operation is currently in progress against this resource. Please try again.\n  status code: 409",
            "transient",
        ),
        (
            "BucketAlreadyOwnedByYou: Your previous request to create the named bucket succeeded\n  status code: 409",
            "fixable",
        ),
        (
            "Error acquiring the state lock: ConditionalCheckFailedException: The conditional request failed\n  status code: 400",
            "transient",
        ),
        (
            "MCP error -32602: Output validation error: Tool t has an output schema but no structured content was provided",
            "unrecoverable",
        ),
        ("MCP error -32602: Input validation error: Invalid arguments for tool t", "fixable"),
        # rate limits, and a response's rate-limit headers that are none
        ("An error occurred (ThrottlingException): Rate exceeded", "transient"),
        (
            "duckduckgo_search.exceptions.RatelimitException: https://duckduckgo.com/ 202 Ratelimit",
            "transient",
        ),
        (
            "HTTP/1.1 401 Unauthorized\nX-Ratelimit-Limit: 60\nX-Ratelimit-Remaining: 59",
            "unrecoverable",
        ),
        ("Error: Google error 503: The model is overloaded. Please try again later.", "transient"),
        # SQLite's missing table: the call's SQL, unless a server failed on its own
        ("sqlite3.OperationalError: no such table: users", "fixable"),
        ("MCP error -32603: Error executing tool q: no such table: users", "ambiguous"),
        # TLS verification, Docker's daemon, a hook's denial
        (
            "requests.exceptions.SSLError: [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed",
            "unrecoverable",
        ),
        (
            "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?",
            "unrecoverable",
        ),
        ("Hook PreToolUse:Bash denied this tool", "unrecoverable"),
        # the tools' own words for a change to make
        ("Error: cannot re-use a name that is still in use", "fixable"),
        ("error: patch failed: a.c:3\nerror: a.c: patch does not apply", "fixable"),
        ("WRONGTYPE Operation against a key holding the wrong kind of value", "fixable"),
        ("<tool_use_error>Error: No such tool available: mcp__x__y</tool_use_error>", "fixable"),
    ],
)
def test_kinds_and_their_precedence(text, kind):
    assert classify_wide(text)[0] == kind


@pytest.mark.parametrize(
    "text",
    [
        'HTTP/1.1 200 OK\nContent-Type: application/json\n\n{"ok": true}',
        "HTTP/2 301\nlocation: https://example.com/",
        "╷\n│ Warning: Argument is deprecated\n│\n│   with aws_eip.x,\n╵\nApply complete! Resources: 1 added, 0 changed, 0 destroyed.",
        'web1 | SUCCESS => {\n    "changed": false,\n    "ping": "pong"\n}',
        "// Notify receives an operation error and\n// the backoff delay before the next try.\nfunc Notify() {}",
        '{"result": "Errors found: 0"}',
        '{"result": "ok"}',
        "<retrieval_status>success</retrieval_status>\n\n<status>completed</status>\n\n<exit_code>0</exit_code>\n\n<output>\nError: retrying... done\n</output>",
        "# Testing\n\nRun the tests; a failed package prints\nFAIL\tpkg is what go test says",
        "Script @php artisan package:discover handling the post-autoload-dump event returned with error code 0 is fine\nok",
        "cargo :    Compiling x v0.1.0 (C:\\x)\nAt line:1 char:1\n+ cargo build\n+ ~~~~~~~~~~~\n"
        "    + CategoryInfo          : NotSpecified: (   Compiling x v0.1.0:String) [], RemoteException\n"
        "    + FullyQualifiedErrorId : NativeCommandError\n \n    Finished `dev` profile [unoptimized + debuginfo] target(s) in 2.19s",
    ],
)
def test_successes_that_look_like_the_new_shapes_stay_undetected(text):
    assert judge(text, None) is None


@pytest.mark.parametrize(
    "text",
    [
        # a wrapped progress line and one line of output that names a failure
        "cargo :    Compiling x v0.1.0 (C:\\x)\nAt line:1 char:1\n+ cargo build\n+ ~~~~~~~~~~~\n"
        "    + CategoryInfo          : NotSpecified: (   Compiling x v0.1.0:String) [], RemoteException\n"
        "    + FullyQualifiedErrorId : NativeCommandError\n \nerror: could not compile `x` due to 2 previous errors",
        # go test's verdict with its time, after vet's `# package` line
        "# example.com/x\n./a.go:3: Printf call needs 1 arg but has 2 args\nFAIL\texample.com/x\t0.012s",
        "HTTP/2 429\nretry-after: 30",
        'web1 | FAILED! => {\n    "changed": false,\n    "msg": "boom"\n}',
        '{"result": "Error: No active project."}',
    ],
)
def test_failures_that_look_like_the_new_successes_detect(text):
    assert judge(text, None) is not None


def test_the_new_patterns_stay_linear_on_adversarial_lines():
    check_linear(
        (
            "a" * 100000 + " | UNREACHABLE! => {",
            "operation error " + "a" * 100000 + ": Op, ",
            "Script " + "x" * 100000 + " handling the e event returned with error code 1",
            "Error [" + "A" * 100000 + "]: x",
            "│ " * 50000 + "Error: x",
            "Google " * 20000 + "error 503: x",
            "<exit_code>" * 20000,
            '{"result": "Error: ' + "x" * 100000 + '"}',
            "FAIL\t" + "x" * 100000 + " [build failed]",
        )
    )
