# ruff: noqa: E501
"""Round 16 of the wide rules: test18 (tuned on after its one evaluation). The general causes
of its misses, each a format of a widely used tool, SDK, agent or service:

- detection: sbt's scalac diagnostic (`[error] /src/X.scala:6: ...`) and its end of a failed
  task (`[error] Total time:`, `[error] (compile:compile) Compilation failed`, `[error] Type
  error in expression`); Meson's `meson.build:L:C: ERROR:` and older `Meson encountered an
  error in file`; the Go module fetcher's status from a proxy or the checksum database
  (`verifying m@v: ...: reading https://...: 410 Gone`); pydantic's `1 validation error for X`;
  Auto-GPT's `Command x returned: Error:`; libcurl's `SSL certificate problem:`; webpack's
  `Watchpack Error (watcher):`; Subversion's `svn: E155007:`; Miller's `mlr:` and gojq's
  `gojq:`; the Kubernetes Python client's `HTTP response body: {`; PyMySQL's `(1045, "...")`;
  rebar3's `===> Compilation failed`; s5cmd's `ERROR "cp ...":`; sqlfluff's `==== parsing
  violations ====`; a miette diagnostic opening the text (`× unknown environment 'x'`);
  DigitalOcean's `Unable to authenticate you` and pyTelegramBotAPI's `A request to the
  Telegram API was unsuccessful` as phrases; a Rust test's `test x ... FAILED` line; a
  last line ending in Go's lower-case `no space left on device`;
- no detection: vegeta's load-test report, whose `Error Set:` is the target's; a PowerShell
  error record that later output follows decides that the result is no failure, so the
  learned detector is not asked;
- kinds: Google's `PERMISSION_DENIED` decides a `Permission denied` beside it
  (unrecoverable); `EMFILE` / `too many open files` and an `API token` named in a failure are
  unrecoverable, as is Auto-GPT's `Shell Command is not allowed` (a denial) and a plan's
  `the daily limit` (a quota, over its 429's rate limit); fixable words of toolchains (OCaml's
  `Error: Unbound `, Nushell's `nu::parser::`, zsh's `: unmatched "` and `bad math
  expression`, uv's `Failed to parse `uv.lock``, pixi's `unknown environment '` and `No
  candidates were found for`, MySQL's `cannot add or update a child row`, Subversion's `is not
  a working copy`, Meson's errors, git's `use -f to force removal`, Corepack's
  `"packageManager" field`, Miller's and gojq's errors, s5cmd's `object already exists`,
  Claude Code's Read `exceeds maximum allowed size`).

Expected kinds are the corpus labels.
"""

from __future__ import annotations

import pytest
from corpus_records import TUNING_SPLITS, records_by_id
from round_checks import check_linear, corpus_tests

from exactserve.toolerr.wide import classify_wide, judge
from exactserve.toolerr.wide.rules import NO_SHAPE, find_failure
from exactserve.toolerr.wide.shapes import read_shape

RECORDS = records_by_id(TUNING_SPLITS)


pytestmark = pytest.mark.usefixtures("rules_alone")  # the learned model patched out


# Successes that hold the new words and stay undetected: rebar3's `===>` progress, jj's log
# graph (`×  ` of a conflicted change), cargo-nextest's flaky test that passed on retry,
# `sqlfluff fix` (`== [test.sql] FAIL`, then `FIXED`), nginx's and dbt's logs read back
# (`[error]`), a Ruby file defining Faraday's errors (`HTTP response body`), cargo-deny's
# passing check (`unmatched`), a web search naming the Telegram API; vegeta's report (a cause)
SUCCESSES = [
    "t18-rebar3-2795",
    "t17-jj-log-conflict-graph",
    "t16-nextest-nextest-flaky",
    "t18-sqlfluff-fix-fixed",
    "t8-log-viewer-nginx-multiline",
    "t12-dbt-hackathon-2024-dbt-log",
    "t8-faraday-error-rb",
    "t16-cargo-deny-bans-ok-warn",
    "t9-outpost-search-web",
    "t18-vegeta-report-text-errors",
]

# test18's successes still detected by the rules, documented (test_toolerr_wide_agents.py): a
# script run on purpose to see its error path, and a `git rm ... || true` whose only output is
# git's `fatal:`
DOCUMENTED_DETECTIONS = ["t18-fundwise-zerion-smoke-exit2", "t18-voder-website-gitrm-pathspec"]

