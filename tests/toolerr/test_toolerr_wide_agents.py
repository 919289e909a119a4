# ruff: noqa: E501
"""Agents' own tool results (toolerr/wide/agents.py): corpus records of dev_extra3
(transcripts of coding agents, MCP servers) and test4 (tuned on after its one evaluation,
as test5 to test7 are since), each with the rule and kind the wide rules give, and the successes
of every tuning split, which must stay undetected. Expected kinds are the corpus labels,
given by the guide before the rules, except where a note says the rules stay ambiguous."""

from __future__ import annotations

import pytest
from corpus_records import TUNING_SPLITS, records_by_id, wide_verdict

RECORDS = records_by_id(TUNING_SPLITS)

# (corpus id, wide rule, kind)
CASES = [
    # Claude Code's own results (error flag set): harness denial, usage, Read limits, git
    (
        "dx3-tk-bash-denied",
        "is_error",
        "unrecoverable",
    ),  # Permission to use Bash ... has been denied.
    ("dx3-tk-rg-include", "is_error", "fixable"),  # rg: unrecognized flag --include
    (
        "dx3-tk-read-too-large",
        "is_error",
        "fixable",
    ),  # File content ... exceeds maximum allowed tokens
    ("dx3-tk-pull-unstaged", "is_error", "fixable"),  # Please commit or stash them.
    ("dx3-tk-git-add-ignored", "is_error", "fixable"),  # ignored by one of your .gitignore files
    # a process killed by a signal (exit 128 + N) is ambiguous, like a `Signal: N` line
    ("dx3-tk-exit-143", "is_error", "ambiguous"),
    ("dx3-jmri-4163", "wide-exit", "ambiguous"),  # Travis: The command "..." exited with 137.
    # edit tools of other agents, npm and zsh
    ("dx3-ai-scientist-154", "wide-phrase", "fixable"),  # aider: did not conform to the edit format
    ("dx3-pi-4430", "wide-sentence", "fixable"),  # pi: The oldText must match exactly
    ("t4-zed-39226", "wide-phrase", "fixable"),  # Zed: `old_string` does not appear in the file
    ("dx3-kc-npm-missing-script", "wide-line", "fixable"),  # npm error Missing script: "lint"
    ("dx3-kc-eval-no-matches", "wide-line", "fixable"),  # (eval):1: no matches found: contents/*.py
    ("dx3-cursor-3003", "wide-line", "ambiguous"),  # Error calling tool 'edit_file'.
    # label unrecoverable; `not found or client not properly initialized` stays ambiguous
    ("dx3-selfhosted-supabase-mcp-2", "wide-line", "ambiguous"),
    # kubectl and MCP clients' `Error from ...`, statuses named `HTTP 403` and `402 {...}`
    ("t4-guard-352", "wide-line", "unrecoverable"),  # Error from server (Forbidden): ...
    ("t4-obot-3268", "wide-line", "unrecoverable"),  # Error from MCP server: ... (HTTP 401)
    (
        "t4-create-gh-release-13",
        "wide-line",
        "unrecoverable",
    ),  # HTTP 403: ... (not `release not found`)
    ("t4-github-app-555", "wide-line", "unrecoverable"),  # 402 {"error":{... "quota_exceeded"}}
    ("t4-metabot-192", "wide-line", "transient"),  # API Error: Repeated 529 Overloaded errors
    # lower-case OS conditions, a glyph before an errno, Gradle, schema validation, rspec, git
    ("t4-extension-bootc-215", "wide-line", "unrecoverable"),  # ... no space left on device
    ("t4-micro-agent-64", "wide-line", "fixable"),  # ✖ ENOENT: no such file or directory
    ("t4-nami-public-18", "wide-line", "fixable"),  # * What went wrong: ... Compilation failed
    (
        "t4-openctx-226",
        "wide-sentence",
        "fixable",
    ),  # Invalid input for tool ...: must have required property
    ("t4-ccexport-a", "wide-tests", "fixable"),  # rspec: Failures:
    ("t4-jekyll-action-24", "wide-line", "unrecoverable"),  # fatal: could not read Username
    ("t4-openfang-412", "wide-line", "unrecoverable"),  # Resource quota exceeded
    ("t4-obyte-gui-wallet-21", "wide-line", "transient"),  # error: RPC failed; result=56
]
# Successes the text alone cannot tell from a failure: a log file read back with `cat` or
# `grep` holds a real failure (the command that read it would tell; the rules never see it),
# and an `nft` diagnostic (`Error: No such file or directory; did you mean table ...`) that a
# script printed before it exited 0: only the transcript's `is_error: false` says so, and a
# false flag reads as no flag (the paper rules detect it too).
KNOWN_FALSE_DETECTIONS = {
    "dx3-tk-grep-log-exception",
    "dx3-tk-cat-log-bind",
    "dx3-tk-grep-log-build-failed",
    "t6-m-claude-nft-stderr",
    # test7 (tuned on since its one evaluation): a usage error the agent provoked on purpose
    # (`Error: Unknown argument: --unknown`, the note says it meant to see it) and a go test
    # golden file read whole (`--- FAIL:` lines, `DONE 2 runs, 2 tests, 2 failures`): only
    # the intent around them says success
    "t7-vecsum-unknown-arg-grep",
    "t7-gotestsum-e2e-ignoreswarnings",
    # test8 (tuned on since its one evaluation): a script's own message that a missing module
    # is expected (`Import error: No module named 'yaml'` / `This is expected ...`), a
    # kubectl events listing whose row says `Readiness probe failed:`, and a service's log
    # (`INFO: ...`, then `ERROR: ... connection refused`) read back: only the intent and the
    # command around them say success
    "t8-docgen-2",
    "t8-bank-of-anthos-261",
    "t8-poe-openai-proxy-55",
    # test9 (tuned on since round 8): results whose only text is an error, where only the
    # recorded status says success (a `bfs` error for a missing directory, a script's
    # `ERROR:[Errno 2]` lines, a Playwright evaluation returning its own `{"error": ...}`
    # object, a browser console listing), and a trybuild fixture of rustc's expected errors
    # read as a file
    "t9-keshaviit-forge01-bfs-enoent",
    "t9-figma-eval-49bdd49a-5831-4dca-ad1b-a66b7b9901fa-gemini_cli-manifest-errno",
    "t9-funeral-eval-modal",
    "t9-funeral-console",
    "t9-cliargs-rust-stderr-fixture",
    # test11 (tuned on since round 10): an MCP demo tool asked to return an error-annotated
    # message (`Error: Operation failed`, which is what it was asked to produce), and a shell
    # loop whose every curl body is GitHub's `API rate limit exceeded` JSON with the result's
    # flag false: only the request and the recorded flag say the call did what was asked
    "t11-mcp-interviewer-annotated-error",
    "t11-effect-of-offset-correction-and-cursor-o-57",
    # test13 (tuned on since round 11): log files and logs read whole whose only text is a
    # failure (a log4j ERROR record with its NullPointerException trace, a Python traceback
    # saved as error.log, and two `kubectl logs` of containers that failed: AWS's
    # `An error occurred (UnauthorizedOperation) ...` alone, and Spring Boot's `APPLICATION
    # FAILED TO START` report): the same texts are what running the program prints, and only
    # the call that read them says success
    "t13-readlog-npe-log-read",
    "t13-object-detection-vino-errorlog-read",
    "t13-eks-workshop-kubectl-logs-unauthorized",
    "t13-eks-workshop-v2-kubectl-logs-app-failed",
    # test14 (tuned on since round 12): two golden-trace fixtures of an MCP test suite read
    # whole, whose recorded results carry `"isError": true` (the flag decides before any
    # rule), a server log's lines read back ending in `error: git-upload-pack died of signal
    # 13`, and a `git push` that created its branch although git could not write
    # `.git/config` (`error: could not write config file ... Operation not permitted`): only
    # the call that read them, or the branch that appeared, says success
    "t14-gitlabhq-6832-log",
    "t14-mantora-error-permission-read",
    "t14-mantora-error-syntax-read",
    "t14-napoli-matcha-git-push-config-warning",
    # test15 (tuned on since round 13): lint output committed to repositories and read whole,
    # whose only text is the linter's own failing run: PHP_CodeSniffer's `ERROR: the "PSR2"
    # coding standard is not installed` and SwiftLint's Xcode-format findings ending in
    # `file.swift:54:13: error: ...`: the same texts are what running the linter prints (and
    # what the rules must keep detecting there), and only the call that read them says success
    "t15-damas-phpcs-txt",
    "t15-swift-app-cover-swiftlint-txt",
    # test16 (tuned on since round 14): a test harness's output whose one case prints the
    # `ERROR: list index out of range` it checks for (Toolathlon's `=== EXECUTION INFO ===`
    # block, `Return code: 0`, is no wrapper format the rules read), a `git push` that pushed
    # its branch after two `fatal: could not read Username` lines of a credential helper, a
    # test script's log passing (`PASS`) whose debug lines name the exit codes it expects
    # (`exit code -9`), and a Slurm job log read with `cat` whose `slurmstepd: error: ***
    # JOB ... CANCELLED ... DUE TO TIME LIMIT` is what the failed job printed: only the intent,
    # the rest of the push, or the call that read them says success
    "t16-toolathlon-traj-website-python-exec-rc0-error-line",
    "t16-dvc-git-push-prompts-disabled-then-ok",
    "t16-rawprox-test03-pass",
    "t16-hpc-intro-slurm-timelimit-cat",
    # test17 (tuned on since round 15): a curl script an agent wrote to check a login lockout,
    # whose every attempt prints the `HTTP 401` and `{"error":"invalid username or password"}`
    # (then `captcha required`) it set out to provoke: the same lines are what a failed login
    # prints, and only the intent says success
    "t17-kaleabendrias-task-34-curl-lockout-401s",
    # test18 (tuned on since round 16): a script an agent wrote, run on purpose with a bad
    # argument to see its error path (`error: `zerion` CLI not found on PATH.`, `exit=2`), and
    # Voder's record of `git rm --cached -r dist/ 2>&1 | tee /dev/stderr || true` whose only
    # output is git's `fatal: pathspec 'dist/' did not match any files`: the same texts are
    # what the failed commands print, and only the intent, or the `|| true` that the harness's
    # `completed` follows, says success
    "t18-fundwise-zerion-smoke-exit2",
    "t18-voder-website-gitrm-pathspec",
    # test19 (tuned on since round 17): a Codex command that ran ruff, mypy and `git diff
    # --check` in turn, whose text ends ruff's report of one finding (`Found 1 error.`) before
    # mypy's `Success: no issues found`, recorded with exit code 0, and SQLAlchemy's FAQ run of
    # its reconnecting recipe, whose logged `OperationalError` traceback (`MySQL server has
    # gone away`) the pings after it outlive: the same texts are what a failed lint and a
    # failed query print, and only the recorded exit code, or the recipe the page explains,
    # says success
    "t19-speckitty-ruff-then-mypy",
    "t19-sqlalchemy-reconnect",
}