# (corpus id, wide rule, the rules' kind, a piece of the evidence)
CASES = [
    # sbt
    ("t18-freek-31", "wide-line", "fixable", "line '[error] /Users/emmanuellongeau/"),
    ("t18-vault-dcos-6", "wide-line", "fixable", "words 'Compilation failed'"),
    ("t18-sbt-1928", "wide-line", "fixable", "words 'Compilation failed'"),
    (
        "t18-sbt-spark-package-8",
        "wide-diagnostic",
        "fixable",
        "diagnostic '[error] Type error in expression'",
    ),
    # Meson
    ("t18-gst-vosk-2", "wide-diagnostic", "fixable", "diagnostic 'meson.build:15:0: ERROR:'"),
    ("t18-brisk-menu-91", "wide-phrase", "fixable", "phrase 'Meson encountered an error in file'"),
    # the Go module fetcher's statuses
    ("t18-publishing-bot-206", "wide-line", "fixable", "line 'verifying k8s.io/api@"),
    ("t18-jfrog-cli-468", "wide-line", "fixable", "HTTP 410"),
    ("t18-goproxyio-goproxy-210", "wide-line", "transient", "HTTP 502"),
    # pydantic, Auto-GPT
    (
        "t18-magentic-validation-retry",
        "wide-line",
        "fixable",
        "line '1 validation error for Country'",
    ),
    (
        "t18-autogptcassettes-argsmissing",
        "wide-line",
        "fixable",
        "line 'Command execute_python_code returned: Error:'",
    ),
    (
        "t18-autogptcassettes-shell-denied",
        "wide-line",
        "unrecoverable",
        "denial 'Shell Command is not allowed'",
    ),
    # libcurl's TLS failure, the Kubernetes client's body, PyMySQL's tuple, DigitalOcean's 401
    ("t18-blackbird-curl60", "wide-line", "unrecoverable", "line 'SSL certificate problem:'"),
    (
        "t18-cloud-native-edition-pods-forbidden-403",
        "wide-line",
        "unrecoverable",
        "line 'HTTP response body: {'; HTTP 403",
    ),
    (
        "t18-mycli-access-denied-1045",
        "wide-line",
        "unrecoverable",
        "words 'Access denied for user'",
    ),
    ("t14-grade-statistics-1", "wide-line", "unrecoverable", "words 'Access denied for user'"),
    (
        "t18-vagrant-puppet-mesosphere-do-401",
        "wide-phrase",
        "unrecoverable",
        "phrase 'Unable to authenticate you'",
    ),
    (
        "t18-inlets-operator-do-401-requeue",
        "wide-phrase",
        "unrecoverable",
        "phrase 'Unable to authenticate you'",
    ),
    (
        "t18-pytelegrambotapi-409-getupdates",
        "wide-phrase",
        "fixable",
        "phrase 'A request to the Telegram API was unsuccessful'; HTTP 409",
    ),
    # webpack's watcher and Node's EMFILE
    ("t18-watchpack-emfile-flood", "wide-line", "unrecoverable", "condition 'EMFILE'"),
    ("t18-watermelondb-emfile-watch", "wide-line", "unrecoverable", "condition 'EMFILE'"),
    # Subversion, Miller, gojq, rebar3, s5cmd, sqlfluff
    ("t18-svn-scm-e155007", "wide-line", "fixable", "words 'is not a working copy'"),
    ("t18-miller-log10-data-error", "wide-line", "fixable", "line 'mlr:'"),
    ("t18-miller-ragged-csv", "wide-line", "fixable", "words 'header/data length mismatch'"),
    ("t18-gojq-invalid-query-amp", "wide-line", "fixable", "line 'gojq:'"),
    ("t18-rebar3-685", "wide-line", "fixable", "line '===> Compilation failed'"),
    ("t18-s5cmd-no-clobber-exists", "wide-line", "fixable", "words 'object already exists'"),
    (
        "t18-sqlfluff-unparsable-section",
        "wide-line",
        "fixable",
        "line '==== parsing violations ===='",
    ),
    # miette's diagnostics (pixi)
    ("t18-pixi-1170", "wide-line", "fixable", "line \"× unknown environment 'default'\""),
    ("t18-comodo-34-env", "wide-diagnostic", "fixable", 'words "unknown environment \'"'),
    ("t18-comodo-34-solve", "wide-sentence", "fixable", "words 'No candidates were found for'"),
    # a Rust test's line, Go's full disk on the last line
    ("t18-trae-agent-312", "wide-tests", "fixable", "verdict 'test core/src/llm/llm_client.rs"),
    (
        "t18-batteries-included-976",
        "wide-diagnostic",
        "unrecoverable",
        "condition 'no space left on device'",
    ),
    (
        "t9-beeai-code-interpreter-nospace",
        "wide-diagnostic",
        "unrecoverable",
        "condition 'no space left on device'",
    ),
    # Google's canonical status decides the permission; an API token; a plan's daily limit
    (
        "t18-mra04242026-gcloud-permission-denied",
        "wide-exit",
        "unrecoverable",
        "words 'PERMISSION_DENIED'",
    ),
    ("t18-panopticon-mcp-invalid-token", "wide-json", "unrecoverable", "words 'API token'"),
    ("t18-dracula-tmux-ipinfo-429-daily", "wide-json", "unrecoverable", "quota 'the daily limit'"),
    # toolchains' fixable words
    ("t18-piaf-59", "wide-line", "fixable", "words 'Error: Unbound'"),
    ("t18-liquidsoap-1016", "wide-line", "fixable", "words 'Error: Unbound'"),
    ("t12-dune-unbound-module-dune-site", "wide-line", "fixable", "words 'Error: Unbound'"),
    ("t18-nushell-parse-mismatch", "wide-line", "fixable", "words 'nu::parser::'"),
    (
        "t18-nushell-column-not-found-env",
        "wide-line",
        "fixable",
        "words 'nu::shell::column_not_found'",
    ),
    ("t18-soulpass-codex-zsh-unmatched-quote", "wide-exit", "fixable", "words ': unmatched \"'"),
    ("t18-eagerminds-zsh-bad-math", "is_error", "fixable", "words 'bad math expression'"),
    ("t18-syftr-76", "wide-line", "fixable", "words 'Failed to parse `uv.lock`'"),
    ("t13-a2a-samples-uv-lock-parse", "wide-line", "fixable", "words 'Failed to parse `uv.lock`'"),
    (
        "t18-dolt-fk-violation-1452",
        "wide-line",
        "fixable",
        "words 'cannot add or update a child row'",
    ),
    ("t18-solsmile-git-rm-cached-staged", "is_error", "fixable", "words 'use -f to force removal'"),
    (
        "t18-fundwise-pnpm-packagemanager-yarn",
        "is_error",
        "fixable",
        "words '\"packageManager\" field'",
    ),
    ("t18-bhavana-read-too-large", "is_error", "fixable", "words 'exceeds maximum allowed size'"),
]


test_successes, test_documented_detections, test_general_causes = corpus_tests(
    RECORDS, SUCCESSES, DOCUMENTED_DETECTIONS, CASES
)


POWERSHELL_RECORD = (
    "Set-Location : Cannot find path 'C:\\x' because it does not exist.\n"
    "At line:1 char:1\n+ Set-Location x; python y.py\n+ ~~~~~~~~~~~~\n"
    "    + CategoryInfo          : ObjectNotFound: (C:\\x:String) [Set-Location], ItemNotFound\n"
    "    + FullyQualifiedErrorId : PathNotFound,Microsoft.PowerShell.Commands.SetLocationCommand\n"
)


def test_output_after_a_powershell_record_decides_no_failure():
    """Later output decides, as an exit code of 0 does: not "no failure shape", after which
    the learned detector would be asked."""
    after = POWERSHELL_RECORD + 'Loaded 456 rows\n{\n  "total": 12\n}\n'
    assert find_failure(after, read_shape(after), None) == (None, "")
    plain = "Loaded 456 rows\ndone"  # nothing decided: the learned detector may be asked
    assert find_failure(plain, read_shape(plain), None) == (None, NO_SHAPE)


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        # Google's status decides the permission; a bare `Permission denied` stays unsure
        (
            "ERROR: (gcloud.services.enable) PERMISSION_DENIED: Permission denied to enable service [x]",
            "unrecoverable",
        ),
        ("Error: open /data/x: Permission denied", "ambiguous"),
        # a day's limit outranks the 429's rate limit
        (
            '{"status": 429, "error": {"title": "Rate limit exceeded", "message": "You\'ve hit the daily limit for the unauthenticated API."}}',
            "unrecoverable",
        ),
        ('{"status": 429, "error": {"title": "Rate limit exceeded"}}', "transient"),
        ("Error: EMFILE: too many open files, watch '/home/x'", "unrecoverable"),
        ('File "a.ml", line 3, characters 2-9:\nError: Unbound module Foo', "fixable"),
        ("zsh:1: unmatched '", "fixable"),
        (
            "Command execute_shell returned: Error: This Shell Command is not allowed.",
            "unrecoverable",
        ),
    ],
)
def test_kinds_and_their_precedence(text, kind):
    assert classify_wide(text)[0] == kind