@pytest.mark.parametrize(("record_id", "rule", "kind"), CASES)
def test_agents_results(record_id, rule, kind):
    failures = wide_verdict(RECORDS[record_id])
    assert failures and (failures[0].rule, failures[0].kind) == (rule, kind), failures


def test_no_success_of_a_tuning_split_is_detected():
    detected = {
        record_id
        for record_id, record in RECORDS.items()
        if record["label"] == "success" and wide_verdict(record)
    }
    assert detected == KNOWN_FALSE_DETECTIONS


def test_no_definite_failure_gets_a_wrong_kind():
    """A definite label is given either its kind or `ambiguous`, except calls that only the
    source can settle: a tool missing from the session's registry reads as an unknown tool,
    and three hard calls of test7 (tuned on since its one evaluation) where the guide's most
    specific evidence points elsewhere than the thread: npm's 404 during a registry incident
    (transient by the thread), a hosted server's policy refusal sent as -32602 (unrecoverable),
    a server's own broken launcher whose bash `syntax error` comes back under -32603
    (unrecoverable); and one of test8: `dotnet restore` with no .NET SDK installed, whose
    text reads as a mistyped command (`The application 'restore' does not exist.`) and is
    unrecoverable by its thread; and three of test9 (tuned on since round 8): Antigravity's
    grep tool missing `git` (`executable file not found in %PATH%`, which reads as a command
    the agent typed), sqlcmd's `Login timeout expired` against a server the thread says is
    reachable at other times; and two of test12 (tuned on since round 10), a program that is
    not installed on the host (`java: command not found`, `gradle: command not found`),
    unrecoverable by their notes, whose text is the shell's report of a command the agent
    typed (fixable by the guide), as the same report for `node`, `python`, `jq` or `gh` is
    labelled elsewhere in the corpus: only the host around them tells; and three of test16
    (tuned on since round 14): Gradle's `Received status code 502 from server: Bad Gateway`
    from a repository host (Bintray) shut down for good (fixable by the thread: the build must
    name another repository), OpenRouter's 404 `No endpoints found for` a withdrawn free model
    (unrecoverable by its note, fixable on another test16 record with the same message), and
    Ollama's `model 'x' not found` for a model not pulled (unrecoverable by its note, fixable
    on five dev_extra2 records); and eight of test17 (tuned on since round 15): five MCP
    servers' 404s and one missing file that read as the call's (a 404 for Onyx's internal
    search path, GitLab's `404 Not Found` from a server aimed at gitlab.com for a self-hosted
    instance, WhatsApp's local bridge answering 404, another program on Ghidra's port, a
    remote server's ENOENT for a file on the user's machine: unrecoverable by their threads),
    two `gsutil` 403s (`AccessDeniedException: 403 ... does not have storage.objects.list
    access`) that the maintainers answered with a corrected bucket path (fixable by the
    thread), and a self-signed certificate's `CERTIFICATE_VERIFY_FAILED` that the tool's own
    option skips (fixable by the maintainer; unrecoverable on test7's same message); and two
    of test18 (tuned on since round 16): the Go module proxy's `410 Gone` for a commit pushed
    moments before (transient by the maintainers, who explain the proxy has not fetched it
    yet; fixable on two test18 records of the checksum database's 410), and ssh's `Connection
    timed out` under Deployer that the reporter traced to a wrong port in deploy.php
    (fixable by the thread); and two of test19 (tuned on since round 17): Exa's hosted MCP
    answering 429 with `You've hit Exa's free MCP rate limit` (unrecoverable by its note: a
    free tier's limit, which only the user's own API key lifts; transient by the status and
    the words, as every other 429 rate limit of the corpus), and git's `could not read
    Username` in a workflow whose push command named the wrong authorization scheme (fixable
    by the thread; unrecoverable on test4's same message). Since the learned model was
    retrained with test19 it also detects test17's quoted `Permission denied (publickey)`
    that passed the next day (transient by the thread), and calls it unrecoverable, as the
    text reads. (A Bitbucket server's 404 under a JSON-RPC internal error is `ambiguous`
    since round 10.)"""
    wrong = set()
    for record_id, record in RECORDS.items():
        failures = wide_verdict(record)
        if record["label"] in ("transient", "fixable", "unrecoverable") and failures:
            if failures[0].kind not in (record["label"], "ambiguous"):
                wrong.add(record_id)
    assert wrong == {
        "dx3-conductor-39",
        "t7-pm2-4803",
        "t7-slack-skills-plugin-33",
        "t7-claude-code-mcp-enhanced-bash-js",
        "t8-rimworld-piezoelectric-flooring-mod-1",
        "t9-facturacion-grep-nogit",
        "t9-msphpsql-sqlcmd-login-timeout",
        "t12-offline-inventory-gradle-not-found",
        "t12-task-63-java-not-found-127",
        # test16: a 502 from a host shut down for good (the thread says fixable)
        "t16-android-image-cropper-gradle-502-bintray",
        # test16: messages whose labels disagree across records, given the kind of most
        # (OpenRouter's `No endpoints found` 404, Ollama's `model 'x' not found`: fixable)
        "t16-smartfarm_mobile-aider-openrouter-no-endpoints",
        "t16-hey-roomie-aider-ollama-model-not-found",
        # test17: 404s and a missing file inside MCP servers (a server's internal path, its
        # host, its port or its machine: unrecoverable by the threads)
        "t17-onyx-9187",
        "t17-gitlab-mr-mcp-5",
        "t17-whatsapp-mcp-40-http-404",
        "t17-ghidramcp-85-404",
        "t17-mcp-file-context-server-3",
        # test17: 403s of Cloud Storage the maintainers fixed by the path (fixable by the
        # thread), and a self-signed certificate the tool's option skips (fixable by the
        # maintainer)
        "t17-inpars-gsutil-403-wrong-url",
        "t17-minigo-gsutil-ls-403-wrong-bucket",
        "t17-packer-fuzzer-sslerror-self-signed",
        # test18: a proxy's 410 for a commit it had not fetched yet (transient by the
        # maintainers), and an ssh timeout from a wrong port (fixable by the thread)
        "t18-cue-1667",
        "t18-laravel-deployer-ssh-port-timeout",
        # test17: ssh's `Permission denied (publickey)` that passed the next day (transient
        # by the thread), which the learned model retrained with test19 detects as it reads
        "t17-earthml-git-pull-publickey-hiccup",
        # test19: a free tier's 429 rate limit (unrecoverable by its note), and git's missing
        # credentials traced to the push command's own authorization (fixable by the thread)
        "t19-nimbus-exa-ratelimit",
        "t19-dry-aged-deps-nousername",
    }