@pytest.mark.parametrize(
    "text",
    [
        # jj's log graph, a `sqlfluff fix` run, rebar3's progress
        "@  qzvqqupx m@x.com 2023-02-12 1978b534 (conflict)\n│  C\n×  puqltutt m@x.com 2023-02-12 f7fb5943 (conflict)\n│  B2",
        "==== finding fixable violations ====\n== [test.sql] FAIL\nL:   1 | P:   7 | LT02 | Expected indent.\n== [test.sql] FIXED\n1 fixable linting violations found",
        "===> Verifying dependencies...\n===> Analyzing applications...\n===> Compiling myapp",
        # vegeta's report listing the target's errors
        "Requests      [total, rate, throughput]  10, 1.00, 0.50\nSuccess       [ratio]  50.00%\nError Set:\nGet http://localhost:8080: dial tcp 127.0.0.1:8080: connection refused",
        # passing Rust tests, a Go download that worked
        "running 2 tests\ntest a ... ok\ntest b ... ok\n\ntest result: ok. 2 passed; 0 failed",
        "go: downloading github.com/x/y v1.2.3\ngo: found github.com/x/y in github.com/x/y v1.2.3",
    ],
)
def test_successes_that_look_like_the_new_shapes_stay_undetected(text):
    assert judge(text, None) is None


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("[error] /src/A.scala:3: not found: value x\n[error] one error found", "wide-line"),
        ("[info] Compiling 1 Scala source\n[error] Total time: 1 s, completed", "wide-diagnostic"),
        (
            "go: m@v1.0.0: reading https://proxy.golang.org/m/@v/v1.0.0.info: 404 Not Found",
            "wide-line",
        ),
        ("2 validation errors for Model\nname\n  Field required", "wide-line"),
        ("svn: E170013: Unable to connect to a repository at URL", "wide-line"),
        ("(2003, \"Can't connect to MySQL server on 'db' (111)\")", "wide-line"),
        ("  × unknown environment 'test'", "wide-line"),
        ("test tests::adds ... FAILED", "wide-tests"),
        ("build: write /tmp/x: no space left on device", "wide-diagnostic"),
    ],
)
def test_failures_of_the_new_shapes_are_detected(text, rule):
    verdict = judge(text, None)
    assert verdict is not None and verdict.rule == rule, verdict


def test_new_patterns_cost_linear_time():
    check_linear(
        [
            "[error] " + "a/" * 50_000,
            "[error] " + "a" * 100_000 + ".scala:",
            "meson.build:1:" * 7000,
            "verifying " + "a: " * 33_000,
            "go: " + "a: reading https://" * 5000,
            "go get: " + ": reading http://x" * 5000,
            "1 validation error for " + "a" * 100_000 + " ",
            "Command " + "a" * 100_000,
            "Watchpack Error (" + "a" * 100_000,
            "svn: E" + "1" * 100_000,
            "(1234, " * 14_000,
            'ERROR "cp ' + "a" * 100_000,
            'ERROR "cp ' + 'a"' * 50_000,
            " [error] (" + "a" * 100_000,
            "  [error] (" + "a:" * 50_000,
            "Requests " + " " * 100_000 + "[total",
            "test " + "a ... " * 20_000 + "FAILE",
            "test " + " ... FAILED " * 9000,
            "× " * 50_000,
            "a: " + "no space left on devic " * 4000,
        ]
    )
